// nccl-tests beside gpuvs: the parser over fixtures of each output layout (2021, 2024,
// 2025 with the version line, a run that failed midway), odd input, the argv, and
// the runner against fake *_perf scripts (success, failure, timeout, missing).
#include <gtest/gtest.h>

#include <signal.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "comm/nccl_tests.h"
#include "core/error.h"

namespace gpuvs::comm {
namespace {

namespace fs = std::filesystem;

const fs::path kData = fs::path(GPUVS_TEST_DATA_DIR) / "nccl_tests";
const fs::path kAllReduce = kData / "all_reduce_2gpu_h200_v2.17.6.txt";
const fs::path kBroadcast = kData / "broadcast_4gpu_allroots_nocheck_2024.txt";
const fs::path kFailed = kData / "all_reduce_8gpu_failed_v2.19.6.txt";
const fs::path kSendRecv = kData / "sendrecv_2gpu_a100_2021.txt";

std::string read_text(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

NcclTestsOutput parse_file(const fs::path& p) {
  const std::string text = read_text(p);
  EXPECT_FALSE(text.empty()) << p;
  return parse_nccl_tests_output(text);
}

// ---------------------------------------------------------------- fixtures

TEST(NcclTestsParse, AllReduceTwoGpusHeaderAndDevices) {
  const NcclTestsOutput out = parse_file(kAllReduce);
  EXPECT_EQ(out.version, "2.17.6");
  EXPECT_EQ(out.nccl_version, "2.27.7");  // nccl-library=22707
  EXPECT_EQ(out.program, "all_reduce_perf");
  EXPECT_EQ(out.config.threads, 1);
  EXPECT_EQ(out.config.gpus_per_thread, 2);
  EXPECT_EQ(out.config.min_bytes, 8);
  EXPECT_EQ(out.config.max_bytes, int64_t(1) << 31);
  EXPECT_EQ(out.config.step, 2);
  EXPECT_TRUE(out.config.step_is_factor);
  EXPECT_EQ(out.config.warmup, 5);
  EXPECT_EQ(out.config.iters, 20);
  EXPECT_EQ(out.config.agg_iters, 1);
  EXPECT_EQ(out.config.validation, 1);
  EXPECT_EQ(out.config.graph, 0);
  ASSERT_EQ(out.devices.size(), 2u);
  EXPECT_EQ(out.devices[1].rank, 1);
  EXPECT_EQ(out.devices[1].group, 0);
  EXPECT_EQ(out.devices[1].pid, 412877);
  EXPECT_EQ(out.devices[1].host, "hgx-h200-03");
  EXPECT_EQ(out.devices[1].device, 1);
  EXPECT_EQ(out.devices[1].bus_id, "0000:3b:00");
  EXPECT_EQ(out.devices[1].name, "NVIDIA H200");
  EXPECT_FALSE(out.cpu_time);
  EXPECT_TRUE(out.errors.empty());
  EXPECT_TRUE(out.warnings.empty());
}

TEST(NcclTestsParse, AllReduceTwoGpusRowsAndTrailer) {
  const NcclTestsOutput out = parse_file(kAllReduce);
  ASSERT_EQ(out.rows.size(), 29u);  // 8 B .. 2 GiB, factor 2
  for (size_t i = 0; i < out.rows.size(); ++i) {
    EXPECT_EQ(out.rows[i].size_bytes, int64_t(8) << i);
    EXPECT_EQ(out.rows[i].count, out.rows[i].size_bytes / 4);
    EXPECT_EQ(out.rows[i].oop_wrong, 0);
    EXPECT_EQ(out.rows[i].ip_wrong, 0);
  }
  const NcclTestsRow& small = out.rows[0];
  EXPECT_EQ(small.type, "float");
  EXPECT_EQ(small.redop, "sum");
  EXPECT_EQ(small.root, -1);
  EXPECT_DOUBLE_EQ(*small.oop_time_us, 8.86);
  EXPECT_DOUBLE_EQ(*small.oop_algbw_gbs, 0.0);
  EXPECT_DOUBLE_EQ(*small.oop_busbw_gbs, 0.0);
  EXPECT_DOUBLE_EQ(*small.ip_time_us, 9.17);
  EXPECT_FALSE(small.oop_max_error.has_value());

  const NcclTestsRow& big = out.rows.back();
  EXPECT_EQ(big.size_bytes, 2147483648);
  EXPECT_EQ(big.count, 536870912);
  EXPECT_DOUBLE_EQ(*big.oop_time_us, 5857.26);
  EXPECT_DOUBLE_EQ(*big.oop_algbw_gbs, 366.64);
  EXPECT_DOUBLE_EQ(*big.oop_busbw_gbs, 366.64);
  EXPECT_DOUBLE_EQ(*big.ip_time_us, 5947.02);
  EXPECT_DOUBLE_EQ(*big.ip_algbw_gbs, 361.10);
  EXPECT_DOUBLE_EQ(*big.ip_busbw_gbs, 361.10);

  EXPECT_EQ(out.out_of_bounds, 0);
  ASSERT_TRUE(out.avg_busbw_gbs.has_value());
  EXPECT_DOUBLE_EQ(*out.avg_busbw_gbs, 118.467);
  // The trailer is the mean of every busbw printed (out-of-place and in-place).
  double sum = 0;
  for (const auto& r : out.rows)
    sum += *r.oop_busbw_gbs + *r.ip_busbw_gbs;
  EXPECT_NEAR(sum / (2.0 * out.rows.size()), *out.avg_busbw_gbs, 0.01);
}

TEST(NcclTestsParse, BroadcastEveryRootNoCheck2024) {
  const NcclTestsOutput out = parse_file(kBroadcast);
  EXPECT_EQ(out.version, "");             // no version line before late 2025
  EXPECT_EQ(out.nccl_version, "2.21.5");  // from NCCL_DEBUG=INFO's banner
  EXPECT_EQ(out.program, "");
  EXPECT_EQ(out.config.validation, 0);
  EXPECT_EQ(out.config.step, 16);
  ASSERT_EQ(out.devices.size(), 4u);
  EXPECT_EQ(out.devices[2].bus_id, "0x4c");
  EXPECT_EQ(out.devices[2].name, "NVIDIA H200");
  ASSERT_EQ(out.rows.size(), 24u);  // 6 sizes x roots 0..3
  for (size_t i = 0; i < out.rows.size(); ++i) {
    const NcclTestsRow& r = out.rows[i];
    EXPECT_EQ(r.root, static_cast<int>(i / 6)) << i;
    EXPECT_EQ(r.redop, "none");
    EXPECT_FALSE(r.oop_wrong.has_value()) << "N/A is not 0";
    EXPECT_FALSE(r.ip_wrong.has_value());
    EXPECT_TRUE(r.oop_time_us && r.oop_algbw_gbs && r.oop_busbw_gbs && r.ip_time_us);
  }
  const NcclTestsRow& root1 = out.rows[6];
  EXPECT_EQ(root1.size_bytes, 1024);
  EXPECT_EQ(root1.count, 256);
  EXPECT_DOUBLE_EQ(*root1.oop_time_us, 7.91);
  EXPECT_DOUBLE_EQ(*root1.ip_time_us, 8.08);
  const NcclTestsRow& root2_64m = out.rows[16];
  EXPECT_EQ(root2_64m.size_bytes, 67108864);
  EXPECT_EQ(root2_64m.root, 2);
  EXPECT_DOUBLE_EQ(*root2_64m.oop_time_us, 192.6);  // "%7.1f" above 100 us
  EXPECT_DOUBLE_EQ(*root2_64m.oop_busbw_gbs, 348.50);
  EXPECT_DOUBLE_EQ(*out.avg_busbw_gbs, 157.907);
  EXPECT_TRUE(out.errors.empty()) << out.errors.front();  // NCCL INFO lines are not errors
}

TEST(NcclTestsParse, RunThatFailedMidway) {
  const NcclTestsOutput out = parse_file(kFailed);
  EXPECT_EQ(out.version, "2.19.6");
  EXPECT_EQ(out.nccl_version, "2.29.3");
  EXPECT_EQ(out.config.graph, 10);
  EXPECT_EQ(out.devices.size(), 8u);
  ASSERT_EQ(out.rows.size(), 10u);
  EXPECT_EQ(out.rows[8].ip_wrong, 0);
  // The error was printed on the row's line, right after its out-of-place figures.
  const NcclTestsRow& last = out.rows.back();
  EXPECT_EQ(last.size_bytes, 536870912);
  EXPECT_DOUBLE_EQ(*last.oop_time_us, 1981.49);
  EXPECT_DOUBLE_EQ(*last.oop_algbw_gbs, 270.94);
  EXPECT_DOUBLE_EQ(*last.oop_busbw_gbs, 474.15);
  EXPECT_FALSE(last.oop_wrong.has_value());  // glued to the host name: unknown
  EXPECT_FALSE(last.ip_time_us || last.ip_algbw_gbs || last.ip_busbw_gbs || last.ip_wrong);
  EXPECT_FALSE(out.avg_busbw_gbs.has_value());
  EXPECT_FALSE(out.out_of_bounds.has_value());
  ASSERT_EQ(out.errors.size(), 7u);
  EXPECT_EQ(out.errors[0],
            "hgx-h200-12: Test NCCL failure common.cu:1153 'unhandled cuda error (run with "
            "NCCL_DEBUG=INFO for details) / Cuda failure 700 'an illegal memory access was "
            "encountered''");
  EXPECT_EQ(out.errors[1], ".. hgx-h200-12 pid 733105: Test failure common.cu:876");
  ASSERT_EQ(out.warnings.size(), 1u);
  EXPECT_NE(out.warnings[0].find("NCCL WARN Cuda failure 700"), std::string::npos);
  EXPECT_EQ(nccl_tests_error_summary(out), out.errors[0]);
}

TEST(NcclTestsParse, SendRecv2021LayoutWithErrorColumn) {
  const NcclTestsOutput out = parse_file(kSendRecv);
  EXPECT_EQ(out.version, "");
  EXPECT_EQ(out.config.validation, 1);
  EXPECT_FALSE(out.config.agg_iters.has_value());
  ASSERT_EQ(out.devices.size(), 2u);
  EXPECT_EQ(out.devices[0].group, 0);
  EXPECT_EQ(out.devices[0].pid, 5121);
  EXPECT_EQ(out.devices[0].host, "dgx-a100-02");
  EXPECT_EQ(out.devices[0].bus_id, "0x07");
  EXPECT_EQ(out.devices[0].name, "A100-SXM4-80GB");
  ASSERT_EQ(out.rows.size(), 9u);
  const NcclTestsRow& r = out.rows.back();
  EXPECT_EQ(r.size_bytes, 134217728);
  EXPECT_EQ(r.type, "float");
  EXPECT_EQ(r.redop, "");  // no such column for sendrecv then
  EXPECT_EQ(r.root, -1);
  EXPECT_DOUBLE_EQ(*r.oop_time_us, 586.5);
  EXPECT_DOUBLE_EQ(*r.oop_busbw_gbs, 228.85);
  EXPECT_DOUBLE_EQ(*r.ip_algbw_gbs, 227.44);
  EXPECT_FALSE(r.oop_wrong.has_value());
  EXPECT_EQ(r.oop_max_error, 0.0);
  EXPECT_EQ(r.ip_max_error, 0.0);
  EXPECT_DOUBLE_EQ(*out.avg_busbw_gbs, 60.2712);
  EXPECT_TRUE(out.errors.empty());
}

// ---------------------------------------------------------------- layouts

TEST(NcclTestsParse, PerIterationCpuTimeAndTimestampColumns) {
  const std::string text =
      "#       size         count      type   redop    root  cputime   algbw   busbw  #wrong "
      "  i_min    i_max    i_p99    i_cv%  cputime   algbw   busbw  #wrong    i_min    i_max  "
      "  i_p99    i_cv%            timestamp\n"
      "     1048576        262144  bfloat16     avg      -1    13.10   80.04   80.04       0   "
      "12.90    14.20    14.10     2.31    13.40   78.25   78.25       0    13.00    14.90    "
      "14.80     3.02  2026-07-09 10:11:12\n";
  const NcclTestsOutput out = parse_nccl_tests_output(text);
  EXPECT_TRUE(out.cpu_time);
  ASSERT_EQ(out.rows.size(), 1u);
  const NcclTestsRow& r = out.rows[0];
  EXPECT_EQ(r.type, "bfloat16");
  EXPECT_EQ(r.redop, "avg");
  EXPECT_DOUBLE_EQ(*r.oop_time_us, 13.10);
  EXPECT_EQ(r.oop_wrong, 0);
  EXPECT_DOUBLE_EQ(*r.ip_time_us, 13.40);  // not i_min of the out-of-place side
  EXPECT_DOUBLE_EQ(*r.ip_busbw_gbs, 78.25);
  EXPECT_EQ(r.ip_wrong, 0);
}

TEST(NcclTestsParse, OldAllReduceLayoutWithoutRootAndOldBroadcastWithRootOnly) {
  const std::string all_reduce =
      "#       size         count      type   redop     time   algbw   busbw  error     time   "
      "algbw   busbw  error\n"
      "        4096          1024     float     sum    12.01    0.34    0.60  2e-07    11.95    "
      "0.34    0.60  2e-07\n";
  NcclTestsOutput out = parse_nccl_tests_output(all_reduce);
  ASSERT_EQ(out.rows.size(), 1u);
  EXPECT_EQ(out.rows[0].redop, "sum");
  EXPECT_EQ(out.rows[0].root, -1);
  EXPECT_DOUBLE_EQ(*out.rows[0].oop_max_error, 2e-07);
  EXPECT_DOUBLE_EQ(*out.rows[0].ip_busbw_gbs, 0.60);

  const std::string broadcast =
      "#       size         count      type    root     time   algbw   busbw  error     time   "
      "algbw   busbw  error\n"
      "        4096          1024     float       3    10.50    0.39    0.39  0e+00    10.41    "
      "0.39    0.39  0e+00\n";
  out = parse_nccl_tests_output(broadcast);
  ASSERT_EQ(out.rows.size(), 1u);
  EXPECT_EQ(out.rows[0].redop, "");
  EXPECT_EQ(out.rows[0].root, 3);
}

TEST(NcclTestsParse, RowsWithoutAHeaderUseTheCurrentLayout) {
  const NcclTestsOutput out = parse_nccl_tests_output(
      "     8388608       2097152     float     sum      -1    35.94  233.42  233.42       0    "
      "36.15  232.03  232.03       0\n");
  ASSERT_EQ(out.rows.size(), 1u);
  EXPECT_DOUBLE_EQ(*out.rows[0].ip_time_us, 36.15);
}

TEST(NcclTestsParse, ExponentFormsAndLargeWrongCounts) {
  const NcclTestsOutput out = parse_nccl_tests_output(
      "  4294967296    1073741824     float     sum      -1  1.2e+04  357.91  626.34  "
      "1.2e+06  1.2e+04  357.50  625.62       0\n");
  ASSERT_EQ(out.rows.size(), 1u);
  EXPECT_DOUBLE_EQ(*out.rows[0].oop_time_us, 12000.0);
  EXPECT_EQ(out.rows[0].oop_wrong, 1200000);
}

// ---------------------------------------------------------------- trailer and errors

TEST(NcclTestsParse, TrailerVerdictsAndMemoryNote) {
  const NcclTestsOutput out = parse_nccl_tests_output(
      "#\n# Reducing maxBytes to 46170898432 due to memory limitation\n"
      "# Out of bounds values : 3 FAILED\n"
      "# Avg bus bandwidth    : 12.5 FAILED\n#\n");
  EXPECT_EQ(out.reduced_max_bytes, 46170898432);
  EXPECT_EQ(out.out_of_bounds, 3);
  EXPECT_DOUBLE_EQ(*out.avg_busbw_gbs, 12.5);
  ASSERT_EQ(out.errors.size(), 2u);
  EXPECT_EQ(out.errors[0], "Out of bounds values : 3 FAILED");
}

TEST(NcclTestsParse, BareLastErrorAfterTrailerOf2022To2025Versions) {
  NcclTestsOutput out = parse_nccl_tests_output(
      "# Out of bounds values : 0 OK\n# Avg bus bandwidth    : 1.5 \n#\n"
      "NET/IB : Got completion with error 12\n");
  ASSERT_EQ(out.errors.size(), 1u);
  EXPECT_EQ(out.errors[0], "NET/IB : Got completion with error 12");
  // The usual case: that line is empty.
  out = parse_nccl_tests_output("# Avg bus bandwidth    : 1.5 \n#\n\nall done\n");
  EXPECT_TRUE(out.errors.empty());
  // Newer versions say "# error: ...".
  out =
      parse_nccl_tests_output("# Collective test concluded: x\n# error: unhandled system error\n");
  ASSERT_EQ(out.errors.size(), 1u);
  EXPECT_EQ(out.errors[0], "error: unhandled system error");
}

TEST(NcclTestsParse, UsageAndDeviceCountComplaints) {
  NcclTestsOutput out = parse_nccl_tests_output(
      "invalid option 'q'\nUSAGE: all_reduce_perf \n\t[-t,--nthreads <num threads>] \n\t"
      "[-T,--timeout <time in seconds>] \n\t[-h,--help]\n");
  EXPECT_TRUE(out.rows.empty());
  ASSERT_EQ(out.errors.size(), 1u);
  EXPECT_EQ(out.errors[0], "invalid option 'q'");

  out = parse_nccl_tests_output(
      "# Using devices\nInvalid number of GPUs: 4 requested but only 2 were found.\n"
      "Please check the number of processes and GPUs per process.\n"
      "Option -G (CUDA graph) not supported before NCCL 2.9 + CUDA 11.3. Ignoring\n");
  ASSERT_EQ(out.errors.size(), 1u);
  EXPECT_EQ(nccl_tests_error_summary(out),
            "Invalid number of GPUs: 4 requested but only 2 were found.");
  ASSERT_EQ(out.warnings.size(), 1u);
}

TEST(NcclTestsParse, ErrorGluedAfterNotAvailableAndTimeout) {
  const NcclTestsOutput out = parse_nccl_tests_output(
      "        1024           256     float    none       0     7.59    0.13    0.13    "
      "N/Anode7: Test timeout (30s) common.cu:524\n");
  ASSERT_EQ(out.rows.size(), 1u);
  EXPECT_DOUBLE_EQ(*out.rows[0].oop_busbw_gbs, 0.13);
  ASSERT_EQ(out.errors.size(), 1u);
  EXPECT_EQ(out.errors[0], "node7: Test timeout (30s) common.cu:524");
  EXPECT_EQ(nccl_tests_error_summary(out), out.errors[0]);
}

TEST(NcclTestsParse, SummaryPrefersTheCauseOverTheTrace) {
  NcclTestsOutput out;
  out.errors = {"h: Test CUDA failure common.cu:1 'out of memory'", ".. h pid 1: Test failure x:2"};
  EXPECT_EQ(nccl_tests_error_summary(out), out.errors[0]);
  out.errors = {".. h pid 1: Test failure x:2"};
  EXPECT_EQ(nccl_tests_error_summary(out), out.errors[0]);
  out.errors.clear();
  out.warnings = {"h:1:2 [0] init.cc:9 NCCL WARN x"};
  EXPECT_EQ(nccl_tests_error_summary(out), out.warnings[0]);
  EXPECT_EQ(nccl_tests_error_summary(NcclTestsOutput{}), "");
}

// ---------------------------------------------------------------- odd input

TEST(NcclTestsParse, EmptyAndGarbageGiveNothing) {
  for (const std::string& text : {std::string(),
                                  std::string("\n\n\r\n"),
                                  std::string("#"),
                                  std::string("# size count\n"),
                                  std::string("12 34 56\n"),
                                  std::string("8 2 float sum -1 abc def\n"),
                                  std::string("8 2 float sum\n"),
                                  std::string("-8 2 float sum -1 1.0 1.0 1.0 0\n"),
                                  std::string("8 2 9float sum -1 1.0 1.0 1.0 0\n"),
                                  std::string("8 2 float sum -7 1 1 1 0\n"),
                                  std::string("8 2 float sum -1 inf nan 1 0\n"),
                                  std::string("# Avg bus bandwidth\n"),
                                  std::string("# Out of bounds values : x\n"),
                                  std::string("#  Rank x\n"),
                                  std::string("#  Rank 0 Pid\n"),
                                  std::string(": Test failure\n"),
                                  std::string(" NCCL WARN \n"),
                                  std::string("[ NCCL INFO ]\n"),
                                  std::string("# nThread\n# nccl-tests version\n"),
                                  std::string("\0\0\0", 3)}) {
    const NcclTestsOutput out = parse_nccl_tests_output(text);
    EXPECT_TRUE(out.rows.empty()) << text;
    EXPECT_FALSE(out.avg_busbw_gbs.has_value()) << text;
    EXPECT_TRUE(out.devices.empty()) << text;
  }
}

TEST(NcclTestsParse, TruncatedOutputKeepsOnlyWholeRows) {
  const std::string text = read_text(kAllReduce);
  const NcclTestsOutput full = parse_nccl_tests_output(text);
  for (size_t cut = 0; cut <= text.size(); ++cut) {
    const NcclTestsOutput part = parse_nccl_tests_output(std::string_view(text).substr(0, cut));
    ASSERT_LE(part.rows.size(), full.rows.size()) << cut;
    for (size_t i = 0; i < part.rows.size(); ++i) {
      ASSERT_EQ(part.rows[i].size_bytes, full.rows[i].size_bytes) << cut;
      ASSERT_EQ(part.rows[i].oop_time_us, full.rows[i].oop_time_us) << cut;
      ASSERT_EQ(part.rows[i].ip_time_us, full.rows[i].ip_time_us) << cut;
      ASSERT_EQ(part.rows[i].ip_wrong, full.rows[i].ip_wrong) << cut;
    }
  }
}

TEST(NcclTestsParse, MutatedFixturesAndNoiseNeverThrow) {
  std::mt19937 rng(20260709);
  std::vector<std::string> corpus;
  for (const fs::path& p : {kAllReduce, kBroadcast, kFailed, kSendRecv})
    corpus.push_back(read_text(p));
  for (int i = 0; i < 300; ++i) {
    std::string text = corpus[i % corpus.size()];
    // flip, drop and duplicate bytes
    std::uniform_int_distribution<size_t> at(0, text.size() - 1);
    for (int k = 0; k < 20; ++k) {
      const size_t p = at(rng);
      switch (rng() % 3) {
        case 0:
          text[p] = static_cast<char>(rng());
          break;
        case 1:
          text.erase(p, 1 + rng() % 8);
          break;
        default:
          text.insert(p, text.substr(p, rng() % 16));
          break;
      }
      if (text.empty()) break;
      at = std::uniform_int_distribution<size_t>(0, text.size() - 1);
    }
    NcclTestsOutput out;
    ASSERT_NO_THROW(out = parse_nccl_tests_output(text));
    for (const auto& r : out.rows) {
      EXPECT_GE(r.size_bytes, 0);
      EXPECT_GE(r.count, 0);
      EXPECT_TRUE(r.oop_time_us || r.ip_time_us);
    }
  }
  // Pure noise makes no rows.
  for (int i = 0; i < 200; ++i) {
    std::string noise(1 + rng() % 4000, '\0');
    for (char& c : noise)
      c = static_cast<char>(rng());
    NcclTestsOutput out;
    ASSERT_NO_THROW(out = parse_nccl_tests_output(noise));
    EXPECT_TRUE(out.rows.empty());
  }
}

// ---------------------------------------------------------------- names and argv

TEST(NcclTestsNames, BinaryPerOp) {
  EXPECT_EQ(nccl_tests_binary("all_reduce"), "all_reduce_perf");
  EXPECT_EQ(nccl_tests_binary("all_gather"), "all_gather_perf");
  EXPECT_EQ(nccl_tests_binary("reduce_scatter"), "reduce_scatter_perf");
  EXPECT_EQ(nccl_tests_binary("broadcast"), "broadcast_perf");
  EXPECT_EQ(nccl_tests_binary("reduce"), "reduce_perf");
  EXPECT_EQ(nccl_tests_binary("alltoall"), "alltoall_perf");
  EXPECT_EQ(nccl_tests_binary("sendrecv"), "sendrecv_perf");
  EXPECT_EQ(nccl_tests_ops().size(), 7u);
  EXPECT_THROW(nccl_tests_binary("allreduce"), UsageError);
  EXPECT_THROW(nccl_tests_binary(""), UsageError);
  EXPECT_THROW(nccl_tests_binary("all_reduce_perf"), UsageError);
}

TEST(NcclTestsNames, VersionCodes) {
  EXPECT_EQ(nccl_version_from_code(22707), "2.27.7");
  EXPECT_EQ(nccl_version_from_code(21903), "2.19.3");
  EXPECT_EQ(nccl_version_from_code(2804), "2.8.4");
  EXPECT_EQ(nccl_version_from_code(0), "");
  EXPECT_EQ(nccl_version_from_code(-22707), "");
}

NcclTestsRun basic_run() {
  NcclTestsRun run;
  run.dir = "/opt/nccl-tests-nonexistent/build";
  run.op = "all_reduce";
  run.max_bytes = int64_t(1) << 31;
  run.gpus = 2;
  return run;
}

TEST(NcclTestsArgv, Defaults) {
  const std::vector<std::string> want = {"/opt/nccl-tests-nonexistent/build/all_reduce_perf",
                                         "-b",
                                         "8",
                                         "-e",
                                         "2147483648",
                                         "-f",
                                         "2",
                                         "-g",
                                         "2",
                                         "-n",
                                         "20",
                                         "-w",
                                         "5",
                                         "-c",
                                         "1"};
  EXPECT_EQ(nccl_tests_argv(basic_run()), want);
}

TEST(NcclTestsArgv, EveryOption) {
  NcclTestsRun run = basic_run();
  run.op = "reduce_scatter";
  run.suffix = "_mpi";
  run.launcher = {"mpirun", "-np", "8"};
  run.min_bytes = 1024;
  run.factor = 4;
  run.gpus = 1;
  run.iters = 50;
  run.warmup = 10;
  run.graph_launches = 10;
  run.check = false;
  run.datatype = "bfloat16";
  run.redop = "avg";
  run.extra_args = {"-z", "1"};
  const std::vector<std::string> want = {
      "mpirun", "-np",      "8",  "/opt/nccl-tests-nonexistent/build/reduce_scatter_perf_mpi",
      "-b",     "1024",     "-e", "2147483648",
      "-f",     "4",        "-g", "1",
      "-n",     "50",       "-w", "10",
      "-c",     "0",        "-G", "10",
      "-d",     "bfloat16", "-o", "avg",
      "-z",     "1"};
  EXPECT_EQ(nccl_tests_argv(run), want);

  run = basic_run();
  run.step_bytes = 1 << 20;
  run.factor = 1;  // ignored when stepping by bytes
  const auto argv = nccl_tests_argv(run);
  EXPECT_EQ(argv[5], "-i");
  EXPECT_EQ(argv[6], "1048576");
}

TEST(NcclTestsArgv, RejectsWhatNcclTestsCannotTake) {
  auto bad = [](auto edit) {
    NcclTestsRun run = basic_run();
    edit(run);
    EXPECT_THROW(nccl_tests_argv(run), UsageError);
  };
  bad([](NcclTestsRun& r) { r.max_bytes = 0; });
  bad([](NcclTestsRun& r) { r.min_bytes = r.max_bytes + 1; });
  bad([](NcclTestsRun& r) { r.min_bytes = -1; });
  bad([](NcclTestsRun& r) { r.factor = 1.5; });
  bad([](NcclTestsRun& r) { r.factor = 1; });
  bad([](NcclTestsRun& r) { r.factor = std::nan(""); });
  bad([](NcclTestsRun& r) { r.gpus = 0; });
  bad([](NcclTestsRun& r) { r.iters = 0; });
  bad([](NcclTestsRun& r) { r.warmup = -1; });
  bad([](NcclTestsRun& r) { r.graph_launches = -1; });
  bad([](NcclTestsRun& r) { r.op = "gather"; });
}

// ---------------------------------------------------------------- runner

class NcclTestsRunner : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl = (fs::temp_directory_path() / "gpuvs-nccltests-XXXXXX").string();
    ASSERT_NE(::mkdtemp(tmpl.data()), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }

  void write_script(const std::string& name, const std::string& body, bool executable = true) {
    const fs::path p = dir_ / name;
    std::ofstream(p) << "#!/bin/sh\n" << body;
    ::chmod(p.c_str(), executable ? 0755 : 0644);
  }

  NcclTestsRun run_for(const std::string& op = "all_reduce") const {
    NcclTestsRun run;
    run.dir = dir_;
    run.op = op;
    run.max_bytes = int64_t(1) << 31;
    run.gpus = 2;
    run.timeout_s = 30;
    return run;
  }

  std::string error_of(const NcclTestsRun& run) {
    try {
      run_nccl_tests(run);
    } catch (const Error& e) {
      return e.what();
    }
    return "(no error)";
  }

  fs::path dir_;
};

TEST_F(NcclTestsRunner, ParsesWhatTheBinaryPrintsAndPassesArgsAndEnvironment) {
  write_script("all_reduce_perf", "echo \"$@\" > '" + (dir_ / "args.txt").string() + "'\n" +
                                      "echo \"$GPUVS_NCCLTESTS_PROBE\" > '" +
                                      (dir_ / "env.txt").string() + "'\n" + "cat '" +
                                      kAllReduce.string() + "'\nexit 0\n");
  NcclTestsRun run = run_for();
  run.env["GPUVS_NCCLTESTS_PROBE"] = "seen";
  const NcclTestsOutput out = run_nccl_tests(run);
  EXPECT_EQ(out.rows.size(), 29u);
  EXPECT_EQ(out.version, "2.17.6");
  EXPECT_EQ(out.log, read_text(kAllReduce));
  EXPECT_EQ(read_text(dir_ / "args.txt"), "-b 8 -e 2147483648 -f 2 -g 2 -n 20 -w 5 -c 1\n");
  EXPECT_EQ(read_text(dir_ / "env.txt"), "seen\n");
}

TEST_F(NcclTestsRunner, FindsBinariesUnderBuild) {
  fs::create_directory(dir_ / "build");
  write_script("build/sendrecv_perf", "cat '" + kSendRecv.string() + "'\n");
  const NcclTestsRun run = run_for("sendrecv");
  EXPECT_EQ(nccl_tests_path(run), dir_ / "build" / "sendrecv_perf");
  EXPECT_EQ(run_nccl_tests(run).rows.size(), 9u);
}

TEST_F(NcclTestsRunner, NonZeroExitQuotesTheFailure) {
  write_script("all_reduce_perf", "cat '" + kFailed.string() + "'\nexit 3\n");
  const std::string msg = error_of(run_for());
  EXPECT_NE(msg.find("all_reduce_perf exited with status 3"), std::string::npos) << msg;
  EXPECT_NE(msg.find("Test NCCL failure common.cu:1153"), std::string::npos) << msg;
}

TEST_F(NcclTestsRunner, StderrIsCapturedToo) {
  write_script("all_reduce_perf",
               "echo 'Invalid number of GPUs: 8 requested but only 2 were found.' >&2\nexit 5\n");
  const std::string msg = error_of(run_for());
  EXPECT_NE(msg.find("status 5: Invalid number of GPUs: 8 requested"), std::string::npos) << msg;
}

TEST_F(NcclTestsRunner, ExitZeroWithoutRowsIsAnError) {
  write_script("all_reduce_perf", "echo \"invalid option 'q'\"\necho 'USAGE: all_reduce_perf'\n");
  const std::string msg = error_of(run_for());
  EXPECT_NE(msg.find("printed no results: invalid option 'q'"), std::string::npos) << msg;
}

TEST_F(NcclTestsRunner, KilledBySignal) {
  write_script("all_reduce_perf", "echo starting\nkill -SEGV $$\n");
  const std::string msg = error_of(run_for());
  EXPECT_NE(msg.find("killed by signal 11"), std::string::npos) << msg;
}

bool process_gone(pid_t pid) {
  if (::kill(pid, 0) != 0) return errno == ESRCH;
  // A zombie waiting for a reaper is gone too.
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  std::getline(stat, line);
  const size_t paren = line.rfind(')');
  return paren != std::string::npos && paren + 2 < line.size() && line[paren + 2] == 'Z';
}

TEST_F(NcclTestsRunner, TimeoutKillsTheWholeProcessGroup) {
  const fs::path pid_file = dir_ / "sleep.pid";
  write_script("all_reduce_perf", "echo '# nThread 1 nGpus 2'\nsleep 30 &\necho $! > '" +
                                      pid_file.string() + "'\nwait\n");
  NcclTestsRun run = run_for();
  run.timeout_s = 0.5;
  const auto start = std::chrono::steady_clock::now();
  const std::string msg = error_of(run);
  const double took =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_NE(msg.find("did not finish within 0.5 s"), std::string::npos) << msg;
  EXPECT_LT(took, 3.0);
  EXPECT_GE(took, 0.45);
  const std::string pid_text = read_text(pid_file);
  ASSERT_FALSE(pid_text.empty());
  const pid_t sleeper = static_cast<pid_t>(std::stol(pid_text));
  bool gone = false;
  for (int i = 0; i < 100 && !gone; ++i) {
    gone = process_gone(sleeper);
    if (!gone) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  EXPECT_TRUE(gone) << "the child's child (sleep) outlived the timeout";
}

TEST_F(NcclTestsRunner, ExitWhileSomethingItStartedHoldsThePipe) {
  write_script("all_reduce_perf", "sleep 30 &\ncat '" + kAllReduce.string() + "'\nexit 0\n");
  const auto start = std::chrono::steady_clock::now();
  const NcclTestsOutput out = run_nccl_tests(run_for());
  EXPECT_EQ(out.rows.size(), 29u);
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(), 3.0);
}

TEST_F(NcclTestsRunner, LauncherIsLookedUpInPath) {
  write_script("all_reduce_perf", "cat '" + kAllReduce.string() + "'\n", /*executable=*/true);
  NcclTestsRun run = run_for();
  run.launcher = {"sh"};  // stands in for mpirun: runs the binary with its arguments
  EXPECT_EQ(run_nccl_tests(run).rows.size(), 29u);
  run.launcher = {"gpuvs-no-such-launcher", "-np", "2"};
  const std::string msg = error_of(run);
  EXPECT_NE(msg.find("cannot start gpuvs-no-such-launcher"), std::string::npos) << msg;
}

TEST_F(NcclTestsRunner, MissingDirectoryNamesIt) {
  NcclTestsRun run = run_for();
  run.dir = dir_ / "no-such-dir";
  const std::string msg = error_of(run);
  EXPECT_NE(msg.find((dir_ / "no-such-dir").string()), std::string::npos) << msg;
  EXPECT_NE(msg.find("does not exist"), std::string::npos) << msg;
  EXPECT_THROW(run_nccl_tests(run), UsageError);
}

TEST_F(NcclTestsRunner, MissingOrNonExecutableBinaryNamesThePath) {
  std::string msg = error_of(run_for("alltoall"));
  EXPECT_NE(msg.find((dir_ / "alltoall_perf").string()), std::string::npos) << msg;
  write_script("alltoall_perf", "exit 0\n", /*executable=*/false);
  msg = error_of(run_for("alltoall"));
  EXPECT_NE(msg.find((dir_ / "alltoall_perf").string() + " is not an executable file"),
            std::string::npos)
      << msg;
}

TEST_F(NcclTestsRunner, ExecFailureIsReported) {
  // Executable bit, but no interpreter line and not a binary: execve says ENOEXEC.
  const fs::path p = dir_ / "reduce_perf";
  std::ofstream(p) << "\x7f"
                      "garbage";
  ::chmod(p.c_str(), 0755);
  const std::string msg = error_of(run_for("reduce"));
  EXPECT_NE(msg.find("cannot start"), std::string::npos) << msg;
}

}  // namespace
}  // namespace gpuvs::comm
