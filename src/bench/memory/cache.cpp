// On-chip bandwidth: L2 (a working set of a quarter of the L2, read over and over by
// every SM through ld.global.cg) and shared memory (every SM reading its own 16 KiB
// with conflict-free 16-byte loads). Full runs add a read-bandwidth sweep over
// working sets from 1 MiB to 4 GiB with the L2 kernel: the step from L2 to HBM.
// Bytes counted: bytes loaded. H200: L2 7.9 TB/s (15 MiB working set); shared memory
// peaks at 33.4 TB/s (132 SMs x 128 B/clk x 1.98 GHz); the sweep in docs/memory.md.
#include <cuda_runtime_api.h>
#include <fmt/format.h>

#include <algorithm>
#include <vector>

#include "bench/benchmarks.h"
#include "bench/common/mem_util.h"
#include "bench/common/stream_kernels.h"
#include "bench/memory/cache_kernels.h"
#include "gpu/check.h"
#include "gpu/device.h"
#include "measure/cuda_timer.h"
#include "suite/produces.h"

namespace gpuvs {

namespace {

// Reads `n` doubles (a multiple of 1024), `passes` times per launch, and builds the
// result; the block partials must add up to passes x the closed form.
Result measure_l2_read(BenchContext& ctx, const ResultSpec& base, const DeviceBuffer& a, size_t n,
                       int passes, const DeviceBuffer& partials, unsigned grid, Stream& stream,
                       ClockWatch& clocks) {
  EventTimed timed(stream.get(), [&](cudaStream_t s) {
    launch_l2_read(a.get(), n, passes, partials.as<double>(), grid, s);
  });
  auto validate = [&]() -> Validation {
    stream.synchronize();
    std::vector<double> host(grid);
    GPUVS_CUDA_CHECK(
        cudaMemcpy(host.data(), partials.get(), grid * sizeof(double), cudaMemcpyDeviceToHost));
    double sum = 0;
    for (double p : host)
      sum += p;
    const double expected = passes * stream_expected_sum(StreamOp::kRead, n);
    if (sum == expected)
      return {true, fmt::format("sum of {} block partials equals the closed form {:.0f} exactly",
                                grid, expected)};
    return {false, fmt::format("sum {:.0f} differs from the closed form {:.0f}", sum, expected)};
  };
  ResultSpec spec = base;
  spec.bytes_per_iteration = static_cast<double>(passes) * static_cast<double>(n * sizeof(double));
  // A sweep's points differ in "bytes" only (the report draws one line per set of
  // other parameters), so the passes per launch stay out of theirs.
  if (!spec.parameters.count("bytes")) spec.parameters["passes"] = int64_t{passes};
  spec.parameters["grid"] = static_cast<int64_t>(grid);
  spec.parameters["block"] = int64_t{kCacheBlock};
  return measure_result(spec, timed, ctx.clock, ctx.options, &clocks, validate);
}

// Passes so that one launch reads about `target` bytes.
int passes_for(size_t bytes, size_t target) {
  return static_cast<int>(std::clamp<size_t>(target / bytes, 1, 4096));
}

}  // namespace

std::vector<Result> run_cache(BenchContext& ctx) {
  DeviceScope scope(ctx.device);
  const GpuInfo& gpu = ctx.system.gpus.at(ctx.device);
  const size_t l2 = static_cast<size_t>(std::max<int64_t>(gpu.l2_bytes, 1 << 20));
  NvmlClockWatch clocks(ctx.device);
  Stream stream;
  std::vector<Result> results;

  // Largest working set of the sweep; the L2 figure uses the first l2 / 4 of it.
  const auto [free_b, total_b] = device_memory_info();
  (void)total_b;
  size_t max_bytes = ctx.quick ? l2 : size_t{4} << 30;
  while (max_bytes > l2 && max_bytes > free_b / 2)
    max_bytes /= 2;
  DeviceBuffer a(max_bytes);
  init_stream_inputs(a.get(), nullptr, max_bytes / sizeof(double), stream.get());
  const unsigned l2_grid = l2_read_grid();
  DeviceBuffer partials(l2_grid * sizeof(double));

  {
    const size_t bytes = (l2 / 4) & ~size_t{8 * 1024 - 1};  // whole periods of the values
    ResultSpec spec;
    spec.id = result_id(Family::kL2Read);
    spec.name = "L2 read";
    spec.devices = {ctx.device};
    spec.parameters = {{"working_set_bytes", static_cast<int64_t>(bytes)},
                       {"l2_bytes", static_cast<int64_t>(l2)},
                       {"load", std::string("ld.global.cg (L2 only), 16-byte")}};
    spec.headline = Headline::kBandwidth;
    results.push_back(measure_l2_read(ctx, spec, a, bytes / sizeof(double),
                                      passes_for(bytes, size_t{1} << 31), partials, l2_grid, stream,
                                      clocks));
  }

  {
    const unsigned grid = smem_read_grid();
    DeviceBuffer smem_partials(grid * sizeof(uint32_t));
    const int iterations = 1 << 14;  // 16 Ki loads of 16 B per thread
    EventTimed timed(stream.get(), [&](cudaStream_t s) {
      launch_smem_read(iterations, smem_partials.as<uint32_t>(), grid, s);
    });
    auto validate = [&]() -> Validation {
      stream.synchronize();
      std::vector<uint32_t> host(grid);
      GPUVS_CUDA_CHECK(cudaMemcpy(host.data(), smem_partials.get(), grid * sizeof(uint32_t),
                                  cudaMemcpyDeviceToHost));
      const uint32_t expected = smem_expected_block_sum(iterations);
      const auto bad =
          std::count_if(host.begin(), host.end(), [&](uint32_t v) { return v != expected; });
      if (bad == 0)
        return {true, fmt::format("all {} block sums equal the closed form {}", grid, expected)};
      return {false, fmt::format("{} of {} block sums differ from the closed form {}", bad, grid,
                                 expected)};
    };
    ResultSpec spec;
    spec.id = result_id(Family::kSmemRead);
    spec.name = "Shared-memory read";
    spec.devices = {ctx.device};
    spec.parameters = {{"grid", static_cast<int64_t>(grid)},
                       {"block", int64_t{kCacheBlock}},
                       {"shared_bytes_per_block", int64_t{kSmemVectors * 16}},
                       {"load", std::string("ld.shared.v4.u32, conflict-free")}};
    spec.headline = Headline::kBandwidth;
    spec.bytes_per_iteration =
        static_cast<double>(grid) * kCacheBlock * static_cast<double>(iterations) * 16.0;
    if (gpu.sm_clock_max_mhz)
      spec.peak = Peak{static_cast<double>(gpu.sm_count) * 128.0 * *gpu.sm_clock_max_mhz * 1e6,
                       "B/s", "derived",
                       fmt::format("{} SMs x 128 B/clk (32 banks x 4 B) x max SM clock {} MHz",
                                   gpu.sm_count, *gpu.sm_clock_max_mhz)};
    results.push_back(measure_result(spec, timed, ctx.clock, ctx.options, &clocks, validate));
    reject_above_peak(results.back());
  }

  // Read bandwidth against working-set size: full runs only (a chart, not a headline).
  if (!ctx.quick) {
    for (size_t bytes = size_t{1} << 20; bytes <= max_bytes; bytes *= 2) {
      ResultSpec spec;
      spec.id = result_id(Family::kReadSweep);
      spec.name = "Read bandwidth vs working set";
      spec.devices = {ctx.device};
      spec.parameters = {{"bytes", static_cast<int64_t>(bytes)},
                         {"load", std::string("ld.global.cg (L2 only), 16-byte")}};
      spec.headline = Headline::kBandwidth;
      results.push_back(measure_l2_read(ctx, spec, a, bytes / sizeof(double),
                                        passes_for(bytes, size_t{1} << 30), partials, l2_grid,
                                        stream, clocks));
    }
  }
  return results;
}

GPUVS_BENCHMARK(run_cache, "memory.cache");

}  // namespace gpuvs
