#include "monitor/child.h"

#include <fmt/format.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cerrno>
#include <cstring>

#include "core/error.h"

extern char** environ;

namespace gpuvs::monitor {

namespace {

// Every signal whose default would end gpuvs and leave CMD running on its own, the
// timeline lost: a terminal's and a scheduler's (Slurm's --signal=USR1@N, a batch
// system's SIGALRM or SIGUSR2 before the time limit), and a SIGPIPE sent by another
// process. SIGPIPE that gpuvs's own write raises (its stderr was closed) is not
// passed on: the write fails with EPIPE instead, and CMD is none of its business.
constexpr std::array<int, 8> kForwarded = {SIGINT,  SIGTERM, SIGHUP,  SIGQUIT,
                                           SIGUSR1, SIGUSR2, SIGALRM, SIGPIPE};

// Shared with the signal handler, which may run on any thread (the sampler's too):
// only lock-free atomics. A signal that arrives before the child's pid is known is
// parked in g_pending and sent once it is (see deliver_pending).
std::atomic<pid_t> g_child{0};
std::atomic<unsigned> g_pending{0};  // bit n: signal n waits for the pid
constexpr int kMaxLogged = 32;
std::array<std::atomic<int>, kMaxLogged> g_log{};
std::atomic<int> g_log_count{0};

static_assert(std::atomic<pid_t>::is_always_lock_free && std::atomic<unsigned>::is_always_lock_free,
              "the signal handler needs lock-free atomics");

void send_pending() {
  const pid_t pid = g_child.load();
  if (pid <= 0) return;
  unsigned bits = g_pending.exchange(0);
  for (int sig = 1; bits != 0 && sig < 32; ++sig)
    if (bits & (1u << sig)) {
      ::kill(pid, sig);
      bits &= ~(1u << sig);
    }
}

void on_signal(int sig, siginfo_t* info, void*) {
  const int saved_errno = errno;
  // SI_KERNEL: the terminal sent it to the whole foreground process group, which
  // includes the child; sending it again would deliver it twice.
  const bool from_kernel = info != nullptr && info->si_code == SI_KERNEL;
  const bool own_pipe = sig == SIGPIPE && info != nullptr && info->si_pid == ::getpid();
  if (!from_kernel && !own_pipe) {
    const int n = g_log_count.fetch_add(1);
    if (n < kMaxLogged) g_log[static_cast<size_t>(n)].store(sig);
    // Park first, then look for the pid: run_child publishes the pid, then drains, so
    // between the two of them the signal is sent exactly once.
    g_pending.fetch_or(1u << sig);
    send_pending();
  }
  errno = saved_errno;
}

// Installs the handlers for the signals that were not ignored; restores on scope exit.
class ForwardSignals {
 public:
  ForwardSignals() {
    g_child.store(0);
    g_pending.store(0);
    g_log_count.store(0);
    for (size_t i = 0; i < kForwarded.size(); ++i) {
      struct sigaction old {};
      ::sigaction(kForwarded[i], nullptr, &old);
      if (old.sa_handler == SIG_IGN && !(old.sa_flags & SA_SIGINFO)) continue;  // nohup & co.
      struct sigaction sa {};
      sa.sa_sigaction = on_signal;
      sa.sa_flags = SA_SIGINFO | SA_RESTART;
      sigemptyset(&sa.sa_mask);
      if (::sigaction(kForwarded[i], &sa, &saved_[i]) == 0) installed_[i] = true;
    }
  }
  ~ForwardSignals() {
    g_child.store(0);
    for (size_t i = 0; i < kForwarded.size(); ++i)
      if (installed_[i]) ::sigaction(kForwarded[i], &saved_[i], nullptr);
  }
  ForwardSignals(const ForwardSignals&) = delete;
  ForwardSignals& operator=(const ForwardSignals&) = delete;

  // Signals to reset to their default in the child (exec keeps ignored ones ignored).
  sigset_t handled() const {
    sigset_t set;
    sigemptyset(&set);
    for (size_t i = 0; i < kForwarded.size(); ++i)
      if (installed_[i]) sigaddset(&set, kForwarded[i]);
    return set;
  }

 private:
  std::array<struct sigaction, kForwarded.size()> saved_{};
  std::array<bool, kForwarded.size()> installed_{};
};

class SpawnAttr {
 public:
  SpawnAttr() { ::posix_spawnattr_init(&attr_); }
  ~SpawnAttr() { ::posix_spawnattr_destroy(&attr_); }
  SpawnAttr(const SpawnAttr&) = delete;
  SpawnAttr& operator=(const SpawnAttr&) = delete;
  posix_spawnattr_t* get() { return &attr_; }

 private:
  posix_spawnattr_t attr_;
};

ChildResult not_started(const std::string& cmd, int err) {
  ChildResult r;
  if (err == ENOENT || err == ENOTDIR) {
    r.exit_code = 127;
    r.error = cmd.find('/') == std::string::npos ? fmt::format("{}: command not found", cmd)
                                                 : fmt::format("{}: no such file", cmd);
  } else {
    r.exit_code = 126;
    r.error = fmt::format("{}: cannot run: {}", cmd, std::strerror(err));
  }
  return r;
}

}  // namespace

int exit_code_from_wait_status(int status) {
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return 1;
}

ChildResult run_child(const std::vector<std::string>& argv, const ChildOptions& options) {
  if (argv.empty() || argv[0].empty()) throw Error("no command to run");
  std::vector<char*> args;
  args.reserve(argv.size() + 1);
  for (const std::string& a : argv)
    args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);

  ForwardSignals forward;

  // The child gets the signal mask gpuvs had and default handlers for the signals
  // gpuvs catches (it runs them itself until exec).
  sigset_t mask;
  ::pthread_sigmask(SIG_SETMASK, nullptr, &mask);
  sigset_t defaults = forward.handled();
  SpawnAttr attr;
  ::posix_spawnattr_setsigmask(attr.get(), &mask);
  ::posix_spawnattr_setsigdefault(attr.get(), &defaults);
  ::posix_spawnattr_setflags(attr.get(), POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);

  posix_spawn_file_actions_t actions;
  ::posix_spawn_file_actions_init(&actions);
  if (options.stdout_to_stderr)
    ::posix_spawn_file_actions_adddup2(&actions, STDERR_FILENO, STDOUT_FILENO);
  pid_t pid = -1;
  const int err = ::posix_spawnp(&pid, args[0], &actions, attr.get(), args.data(), environ);
  ::posix_spawn_file_actions_destroy(&actions);
  if (err != 0) return not_started(argv[0], err);

  g_child.store(pid);
  send_pending();  // a signal that came while spawning
  if (options.on_started) options.on_started(pid);

  int status = 0;
  for (;;) {
    const pid_t w = ::waitpid(pid, &status, 0);
    if (w == pid) break;
    if (w < 0 && errno == EINTR) continue;
    const int e = errno;
    g_child.store(0);
    throw Error(fmt::format("waiting for {} (pid {}) failed: {}", argv[0], pid, std::strerror(e)));
  }
  g_child.store(0);

  ChildResult r;
  r.started = true;
  r.exit_code = exit_code_from_wait_status(status);
  if (WIFSIGNALED(status)) r.signal = WTERMSIG(status);
  const int logged = std::min(g_log_count.load(), kMaxLogged);
  for (int i = 0; i < logged; ++i)
    r.forwarded.push_back(g_log[static_cast<size_t>(i)].load());
  return r;
}

}  // namespace gpuvs::monitor
