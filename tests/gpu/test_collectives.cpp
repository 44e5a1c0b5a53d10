// NCCL collectives on every GPU of this machine (2 or more; skipped otherwise):
// every op measured and checked exactly; the check catches wrong data; a rank that
// is killed makes the other exit with an error well within the timeout.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>
#include <thread>

#include "bench/collectives/nccl.h"
#include "bench/collectives/nccl_kernels.h"
#include "core/run_file.h"
#include "gpu/check.h"
#include "gpu/device.h"
#include "gpu/probe.h"
#include "gpu_test_util.h"

namespace gpuvs {
namespace {

#define GPUVS_REQUIRE_TWO_GPUS()                                                                \
  do {                                                                                          \
    GPUVS_REQUIRE_GPU();                                                                        \
    int gpuvs_n_ = 0;                                                                           \
    cudaGetDeviceCount(&gpuvs_n_);                                                              \
    if (gpuvs_n_ < 2) GTEST_SKIP() << "collectives need 2 GPUs; this machine has " << gpuvs_n_; \
  } while (0)

TEST(Collectives, ShapesFollowNcclTests) {
  const auto ar = op_shape("all_reduce", 1024, 4);
  ASSERT_TRUE(ar);
  EXPECT_EQ(ar->recv_count, 256u);
  EXPECT_DOUBLE_EQ(ar->busbw_factor, 1.5);          // 2 (n-1) / n
  const auto ag = op_shape("all_gather", 1000, 4);  // 250 floats: 62 per rank
  ASSERT_TRUE(ag);
  EXPECT_EQ(ag->send_count, 62u);
  EXPECT_EQ(ag->recv_count, 248u);
  EXPECT_EQ(ag->bytes, 992);
  EXPECT_DOUBLE_EQ(ag->busbw_factor, 0.75);
  const auto rs = op_shape("reduce_scatter", 1024, 2);
  ASSERT_TRUE(rs);
  EXPECT_EQ(rs->send_count, 256u);
  EXPECT_EQ(rs->recv_count, 128u);
  EXPECT_FALSE(op_shape("alltoall", 8, 4));  // less than one float per rank
  EXPECT_DOUBLE_EQ(op_shape("sendrecv", 8, 2)->busbw_factor, 1.0);
}

TEST(Collectives, CheckCountsEveryWrongElement) {
  GPUVS_REQUIRE_GPU();
  DeviceScope scope(0);
  Stream stream;
  constexpr size_t n = 1 << 20;
  DeviceBuffer buf(n * sizeof(float)), counter(sizeof(unsigned long long));
  fill_pattern(buf.as<float>(), n, 3, stream.get());
  auto count = [&](Expectation e) {
    GPUVS_CUDA_CHECK(cudaMemsetAsync(counter.get(), 0, 8, stream.get()));
    count_mismatches(buf.as<float>(), n, e, counter.as<unsigned long long>(), stream.get());
    unsigned long long c = 0;
    GPUVS_CUDA_CHECK(cudaMemcpyAsync(&c, counter.get(), 8, cudaMemcpyDeviceToHost, stream.get()));
    stream.synchronize();
    return c;
  };
  Expectation right{ExpectKind::kFromRank, 4, 0, 3, 0, 1};
  EXPECT_EQ(count(right), 0u);
  Expectation wrong_rank = right;
  wrong_rank.source = 2;  // another rank's data: most elements differ
  EXPECT_GT(count(wrong_rank), n / 2);
  // One corrupted element is found.
  const float bad = 1000;
  GPUVS_CUDA_CHECK(cudaMemcpy(buf.as<float>() + 12345, &bad, sizeof bad, cudaMemcpyHostToDevice));
  EXPECT_EQ(count(right), 1u);
  // Stale NaN-poisoned data never passes.
  poison(buf.as<float>(), n, stream.get());
  EXPECT_EQ(count(right), n);
}

TEST(Collectives, EveryOpIsMeasuredAndExact) {
  GPUVS_REQUIRE_TWO_GPUS();
  const SystemInfo system = probe_system();
  BenchContext ctx{system, 0,       quick_options(), true,    steady_wall_clock(),
                   {0, 1}, nullptr, nullptr,         nullptr, {}};
  auto group = make_group(ctx, 30);
  CollectiveSweep sweep = base_sweep(ctx, *group);
  sweep.options.time_cap_s = 0.05;
  sweep.options.min_samples = 3;
  sweep.graph = comm::GraphMode::kAuto;
  const std::vector<int64_t> sizes = {8, 4096 + 4, int64_t{8} << 20};
  for (std::string_view op : comm::collective_ops()) {
    SCOPED_TRACE(std::string(op));
    std::vector<Result> out;
    measure_op(sweep, std::string(op), sizes, out);
    ASSERT_FALSE(out.empty());
    bool saw_graph = false;
    for (const Result& r : out) {
      EXPECT_EQ(r.status, Status::kOk) << r.id << ": " << r.status_reason;
      EXPECT_NE(r.validation.find(" 0 of "), std::string::npos) << r.validation;
      EXPECT_GT(r.value, 0);
      saw_graph = saw_graph || std::get<bool>(r.parameters.at("graph"));
    }
    EXPECT_TRUE(saw_graph);
  }
}

// Two gpuvs processes meet through a rendezvous file; rank 1 is killed; rank 0 must
// exit 1 long before its 30 s timeout, naming rank 1, with its run file kept.
TEST(Collectives, KilledRankMakesTheOtherExitWithAnError) {
  GPUVS_REQUIRE_TWO_GPUS();
  const auto dir =
      std::filesystem::temp_directory_path() / ("gpuvs_kill_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const std::string rdv = (dir / "rdv").string();
  auto spawn = [&](int rank) {
    const pid_t pid = ::fork();
    if (pid == 0) {
      const std::string out = (dir / ("out" + std::to_string(rank))).string();
      const std::string err = (dir / ("err" + std::to_string(rank))).string();
      if (!std::freopen(err.c_str(), "w", stderr)) ::_exit(120);
      if (!std::freopen((out + ".txt").c_str(), "w", stdout)) ::_exit(121);
      const std::string r = std::to_string(rank);
      ::execl(GPUVS_BIN, GPUVS_BIN, "--out", out.c_str(), "bench", "collectives.nccl", "--sizes",
              "8:4G:2", "--timeout", "30", "--rank", r.c_str(), "--ranks", "2", "--rendezvous",
              ("file:" + rdv).c_str(), static_cast<char*>(nullptr));
      ::_exit(127);
    }
    return pid;
  };
  const pid_t p0 = spawn(0);
  const pid_t p1 = spawn(1);
  // Let them meet and measure a while, then kill rank 1.
  std::this_thread::sleep_for(std::chrono::seconds(12));
  ASSERT_EQ(::kill(p1, SIGKILL), 0);
  const auto killed = std::chrono::steady_clock::now();
  int status = 0;
  for (;;) {
    const pid_t w = ::waitpid(p0, &status, WNOHANG);
    if (w == p0) break;
    if (std::chrono::steady_clock::now() - killed > std::chrono::seconds(60)) {
      ::kill(p0, SIGKILL);
      FAIL() << "rank 0 still running 60 s after rank 1 was killed";
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - killed).count();
  ::waitpid(p1, nullptr, 0);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 1);
  EXPECT_LT(seconds, 30.0) << "rank 0 should not need its whole timeout";
  // stderr and stdout of rank 0 (read one by one: streaming an empty file's buffer
  // would fail the stream and drop the other).
  std::string text;
  for (const char* name : {"err0", "out0.txt"}) {
    std::ifstream in(dir / name);
    text.append(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  EXPECT_NE(text.find("rank 1"), std::string::npos) << text;
  // The run file exists and carries the error and the results measured before.
  bool found = false;
  for (const auto& e : std::filesystem::directory_iterator(dir / "out0")) {
    const RunFile run = load_run_file(e.path());
    ASSERT_FALSE(run.errors.empty());
    EXPECT_NE(run.errors.back().message.find("rank 1"), std::string::npos);
    ASSERT_TRUE(run.comm.has_value());
    EXPECT_EQ(run.comm->world_size, 2);
    found = true;
  }
  EXPECT_TRUE(found);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace gpuvs
