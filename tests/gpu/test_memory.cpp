// The memory-hierarchy, host-link, peer and launch benchmarks end to end on GPU 0
// (quick options), their building blocks (pointer chase, pinned and peer scopes,
// graphs), and the one-GPU answer of the peer benchmark.
#include <fmt/format.h>

#include <algorithm>
#include <vector>

#include "bench/benchmarks.h"
#include "bench/common/chase.h"
#include "bench/common/chase_kernels.h"
#include "bench/common/mem_util.h"
#include "bench/launch/overhead_kernels.h"
#include "bench/memory/cache_kernels.h"
#include "gpu/check.h"
#include "gpu/device.h"
#include "gpu/probe.h"
#include "gpu_test_util.h"

namespace gpuvs {
namespace {

BenchContext quick_context(const SystemInfo& system, std::vector<int> devices = {0}) {
  return BenchContext{
      system,  devices.front(), quick_options(), true, steady_wall_clock(), std::move(devices),
      nullptr, nullptr,         nullptr,         {}};
}

void expect_all_ok(const std::vector<Result>& results) {
  for (const Result& r : results) {
    SCOPED_TRACE(r.id);
    EXPECT_EQ(r.status, Status::kOk) << r.status_reason;
    EXPECT_GT(r.value, 0);
    EXPECT_FALSE(r.validation.empty());
  }
}

double param_number(const Result& r, const std::string& key) {
  const ParamValue& v = r.parameters.at(key);
  if (const auto* i = std::get_if<int64_t>(&v)) return static_cast<double>(*i);
  return std::get<double>(v);
}

TEST(RejectAbovePeak, ImpossibleFiguresBecomeInvalid) {
  Result r;
  r.value = 3.5e14;
  r.unit = "B/s";
  r.peak = Peak{3.3e13, "B/s", "derived", "banks x clock"};
  r.efficiency = r.value / r.peak->value;
  Result fine = r;
  fine.value = 3.2e13;
  fine.efficiency = fine.value / fine.peak->value;
  reject_above_peak(r);
  reject_above_peak(fine);
  EXPECT_EQ(r.status, Status::kInvalid);
  EXPECT_NE(r.status_reason.find("faster than the hardware can go"), std::string::npos);
  EXPECT_EQ(fine.status, Status::kOk);
}

TEST(Chase, AdvanceMatchesStepping) {
  for (uint64_t nodes : {uint64_t{32}, uint64_t{1} << 15, uint64_t{1} << 25}) {
    uint64_t x = 0;
    for (uint64_t s = 1; s <= 5000; ++s) {
      x = chase_next(x, nodes);
      if (s % 997 == 0 || s == 5000) {
        ASSERT_EQ(chase_advance(0, s, nodes), x) << nodes << " " << s;
      }
    }
  }
  // Full period: the chain visits every node once before it returns to 0.
  const uint64_t nodes = 1 << 12;
  std::vector<bool> seen(nodes);
  uint64_t x = 0;
  for (uint64_t s = 0; s < nodes; ++s) {
    ASSERT_FALSE(seen[x]);
    seen[x] = true;
    x = chase_next(x, nodes);
  }
  EXPECT_EQ(x, 0u);
}

TEST(Chase, DeviceChaseEndsWhereTheClosedFormSays) {
  GPUVS_REQUIRE_GPU();
  const uint64_t nodes = 1 << 14;
  DeviceBuffer buffer(nodes * kChaseStride);
  Stream stream;
  init_chase(buffer.get(), nodes, stream.get());
  ChaseTimed timed(stream.get(), buffer.get(), nodes, false);
  EXPECT_GT(timed.run(1000), 0);
  EXPECT_GT(timed.run(12345), 0);
  const Validation v = timed.check();
  EXPECT_TRUE(v.passed) << v.detail;
  EXPECT_NE(v.detail.find("13345"), std::string::npos) << v.detail;
  // A broken link sends the chase somewhere else, and the check says so.
  const uint64_t where = chase_advance(0, 13345, nodes);
  const uint64_t elsewhere =
      reinterpret_cast<uint64_t>(buffer.get()) + chase_next(chase_next(where, nodes), nodes) * 128;
  GPUVS_CUDA_CHECK(cudaMemcpy(static_cast<char*>(buffer.get()) + where * kChaseStride, &elsewhere,
                              8, cudaMemcpyHostToDevice));
  timed.run(1);
  EXPECT_FALSE(timed.check().passed);
}

TEST(Cache, QuickRunIsValid) {
  GPUVS_REQUIRE_GPU();
  const SystemInfo system = probe_system();
  BenchContext ctx = quick_context(system);
  const std::vector<Result> results = bench_entry("memory.cache").run(ctx);
  expect_ids_in_table(results);
  ASSERT_EQ(results.size(), 2u);  // the sweep is for full runs only
  EXPECT_EQ(results[0].id, "memory.l2.read");
  EXPECT_EQ(results[1].id, "memory.smem.read");
  expect_all_ok(results);
  EXPECT_GT(results[0].value, 1e11);
  EXPECT_GT(results[1].value, 1e11);
  if (results[1].peak) {
    EXPECT_LT(results[1].value, 1.05 * results[1].peak->value);
  }
  EXPECT_EQ(smem_expected_block_sum(8), 2 * smem_expected_block_sum(4));
}

TEST(Latency, QuickSweepRisesFromL1ToHbm) {
  GPUVS_REQUIRE_GPU();
  const SystemInfo system = probe_system();
  BenchContext ctx = quick_context(system);
  const std::vector<Result> results = bench_entry("memory.latency").run(ctx);
  expect_ids_in_table(results);
  ASSERT_GE(results.size(), 6u);
  expect_all_ok(results);
  for (const Result& r : results) {
    EXPECT_EQ(r.id, "memory.latency");
    EXPECT_EQ(r.unit, "s");
  }
  EXPECT_EQ(param_number(results.front(), "bytes"), 4096);
  const double l1 = results.front().value, far = results.back().value;
  EXPECT_GT(l1, 1e-9);  // no load takes under a nanosecond
  EXPECT_LT(l1, 1e-7);  // a 4 KiB working set lives in L1
  EXPECT_GT(far, 3 * l1) << "HBM must be much slower than L1";
}

TEST(Capacity, QuickRunIsConsistent) {
  GPUVS_REQUIRE_GPU();
  const SystemInfo system = probe_system();
  BenchContext ctx = quick_context(system);
  const std::vector<Result> results = bench_entry("memory.capacity").run(ctx);
  expect_ids_in_table(results);
  ASSERT_EQ(results.size(), 2u);
  expect_all_ok(results);
  const double total = static_cast<double>(system.gpus[0].memory_total_bytes);
  EXPECT_EQ(results[0].unit, "B");
  EXPECT_GT(results[0].value, 0.5 * total);
  EXPECT_LE(results[0].value, total);
  EXPECT_LE(results[0].value, results[1].value + 64.0 * (1 << 20));
  EXPECT_LE(results[1].value, total);
}

TEST(HostLink, QuickRunIsValidWithAVerdict) {
  GPUVS_REQUIRE_GPU();
  const SystemInfo system = probe_system();
  BenchContext ctx = quick_context(system);
  const std::vector<Result> results = bench_entry("host.link").run(ctx);
  expect_ids_in_table(results);
  expect_all_ok(results);
  const auto h2d = std::find_if(results.begin(), results.end(), [](const Result& r) {
    return r.id == "host.h2d.pinned" && param_number(r, "bytes") == 256.0 * (1 << 20);
  });
  ASSERT_NE(h2d, results.end());
  EXPECT_GT(h2d->value, 1e9);  // any host link moves more than 1 GB/s
  for (const char* id :
       {"host.d2h.pinned", "host.bidirectional.pinned", "host.h2d.pageable", "host.d2h.pageable",
        "host.bidirectional.pageable", "host.zerocopy.read", "host.zerocopy.write",
        "host.zerocopy.bidirectional", "host.zerocopy.reread", "host.zerocopy.sparse"})
    EXPECT_TRUE(std::any_of(results.begin(), results.end(), [&](const Result& r) {
      return r.id == id;
    })) << id;
  const Result& sparse = results.back();
  ASSERT_EQ(sparse.id, "host.zerocopy.sparse");
  const std::string verdict = std::get<std::string>(sparse.parameters.at("verdict"));
  EXPECT_EQ(verdict.find("no verdict"), std::string::npos) << verdict;
  EXPECT_NE(verdict.find("GB/s"), std::string::npos) << verdict;
}

TEST(Peer, OneGpuIsNotApplicable) {
  GPUVS_REQUIRE_GPU();
  const SystemInfo system = probe_system();
  BenchContext ctx = quick_context(system, {0});
  const std::vector<Result> results = bench_entry("peer.link").run(ctx);
  expect_ids_in_table(results);
  ASSERT_EQ(results.size(), 1u);
  EXPECT_EQ(results[0].id, "peer.link");
  EXPECT_EQ(results[0].status, Status::kUnsupported);
  EXPECT_NE(results[0].status_reason.find("two or more"), std::string::npos);
}

TEST(Peer, TwoGpusGiveEveryMatrix) {
  GPUVS_REQUIRE_GPU();
  int count = 0;
  GPUVS_CUDA_CHECK(cudaGetDeviceCount(&count));
  if (count < 2) GTEST_SKIP() << "one GPU: the pair needs two";
  const SystemInfo system = probe_system();
  BenchContext ctx = quick_context(system, {0, 1});
  const std::vector<Result> results = bench_entry("peer.link").run(ctx);
  expect_ids_in_table(results);
  ASSERT_EQ(results.size(), 8u);  // 2 ordered pairs x 3 + 1 unordered pair x 2
  for (const Result& r : results) {
    SCOPED_TRACE(r.id);
    ASSERT_EQ(r.devices.size(), 2u);
    EXPECT_NE(r.devices[0], r.devices[1]);
    EXPECT_TRUE(r.parameters.count("path"));
    if (r.status == Status::kUnsupported) continue;  // no P2P: said so, not failed
    EXPECT_EQ(r.status, Status::kOk) << r.status_reason;
    EXPECT_GT(r.value, 0);
    if (r.unit == "B/s") {
      EXPECT_GT(r.value, 1e9);
    }
    if (r.peak && r.unit == "B/s") {
      EXPECT_LT(r.value, 1.05 * r.peak->value);
    }
  }
}

TEST(Launch, QuickRunIsValidAndGraphsAreMeasured) {
  GPUVS_REQUIRE_GPU();
  const SystemInfo system = probe_system();
  BenchContext ctx = quick_context(system);
  const std::vector<Result> results = bench_entry("launch.overhead").run(ctx);
  expect_ids_in_table(results);
  ASSERT_EQ(results.size(), 5u);
  expect_all_ok(results);
  EXPECT_EQ(results[0].id, "launch.empty.latency");
  EXPECT_LT(results[0].value, 1e-3);  // a launch and a wait well under a millisecond
  EXPECT_EQ(results[1].unit, "launch/s");
  EXPECT_LT(results[2].value, results[0].value) << "a graph node costs less than a sync launch";
  EXPECT_GT(param_number(results[4], "speedup_over_stream"), 0);
}

TEST(DeviceResources, PinnedMappedPeerAndGraph) {
  GPUVS_REQUIRE_GPU();
  PinnedHostBuffer mapped(1 << 20, true);
  EXPECT_NE(mapped.device_pointer(), nullptr);
  PinnedHostBuffer plain(1 << 20, false);
  EXPECT_THROW(plain.device_pointer(), Error);
  EXPECT_FALSE(DeviceBuffer::try_allocate(size_t{1} << 52).has_value());
  EXPECT_TRUE(DeviceBuffer::try_allocate(1 << 20).has_value());

  Stream stream;
  DeviceBuffer counter(8);
  GPUVS_CUDA_CHECK(cudaMemset(counter.get(), 0, 8));
  const GraphExec graph(stream.get(), [&](cudaStream_t s) {
    for (int k = 0; k < 5; ++k)
      launch_empty(counter.as<unsigned long long>(), s);
  });
  EXPECT_EQ(graph.nodes(), 5u);
  graph.launch(stream.get());
  graph.launch(stream.get());
  stream.synchronize();
  unsigned long long ran = 0;
  GPUVS_CUDA_CHECK(cudaMemcpy(&ran, counter.get(), 8, cudaMemcpyDeviceToHost));
  EXPECT_EQ(ran, 10u);

  int count = 0;
  GPUVS_CUDA_CHECK(cudaGetDeviceCount(&count));
  if (count >= 2 && can_access_peer(0, 1)) {
    const PeerAccessScope access(0, 1);
    const PeerAccessScope again(0, 1);  // already enabled: fine, and left as found
  }
}

}  // namespace
}  // namespace gpuvs
