// Writes the HTML reports the browser test opens (tests/browser/report_test.cjs):
//   DIR/report.html              the bundled H200 reference run, a hand-made comparison
//                                with an A100 (datasheet figures), claims, and a
//                                synthetic run with size sweeps, a roofline and a
//                                monitor timeline (so that every kind of chart is drawn);
//   DIR/report-tables-only.html  the same without the chart library.
// Usage: make_report DIR
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <exception>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/embedded.h"
#include "core/error.h"
#include "core/run_file.h"
#include "report/html.h"

namespace gpuvs {
namespace {

Result result(std::string id, std::string name, double value, std::string unit,
              std::map<std::string, ParamValue> parameters) {
  Result r;
  r.id = std::move(id);
  r.name = std::move(name);
  r.devices = {0};
  r.parameters = std::move(parameters);
  r.value = value;
  r.unit = std::move(unit);
  r.stats = {value, value * 0.99, value * 1.01, value, value * 0.002, 0.002, 20, value * 1.01};
  return r;
}

// Test data, not a measurement: shapes like a Hopper GPU's (L2 plateau, HBM beyond).
RunFile synthetic_run() {
  RunFile run;
  run.meta = {"0.1.0",
              "unknown",
              {"make_report"},
              "bench",
              "2026-11-30T12:00:00Z",
              "2026-11-30T12:01:00Z",
              "synthetic-test-data"};
  run.system.os = "Linux";
  run.system.cpu.model = "synthetic";
  GpuInfo g;
  g.name = "Synthetic GPU (test data)";
  g.uuid = "GPU-00000000-0000-0000-0000-000000000000";
  g.pci_bus_id = "00000000:00:00.0";
  g.compute_capability = "9.0";
  g.sm_count = 132;
  g.memory_total_bytes = 150109880320;
  g.l2_bytes = 62914560;
  run.system.gpus = {g};
  for (int e = 12; e <= 32; e += 2) {
    const double bytes = std::ldexp(1.0, e);
    const double l2 = bytes <= 5e7 ? 1.0 : 0.0;
    const double bw = (1.0 - std::exp(-bytes / 4e6)) * (l2 * 9e12 + (1 - l2) * 4.2e12);
    const auto size = static_cast<int64_t>(bytes);
    run.results.push_back(result("memory.sweep.read." + std::to_string(size), "Read sweep", bw,
                                 "B/s", {{"bytes", size}}));
    const double latency = bytes <= 5e7 ? 260e-9 : 650e-9;
    run.results.push_back(result("memory.latency." + std::to_string(size), "Pointer chase",
                                 bytes <= 262144 ? 35e-9 : latency, "s", {{"size_bytes", size}}));
  }
  // roofline.fp32 as src/bench/roofline.cpp writes it (points, then a measured ridge);
  // roofline.bf16 with a datasheet peak and a peak_bandwidth parameter instead.
  for (const auto& [precision, peak] : {std::pair{"fp32", 6.7e13}, std::pair{"bf16", 9.89e14}}) {
    const std::string id = std::string("roofline.") + precision;
    for (double intensity = 0.25; intensity <= 4096; intensity *= 4) {
      Result r = result(id, "Roofline " + id.substr(9), 0.85 * std::min(peak, intensity * 4.8e12),
                        "FLOP/s",
                        {{"intensity", intensity},
                         {"bytes", static_cast<int64_t>(4e9 / intensity)},
                         {"fma_per_element", static_cast<int64_t>(intensity * 4)}});
      r.peak = Peak{peak, "FLOP/s", "datasheet", "H200 datasheet"};
      if (id == "roofline.bf16") r.parameters["peak_bandwidth"] = 4.8e12;
      run.results.push_back(r);
    }
  }
  const double ridge_flops = 0.85 * 6.7e13, ridge_bw = 0.85 * 4.8e12;
  run.results.push_back(result("roofline.fp32.ridge", "Ridge point, FP32", ridge_flops / ridge_bw,
                               "FLOP/B", {{"peak_flops", ridge_flops}, {"bandwidth", ridge_bw}}));
  // A monitor timeline (docs/monitor.md) at 100 ms over three steps, so that the
  // Utilization chart is drawn: a memory sweep, a roofline, an idle gap with gaps.
  Timeline tl{"nvml+gpm", 0.1, {}, {}};
  GpuTimeline g0;
  const double steps[][2] = {{0.2, 6.0}, {6.1, 14.0}};
  for (int i = 0; i <= 160; ++i) {
    const double t = 0.1 * i;
    const bool sweep = t > steps[0][0] && t <= steps[0][1];
    const bool roof = t > steps[1][0] && t <= steps[1][1];
    g0.t_s.push_back(std::round(t * 1000) / 1000);
    const auto gpm = [&](double v) { return i == 0 ? std::optional<double>() : v; };
    g0.sm_util_pct.push_back(gpm(sweep || roof ? 98.5 : 0.0));
    g0.tensor_util_pct.push_back(gpm(roof ? 20.0 + 60.0 * (t - 6.1) / 7.9 : 0.0));
    g0.dram_bw_util_pct.push_back(gpm(sweep ? 90.0 : roof ? 85.0 - 60.0 * (t - 6.1) / 7.9 : 0.0));
    g0.gpu_util_pct.push_back(sweep || roof ? 100.0 : 0.0);
    g0.power_w.push_back(sweep ? 610.0 : roof ? 650.0 : 120.0);
    g0.sm_mhz.push_back(sweep || roof ? 1980 : 345);
  }
  tl.gpus = {g0};
  run.timeline = tl;
  for (Result& r : run.results) {
    const bool is_roof = r.id.rfind("roofline.", 0) == 0;
    const auto* w = is_roof ? steps[1] : steps[0];
    r.utilization = Utilization{is_roof ? "roofline" : "memory.sweep", w[0], w[1], {}};
    GpuUtilization u;
    u.gpu = 0;
    u.samples = static_cast<int>((w[1] - w[0]) / 0.1);
    u.duration_s = w[1] - w[0];
    u.sm_util_pct = UtilDistribution{98.5, 98.5};
    u.power_w_mean = is_roof ? 650.0 : 610.0;
    u.power_w_max = u.power_w_mean;
    r.utilization->gpus = {u};
  }
  return run;
}

Cell cell(std::optional<double> value, Source source, std::string ref) {
  Cell c;
  c.value = value;
  c.source = source;
  c.source_ref = std::move(ref);
  return c;
}

Comparison comparison(const RunFile& h200) {
  constexpr const char* kA100 =
      "https://www.nvidia.com/content/dam/en-zz/Solutions/Data-Center/"
      "a100/pdf/nvidia-a100-datasheet-us-nvidia-1758950-r4-web.pdf";
  constexpr const char* kH200 = "https://www.nvidia.com/en-us/data-center/h200/";
  Comparison c;
  c.columns = {{"H200 (reference run)", "NVIDIA H200", "h200-sxm", true},
               {"A100-SXM4-80GB", "A100-SXM4-80GB", "a100-sxm4-80gb", false}};
  auto row = [](std::string metric, std::string name, std::string unit, std::vector<Cell> cells) {
    Row r;
    r.metric = std::move(metric);
    r.name = std::move(name);
    r.unit = std::move(unit);
    r.cells = std::move(cells);
    return r;
  };
  Cell bw = cell(h200.results.at(0).value, Source::kMeasured, "h200-sxm-run.json, memory.hbm.copy");
  bw.noise = h200.results.at(0).stats.noise;
  bw.of_datasheet = *bw.value / 4.8e12;
  bw.verdict = "baseline";
  Cell a100_bw = cell(2.039e12, Source::kDatasheet, kA100);
  a100_bw.diff_pct = (2.039e12 / *bw.value - 1) * 100;
  a100_bw.verdict = "slower";
  Cell fp64 = cell(std::nullopt, Source::kMeasured, "");
  fp64.invalid = true;
  fp64.note = "checksum mismatch";
  c.rows = {row("memory.bandwidth", "Memory bandwidth", "B/s", {bw, a100_bw}),
            row("memory.capacity", "Memory", "B",
                {cell(141e9, Source::kDatasheet, kH200), cell(80e9, Source::kDatasheet, kA100)}),
            row("compute.bf16", "BF16 tensor (dense)", "FLOP/s",
                {cell(989e12, Source::kDatasheet, kH200), cell(312e12, Source::kDatasheet, kA100)}),
            row("compute.fp64", "FP64", "FLOP/s", {fp64, cell(9.7e12, Source::kDatasheet, kA100)}),
            row("model.resnet50.train", "ResNet-50 training", "img/s",
                {Cell{}, cell(2.7e3, Source::kPublished, "https://example.org/published")}),
            row("power.tdp", "Power limit", "W",
                {cell(700, Source::kDerived, "NVML enforced power limit"),
                 cell(400, Source::kDatasheet, kA100)})};
  return c;
}

std::vector<ClaimJudgement> claims() {
  std::vector<ClaimJudgement> out(2);
  out[0].claim.gpu = "H200 96GB";
  out[0].claim.metric = "memory";
  out[0].claim.value = 96;
  out[0].claim.unit = "GB";
  out[0].claim.source = "example article";
  out[0].claim.line = 2;
  out[0].verdict = ClaimVerdict::kContradicted;
  out[0].off_pct = (96.0 / 141 - 1) * 100;
  out[0].reference = 141e9;
  out[0].reference_unit = "B";
  out[0].reference_source = Source::kDatasheet;
  out[0].why = "H200 has 141 GB (datasheet); no 96 GB H200 exists";
  out[1].claim.gpu = "H200";
  out[1].claim.metric = "memory bandwidth";
  out[1].claim.value = 4.8;
  out[1].claim.unit = "TB/s";
  out[1].claim.source = "example article";
  out[1].claim.line = 3;
  out[1].verdict = ClaimVerdict::kHolds;
  out[1].reference = 4.8e12;
  out[1].reference_unit = "B/s";
  out[1].why = "matches the datasheet";
  return out;
}

void write(const std::filesystem::path& path, const std::string& text) {
  std::ofstream f(path, std::ios::binary);
  f << text;
  if (!f.flush()) throw Error("cannot write " + path.string());
}

}  // namespace
}  // namespace gpuvs

int main(int argc, char** argv) {
  using namespace gpuvs;
  if (argc != 2) {
    std::fprintf(stderr, "usage: make_report DIR\n");
    return 2;
  }
  try {
    const std::filesystem::path dir = argv[1];
    std::filesystem::create_directories(dir);
    const auto bundled = embedded_file("data/reference/h200-sxm-run.json");
    if (!bundled) throw Error("the bundled H200 run is not built in");
    const RunFile h200 = parse_run_file(*bundled, "data/reference/h200-sxm-run.json");
    const RunFile synthetic = synthetic_run();
    const Comparison c = comparison(h200);
    const std::vector<ClaimJudgement> j = claims();
    const HtmlReportInput in{"gpuvs report: H200 vs A100-SXM4-80GB",
                             &c,
                             {&h200, &synthetic},
                             &j,
                             "No GPU here: bundled H200 reference run (browser test; run 2 is "
                             "synthetic test data)"};
    write(dir / "report.html", render_html(in));
    write(dir / "report-tables-only.html", render_html(in, ""));
    std::printf("%s\n", (dir / "report.html").c_str());
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "make_report: %s\n", e.what());
    return 1;
  }
}
