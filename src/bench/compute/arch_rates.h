// Per-SM, per-clock arithmetic rates by compute capability, and the peaks they give.
//
// A rate is dense work per clock per SM, counting a fused multiply-add as 2 FLOP
// (2 OP for an integer multiply-add), and a packed x2 instruction as 2 results.
// peak = SMs x rate x SM clock. Two peaks go into a compute result:
//  - the nominal one, at the GPU's maximum SM clock (Peak kind "derived"), and
//  - the peak at the clock the GPU actually ran while measured (median SM MHz),
//    so that "% of peak at measured clock" separates code quality from throttling.
// Only architectures whose rates are published unambiguously are listed (7.0, 8.0,
// 9.0); elsewhere the rate is unknown and no peak is derived (never guessed).
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>

#include "core/run_file.h"

namespace gpuvs {

enum class ArithRate {
  kFp64Fma,    // FP64 DFMA, CUDA cores
  kFp32Fma,    // FP32 FFMA, CUDA cores (also plain SGEMM's ceiling)
  kFp16x2Fma,  // HFMA2 on half2, CUDA cores
  kBf16x2Fma,  // HFMA2.BF16 on bfloat162, CUDA cores
  kInt32Mad,   // 32-bit IMAD, counted as 2 OP
  kTensorFp64,
  kTensorTf32,
  kTensorFp16,  // FP16 inputs, FP32 accumulate
  kTensorBf16,  // BF16 inputs, FP32 accumulate
  kTensorFp8,   // E4M3/E5M2 inputs, FP32 accumulate
  kTensorInt8,  // INT8 inputs, INT32 accumulate, in OP
};

struct RateInfo {
  double per_clock_per_sm = 0;  // FLOP (or OP) per clock per SM, dense
  std::string_view source;      // where the figure comes from
};

// "9.0" -> 90, "10.0" -> 100, "8.9" -> 89; 0 when it cannot be read.
int compute_capability_x10(std::string_view cc);

// The rate for compute capability `cc` ("9.0"), or nullopt where it is not known.
std::optional<RateInfo> arith_rate(ArithRate rate, std::string_view cc);

// SMs x rate x mhz x 1e6, in `unit` ("FLOP/s" or "OP/s"), as a derived Peak whose
// source states the formula and the rate's source. nullopt when the rate or the clock
// is unknown.
std::optional<Peak> derived_peak(ArithRate rate, const GpuInfo& gpu, std::optional<int> max_mhz,
                                 std::string_view unit);

// Sets result.peak_at_clock (SMs x rate x measured median SM MHz) and
// result.efficiency_at_clock (value / peak_at_clock) when the rate and the measured
// clock are known and the result is ok. Leaves them nullopt otherwise.
void apply_peak_at_clock(Result& result, ArithRate rate, const GpuInfo& gpu);

// The GPU's maximum SM clock: NVML's figure from the probe, else the CUDA runtime's
// peak clock attribute; nullopt when neither answers.
std::optional<int> max_sm_clock_mhz(const GpuInfo& gpu, int cuda_device);

// A result for something this GPU cannot run (FP8 before compute capability 8.9, a
// precision cuBLASLt offers no algorithm for): status unsupported with the reason,
// no value, no samples.
Result unsupported_result(std::string id, std::string name, int device,
                          std::map<std::string, ParamValue> parameters, std::string unit,
                          std::string reason);

}  // namespace gpuvs
