// Load latency against working-set size, by dependent pointer chasing
// (chase_kernels.h) over 4 KiB to 4 GiB, one node per 128-byte line: the chart
// shows the steps from L1 to L2 to HBM, and the TLB's reach beyond that. Working
// sets up to twice the L2 are read once by many threads before timing, so what is
// measured is the steady state, not the first touch. The H200's steps are listed in
// docs/memory.md.
#include "bench/common/chase.h"

#include <cuda_runtime_api.h>
#include <fmt/format.h>

#include <algorithm>

#include "bench/benchmarks.h"
#include "bench/common/chase_kernels.h"
#include "gpu/check.h"
#include "measure/cuda_timer.h"
#include "suite/produces.h"

namespace gpuvs {

ChaseTimed::ChaseTimed(cudaStream_t stream, const void* buffer, uint64_t nodes, bool bypass)
    : stream_(stream), buffer_(buffer), nodes_(nodes), bypass_(bypass), state_(sizeof(uint64_t)) {
  reset_chase(state_.as<uint64_t>(), buffer_, stream_);
}

double ChaseTimed::run(int64_t iterations) {
  start_.record(stream_);
  launch_chase(state_.as<uint64_t>(), iterations, bypass_, stream_);
  stop_.record(stream_);
  stop_.synchronize();
  steps_ += static_cast<uint64_t>(iterations);
  return stop_.seconds_since(start_);
}

Validation ChaseTimed::check() const {
  GPUVS_CUDA_CHECK(cudaStreamSynchronize(stream_));
  uint64_t end = 0;
  GPUVS_CUDA_CHECK(cudaMemcpy(&end, state_.get(), sizeof(end), cudaMemcpyDeviceToHost));
  const auto base = reinterpret_cast<uint64_t>(buffer_);
  const uint64_t expected = chase_advance(0, steps_, nodes_);
  const bool inside =
      end >= base && end < base + nodes_ * kChaseStride && (end - base) % kChaseStride == 0;
  const uint64_t node = inside ? (end - base) / kChaseStride : 0;
  if (inside && node == expected)
    return {true, fmt::format("after {} dependent loads the chase is at node {} of {}, as the "
                              "chain's closed form says",
                              steps_, node, nodes_)};
  if (!inside)
    return {false,
            fmt::format("after {} loads the chase left the buffer (address {:#x})", steps_, end)};
  return {false, fmt::format("after {} loads the chase is at node {}, expected {}", steps_, node,
                             expected)};
}

MeasureOptions latency_options(MeasureOptions options) {
  options.min_sample_s = std::max(options.min_sample_s, 0.01);
  return options;
}

std::vector<Result> run_latency(BenchContext& ctx) {
  DeviceScope scope(ctx.device);
  const GpuInfo& gpu = ctx.system.gpus.at(ctx.device);
  const size_t l2 = static_cast<size_t>(std::max<int64_t>(gpu.l2_bytes, 1 << 20));
  const auto [free_b, total_b] = device_memory_info();
  (void)total_b;
  size_t max_bytes = size_t{4} << 30;
  while (max_bytes > (size_t{64} << 20) && max_bytes > free_b / 2)
    max_bytes /= 2;

  DeviceBuffer buffer(max_bytes);
  Stream stream;
  NvmlClockWatch clocks(ctx.device);
  const MeasureOptions options = latency_options(ctx.options);
  std::vector<Result> results;
  // Every 2x in full runs, every 4x in the quick pass.
  const size_t factor = ctx.quick ? 4 : 2;
  for (size_t bytes = size_t{4} << 10; bytes <= max_bytes; bytes *= factor) {
    const uint64_t nodes = bytes / kChaseStride;
    init_chase(buffer.get(), nodes, stream.get());
    if (bytes <= 2 * l2) warm_chase(buffer.get(), nodes, stream.get());
    stream.synchronize();
    ChaseTimed timed(stream.get(), buffer.get(), nodes, /*bypass=*/false);
    ResultSpec spec;
    spec.id = result_id(Family::kLatency);
    spec.name = "Load latency (pointer chase)";
    spec.devices = {ctx.device};
    spec.parameters = {{"bytes", static_cast<int64_t>(bytes)},
                       {"stride_bytes", static_cast<int64_t>(kChaseStride)},
                       {"order", std::string("full-period LCG over the lines")}};
    spec.headline = Headline::kLatency;
    results.push_back(
        measure_result(spec, timed, ctx.clock, options, &clocks, [&] { return timed.check(); }));
  }
  return results;
}

GPUVS_BENCHMARK(run_latency, "memory.latency");

}  // namespace gpuvs
