// Terminal renderings of run files and system fingerprints (no CUDA here: these
// read only run-file structs). An invalid or failed result is never shown as a
// number, only as its status and reason.
#pragma once

#include <string>

#include "core/run_file.h"

namespace gpuvs {

// One row per result: figure, noise, samples, share of peak (and where the peak
// comes from), SM clock seen, status; NCCL collective results instead as tables per
// operation (report/collectives.h); then the errors the run recorded.
std::string render_summary(const RunFile& run);

// `gpuvs detect`: host, driver and library versions, then one block per GPU.
std::string render_system(const SystemInfo& system);

// "H200" from "NVIDIA H200": short GPU label for table cells.
std::string short_gpu_name(const std::string& name);

}  // namespace gpuvs
