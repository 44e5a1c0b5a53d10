// `gpuvs import` (import/import.h) over the fixtures of each tool: nccl-tests logs of
// every layout (tests/data/nccl_tests/) give exactly the figures its parser reads, and
// the run file reads back and compares; nvbench and nvbandwidth JSON (tests/data/nvbench/,
// tests/data/nvbandwidth/) give the ids, values in base units, parameters and tool
// labels of docs/import.md; and what is not that tool's output is refused in one line.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "comm/nccl_tests.h"
#include "core/run_file.h"
#include "import/import.h"
#include "report/compare.h"
#include "scratch_dir_test.h"
#include "specs/catalogue.h"
#include "specs/published.h"
#include "usage_error.h"

namespace gpuvs::import {
namespace {

namespace fs = std::filesystem;

const fs::path kData = GPUVS_TEST_DATA_DIR;
const fs::path kAllReduce = kData / "nccl_tests" / "all_reduce_2gpu_h200_v2.17.6.txt";
const fs::path kFailed = kData / "nccl_tests" / "all_reduce_8gpu_failed_v2.19.6.txt";
const fs::path kBroadcast = kData / "nccl_tests" / "broadcast_4gpu_allroots_nocheck_2024.txt";
const fs::path kSendRecv = kData / "nccl_tests" / "sendrecv_2gpu_a100_2021.txt";
const fs::path kNvbench = kData / "nvbench" / "copy_reduce_h200x2.json";
const fs::path kNvbwH200 = kData / "nvbandwidth" / "h200x2_v0.8.json";
const fs::path kNvbwA100 = kData / "nvbandwidth" / "a100_pcie_x2_v0.5.json";

std::string read_text(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

Meta test_meta() {
  Meta m;
  m.tool_version = "0.1.0";
  m.git_sha = "unknown";
  m.argv = {"gpuvs", "import"};
  m.command = "import";
  m.started_at = "2026-12-01T09:00:00Z";
  m.host = "the importing machine";
  return m;
}

ImportOutcome import_of(const std::string& tool, std::vector<std::string> files,
                        std::string op = {}) {
  ImportOptions o;
  o.tool = tool;
  o.files = std::move(files);
  o.op = std::move(op);
  return import_files(o, test_meta());
}

std::vector<const Result*> with_id(const RunFile& run, const std::string& id) {
  std::vector<const Result*> out;
  for (const Result& r : run.results)
    if (r.id == id) out.push_back(&r);
  return out;
}

std::string text_param(const Result& r, const std::string& key) {
  const auto it = r.parameters.find(key);
  if (it == r.parameters.end() || !std::holds_alternative<std::string>(it->second)) return "";
  return std::get<std::string>(it->second);
}

class ImportFiles : public gpuvs_test::ScratchDirTest {
 protected:
  ImportFiles() : ScratchDirTest("gpuvs_import") {}
  std::string write(const std::string& name, const std::string& text) {
    const fs::path p = dir_ / name;
    std::ofstream(p, std::ios::binary) << text;
    return p.string();
  }
  // The run, saved as `gpuvs import` saves it, loads back equal.
  void expect_reads_back(const RunFile& run) {
    const fs::path out = dir_ / "imported.json";
    save_run_file(run, out);
    EXPECT_EQ(load_run_file(out), run);
  }
};

// ---------------------------------------------------------------- nccl-tests

// Every out-of-place row of every fixture becomes a busbw and a time result whose
// figures are the parser's, in base units; the run reads back as written.
TEST_F(ImportFiles, NcclTestsLogsRoundTripWithTheParsersFigures) {
  for (const fs::path& log : {kAllReduce, kFailed, kBroadcast, kSendRecv}) {
    SCOPED_TRACE(log.filename().string());
    const ImportOutcome outcome = import_of("nccl-tests", {log.string()});
    const RunFile& run = outcome.run;
    const comm::NcclTestsOutput parsed = comm::parse_nccl_tests_output(read_text(log));
    size_t rows = 0;
    for (const comm::NcclTestsRow& row : parsed.rows) {
      if (!row.oop_time_us || !row.oop_busbw_gbs) continue;
      ++rows;
      size_t found = 0;
      for (const Result& r : run.results) {
        if (int_parameter(r, "bytes") != row.size_bytes) continue;
        if (row.root >= 0 && int_parameter(r, "root") != row.root) continue;
        if (r.id.ends_with(".busbw.nccl_tests")) {
          EXPECT_EQ(r.value, *row.oop_busbw_gbs * 1e9) << row.size_bytes;
          EXPECT_EQ(r.unit, "B/s");
          ++found;
        } else if (r.id.ends_with(".time.nccl_tests")) {
          EXPECT_EQ(r.value, *row.oop_time_us * 1e-6) << row.size_bytes;
          EXPECT_EQ(r.unit, "s");
          ++found;
        }
      }
      EXPECT_EQ(found, 2u) << row.size_bytes << " root " << row.root;
    }
    EXPECT_GT(rows, 0u);
    EXPECT_EQ(run.results.size(), 2 * rows);
    EXPECT_EQ(outcome.files.at(0).results, 2 * rows);
    EXPECT_EQ(run.meta.command, "import");
    EXPECT_EQ(run.system.gpus.size(), parsed.devices.size());

    expect_reads_back(run);
  }
}

TEST_F(ImportFiles, NcclTestsSaysWhatTheLogSays) {
  const RunFile run = import_of("nccl-tests", {kAllReduce.string()}).run;
  EXPECT_EQ(run.meta.host, "hgx-h200-03");
  EXPECT_EQ(run.system.nccl_version, "2.27.7");
  ASSERT_EQ(run.system.gpus.size(), 2u);
  EXPECT_EQ(run.system.gpus[0].name, "NVIDIA H200");
  EXPECT_EQ(run.system.gpus[0].pci_bus_id, "00000000:19:00.0");
  EXPECT_EQ(run.system.gpus[1].pci_bus_id, "00000000:3B:00.0");
  // What the log does not say is the format's unknown, never a made-up figure.
  EXPECT_EQ(run.system.gpus[0].uuid, "");
  EXPECT_EQ(run.system.gpus[0].sm_count, 0);
  EXPECT_FALSE(run.system.driver_version);
  EXPECT_EQ(run.system.os, "unknown");
  EXPECT_TRUE(run.errors.empty());

  const auto busbw = with_id(run, "collective.all_reduce.busbw.nccl_tests");
  ASSERT_EQ(busbw.size(), 29u);
  const Result& big = *busbw.back();  // 2 GiB
  EXPECT_EQ(int_parameter(big, "bytes"), int64_t{1} << 31);
  EXPECT_EQ(big.value, 366.64 * 1e9);
  EXPECT_EQ(big.devices, (std::vector<int>{0, 1}));
  EXPECT_EQ(int_parameter(big, "ranks"), 2);
  EXPECT_EQ(number_parameter(big, "busbw_factor"), 1.0);
  EXPECT_EQ(text_param(big, "tool"), "nccl-tests 2.17.6");
  EXPECT_EQ(text_param(big, "dtype"), "float32");
  EXPECT_EQ(text_param(big, "redop"), "sum");
  EXPECT_EQ(text_param(big, "algo"), "default");
  EXPECT_EQ(text_param(big, "buffers"), "ncclMemAlloc");  // built against NCCL 2.27
  EXPECT_EQ(std::get<bool>(big.parameters.at("graph")), false);
  EXPECT_EQ(big.status, Status::kOk);
  EXPECT_NE(big.validation.find("0 wrong"), std::string::npos) << big.validation;
  EXPECT_NE(big.validation.find("all_reduce_2gpu_h200_v2.17.6.txt"), std::string::npos);
}

TEST_F(ImportFiles, NcclTestsOlderLayoutsAndAFailedRun) {
  // No "Collective test starting" line: the op from the file's name; roots as printed.
  const RunFile bcast = import_of("nccl-tests", {kBroadcast.string()}).run;
  const auto b = with_id(bcast, "collective.broadcast.busbw.nccl_tests");
  ASSERT_EQ(b.size(), 24u);
  EXPECT_EQ(int_parameter(*b[6], "root"), 1);
  EXPECT_EQ(text_param(*b[0], "redop"), "");           // broadcast reduces nothing
  EXPECT_EQ(text_param(*b[0], "buffers"), "unknown");  // no version line
  EXPECT_EQ(text_param(*b[0], "tool"), "nccl-tests (version not printed)");
  EXPECT_EQ(bcast.system.nccl_version, "2.21.5");         // NCCL's INFO line
  EXPECT_EQ(bcast.system.gpus.at(3).pci_bus_id, "0x5d");  // as printed before 2025
  EXPECT_NE(b[0]->validation.find("did not check"), std::string::npos) << b[0]->validation;

  const RunFile sr = import_of("nccl-tests", {kSendRecv.string()}).run;
  const auto t = with_id(sr, "collective.sendrecv.time.nccl_tests");
  ASSERT_EQ(t.size(), 9u);
  EXPECT_EQ(t[0]->value, 11.24 * 1e-6);  // as the parser read it, in seconds
  EXPECT_EQ(sr.system.gpus.at(0).name, "A100-SXM4-80GB");
  EXPECT_NE(t[0]->validation.find("largest error 0"), std::string::npos) << t[0]->validation;

  // Cut short by a failure: the sizes it finished, and the failure as the run's error.
  const ImportOutcome failed = import_of("nccl-tests", {kFailed.string()});
  EXPECT_EQ(with_id(failed.run, "collective.all_reduce.busbw.nccl_tests").size(), 10u);
  ASSERT_EQ(failed.run.errors.size(), 1u);
  EXPECT_NE(failed.run.errors[0].message.find("illegal memory access"), std::string::npos);
  EXPECT_EQ(failed.run.system.gpus.size(), 8u);
  const Result& first = failed.run.results.front();
  EXPECT_EQ(std::get<bool>(first.parameters.at("graph")), true);  // graph: 10
  EXPECT_EQ(number_parameter(first, "busbw_factor"), 2.0 * 7 / 8);
}

TEST_F(ImportFiles, NcclTestsOpOfALogWithoutItsBinarysName) {
  const std::string plain = write("log.txt", read_text(kBroadcast));
  const std::string msg = gpuvs_test::usage_error_of([&] { import_of("nccl-tests", {plain}); });
  EXPECT_NE(msg.find("log.txt: the log does not say which collective"), std::string::npos) << msg;
  EXPECT_NE(msg.find("--op"), std::string::npos) << msg;
  const RunFile run = import_of("nccl-tests", {plain}, "broadcast").run;
  EXPECT_EQ(with_id(run, "collective.broadcast.time.nccl_tests").size(), 24u);
  // A log that names its binary must agree with --op.
  const std::string other =
      gpuvs_test::usage_error_of([&] { import_of("nccl-tests", {kAllReduce.string()}, "reduce"); });
  EXPECT_NE(other.find("the log is of \"all_reduce_perf\", not --op reduce"), std::string::npos)
      << other;
}

// Logs of one machine merge into one run; logs of two machines are refused.
TEST_F(ImportFiles, NcclTestsLogsOfOneMachineOnly) {
  const std::string second = write("all_reduce_again.log", read_text(kAllReduce));
  const ImportOutcome both = import_of("nccl-tests", {kAllReduce.string(), second});
  EXPECT_EQ(both.run.results.size(), 116u);
  EXPECT_EQ(both.files.size(), 2u);
  const std::string msg = gpuvs_test::usage_error_of([&] {
    import_of("nccl-tests", {kAllReduce.string(), kSendRecv.string()});
  });
  EXPECT_NE(msg.find("sendrecv_2gpu_a100_2021.txt: the host is \"dgx-a100-02\", but "
                     "all_reduce_2gpu_h200_v2.17.6.txt says \"hgx-h200-03\""),
            std::string::npos)
      << msg;
}

// The imported figures meet gpuvs's own in compare's rows of one metric and
// configuration, measured against measured, and the column says who measured them.
TEST_F(ImportFiles, CompareReadsTheImportedRunBesideGpuvssOwn) {
  const fs::path out = dir_ / "nccl-tests.json";
  save_run_file(import_of("nccl-tests", {kAllReduce.string()}).run, out);
  const RunFile imported = load_run_file(out);
  const RunFile own =
      load_run_file(fs::path(GPUVS_SOURCE_DIR) / "data/reference/h200x2-collectives.json");
  std::vector<CompareInput> inputs(2);
  inputs[0].run = &own;
  inputs[1].run = &imported;
  inputs[1].run_ref = out.string();
  const Comparison c =
      build_comparison(inputs, Catalogue::builtin(), Published::builtin(), CompareOptions{});
  EXPECT_EQ(c.columns[0].measured_by, "gpuvs");
  EXPECT_EQ(c.columns[1].measured_by, "nccl-tests 2.17.6 (imported)");
  const Row* busbw = nullptr;
  for (const Row& r : c.rows)
    if (r.metric == "collective.all_reduce_busbw") busbw = &r;
  ASSERT_TRUE(busbw);
  EXPECT_NE(busbw->config_text.find("2 GPUs"), std::string::npos) << busbw->config_text;
  const Cell& theirs = busbw->cells[1];
  ASSERT_TRUE(theirs.value);
  EXPECT_EQ(*theirs.value, 366.64 * 1e9);  // 2 GiB, the largest size both have
  EXPECT_EQ(theirs.measured_by, "nccl-tests 2.17.6");
  EXPECT_NE(theirs.source_ref.find("collective.all_reduce.busbw.nccl_tests"), std::string::npos);
  EXPECT_EQ(theirs.basis, "measured");
  EXPECT_TRUE(theirs.ratio);
  // gpuvs's own run has nccl-tests' figures too: its column still shows its own.
  EXPECT_EQ(busbw->cells[0].measured_by, "gpuvs");
}

// ---------------------------------------------------------------- nvbench

TEST_F(ImportFiles, NvbenchStatesGiveTheirFiguresInBaseUnits) {
  const ImportOutcome outcome = import_of("nvbench", {kNvbench.string()});
  const RunFile& run = outcome.run;
  ASSERT_EQ(run.system.gpus.size(), 2u);
  const GpuInfo& g = run.system.gpus[1];
  EXPECT_EQ(g.name, "NVIDIA H200");
  EXPECT_EQ(g.compute_capability, "9.0");
  EXPECT_EQ(g.sm_count, 132);
  EXPECT_EQ(g.memory_total_bytes, 150754820096);
  EXPECT_EQ(g.l2_bytes, 52428800);
  EXPECT_EQ(g.memory_bus_width_bits, 6144);
  EXPECT_EQ(g.sm_clock_max_mhz, 1980);
  EXPECT_EQ(g.mem_clock_max_mhz, 3201);
  EXPECT_EQ(g.ecc_enabled, true);
  EXPECT_EQ(run.meta.host, "unknown");  // nvbench writes none

  // copy: 3 states x 3 figures; reduce: one state skipped, one without a batch time.
  EXPECT_EQ(run.results.size(), 11u);
  ASSERT_EQ(outcome.files[0].notes.size(), 1u);
  EXPECT_NE(outcome.files[0].notes[0].find("skipped by nvbench (Unsupported type"),
            std::string::npos);
  const auto times = with_id(run, "nvbench.gpu_time");
  ASSERT_EQ(times.size(), 4u);
  const Result& t = *times[0];
  EXPECT_EQ(text_param(t, "benchmark"), "copy");
  EXPECT_EQ(text_param(t, "state"), "T=F32 Elements=2^28");
  EXPECT_EQ(text_param(t, "tool"), "nvbench 0.1.0");
  EXPECT_EQ(t.devices, std::vector<int>{0});
  EXPECT_EQ(t.unit, "s");
  EXPECT_EQ(t.value, 5.1126e-4);  // nvbench's mean
  EXPECT_EQ(t.stats.mean, 5.1126e-4);
  EXPECT_EQ(t.stats.median, 5.1098e-4);
  EXPECT_EQ(t.stats.min, 5.0902e-4);
  EXPECT_EQ(t.stats.max, 5.3411e-4);
  EXPECT_EQ(t.stats.noise, 0.0041);
  EXPECT_EQ(t.stats.samples, 977);
  EXPECT_EQ(times[1]->devices, std::vector<int>{1});  // the state on GPU 1
  EXPECT_EQ(text_param(*times[1], "state"), "T=F32 Elements=2^28");

  const auto bw = with_id(run, "nvbench.bandwidth");
  ASSERT_EQ(bw.size(), 4u);
  EXPECT_EQ(bw[0]->unit, "B/s");
  EXPECT_DOUBLE_EQ(bw[0]->value, 2147483648 / 5.1126e-4);
  const auto batch = with_id(run, "nvbench.batch_gpu_time");
  ASSERT_EQ(batch.size(), 3u);
  EXPECT_EQ(batch[0]->value, 5.0871e-4);
  EXPECT_EQ(batch[0]->stats.samples, 1026);

  expect_reads_back(run);
}

// ---------------------------------------------------------------- nvbandwidth

TEST_F(ImportFiles, NvbandwidthTestsOfGpuvssDefinitionsGetItsIds) {
  const RunFile run = import_of("nvbandwidth", {kNvbwH200.string()}).run;
  EXPECT_EQ(run.meta.host, "hgx-h200-03");
  EXPECT_EQ(run.system.driver_version, "580.95.05");
  EXPECT_EQ(run.system.cuda_driver_version, "13.0");
  ASSERT_EQ(run.system.gpus.size(), 2u);
  EXPECT_EQ(run.system.gpus[1].name, "NVIDIA H200");
  EXPECT_EQ(run.system.gpus[1].pci_bus_id, "00000000:3B:00.0");
  EXPECT_EQ(run.results.size(), 20u);
  for (const Result& r : run.results)
    EXPECT_EQ(text_param(r, "tool"), "nvbandwidth v0.8") << r.id;

  const auto h2d = with_id(run, "host.h2d.pinned.nvbandwidth");
  ASSERT_EQ(h2d.size(), 2u);
  EXPECT_EQ(h2d[1]->value, 55.5208 * 1e9);
  EXPECT_EQ(h2d[1]->unit, "B/s");
  EXPECT_EQ(h2d[1]->devices, std::vector<int>{1});
  EXPECT_EQ(int_parameter(*h2d[1], "bytes"), 512 << 20);  // nvbandwidth 0.8's default -b
  EXPECT_EQ(text_param(*h2d[1], "memory"), "pinned");
  EXPECT_EQ(with_id(run, "host.d2h.pinned.nvbandwidth").size(), 2u);

  // Row: the GPU that issues the copy and writes; column: the GPU written to.
  const auto uni = with_id(run, "peer.ce.unidirectional.nvbandwidth");
  ASSERT_EQ(uni.size(), 2u);
  EXPECT_EQ(int_parameter(*uni[1], "src"), 1);
  EXPECT_EQ(int_parameter(*uni[1], "dst"), 0);
  EXPECT_EQ(uni[1]->value, 389.468 * 1e9);
  EXPECT_EQ(uni[1]->devices, (std::vector<int>{1, 0}));
  // Both ways: the total of the three matrices, once per pair as gpuvs measures it.
  const auto bi = with_id(run, "peer.ce.bidirectional.nvbandwidth");
  ASSERT_EQ(bi.size(), 1u);
  EXPECT_EQ(bi[0]->value, 779.101 * 1e9);
  EXPECT_EQ(int_parameter(*bi[0], "src"), 0);
  EXPECT_EQ(int_parameter(*bi[0], "dst"), 1);
  EXPECT_EQ(with_id(run, "peer.sm.unidirectional.nvbandwidth").size(), 2u);
  ASSERT_EQ(with_id(run, "peer.sm.bidirectional.nvbandwidth").size(), 1u);
  EXPECT_EQ(with_id(run, "peer.sm.bidirectional.nvbandwidth")[0]->value, 724.95 * 1e9);
  const auto lat = with_id(run, "peer.latency.nvbandwidth");
  ASSERT_EQ(lat.size(), 2u);
  EXPECT_EQ(lat[0]->unit, "s");
  EXPECT_DOUBLE_EQ(lat[0]->value, 851.226e-9);
  EXPECT_EQ(int_parameter(*lat[0], "working_set_bytes"), 2 << 20);

  // The others under their own names, in nvbandwidth's coordinates.
  const auto read = with_id(run, "nvbandwidth.device_to_device_memcpy_read_ce");
  ASSERT_EQ(read.size(), 2u);
  EXPECT_EQ(int_parameter(*read[0], "row"), 0);
  EXPECT_EQ(int_parameter(*read[0], "column"), 1);
  const auto local = with_id(run, "nvbandwidth.device_local_copy");
  ASSERT_EQ(local.size(), 2u);
  EXPECT_EQ(int_parameter(*local[1], "gpu"), 1);
  EXPECT_EQ(local[1]->value, 1981.1 * 1e9);
  const auto host_lat = with_id(run, "nvbandwidth.host_device_latency_sm");
  ASSERT_EQ(host_lat.size(), 2u);
  EXPECT_EQ(host_lat[0]->unit, "s");
  EXPECT_DOUBLE_EQ(host_lat[0]->value, 742.318e-9);

  expect_reads_back(run);
}

TEST_F(ImportFiles, NvbandwidthOlderFilesWaivedTestsAndFailures) {
  const ImportOutcome outcome = import_of("nvbandwidth", {kNvbwA100.string()});
  const RunFile& run = outcome.run;
  EXPECT_EQ(run.system.cuda_driver_version, "12.4");
  ASSERT_EQ(run.system.gpus.size(), 2u);  // from the matrices: 0.5 lists no devices
  EXPECT_EQ(run.system.gpus[0].name, "unknown");
  EXPECT_EQ(run.meta.host, "unknown");
  EXPECT_EQ(run.results.size(), 8u);
  const auto h2d = with_id(run, "host.h2d.pinned.nvbandwidth");
  ASSERT_EQ(h2d.size(), 2u);
  EXPECT_EQ(int_parameter(*h2d[0], "bytes"), 64 << 20);  // the default before 0.7
  // One matrix of a bidirectional test: not gpuvs's both-ways figure.
  EXPECT_TRUE(with_id(run, "peer.ce.bidirectional.nvbandwidth").empty());
  EXPECT_EQ(with_id(run, "nvbandwidth.device_to_device_bidirectional_memcpy_write_ce").size(), 2u);
  ASSERT_EQ(run.errors.size(), 1u);
  EXPECT_NE(run.errors[0].context.find("all_to_host_memcpy_sm"), std::string::npos);
  EXPECT_NE(run.errors[0].message.find("CUDA_ERROR_LAUNCH_FAILED"), std::string::npos);
  const std::vector<std::string>& notes = outcome.files[0].notes;
  EXPECT_TRUE(std::any_of(notes.begin(), notes.end(), [](const std::string& n) {
    return n.find("device_to_device_memcpy_read_sm: waived") != std::string::npos;
  }));

  ImportOptions o;
  o.tool = "nvbandwidth";
  o.files = {kNvbwA100.string()};
  o.buffer_bytes = int64_t{1} << 30;
  const RunFile gib = import_files(o, test_meta()).run;
  EXPECT_EQ(int_parameter(*with_id(gib, "host.h2d.pinned.nvbandwidth")[0], "bytes"), 1 << 30);
}

// The imported links meet gpuvs's own peer and host figures in compare.
TEST_F(ImportFiles, CompareReadsNvbandwidthBesideGpuvssLinks) {
  const RunFile imported = import_of("nvbandwidth", {kNvbwH200.string()}).run;
  const RunFile own = load_run_file(fs::path(GPUVS_SOURCE_DIR) / "data/reference/h200x2-run.json");
  std::vector<CompareInput> inputs(2);
  inputs[0].run = &own;
  inputs[1].run = &imported;
  const Comparison c =
      build_comparison(inputs, Catalogue::builtin(), Published::builtin(), CompareOptions{});
  const Row* nvlink = nullptr;
  for (const Row& r : c.rows)
    if (r.metric == "link.nvlink") nvlink = &r;
  ASSERT_TRUE(nvlink);
  ASSERT_TRUE(nvlink->cells[1].value);
  EXPECT_EQ(*nvlink->cells[1].value, 779.101 * 1e9);
  EXPECT_EQ(nvlink->cells[1].measured_by, "nvbandwidth v0.8");
  EXPECT_EQ(nvlink->cells[1].verdict, "same");  // 779 GB/s measured by both
}

// ---------------------------------------------------------------- refusals

TEST_F(ImportFiles, WhatIsNotTheToolsOutputIsRefusedNamingTheFile) {
  auto refusal = [&](const std::string& tool, const std::string& file) {
    return gpuvs_test::usage_error_of([&] { import_of(tool, {file}); });
  };
  const std::string empty = write("empty.log", "");
  const std::string garbage = write("garbage.log", "hello\nthis is not a log\n\x01\x02\xff\n");
  EXPECT_EQ(refusal("nccl-tests", empty),
            empty + ": the file is empty (give the text a *_perf binary printed)");
  EXPECT_NE(refusal("nccl-tests", garbage).find(garbage + ": not a nccl-tests log: no result row"),
            std::string::npos);
  EXPECT_NE(refusal("nccl-tests", kNvbench.string()).find(": not a nccl-tests log: it is JSON"),
            std::string::npos);
  EXPECT_EQ(refusal("nvbench", kNvbwH200.string()),
            kNvbwH200.string() +
                ": not nvbench's JSON: it is nvbandwidth's (gpuvs import nvbandwidth reads it)");
  EXPECT_EQ(refusal("nvbandwidth", kNvbench.string()),
            kNvbench.string() +
                ": not nvbandwidth's JSON: it is nvbench's (gpuvs import nvbench reads it)");
  const std::string run =
      (fs::path(GPUVS_SOURCE_DIR) / "tests/data/runs/valid_minimal.json").string();
  EXPECT_NE(refusal("nvbench", run).find("it is a gpuvs run file"), std::string::npos);
  EXPECT_NE(refusal("nvbandwidth", kAllReduce.string()).find(": not valid JSON at byte 0"),
            std::string::npos);
  EXPECT_NE(refusal("nvbench", empty).find(": not valid JSON at byte 0: the file is empty"),
            std::string::npos);
  const std::string missing = (dir_ / "missing.json").string();
  EXPECT_EQ(refusal("nvbench", missing), missing + ": cannot read: No such file or directory");
  EXPECT_EQ(refusal("nvbench", dir_.string()), dir_.string() + ": cannot read: Is a directory");
  // A log that failed before its first size has nothing to import, and says why.
  const std::string early = write("all_reduce.log",
                                  "# nThread 1 nGpus 2 minBytes 8 maxBytes 128 step: 2(factor)\n"
                                  "#  Rank  0 Group  0 Pid 1 on node device  0 [0000:19:00] NVIDIA "
                                  "H200\n"
                                  "node: Test NCCL failure common.cu:1 'unhandled system error'\n");
  EXPECT_NE(refusal("nccl-tests", early).find("without a result row: it failed: "),
            std::string::npos);
}

TEST_F(ImportFiles, BrokenFieldsOfToolJsonAreNamed) {
  auto refusal = [&](const std::string& tool, const std::string& text) {
    const std::string file = write(tool + ".json", text);
    return gpuvs_test::usage_error_of([&] { import_of(tool, {file}); });
  };
  std::string nvbench = read_text(kNvbench);
  nvbench.replace(nvbench.find("\"major\": 1"), 10, "\"major\": 2");
  EXPECT_NE(refusal("nvbench", nvbench).find("nvbench JSON version 2 (this gpuvs reads version 1"),
            std::string::npos);
  std::string device = read_text(kNvbench);
  device.replace(device.find("\"number_of_sms\": 132"), 20, "\"number_of_sms\": -1");
  EXPECT_NE(refusal("nvbench", device).find("devices[0].number_of_sms: integer -1 is out of range"),
            std::string::npos);
  std::string nvbw = read_text(kNvbwH200);
  nvbw.replace(nvbw.find("\"55.4712\""), 9, "\"fast\"");
  EXPECT_NE(
      refusal("nvbandwidth", nvbw)
          .find("nvbandwidth.testcases[0].bandwidth_matrix[0][0]: expected a figure or \"N/A\""),
      std::string::npos);
  // A buffer smaller than the default, which the JSON does not give: asked for.
  std::string small = read_text(kNvbwA100);
  small.replace(small.find("\"git_version\""), 13,
                "\"warning\" : \"NOTE: You have chosen a buffer size that is smaller than the "
                "default buffer size. It is suggested to use the default buffer size (64MB) to "
                "achieve maximal peak bandwidth.\",\n      \"git_version\"");
  EXPECT_NE(refusal("nvbandwidth", small).find("give --buffer-size"), std::string::npos);
}

TEST(ImportOptionsCheck, UnknownToolsAndOptionsOfAnotherTool) {
  auto refusal = [](const std::string& tool, std::vector<std::string> files, std::string op = {},
                    std::optional<int64_t> buffer = std::nullopt) {
    ImportOptions o;
    o.tool = tool;
    o.files = std::move(files);
    o.op = std::move(op);
    o.buffer_bytes = buffer;
    return gpuvs_test::usage_error_of([&] { check_import_options(o); });
  };
  EXPECT_EQ(refusal("ncl-tests", {"a"}),
            "import: unknown tool \"ncl-tests\"; did you mean: nccl-tests? Known: nccl-tests, "
            "nvbench, nvbandwidth");
  EXPECT_NE(refusal("nvbench", {"a"}, "all_reduce").find("--op goes with nccl-tests"),
            std::string::npos);
  EXPECT_NE(refusal("nccl-tests", {"a"}, "allreduce").find("did you mean: all_reduce"),
            std::string::npos);
  EXPECT_NE(
      refusal("nvbench", {"a"}, "", int64_t{1} << 20).find("--buffer-size goes with nvbandwidth"),
      std::string::npos);
  EXPECT_NE(refusal("nvbench", {}).find("give the files to import"), std::string::npos);
  EXPECT_EQ(import_tools(), (std::vector<std::string>{"nccl-tests", "nvbench", "nvbandwidth"}));
}

}  // namespace
}  // namespace gpuvs::import
