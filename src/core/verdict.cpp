#include "core/verdict.h"

#include <algorithm>
#include <array>

namespace gpuvs {

bool is_throttling_reason(std::string_view reason) {
  static constexpr std::array<std::string_view, 5> kThrottling = {
      "sw_power_cap", "hw_slowdown", "sw_thermal_slowdown", "hw_thermal_slowdown",
      "hw_power_brake_slowdown"};
  return std::find(kThrottling.begin(), kThrottling.end(), reason) != kThrottling.end();
}

bool throttled(const ClockRecord& clocks) {
  return std::any_of(clocks.throttle_reasons.begin(), clocks.throttle_reasons.end(),
                     [](const std::string& r) { return is_throttling_reason(r); });
}

bool throttled(const Result& result) {
  return result.clocks && throttled(*result.clocks);
}

ExitCode exit_code_for(const RunFile& run) {
  if (!run.errors.empty()) return ExitCode::kFailure;
  for (const Result& r : run.results) {
    if (r.status == Status::kInvalid || r.status == Status::kError) return ExitCode::kDegraded;
    if (r.status == Status::kOk && throttled(r)) return ExitCode::kDegraded;
  }
  return ExitCode::kOk;
}

}  // namespace gpuvs
