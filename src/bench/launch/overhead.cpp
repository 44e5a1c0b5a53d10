// Launch overhead: what a kernel launch costs before any work is done, and what a
// CUDA graph saves. Figures:
//  - launch.empty.latency: launch an empty kernel and wait for it, on the host's
//    clock (what a synchronous caller sees);
//  - launch.empty.throughput: empty kernels launched back to back on one stream;
//  - launch.graph.node: replay of a captured graph of empty-kernel nodes, per node;
//  - launch.chain.stream / launch.chain.graph: a chain of 16 small dependent kernels
//    (64 Ki floats each) launched on a stream, then replayed as one graph; the graph's
//    result carries the speed-up (the "enable CUDA graphs" advice, measured).
// Every kernel proves it ran: the empty kernel counts its launches, the chain's
// output must equal its input plus the chain's length. H200 (a VM): 11.2 us launch
// and wait, 188 k launch/s, 0.92 us per graph node, chain 80 us vs 20 us as a graph.
#include <cuda_runtime_api.h>
#include <fmt/format.h>

#include <vector>

#include "bench/benchmarks.h"
#include "bench/common/mem_util.h"
#include "bench/launch/overhead_kernels.h"
#include "gpu/check.h"
#include "gpu/device.h"
#include "measure/cuda_timer.h"
#include "suite/produces.h"

