#include "bench/registry.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>

#include "core/error.h"

namespace gpuvs {

namespace {

const std::array<BenchmarkInfo, 13> kBenchmarks = {{
    {"memory.hbm", "memory",
     "HBM read, write, copy, scale, add, triad, dot (launch shape tuned per device)", true,
     run_hbm},
    {"memory.cache", "memory", "L2 and shared-memory bandwidth; read bandwidth vs working set",
     true, run_cache},
    {"memory.latency", "memory", "Load latency by pointer chasing, 4 KiB to 4 GiB working sets",
     true, run_latency},
    {"memory.capacity", "memory", "Largest single allocation and total allocatable memory", true,
     run_capacity},
    {"compute.fma", "compute",
     "CUDA-core peaks: FP64, FP32, FP16x2, BF16x2 FMA and INT32 IMAD chains on every SM", true,
     run_compute_fma},
    {"compute.gemm", "compute",
     "cuBLASLt GEMM, 8192^3 (burst, sustained) and best shape: FP64 to FP8, INT8", true,
     run_compute_gemm},
    {"compute.roofline", "compute",
     "Roofline sweeps (FP32, FP16x2, BF16x2 streaming; BF16 GEMM) and measured ridge points", false,
     run_compute_roofline},
    {"host.link", "host",
     "Host link: to/from device and both ways; pageable, pinned, zero-copy; vs size", true,
     run_host_link},
    {"peer.link", "peer",
     "Peer links per GPU pair: copy engine and SM copies, one and both ways, latency, path", true,
     run_peer, BenchScope::kAllDevices},
    {"collectives.nccl", "collectives",
     "NCCL all_reduce, all_gather, reduce_scatter, broadcast, reduce, alltoall, sendrecv: "
     "busbw and latency vs size, data checked",
     true, run_collectives, BenchScope::kAllDevices},
    {"collectives.algorithms", "collectives",
     "Which NCCL_ALGO x NCCL_PROTO wins per op and size, against NCCL's default choice", false,
     run_collective_study, BenchScope::kAllDevices},
    {"launch.overhead", "launch",
     "Kernel launch latency and rate, graph replay per node, graph vs stream speed-up", true,
     run_launch},
    {"model.end_to_end", "model",
     "End-to-end models: ResNet-50 bf16 train and infer, batch 256 (`gpuvs model` for all "
     "options)",
     true, run_model},
}};

}  // namespace

std::span<const BenchmarkInfo> benchmarks() {
  return kBenchmarks;
}

std::vector<const BenchmarkInfo*> select_benchmarks(std::span<const std::string> names) {
  std::vector<const BenchmarkInfo*> out;
  auto add = [&](const BenchmarkInfo& b) {
    if (std::find(out.begin(), out.end(), &b) == out.end()) out.push_back(&b);
  };
  if (names.empty()) {
    for (const auto& b : kBenchmarks)
      if (b.group != "model") add(b);
    return out;
  }
  for (const std::string& name : names) {
    bool matched = false;
    for (const auto& b : kBenchmarks) {
      if (b.name == name || b.group == name) {
        add(b);
        matched = true;
      }
    }
    if (!matched) {
      std::string known;
      for (const auto& b : kBenchmarks)
        known += fmt::format(" {} ({})", b.name, b.group);
      throw UsageError(fmt::format("unknown benchmark '{}'; known:{}", name, known));
    }
  }
  // Keep table order whatever order the names came in.
  std::sort(out.begin(), out.end());
  return out;
}

std::vector<const BenchmarkInfo*> run_suite() {
  std::vector<const BenchmarkInfo*> out;
  for (const auto& b : kBenchmarks)
    if (b.in_run) out.push_back(&b);
  return out;
}

}  // namespace gpuvs
