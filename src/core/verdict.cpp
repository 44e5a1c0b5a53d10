#include "core/verdict.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <array>
#include <vector>

namespace gpuvs {

ClockEventKind clock_event_kind(std::string_view reason) {
  static constexpr std::array<std::string_view, 4> kSlowdown = {
      "hw_slowdown", "sw_thermal_slowdown", "hw_thermal_slowdown", "hw_power_brake_slowdown"};
  if (reason == "sw_power_cap") return ClockEventKind::kPowerCap;
  if (std::find(kSlowdown.begin(), kSlowdown.end(), reason) != kSlowdown.end())
    return ClockEventKind::kSlowdown;
  return ClockEventKind::kOther;
}

bool is_throttling_reason(std::string_view reason) {
  return clock_event_kind(reason) == ClockEventKind::kSlowdown;
}

bool is_power_cap_reason(std::string_view reason) {
  return clock_event_kind(reason) == ClockEventKind::kPowerCap;
}

bool throttled(const ClockRecord& clocks) {
  return std::any_of(clocks.throttle_reasons.begin(), clocks.throttle_reasons.end(),
                     [](const std::string& r) { return is_throttling_reason(r); });
}

bool throttled(const Result& result) {
  return result.clocks && throttled(*result.clocks);
}

bool power_capped(const ClockRecord& clocks) {
  return !throttled(clocks) &&
         std::any_of(clocks.throttle_reasons.begin(), clocks.throttle_reasons.end(),
                     [](const std::string& r) { return is_power_cap_reason(r); });
}

bool power_capped(const Result& result) {
  return result.clocks && power_capped(*result.clocks);
}

std::string clock_event_text(const Result& result) {
  if (throttled(result)) {
    std::vector<std::string> reasons;
    for (const std::string& r : result.clocks->throttle_reasons)
      if (is_throttling_reason(r)) reasons.push_back(r);
    return fmt::format("throttled: thermal/hardware ({})", fmt::join(reasons, ", "));
  }
  if (power_capped(result)) return "power-capped (normal under full load)";
  return "";
}

ExitCode exit_code_for(const RunFile& run) {
  if (!run.errors.empty()) return ExitCode::kFailure;
  for (const Result& r : run.results) {
    if (r.status == Status::kInvalid || r.status == Status::kError) return ExitCode::kDegraded;
    // Power capping alone is the GPU working as designed at full load: not a fault.
    if (r.status == Status::kOk && throttled(r)) return ExitCode::kDegraded;
  }
  return ExitCode::kOk;
}

}  // namespace gpuvs
