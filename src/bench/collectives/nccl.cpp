// NCCL collectives, the nccl-tests way (docs/collectives.md): a batch of back-to-back
// operations on every GPU, timed by the host clock from the first launch to the last
// stream drained; algbw = bytes / time and busbw = algbw x the op's factor, with
// nccl-tests' definitions, so the figures compare one to one. After timing, every
// received element is checked on the GPU against its exact expected value.
// Across processes, each sample's time is the maximum over ranks and the wall clock
// is rank 0's (both agreed through a one-element all_reduce), so every rank takes
// the same decisions in the harness and runs the same number of collectives.
//
// 2x H200 (NV18), NCCL 2.28: all_reduce 2 GiB ~340 GB/s busbw (nccl-tests: 340 Ring,
// 351 Tree); 8 B ~15 us eager, ~6 us as a CUDA graph.
#include "bench/collectives/nccl.h"

#include <cuda_runtime_api.h>
#include <fmt/format.h>
#include <unistd.h>

#include <chrono>
#include <map>

#include "bench/collectives/nccl_kernels.h"
#include "comm/collective_params.h"
#include "comm/control.h"
#include "comm/world.h"
#include "core/host.h"
#include "core/stats.h"
#include "core/units.h"
#include "gpu/check.h"
#include "measure/cuda_timer.h"
#include "suite/produces.h"

namespace gpuvs {

namespace {

constexpr int kWarmupOps = 5;

// Send and receive buffers of every local GPU, sized for the largest shape.
struct Buffers {
  std::vector<comm::CommBuffer> send, recv;
  std::vector<DeviceBuffer> mismatches;
};

Buffers allocate(comm::NcclGroup& group, size_t send_floats, size_t recv_floats,
                 bool nccl_mem_alloc) {
  Buffers b;
  for (int i = 0; i < group.local_count(); ++i) {
    DeviceScope scope(group.device(i));
    b.send.emplace_back(std::max<size_t>(send_floats, 1) * sizeof(float), nccl_mem_alloc);
    b.recv.emplace_back(std::max<size_t>(recv_floats, 1) * sizeof(float), nccl_mem_alloc);
    b.mismatches.emplace_back(sizeof(unsigned long long));
  }
  return b;
}

// One op on one local GPU; inside the caller's group.
ncclResult_t enqueue(comm::NcclGroup& g, const Buffers& b, const std::string& op, const OpShape& s,
                     int i) {
  const float* send = b.send[i].as<float>();
  float* recv = b.recv[i].as<float>();
  ncclComm_t c = g.comm(i);
  cudaStream_t st = g.stream(i);
  const int n = g.world_size();
  const int r = g.rank(i);
  if (op == "all_reduce") return ncclAllReduce(send, recv, s.recv_count, ncclFloat, ncclSum, c, st);
  if (op == "all_gather") return ncclAllGather(send, recv, s.send_count, ncclFloat, c, st);
  if (op == "reduce_scatter")
    return ncclReduceScatter(send, recv, s.recv_count, ncclFloat, ncclSum, c, st);
  if (op == "broadcast") return ncclBroadcast(send, recv, s.recv_count, ncclFloat, 0, c, st);
  if (op == "reduce") return ncclReduce(send, recv, s.recv_count, ncclFloat, ncclSum, 0, c, st);
  ncclResult_t res = ncclGroupStart();
  if (op == "alltoall") {
    for (int p = 0; p < n && res == ncclSuccess; ++p) {
      res = ncclSend(send + p * s.chunk, s.chunk, ncclFloat, p, c, st);
      if (res == ncclSuccess) res = ncclRecv(recv + p * s.chunk, s.chunk, ncclFloat, p, c, st);
    }
  } else {  // sendrecv: a ring, each rank to the next
    res = ncclSend(send, s.send_count, ncclFloat, (r + 1) % n, c, st);
    if (res == ncclSuccess) res = ncclRecv(recv, s.recv_count, ncclFloat, (r - 1 + n) % n, c, st);
  }
  const ncclResult_t end = ncclGroupEnd();
  return res != ncclSuccess ? res : end;
}

// One operation on every local GPU, as one NCCL group.
void launch_once(comm::NcclGroup& g, const Buffers& b, const std::string& op, const OpShape& s,
                 const std::string& what) {
  comm::NcclGroup::Call call(g, what);
  GPUVS_NCCL_CHECK(ncclGroupStart());
  for (int i = 0; i < g.local_count(); ++i) {
    const ncclResult_t r = enqueue(g, b, op, s, i);
    if (r != ncclSuccess) {
      ncclGroupEnd();
      g.check_enqueue(r, what);
    }
  }
  g.check_enqueue(ncclGroupEnd(), what);
}

// The harness's timed region: `k` operations back to back, host clock, every stream
// drained; across processes the slowest rank's time.
class CollectiveTimed final : public Timed {
 public:
  CollectiveTimed(CollectiveSweep& sweep, const Buffers& b, const std::string& op, const OpShape& s,
                  bool graph, std::string what)
      : sweep_(sweep), b_(b), op_(op), s_(s), graph_(graph), what_(std::move(what)) {}

