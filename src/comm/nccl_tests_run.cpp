// Runner of nccl-tests: builds the command line, starts the binary (posix_spawn, own
// process group, stdout and stderr through one pipe), enforces the timeout, parses
// what it printed (nccl_tests.cpp). The format facts are summarised in nccl_tests.h.
#include "comm/nccl_tests.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <system_error>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "core/error.h"

extern char** environ;

namespace gpuvs::comm {
// ------------------------------------------------------------------------ runner

const std::vector<std::string>& nccl_tests_ops() {
  static const std::vector<std::string> ops = {
      "all_reduce", "all_gather", "reduce_scatter", "broadcast", "reduce", "alltoall", "sendrecv"};
  return ops;
}

std::string nccl_tests_binary(std::string_view op) {
  const auto& ops = nccl_tests_ops();
  if (std::find(ops.begin(), ops.end(), op) == ops.end()) {
    throw UsageError(
        fmt::format("unknown nccl-tests op '{}' (known: {})", op, fmt::join(ops, ", ")));
  }
  return std::string(op) + "_perf";
}

std::filesystem::path nccl_tests_path(const NcclTestsRun& run) {
  const std::string name = nccl_tests_binary(run.op) + run.suffix;
  std::filesystem::path direct = run.dir / name;
  std::filesystem::path built = run.dir / "build" / name;
  std::error_code ec;
  if (!std::filesystem::exists(direct, ec) && std::filesystem::exists(built, ec)) return built;
  return direct;
}

std::vector<std::string> nccl_tests_argv(const NcclTestsRun& run) {
  const std::string path = nccl_tests_path(run).string();
  if (run.min_bytes < 0 || run.max_bytes < 1 || run.max_bytes < run.min_bytes) {
    throw UsageError(
        fmt::format("nccl-tests: sizes {}..{} bytes are not a range (max_bytes >= "
                    "min_bytes >= 0, max_bytes >= 1)",
                    run.min_bytes, run.max_bytes));
  }
  if (run.step_bytes <= 0 && !(std::isfinite(run.factor) && run.factor >= 2 && run.factor <= 1e9 &&
                               std::floor(run.factor) == run.factor)) {
    throw UsageError(
        fmt::format("nccl-tests: size factor {} is not a whole number >= 2", run.factor));
  }
  if (run.gpus < 1 || run.iters < 1 || run.warmup < 0 || run.graph_launches < 0) {
    throw UsageError(fmt::format(
        "nccl-tests: need gpus >= 1, iters >= 1, warmup >= 0, graph launches >= 0 (got {}, {}, "
        "{}, {})",
        run.gpus, run.iters, run.warmup, run.graph_launches));
  }
  std::vector<std::string> argv(run.launcher.begin(), run.launcher.end());
  argv.push_back(path);
  auto add = [&](const char* flag, std::string value) {
    argv.emplace_back(flag);
    argv.push_back(std::move(value));
  };
  add("-b", std::to_string(run.min_bytes));
  add("-e", std::to_string(run.max_bytes));
  if (run.step_bytes > 0) {
    add("-i", std::to_string(run.step_bytes));
  } else {
    add("-f", std::to_string(static_cast<int64_t>(run.factor)));
  }
  add("-g", std::to_string(run.gpus));
  add("-n", std::to_string(run.iters));
  add("-w", std::to_string(run.warmup));
  add("-c", run.check ? "1" : "0");
  // Only when asked: binaries built before NCCL 2.9 do not know -G.
  if (run.graph_launches > 0) add("-G", std::to_string(run.graph_launches));
  if (!run.datatype.empty()) add("-d", run.datatype);
  if (!run.redop.empty()) add("-o", run.redop);
  argv.insert(argv.end(), run.extra_args.begin(), run.extra_args.end());
  return argv;
}

namespace {

// The last non-blank line of what the binary printed, without surrounding blanks.
std::string last_line(const std::string& log) {
  constexpr std::string_view kBlank = " \t\r\n\v\f";
  const size_t end = log.find_last_not_of(kBlank);
  if (end == std::string::npos) return {};
  const size_t nl = log.rfind('\n', end);
  const size_t begin = log.find_first_not_of(kBlank, nl == std::string::npos ? 0 : nl + 1);
  return log.substr(begin, end + 1 - begin);
}

std::string quote_failure(const NcclTestsOutput& out) {
  std::string s = nccl_tests_error_summary(out);
  if (s.empty()) s = last_line(out.log);
  return s.empty() ? "(no output)" : s;
}

struct Fd {
  int fd = -1;
  Fd() = default;
  explicit Fd(int f) : fd(f) {}
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  ~Fd() { reset(); }
  void reset() {
    if (fd >= 0) ::close(fd);
    fd = -1;
  }
};

void make_pipe(Fd* read_end, Fd* write_end) {
  int p[2];
  if (::pipe2(p, O_CLOEXEC) != 0) {
    throw Error(fmt::format("nccl-tests: cannot create a pipe: {}", std::strerror(errno)));
  }
  read_end->fd = p[0];
  write_end->fd = p[1];
}

struct Spawn {
  posix_spawn_file_actions_t actions;
  posix_spawnattr_t attr;
  Spawn() {
    posix_spawn_file_actions_init(&actions);
    posix_spawnattr_init(&attr);
  }
  Spawn(const Spawn&) = delete;
  Spawn& operator=(const Spawn&) = delete;
  ~Spawn() {
    posix_spawn_file_actions_destroy(&actions);
    posix_spawnattr_destroy(&attr);
  }
};

constexpr size_t kMaxLog = size_t(64) << 20;  // a runaway child cannot eat our memory

}  // namespace

void check_nccl_tests_binary(const NcclTestsRun& run) {
  namespace fs = std::filesystem;
  const std::string binary_name = nccl_tests_binary(run.op) + run.suffix;
  std::error_code ec;
  if (!fs::exists(run.dir, ec)) {
    throw UsageError(fmt::format("nccl-tests directory {} does not exist", run.dir.string()));
  }
  if (!fs::is_directory(run.dir, ec)) {
    throw UsageError(fmt::format("nccl-tests directory {} is not a directory", run.dir.string()));
  }
  const fs::path binary = nccl_tests_path(run);
  if (!fs::exists(binary, ec)) {
    throw UsageError(fmt::format("no {} in {} (looked for {} and {})", binary_name,
                                 run.dir.string(), (run.dir / binary_name).string(),
                                 (run.dir / "build" / binary_name).string()));
  }
  if (!fs::is_regular_file(binary, ec) || ::access(binary.c_str(), X_OK) != 0) {
    throw UsageError(fmt::format("{} is not an executable file", binary.string()));
  }
}

NcclTestsOutput run_nccl_tests(const NcclTestsRun& run) {
  namespace fs = std::filesystem;
  check_nccl_tests_binary(run);
  if (!(run.timeout_s > 0) || !std::isfinite(run.timeout_s)) {
    throw UsageError(fmt::format("nccl-tests: timeout {} s is not positive", run.timeout_s));
  }

  const std::vector<std::string> argv = nccl_tests_argv(run);
  const std::string& exec_path = argv[0];
  std::vector<char*> cargv;
  for (const std::string& a : argv)
    cargv.push_back(const_cast<char*>(a.c_str()));
  cargv.push_back(nullptr);
  std::vector<std::string> env_strings;
  for (char** e = environ; e && *e; ++e) {
    std::string_view kv(*e);
    if (!run.env.count(std::string(kv.substr(0, kv.find('='))))) env_strings.emplace_back(kv);
  }
  for (const auto& [k, v] : run.env)
    env_strings.push_back(k + "=" + v);
  std::vector<char*> cenv;
  for (const std::string& s : env_strings)
    cenv.push_back(const_cast<char*>(s.c_str()));
  cenv.push_back(nullptr);

  Fd out_r, out_w;
  make_pipe(&out_r, &out_w);
  // posix_spawn rather than fork: gpuvs may hold CUDA contexts and large mappings.
  // The child leads its own process group, so that a timeout kills whatever it starts
  // (mpirun, a shell's children) with one kill(), and gets default signal handling
  // and an empty mask whatever gpuvs set for itself (SIGPIPE ignored, say).
  Spawn spawn;
  posix_spawn_file_actions_addopen(&spawn.actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&spawn.actions, out_w.fd, STDOUT_FILENO);
  posix_spawn_file_actions_adddup2(&spawn.actions, out_w.fd, STDERR_FILENO);
  sigset_t none, defaults;
  sigemptyset(&none);
  sigemptyset(&defaults);
  for (int sig : {SIGPIPE, SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGCHLD, SIGUSR1, SIGUSR2}) {
    sigaddset(&defaults, sig);
  }
  posix_spawnattr_setflags(&spawn.attr,
                           POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
  posix_spawnattr_setpgroup(&spawn.attr, 0);
  posix_spawnattr_setsigmask(&spawn.attr, &none);
  posix_spawnattr_setsigdefault(&spawn.attr, &defaults);

  const auto start = std::chrono::steady_clock::now();
  pid_t pid = -1;
  // A launcher ("mpirun") is looked up in PATH; the binary is a path already.
  const int spawn_error = (run.launcher.empty() ? posix_spawn : posix_spawnp)(
      &pid, exec_path.c_str(), &spawn.actions, &spawn.attr, cargv.data(), cenv.data());
  if (spawn_error != 0) {
    throw Error(fmt::format("cannot start {}: {}", exec_path, std::strerror(spawn_error)));
  }
  out_w.reset();

  auto reap = [&]() {
    int status = 0;
    while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    return status;
  };

  ::fcntl(out_r.fd, F_SETFL, ::fcntl(out_r.fd, F_GETFL) | O_NONBLOCK);
  const auto deadline = start + std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                                    std::chrono::duration<double>(run.timeout_s));
  std::string log;
  bool eof = false, exited = false, timed_out = false;
  std::chrono::steady_clock::time_point exited_at;
  std::array<char, 65536> buf;
  while (true) {
    auto now = std::chrono::steady_clock::now();
    if (!exited) {
      siginfo_t info{};
      // WNOWAIT: the child stays a zombie, so its process-group id stays ours to kill.
      if (::waitid(P_PID, static_cast<id_t>(pid), &info, WEXITED | WNOHANG | WNOWAIT) == 0 &&
          info.si_pid == pid) {
        exited = true;
        exited_at = now;
      }
    }
    if (eof && exited) break;
    // Something it started still holds the pipe after it exited: stop listening.
    if (exited && now - exited_at > std::chrono::milliseconds(200)) break;
    if (now >= deadline) {
      timed_out = !exited;
      break;
    }
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - now).count();
    // Output ended: the exit follows at once, look again soon.
    int wait_ms = static_cast<int>(std::clamp<int64_t>(left, 1, eof ? 2 : 50));
    pollfd pfd{out_r.fd, POLLIN, 0};
    int pr = ::poll(&pfd, eof ? 0 : 1, wait_ms);
    if (pr <= 0) continue;
    while (true) {
      ssize_t got = ::read(out_r.fd, buf.data(), buf.size());
      if (got > 0) {
        if (log.size() < kMaxLog)
          log.append(buf.data(), std::min(size_t(got), kMaxLog - log.size()));
        continue;
      }
      if (got == 0) eof = true;
      if (got < 0 && errno == EINTR) continue;
      break;
    }
  }
  if (timed_out || !eof) ::kill(-pid, SIGKILL);
  int status = reap();
  out_r.reset();

  NcclTestsOutput out = parse_nccl_tests_output(log);
  out.log = std::move(log);
  const std::string name = fs::path(argv[run.launcher.size()]).filename().string();
  if (timed_out) {
    throw Error(
        fmt::format("nccl-tests {} did not finish within {:g} s; killed it (last output: {})", name,
                    run.timeout_s, quote_failure(out)));
  }
  if (WIFSIGNALED(status)) {
    throw Error(fmt::format("nccl-tests {} was killed by signal {}: {}", name, WTERMSIG(status),
                            quote_failure(out)));
  }
  if (WIFEXITED(status) && WEXITSTATUS(status) != 0) {
    throw Error(fmt::format("nccl-tests {} exited with status {}: {}", name, WEXITSTATUS(status),
                            quote_failure(out)));
  }
  if (out.rows.empty()) {
    throw Error(fmt::format("nccl-tests {} printed no results: {}", name, quote_failure(out)));
  }
  return out;
}

}  // namespace gpuvs::comm
