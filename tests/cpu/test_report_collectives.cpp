// Collective results in the terminal summary and the HTML report
// (src/report/collectives.h): the per-operation tables show the right figures in the
// right units, a result that is not ok is never a number, gpuvs is compared with
// nccl-tests as documented, the algorithm study merges sizes and recommends a variant
// only when it wins clearly (> 5 % and beyond noise), and runs without collectives
// render as before. Run files are built here by hand.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <string>
#include <string_view>

#include "core/run_file.h"
#include "report/collectives.h"
#include "report/html.h"
#include "report/summary.h"

// Points are written with designated initializers, naming only what differs from the
// defaults of PointSpec; GCC would warn about every member left out.
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"

namespace gpuvs {
namespace {

constexpr std::string_view kEvil = "<script>alert(1)</script>";

size_t count(std::string_view haystack, std::string_view needle) {
  size_t n = 0;
  for (size_t at = haystack.find(needle); at != std::string_view::npos;
       at = haystack.find(needle, at + needle.size()))
    ++n;
  return n;
}

// The line of `text` that starts (after alignment spaces) with `first_cell`.
std::string row(const std::string& text, const std::string& first_cell) {
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    const std::string line = text.substr(start, end - start);
    const size_t first = line.find_first_not_of(' ');
    if (first != std::string::npos && line.compare(first, first_cell.size(), first_cell) == 0 &&
        (line.size() == first + first_cell.size() || line[first + first_cell.size()] == ' '))
      return line;
    start = end + 1;
  }
  ADD_FAILURE() << "no row starting with '" << first_cell << "' in:\n" << text;
  return "";
}

struct PointSpec {
  std::string op = "all_reduce";
  int64_t bytes = 0;
  double time_s = 0;  // per operation
  int64_t ranks = 2;
  std::string algo = "default";
  std::string proto = "default";
  bool graph = false;
  bool nccl_tests = false;
  double noise = 0.002;
  std::optional<double> p99;
  Status status = Status::kOk;
  std::string reason;
};

double factor_of(const std::string& op, int64_t n) {
  if (op == "all_reduce") return 2.0 * (n - 1) / n;
  if (op == "all_gather" || op == "reduce_scatter" || op == "alltoall")
    return static_cast<double>(n - 1) / n;
  return 1;
}

// Both results of one point, as the collectives benchmark writes them.
void add_point(RunFile& run, const PointSpec& s) {
  const double factor = factor_of(s.op, s.ranks);
  std::map<std::string, ParamValue> p = {
      {"bytes", s.bytes}, {"ranks", s.ranks}, {"dtype", std::string("float32")}, {"algo", s.algo},
      {"proto", s.proto}, {"graph", s.graph}, {"busbw_factor", factor}};
  if (s.op == "all_reduce" || s.op == "reduce_scatter" || s.op == "reduce")
    p["redop"] = std::string("sum");
  if (s.nccl_tests) p["tool"] = std::string("nccl-tests 2.13.11");
  const std::string suffix = s.nccl_tests ? ".nccl_tests" : "";
  Result bw;
  bw.id = "collective." + s.op + ".busbw" + suffix;
  bw.name = s.op + " busbw";
  bw.devices = {0, 1};
  bw.parameters = p;
  bw.unit = "B/s";
  bw.value = static_cast<double>(s.bytes) / s.time_s * factor;
  bw.stats = {bw.value, bw.value, bw.value, bw.value, bw.value * s.noise, s.noise, 20, {}};
  bw.status = s.status;
  bw.status_reason = s.reason;
  Result t = bw;
  t.id = "collective." + s.op + ".time" + suffix;
  t.name = s.op + " time";
  t.unit = "s";
  t.value = s.time_s;
  t.stats = {s.time_s, s.time_s, s.time_s, s.time_s, s.time_s * s.noise, s.noise, 20, s.p99};
  run.results.push_back(bw);
  run.results.push_back(t);
}

GpuInfo gpu(int index) {
  GpuInfo g;
  g.index = index;
  g.name = "NVIDIA H200";
  g.uuid = "GPU-" + std::to_string(index);
  g.pci_bus_id = "00000000:19:00.0";
  g.compute_capability = "9.0";
  g.sm_count = 132;
  return g;
}

RunFile base_run() {
  RunFile run;
  run.meta.host = "node-1";
  run.meta.command = "bench";
  run.system.os = "Linux";
  run.system.nccl_version = "2.21.5";
  run.system.gpus = {gpu(0), gpu(1)};
  return run;
}

CommInfo comm_info(int n, std::string launch = "single-process") {
  CommInfo c;
  c.launch = std::move(launch);
  c.world_size = n;
  for (int r = 0; r < n; ++r)
    c.ranks.push_back({r, "node-1", 4242, r, r, "NVIDIA H200", "GPU-" + std::to_string(r), ""});
  c.timeout_s = 60;
  return c;
}

// A run of other benchmarks only: what render_summary printed before collectives.
RunFile memory_run() {
  RunFile run = base_run();
  Result r;
  r.id = "memory.hbm.copy";
  r.name = "HBM copy";
  r.devices = {0};
  r.parameters = {{"bytes", int64_t{1} << 30}};
  r.value = 4.25e12;
  r.unit = "B/s";
  r.stats = {4.25e12, 4.2e12, 4.3e12, 4.25e12, 4.25e9, 0.001, 12, {}};
  run.results.push_back(r);
  Result bad = r;
  bad.id = "memory.hbm.triad";
  bad.name = "HBM triad";
  bad.status = Status::kInvalid;
  bad.status_reason = "element 17 is 3, expected 4";
  run.results.push_back(bad);
  run.errors.push_back({"bench memory.latency on GPU 0", "out of memory"});
  return run;
}

TEST(ReportCollectives, NothingWithoutCollectiveResults) {
  const RunFile run = memory_run();
  EXPECT_EQ(render_collectives(run), "");
  EXPECT_TRUE(study_winners(run).empty());
  EXPECT_EQ(render_collectives_html(run, "collectives", "Collectives", {}), "");
  for (const Result& r : run.results)
    EXPECT_FALSE(is_collective_result(r));
}

TEST(ReportCollectives, SummaryWithoutCollectivesUnchanged) {
  // The text render_summary gave for this run before collectives existed (printed by
  // the summary.cpp of the commit before them).
  const std::string before =
      "result             GPU         value   noise   n  of peak  SM MHz  status\n"
      "-----------------------------------------------------------------------------------------"
      "--------------\n"
      "HBM copy @ 1 GiB   0 H200  4.25 TB/s  0.10 %  12  -             -  ok\n"
      "HBM triad @ 1 GiB  0 H200          -       -  12  -             -  invalid: element 17 "
      "is 3, expected 4\n"
      "error: bench memory.latency on GPU 0: out of memory\n";
  EXPECT_EQ(render_summary(memory_run()), before);
}

TEST(ReportCollectives, OpTableFiguresAndUnits) {
  RunFile run = base_run();
  run.comm = comm_info(2);
  run.comm->nccl_env = {{"NCCL_NVLS_ENABLE", "0"}};
  add_point(run, {.bytes = 8, .time_s = 10e-6, .p99 = 12.5e-6});
  add_point(run, {.bytes = 1 << 20, .time_s = 50e-6, .p99 = 51e-6});
  add_point(run, {.bytes = 8, .time_s = 6.25e-6, .graph = true});
  // 4 ranks: busbw = algbw x 3/4.
  add_point(run, {.op = "all_gather", .bytes = 4 << 20, .time_s = 100e-6, .ranks = 4});
  const std::string out = render_collectives(run);

  EXPECT_NE(out.find("collectives: 2 ranks, single-process launch, on node-1 (2× H200); NCCL "
                     "2.21.5; timeout 60 s\n"),
            std::string::npos)
      << out;
  EXPECT_NE(out.find("NCCL environment: NCCL_NVLS_ENABLE=0\n"), std::string::npos);
  EXPECT_NE(out.find("all_reduce (2 ranks; float32, sum; busbw = algbw × 1)"), std::string::npos)
      << out;
  EXPECT_NE(out.find("all_gather (4 ranks; float32; busbw = algbw × 0.75)"), std::string::npos);
  // all_reduce comes before all_gather (nccl-tests' order), sizes ascending.
  EXPECT_LT(out.find("all_reduce ("), out.find("all_gather ("));
  EXPECT_NE(out.find("time µs"), std::string::npos);
  EXPECT_NE(out.find("p99 µs"), std::string::npos);
  EXPECT_NE(out.find("algbw GB/s"), std::string::npos);
  EXPECT_NE(out.find("busbw GB/s"), std::string::npos);
  EXPECT_NE(out.find("graph µs"), std::string::npos);
  EXPECT_EQ(out.find("nccl-tests GB/s"), std::string::npos) << "no nccl-tests columns without it";
  EXPECT_EQ(out.find("vs nccl-tests"), std::string::npos);

  // size, time, p99, algbw, busbw, graph time
  EXPECT_EQ(row(out, "8 B"), "  8 B    10.00   12.50        0.00        0.00      6.25");
  // 1 MiB / 50 µs = 20.97 GB/s; no graph result at that size.
  EXPECT_EQ(row(out, "1 MiB"), "1 MiB    50.00   51.00       20.97       20.97         -");
  // 4 MiB / 100 µs = 41.94 GB/s algbw, x 3/4 = 31.46 GB/s busbw; p99 unknown.
  EXPECT_EQ(row(out, "4 MiB"), "4 MiB   100.00       -       41.94       31.46");
}

TEST(ReportCollectives, NotOkIsNeverANumber) {
  RunFile run = base_run();
  add_point(run, {.bytes = 4096,
                  .time_s = 123.456e-6,
                  .p99 = 130e-6,
                  .status = Status::kInvalid,
                  .reason = "rank 1: element 17 is 3, expected 4"});
  add_point(run, {.bytes = 8192, .time_s = 7.77e-6, .algo = "Ring", .proto = "LL"});
  add_point(run, {.bytes = 8192, .time_s = 9.99e-6});
  add_point(run, {.bytes = 8192,
                  .time_s = 4.44e-6,
                  .algo = "NVLS",
                  .proto = "LL",
                  .status = Status::kUnsupported,
                  .reason = "NCCL: ncclInvalidUsage"});
  add_point(run, {.bytes = 8192,
                  .time_s = 1e-9,
                  .algo = "Tree",
                  .proto = "LL",
                  .status = Status::kInvalid,
                  .reason = "mismatch at element 3"});
  add_point(run, {.bytes = 16384,
                  .time_s = 5.55e-6,
                  .graph = true,
                  .status = Status::kError,
                  .reason = "cudaGraphLaunch failed"});
  const std::string out = render_collectives(run);
  for (std::string_view number : {"123.46", "130.00", "0.03", "4.44", "0.00 µs", "5.55"})
    EXPECT_EQ(out.find(number), std::string::npos) << number << " in\n" << out;
  const std::string bad = row(out, "4 KiB");
  EXPECT_NE(bad.find("invalid"), std::string::npos);
  EXPECT_NE(bad.find("invalid: rank 1: element 17 is 3, expected 4"), std::string::npos) << bad;
  EXPECT_NE(row(out, "16 KiB").find("graph error: cudaGraphLaunch failed"), std::string::npos);
  EXPECT_NE(out.find("\nnot measured: NVLS/LL (n/a: NCCL: ncclInvalidUsage)\n"), std::string::npos)
      << out;
  EXPECT_NE(out.find("\nTree/LL at 8 KiB: invalid: mismatch at element 3\n"), std::string::npos);

  // The invalid and unsupported variants, though "faster", never win.
  const auto study = study_winners(run);
  ASSERT_EQ(study.size(), 1u);
  ASSERT_EQ(study[0].points.size(), 1u);  // 4 KiB has no ok variant at all
  EXPECT_EQ(study[0].points[0].algo, "Ring");
  EXPECT_EQ(study[0].points[0].proto, "LL");
}

TEST(ReportCollectives, NcclTestsDifference) {
  RunFile run = base_run();
  add_point(run, {.bytes = 8, .time_s = 10e-6});
  add_point(run, {.bytes = 8, .time_s = 9.5e-6, .nccl_tests = true});
  add_point(run, {.bytes = 512 << 10, .time_s = 20e-6});
  add_point(run, {.bytes = 512 << 10, .time_s = 21e-6, .nccl_tests = true});
  add_point(run, {.bytes = 4 << 20, .time_s = 100e-6});
  add_point(run, {.bytes = 4 << 20, .time_s = 110e-6, .nccl_tests = true});
  add_point(run, {.bytes = 8, .time_s = 6e-6, .graph = true});
  add_point(run, {.bytes = 8, .time_s = 5e-6, .graph = true, .nccl_tests = true});
  const std::string out = render_collectives(run);
  EXPECT_NE(out.find("all_reduce (2 ranks; float32, sum; busbw = algbw × 1), beside nccl-tests "
                     "2.13.11"),
            std::string::npos)
      << out;
  EXPECT_NE(out.find("vs nccl-tests: busbw difference at ≥ 1 MiB"), std::string::npos);
  // Below 1 MiB: gpuvs time minus nccl-tests time (+: gpuvs slower).
  EXPECT_NE(row(out, "8 B").find("+0.50 µs"), std::string::npos) << out;
  EXPECT_NE(row(out, "512 KiB").find("-1.00 µs"), std::string::npos) << out;
  // From 1 MiB: busbw in % (+: gpuvs faster): 110 µs / 100 µs - 1 = +10 %.
  const std::string big = row(out, "4 MiB");
  EXPECT_NE(big.find("+10.0 %"), std::string::npos) << big;
  EXPECT_NE(big.find("41.94"), std::string::npos);  // gpuvs busbw
  EXPECT_NE(big.find("38.13"), std::string::npos);  // nccl-tests busbw: 4 MiB / 110 µs
  EXPECT_NE(big.find("110.00"), std::string::npos);
  // CUDA graphs against nccl-tests -G: 6 µs vs 5 µs.
  EXPECT_NE(out.find("nccl-tests graph µs"), std::string::npos);
  EXPECT_NE(row(out, "8 B").find("+1.00 µs"), std::string::npos) << out;
}

// A sweep where Tree/LL wins clearly at small sizes, leads without significance in the
// middle, and the default is as good as anything at large sizes.
RunFile study_run() {
  RunFile run = base_run();
  run.comm = comm_info(2);
  auto size = [&](int64_t bytes, double t_default, std::vector<PointSpec> others,
                  double default_noise = 0.002) {
    add_point(run, {.bytes = bytes, .time_s = t_default, .noise = default_noise});
    for (PointSpec s : others) {
      s.bytes = bytes;
      add_point(run, s);
    }
  };
  // 1.9x: clear.
  for (int64_t b : {8, 64, 512})
    size(b, 19e-6,
         {{.time_s = 10e-6, .algo = "Tree", .proto = "LL"},
          {.time_s = 15e-6, .algo = "Ring", .proto = "LL128"},
          {.time_s = 20e-6, .algo = "Ring", .proto = "Simple"}});
  // 1.04x: above 3 %, not above 5 %.
  size(4096, 10.4e-6,
       {{.time_s = 10e-6, .algo = "Tree", .proto = "LL"},
        {.time_s = 12e-6, .algo = "Ring", .proto = "LL128"}});
  // 1.10x, but the variant's noise (12 %) is above the 10 % gap.
  size(32768, 11e-6,
       {{.time_s = 10e-6, .algo = "Tree", .proto = "LL", .noise = 0.12},
        {.time_s = 12e-6, .algo = "Ring", .proto = "LL128"}});
  // 1.02x: the default is within 3 %.
  size(262144, 10.2e-6,
       {{.time_s = 11e-6, .algo = "Tree", .proto = "LL"},
        {.time_s = 10e-6, .algo = "Ring", .proto = "LL128"}});
  // The default is the best.
  size(2 << 20, 50e-6,
       {{.time_s = 80e-6, .algo = "Tree", .proto = "LL"},
        {.time_s = 51e-6, .algo = "Ring", .proto = "Simple"}});
  return run;
}

TEST(ReportCollectives, StudyMergesRangesAndRecommendsOnlyClearWins) {
  const RunFile run = study_run();
  const auto study = study_winners(run);
  ASSERT_EQ(study.size(), 1u);
  const StudyOp& s = study[0];
  EXPECT_EQ(s.op, "all_reduce");
  EXPECT_EQ(s.ranks, 2);
  EXPECT_EQ(s.variants, 4);
  ASSERT_EQ(s.points.size(), 7u);
  EXPECT_EQ(s.points[0].algo, "Tree");
  EXPECT_EQ(s.points[0].proto, "LL");
  EXPECT_NEAR(*s.points[0].gain, 1.9, 1e-9);
  EXPECT_TRUE(s.points[0].clear);
  EXPECT_FALSE(s.points[3].clear);  // 4 KiB: 1.04x
  EXPECT_FALSE(s.points[4].clear);  // 32 KiB: noise above the gap
  EXPECT_NEAR(*s.points[4].gain, 1.1, 1e-9);
  EXPECT_EQ(s.points[6].algo, "default");
  EXPECT_DOUBLE_EQ(*s.points[6].gain, 1.0);

  ASSERT_EQ(s.ranges.size(), 3u);
  EXPECT_EQ(s.ranges[0].min_bytes, 8);
  EXPECT_EQ(s.ranges[0].max_bytes, 512);
  EXPECT_EQ(s.ranges[0].verdict, StudyVerdict::kClear);
  EXPECT_EQ(variant_label(s.ranges[0].algo, s.ranges[0].proto), "Tree/LL");
  EXPECT_EQ(s.ranges[1].min_bytes, 4096);
  EXPECT_EQ(s.ranges[1].max_bytes, 32768);
  EXPECT_EQ(s.ranges[1].verdict, StudyVerdict::kUnclear);
  EXPECT_EQ(variant_label(s.ranges[1].algo, s.ranges[1].proto), "Tree/LL");
  EXPECT_NEAR(*s.ranges[1].min_gain, 1.04, 1e-9);
  EXPECT_NEAR(*s.ranges[1].max_gain, 1.1, 1e-9);
  EXPECT_EQ(s.ranges[2].min_bytes, 262144);
  EXPECT_EQ(s.ranges[2].max_bytes, 2 << 20);
  EXPECT_EQ(s.ranges[2].verdict, StudyVerdict::kDefault);
  EXPECT_EQ(s.ranges[2].best, (std::vector<std::string>{"Ring/LL128", "default"}));

  EXPECT_EQ(s.recommendation,
            "NCCL_ALGO=Tree NCCL_PROTO=LL for all_reduce messages of 8 B – 512 B (1.90× the "
            "default's busbw); at other sizes leave NCCL_ALGO/NCCL_PROTO unset");

  const std::string out = render_collectives(run);
  EXPECT_NE(out.find("algorithm study: all_reduce (2 ranks), best busbw per size among 4 "
                     "variants"),
            std::string::npos)
      << out;
  EXPECT_EQ(row(out, "8 B – 512 B"),
            "8 B – 512 B      Tree/LL                      1.90×  beats the default by > 5 %, "
            "beyond noise");
  const std::string middle = row(out, "4 KiB – 32 KiB");
  EXPECT_NE(middle.find("  Tree/LL  "), std::string::npos) << middle;
  EXPECT_NE(middle.find("  1.04–1.10×  ahead, but by ≤ 5 % or within noise: not significant"),
            std::string::npos)
      << middle;
  const std::string large = row(out, "256 KiB – 2 MiB");
  EXPECT_NE(large.find("  default ≈ Ring/LL128  "), std::string::npos) << large;
  EXPECT_NE(large.find("  1.00–1.02×  default is within 3 %: leave NCCL_ALGO/NCCL_PROTO unset"),
            std::string::npos)
      << large;
  EXPECT_NE(out.find("recommendation: NCCL_ALGO=Tree NCCL_PROTO=LL for all_reduce"),
            std::string::npos);
}

TEST(ReportCollectives, StudyRecommendsDefaultWhenNothingWinsClearly) {
  RunFile run = base_run();
  // 8 %, but the default's noise (9 %) is above the gap; 4 %; 6 % at one size only
  // with a 2 % noise: that one size is a clear win, the others are not.
  add_point(run, {.bytes = 1024, .time_s = 10.8e-6, .noise = 0.09});
  add_point(run, {.bytes = 1024, .time_s = 10e-6, .algo = "Ring", .proto = "LL"});
  add_point(run, {.bytes = 2048, .time_s = 10.4e-6});
  add_point(run, {.bytes = 2048, .time_s = 10e-6, .algo = "Ring", .proto = "LL"});
  auto study = study_winners(run);
  ASSERT_EQ(study.size(), 1u);
  EXPECT_FALSE(study[0].points[0].clear);
  EXPECT_FALSE(study[0].points[1].clear);
  ASSERT_EQ(study[0].ranges.size(), 1u);
  EXPECT_EQ(study[0].ranges[0].verdict, StudyVerdict::kUnclear);
  EXPECT_EQ(study[0].recommendation,
            "leave NCCL_ALGO/NCCL_PROTO unset: no variant beats the default by more than 5 % "
            "beyond noise");

  // A user's own NCCL_ALGO is the default here, and is what to keep.
  run.comm = comm_info(2);
  run.comm->nccl_env = {{"NCCL_ALGO", "Ring"}};
  study = study_winners(run);
  EXPECT_EQ(study[0].recommendation.rfind("keep NCCL_ALGO=Ring as set: ", 0), 0u)
      << study[0].recommendation;

  // A proto-only variant recommends only NCCL_PROTO.
  RunFile proto = base_run();
  add_point(proto, {.bytes = 64, .time_s = 20e-6});
  add_point(proto, {.bytes = 64, .time_s = 10e-6, .proto = "LL"});
  EXPECT_EQ(study_winners(proto)[0].recommendation,
            "NCCL_PROTO=LL for all_reduce messages of 64 B (2.00× the default's busbw); at other "
            "sizes leave NCCL_ALGO/NCCL_PROTO unset");

  // Without a valid default nothing is recommended.
  RunFile none = base_run();
  add_point(none, {.bytes = 64, .time_s = 20e-6, .status = Status::kInvalid, .reason = "x"});
  add_point(none, {.bytes = 64, .time_s = 10e-6, .algo = "Tree", .proto = "LL"});
  study = study_winners(none);
  ASSERT_EQ(study.size(), 1u);
  EXPECT_EQ(study[0].ranges[0].verdict, StudyVerdict::kNoDefault);
  EXPECT_EQ(study[0].recommendation, "none: the default has no valid result to compare with");
}

TEST(ReportCollectives, StudyBreaksRangesAtGapsAndWinners) {
  RunFile run = base_run();
  // Tree/LL clear at 8 B and 32 B, but nothing valid at 16 B: two ranges, not one.
  for (int64_t b : {8, 16, 32}) {
    const Status st = b == 16 ? Status::kInvalid : Status::kOk;
    add_point(run, {.bytes = b, .time_s = 20e-6, .status = st, .reason = "bad"});
    add_point(run, {.bytes = b,
                    .time_s = 10e-6,
                    .algo = "Tree",
                    .proto = "LL",
                    .status = st,
                    .reason = "bad"});
  }
  // Then Ring/LL wins clearly: a new range with its own recommendation.
  add_point(run, {.bytes = 64, .time_s = 20e-6});
  add_point(run, {.bytes = 64, .time_s = 10e-6, .algo = "Ring", .proto = "LL"});
  add_point(run, {.bytes = 64, .time_s = 15e-6, .algo = "Tree", .proto = "LL"});
  const auto study = study_winners(run);
  ASSERT_EQ(study.size(), 1u);
  const auto& r = study[0].ranges;
  ASSERT_EQ(r.size(), 3u);
  EXPECT_EQ(size_range_label(r[0].min_bytes, r[0].max_bytes), "8 B");
  EXPECT_EQ(size_range_label(r[1].min_bytes, r[1].max_bytes), "32 B");
  EXPECT_EQ(size_range_label(r[2].min_bytes, r[2].max_bytes), "64 B");
  EXPECT_EQ(r[2].algo, "Ring");
  EXPECT_EQ(study[0].recommendation,
            "NCCL_ALGO=Tree NCCL_PROTO=LL for all_reduce messages of 8 B (2.00× the default's "
            "busbw); NCCL_ALGO=Tree NCCL_PROTO=LL for all_reduce messages of 32 B (2.00× the "
            "default's busbw); NCCL_ALGO=Ring NCCL_PROTO=LL for all_reduce messages of 64 B "
            "(2.00× the default's busbw); at other sizes leave NCCL_ALGO/NCCL_PROTO unset");
  EXPECT_EQ(study[0].invalid.size(), 2u);  // default and Tree/LL at 16 B
}

TEST(ReportCollectives, SummaryListsCollectivesOnceInTheirTables) {
  RunFile run = memory_run();
  run.errors.clear();
  for (int64_t b = 8; b <= (1 << 20); b *= 2)
    add_point(run, {.bytes = b, .time_s = 10e-6 + static_cast<double>(b) / 100e9});
  const std::string out = render_summary(run);
  EXPECT_EQ(count(out, "all_reduce busbw"), 0u) << out;  // no generic rows
  EXPECT_EQ(count(out, "all_reduce time"), 0u);
  EXPECT_NE(out.find("HBM copy @ 1 GiB"), std::string::npos);
  EXPECT_NE(out.find("\ncollectives: 2 ranks, on node-1; NCCL 2.21.5\n"), std::string::npos) << out;
  EXPECT_EQ(count(out, "\n  1 MiB "), 1u) << out;

  // A run of collectives only has no empty generic table.
  RunFile only = base_run();
  add_point(only, {.bytes = 8, .time_s = 10e-6});
  only.errors.push_back({"bench collectives", "rank 1 did not arrive within 60 s"});
  const std::string o = render_summary(only);
  EXPECT_EQ(o.rfind("collectives: ", 0), 0u) << o;
  EXPECT_NE(o.find("error: bench collectives: rank 1 did not arrive within 60 s\n"),
            std::string::npos);
}

// What the benchmarks write when an op or a variant is not measured at all: one result
// without a size (src/bench/collectives/nccl.cpp, algorithms.cpp).
Result unsized(std::string op, std::string algo, std::string proto, std::string why) {
  Result r;
  r.id = "collective." + op + ".busbw";
  r.name = op + " bus bandwidth";
  r.unit = "B/s";
  r.parameters = {{"algo", algo}, {"proto", proto}, {"ranks", int64_t{2}}, {"graph", false}};
  if (algo == "default" && proto == "default") r.parameters.clear();
  r.status = Status::kUnsupported;
  r.status_reason = std::move(why);
  return r;
}

TEST(ReportCollectives, ResultsWithoutSize) {
  // One GPU: the benchmark says why there is nothing.
  RunFile one = base_run();
  one.results.push_back(unsized("all_reduce", "default", "default",
                                "collectives need 2 or more GPUs; this process drives 1"));
  EXPECT_TRUE(is_collective_result(one.results[0]));
  const std::string out = render_summary(one);
  EXPECT_EQ(out,
            "collectives: on node-1; NCCL 2.21.5\n"
            "\n"
            "all_reduce\n"
            "n/a: collectives need 2 or more GPUs; this process drives 1\n");
  EXPECT_TRUE(study_winners(one).empty());

  // Variants NCCL refused (or that were not tried) are listed once per op, by reason.
  RunFile run = study_run();
  run.results.push_back(
      unsized("all_reduce", "NVLS", "LL", "not tried: NCCL_NVLS_ENABLE=0 in the environment"));
  run.results.push_back(
      unsized("all_reduce", "NVLS", "Simple", "not tried: NCCL_NVLS_ENABLE=0 in the environment"));
  run.results.push_back(
      unsized("all_reduce", "CollnetDirect", "LL",
              "NCCL refused NCCL_ALGO=CollnetDirect NCCL_PROTO=LL: invalid usage"));
  const auto study = study_winners(run);
  ASSERT_EQ(study.size(), 1u);
  EXPECT_EQ(study[0].variants, 7);
  EXPECT_EQ(study[0].ranges.size(), 3u);  // unchanged by the unmeasured variants
  const std::string text = render_collectives(run);
  EXPECT_NE(text.find("\nnot measured: NVLS/LL, NVLS/Simple (n/a: not tried: NCCL_NVLS_ENABLE=0 in "
                      "the environment)\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("\nnot measured: CollnetDirect/LL (n/a: NCCL refused "
                      "NCCL_ALGO=CollnetDirect NCCL_PROTO=LL: invalid usage)\n"),
            std::string::npos);
}

TEST(ReportCollectives, SweepAndStudyInOneRun) {
  // `gpuvs bench collectives`: collectives.nccl sweeps the default at every power of two,
  // then collectives.algorithms measures the default again with each variant, at every
  // fourth power of two. The table shows the sweep's default, the study compares with
  // its own; sizes of the sweep alone do not split the study's ranges.
  RunFile run = base_run();
  for (int64_t b = 8; b <= 512; b *= 2)
    add_point(run, {.bytes = b, .time_s = 20e-6});
  for (int64_t b : {8, 32, 128, 512}) {
    add_point(run, {.bytes = b, .time_s = 22e-6});
    add_point(run, {.bytes = b, .time_s = 11e-6, .algo = "Tree", .proto = "LL"});
  }
  const std::string out = render_collectives(run);
  EXPECT_NE(row(out, "16 B").find("20.00"), std::string::npos);
  EXPECT_NE(row(out, "32 B").find("20.00"), std::string::npos) << out;
  EXPECT_EQ(out.find("22.00"), std::string::npos);
  const auto study = study_winners(run);
  ASSERT_EQ(study.size(), 1u);
  ASSERT_EQ(study[0].points.size(), 4u);
  ASSERT_EQ(study[0].ranges.size(), 1u);
  EXPECT_EQ(size_range_label(study[0].ranges[0].min_bytes, study[0].ranges[0].max_bytes),
            "8 B – 512 B");
  EXPECT_NEAR(*study[0].points[0].gain, 2.0, 1e-9);  // 22 / 11, not 20 / 11
}

TEST(ReportCollectives, HtmlSectionChartsAndEscaping) {
  RunFile run = study_run();
  for (int64_t b : {8, 64, 512})
    add_point(run, {.bytes = b, .time_s = 20e-6, .nccl_tests = true});
  run.comm->ranks[1].host = std::string(kEvil);
  run.comm->nccl_env = {{"NCCL_DEBUG", "<b>WARN</b>"}};
  add_point(run, {.op = std::string(kEvil), .bytes = 8, .time_s = 1e-5});
  HtmlReportInput in;
  in.title = "collectives";
  in.runs = {&run};
  const std::string html = render_html(in, "window.Chart = function () {};");

  EXPECT_NE(html.find("<section class=\"collectives\" id=\"collectives\">"), std::string::npos);
  EXPECT_NE(html.find("<h3>all_reduce (2 ranks; float32, sum; busbw = algbw × 1), beside "
                      "nccl-tests 2.13.11</h3>"),
            std::string::npos);
  EXPECT_NE(html.find("<th>busbw GB/s</th>"), std::string::npos);
  EXPECT_NE(html.find("<td class=\"num\">1.90×</td>"), std::string::npos);
  EXPECT_NE(html.find("NCCL_ALGO=Tree NCCL_PROTO=LL for all_reduce messages of 8 B – 512 B"),
            std::string::npos);
  // Escaped everywhere: hosts, environment, an op name from the file.
  EXPECT_EQ(html.find(kEvil), std::string::npos);
  EXPECT_NE(html.find("&lt;script&gt;alert(1)&lt;/script&gt;"), std::string::npos);
  EXPECT_NE(html.find("NCCL_DEBUG=&lt;b&gt;WARN&lt;/b&gt;"), std::string::npos);
  // Not listed again in the run's generic results table, nor as generic sweeps.
  EXPECT_EQ(html.find("collective.all_reduce"), std::string::npos);
  EXPECT_EQ(html.find("id=\"sweeps\""), std::string::npos);
  EXPECT_NE(html.find("collective results are shown by operation in the Collectives section"),
            std::string::npos);

  // Charts: busbw vs size (gpuvs and nccl-tests) and busbw by variant, log2 size axis.
  const std::string open = "<script type=\"application/json\" id=\"gpuvs-data\">";
  const size_t start = html.find(open) + open.size();
  const auto data =
      nlohmann::json::parse(html.substr(start, html.find("</script>", start) - start));
  ASSERT_EQ(data["charts"].size(), 2u);
  const auto& bw = data["charts"][0];
  EXPECT_EQ(bw["title"], "Bus bandwidth vs size: all_reduce (2 ranks)");
  EXPECT_EQ(bw["x_unit"], "B");
  EXPECT_EQ(bw["x_log"], true);
  EXPECT_EQ(bw["y_unit"], "B/s");
  ASSERT_EQ(bw["series"].size(), 2u);
  EXPECT_EQ(bw["series"][0]["label"], "gpuvs");
  EXPECT_EQ(bw["series"][0]["points"].size(), 7u);
  EXPECT_EQ(bw["series"][1]["label"], "nccl-tests 2.13.11");
  EXPECT_EQ(bw["series"][1]["points"].size(), 3u);
  EXPECT_EQ(data["charts"][1]["series"].size(), 4u);  // default and three variants
  EXPECT_EQ(count(html, "<canvas id=\"chart-"), 2u);
  EXPECT_NE(html.find("data-charts-expected=\"2\""), std::string::npos);

  // Without the chart library: the tables, no chart container.
  const std::string plain = render_html(in, "");
  EXPECT_NE(plain.find("id=\"collectives\""), std::string::npos);
  EXPECT_EQ(count(plain, "<canvas id=\"chart-"), 0u);
}

TEST(ReportCollectives, HtmlOfSeveralRunsHasOneSectionEach) {
  RunFile a = study_run(), b = memory_run(), c = study_run();
  HtmlReportInput in;
  in.runs = {&a, &b, &c};
  const std::string html = render_html(in, "");
  EXPECT_NE(html.find("id=\"collectives-run-1\""), std::string::npos);
  EXPECT_EQ(html.find("id=\"collectives-run-2\""), std::string::npos);
  EXPECT_NE(html.find("id=\"collectives-run-3\""), std::string::npos);
  EXPECT_NE(html.find("<h2>Collectives: run 3</h2>"), std::string::npos);
}

}  // namespace
}  // namespace gpuvs
