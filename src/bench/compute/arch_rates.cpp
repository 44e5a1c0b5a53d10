// Rates per SM per clock. Each figure is a whitepaper peak divided back by SMs and
// the clock the whitepaper used; the division is written next to it so anyone can
// redo it. The CUDA C++ Programming Guide's "Arithmetic Instructions" throughput
// table (results per clock cycle per multiprocessor) gives the same CUDA-core rates:
// 32-bit FP FMA 64 (7.0, 8.0) and 128 (9.0), 64-bit FP 32 (7.0, 8.0) and 64 (9.0),
// 32-bit integer multiply-add 64; times 2 FLOP per FMA here.
#include "bench/compute/arch_rates.h"

#include <cuda_runtime_api.h>
#include <fmt/format.h>

#include <array>

namespace gpuvs {

namespace {

struct RateRow {
  std::string_view cc;
  ArithRate rate;
  double per_clock_per_sm;
  std::string_view source;
};

constexpr std::string_view kV100 =
    "NVIDIA Tesla V100 GPU Architecture whitepaper (2017), Table 1: 80 SMs at 1530 MHz";
constexpr std::string_view kA100 =
    "NVIDIA A100 Tensor Core GPU Architecture whitepaper (2020), Table 1: 108 SMs at 1410 MHz";
constexpr std::string_view kH100Cuda =
    "NVIDIA H100 Tensor Core GPU Architecture whitepaper (2022), Table 3, H100 SXM5: 132 SMs "
    "at 1980 MHz";
constexpr std::string_view kH100Tensor =
    "NVIDIA H100 Tensor Core GPU Architecture whitepaper (2022), Table 3, H100 SXM5, dense: "
    "132 SMs at 1830 MHz";

// clang-format off
constexpr std::array<RateRow, 27> kRates = {{
    // Volta: 7.8 TFLOPS FP64 = 80 x 64 x 1.53e9; 15.7 FP32 = 80 x 128 x 1.53e9;
    // 31.4 FP16 = 80 x 256 x 1.53e9; 15.7 TOPS INT32 = 80 x 128 x 1.53e9;
    // 125 tensor FP16 = 80 x 1024 x 1.53e9.
    {"7.0", ArithRate::kFp64Fma, 64, kV100},
    {"7.0", ArithRate::kFp32Fma, 128, kV100},
    {"7.0", ArithRate::kFp16x2Fma, 256, kV100},
    {"7.0", ArithRate::kInt32Mad, 128, kV100},
    {"7.0", ArithRate::kTensorFp16, 1024, kV100},
    // Ampere A100: 9.7 FP64 = 108 x 64 x 1.41e9; 19.5 FP32 = 108 x 128 x 1.41e9;
    // 78 FP16 = 108 x 512 x 1.41e9; 39 BF16 = 108 x 256 x 1.41e9; 19.5 TOPS INT32;
    // tensor: 19.5 FP64 = 108 x 128; 156 TF32 = 108 x 1024; 312 FP16/BF16 = 108 x 2048;
    // 624 TOPS INT8 = 108 x 4096 (all x 1.41e9).
    {"8.0", ArithRate::kFp64Fma, 64, kA100},
    {"8.0", ArithRate::kFp32Fma, 128, kA100},
    {"8.0", ArithRate::kFp16x2Fma, 512, kA100},
    {"8.0", ArithRate::kBf16x2Fma, 256, kA100},
    {"8.0", ArithRate::kInt32Mad, 128, kA100},
    {"8.0", ArithRate::kTensorFp64, 128, kA100},
    {"8.0", ArithRate::kTensorTf32, 1024, kA100},
    {"8.0", ArithRate::kTensorFp16, 2048, kA100},
    {"8.0", ArithRate::kTensorBf16, 2048, kA100},
    {"8.0", ArithRate::kTensorInt8, 4096, kA100},
    // Hopper H100/H200: 33.5 FP64 = 132 x 128 x 1.98e9; 66.9 FP32 = 132 x 256 x 1.98e9;
    // 133.8 FP16 and BF16 = 132 x 512 x 1.98e9; 33.5 TOPS INT32 = 132 x 128 x 1.98e9;
    // 66.9 tensor FP64 = 132 x 256 x 1.98e9; dense tensor at 1.83e9: 494.7 TF32 =
    // 132 x 2048; 989.4 FP16/BF16 = 132 x 4096; 1978.9 FP8 and INT8 = 132 x 8192.
    {"9.0", ArithRate::kFp64Fma, 128, kH100Cuda},
    {"9.0", ArithRate::kFp32Fma, 256, kH100Cuda},
    {"9.0", ArithRate::kFp16x2Fma, 512, kH100Cuda},
    {"9.0", ArithRate::kBf16x2Fma, 512, kH100Cuda},
    {"9.0", ArithRate::kInt32Mad, 128, kH100Cuda},
    {"9.0", ArithRate::kTensorFp64, 256, kH100Cuda},
    {"9.0", ArithRate::kTensorTf32, 2048, kH100Tensor},
    {"9.0", ArithRate::kTensorFp16, 4096, kH100Tensor},
    {"9.0", ArithRate::kTensorBf16, 4096, kH100Tensor},
    {"9.0", ArithRate::kTensorFp8, 8192, kH100Tensor},
    {"9.0", ArithRate::kTensorInt8, 8192, kH100Tensor},
}};
// clang-format on

}  // namespace

int compute_capability_x10(std::string_view cc) {
  const auto dot = cc.find('.');
  if (dot == std::string_view::npos || dot == 0 || dot + 1 >= cc.size()) return 0;
  int major = 0, minor = 0;
  for (char c : cc.substr(0, dot)) {
    if (c < '0' || c > '9') return 0;
    major = major * 10 + (c - '0');
  }
  for (char c : cc.substr(dot + 1)) {
    if (c < '0' || c > '9') return 0;
    minor = minor * 10 + (c - '0');
  }
  return major * 10 + minor;
}

std::optional<RateInfo> arith_rate(ArithRate rate, std::string_view cc) {
  for (const RateRow& row : kRates)
    if (row.cc == cc && row.rate == rate) return RateInfo{row.per_clock_per_sm, row.source};
  return std::nullopt;
}

std::optional<Peak> derived_peak(ArithRate rate, const GpuInfo& gpu, std::optional<int> max_mhz,
                                 std::string_view unit) {
  const std::optional<RateInfo> r = arith_rate(rate, gpu.compute_capability);
  if (!r || !max_mhz || *max_mhz <= 0 || gpu.sm_count <= 0) return std::nullopt;
  const double value = gpu.sm_count * r->per_clock_per_sm * *max_mhz * 1e6;
  const std::string_view per = unit == "OP/s" ? "OP" : "FLOP";
  return Peak{value, std::string(unit), "derived",
              fmt::format("{} SMs x {} {}/clock/SM x max SM clock {} MHz; per-SM rate from {}",
                          gpu.sm_count, r->per_clock_per_sm, per, *max_mhz, r->source)};
}

void apply_peak_at_clock(Result& result, ArithRate rate, const GpuInfo& gpu) {
  result.peak_at_clock.reset();
  result.efficiency_at_clock.reset();
  const std::optional<RateInfo> r = arith_rate(rate, gpu.compute_capability);
  if (!r || !result.clocks || !result.clocks->sm_mhz_median || *result.clocks->sm_mhz_median <= 0 ||
      gpu.sm_count <= 0 || result.status != Status::kOk)
    return;
  result.peak_at_clock = gpu.sm_count * r->per_clock_per_sm * *result.clocks->sm_mhz_median * 1e6;
  result.efficiency_at_clock = result.value / *result.peak_at_clock;
}

std::optional<int> max_sm_clock_mhz(const GpuInfo& gpu, int cuda_device) {
  if (gpu.sm_clock_max_mhz && *gpu.sm_clock_max_mhz > 0) return gpu.sm_clock_max_mhz;
  int khz = 0;
  if (cudaDeviceGetAttribute(&khz, cudaDevAttrClockRate, cuda_device) != cudaSuccess || khz <= 0) {
    cudaGetLastError();
    return std::nullopt;
  }
  return khz / 1000;
}

Result unsupported_result(std::string id, std::string name, int device,
                          std::map<std::string, ParamValue> parameters, std::string unit,
                          std::string reason) {
  Result r;
  r.id = std::move(id);
  r.name = std::move(name);
  r.devices = {device};
  r.parameters = std::move(parameters);
  r.unit = std::move(unit);
  r.status = Status::kUnsupported;
  r.status_reason = std::move(reason);
  r.validation = "not run";
  return r;
}

}  // namespace gpuvs