  double run(int64_t iterations) override {
    comm::NcclGroup& g = *sweep_.group;
    if (sweep_.control != nullptr) sweep_.control->step(++steps_, what_);
    const GraphSet* graph = graph_ ? &graph_for(iterations) : nullptr;
    const double t0 = monotonic_seconds();
    if (graph != nullptr) {
      graph->launch();
    } else {
      for (int64_t k = 0; k < iterations; ++k)
        launch_once(g, b_, op_, s_, what_);
    }
    g.wait(what_);
    const double elapsed = monotonic_seconds() - t0;
    return multi_process() ? g.max_host(elapsed, what_) : elapsed;
  }

 private:
  bool multi_process() const { return sweep_.group->world_size() > sweep_.group->local_count(); }

  const GraphSet& graph_for(int64_t iterations) {
    auto it = graphs_.find(iterations);
    if (it != graphs_.end()) return *it->second;
    comm::NcclGroup& g = *sweep_.group;
    auto set = std::make_unique<GraphSet>(g.streams(), [&] {
      for (int64_t k = 0; k < iterations; ++k)
        launch_once(g, b_, op_, s_, what_);
    });
    return *graphs_.emplace(iterations, std::move(set)).first->second;
  }

  CollectiveSweep& sweep_;
  const Buffers& b_;
  const std::string& op_;
  const OpShape& s_;
  bool graph_;
  std::string what_;
  int64_t steps_ = 0;
  std::map<int64_t, std::unique_ptr<GraphSet>> graphs_;
};

// Rank 0's clock on every rank, so time caps end sampling at the same sample.
class AgreedClock final : public WallClock {
 public:
  explicit AgreedClock(comm::NcclGroup& g) : g_(g) {}
  double now_s() override {
    const double t = monotonic_seconds();
    if (g_.world_size() == g_.local_count()) return t;
    return g_.broadcast_host(t, "clock agreement");
  }

