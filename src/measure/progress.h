// Progress of a long command: a step count, the elapsed time and, once it can be
// known, an estimate of what is left. Plain C++ with the clock and the sink injected
// (no terminal calls here), so the rules are tested with fakes
// (tests/cpu/test_progress.cpp); the CLI builds one on stderr (cli/app.h,
// make_progress).
//
// Modes:
//  - off: writes nothing.
//  - live (a terminal): one line, replaced in place ("\r\033[K", then the text, cut
//    to the terminal's width); every call redraws it, tick() refreshes its clock;
//    done() clears it.
//  - plain (a log: a pipe, a file, sbatch): lines only, no "\r", no escape sequence,
//    each starting with the elapsed time since begin():
//      gpuvs: [00:42] [3/12] compute.gemm on GPU 0 (H200): bf16 8192³ — ~1:30 left
//    Every step() is a line. detail() lines are rate-limited: at most one per
//    `detail_interval_s` (counted from the last line of any kind); a detail that
//    comes sooner waits, replacing any detail already waiting, and is written by the
//    next tick() or detail() after the interval, or before the next step() or done()
//    line: a burst of details shows its first and its last, never a flood. fail()
//    is a line; done() writes "gpuvs: done in 3:12 (12 steps)" (", 1 failed").
//
// The estimate of what is left ("~1:30 left"):
//  - the current step: its expected duration (begin()'s list or step()'s argument)
//    less the time spent in it, else the mean duration of the finished steps less
//    that time, at least 0;
//  - each later step: its expected duration, else the mean of the finished steps;
//  - omitted while any part is unknown (no expected duration and no step finished
//    yet), and when the step count is unknown: never a made-up number.
//
// Usage (cli/session.cpp's loop; a command of its own, such as tune, does the same):
//   std::unique_ptr<Progress> p = make_progress(global);  // cli/app.h
//   p->begin(12);                         // 12 steps, durations unknown
//   p->step("compute.gemm on GPU 0");     // step 1 begins (the one before ends)
//   p->step("model on GPU 0", 60);        // a step expected to take about 60 s
//   p->detail("bf16 8192³");              // where the current step is
//   p->fail("out of memory");             // the current step failed (counted)
//   p->done();                            // the last step ends: the final line
// Calls are serialised by a mutex: a benchmark's thread and the ticker may share one.
#pragma once

#include <condition_variable>
#include <cstdio>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "measure/harness.h"

namespace gpuvs {

enum class ProgressMode { kOff, kPlain, kLive };

// Where the text goes: stderr in the CLI, a string in the tests.
class ProgressSink {
 public:
  virtual ~ProgressSink() = default;
  virtual void write(std::string_view text) = 0;
};

// Writes and flushes a C stream (stderr).
class FileProgressSink final : public ProgressSink {
 public:
  explicit FileProgressSink(std::FILE* file) : file_(file) {}
  void write(std::string_view text) override;

 private:
  std::FILE* file_;
};

struct ProgressOptions {
  double detail_interval_s = 1.0;  // plain: at most one detail line per interval
  int width = 0;                   // live: the terminal's columns (0: lines are not cut)
  // > 0: a thread calls tick() this often (on the real clock): live redraws its
  // elapsed time, plain writes a detail that has waited its interval. 0: the caller
  // ticks (the tests).
  double tick_period_s = 0;
  std::string prefix = "gpuvs: ";
};

class Progress {
 public:
  Progress(ProgressMode mode, ProgressSink& sink, WallClock& clock, ProgressOptions options = {});
  // Stops the ticker; live clears its line; plain writes a waiting detail (where a
  // command that threw was), never a "done" line.
  ~Progress();
  Progress(const Progress&) = delete;
  Progress& operator=(const Progress&) = delete;

  ProgressMode mode() const { return mode_; }

  // Starts the clock. `expected_s`: empty, or one expected duration per step (a value
  // <= 0: unknown).
  void begin(int total_steps, std::vector<double> expected_s = {});
  // The next step begins and the current one, if any, ends. `expected_s` (> 0)
  // replaces begin()'s figure for this step.
  void step(std::string_view name, std::optional<double> expected_s = std::nullopt);
  // Where the current step is (a sub-step, a candidate and its outcome).
  void detail(std::string_view text);
  // The current step failed: counted for the final line; plain writes why.
  void fail(std::string_view why);
  // The last step ends: plain writes the final line, live clears its line. Once.
  void done();
  // What the ticker calls; harmless at any time.
  void tick();

  // The estimate of what is left now (the rules above); nullopt where unknown.
  std::optional<double> seconds_left() const;

 private:
  std::optional<double> seconds_left_at(double now) const;
  std::string status_text(double now) const;
  void end_step(double now);
  void write_line(const std::string& text);  // plain: prefix and newline
  void draw_live(double now);
  void flush_waiting();
  void clear_live();
  void run_ticker(double period_s);

  const ProgressMode mode_;
  ProgressSink& sink_;
  WallClock& clock_;
  const ProgressOptions options_;

  mutable std::mutex mutex_;
  double start_s_ = 0;
  int total_ = 0;  // 0: unknown
  std::vector<double> expected_;
  int index_ = 0;  // the current step, 1-based; 0: none yet
  std::string name_;
  std::string detail_;
  std::optional<double> current_expected_s_;
  double step_start_s_ = 0;
  double finished_s_ = 0;  // sum of the finished steps' durations
  int finished_ = 0;
  int failed_ = 0;
  bool done_ = false;
  // plain
  std::optional<double> last_line_s_;
  std::optional<std::string> waiting_;  // a detail line, stamped when it came
  // live
  bool drawn_ = false;
  long shown_second_ = -1;

  std::condition_variable stop_cv_;
  bool stopping_ = false;
  std::thread ticker_;
};

// "0:42", "1:30", "1:02:03": a duration, as in "~1:30 left" and "done in 3:12".
std::string format_duration(double seconds);

}  // namespace gpuvs