namespace gpuvs {

namespace {

constexpr int kGraphNodes = 64;
constexpr int kChainLength = 16;
constexpr size_t kChainElements = size_t{64} << 10;

}  // namespace

std::vector<Result> run_launch(BenchContext& ctx) {
  DeviceScope scope(ctx.device);
  Stream stream;
  const cudaStream_t s0 = stream.get();
  NvmlClockWatch clocks(ctx.device);
  std::vector<Result> results;

  DeviceBuffer counter(sizeof(unsigned long long));
  auto* count = counter.as<unsigned long long>();
  unsigned long long launched = 0;
  auto reset_count = [&] {
    GPUVS_CUDA_CHECK(cudaMemsetAsync(count, 0, sizeof(unsigned long long), s0));
    stream.synchronize();
    launched = 0;
  };
  auto check_count = [&]() -> Validation {
    stream.synchronize();
    unsigned long long ran = 0;
    GPUVS_CUDA_CHECK(cudaMemcpy(&ran, count, sizeof(ran), cudaMemcpyDeviceToHost));
    if (ran == launched)
      return {true, fmt::format("the kernels counted {} runs, as many as were launched", ran)};
    return {false, fmt::format("the kernels counted {} runs of {} launched", ran, launched)};
  };
  auto spec_for = [&](std::string id, std::string name, Headline headline) {
    ResultSpec spec;
    spec.id = std::move(id);
    spec.name = std::move(name);
    spec.devices = {ctx.device};
    spec.headline = headline;
    return spec;
  };

  {
    reset_count();
    HostClockTimed timed(
        [&] {
          launch_empty(count, s0);
          ++launched;
          stream.synchronize();
        },
        [&] { stream.synchronize(); });
    ResultSpec spec = spec_for(result_id(Family::kLaunchLatency), "Empty kernel: launch and wait",
                               Headline::kLatency);
    spec.parameters = {{"clock", std::string("host steady_clock")}};
    results.push_back(measure_result(spec, timed, ctx.clock, ctx.options, &clocks, check_count));
  }
  {
    reset_count();
    EventTimed timed(s0, [&](cudaStream_t s) {
      launch_empty(count, s);
      ++launched;
    });
    ResultSpec spec =
        spec_for(result_id(Family::kLaunchRate), "Empty kernels back to back", Headline::kItems);
    spec.items_per_iteration = 1;
    spec.items_unit = "launch/s";
    results.push_back(measure_result(spec, timed, ctx.clock, ctx.options, &clocks, check_count));
  }
  {
    const GraphExec graph(s0, [&](cudaStream_t s) {
      for (int k = 0; k < kGraphNodes; ++k)
        launch_empty(count, s);
    });
    const double nodes = static_cast<double>(graph.nodes());
    reset_count();
    EventTimed replay(s0, [&](cudaStream_t s) {
      graph.launch(s);
      launched += graph.nodes();
    });
    PerItemTimed timed(replay, nodes);
    ResultSpec spec = spec_for(result_id(Family::kGraphNode), "CUDA graph replay, per kernel node",
                               Headline::kLatency);
    spec.parameters = {{"nodes", static_cast<int64_t>(graph.nodes())}};
    results.push_back(measure_result(spec, timed, ctx.clock, per_item_options(ctx.options, nodes),
                                     &clocks, check_count));
  }

  // The chain: src (zeros) -> ping -> pong -> ping ...; the last link writes `last`.
  DeviceBuffer src(kChainElements * sizeof(float)), ping(kChainElements * sizeof(float)),
      pong(kChainElements * sizeof(float));
  GPUVS_CUDA_CHECK(cudaMemsetAsync(src.get(), 0, src.bytes(), s0));
  auto chain = [&](cudaStream_t s) {
    const float* in = src.as<float>();
    for (int k = 0; k < kChainLength; ++k) {
      float* out = (k % 2 == 0) ? ping.as<float>() : pong.as<float>();
      launch_increment(in, out, kChainElements, s);
      in = out;
    }
  };
  const DeviceBuffer& last = (kChainLength % 2 == 1) ? ping : pong;
  auto check_chain = [&]() -> Validation {
    stream.synchronize();
    std::vector<float> host(kChainElements);
    GPUVS_CUDA_CHECK(cudaMemcpy(host.data(), last.get(), last.bytes(), cudaMemcpyDeviceToHost));
    size_t bad = 0;
    for (float v : host)
      bad += v != static_cast<float>(kChainLength);
    if (bad == 0)
      return {true, fmt::format("all {} outputs equal the input plus {}, one per kernel",
                                kChainElements, kChainLength)};
    return {false, fmt::format("{} of {} outputs are not the input plus {}", bad, kChainElements,
                               kChainLength)};
  };
  auto chain_spec = [&](std::string id, std::string name) {
    ResultSpec spec = spec_for(std::move(id), std::move(name), Headline::kLatency);
    spec.parameters = {{"kernels", int64_t{kChainLength}},
                       {"elements_per_kernel", static_cast<int64_t>(kChainElements)}};
    return spec;
  };
  auto poison_last = [&] {
    GPUVS_CUDA_CHECK(cudaMemsetAsync(last.get(), 0xFF, last.bytes(), s0));
    stream.synchronize();
  };

  poison_last();
  EventTimed on_stream(s0, chain);
  results.push_back(measure_result(chain_spec(result_id(Family::kLaunchChain, {"stream"}),
                                              "Chain of 16 small kernels, "
                                              "stream launches"),
                                   on_stream, ctx.clock, ctx.options, &clocks, check_chain));
  const Result& stream_result = results.back();
  const double stream_s = stream_result.status == Status::kOk ? stream_result.value : 0;

  const GraphExec chain_graph(s0, chain);
  poison_last();
  EventTimed as_graph(s0, [&](cudaStream_t s) { chain_graph.launch(s); });
  Result graph_result = measure_result(chain_spec(result_id(Family::kLaunchChain, {"graph"}),
                                                  "Chain of 16 small kernels, one CUDA graph"),
                                       as_graph, ctx.clock, ctx.options, &clocks, check_chain);
  if (graph_result.status == Status::kOk && stream_s > 0 && graph_result.value > 0)
    graph_result.parameters["speedup_over_stream"] = stream_s / graph_result.value;
  results.push_back(std::move(graph_result));
  return results;
}

GPUVS_BENCHMARK(run_launch, "launch.overhead");

}  // namespace gpuvs
