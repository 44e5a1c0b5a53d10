// Run file round trips (every field, empty optionals, parameter variants, statuses),
// the canonical text form, the fixtures in tests/data/runs, and the guarantees of
// save_run_file (atomic replace; a failed save leaves the old file byte-identical and
// no temporary file) and load_run_file (clear errors for unreadable files).
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/resource.h>
#include <unistd.h>

#include <cmath>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/run_file.h"
#include "scratch_dir_test.h"

namespace gpuvs {
namespace {

namespace fs = std::filesystem;

const fs::path kRuns = fs::path(GPUVS_TEST_DATA_DIR) / "runs";

std::string read_bytes(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

void write_bytes(const fs::path& p, std::string_view data) {
  std::ofstream out(p, std::ios::binary);
  out.write(data.data(), std::streamsize(data.size()));
}

std::vector<std::string> list_dir(const fs::path& dir) {
  std::vector<std::string> names;
  for (const auto& e : fs::directory_iterator(dir))
    names.push_back(e.path().filename().string());
  std::sort(names.begin(), names.end());
  return names;
}

// A communicator of two processes on two hosts, every field distinct from its default.
CommInfo two_rank_comm() {
  CommInfo c;
  c.launch = "mpi";
  c.world_size = 2;
  c.ranks = {RankInfo{0, "node-1", 4242, 0, 0, "NVIDIA H200", "GPU-0000", "00000000:19:00.0"},
             RankInfo{1, "node-2", 77, 3, 5, "NVIDIA H200", "GPU-1111", "00000000:3B:00.0"}};
  c.nccl_env = {{"NCCL_DEBUG", "WARN"}, {"NCCL_IB_HCA", "mlx5_0:1,mlx5_1:1"}, {"NCCL_ALGO", ""}};
  c.timeout_s = 0.25;
  return c;
}

// Every field set, each to a value distinct from its default.
RunFile full_run() {
  RunFile run;
  run.meta = Meta{"0.1.0",
                  "abc1234",
                  {"gpuvs", "run", "--out", "x y"},
                  "run",
                  "2026-11-30T10:48:43Z",
                  "2026-11-30T10:58:01Z",
                  "node-1"};
  run.system.os = "Linux 6.1.0 x86_64";
  run.system.cpu = CpuInfo{"AMD EPYC 9654", 192, int64_t{1584000000000}};
  run.system.driver_version = "580.159.04";
  run.system.cuda_driver_version = "13.0";
  run.system.cuda_runtime_version = "12.8";
  run.system.cublas_version = "12.8.4";
  run.system.cudnn_version = "9.8.0";
  run.system.nccl_version = "2.26.2";
  GpuInfo g;
  g.index = 0;  // an index is its position in system.gpus
  g.name = "NVIDIA H200";
  g.uuid = "GPU-0000";
  g.pci_bus_id = "00000000:19:00.0";
  g.pci_device_id = 0xFFFFFFFFu;  // the top of the uint32 range survives
  g.compute_capability = "9.0";
  g.sm_count = 132;
  g.memory_total_bytes = 150754820096;
  g.l2_bytes = 52428800;
  g.memory_bus_width_bits = 6144;
  g.sm_clock_mhz = 1755;
  g.sm_clock_max_mhz = 1980;
  g.mem_clock_mhz = 3200;
  g.mem_clock_max_mhz = 3201;
  g.power_limit_w = 650.5;
  g.power_default_limit_w = 700;
  g.pcie_gen_current = 4;
  g.pcie_gen_max = 5;
  g.pcie_width_current = 8;
  g.pcie_width_max = 16;
  g.ecc_enabled = true;
  g.mig_enabled = false;
  g.vbios_version = "96.00.A5.00.01";
  g.nvlinks = {NvLinkInfo{0, true, 4, "00000000:1A:00.0"}, NvLinkInfo{1, false, {}, {}}};
  run.system.gpus = {g, g};
  run.system.gpus[1].index = 1;

  Result r;
  r.id = "memory.hbm.copy";
  r.name = "HBM copy";
  r.devices = {0, 1};
  r.parameters = {{"flag", true},
                  {"count", int64_t{-7}},
                  {"ratio", 0.1},
                  {"whole", 5.0},
                  {"dtype", std::string("f32")}};
  r.value = 4.213e12;
  r.unit = "B/s";
  r.bytes_per_iteration = 8589934592.0;
  r.flops_per_iteration = 1.5e9;
  r.stats = Stats{4.213e12, 4.198e12, 4.221e12, 4.2115e12, 6.1e9, 0.0014479, 5, 4.221e12};
  r.samples = {4.213e12, 4.198e12, 4.221e12, 4.2105e12, 4.215e12};
  r.timing = Timing{20, 3, true, "noise", 1.84};
  r.peak = Peak{4.8e12, "B/s", "datasheet", "https://www.nvidia.com/en-us/data-center/h200/"};
  r.efficiency = 4.213 / 4.8;
  r.peak_at_clock = 4.3e12;
  r.efficiency_at_clock = 4.213 / 4.3;
  r.status = Status::kInvalid;
  r.status_reason = "checksum mismatch";
  r.validation = "destination equals source";
  r.clocks = ClockRecord{1700, 1755, 1980, 3201, 612.5, 58, {"sw_power_cap", "hw_slowdown"}, 18};
  GpuUtilization u0;
  u0.gpu = 0;
  u0.samples = 19;
  u0.duration_s = 1.8;
  u0.sm_util_pct = UtilDistribution{99.4, 99.9};
  u0.tensor_util_pct = UtilDistribution{0.0, 0.1};
  u0.dram_bw_util_pct = UtilDistribution{91.25, 93.5};
  u0.gpu_util_pct = UtilDistribution{100, 100};
  u0.power_w_mean = 601.3;
  u0.power_w_max = 688.9;
  u0.energy_j = 1082.25;
  u0.throttled_s = 0.4;
  u0.throttle_s_by_reason = {{"sw_power_cap", 0.4}, {"gpu_idle", 0.1}};
  GpuUtilization u1;  // a GPU without GPM: NVML figures only
  u1.gpu = 1;
  u1.samples = 1;
  u1.gpu_util_pct = UtilDistribution{37.5, 37.5};
  r.utilization = Utilization{"memory.hbm", 0.125, 1.95, {u0, u1}};
  run.results = {r};
  run.errors = {RunError{"bench compute.fp8 on GPU 0", "not supported"}};
  run.comm = two_rank_comm();
  GpuTimeline t0;
  t0.gpu = 0;
  t0.t_s = {0.0, 0.1, 0.2};
  t0.sm_util_pct = {std::nullopt, 99.2, 99.8};
  t0.tensor_util_pct = {std::nullopt, 0.0, 0.1};
  t0.dram_bw_util_pct = {std::nullopt, 88.1, 92.6};
  t0.gpu_util_pct = {0.0, 100.0, 100.0};
  t0.power_w = {118.4, 512.7, 641.5};
  t0.sm_mhz = {1980, 1755, std::nullopt};
  GpuTimeline t1;  // sampled once, no GPM
  t1.gpu = 1;
  t1.t_s = {0.0};
  t1.sm_util_pct = t1.tensor_util_pct = t1.dram_bw_util_pct = {std::nullopt};
  t1.gpu_util_pct = {37.5};
  t1.power_w = {90.0};
  t1.sm_mhz = {345};
  run.timeline = Timeline{
      "nvml", 0.1, {"GPM not supported on GPU 1 (NVIDIA A100): NVML utilization only"}, {t0, t1}};
  return run;
}

// The least a run can hold: every optional empty, every list empty.
RunFile sparse_run() {
  RunFile run;
  run.meta = Meta{"0.1.0", "unknown", {}, "detect", "2026-11-30T10:48:43Z", "", "h"};
  run.system.os = "Linux";
  run.system.cpu.model = "unknown";
  GpuInfo g;
  g.name = "GPU";
  run.system.gpus = {g};
  Result r;
  r.id = "launch.empty_kernel";
  r.unit = "s";
  r.value = 2.5e-6;  // an ok result's figure is a possible one (no 0 s launch)
  run.results = {r};
  return run;
}

RunFile round_trip(const RunFile& run) {
  return parse_run_file(to_json_text(run), "mem.json");
}

TEST(RunFileStatus, NamesRoundTrip) {
  EXPECT_EQ(to_string(Status::kOk), "ok");
  EXPECT_EQ(to_string(Status::kInvalid), "invalid");
  EXPECT_EQ(to_string(Status::kUnsupported), "unsupported");
  EXPECT_EQ(to_string(Status::kError), "error");
  for (Status s : {Status::kOk, Status::kInvalid, Status::kUnsupported, Status::kError}) {
    EXPECT_EQ(status_from_string(to_string(s)), s);
  }
  EXPECT_EQ(status_from_string("OK"), std::nullopt);  // case matters
  EXPECT_EQ(status_from_string(""), std::nullopt);
  EXPECT_EQ(status_from_string("ok "), std::nullopt);
}

TEST(RunFileRoundTrip, EveryFieldSurvives) {
  const RunFile run = full_run();
  const RunFile back = round_trip(run);
  EXPECT_EQ(back.meta, run.meta);
  EXPECT_EQ(back.system, run.system);
  ASSERT_EQ(back.results.size(), 1u);
  EXPECT_EQ(back.results[0], run.results[0]);
  EXPECT_EQ(back.errors, run.errors);
  EXPECT_EQ(back, run);
  EXPECT_EQ(to_json_text(back), to_json_text(run));
}

TEST(RunFileRoundTrip, EmptyOptionalsAreNullAndReadBackEmpty) {
  const RunFile run = sparse_run();
  const std::string text = to_json_text(run);
  for (const char* key :
       {"\"logical_cores\": null", "\"memory_bytes\": null", "\"driver_version\": null",
        "\"nccl_version\": null", "\"pci_device_id\": null", "\"sm_clock_mhz\": null",
        "\"vbios_version\": null", "\"timing\": null", "\"peak\": null", "\"efficiency\": null",
        "\"clocks\": null", "\"bytes_per_iteration\": null", "\"flops_per_iteration\": null",
        "\"peak_at_clock\": null", "\"efficiency_at_clock\": null", "\"p99\": null",
        "\"comm\": null", "\"utilization\": null", "\"timeline\": null"}) {
    EXPECT_NE(text.find(key), std::string::npos) << key;
  }
  const RunFile back = round_trip(run);
  EXPECT_EQ(back, run);
  EXPECT_FALSE(back.system.gpus[0].pci_device_id.has_value());
  EXPECT_FALSE(back.results[0].timing.has_value());
  EXPECT_FALSE(back.results[0].clocks.has_value());
  EXPECT_FALSE(back.results[0].stats.p99.has_value());
  EXPECT_FALSE(back.comm.has_value());
  EXPECT_FALSE(back.results[0].utilization.has_value());
  EXPECT_FALSE(back.timeline.has_value());
}

TEST(RunFileRoundTrip, CommAndP99) {
  // A collectives run: a latency result with its tail, and the communicator.
  RunFile run = sparse_run();
  Result& r = run.results[0];
  r.id = "collective.all_reduce.time";
  r.samples = {2.5e-5, 2.4e-5, 2.6e-5, 9.1e-5};
  r.stats = Stats{2.55e-5, 2.4e-5, 9.1e-5, 4.15e-5, 3.3e-5, 1.29, 4, 9.1e-5};
  r.value = r.stats.median;
  run.comm = two_rank_comm();
  const std::string text = to_json_text(run);
  const RunFile back = round_trip(run);
  EXPECT_EQ(back, run);
  ASSERT_TRUE(back.comm.has_value());
  EXPECT_EQ(*back.comm, *run.comm);
  EXPECT_EQ(back.comm->nccl_env.at("NCCL_ALGO"), "");  // empty values are kept
  EXPECT_EQ(back.results[0].stats.p99, 9.1e-5);
  EXPECT_EQ(to_json_text(back), text);

  // Each launch kind, a single rank, an empty environment.
  for (const char* launch : {"single-process", "mpi", "nccl-comm-id", "file"}) {
    RunFile one = sparse_run();
    one.comm = CommInfo{launch, 1, {RankInfo{0, "h", 0, 0, 0, "", "", ""}}, {}, 1e-3};
    EXPECT_EQ(round_trip(one), one) << launch;
  }
}

TEST(RunFileText, P99AndCommPlacement) {
  const std::string text = to_json_text(full_run());
  const auto pos = [&](const std::string& key, std::size_t from = 0) {
    return text.find("\"" + key + "\":", from);
  };
  // p99 is the last key of stats: after its sample count, before the samples array.
  const auto stats = pos("stats");
  EXPECT_LT(pos("noise", stats), pos("p99", stats));
  EXPECT_NE(text.find("\"samples\": 5,\n        \"p99\": 4221000000000.0\n      },"),
            std::string::npos);
  // comm comes after errors (then timeline); nccl_env is written sorted.
  EXPECT_LT(pos("errors"), pos("comm"));
  EXPECT_NE(text.find("\n  \"comm\": {\n    \"launch\": \"mpi\",\n    \"world_size\": 2,"),
            std::string::npos);
  EXPECT_LT(pos("NCCL_ALGO"), pos("NCCL_DEBUG"));
  EXPECT_LT(pos("NCCL_DEBUG"), pos("NCCL_IB_HCA"));
  EXPECT_LT(pos("nccl_env"), pos("timeout_s"));
  EXPECT_EQ(text.substr(text.size() - 4), "}\n}\n");
}

TEST(RunFileFixtures, FilesWithoutP99OrCommStillLoad) {
  // Written before stats.p99 and comm existed: still valid gpuvs.run/1 files.
  const fs::path path =
      fs::path(GPUVS_SOURCE_DIR) / "tests" / "data" / "runs" / "h200-run-2026-11-30.json";
  const std::string text = read_bytes(path);
  ASSERT_EQ(text.find("\"p99\""), std::string::npos) << "the fixture has been rewritten";
  ASSERT_EQ(text.find("\"comm\""), std::string::npos);
  const RunFile run = load_run_file(path);
  ASSERT_FALSE(run.results.empty());
  for (const Result& r : run.results)
    EXPECT_FALSE(r.stats.p99.has_value()) << r.id;
  EXPECT_FALSE(run.comm.has_value());
  EXPECT_EQ(round_trip(run), run);
}

TEST(RunFileRoundTrip, PeakAtClockFields) {
  // The peak at the measured clock and the efficiency against it: written after
  // `efficiency`, null when absent, read back exactly, refused when negative.
  RunFile run = sparse_run();
  Result& r = run.results[0];
  r.unit = "FLOP/s";
  r.value = 7.5e14;
  r.peak_at_clock = 132.0 * 4096 * 1590 * 1e6;
  r.efficiency_at_clock = r.value / *r.peak_at_clock;
  const std::string text = to_json_text(run);
  const auto pos = [&](const char* key) { return text.find(std::string("\"") + key + "\":"); };
  EXPECT_LT(pos("efficiency"), pos("peak_at_clock"));
  EXPECT_LT(pos("peak_at_clock"), pos("efficiency_at_clock"));
  EXPECT_LT(pos("efficiency_at_clock"), pos("status"));
  const RunFile back = round_trip(run);
  EXPECT_EQ(back, run);
  ASSERT_TRUE(back.results[0].peak_at_clock.has_value());
  EXPECT_EQ(*back.results[0].peak_at_clock, 132.0 * 4096 * 1590 * 1e6);
  EXPECT_EQ(*back.results[0].efficiency_at_clock, r.value / *r.peak_at_clock);

  // Zero is a valid value (nothing measured at a known clock), not a missing one.
  r.peak_at_clock = 0.0;
  r.efficiency_at_clock = 0.0;
  EXPECT_EQ(round_trip(run).results[0].peak_at_clock, 0.0);

  for (const char* key : {"peak_at_clock", "efficiency_at_clock"}) {
    RunFile bad = sparse_run();
    std::string t = to_json_text(bad);
    const std::string from = std::string("\"") + key + "\": null";
    ASSERT_NE(t.find(from), std::string::npos) << key;
    t.replace(t.find(from), from.size(), std::string("\"") + key + "\": -0.25");
    try {
      parse_run_file(t, "neg.json");
      ADD_FAILURE() << key << ": a negative value was accepted";
    } catch (const UsageError& e) {
      EXPECT_EQ(std::string(e.what()),
                std::string("neg.json: results[0].") + key + ": must be >= 0, got -0.25");
    }
  }
}

TEST(RunFileRoundTrip, EveryStatusValue) {
  for (Status s : {Status::kOk, Status::kInvalid, Status::kUnsupported, Status::kError}) {
    RunFile run = sparse_run();
    run.results[0].status = s;
    const std::string text = to_json_text(run);
    EXPECT_NE(text.find("\"status\": \"" + std::string(to_string(s)) + "\""), std::string::npos);
    EXPECT_EQ(round_trip(run).results[0].status, s);
  }
}

TEST(RunFileRoundTrip, ParameterVariantsKeepTheirType) {
  RunFile run = sparse_run();
  auto& p = run.results[0].parameters;
  p["b_true"] = true;
  p["b_false"] = false;
  p["i_min"] = std::numeric_limits<int64_t>::min();
  p["i_max"] = std::numeric_limits<int64_t>::max();
  p["i_zero"] = int64_t{0};
  p["d_whole"] = 5.0;  // must stay a double, not become the integer 5
  p["d_tenth"] = 0.1;
  p["d_huge"] = 1e300;
  p["d_tiny"] = 5e-324;
  p["d_negzero"] = -0.0;
  p["s_empty"] = std::string();
  p["s_text"] = std::string("quote \" backslash \\ newline \n tab \t \xc3\xa9 nul ") + '\0';
  const RunFile back = round_trip(run);
  const auto& q = back.results[0].parameters;
  ASSERT_EQ(q.size(), p.size());
  for (const auto& [key, value] : p) {
    ASSERT_TRUE(q.count(key)) << key;
    EXPECT_EQ(q.at(key).index(), value.index()) << key;
    EXPECT_EQ(q.at(key), value) << key;
  }
  EXPECT_TRUE(std::signbit(std::get<double>(q.at("d_negzero"))));
}

TEST(RunFileRoundTrip, ParameterNumbersFromForeignWriters) {
  // Integers beyond int64 keep their magnitude as a double; 5.0 is a double.
  std::string text = read_bytes(kRuns / "valid_full.json");
  const std::string from = "\"parameters\": {}";
  ASSERT_NE(text.find(from), std::string::npos);
  text.replace(text.find(from), from.size(),
               "\"parameters\": {\"big\": 18446744073709551615, \"five\": 5.0, \"int\": 5, "
               "\"neg\": -3, \"exp\": 1e3}");
  const RunFile run = parse_run_file(text, "foreign.json");
  const auto& q = run.results[1].parameters;
  EXPECT_EQ(std::get<double>(q.at("big")), 18446744073709551615.0);
  EXPECT_EQ(std::get<double>(q.at("five")), 5.0);
  EXPECT_EQ(std::get<int64_t>(q.at("int")), 5);
  EXPECT_EQ(std::get<int64_t>(q.at("neg")), -3);
  EXPECT_EQ(std::get<double>(q.at("exp")), 1000.0);
}

TEST(RunFileText, TwoSpaceIndentTrailingNewlineSchemaOrder) {
  const std::string text = to_json_text(full_run());
  ASSERT_FALSE(text.empty());
  EXPECT_EQ(text.back(), '\n');
  EXPECT_EQ(text.rfind("{\n  \"schema\": \"gpuvs.run/1\",\n  \"meta\": {\n    \"tool_version\"", 0),
            0u);
  // Keys in struct order, not alphabetical.
  const auto pos = [&](const char* key) { return text.find(std::string("\"") + key + "\":"); };
  EXPECT_LT(pos("schema"), pos("meta"));
  EXPECT_LT(pos("meta"), pos("system"));
  EXPECT_LT(pos("system"), pos("results"));
  EXPECT_LT(pos("results"), pos("errors"));
  EXPECT_LT(pos("id"), pos("devices"));
  EXPECT_LT(pos("value"), pos("unit"));
  EXPECT_LT(pos("stats"), pos("status"));
  EXPECT_LT(pos("status"), pos("clocks"));
  EXPECT_NE(text.find("\"pci_device_id\": 4294967295,"), std::string::npos);
  EXPECT_NE(text.find("\"status\": \"invalid\""), std::string::npos);
}

TEST(RunFileText, NotUtf8StringsAreReplacedNotThrown) {
  RunFile run = sparse_run();
  run.meta.host = "caf\xe9";  // Latin-1, as a hostname or argv byte may be
  run.meta.argv = {"gpuvs", "\xff\xfe"};
  std::string text;
  ASSERT_NO_THROW(text = to_json_text(run));
  const RunFile back = parse_run_file(text, "mem.json");
  EXPECT_EQ(back.meta.host, "caf\xef\xbf\xbd");  // U+FFFD
  EXPECT_EQ(to_json_text(back), text);
}

TEST(RunFileFixtures, ValidFullIsCanonicalAndReadsBack) {
  const fs::path path = kRuns / "valid_full.json";
  const RunFile run = load_run_file(path);
  EXPECT_EQ(run.schema, "gpuvs.run/1");
  EXPECT_EQ(run.meta.command, "bench");
  ASSERT_EQ(run.system.gpus.size(), 1u);
  const GpuInfo& g = run.system.gpus[0];
  EXPECT_EQ(g.name, "NVIDIA H200");
  EXPECT_EQ(g.pci_device_id, (0x2335u << 16) | 0x10deu);
  EXPECT_EQ(g.sm_count, 132);
  EXPECT_EQ(g.memory_total_bytes, 150754820096);
  EXPECT_EQ(g.nvlinks.size(), 2u);
  EXPECT_EQ(g.nvlinks[0].remote_pci_bus_id, std::nullopt);
  ASSERT_EQ(run.results.size(), 2u);
  const Result& hbm = run.results[0];
  EXPECT_EQ(hbm.id, "memory.hbm.copy");
  EXPECT_EQ(hbm.value, 4.213e12);
  EXPECT_EQ(hbm.unit, "B/s");
  EXPECT_EQ(hbm.status, Status::kOk);
  EXPECT_EQ(std::get<int64_t>(hbm.parameters.at("buffer_bytes")), 4294967296);
  EXPECT_EQ(std::get<std::string>(hbm.parameters.at("dtype")), "f32");
  EXPECT_EQ(std::get<bool>(hbm.parameters.at("l2_flush")), false);
  EXPECT_EQ(std::get<double>(hbm.parameters.at("occupancy")), 0.75);
  ASSERT_TRUE(hbm.peak.has_value());
  EXPECT_EQ(hbm.peak->kind, "datasheet");
  EXPECT_NEAR(*hbm.efficiency, hbm.value / hbm.peak->value, 1e-12);
  EXPECT_EQ(hbm.stats.samples, int(hbm.samples.size()));
  EXPECT_TRUE(hbm.clocks->throttle_reasons.empty());
  EXPECT_EQ(hbm.stats.p99, hbm.stats.max);  // 5 samples: the largest
  EXPECT_EQ(run.results[1].status, Status::kUnsupported);
  EXPECT_FALSE(run.results[1].timing.has_value());
  EXPECT_FALSE(run.results[1].stats.p99.has_value());
  ASSERT_EQ(run.errors.size(), 1u);
  EXPECT_FALSE(run.comm.has_value());
  ASSERT_TRUE(hbm.utilization.has_value());
  EXPECT_EQ(hbm.utilization->step, "memory.hbm");
  ASSERT_EQ(hbm.utilization->gpus.size(), 1u);
  EXPECT_EQ(hbm.utilization->gpus[0].dram_bw_util_pct->p95, 92.6);
  EXPECT_FALSE(run.results[1].utilization.has_value());
  ASSERT_TRUE(run.timeline.has_value());
  EXPECT_EQ(run.timeline->source, "nvml+gpm");
  ASSERT_EQ(run.timeline->gpus.size(), 1u);
  EXPECT_EQ(run.timeline->gpus[0].t_s.size(), 6u);
  EXPECT_EQ(run.timeline->gpus[0].sm_util_pct[0], std::nullopt);
  // The fixture is written in canonical form: what gpuvs writes is what is there.
  EXPECT_EQ(to_json_text(run), read_bytes(path));
}

TEST(RunFileFixtures, DocsExampleIsTheFixture) {
  // docs/results.md shows valid_full.json verbatim; keep the two from drifting.
  const std::string doc = read_bytes(fs::path(GPUVS_SOURCE_DIR) / "docs" / "results.md");
  const auto section = doc.find("## Complete example");
  ASSERT_NE(section, std::string::npos);
  const std::string fence = "```json\n";
  const auto begin = doc.find(fence, section);
  ASSERT_NE(begin, std::string::npos);
  const auto end = doc.find("```", begin + fence.size());
  ASSERT_NE(end, std::string::npos);
  const std::string example = doc.substr(begin + fence.size(), end - begin - fence.size());
  EXPECT_EQ(example, read_bytes(kRuns / "valid_full.json"));
  EXPECT_NO_THROW(parse_run_file(example, "docs/results.md"));
}

TEST(RunFileFixtures, ValidMinimalMissingOptionalKeysReadAsEmpty) {
  const RunFile run = load_run_file(kRuns / "valid_minimal.json");
  EXPECT_EQ(run.meta.argv, (std::vector<std::string>{"gpuvs", "detect"}));
  EXPECT_EQ(run.system.cpu.model, "unknown");
  EXPECT_FALSE(run.system.cpu.logical_cores.has_value());
  EXPECT_FALSE(run.system.cpu.memory_bytes.has_value());
  EXPECT_FALSE(run.system.driver_version.has_value());
  EXPECT_FALSE(run.system.cuda_runtime_version.has_value());
  EXPECT_TRUE(run.system.gpus.empty());
  EXPECT_TRUE(run.results.empty());
  EXPECT_EQ(round_trip(run), run);
}

TEST(RunFileParse, UnknownKeysAreIgnored) {
  std::string text = read_bytes(kRuns / "valid_minimal.json");
  text.replace(text.find("\"results\""), 0,
               "\"future_field\": {\"x\": [1, 2, {\"y\": null}]}, \"os_extra\": 1e300, ");
  text.replace(text.find("\"model\""), 0, "\"cache_bytes\": 33554432, ");
  const RunFile run = parse_run_file(text, "future.json");
  EXPECT_EQ(run, load_run_file(kRuns / "valid_minimal.json"));
}

TEST(RunFileParse, LargeStringIsAccepted) {
  RunFile run = sparse_run();
  run.results[0].validation.assign(2 * 1024 * 1024, 'v');
  run.results[0].validation += "[[[{{{";  // brackets inside strings do not nest
  const RunFile back = round_trip(run);
  EXPECT_EQ(back.results[0].validation.size(), 2u * 1024 * 1024 + 6);
  EXPECT_EQ(back, run);
}

TEST(RunFileParse, EscapedNulInStringIsAccepted) {
  std::string text = read_bytes(kRuns / "valid_minimal.json");
  const std::string from = "\"host\": \"laptop\"";
  text.replace(text.find(from), from.size(), "\"host\": \"lap\\u0000top\"");
  const RunFile run = parse_run_file(text, "nul.json");
  EXPECT_EQ(run.meta.host, std::string("lap\0top", 7));
  EXPECT_EQ(round_trip(run), run);
}

// ---------------------------------------------------------------- files on disk

class RunFileDisk : public gpuvs_test::ScratchDirTest {
 protected:
  RunFileDisk() : ScratchDirTest("gpuvs_test_run_file") {}
};

TEST_F(RunFileDisk, SaveThenLoad) {
  const fs::path path = dir_ / "run.json";
  save_run_file(full_run(), path);
  EXPECT_EQ(list_dir(dir_), std::vector<std::string>{"run.json"});
  EXPECT_EQ(read_bytes(path), to_json_text(full_run()));
  EXPECT_EQ(load_run_file(path), full_run());
}

TEST_F(RunFileDisk, SaveReplacesExistingFile) {
  const fs::path path = dir_ / "run.json";
  write_bytes(path, "old contents, longer than nothing");
  save_run_file(sparse_run(), path);
  EXPECT_EQ(read_bytes(path), to_json_text(sparse_run()));
  save_run_file(full_run(), path);
  EXPECT_EQ(read_bytes(path), to_json_text(full_run()));
  EXPECT_EQ(list_dir(dir_), std::vector<std::string>{"run.json"});
}

TEST_F(RunFileDisk, SaveWithoutDirectoryWritesToCurrentDirectory) {
  const fs::path old_cwd = fs::current_path();
  fs::current_path(dir_);
  save_run_file(sparse_run(), "plain.json");
  fs::current_path(old_cwd);
  EXPECT_EQ(load_run_file(dir_ / "plain.json"), sparse_run());
}

// Asserts that `f` throws gpuvs::Error with exit code 1 and a message naming `path`.
template <class F>
std::string expect_write_failure(F f, const fs::path& path) {
  try {
    f();
  } catch (const UsageError& e) {
    ADD_FAILURE() << "a write failure is not a usage error: " << e.what();
    return e.what();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ExitCode::kFailure);
    const std::string msg = e.what();
    EXPECT_EQ(msg.rfind("cannot write " + path.string() + ": ", 0), 0u) << msg;
    EXPECT_EQ(msg.find('\n'), std::string::npos) << msg;
    return msg;
  }
  ADD_FAILURE() << "no gpuvs::Error thrown";
  return {};
}

TEST_F(RunFileDisk, FailedWriteLeavesOldFileAndNoTemporary) {
  // RLIMIT_FSIZE makes write() fail part way through with EFBIG, even for root,
  // which a read-only directory does not. SIGXFSZ would kill the test: ignore it.
  const fs::path path = dir_ / "run.json";
  const std::string old = "{\"old\": true}\n";
  write_bytes(path, old);
  rlimit saved{};
  ASSERT_EQ(getrlimit(RLIMIT_FSIZE, &saved), 0);
  auto* const old_handler = signal(SIGXFSZ, SIG_IGN);
  rlimit small = saved;
  small.rlim_cur = 1024;
  ASSERT_EQ(setrlimit(RLIMIT_FSIZE, &small), 0);
  const std::string msg = expect_write_failure([&] { save_run_file(full_run(), path); }, path);
  setrlimit(RLIMIT_FSIZE, &saved);
  signal(SIGXFSZ, old_handler);
  EXPECT_EQ(msg, "cannot write " + path.string() + ": File too large");
  EXPECT_EQ(read_bytes(path), old);
  EXPECT_EQ(list_dir(dir_), std::vector<std::string>{"run.json"});
}

TEST_F(RunFileDisk, UnwritableDirectoryLeavesOldFile) {
  if (::geteuid() == 0) GTEST_SKIP() << "root writes into read-only directories";
  const fs::path path = dir_ / "run.json";
  write_bytes(path, "old");
  fs::permissions(dir_, fs::perms::owner_read | fs::perms::owner_exec);
  const std::string msg = expect_write_failure([&] { save_run_file(full_run(), path); }, path);
  fs::permissions(dir_, fs::perms::owner_all);
  EXPECT_NE(msg.find("Permission denied"), std::string::npos) << msg;
  EXPECT_EQ(read_bytes(path), "old");
  EXPECT_EQ(list_dir(dir_), std::vector<std::string>{"run.json"});
}

TEST_F(RunFileDisk, PathIsADirectory) {
  const fs::path path = dir_ / "out";
  fs::create_directory(path);
  write_bytes(path / "keep.txt", "keep");
  const std::string msg = expect_write_failure([&] { save_run_file(full_run(), path); }, path);
  EXPECT_EQ(msg, "cannot write " + path.string() + ": Is a directory");
  EXPECT_TRUE(fs::is_directory(path));
  EXPECT_EQ(read_bytes(path / "keep.txt"), "keep");
  EXPECT_EQ(list_dir(dir_), std::vector<std::string>{"out"});
  EXPECT_EQ(list_dir(path), std::vector<std::string>{"keep.txt"});
}

TEST_F(RunFileDisk, MissingDirectoryIsNamed) {
  const fs::path path = dir_ / "no" / "such" / "run.json";
  const std::string msg = expect_write_failure([&] { save_run_file(full_run(), path); }, path);
  EXPECT_NE(msg.find("directory " + (dir_ / "no" / "such").string() + " does not exist"),
            std::string::npos)
      << msg;
  EXPECT_FALSE(fs::exists(dir_ / "no"));
}

TEST_F(RunFileDisk, ParentIsAFile) {
  write_bytes(dir_ / "file", "x");
  const fs::path path = dir_ / "file" / "run.json";
  const std::string msg = expect_write_failure([&] { save_run_file(full_run(), path); }, path);
  EXPECT_NE(msg.find("is not a directory"), std::string::npos) << msg;
  EXPECT_EQ(read_bytes(dir_ / "file"), "x");
}

TEST_F(RunFileDisk, InvalidRunIsNotWritten) {
  // A NaN would be written as null and the file could never be read back.
  const fs::path path = dir_ / "run.json";
  write_bytes(path, "old");
  RunFile run = full_run();
  run.results[0].value = std::nan("");
  const std::string msg = expect_write_failure([&] { save_run_file(run, path); }, path);
  EXPECT_NE(msg.find("results[0].value: expected a number, got null"), std::string::npos) << msg;
  EXPECT_EQ(read_bytes(path), "old");
  EXPECT_EQ(list_dir(dir_), std::vector<std::string>{"run.json"});
}

TEST_F(RunFileDisk, InvalidCommIsNotWritten) {
  // The save check covers the new sections too: a rank missing from comm.ranks.
  const fs::path path = dir_ / "run.json";
  write_bytes(path, "old");
  RunFile run = full_run();
  run.comm->ranks.pop_back();
  const std::string msg = expect_write_failure([&] { save_run_file(run, path); }, path);
  EXPECT_EQ(msg, "cannot write " + path.string() +
                     ": the run does not pass validation: run.json: comm.ranks: has 1 entries, "
                     "world_size is 2");
  run = full_run();
  run.results[0].stats.p99 = 5e12;
  const std::string p99 = expect_write_failure([&] { save_run_file(run, path); }, path);
  EXPECT_NE(p99.find("run.json: results[0].stats.p99: min <= p99 <= max does not hold"),
            std::string::npos)
      << p99;
  EXPECT_EQ(read_bytes(path), "old");
  EXPECT_EQ(list_dir(dir_), std::vector<std::string>{"run.json"});
}

// Asserts a UsageError whose one-line message starts with `prefix`.
void expect_load_error(const fs::path& path, const std::string& prefix) {
  try {
    load_run_file(path);
    ADD_FAILURE() << "no error loading " << path;
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ExitCode::kUsage);
    const std::string msg = e.what();
    EXPECT_EQ(msg.rfind(prefix, 0), 0u) << msg;
    EXPECT_EQ(msg.find('\n'), std::string::npos) << msg;
  }
}

TEST_F(RunFileDisk, LoadMissingFile) {
  const fs::path path = dir_ / "missing.json";
  expect_load_error(path, path.string() + ": cannot read: No such file or directory");
}

TEST_F(RunFileDisk, LoadDirectory) {
  expect_load_error(dir_, dir_.string() + ": cannot read: Is a directory");
}

TEST_F(RunFileDisk, LoadRefusesHugeFileBeforeReadingIt) {
  // A sparse file: 257 MiB by size, no blocks, so refusing it must not read it.
  const fs::path path = dir_ / "huge.json";
  write_bytes(path, "{");
  fs::resize_file(path, (uintmax_t{257} << 20));
  expect_load_error(path, path.string() + ": file is larger than 256 MiB");
}

TEST_F(RunFileDisk, LoadNamesTheFileInFieldErrors) {
  const fs::path path = dir_ / "bad.json";
  std::string text = read_bytes(kRuns / "valid_minimal.json");
  text.replace(text.find("\"argv\": ["), 9, "\"argv\": [3, ");
  write_bytes(path, text);
  expect_load_error(path, path.string() + ": meta.argv[0]: expected a string, got integer");
}

}  // namespace
}  // namespace gpuvs
