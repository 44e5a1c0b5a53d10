// The monitored command (monitor/child.h): exit codes as a shell forwards them, and
// signals sent to gpuvs passed on to the command. Tests that signal "gpuvs" fork
// first and signal the forked process, never the test process itself.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <filesystem>
#include <fstream>

#include "core/error.h"
#include "monitor/child.h"

namespace {

using gpuvs::monitor::ChildOptions;
using gpuvs::monitor::ChildResult;
using gpuvs::monitor::run_child;

TEST(MonitorChild, ExitCodesAreForwarded) {
  EXPECT_EQ(run_child({"true"}).exit_code, 0);
  EXPECT_EQ(run_child({"false"}).exit_code, 1);
  const ChildResult r = run_child({"sh", "-c", "exit 3"});
  EXPECT_TRUE(r.started);
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_FALSE(r.signal.has_value());
  EXPECT_EQ(run_child({"sh", "-c", "exit 255"}).exit_code, 255);
}

TEST(MonitorChild, ArgumentsArePassedAsGiven) {
  // No shell in between: spaces and quotes reach the command unchanged.
  EXPECT_EQ(run_child({"sh", "-c", "test \"$1\" = 'a b \"c\"'", "sh", "a b \"c\""}).exit_code, 0);
}

TEST(MonitorChild, CommandNotFoundIs127) {
  const ChildResult r = run_child({"gpuvs-no-such-command-xyz", "arg"});
  EXPECT_FALSE(r.started);
  EXPECT_EQ(r.exit_code, 127);
  EXPECT_NE(r.error.find("gpuvs-no-such-command-xyz: command not found"), std::string::npos)
      << r.error;
  EXPECT_EQ(run_child({"/nonexistent/dir/cmd"}).exit_code, 127);
}

TEST(MonitorChild, FoundButNotExecutableIs126) {
  const auto path =
      std::filesystem::temp_directory_path() / ("gpuvs_child_noexec_" + std::to_string(::getpid()));
  std::ofstream(path) << "#!/bin/sh\nexit 0\n";
  ::chmod(path.c_str(), 0644);
  const ChildResult r = run_child({path.string()});
  std::filesystem::remove(path);
  EXPECT_FALSE(r.started);
  EXPECT_EQ(r.exit_code, 126);
  EXPECT_NE(r.error.find("cannot run"), std::string::npos) << r.error;
}

TEST(MonitorChild, EmptyCommandThrows) {
  EXPECT_THROW(run_child({}), gpuvs::Error);
}

TEST(MonitorChild, KilledBySignalIs128PlusN) {
  const ChildResult r = run_child({"sh", "-c", "kill -KILL $$"});
  EXPECT_TRUE(r.started);
  EXPECT_EQ(r.exit_code, 128 + SIGKILL);
  ASSERT_TRUE(r.signal.has_value());
  EXPECT_EQ(*r.signal, SIGKILL);
  EXPECT_EQ(run_child({"sh", "-c", "kill -TERM $$"}).exit_code, 143);
}

TEST(MonitorChild, DispositionsAreRestored) {
  struct sigaction before {};
  ::sigaction(SIGTERM, nullptr, &before);
  ChildOptions options;
  bool called = false;
  options.on_started = [&](pid_t pid) { called = pid > 0; };
  run_child({"true"}, options);
  EXPECT_TRUE(called);
  struct sigaction after {};
  ::sigaction(SIGTERM, nullptr, &after);
  EXPECT_EQ(before.sa_handler, after.sa_handler);
  EXPECT_EQ(before.sa_flags & SA_SIGINFO, after.sa_flags & SA_SIGINFO);
}

// Forks a "gpuvs" that runs `sleep 30` through run_child and exits with its result;
// sends `sig` to that process once the sleep has started. Returns the forked
// process's wait status.
int signal_monitor_during_sleep(int sig) {
  int ready[2];
  if (::pipe(ready) != 0) return -1;
  const pid_t monitor = ::fork();
  if (monitor == 0) {
    ::close(ready[0]);
    ChildOptions options;
    options.on_started = [&](pid_t) {
      const char c = 1;
      (void)!::write(ready[1], &c, 1);
      ::close(ready[1]);
    };
    int code = 99;
    try {
      code = run_child({"sleep", "30"}, options).exit_code;
    } catch (...) {
    }
    ::_exit(code);
  }
  ::close(ready[1]);
  char c = 0;
  const bool started = ::read(ready[0], &c, 1) == 1;
  ::close(ready[0]);
  if (started) ::kill(monitor, sig);
  int status = 0;
  ::waitpid(monitor, &status, 0);
  return started ? status : -1;
}

TEST(MonitorChild, SigtermToMonitorIsForwardedAndMonitorSurvives) {
  const int status = signal_monitor_during_sleep(SIGTERM);
  ASSERT_TRUE(WIFEXITED(status)) << "the monitor died instead of forwarding (status " << status
                                 << ")";
  EXPECT_EQ(WEXITSTATUS(status), 143);  // sleep died of SIGTERM, code forwarded
}

TEST(MonitorChild, SighupAndKillIntAreForwarded) {
  int status = signal_monitor_during_sleep(SIGHUP);
  ASSERT_TRUE(WIFEXITED(status)) << status;
  EXPECT_EQ(WEXITSTATUS(status), 128 + SIGHUP);
  // `kill -INT gpuvs` is not from a terminal: the child did not get it, so it is passed on.
  status = signal_monitor_during_sleep(SIGINT);
  ASSERT_TRUE(WIFEXITED(status)) << status;
  EXPECT_EQ(WEXITSTATUS(status), 128 + SIGINT);
}

// A scheduler's signals (Slurm's --signal=USR1@N, SIGUSR2, SIGALRM) and a SIGPIPE
// sent by another process reach the command; the monitor survives each.
TEST(MonitorChild, SchedulerSignalsAndAnotherProcesssSigpipeAreForwarded) {
  for (int sig : {SIGUSR1, SIGUSR2, SIGALRM, SIGPIPE}) {
    const int status = signal_monitor_during_sleep(sig);
    ASSERT_TRUE(WIFEXITED(status))
        << "signal " << sig << ": the monitor died (status " << status << ")";
    EXPECT_EQ(WEXITSTATUS(status), 128 + sig) << "signal " << sig;
  }
}

// A SIGPIPE raised by the monitor's own write (its output was closed) is not the
// command's business: the write fails, the command runs on and ends normally.
TEST(MonitorChild, OwnSigpipeIsNotForwarded) {
  const pid_t monitor = ::fork();
  if (monitor == 0) {
    ChildOptions options;
    options.on_started = [](pid_t) {
      int p[2];
      if (::pipe(p) != 0) ::_exit(98);
      ::close(p[0]);
      const char c = 1;
      const bool failed = ::write(p[1], &c, 1) < 0 && errno == EPIPE;
      ::close(p[1]);
      if (!failed) ::_exit(97);
    };
    int code = 99;
    try {
      code = run_child({"sh", "-c", "sleep 0.2; exit 5"}, options).exit_code;
    } catch (...) {
    }
    ::_exit(code);
  }
  int status = 0;
  ::waitpid(monitor, &status, 0);
  ASSERT_TRUE(WIFEXITED(status)) << "the monitor died (status " << status << ")";
  EXPECT_EQ(WEXITSTATUS(status), 5);
}

TEST(MonitorChild, ForwardedSignalsAreReported) {
  // In-process: the command signals its parent (the test process) once; the handler
  // passes it back to the command, which exits 143. The test process survives.
  const ChildResult r = run_child({"sh", "-c", "kill -TERM $PPID; sleep 5"});
  EXPECT_EQ(r.exit_code, 143);
  ASSERT_EQ(r.forwarded.size(), 1u);
  EXPECT_EQ(r.forwarded[0], SIGTERM);
}

}  // namespace
