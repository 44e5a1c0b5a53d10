// Where level 1's thresholds come from, as each verdict names them (docs/check.md
// cites every one in full), and the two helpers the rule files share. Internal to
// check/health*.cpp.
#pragma once

#include <string>

#include "check/health.h"

namespace gpuvs::check {

inline constexpr const char* kSourceMemoryErrors =
    "NVIDIA GPU Memory Error Management (docs.nvidia.com/deploy/a100-gpu-mem-error-mgmt)";
inline constexpr const char* kSourcePageRetirement =
    "NVIDIA Dynamic Page Retirement (docs.nvidia.com/deploy/dynamic-page-retirement)";
inline constexpr const char* kSourceXid = "NVIDIA Xid errors (docs.nvidia.com/deploy/xid-errors)";
inline constexpr const char* kSourcePcie =
    "nvidia-smi: the current PCIe link may be reduced when the GPU is not in use; gpuvs rule";
inline constexpr const char* kSourcePcieReplay =
    "NVML nvmlDeviceGetPcieReplayCounter; DCGM PCIe replay check; gpuvs rule (docs/check.md)";
inline constexpr const char* kSourceNvLink =
    "NVML NvLink methods (nvmlDeviceGetNvLinkState, nvmlDeviceGetNvLinkErrorCounter); DCGM "
    "NVLink checks; gpuvs rule (docs/check.md)";
inline constexpr const char* kSourceClockEvents =
    "NVML clock-event reasons (nvmlClocksEventReason*); gpuvs exit-code rule: power capping "
    "is not a fault";
inline constexpr const char* kSourceDcgmSoftware =
    "DCGM diagnostics, software deployment checks: persistence mode";
inline constexpr const char* kSourceNvml = "NVML API reference (docs.nvidia.com/deploy/nvml-api)";
inline constexpr const char* kSourceVersions =
    "gpuvs tune cache fingerprint (a tuned result holds for one driver)";

TestVerdict verdict(std::string test, Status status, std::string reason, std::string threshold,
                    std::string source);
// kSkip: NVML gave no `what` for this GPU.
TestVerdict skipped(std::string test, std::string what, std::string threshold, std::string source);

}  // namespace gpuvs::check
