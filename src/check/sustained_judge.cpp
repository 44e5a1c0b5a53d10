// The sustained-load verdict. See sustained_judge.h.
#include "check/sustained_judge.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "core/verdict.h"

namespace gpuvs::check {

namespace {

template <class T>
T percentile(std::vector<T> v, double q) {
  std::sort(v.begin(), v.end());
  const size_t i = static_cast<size_t>(std::lround(q * double(v.size() - 1)));
  return v[std::min(i, v.size() - 1)];
}

}  // namespace

bool is_slowdown_fault(const std::string& reason) {
  return clock_event_kind(reason) == ClockEventKind::kSlowdown;
}

SustainedVerdict judge_sustained(const std::vector<LoadSample>& samples, double power_limit_w,
                                 const SustainedRules& rules) {
  SustainedVerdict v;
  std::vector<double> power;
  std::vector<int> sm;
  bool capped = false;
  for (const LoadSample& s : samples) {
    for (const std::string& r : s.reasons) {
      if (is_slowdown_fault(r) &&
          std::find(v.slowdowns.begin(), v.slowdowns.end(), r) == v.slowdowns.end())
        v.slowdowns.push_back(r);
      if (is_power_cap_reason(r)) capped = true;
    }
    if (s.temperature_c)
      v.temperature_max_c =
          std::max(v.temperature_max_c.value_or(*s.temperature_c), *s.temperature_c);
    if (s.t_s < rules.settle_s) continue;
    ++v.settled_samples;
    if (s.power_w) power.push_back(*s.power_w);
    if (s.sm_mhz) sm.push_back(*s.sm_mhz);
  }
  for (const std::string& r : v.slowdowns)
    v.failures.push_back(fmt::format("clock-event reason {} under load (not the power limit)", r));
  if (capped) v.notes.push_back("power-capped (sw_power_cap): normal at full load");

  if (power.empty()) {
    v.failures.push_back(
        fmt::format("no power samples after the first {:.0f} s of load", rules.settle_s));
  } else {
    v.median_power_w = percentile(power, 0.5);
    if (power_limit_w > 0 && *v.median_power_w < rules.power_fraction * power_limit_w)
      v.failures.push_back(
          fmt::format("median power {:.0f} W under load is below {:.0f} % of the {:.0f} W limit",
                      *v.median_power_w, 100 * rules.power_fraction, power_limit_w));
    if (!(power_limit_w > 0)) v.notes.push_back("power limit unknown: power not judged");
  }
  if (sm.empty()) {
    v.failures.push_back("no SM clock samples after the settling time");
  } else {
    v.sm_p5_mhz = percentile(sm, 0.05);
    v.sm_median_mhz = percentile(sm, 0.5);
    v.sm_p95_mhz = percentile(sm, 0.95);
    const double drop = double(*v.sm_median_mhz - *v.sm_p5_mhz) / std::max(1, *v.sm_median_mhz);
    if (drop > rules.clock_drop)
      v.failures.push_back(
          fmt::format("SM clock p5 {} MHz is {:.0f} % below its median {} MHz (at most {:.0f} %)",
                      *v.sm_p5_mhz, 100 * drop, *v.sm_median_mhz, 100 * rules.clock_drop));
  }
  v.pass = v.failures.empty();
  return v;
}

}  // namespace gpuvs::check
