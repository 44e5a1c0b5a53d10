// NCCL collectives measured the nccl-tests way, checked element by element
// (docs/collectives.md). Shared by the sweep (nccl.cpp: every op under NCCL's
// default choice) and the algorithm study (algorithms.cpp).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "bench/benchmarks.h"
#include "comm/collective_options.h"
#include "comm/nccl_comm.h"

namespace gpuvs {

// What one op at one size moves, with the nccl-tests definitions: `bytes` is
// nccl-tests' "size" after rounding to whole elements per rank; busbw = bytes / time
// x busbw_factor.
struct OpShape {
  size_t send_count = 0;  // floats each rank sends from
  size_t recv_count = 0;  // floats each rank receives into
  size_t chunk = 0;       // floats per rank (gather, scatter, alltoall)
  int64_t bytes = 0;
  double busbw_factor = 1;
};
// nullopt when the size holds less than one element per rank.
std::optional<OpShape> op_shape(const std::string& op, int64_t size, int ranks);

// One sweep under one communicator and one NCCL_ALGO/NCCL_PROTO setting.
struct CollectiveSweep {
  comm::NcclGroup* group = nullptr;
  std::vector<int> result_devices;  // results' devices (empty across processes)
  MeasureOptions options;
  comm::GraphMode graph = comm::GraphMode::kAuto;
  comm::ControlPlane* control = nullptr;  // progress steps, multi-process only
  std::string algo = "default";
  std::string proto = "default";
  bool nccl_mem_alloc = false;  // buffers from ncclMemAlloc, else cudaMalloc
  int clock_device = -1;        // NVML clock watch on this CUDA device (-1: none)
  std::function<void(const std::string&)> progress;
  std::function<void(std::span<const Result>)> checkpoint;  // after every point
};

// Measures `op` at every size; appends busbw and time results (and graph variants).
// Throws comm::CollectiveAbort when the communicator had to be aborted.
void measure_op(CollectiveSweep& sweep, const std::string& op, std::span<const int64_t> sizes,
                std::vector<Result>& out);

// A communicator over the context's GPUs (one process) or ranks (ctx.world).
std::unique_ptr<comm::NcclGroup> make_group(BenchContext& ctx, double timeout_s);

// Records in the run file how the communicator was formed (first call wins).
void record_comm(BenchContext& ctx, comm::NcclGroup& group);

// The sweep's base: devices, options, clock watch, progress from the context.
CollectiveSweep base_sweep(BenchContext& ctx, comm::NcclGroup& group);

// GPUs this collective run spans, for messages: "2 GPUs" / "4 ranks".
int collective_ranks(const BenchContext& ctx);

// The parameters of a collective result of `op` at shape `s` (bytes, ranks, dtype, the
// sweep's algorithm and protocol, CUDA graph, busbw factor, buffers, reduce op, root).
std::map<std::string, ParamValue> parameters(const std::string& op, const OpShape& s, int ranks,
                                             const CollectiveSweep& sweep, bool graph);

// NVIDIA's nccl-tests at the same sizes, same GPUs, same environment, one process
// driving them all (nccl_tests.cpp): its out-of-place figures as results
// beside ours.
void run_nccl_tests_beside(const BenchContext& ctx, const std::string& op,
                           std::span<const int64_t> sizes, std::vector<Result>& out);

}  // namespace gpuvs
