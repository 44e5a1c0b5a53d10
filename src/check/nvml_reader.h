// Level 1's readings from NVML alone (no CUDA context is made, so a GPU in use by
// another job is only read): for each selected GPU the counters, then a window in
// which one event set collects the Xid critical errors of every GPU, then the
// counters again, so that check/health.h can judge what moved during the check.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "check/health.h"
#include "gpu/nvml.h"

namespace gpuvs::check {

struct SystemReadings {
  std::optional<std::string> driver_version;       // "580.95.05"
  std::optional<std::string> cuda_driver_version;  // "13.0"
};

SystemReadings read_system(const nvml::Library& library);

// `gpus`: NVML indices, each below library.device_count(). `window_s`: how long the
// event set waits for Xid events (the counters' two readings are that far apart).
std::vector<GpuReadings> read_level1(const nvml::Library& library, const std::vector<int>& gpus,
                                     double window_s);

}  // namespace gpuvs::check
