// What a run's results mean for its exit code (docs/design.md): 0 every result ok and
// unthrottled; 4 finished but some result is invalid or was taken while the GPU was
// throttled; 1 some benchmark failed (an error was recorded).
#pragma once

#include "core/error.h"
#include "core/run_file.h"

namespace gpuvs {

// Throttle reasons that lower clocks against the user's will (power, thermal, a
// hardware slowdown). "gpu_idle", application-clock and sync-boost settings are not.
bool is_throttling_reason(std::string_view reason);
bool throttled(const ClockRecord& clocks);
bool throttled(const Result& result);

ExitCode exit_code_for(const RunFile& run);

}  // namespace gpuvs
