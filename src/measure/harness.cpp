// Timing loop, warm-up and stopping rules, and Result assembly. See harness.h.
#include "measure/harness.h"

#include <algorithm>
#include <chrono>
#include <cmath>

#include "core/error.h"
#include "core/stats.h"

namespace gpuvs {

MeasureOptions quick_options() {
  MeasureOptions o;
  o.min_samples = 5;
  o.max_samples = 200;
  o.time_cap_s = 0.5;
  o.warmup_cap_s = 0.5;
  o.max_warmup_batches = 10;
  o.target_noise = 0.01;
  return o;
}

namespace {

class SteadyWallClock final : public WallClock {
 public:
  double now_s() override {
    return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch())
        .count();
  }
};

bool agree(double a, double b, double tolerance) {
  const double lo = std::min(a, b);
  return lo > 0 && (std::max(a, b) - lo) / lo <= tolerance;
}

double checked_run(Timed& timed, int64_t iterations) {
  const double s = timed.run(iterations);
  if (!std::isfinite(s) || s < 0) throw Error("timer returned an invalid duration");
  return s;
}

// A sample is never allowed to be empty of time: a zero duration (timer resolution)
// would make throughput infinite. Clamp to a tenth of a nanosecond per iteration.
constexpr double kMinSecondsPerIteration = 1e-10;

}  // namespace

WallClock& steady_wall_clock() {
  static SteadyWallClock clock;
  return clock;
}

Measurement measure(Timed& timed, WallClock& clock, const MeasureOptions& o) {
  if (o.min_samples < 1 || o.max_samples < o.min_samples || o.time_cap_s <= 0 ||
      o.target_noise < 0 || o.max_iterations_per_sample < 1)
    throw UsageError("invalid measurement options");
  Measurement m;
  const double t_begin = clock.now_s();

  // 1. Calibrate the batch size (every calibration batch also warms up). Cold
  // samples are single iterations: the flush before each one is the point.
  int64_t iters = 1;
  double last = checked_run(timed, iters);
  m.warmup_batches = 1;
  if (!o.cold) {
    while (last < o.min_sample_s && iters < o.max_iterations_per_sample &&
           clock.now_s() - t_begin < o.warmup_cap_s) {
      // Jump straight to the estimate when the batch is long enough to trust,
      // doubling otherwise (the first runs carry one-time costs).
      int64_t next = iters * 2;
      if (last > o.min_sample_s / 64) {
        const double per_iter = last / iters;
        next = std::max(next, static_cast<int64_t>(std::ceil(o.min_sample_s * 1.2 / per_iter)));
      }
      iters = std::min(next, o.max_iterations_per_sample);
      last = checked_run(timed, iters);
      ++m.warmup_batches;
    }
  }
  m.iterations_per_sample = iters;

  // 2. Warm up until two consecutive batches of the final size agree.
  double previous = -1;
  while (m.warmup_batches < o.max_warmup_batches && clock.now_s() - t_begin < o.warmup_cap_s) {
    if (o.cold) timed.flush();
    const double t = checked_run(timed, iters);
    ++m.warmup_batches;
    if (previous > 0 && agree(previous, t, o.warmup_agreement)) {
      m.warmed_up = true;
      break;
    }
    previous = t;
  }

  // 3. Sample.
  const double t_sampling = clock.now_s();
  constexpr int kFloorSamples = 3;  // never conclude from fewer, even past the cap
  for (;;) {
    if (o.cold) timed.flush();
    const double t = checked_run(timed, iters);
    m.seconds_per_iteration.push_back(std::max(t / iters, kMinSecondsPerIteration));
    const int n = static_cast<int>(m.seconds_per_iteration.size());
    if (n >= o.min_samples) {
      const Stats s = compute_stats(m.seconds_per_iteration);
      if (s.noise <= o.target_noise) {
        m.stopped_by = "noise";
        break;
      }
    }
    if (n >= o.max_samples) {
      m.stopped_by = "max_samples";
      break;
    }
    if (n >= std::min(kFloorSamples, o.min_samples) && clock.now_s() - t_sampling >= o.time_cap_s) {
      m.stopped_by = "time_cap";
      break;
    }
  }
  m.seconds_total = clock.now_s() - t_begin;
  return m;
}

namespace {

struct HeadlineUnit {
  double work;  // per iteration; 0 for latency
  std::string unit;
};

HeadlineUnit headline_unit(const ResultSpec& spec) {
  switch (spec.headline) {
    case Headline::kBandwidth:
      return {spec.bytes_per_iteration, "B/s"};
    case Headline::kFlops:
      return {spec.flops_per_iteration, "FLOP/s"};
    case Headline::kItems:
      return {spec.items_per_iteration, spec.items_unit};
    case Headline::kLatency:
      return {0, "s"};
  }
  return {0, "s"};
}

}  // namespace

Result measure_result(const ResultSpec& spec, Timed& timed, WallClock& clock,
                      const MeasureOptions& options, ClockWatch* clocks,
                      const std::function<Validation()>& validate) {
  const HeadlineUnit hu = headline_unit(spec);
  if (spec.headline != Headline::kLatency && !(hu.work > 0))
    throw Error("benchmark " + spec.id + " declares no work per iteration for its headline");
  if (spec.headline == Headline::kItems && spec.items_unit.empty())
    throw Error("benchmark " + spec.id + " declares items but no unit");

  Result r;
  r.id = spec.id;
  r.name = spec.name;
  r.devices = spec.devices;
  r.parameters = spec.parameters;
  r.unit = hu.unit;
  if (spec.bytes_per_iteration > 0) r.bytes_per_iteration = spec.bytes_per_iteration;
  if (spec.flops_per_iteration > 0) r.flops_per_iteration = spec.flops_per_iteration;

  if (clocks) clocks->start();
  Measurement m;
  try {
    m = measure(timed, clock, options);
  } catch (...) {
    if (clocks) clocks->stop();
    throw;
  }
  if (clocks) r.clocks = clocks->stop();

  r.samples.reserve(m.seconds_per_iteration.size());
  for (double s : m.seconds_per_iteration)
    r.samples.push_back(spec.headline == Headline::kLatency ? s : hu.work / s);
  r.stats = compute_stats(r.samples);
  r.value = r.stats.median;
  r.timing = Timing{.iterations_per_sample = m.iterations_per_sample,
                    .warmup_batches = m.warmup_batches,
                    .cold = options.cold,
                    .stopped_by = m.stopped_by,
                    .seconds_total = m.seconds_total};
  if (spec.peak && spec.peak->value > 0 && spec.peak->unit == r.unit) {
    r.peak = spec.peak;
    r.efficiency = r.value / spec.peak->value;
  } else if (spec.peak) {
    r.peak = spec.peak;  // kept for the record; units differ, so no efficiency
  }

  if (validate) {
    const Validation v = validate();
    r.validation = v.detail;
    if (!v.passed) {
      r.status = Status::kInvalid;
      r.status_reason = "validation failed: " + v.detail;
    }
  } else {
    r.validation = "none";
  }
  return r;
}

}  // namespace gpuvs
