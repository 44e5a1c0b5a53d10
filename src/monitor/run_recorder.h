// RunRecorder: the monitor inside a measuring session (docs/monitor.md).
// One Sampler over the session's GPUs runs from start() to finish(); after each
// benchmark step the step's results get the utilization of their window, and
// finish() records the run's timeline and recomputes every window from the whole
// timeline (a step's last covering sample is taken after the step ends).
//
// Windows are per benchmark step (every result of a step shares one), measured with
// the sampler's clock around the step: results carry their duration
// (timing.seconds_total) but not their start, so finer windows would be guesses.
//
// Invariants:
//  - the results passed to step_done stay at their indices (the session only appends);
//  - without GPUs in the source (no NVML) nothing is sampled and finish() records a
//    timeline with source "none" and the source's notes saying why;
//  - sampling never runs faster than the interval asked (Sampler's fixed grid).
#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "core/run_file.h"
#include "monitor/sample.h"
#include "monitor/sampler.h"

namespace gpuvs::monitor {

class RunRecorder {
 public:
  // `run_gpus[i]` is the index in system.gpus of the source's GPU i.
  RunRecorder(std::unique_ptr<Source> source, std::chrono::milliseconds interval,
              std::vector<int> run_gpus);
  RunRecorder(const RunRecorder&) = delete;
  RunRecorder& operator=(const RunRecorder&) = delete;

  // Starts sampling when the source has GPUs. Throws gpuvs::Error for an interval <= 0.
  void start();
  bool sampling() const { return sampling_; }
  // Seconds on the timeline's clock (0 when not sampling).
  double now_s() const;

  // Results [first, results.size()) came from `step`, which began at t_begin_s (now_s
  // before it) and ends now; each gets the utilization of its devices (or of
  // `step_gpus` when it names none) over the window, as far as sampled yet.
  void step_done(std::vector<Result>& results, size_t first, const std::string& step,
                 double t_begin_s, const std::vector<int>& step_gpus);

  // Stops sampling, fills every step's results again from the whole timeline and
  // sets run.timeline. Call once, after the last step.
  void finish(RunFile& run);

  // The source's notes (say each once): why there is no GPM, or no NVML.
  std::vector<std::string> notes() const { return source_->notes(); }

 private:
  struct Step {
    size_t first = 0, end = 0;
    std::string name;
    double t_begin_s = 0, t_end_s = 0;
    std::vector<int> gpus;
  };
  void fill(std::vector<Result>& results, const Step& step,
            const std::vector<GpuSample>& timeline) const;

  std::unique_ptr<Source> source_;
  std::chrono::milliseconds interval_;
  std::vector<int> run_gpus_;
  Sampler sampler_;
  bool sampling_ = false;
  std::vector<Step> steps_;
};

}  // namespace gpuvs::monitor
