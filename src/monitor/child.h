// The command that `gpuvs monitor -- CMD ARGS...` watches (docs/monitor.md).
// CMD is started with posix_spawnp (PATH lookup) in gpuvs's own process group, so a
// terminal's Ctrl-C reaches both; stdin, stdout and stderr are inherited. Its exit
// code is forwarded as a shell would: the code it exited with, 128 + n when signal n
// killed it, 127 when CMD was not found, 126 when it was found but cannot be run.
//
// While CMD runs, gpuvs does not die from SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1,
// SIGUSR2, SIGALRM or SIGPIPE: it passes each on to CMD (unless the kernel sent it to
// the whole foreground process group, which CMD then got already: a terminal's
// Ctrl-C, Ctrl-\ or hang-up; or it is a SIGPIPE raised by gpuvs's own write), waits
// for CMD to end, and the caller writes its outputs. CMD decides what a signal means
// (Slurm's --signal=USR1@N: checkpoint, or end); gpuvs stays until CMD has ended. Signals that were
// ignored when gpuvs started (nohup, a background job's SIGINT) stay ignored, for CMD too. The
// previous dispositions are restored before run_child returns.
//
// Plain POSIX; one child at a time per process (the signal handlers are global).
#pragma once

#include <sys/types.h>

#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace gpuvs::monitor {

struct ChildResult {
  int exit_code = 0;           // what `gpuvs monitor` exits with (0-255)
  bool started = false;        // false: CMD was not found or could not be run
  std::optional<int> signal;   // the signal that killed CMD
  std::string error;           // why CMD did not start: "no-such: command not found"
  std::vector<int> forwarded;  // signals gpuvs received and passed on, in order
};

struct ChildOptions {
  // Called in the parent right after CMD started (e.g. to say "running pid N").
  std::function<void(pid_t)> on_started;
  // CMD's stdout goes to gpuvs's stderr (`monitor --json`: stdout is gpuvs's JSON alone).
  bool stdout_to_stderr = false;
};

// Runs argv[0] with arguments argv[1..] and waits for it. Never throws for a
// command that cannot be started (that is exit code 126/127 with `error`); throws
// gpuvs::Error for an empty argv or when waiting fails.
ChildResult run_child(const std::vector<std::string>& argv, const ChildOptions& options = {});

// Exit code for a status from waitpid: WEXITSTATUS, or 128 + signal.
int exit_code_from_wait_status(int status);

}  // namespace gpuvs::monitor