 private:
  comm::NcclGroup& g_;
};

comm::NcclGroup& checked(comm::NcclGroup* g) {
  if (g == nullptr) throw Error("collective sweep without a communicator");
  return *g;
}

Expectation expectation(const std::string& op, const OpShape& s, int rank, int ranks) {
  Expectation e;
  e.ranks = ranks;
  e.rank = rank;
  e.chunk = std::max<size_t>(s.chunk, 1);
  if (op == "all_reduce" || op == "reduce") {
    e.kind = ExpectKind::kSumOverRanks;
  } else if (op == "reduce_scatter") {
    e.kind = ExpectKind::kSumOverRanks;
    e.offset = static_cast<uint64_t>(rank) * s.chunk;
  } else if (op == "all_gather") {
    e.kind = ExpectKind::kGathered;
  } else if (op == "alltoall") {
    e.kind = ExpectKind::kAllToAll;
  } else if (op == "broadcast") {
    e.kind = ExpectKind::kFromRank;
    e.source = 0;
  } else {  // sendrecv
    e.kind = ExpectKind::kFromRank;
    e.source = (rank - 1 + ranks) % ranks;
  }
  return e;
}

// Fill the send buffers with the pattern and poison the receive buffers.
void prepare(comm::NcclGroup& g, const Buffers& b, const OpShape& s) {
  for (int i = 0; i < g.local_count(); ++i) {
    DeviceScope scope(g.device(i));
    fill_pattern(b.send[i].as<float>(), s.send_count, g.rank(i), g.stream(i));
    poison(b.recv[i].as<float>(), s.recv_count, g.stream(i));
  }
  g.wait("filling buffers");
}

// Every received element against its exact value, summed over all ranks.
Validation check(comm::NcclGroup& g, const Buffers& b, const std::string& op, const OpShape& s) {
  std::vector<double> wrong(g.local_count(), 0), checked_elems(g.local_count(), 0);
  for (int i = 0; i < g.local_count(); ++i) {
    DeviceScope scope(g.device(i));
    if (op == "reduce" && g.rank(i) != 0) continue;  // only the root receives
    auto* counter = b.mismatches[i].as<unsigned long long>();
    GPUVS_CUDA_CHECK(cudaMemsetAsync(counter, 0, sizeof(*counter), g.stream(i)));
    count_mismatches(b.recv[i].as<float>(), s.recv_count,
                     expectation(op, s, g.rank(i), g.world_size()), counter, g.stream(i));
    checked_elems[i] = static_cast<double>(s.recv_count);
  }
  g.wait("checking received data");
  for (int i = 0; i < g.local_count(); ++i) {
    if (checked_elems[i] == 0) continue;
    unsigned long long n = 0;
    DeviceScope scope(g.device(i));
    GPUVS_CUDA_CHECK(cudaMemcpy(&n, b.mismatches[i].get(), sizeof(n), cudaMemcpyDeviceToHost));
    wrong[i] = static_cast<double>(n);
  }
  const double total_wrong = g.all_reduce_host(wrong, ncclSum, "agreeing on the check");
  const double total = g.all_reduce_host(checked_elems, ncclSum, "agreeing on the check");
  Validation v;
  v.passed = total_wrong == 0 && total > 0;
  v.detail = fmt::format(
      "received data compared with exact expected values on every receiving rank: {:.0f} of "
      "{:.0f} float32 elements wrong",
      total_wrong, total);
  return v;
}

// The busbw result from the time result of the same samples.
Result busbw_of(const Result& time, const std::string& op, const OpShape& s) {
  Result r = time;
  r.id = result_id(Family::kCollectiveBusbw, {op});
  r.name = fmt::format("{} bus bandwidth", op);
  r.unit = "B/s";
  r.samples.clear();
  for (double t : time.samples)
    r.samples.push_back(static_cast<double>(s.bytes) / t * s.busbw_factor);
  r.stats = compute_stats(r.samples);
  r.value = r.stats.median;
  return r;
}

bool graph_wanted(comm::GraphMode mode, int64_t bytes) {
  switch (mode) {
    case comm::GraphMode::kOff:
      return false;
    case comm::GraphMode::kOn:
      return true;
    case comm::GraphMode::kAuto:
      return bytes <= comm::kGraphAutoMaxBytes;
  }
  return false;
}

RankInfo my_rank_info(const SystemInfo& system, int rank, int local_rank, int device) {
  RankInfo r;
  r.rank = rank;
  r.host = host_name();
  r.pid = static_cast<int>(::getpid());
  r.local_rank = local_rank;
  r.device = device;
  if (device >= 0 && static_cast<size_t>(device) < system.gpus.size()) {
    r.gpu_name = system.gpus[device].name;
    r.gpu_uuid = system.gpus[device].uuid;
    r.pci_bus_id = system.gpus[device].pci_bus_id;
  }
  return r;
}

// Every rank's RankInfo, through the communicator itself (fixed-size text records).
std::vector<RankInfo> gather_rank_info(comm::NcclGroup& g, const RankInfo& mine) {
  constexpr size_t kRecord = 512;
  std::string text =
      fmt::format("{}\n{}\n{}\n{}\n{}\n{}\n{}\n{}\n", mine.rank, mine.host, mine.pid,
                  mine.local_rank, mine.device, mine.gpu_name, mine.gpu_uuid, mine.pci_bus_id);
  text.resize(kRecord, '\0');
  const int n = g.world_size();
  DeviceScope scope(g.device(0));
  DeviceBuffer send(kRecord), recv(kRecord * n);
  GPUVS_CUDA_CHECK(cudaMemcpy(send.get(), text.data(), kRecord, cudaMemcpyHostToDevice));
  g.check_enqueue(ncclAllGather(send.get(), recv.get(), kRecord, ncclChar, g.comm(0), g.stream(0)),
                  "exchanging rank information");
  g.wait("exchanging rank information");
  std::string all(kRecord * n, '\0');
  GPUVS_CUDA_CHECK(cudaMemcpy(all.data(), recv.get(), all.size(), cudaMemcpyDeviceToHost));
  std::vector<RankInfo> out;
  for (int r = 0; r < n; ++r) {
    std::vector<std::string> f;
    std::string_view rec(all.data() + r * kRecord, kRecord);
    size_t start = 0;
    for (int k = 0; k < 8; ++k) {
      const size_t end = rec.find('\n', start);
      if (end == std::string_view::npos) break;
      f.emplace_back(rec.substr(start, end - start));
      start = end + 1;
    }
    RankInfo info;
    info.rank = r;
    if (f.size() == 8) {
      info.host = f[1];
      info.pid = std::atoi(f[2].c_str());
      info.local_rank = std::atoi(f[3].c_str());
      info.device = std::atoi(f[4].c_str());
      info.gpu_name = f[5];
      info.gpu_uuid = f[6];
      info.pci_bus_id = f[7];
    }
    if (info.host.empty()) info.host = "unknown";
    out.push_back(std::move(info));
  }
  return out;
}

}  // namespace

std::map<std::string, ParamValue> parameters(const std::string& op, const OpShape& s, int ranks,
                                             const CollectiveSweep& sweep, bool graph) {
  comm::CollectiveLabels labels;
  labels.algo = sweep.algo;
  labels.proto = sweep.proto;
  labels.graph = graph;
  labels.buffers = sweep.nccl_mem_alloc ? "ncclMemAlloc" : "cudaMalloc";
  // gpuvs sums, with rank 0 as the root.
  labels.redop = "sum";
  labels.root = 0;
  return comm::collective_parameters(op, s.bytes, ranks, labels);
}

std::optional<OpShape> op_shape(const std::string& op, int64_t size, int ranks) {
  const auto n = static_cast<size_t>(ranks);
  const size_t elems = static_cast<size_t>(size) / sizeof(float);
  OpShape s;
  s.busbw_factor = comm::busbw_factor(op, ranks);
  if (op == "all_reduce" || op == "broadcast" || op == "reduce" || op == "sendrecv") {
    s.send_count = s.recv_count = elems;
    s.bytes = static_cast<int64_t>(elems * sizeof(float));
  } else {  // all_gather, reduce_scatter, alltoall: a chunk per rank
    s.chunk = elems / n;
    const size_t whole = s.chunk * n;
    s.send_count = op == "all_gather" ? s.chunk : whole;
    s.recv_count = op == "reduce_scatter" ? s.chunk : whole;
    s.bytes = static_cast<int64_t>(whole * sizeof(float));
  }
  if (s.send_count == 0 || s.recv_count == 0) return std::nullopt;
  return s;
}

void measure_op(CollectiveSweep& sweep, const std::string& op, std::span<const int64_t> sizes,
                std::vector<Result>& out) {
  comm::NcclGroup& g = checked(sweep.group);
  const int n = g.world_size();
  size_t max_send = 0, max_recv = 0;
  for (int64_t size : sizes) {
    if (auto s = op_shape(op, size, n)) {
      max_send = std::max(max_send, s->send_count);
      max_recv = std::max(max_recv, s->recv_count);
    }
  }
  if (max_send == 0) return;
  const Buffers buffers = allocate(g, max_send, max_recv, sweep.nccl_mem_alloc);
  AgreedClock clock(g);
  std::unique_ptr<NvmlClockWatch> watch;
  // Sparse: NVML polls compete with the host-bound launches of small messages.
  if (sweep.clock_device >= 0)
    watch = std::make_unique<NvmlClockWatch>(sweep.clock_device, std::chrono::milliseconds(200));

  size_t index = 0;
  for (int64_t size : sizes) {
    ++index;
    const auto shape = op_shape(op, size, n);
    if (!shape) continue;
    for (bool graph : {false, true}) {
      if (graph && !graph_wanted(sweep.graph, shape->bytes)) continue;
      const std::string variant = sweep.algo == "default" && sweep.proto == "default"
                                      ? std::string()
                                      : fmt::format(" [{}/{}]", sweep.algo, sweep.proto);
      const std::string what = fmt::format("{} {}{}{}", op, format_bytes_binary(shape->bytes),
                                           graph ? " (graph)" : "", variant);
      if (sweep.progress) sweep.progress(fmt::format("{} ({}/{})", what, index, sizes.size()));
      prepare(g, buffers, *shape);
      // nccl-tests' warm-up (-w 5): connections for this size's algorithm and
      // protocol are set up before the harness calibrates its batch.
      for (int k = 0; k < kWarmupOps; ++k)
        launch_once(g, buffers, op, *shape, what);
      g.wait(what);
      CollectiveTimed timed(sweep, buffers, op, *shape, graph, what);
      ResultSpec spec;
      spec.id = result_id(Family::kCollectiveTime, {op});
      spec.name = fmt::format("{} time per operation", op);
      spec.devices = sweep.result_devices;
      spec.parameters = parameters(op, *shape, n, sweep, graph);
      spec.headline = Headline::kLatency;
      spec.bytes_per_iteration = static_cast<double>(shape->bytes);
      Result time = measure_result(spec, timed, clock, sweep.options, watch.get(),
                                   [&] { return check(g, buffers, op, *shape); });
      out.push_back(busbw_of(time, op, *shape));
      out.push_back(std::move(time));
      if (sweep.checkpoint) sweep.checkpoint(out);
    }
  }
}

int collective_ranks(const BenchContext& ctx) {
  return ctx.world != nullptr ? ctx.world->size() : static_cast<int>(ctx.devices.size());
}

std::unique_ptr<comm::NcclGroup> make_group(BenchContext& ctx, double timeout_s) {
  comm::GroupSpec spec;
  spec.timeout_s = timeout_s;
  if (ctx.world != nullptr) {
    spec.devices = {ctx.world->device};
    spec.world_size = ctx.world->size();
    spec.first_rank = ctx.world->rank();
    spec.unique_id = ctx.world->share_unique_id();
    spec.control = ctx.world->control.get();
  } else {
    spec.devices = ctx.devices;
    spec.world_size = static_cast<int>(ctx.devices.size());
    spec.unique_id = comm::new_unique_id();
  }
  return std::make_unique<comm::NcclGroup>(spec);
}

void record_comm(BenchContext& ctx, comm::NcclGroup& group) {
  if (ctx.comm_record == nullptr) return;
  CommInfo info;
  info.world_size = group.world_size();
  info.nccl_env = comm::nccl_environment();
  info.timeout_s = ctx.collectives != nullptr ? ctx.collectives->timeout_s : 60;
  if (ctx.world != nullptr) {
    info.launch = std::string(comm::to_string(ctx.world->launch.mode));
    const int local = ctx.world->peers.at(ctx.world->rank()).local_rank;
    info.ranks = gather_rank_info(
        group, my_rank_info(ctx.system, ctx.world->rank(), local, ctx.world->device));
  } else {
    info.launch = std::string(comm::to_string(comm::LaunchMode::kSingleProcess));
    for (int i = 0; i < group.local_count(); ++i)
      info.ranks.push_back(my_rank_info(ctx.system, i, i, group.device(i)));
  }
  if (!*ctx.comm_record) *ctx.comm_record = std::move(info);
}

CollectiveSweep base_sweep(BenchContext& ctx, comm::NcclGroup& group) {
  CollectiveSweep sweep;
  sweep.group = &group;
  if (ctx.world == nullptr) sweep.result_devices = ctx.devices;
  sweep.options = ctx.options;
  // Hundreds of points: a second of sampling each at most (the noise rule usually
  // stops far sooner).
  sweep.options.time_cap_s = std::min(sweep.options.time_cap_s, 1.0);
  sweep.options.warmup_cap_s = std::min(sweep.options.warmup_cap_s, 1.0);
  // 200 samples make a p99 of batch means and keep a full sweep's run file small.
  sweep.options.max_samples = std::min(sweep.options.max_samples, 200);
  if (ctx.collectives != nullptr) {
    sweep.graph = ctx.collectives->graph;
    sweep.nccl_mem_alloc = ctx.collectives->nccl_mem_alloc;
  }
  if (ctx.world != nullptr) sweep.control = ctx.world->control.get();
  sweep.clock_device = group.device(0);
  sweep.progress = ctx.progress;
  sweep.checkpoint = ctx.checkpoint;
  return sweep;
}

std::vector<Result> run_collectives(BenchContext& ctx) {
  if (collective_ranks(ctx) < 2) {
    Result r;
    r.id = result_id(Family::kCollectiveBusbw, {"all_reduce"});
    r.name = "all_reduce bus bandwidth";
    r.devices = ctx.devices;
    r.status = Status::kUnsupported;
    r.status_reason =
        "collectives need 2 or more GPUs; this process drives 1 (on several hosts, start one "
        "rank per GPU: docs/collectives.md)";
    r.validation = "none";
    return {r};
  }
  comm::CollectiveOptions defaults;
  const comm::CollectiveOptions& o = ctx.collectives != nullptr ? *ctx.collectives : defaults;
  std::vector<std::string> ops = comm::selected_ops(o);
  std::vector<int64_t> sizes = comm::collective_sizes(o);
  if (ctx.quick && o.sizes.empty() && o.ops.empty()) {
    // gpuvs run: all_reduce at a latency size, a mid size and the bandwidth size.
    ops = {"all_reduce"};
    sizes = {8, int64_t{64} << 10, int64_t{16} << 20, int64_t{2} << 30};
  }
  std::vector<Result> out;
  try {
    auto group = make_group(ctx, o.timeout_s);
    record_comm(ctx, *group);
    CollectiveSweep sweep = base_sweep(ctx, *group);
    for (const std::string& op : ops)
      measure_op(sweep, op, sizes, out);
  } catch (comm::CollectiveAbort& e) {
    e.partial = std::move(out);
    throw;
  }
  if (!o.nccl_tests_dir.empty()) {
    if (ctx.world != nullptr) {
      throw UsageError(
          "--nccl-tests runs beside a single-process run only (it drives every GPU "
          "from one process with -g)");
    }
    for (const std::string& op : ops)
      run_nccl_tests_beside(ctx, op, sizes, out);
  }
  return out;
}

GPUVS_BENCHMARK(run_collectives, "collectives.nccl");

}  // namespace gpuvs
