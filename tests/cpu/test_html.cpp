// The HTML report (src/report/html.h): structure, escaping of every string that comes
// from a file, the JSON island, the charts-unavailable fallback, one chart container
// per metric with data, sweeps and the roofline, the utilization timelines (and their
// terminal lines), and one fingerprint section per GPU.
// Comparisons are built by hand: these tests do not depend on build_comparison.
#include <gtest/gtest.h>

#include <algorithm>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "compare_test_util.h"
#include "core/embedded.h"
#include "core/run_file.h"
#include "report/html.h"
#include "report/html_timeline.h"
#include "report/summary.h"

namespace gpuvs {
namespace {

constexpr std::string_view kEvil = "<script>alert(1)</script>";
// Stands in for Chart.js: render_html only inlines it.
constexpr std::string_view kFakeLibrary = "window.Chart = function () {};";
constexpr std::string_view kNoCharts = "Charts are not available: this gpuvs was built";

size_t count(std::string_view haystack, std::string_view needle) {
  size_t n = 0;
  for (size_t at = haystack.find(needle); at != std::string_view::npos;
       at = haystack.find(needle, at + needle.size()))
    ++n;
  return n;
}

nlohmann::json island(const std::string& html) {
  const std::string open = "<script type=\"application/json\" id=\"gpuvs-data\">";
  const size_t start = html.find(open);
  EXPECT_NE(start, std::string::npos);
  const size_t body = start + open.size();
  const size_t end = html.find("</script>", body);
  EXPECT_NE(end, std::string::npos);
  return nlohmann::json::parse(html.substr(body, end - body));  // throws if not JSON
}

int body_attr(const std::string& html, std::string_view name) {
  const std::string key = std::string(name) + "=\"";
  const size_t at = html.find(key, html.find("<body"));
  EXPECT_NE(at, std::string::npos) << name;
  return std::stoi(html.substr(at + key.size()));
}

GpuInfo gpu(int index, std::string name) {
  GpuInfo g;
  g.index = index;
  g.name = std::move(name);
  g.uuid = "GPU-" + std::to_string(index);
  g.pci_bus_id = "00000000:19:00.0";
  g.compute_capability = "9.0";
  g.sm_count = 132;
  g.memory_total_bytes = 150109880320;
  g.l2_bytes = 62914560;
  g.sm_clock_mhz = 1980;  // the other optional fields stay null: shown as "n/a"
  return g;
}

Result result(std::string id, double value, std::string unit, std::map<std::string, ParamValue> p) {
  Result r;
  r.id = std::move(id);
  r.name = r.id;
  r.devices = {0};
  r.parameters = std::move(p);
  r.value = value;
  r.unit = std::move(unit);
  r.stats = {value, value, value, value, 0, 0, 1, value};
  return r;
}

RunFile two_gpu_run() {
  RunFile run;
  run.meta.host = "node-1";
  run.meta.command = "run";
  run.system.os = "Linux";
  run.system.gpus = {gpu(0, "NVIDIA H200"), gpu(1, std::string(kEvil))};
  return run;
}

// A measured H200 (baseline) against the A100's datasheet, as build_comparison makes
// them: across bases no ratio, the datasheets' ratio instead; a datasheet row of both.
Comparison comparison() {
  Comparison c;
  c.columns = {column_of("H200", "NVIDIA H200", "h200-sxm", true),
               column_of("A100", "A100-SXM4-80GB", "a100", false)};
  Row bw = row_of("memory.bandwidth", "Memory bandwidth", "B/s");
  Cell measured;
  measured.value = 4.25e12;
  measured.source = Source::kMeasured;
  measured.source_ref = "run.json, memory.hbm.copy";
  measured.datasheet = 4.8e12;
  measured.of_datasheet = 0.885;
  measured.noise = 0.002;
  measured.verdict = "baseline";
  measured.basis = "measured";
  Cell sheet;
  sheet.value = 2.039e12;
  sheet.datasheet = 2.039e12;
  sheet.source = Source::kDatasheet;
  sheet.source_ref = "https://example.com/a100.pdf";
  sheet.verdict = "different basis";
  sheet.datasheet_ratio = 2.039 / 4.8;
  bw.cells = {measured, sheet};
  Row size = row_of("memory.size", "Memory size", "B");
  Cell fallback;  // the run did not measure it: its datasheet, marked
  fallback.value = 141e9;
  fallback.datasheet = 141e9;
  fallback.source = Source::kDatasheet;
  fallback.fallback = true;
  fallback.verdict = "baseline";
  fallback.basis = "datasheet";
  fallback.note = "datasheet: the run did not measure it";
  Cell a100_size;
  a100_size.value = 80e9;
  a100_size.datasheet = 80e9;
  a100_size.source = Source::kDatasheet;
  a100_size.ratio = 80.0 / 141;
  a100_size.diff_pct = (80.0 / 141 - 1) * 100;
  a100_size.verdict = "lower";
  a100_size.basis = "datasheet";
  size.cells = {fallback, a100_size};
  Row fp = row_of("compute.fp64", "FP64", "FLOP/s");
  Cell invalid;
  invalid.value = 9.99e13;  // must never be shown
  invalid.invalid = true;
  invalid.note = "checksum mismatch";
  fp.cells = {invalid, Cell{}};  // invalid, missing: no chart for this metric
  Row pub = row_of("model.resnet50.train", "ResNet-50 training", "img/s");
  pub.config_text = "published, DLE: fp16, batch 256";
  pub.published = true;
  Cell published;
  published.value = 3000;
  published.source = Source::kPublished;
  pub.cells = {Cell{}, published};
  c.rows = {bw, size, fp, pub};
  return c;
}

TEST(Html, StructureAndNoExternalUrls) {
  const Comparison c = comparison();
  const RunFile run = two_gpu_run();
  HtmlReportInput in{"gpuvs report: H200 vs A100", &c, {&run}, nullptr, "a note"};
  const std::string html = render_html(in, kFakeLibrary);
  EXPECT_EQ(html.rfind("<!DOCTYPE html>", 0), 0u);
  EXPECT_NE(html.find("<title>gpuvs report: H200 vs A100</title>"), std::string::npos);
  EXPECT_NE(html.find("Content-Security-Policy"), std::string::npos);
  EXPECT_NE(html.find("<p class=\"note-line\">a note</p>"), std::string::npos);
  EXPECT_NE(html.find("</html>"), std::string::npos);
  EXPECT_EQ(count(html, "id=\"gpuvs-data\""), 1u);
  EXPECT_EQ(count(html, "{{"), 0u);  // every placeholder filled
  // Self-contained: nothing is loaded from elsewhere.
  EXPECT_EQ(count(html, " src="), 0u);
  EXPECT_EQ(count(html, "<link"), 0u);
  EXPECT_EQ(count(html, "<script"), 3u);  // island, chart library, report.js
  EXPECT_NE(html.find(kFakeLibrary), std::string::npos);
}

TEST(Html, ComparisonTableLabelsEveryFigure) {
  const Comparison c = comparison();
  HtmlReportInput in{"t", &c, {}, nullptr, ""};
  const std::string html = render_html(in, kFakeLibrary);
  EXPECT_NE(html.find("4.25 TB/s"), std::string::npos);
  EXPECT_NE(html.find("2.04 TB/s"), std::string::npos);
  EXPECT_NE(html.find("88.5 % of datasheet"), std::string::npos);
  // Measured against a datasheet: no ratio, the datasheets' ratio instead.
  EXPECT_NE(html.find(">different basis; datasheets 0.42x</span>"), std::string::npos);
  EXPECT_EQ(html.find("x slower"), std::string::npos);
  EXPECT_NE(html.find(">0.57x lower (datasheet)</span>"), std::string::npos);
  EXPECT_NE(html.find("datasheet, not measured"), std::string::npos);
  EXPECT_NE(html.find("<span class=\"config\">published, DLE: fp16, batch 256</span>"),
            std::string::npos);
  EXPECT_NE(html.find("title=\"https://example.com/a100.pdf\">datasheet</span>"),
            std::string::npos);
  EXPECT_NE(html.find(">measured</span>"), std::string::npos);
  EXPECT_NE(html.find(">published</span>"), std::string::npos);
  EXPECT_NE(html.find("<td class=\"cell invalid\">invalid"), std::string::npos);
  EXPECT_NE(html.find("checksum mismatch"), std::string::npos);
  EXPECT_EQ(count(html, "<td class=\"cell missing\">missing</td>"), 2u);
  // The invalid measurement is no number anywhere, not even in the island.
  EXPECT_EQ(html.find("99.9 TFLOP/s"), std::string::npos);
  EXPECT_EQ(html.find("9.99e+13"), std::string::npos);
  EXPECT_EQ(html.find("99900000000000"), std::string::npos);
}

TEST(Html, EscapesEveryStringFromFiles) {
  Comparison c = comparison();
  c.columns[1].label = std::string(kEvil);
  c.columns[1].gpu_name = "\" onmouseover=\"alert(1)";
  c.rows[0].name = std::string(kEvil);
  c.rows[0].cells[1].source_ref = "\"><script>alert(2)</script>";
  RunFile run = two_gpu_run();
  run.meta.host = std::string(kEvil);
  run.system.cpu.model = "{{body}}";  // not a placeholder once inserted
  Result r = result("memory.sweep.read.1", 1e12, "B/s", {{"bytes", int64_t{4096}}});
  r.name = std::string(kEvil);
  run.results.push_back(r);
  run.errors.push_back({std::string(kEvil), "</script><!--"});
  std::vector<ClaimJudgement> claims(1);
  claims[0].claim.gpu = std::string(kEvil);
  claims[0].claim.source = "<img src=x onerror=alert(3)>";
  claims[0].why = std::string(kEvil);
  HtmlReportInput in{std::string(kEvil), &c, {&run}, &claims, std::string(kEvil)};
  for (std::string_view lib : {kFakeLibrary, std::string_view()}) {
    const std::string html = render_html(in, lib);
    EXPECT_EQ(html.find("<script>alert"), std::string::npos);
    EXPECT_EQ(html.find("<img"), std::string::npos);
    EXPECT_EQ(html.find("\" onmouseover=\""), std::string::npos);
    EXPECT_NE(html.find("&lt;script&gt;alert(1)&lt;/script&gt;"), std::string::npos);
    EXPECT_NE(html.find("{{body}}"), std::string::npos);
    EXPECT_EQ(count(html, "<script"), lib.empty() ? 2u : 3u);
    EXPECT_EQ(count(html, "</script>"), lib.empty() ? 2u : 3u);
    // The island carries the names intact, with '<' escaped.
    const nlohmann::json data = island(html);
    EXPECT_EQ(data["title"], kEvil);
    if (!lib.empty()) {
      EXPECT_EQ(data["charts"][0]["bars"][1]["label"], kEvil);
    }
  }
}

TEST(Html, IslandIsValidJsonWithoutClosingTags) {
  Comparison c = comparison();
  c.columns[0].label = "a</script>b<!--c";
  HtmlReportInput in{"t", &c, {}, nullptr, ""};
  const std::string html = render_html(in, kFakeLibrary);
  EXPECT_NE(html.find("a\\u003c/script\\u003eb\\u003c!--c"), std::string::npos);
  EXPECT_EQ(html.find("a</"), std::string::npos);
  const nlohmann::json data = island(html);
  EXPECT_EQ(data["schema"], "gpuvs.report/1");
  EXPECT_EQ(data["charts"][0]["bars"][0]["label"], "a</script>b<!--c");
  EXPECT_TRUE(data["charts_available"].get<bool>());
}

TEST(Html, WithoutChartLibraryTablesOnly) {
  const Comparison c = comparison();
  const RunFile run = two_gpu_run();
  HtmlReportInput in{"t", &c, {&run}, nullptr, ""};
  const std::string html = render_html(in, "");
  EXPECT_NE(html.find(kNoCharts), std::string::npos);
  EXPECT_NE(html.find("neither npm nor Debian's libjs-chart.js"), std::string::npos);
  EXPECT_NE(html.find("`gpuvs compare RUN --out DIR`"), std::string::npos);
  EXPECT_EQ(count(html, "<canvas id="), 0u);
  EXPECT_EQ(count(html, "class=\"chart\""), 0u);
  EXPECT_EQ(body_attr(html, "data-charts-expected"), 0);
  EXPECT_NE(html.find("class=\"comparison\""), std::string::npos);
  EXPECT_TRUE(island(html)["charts"].empty());
}

TEST(Html, ChartsOnlyBetweenFiguresOfOneBasis) {
  const Comparison c = comparison();
  HtmlReportInput in{"t", &c, {}, nullptr, ""};
  const std::string html = render_html(in, kFakeLibrary);
  EXPECT_EQ(html.find(kNoCharts), std::string::npos);
  // Memory bandwidth: the measured H200 has no measured partner, so no measured chart;
  // datasheet against datasheet (the H200's own datasheet figure beside the A100's).
  // Memory size: datasheet against datasheet. FP64 (invalid, missing) and ResNet-50 (one
  // published bar) have none. Plus one "% of datasheet" chart.
  EXPECT_EQ(count(html, "<figure class=\"chart\">"), 3u);
  EXPECT_EQ(body_attr(html, "data-charts-expected"), 3);
  const nlohmann::json charts = island(html)["charts"];
  ASSERT_EQ(charts.size(), 3u);
  EXPECT_EQ(charts[0]["title"], "Memory bandwidth (memory.bandwidth, datasheet)");
  EXPECT_EQ(charts[0]["basis"], "datasheet");
  ASSERT_EQ(charts[0]["bars"].size(), 2u);
  EXPECT_EQ(charts[0]["bars"][0]["sublabel"], "its datasheet");
  EXPECT_DOUBLE_EQ(charts[0]["bars"][0]["value"].get<double>(), 4.8e12);
  EXPECT_EQ(charts[0]["bars"][1]["sublabel"], "datasheet");
  EXPECT_EQ(charts[0]["bars"][1]["column"], 1);
  EXPECT_EQ(charts[1]["title"], "Memory size (memory.size, datasheet)");
  EXPECT_EQ(charts[1]["bars"][0]["sublabel"], "datasheet (not measured)");
  for (size_t i = 0; i < 2; ++i)
    for (const auto& bar : charts[i]["bars"])
      EXPECT_EQ(bar["source"], charts[i]["basis"]) << charts[i]["title"];
  EXPECT_EQ(charts[2]["unit"], "%");
  ASSERT_EQ(charts[2]["bars"].size(), 1u);
  EXPECT_DOUBLE_EQ(charts[2]["bars"][0]["value"].get<double>(), 88.5);
  for (size_t i = 0; i < charts.size(); ++i)
    EXPECT_NE(html.find("data-chart=\"" + std::to_string(i) + "\""), std::string::npos);
  // The island lists the columns every bar's "column" points into.
  const nlohmann::json columns = island(html)["columns"];
  ASSERT_EQ(columns.size(), 2u);
  EXPECT_EQ(columns[1]["label"], "A100");
}

TEST(Html, SweepsAndRoofline) {
  RunFile run = two_gpu_run();
  for (int64_t kib : {4, 64, 1024}) {
    // Numeric parameters change with the size and do not split a line; strings do.
    for (std::string pattern : {"linear", "random"})
      run.results.push_back(result("memory.sweep.read." + std::to_string(kib), 1e12 * kib, "B/s",
                                   {{"bytes", kib * 1024}, {"grid", kib}, {"pattern", pattern}}));
    run.results.push_back(result("memory.latency", 1e-9 * kib, "s", {{"size_bytes", kib * 1024}}));
    // The same sweep on the run's second GPU: a line of its own, named by its index.
    Result other = result("memory.latency", 2e-9 * kib, "s", {{"size_bytes", kib * 1024}});
    other.devices = {1};
    run.results.push_back(other);
  }
  Result bad = result("memory.sweep.read.8", 5, "B/s", {{"bytes", int64_t{8192}}});
  bad.status = Status::kInvalid;  // never plotted
  run.results.push_back(bad);
  run.results.push_back(result("memory.hbm.copy", 4e12, "B/s", {{"bytes_per_array", int64_t{1}}}));
  // As src/bench/roofline.cpp writes them: points with intensity and bytes, then a ridge.
  for (double intensity : {0.5, 8.0, 512.0})
    run.results.push_back(result("roofline.fp32", std::min(6e13, intensity * 4e12), "FLOP/s",
                                 {{"intensity", intensity},
                                  {"bytes", static_cast<int64_t>(1e9 / intensity)},
                                  {"fma_per_element", static_cast<int64_t>(intensity)}}));
  run.results.push_back(
      result("roofline.fp32.ridge", 15, "FLOP/B", {{"peak_flops", 6e13}, {"bandwidth", 4e12}}));
  // Without a ridge: the roof from the result's peak and peak_bandwidth.
  for (double intensity : {1.0, 100.0}) {
    Result r = result("roofline.bf16x2", std::min(6.7e14, intensity * 4.8e12), "FLOP/s",
                      {{"intensity", intensity}, {"peak_bandwidth", 4.8e12}});
    r.peak = Peak{6.7e14, "FLOP/s", "datasheet", "catalogue"};
    run.results.push_back(r);
  }
  HtmlReportInput in{"t", nullptr, {&run}, nullptr, ""};
  const std::string html = render_html(in, kFakeLibrary);
  const nlohmann::json charts = island(html)["charts"];
  ASSERT_EQ(charts.size(), 3u);
  EXPECT_EQ(body_attr(html, "data-charts-expected"), 3);
  EXPECT_EQ(charts[0]["title"], "Bandwidth vs size: memory.sweep.read");
  EXPECT_EQ(charts[0]["x_unit"], "B");
  EXPECT_FALSE(charts[0]["y_log"].get<bool>());
  ASSERT_EQ(charts[0]["series"].size(), 2u);
  // Results of a two-GPU run name the GPU's index.
  EXPECT_EQ(charts[0]["series"][0]["label"], "H200 #0 (pattern=linear)");
  EXPECT_EQ(charts[0]["series"][1]["label"], "H200 #0 (pattern=random)");
  EXPECT_EQ(charts[0]["series"][0]["points"].size(), 3u);
  EXPECT_EQ(charts[0]["series"][0]["points"][0][0], 4096);
  EXPECT_EQ(charts[1]["title"], "Latency vs size: memory.latency");
  EXPECT_TRUE(charts[1]["y_log"].get<bool>());
  ASSERT_EQ(charts[1]["series"].size(), 2u);
  EXPECT_EQ(charts[1]["series"][0]["label"], "H200 #0");
  EXPECT_EQ(charts[1]["series"][1]["label"], "<script>alert(1)</script> #1");
  EXPECT_EQ(charts[2]["title"], "Roofline");
  ASSERT_EQ(charts[2]["series"].size(), 4u);
  EXPECT_EQ(charts[2]["series"][0]["label"], "H200 #0 fp32");
  EXPECT_EQ(charts[2]["series"][0]["points"].size(), 3u);
  EXPECT_EQ(charts[2]["series"][1]["label"], "H200 #0 bf16x2");
  EXPECT_EQ(charts[2]["series"][2]["role"], "roof");
  EXPECT_EQ(charts[2]["series"][2]["label"], "roof: H200 #0 fp32");
  // Roofs over 0.25 .. 1024 FLOP/B, with their knees at peak / bandwidth.
  const auto& ridge_roof = charts[2]["series"][2]["points"];
  ASSERT_EQ(ridge_roof.size(), 3u);
  EXPECT_DOUBLE_EQ(ridge_roof[0][1].get<double>(), 0.25 * 4e12);
  EXPECT_DOUBLE_EQ(ridge_roof[1][0].get<double>(), 15.0);
  EXPECT_DOUBLE_EQ(ridge_roof[2][1].get<double>(), 6e13);
  const auto& peak_roof = charts[2]["series"][3]["points"];
  ASSERT_EQ(peak_roof.size(), 3u);
  EXPECT_DOUBLE_EQ(peak_roof[1][0].get<double>(), 6.7e14 / 4.8e12);
  EXPECT_DOUBLE_EQ(peak_roof[2][1].get<double>(), 6.7e14);
  EXPECT_NE(html.find("<section id=\"sweeps\">"), std::string::npos);
  EXPECT_NE(html.find("<section id=\"roofline\">"), std::string::npos);
}

TEST(Html, FingerprintPerGpu) {
  RunFile a = two_gpu_run();
  RunFile b = two_gpu_run();
  b.system.gpus.resize(1);
  b.system.gpus[0].pci_device_id = 0x233510DE;
  b.system.gpus[0].ecc_enabled = true;
  b.system.gpus[0].nvlinks = {{0, true, 4, std::nullopt}};
  HtmlReportInput in{"t", nullptr, {&a, &b}, nullptr, ""};
  const std::string html = render_html(in, "");
  EXPECT_EQ(count(html, "<section class=\"fingerprint\""), 3u);
  EXPECT_EQ(count(html, "<section class=\"run\""), 2u);
  EXPECT_NE(html.find("id=\"run-1-gpu-1\""), std::string::npos);
  EXPECT_NE(html.find("id=\"run-2-gpu-0\""), std::string::npos);
  EXPECT_NE(html.find("<th scope=\"row\">VBIOS</th><td>n/a</td>"), std::string::npos);
  EXPECT_NE(
      html.find("<th scope=\"row\">power limit, enforced / default (W)</th><td>n/a / n/a</td>"),
      std::string::npos);
  EXPECT_NE(html.find("<th scope=\"row\">SM clock, now / max (MHz)</th><td>1980 / n/a</td>"),
            std::string::npos);
  EXPECT_NE(html.find("<td>0x233510DE</td>"), std::string::npos);
  EXPECT_NE(html.find("<th scope=\"row\">ECC</th><td>yes</td>"), std::string::npos);
  EXPECT_NE(html.find("link 0: active, NVLink 4, remote n/a"), std::string::npos);
  EXPECT_NE(html.find("140 GiB (150109880320 B)"), std::string::npos);
}

TEST(Html, InvalidResultIsNoNumberInRunTable) {
  RunFile run = two_gpu_run();
  Result r = result("memory.hbm.copy", 1.234e12, "B/s", {});
  r.status = Status::kInvalid;
  r.status_reason = "checksum mismatch";
  run.results.push_back(r);
  HtmlReportInput in{"t", nullptr, {&run}, nullptr, ""};
  const std::string html = render_html(in, "");
  EXPECT_EQ(html.find("1.23 TB/s"), std::string::npos);
  EXPECT_NE(html.find("invalid: checksum mismatch"), std::string::npos);
}

TEST(Html, ClaimsTable) {
  std::vector<ClaimJudgement> claims(2);
  claims[0].claim.gpu = "H200 96GB";
  claims[0].claim.metric = "memory.capacity";
  claims[0].claim.value = 96;
  claims[0].claim.unit = "GB";
  claims[0].claim.source = "vendor slide";
  claims[0].claim.line = 3;
  claims[0].verdict = ClaimVerdict::kContradicted;
  claims[0].off_pct = -31.9;
  claims[0].reference = 141e9;
  claims[0].reference_unit = "B";
  claims[0].reference_source = Source::kDatasheet;
  claims[0].why = "H200 has 141 GB (datasheet)";
  claims[1].claim.gpu = "H100";
  claims[1].claim.metric = "fp8";
  claims[1].claim.value = 4000;
  claims[1].claim.unit = "TFLOPS";
  HtmlReportInput in{"t", nullptr, {}, &claims, ""};
  const std::string html = render_html(in, "");
  EXPECT_NE(html.find("<section id=\"claims\">"), std::string::npos);
  EXPECT_NE(html.find("verdict-contradicted\">contradicted</span>"), std::string::npos);
  EXPECT_NE(html.find("-31.9 %"), std::string::npos);
  EXPECT_NE(html.find("141 GB <span class=\"src src-datasheet\">datasheet</span>"),
            std::string::npos);
  EXPECT_NE(html.find("verdict-unverifiable\">unverifiable</span>"), std::string::npos);
  EXPECT_NE(html.find("line 3"), std::string::npos);
}

// A monitored run: two GPUs (GPU 1 named kEvil, no GPM), two steps, a note.
RunFile monitored_run(size_t samples) {
  RunFile run = two_gpu_run();
  Timeline t{"nvml", 0.1, {std::string("GPM not supported on GPU 1 ") + std::string(kEvil)}, {}};
  for (int g = 0; g < 2; ++g) {
    GpuTimeline gt;
    gt.gpu = g;
    for (size_t i = 0; i < samples; ++i) {
      gt.t_s.push_back(0.1 * static_cast<double>(i));
      gt.sm_util_pct.push_back(g == 0 && i > 0 ? std::optional<double>(90.0) : std::nullopt);
      gt.tensor_util_pct.push_back(g == 0 && i > 0 ? std::optional<double>(40.0) : std::nullopt);
      gt.dram_bw_util_pct.push_back(std::nullopt);
      gt.gpu_util_pct.push_back(100.0);
      gt.power_w.push_back(500.0 + g);
      gt.sm_mhz.push_back(1980);
    }
    t.gpus.push_back(std::move(gt));
  }
  run.timeline = t;
  GpuUtilization u0;
  u0.gpu = 0;
  u0.samples = 3;
  u0.sm_util_pct = UtilDistribution{90, 90};
  u0.power_w_mean = 500;
  u0.power_w_max = 510;
  Result a = result("compute.gemm.bf16", 7e14, "FLOP/s", {});
  a.utilization = Utilization{"compute.gemm", 0.05, 0.3, {u0}};
  Result b = result("evil", 1, "s", {});
  GpuUtilization u1 = u0;
  u1.gpu = 1;
  u1.sm_util_pct.reset();
  b.devices = {1};
  b.utilization = Utilization{std::string(kEvil), 0.3, 0.45, {u1}};
  run.results = {a, a, b};  // the first step has two results: one window
  return run;
}

TEST(Html, UtilizationSectionWithOneTimelinePerGpu) {
  const RunFile run = monitored_run(6);
  HtmlReportInput in{"t", nullptr, {&run}, nullptr, ""};
  const std::string html = render_html(in, kFakeLibrary);
  EXPECT_NE(html.find("<section class=\"utilization\" id=\"utilization\">"), std::string::npos);
  EXPECT_EQ(html.find(kEvil), std::string::npos) << "a step name or note was not escaped";
  const nlohmann::json charts = island(html)["charts"];
  std::vector<nlohmann::json> timelines;
  for (const auto& c : charts)
    if (c["kind"] == "timeline") timelines.push_back(c);
  ASSERT_EQ(timelines.size(), 2u);
  EXPECT_EQ(body_attr(html, "data-charts-expected"), static_cast<int>(charts.size()));
  const nlohmann::json& g0 = timelines[0];
  EXPECT_EQ(g0["title"], "GPU 0 (H200): utilization");
  EXPECT_EQ(g0["x_unit"], "s");
  std::vector<std::string> labels;
  for (const auto& series : g0["series"])
    labels.push_back(series["label"]);
  // DRAM has no value anywhere: no series; power on the second axis.
  EXPECT_EQ(labels, (std::vector<std::string>{"SM active", "tensor active", "GPU util (NVML)",
                                              "power", "SM clock"}));
  EXPECT_EQ(g0["series"][3]["axis"], "y2");
  EXPECT_EQ(g0["series"][0]["points"].size(), 6u);
  EXPECT_TRUE(g0["series"][0]["points"][0][1].is_null());  // a gap, not a 0
  EXPECT_DOUBLE_EQ(g0["series"][0]["points"][1][1].get<double>(), 90.0);
  // Each step's window once, on the GPUs it ran on.
  ASSERT_EQ(g0["windows"].size(), 1u);
  EXPECT_EQ(g0["windows"][0]["label"], "compute.gemm");
  EXPECT_DOUBLE_EQ(g0["windows"][0]["t_begin"].get<double>(), 0.05);
  ASSERT_EQ(timelines[1]["windows"].size(), 1u);
  EXPECT_EQ(timelines[1]["windows"][0]["label"], std::string(kEvil));  // escaped by the island
  // The step table: one row per step and GPU, figures or n/a.
  const size_t table = html.find("<table class=\"utilization\">");
  ASSERT_NE(table, std::string::npos);
  EXPECT_EQ(count(html.substr(table, html.find("</table>", table) - table), "<tr>"), 3u);
  EXPECT_NE(html.find("90.0 % <span class=\"sub\">p95 90.0 %</span>"), std::string::npos);
  EXPECT_NE(html.find("500 W <span class=\"sub\">max 510 W</span>"), std::string::npos);
}

TEST(Html, UtilizationOnlyWithATimeline) {
  RunFile run = monitored_run(6);
  HtmlReportInput in{"t", nullptr, {&run}, nullptr, ""};
  // Tables only: the section and its table stay, no chart.
  const std::string tables = render_html(in, "");
  EXPECT_NE(tables.find("id=\"utilization\""), std::string::npos);
  EXPECT_NE(tables.find("<table class=\"utilization\">"), std::string::npos);
  EXPECT_EQ(count(tables, "<canvas id="), 0u);
  // No timeline: no section at all.
  run.timeline.reset();
  const std::string none = render_html(in, kFakeLibrary);
  EXPECT_EQ(none.find("id=\"utilization\""), std::string::npos);
  for (const auto& c : island(none)["charts"])
    EXPECT_NE(c["kind"], "timeline");
  // Two runs: sections named per run.
  const RunFile other = monitored_run(3);
  run = monitored_run(6);
  HtmlReportInput two{"t", nullptr, {&run, &other}, nullptr, ""};
  const std::string html = render_html(two, kFakeLibrary);
  EXPECT_NE(html.find("id=\"utilization-run-1\""), std::string::npos);
  EXPECT_NE(html.find("id=\"utilization-run-2\""), std::string::npos);
}

TEST(Html, LongTimelinesAreAveragedDownForTheChart) {
  const size_t n = 3 * kTimelineChartPoints + 7;
  const RunFile run = monitored_run(n);
  const nlohmann::ordered_json spec = timeline_chart_spec(run, run.timeline->gpus[0]);
  const auto& power = spec["series"][3]["points"];
  // Runs of ceil(n / kTimelineChartPoints) = 4 samples: ceil(n / 4) points.
  EXPECT_EQ(power.size(), (n + 3) / 4);
  EXPECT_LE(power.size(), kTimelineChartPoints);
  EXPECT_DOUBLE_EQ(power[0][1].get<double>(), 500.0);
  // A bucket's time is the mean of its samples' times: 0, 0.1, 0.2, 0.3 -> 0.15.
  EXPECT_NEAR(power[0][0].get<double>(), 0.15, 1e-12);
}

TEST(TerminalSummary, OneUtilizationLinePerStepAndGpu) {
  RunFile run = monitored_run(6);
  const std::string text = render_summary(run);
  const size_t head = text.find("utilization (mean over each step):\n");
  ASSERT_NE(head, std::string::npos) << text;
  // The first step's two results share one window: one line.
  EXPECT_EQ(count(text, "  compute.gemm on GPU 0 H200, 0.2 s: SM 90 %, 500 W (max 510)\n"), 1u)
      << text;
  // Without GPM: no SM figure, never a 0.
  const size_t gpu1 = text.find("on GPU 1 ", head);
  ASSERT_NE(gpu1, std::string::npos) << text;
  const std::string line = text.substr(gpu1, text.find('\n', gpu1) - gpu1);
  EXPECT_NE(line.find(" s: 500 W (max 510)"), std::string::npos) << line;
  EXPECT_EQ(text.find("SM 0 %"), std::string::npos);
  // Not monitored: no such lines.
  for (Result& r : run.results)
    r.utilization.reset();
  EXPECT_EQ(render_summary(run).find("utilization"), std::string::npos);
}

// Power capping is shown as such, apart from thermal and hardware slowdowns: in the
// status of a result and in the time a step spent under each reason.
TEST(TerminalSummary, PowerCappingIsToldApartFromSlowdowns) {
  RunFile run = monitored_run(6);
  run.results[0].clocks = ClockRecord{};
  run.results[0].clocks->throttle_reasons = {"sw_power_cap"};
  run.results[2].clocks = ClockRecord{};
  run.results[2].clocks->throttle_reasons = {"sw_power_cap", "hw_slowdown"};
  GpuUtilization& g = run.results[0].utilization->gpus[0];
  g.throttled_s = 0.2;
  g.throttle_s_by_reason = {{"gpu_idle", 0.1}, {"sw_power_cap", 0.2}, {"hw_slowdown", 0.05}};
  const std::string text = render_summary(run);
  EXPECT_NE(text.find("ok, power-capped (normal under full load)"), std::string::npos) << text;
  EXPECT_NE(text.find("ok, throttled: thermal/hardware (hw_slowdown)"), std::string::npos) << text;
  EXPECT_NE(text.find("power-capped 0.2 s, throttled: hw_slowdown 0.1 s"), std::string::npos)
      << text;
  // The bundled H200 run: power-capped results, none throttled.
  const std::string reference = render_summary(
      load_run_file(std::string(GPUVS_SOURCE_DIR) + "/data/reference/h200-sxm-run.json"));
  EXPECT_NE(reference.find("ok, power-capped"), std::string::npos);
  EXPECT_EQ(reference.find("throttled"), std::string::npos);
}

TEST(Html, BuiltInLibraryMatchesAvailability) {
  EXPECT_EQ(html_charts_available(), embedded_file("web/chart.umd.js").has_value());
  ASSERT_TRUE(embedded_file("web/report.html").has_value());
  ASSERT_TRUE(embedded_file("web/report.js").has_value());
  ASSERT_TRUE(embedded_file("web/report.css").has_value());
  const RunFile run = load_run_file(GPUVS_SOURCE_DIR "/data/reference/h200-sxm-run.json");
  const Comparison c = comparison();
  HtmlReportInput in{"H200", &c, {&run}, nullptr, "No GPU here: bundled H200 reference run"};
  const std::string html = render_html(in);
  EXPECT_EQ(html.find(kNoCharts) == std::string::npos, html_charts_available());
  EXPECT_EQ(body_attr(html, "data-charts-expected") > 0, html_charts_available());
  if (html_charts_available()) {
    EXPECT_NE(html.find("Chart.js v4"), std::string::npos);
    EXPECT_EQ(html.find("sourceMappingURL"), std::string::npos);
  }
  EXPECT_NE(html.find(run.system.gpus.at(0).uuid), std::string::npos);
  EXPECT_NE(html.find("HBM copy<span class=\"sub\">memory.hbm.copy</span>"), std::string::npos);
}

}  // namespace
}  // namespace gpuvs
