// compute.roofline: the sweeps of roofline_kernels.h and their ridge points, as results
// roofline.<kind> (one per point: parameters intensity and bytes, headline FLOP/s)
// and roofline.<kind>.ridge (FLOP/B). H200 (2026-11-30): HBM 4.27 TB/s on the memory
// roof; ridges FP32 14.8 FLOP/B, FP16x2 and BF16x2 24.3, BF16 GEMM 193.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime_api.h>
#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <cstring>
#include <thread>
#include <vector>

#include "bench/benchmarks.h"
#include "bench/compute/arch_rates.h"
#include "bench/compute/gemm_runner.h"
#include "bench/compute/roofline_kernels.h"
#include "core/stats.h"
#include "gpu/check.h"
#include "gpu/device.h"
#include "measure/cuda_timer.h"
#include "suite/produces.h"

namespace gpuvs {

namespace {

struct StreamKind {
  FmaType type;
  std::string_view name;  // "fp32" -> roofline.fp32
  std::string_view label;
};

constexpr std::array<StreamKind, 3> kStreamKinds = {{
    {FmaType::kFp32, "fp32", "FP32 FMA"},
    {FmaType::kFp16x2, "fp16x2", "FP16x2 HFMA2"},
    {FmaType::kBf16x2, "bf16x2", "BF16x2 HFMA2"},
}};
// The GEMM curve's kind: roofline.gemm.bf16.
constexpr std::string_view kGemmKind = "gemm.bf16";
constexpr std::array<int, 12> kSteps = {1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048};
constexpr std::array<int64_t, 7> kGemmSizes = {256, 512, 1024, 2048, 4096, 8192, 16384};
constexpr double kGemmRestSeconds = 0.5;
constexpr int kCheckChunks = 16;
constexpr size_t kCheckChunkVectors = 128;  // 16 x 128 x 16 B checked per point

// Each point is one figure on a curve: shorter caps than a headline result.
MeasureOptions point_options(const MeasureOptions& base) {
  MeasureOptions o = base;
  o.time_cap_s = std::min(o.time_cap_s, 0.3);
  o.warmup_cap_s = std::min(o.warmup_cap_s, 0.3);
  return o;
}

// Bytes per array: 1 GiB (about 17x the H200's L2), less where memory is short,
// never under 8x the L2.
size_t array_bytes(const GpuInfo& gpu) {
  const auto [free_b, total_b] = device_memory_info();
  (void)total_b;
  size_t bytes = std::min(size_t{1} << 30, free_b / 4) & ~size_t{(1 << 20) - 1};
  const size_t floor = 8 * static_cast<size_t>(std::max<int64_t>(gpu.l2_bytes, 1 << 20));
  if (bytes < floor)
    throw Error(fmt::format("roofline needs two arrays of {} MiB (8x L2); only {} MiB free",
                            floor >> 20, free_b >> 20));
  return bytes;
}

// The lane value of element e after k steps, as the GPU stores it, for comparison.
double stored_value(FmaType t, const unsigned char* bytes, size_t e) {
  if (t == FmaType::kFp32) {
    float f;
    std::memcpy(&f, bytes + 4 * e, 4);
    return f;
  }
  uint16_t h;
  std::memcpy(&h, bytes + 2 * e, 2);
  if (t == FmaType::kFp16x2) {
    __half_raw raw;
    raw.x = h;
    return __half2float(__half(raw));
  }
  __nv_bfloat16_raw raw;
  raw.x = h;
  return __bfloat162float(__nv_bfloat16(raw));
}

std::vector<Result> stream_sweep(BenchContext& ctx, const StreamKind& kind, const GpuInfo& gpu,
                                 Stream& stream) {
  const size_t bytes = array_bytes(gpu);
  const size_t n16 = bytes / 16;
  const size_t elements = n16 * (kind.type == FmaType::kFp32 ? 4 : 8);
  const size_t elem_size = bytes / elements;
  DeviceBuffer x(bytes), y(bytes);
  fill_roofline_input(kind.type, x.get(), n16, stream.get());
  const FmaChain chain = fma_chain(kind.type, 1024);
  const int lanes = fma_lanes(kind.type);
  const MeasureOptions options = point_options(ctx.options);

  std::vector<Result> out;
  for (int k : kSteps) {
    const double flops = double(n16) * 4 * lanes * kWorkPerLane * k;
    const double moved = 2.0 * double(bytes);
    EventTimed timed(stream.get(), [&](cudaStream_t s) {
      launch_roofline(kind.type, x.get(), y.get(), n16, k, chain, s);
    });
    auto validate = [&]() -> Validation {
      GPUVS_CUDA_CHECK(cudaMemsetAsync(y.get(), 0xFF, bytes, stream.get()));  // NaN
      launch_roofline(kind.type, x.get(), y.get(), n16, k, chain, stream.get());
      const size_t chunk_bytes = kCheckChunkVectors * 16;
      std::vector<unsigned char> host(chunk_bytes);
      const double tol = fma_tolerance(kind.type) / (kFmaAccumulators * 2.0);  // one lane
      size_t checked = 0, bad = 0;
      double worst = 0;
      for (int c = 0; c < kCheckChunks; ++c) {
        const size_t first16 = (n16 - kCheckChunkVectors) / (kCheckChunks - 1) * size_t(c);
        GPUVS_CUDA_CHECK(cudaMemcpyAsync(host.data(), y.as<unsigned char>() + first16 * 16,
                                         chunk_bytes, cudaMemcpyDeviceToHost, stream.get()));
        stream.synchronize();
        const size_t first_e = first16 * 16 / elem_size;
        for (size_t e = 0; e < chunk_bytes / elem_size; ++e) {
          const double ref = fma_chain_reference(
              kind.type, fma_initial(static_cast<uint32_t>(first_e + e), 0), k, chain);
          const double diff = std::fabs(stored_value(kind.type, host.data(), e) - ref);
          worst = std::max(worst, std::isnan(diff) ? INFINITY : diff);
          if (!(diff <= tol)) ++bad;
          ++checked;
        }
      }
      return {bad == 0,
              fmt::format("output poisoned, one run, then {} elements in {} spread blocks against "
                          "the CPU running the same {} steps ({}): {} differ, largest difference "
                          "{:.3g}",
                          checked, kCheckChunks, k,
                          tol == 0 ? "bit-exact expected" : fmt::format("tolerance {:.3g}", tol),
                          bad, worst)};
    };
    ResultSpec spec;
    spec.id = result_id(Family::kRoofline, {kind.name});
    spec.name = fmt::format("Roofline {} ({} FMA per element)", kind.label, k);
    spec.devices = {ctx.device};
    spec.parameters = {{"intensity", flops / moved},
                       {"bytes", static_cast<int64_t>(moved)},
                       {"fma_per_element", int64_t{k}},
                       {"bytes_per_array", static_cast<int64_t>(bytes)}};
    spec.headline = Headline::kFlops;
    spec.flops_per_iteration = flops;
    spec.bytes_per_iteration = moved;
    NvmlClockWatch clocks(ctx.device);
    out.push_back(measure_result(spec, timed, ctx.clock, options, &clocks, validate));
  }
  return out;
}

std::vector<Result> gemm_sweep(BenchContext& ctx, Stream& stream) {
  const GemmPrecision p = GemmPrecision::kBf16;
  const GemmShape capacity{kGemmSizes.back(), kGemmSizes.back(), kGemmSizes.back()};
  LtHandle handle;
  GemmRunner runner(p, capacity, handle, stream.get());
  // Like compute.gemm's figures: after a rest, within the window before the power cap
  // lowers the clock (a few tens of ms).
  MeasureOptions burst = point_options(ctx.options);
  burst.warmup_cap_s = std::min(burst.warmup_cap_s, 0.015);
  burst.max_warmup_batches = std::min(burst.max_warmup_batches, 4);
  burst.time_cap_s = std::min(burst.time_cap_s, 0.02);
  std::vector<Result> out;
  for (int64_t s : kGemmSizes) {
    const GemmShape shape{s, s, s};
    const std::optional<GemmAlgo> algo = runner.choose(shape, 4, gemm_search_options(), ctx.clock);
    if (!algo) continue;
    const double moved = gemm_operand_bytes(p, shape);
    ResultSpec spec;
    spec.id = result_id(Family::kRoofline, {kGemmKind});
    spec.name = fmt::format("Roofline BF16 GEMM {}^3", s);
    spec.devices = {ctx.device};
    spec.parameters = {{"intensity", shape.flops() / moved},
                       {"bytes", static_cast<int64_t>(moved)},
                       {"rest_before_s", kGemmRestSeconds},
                       {"m", s},
                       {"n", s},
                       {"k", s},
                       {"algorithm_index", int64_t{algo->heuristic_index}},
                       {"algorithms_tried", int64_t{algo->tried}}};
    spec.headline = Headline::kFlops;
    spec.flops_per_iteration = shape.flops();
    spec.bytes_per_iteration = moved;
    EventTimed timed(stream.get(), [&](cudaStream_t st) { runner.enqueue(*algo, st); });
    // As compute.gemm: idle first, so the points do not inherit each other's power cap.
    stream.synchronize();
    std::this_thread::sleep_for(std::chrono::duration<double>(kGemmRestSeconds));
    NvmlClockWatch clocks(ctx.device);
    out.push_back(measure_result(spec, timed, ctx.clock, burst, &clocks,
                                 [&] { return runner.validate(*algo); }));
  }
  return out;
}

double intensity_of(const Result& r) {
  return std::get<double>(r.parameters.at("intensity"));
}

struct Roofs {
  const Result* compute = nullptr;  // the point with the highest FLOP/s
  const Result* memory = nullptr;   // the point with the highest bandwidth
};

Roofs roofs(const std::vector<Result>& points) {
  Roofs r;
  for (const Result& p : points) {
    if (p.status != Status::kOk) continue;
    if (!r.compute || p.value > r.compute->value) r.compute = &p;
    if (!r.memory || p.value / intensity_of(p) > r.memory->value / intensity_of(*r.memory))
      r.memory = &p;
  }
  return r;
}

// The ridge of roofline.<kind>: peak from `compute`'s points, bandwidth from `memory`'s
// (`memory_id`'s points).
Result ridge_result(std::string_view kind, const std::string& label, int device,
                    const Result* compute, const Result* memory, const std::string& memory_id) {
  const std::string kind_id = result_id(Family::kRoofline, {kind});
  Result r;
  r.id = result_id(Family::kRooflineRidge, {kind});
  r.name = fmt::format("Ridge point, {}", label);
  r.devices = {device};
  r.unit = "FLOP/B";
  if (!compute || !memory) {
    r.status = Status::kInvalid;
    r.status_reason = "no validated point to derive the ridge from";
    r.validation = "derived; no validated point";
    return r;
  }
  const double flops = compute->value;
  const double bandwidth = memory->value / intensity_of(*memory);
  r.value = flops / bandwidth;
  r.samples = {r.value};
  r.stats = compute_stats(r.samples);
  r.parameters = {{"peak_flops", flops},
                  {"peak_intensity", intensity_of(*compute)},
                  {"bandwidth", bandwidth},
                  {"bandwidth_intensity", intensity_of(*memory)}};
  r.validation = fmt::format(
      "derived from validated points: the highest FLOP/s of {} ({:.4g} FLOP/s at {:.4g} FLOP/B) "
      "divided by the highest bandwidth of {} ({:.4g} B/s = FLOP/s / intensity at {:.4g} FLOP/B)",
      kind_id, flops, intensity_of(*compute), memory_id, bandwidth, intensity_of(*memory));
  return r;
}

}  // namespace

std::vector<Result> run_compute_roofline(BenchContext& ctx) {
  DeviceScope scope(ctx.device);
  const GpuInfo& gpu = ctx.system.gpus.at(ctx.device);
  Stream stream;
  std::vector<Result> results;
  Roofs fp32;
  std::vector<Result> fp32_points;
  for (const StreamKind& kind : kStreamKinds) {
    if (kind.type == FmaType::kBf16x2 && compute_capability_x10(gpu.compute_capability) < 80)
      continue;
    std::vector<Result> points = stream_sweep(ctx, kind, gpu, stream);
    const Roofs r = roofs(points);
    Result ridge = ridge_result(kind.name, std::string(kind.label), ctx.device, r.compute, r.memory,
                                result_id(Family::kRoofline, {kind.name}));
    results.insert(results.end(), points.begin(), points.end());
    results.push_back(std::move(ridge));
    if (kind.type == FmaType::kFp32) fp32_points = std::move(points);
  }
  fp32 = roofs(fp32_points);
  std::vector<Result> gemm = gemm_sweep(ctx, stream);
  const Roofs g = roofs(gemm);
  Result ridge = ridge_result(kGemmKind, "BF16 GEMM", ctx.device, g.compute, fp32.memory,
                              result_id(Family::kRoofline, {"fp32"}));
  results.insert(results.end(), gemm.begin(), gemm.end());
  results.push_back(std::move(ridge));
  return results;
}

GPUVS_BENCHMARK(run_compute_roofline, "compute.roofline");

}  // namespace gpuvs
