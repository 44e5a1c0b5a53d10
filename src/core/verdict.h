// What a run's results mean for its exit code (docs/design.md): 0 every result ok and
// not slowed down; 4 finished but some result is invalid or was taken while the GPU
// was slowed down (thermal or hardware slowdown); 1 some benchmark failed (an error was
// recorded).
//
// NVML's clock-event reasons (gpu/nvml_names.cpp spells them) fall into three kinds:
//  - power capping, "sw_power_cap": the GPU's software power controller holds the
//    enforced power limit. Normal under full load (an H100/H200 meets its 700 W at
//    tensor load): recorded and shown as "power-capped", never exit 4.
//  - slowdowns: "sw_thermal_slowdown", "hw_thermal_slowdown" (too hot), "hw_slowdown"
//    and "hw_power_brake_slowdown" (the hardware halves the clocks or more: an
//    external power-brake signal from the system's supply, a fast power trigger, an
//    over-temperature). Signs of a cooling, power-delivery or hardware fault: exit 4.
//  - settings and states: "gpu_idle", "applications_clocks_setting", "sync_boost",
//    "display_clock_setting", and reasons gpuvs has no name for ("unknown_0x..."):
//    neither.
#pragma once

#include <string>
#include <string_view>

#include "core/error.h"
#include "core/run_file.h"

namespace gpuvs {

enum class ClockEventKind { kOther, kPowerCap, kSlowdown };
ClockEventKind clock_event_kind(std::string_view reason);

// A thermal or hardware slowdown reason (the kind that sets exit 4).
bool is_throttling_reason(std::string_view reason);
// Power capping ("sw_power_cap").
bool is_power_cap_reason(std::string_view reason);

// Slowed down: some reason is a thermal or hardware slowdown.
bool throttled(const ClockRecord& clocks);
bool throttled(const Result& result);
// Held at its power limit and not slowed down otherwise.
bool power_capped(const ClockRecord& clocks);
bool power_capped(const Result& result);

// What a result's clock events mean, for people: "" (none that matter), "power-capped
// (normal under full load)", "throttled: thermal/hardware (hw_slowdown, ...)".
std::string clock_event_text(const Result& result);

ExitCode exit_code_for(const RunFile& run);

}  // namespace gpuvs
