// Non-tensor arithmetic peaks: compute.fma.{fp64,fp32,fp16x2,bf16x2,int32}.
//
// Dependent FMA chains on every SM (fma_kernels.h); one launch is one iteration of
// the harness. H200 at 1980 MHz (2026-11-30): FP32 63.5 TFLOP/s (peak 66.9), FP64 33.2
// (33.5), FP16x2 and BF16x2 129.7 (133.8), INT32 33.2 TOP/s (33.5).
//
// Validation: the output buffer is poisoned (NaN) before one checked launch; every
// thread's value must then be finite (written), and a spread sample of threads must
// match the CPU running the same chain: bit for bit for FP64, FP32 (std::fma rounds
// once, as the GPU's FMA does) and INT32; within one unit in the last place per
// accumulator for the halves, whose CPU model (exact product and sum in double,
// one rounding to the half type) is exact too but is not the hardware's own code.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime_api.h>
#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <vector>

#include "bench/benchmarks.h"
#include "bench/compute/arch_rates.h"
#include "bench/compute/fma_kernels.h"
#include "gpu/check.h"
#include "gpu/device.h"
#include "measure/cuda_timer.h"
#include "suite/produces.h"

namespace gpuvs {

namespace {

struct FmaKind {
  FmaType type;
  std::string_view name;   // id suffix
  std::string_view label;  // human name
  ArithRate rate;
  int min_cc;  // compute capability x 10
};

constexpr std::array<FmaKind, 5> kKinds = {{
    {FmaType::kFp64, "fp64", "FP64 FMA (CUDA cores)", ArithRate::kFp64Fma, 0},
    {FmaType::kFp32, "fp32", "FP32 FMA (CUDA cores)", ArithRate::kFp32Fma, 0},
    {FmaType::kFp16x2, "fp16x2", "FP16x2 HFMA2 (CUDA cores)", ArithRate::kFp16x2Fma, 53},
    {FmaType::kBf16x2, "bf16x2", "BF16x2 HFMA2 (CUDA cores)", ArithRate::kBf16x2Fma, 80},
    {FmaType::kInt32, "int32", "INT32 IMAD (CUDA cores)", ArithRate::kInt32Mad, 0},
}};

constexpr int kSampledThreads = 32;

// Rounds an exact double to the half type (one rounding, to nearest even) and back.
double round_half(FmaType t, double x) {
  if (t == FmaType::kFp16x2) return __half2float(__double2half(x));
  return __bfloat162float(__double2bfloat16(x));
}

Result run_one(BenchContext& ctx, const FmaKind& kind, const GpuInfo& gpu,
               std::optional<int> max_mhz, Stream& stream) {
  const bool op_unit = kind.type == FmaType::kInt32;
  const std::string unit = op_unit ? "OP/s" : "FLOP/s";
  const std::string id = result_id(Family::kFma, {kind.name});
  if (compute_capability_x10(gpu.compute_capability) < kind.min_cc)
    return unsupported_result(
        id, std::string(kind.label), ctx.device, {}, unit,
        fmt::format("{} needs compute capability {}.{}; this GPU is {}", kind.label,
                    kind.min_cc / 10, kind.min_cc % 10, gpu.compute_capability));

  const int blocks = fma_blocks_per_sm(kind.type) * gpu.sm_count;
  if (blocks <= 0) throw Error(fmt::format("{}: no block fits on an SM", id));
  const int64_t threads = int64_t{blocks} * kFmaBlock;
  const std::optional<Peak> peak = derived_peak(kind.rate, gpu, max_mhz, unit);

  // One launch lasts about 4 ms at the nominal peak (2 ms in the quick pass): long
  // against launch gaps, short enough for the CPU check.
  const double target_s = ctx.quick ? 2e-3 : 4e-3;
  const double work_per_round =
      double(threads) * kFmaUnroll * kFmaAccumulators * fma_lanes(kind.type) * kWorkPerLane;
  const double rate = peak ? peak->value : 2e13;
  const int64_t outer = std::max<int64_t>(1, std::llround(rate * target_s / work_per_round));
  const int64_t steps = outer * kFmaUnroll;  // per accumulator
  const FmaChain chain = fma_chain(kind.type, steps);
  const double work = work_per_round * double(outer);

  DeviceBuffer out(static_cast<size_t>(threads) * sizeof(double));
  double* out_ptr = out.as<double>();
  EventTimed timed(stream.get(), [&](cudaStream_t s) {
    launch_fma(kind.type, out_ptr, blocks, outer, chain, s);
  });

  auto validate = [&]() -> Validation {
    GPUVS_CUDA_CHECK(cudaMemsetAsync(out_ptr, 0xFF, out.bytes(), stream.get()));  // NaN
    launch_fma(kind.type, out_ptr, blocks, outer, chain, stream.get());
    std::vector<double> host(static_cast<size_t>(threads));
    GPUVS_CUDA_CHECK(
        cudaMemcpyAsync(host.data(), out_ptr, out.bytes(), cudaMemcpyDeviceToHost, stream.get()));
    stream.synchronize();
    const auto unwritten =
        std::count_if(host.begin(), host.end(), [](double v) { return !std::isfinite(v); });
    const double tol = fma_tolerance(kind.type);
    int bad = 0;
    double worst = 0;
    uint32_t first_bad = 0;
    for (int s = 0; s < kSampledThreads; ++s) {
      const auto tid = static_cast<uint32_t>(
          s == kSampledThreads - 1 ? threads - 1 : (int64_t{s} * 2654435761LL) % threads);
      const double diff = std::fabs(host[tid] - fma_reference(kind.type, tid, steps, chain));
      worst = std::max(worst, diff);
      if (!(diff <= tol)) {
        if (bad == 0) first_bad = tid;
        ++bad;
      }
    }
    const std::string what = fmt::format(
        "{} threads poisoned then written, {} not finite; {} sampled threads against the CPU "
        "running the same {} steps on each of {} accumulators ({}): {} differ, largest "
        "difference {:.3g}",
        threads, unwritten, kSampledThreads, steps, kFmaAccumulators,
        tol == 0 ? "bit-exact expected" : fmt::format("tolerance {:.3g}", tol), bad, worst);
    if (unwritten == 0 && bad == 0) return {true, what};
    return {false, bad ? fmt::format("{}; first at thread {}", what, first_bad) : what};
  };

  ResultSpec spec;
  spec.id = id;
  spec.name = std::string(kind.label);
  spec.devices = {ctx.device};
  spec.parameters = {{"blocks", int64_t{blocks}},
                     {"threads_per_block", int64_t{kFmaBlock}},
                     {"accumulators", int64_t{kFmaAccumulators}},
                     {"unroll", int64_t{kFmaUnroll}},
                     {"outer_iterations", outer},
                     {"instructions_per_thread", outer * kFmaUnroll * kFmaAccumulators},
                     {"lanes_per_instruction", int64_t{fma_lanes(kind.type)}}};
  if (op_unit) {
    spec.headline = Headline::kItems;
    spec.items_per_iteration = work;
    spec.items_unit = "OP/s";
  } else {
    spec.headline = Headline::kFlops;
    spec.flops_per_iteration = work;
  }
  spec.peak = peak;

  NvmlClockWatch clocks(ctx.device);
  Result r = measure_result(spec, timed, ctx.clock, ctx.options, &clocks, validate);
  apply_peak_at_clock(r, kind.rate, gpu);
  return r;
}

}  // namespace

double fma_chain_reference(FmaType t, double x0, int64_t steps, FmaChain c) {
  switch (t) {
    case FmaType::kFp64: {
      double x = x0;
      for (int64_t i = 0; i < steps; ++i)
        x = std::fma(x, c.a, c.b);
      return x;
    }
    case FmaType::kFp32: {
      const float a = static_cast<float>(c.a), b = static_cast<float>(c.b);
      float x = static_cast<float>(x0);
      for (int64_t i = 0; i < steps; ++i) {
        const float next = std::fma(x, a, b);
        if (next == x) break;
        x = next;
      }
      return x;
    }
    case FmaType::kFp16x2:
    case FmaType::kBf16x2: {
      double x = round_half(t, x0);
      for (int64_t i = 0; i < steps; ++i) {
        const double next = round_half(t, x * c.a + c.b);  // exact in double, one rounding
        if (next == x) break;
        x = next;
      }
      return x;
    }
    case FmaType::kInt32: {
      const auto a = static_cast<uint32_t>(c.a), b = static_cast<uint32_t>(c.b);
      auto x = static_cast<uint32_t>(x0);
      for (int64_t i = 0; i < steps; ++i)
        x = x * a + b;
      return x;
    }
  }
  return 0;
}

// The CPU's value of thread `tid`: the same chains, summed in the kernel's order. A
// chain that reaches a fixed point stays there, so the CPU stops early (the halves
// converge in a few thousand steps; FP32 and FP64 are sized not to).
double fma_reference(FmaType t, uint32_t tid, int64_t steps, FmaChain c) {
  switch (t) {
    case FmaType::kFp64: {
      double s = 0;
      for (int j = 0; j < kFmaAccumulators; ++j)
        s += fma_chain_reference(t, fma_initial(tid, 2 * j), steps, c);
      return s;
    }
    case FmaType::kFp32:
    case FmaType::kFp16x2:
    case FmaType::kBf16x2: {
      float s = 0;
      for (int j = 0; j < kFmaAccumulators; ++j)
        for (int lane = 0; lane < fma_lanes(t); ++lane)
          s += static_cast<float>(fma_chain_reference(t, fma_initial(tid, 2 * j + lane), steps, c));
      return s;
    }
    case FmaType::kInt32: {
      uint32_t s = 0;
      for (int j = 0; j < kFmaAccumulators; ++j)
        s += static_cast<uint32_t>(fma_chain_reference(t, fma_seed(tid, 2 * j), steps, c));
      return s;
    }
  }
  return 0;
}

// Allowed |GPU - CPU|: 0 where the CPU model is the hardware's arithmetic; one unit in
// the last place (just below 1) per accumulator lane for the halves.
double fma_tolerance(FmaType t) {
  const double lanes = kFmaAccumulators * 2.0;
  if (t == FmaType::kFp16x2) return lanes * 0x1.0p-11;
  if (t == FmaType::kBf16x2) return lanes * 0x1.0p-8;
  return 0;
}

std::vector<Result> run_compute_fma(BenchContext& ctx) {
  DeviceScope scope(ctx.device);
  const GpuInfo& gpu = ctx.system.gpus.at(ctx.device);
  const std::optional<int> max_mhz = max_sm_clock_mhz(gpu, ctx.device);
  Stream stream;
  std::vector<Result> results;
  for (const FmaKind& kind : kKinds)
    results.push_back(run_one(ctx, kind, gpu, max_mhz, stream));
  return results;
}

GPUVS_BENCHMARK(run_compute_fma, "compute.fma");

}  // namespace gpuvs
