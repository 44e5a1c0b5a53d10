// The device probe: what GPUs this process sees and what software drives them, as the
// `system` section of a run file.
//
// Invariants:
//  - identity (name, uuid, bus id, compute capability, SM count, memory, L2) comes
//    from the CUDA runtime and is always present for a probed GPU;
//  - everything else comes from NVML and is std::nullopt where NVML is missing or
//    does not answer; the probe never fails because of NVML;
//  - only "no usable GPU or driver" is an error: CannotRunError, one line, exit 3.
#pragma once

#include <array>
#include <string>

#include "core/run_file.h"

namespace gpuvs {

// Number of CUDA devices this process sees (> 0). Throws CannotRunError when the
// driver is missing or too old or no GPU is visible, e.g.
// "no NVIDIA GPU found: CUDA reports no CUDA-capable device is detected (is the NVIDIA
//  driver installed and a GPU visible? CUDA_VISIBLE_DEVICES is not set)".
int cuda_device_count();

// One GPU by CUDA ordinal. Throws gpuvs::Error when the CUDA runtime cannot describe it.
GpuInfo probe_gpu(int cuda_device);

// Host facts and library versions, without touching a GPU: works (gpus empty, driver
// versions nullopt) on a machine with no driver at all.
SystemInfo probe_host_and_libraries();

// probe_host_and_libraries() plus every visible GPU; throws as cuda_device_count().
SystemInfo probe_system();

// Version helpers, exposed for tests. 13000 -> "13.0" (CUDA driver/runtime);
// cuDNN 9 91400 -> "9.14.0" (cuDNN 8: 8907 -> "8.9.7"); NCCL 22803 -> "2.28.3"
// (before 2.9: 2708 -> "2.7.8").
std::string cuda_version_string(int version);
std::string cudnn_version_string(long long version);
std::string nccl_version_string(int version);

// "GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx", lower-case hex, as nvidia-smi prints it.
std::string format_gpu_uuid(const std::array<unsigned char, 16>& bytes);

}  // namespace gpuvs
