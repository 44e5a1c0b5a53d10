// The verdict of `gpuvs check --level 3`'s sustained load (docs/check.md): under minutes
// of back-to-back GEMMs a healthy GPU draws at least 90 % of its power limit, never
// slows down for heat or a hardware signal, and keeps its SM clock within a band once
// the load has settled. Power capping itself is normal (H100/H200 meet their limit
// under tensor load) and only noted. Plain C++ over samples, tested on the CPU.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace gpuvs::check {

// One poll of the GPU under load.
struct LoadSample {
  double t_s = 0;  // since the load started
  std::optional<double> power_w;
  std::optional<int> sm_mhz;
  std::optional<int> temperature_c;
  std::vector<std::string> reasons;  // clock-event reasons as gpu/nvml names them
};

struct SustainedRules {
  // DCGM's targeted power test asks the GPU to reach its target power; gpuvs asks for
  // 90 % of the enforced limit as the median over the settled window.
  double power_fraction = 0.90;
  // The settled window starts here: clocks and power ramp for the first seconds.
  double settle_s = 20;
  // (median - p5) / median of the SM clock over the settled window. A GPU capped at its
  // power limit moves its clock with the load's phases, and up to its boost clock in
  // the lighter moments (an H200 at 700 W: p5 1470, median 1500, p95 1980 MHz); only a
  // clock that falls far below its own median is an unsteady supply or cooling.
  double clock_drop = 0.20;
};

struct SustainedVerdict {
  bool pass = false;
  std::vector<std::string> failures;  // one line each
  std::vector<std::string> notes;     // power capping, too few samples...
  int settled_samples = 0;
  std::optional<double> median_power_w;
  std::optional<int> sm_p5_mhz, sm_median_mhz, sm_p95_mhz;
  std::optional<int> temperature_max_c;
  std::vector<std::string> slowdowns;  // reasons seen that are faults
};

// Reasons that mean the GPU slowed down for something other than its power limit
// (core/verdict.h's slowdowns: the same reasons that set a run's exit 4).
bool is_slowdown_fault(const std::string& reason);

SustainedVerdict judge_sustained(const std::vector<LoadSample>& samples, double power_limit_w,
                                 const SustainedRules& rules = {});

}  // namespace gpuvs::check
