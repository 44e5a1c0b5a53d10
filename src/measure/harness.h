// The measurement harness: the one timing loop of gpuvs (docs/design.md, "Measuring").
//
// A benchmark declares what one iteration moves and computes; the harness times it
// and derives the figure. Procedure:
//  1. calibrate: run batches of 1, 2, 4, ... iterations until one batch lasts at
//     least `min_sample_s` (so event resolution and launch gaps do not dominate);
//  2. warm up: repeat batches until two consecutive ones agree within
//     `warmup_agreement` (or the warm-up cap is reached: recorded, not hidden);
//  3. sample: one batch per sample (one iteration after an L2 flush when cold)
//     until relative noise (stddev / median) <= `target_noise` with at least
//     `min_samples`, or the wall-time cap, or `max_samples`.
// This file is plain C++ (no CUDA) so the logic is tested with a fake clock.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/run_file.h"

namespace gpuvs {

struct MeasureOptions {
  double target_noise = 0.005;  // stop once stddev / median <= this ...
  int min_samples = 10;         // ... over at least this many samples
  int max_samples = 1000;
  double time_cap_s = 2.0;     // wall time for sampling, warm-up excluded
  double min_sample_s = 1e-3;  // a sample lasts at least this long
  int64_t max_iterations_per_sample = int64_t{1} << 20;
  double warmup_agreement = 0.02;  // consecutive warm-up batches within 2 %
  int max_warmup_batches = 30;
  double warmup_cap_s = 2.0;
  bool cold = false;  // flush caches before every sample
};

// Fewer samples and shorter caps for `gpuvs run`'s quick pass.
MeasureOptions quick_options();

// The timed region. run(k) executes the region k times back to back and returns the
// elapsed seconds of the whole batch, measured on the device (CUDA events) or by any
// other clock the implementation trusts. flush() evicts caches; it is never timed.
class Timed {
 public:
  virtual ~Timed() = default;
  virtual double run(int64_t iterations) = 0;
  virtual void flush() {}
};

// Wall clock for the caps; injectable so tests use a fake one.
class WallClock {
 public:
  virtual ~WallClock() = default;
  virtual double now_s() = 0;
};
WallClock& steady_wall_clock();

// Watches the GPU's clocks and throttle reasons while a result is measured.
class ClockWatch {
 public:
  virtual ~ClockWatch() = default;
  virtual void start() = 0;
  virtual ClockRecord stop() = 0;
};

struct Measurement {
  std::vector<double> seconds_per_iteration;  // one entry per sample
  int64_t iterations_per_sample = 1;
  int warmup_batches = 0;
  bool warmed_up = false;  // false: the warm-up cap came before two batches agreed
  std::string stopped_by;  // "noise" | "time_cap" | "max_samples"
  double seconds_total = 0;
};

Measurement measure(Timed& timed, WallClock& clock, const MeasureOptions& options);

// What a benchmark declares about one result.
enum class Headline {
  kBandwidth,  // value = bytes_per_iteration / time, in B/s
  kFlops,      // value = flops_per_iteration / time, in FLOP/s
  kItems,      // value = items_per_iteration / time, in `items_unit` ("img/s")
  kLatency,    // value = time per iteration, in s
};

struct ResultSpec {
  std::string id;    // "memory.hbm.copy"
  std::string name;  // "HBM copy"
  std::vector<int> devices;
  std::map<std::string, ParamValue> parameters;
  Headline headline = Headline::kBandwidth;
  double bytes_per_iteration = 0;
  double flops_per_iteration = 0;
  double items_per_iteration = 0;
  std::string items_unit;  // "img/s", with Headline::kItems
  std::optional<Peak> peak;
};

struct Validation {
  bool passed = false;
  std::string detail;  // what was checked and what it found
};

// Time `timed` under `options`, watch the clocks, validate, and build the Result:
// samples and stats in the headline unit, timing, peak and efficiency, status
// (kInvalid when validation fails: the value must then never be shown as a number).
Result measure_result(const ResultSpec& spec, Timed& timed, WallClock& clock,
                      const MeasureOptions& options, ClockWatch* clocks,
                      const std::function<Validation()>& validate);

}  // namespace gpuvs
