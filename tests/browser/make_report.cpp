// Writes the HTML reports the browser test opens (tests/browser/report_test.cjs). Every
// comparison is built as gpuvs builds it (build_comparison over run files and the
// catalogue), from the run files in the source tree:
//   DIR/report.html              the bundled H200 reference run against the
//                                A100-SXM4-80GB catalogue entry, claims about them, and
//                                a synthetic run with size sweeps, a roofline and a
//                                monitor timeline (so that every kind of chart is drawn);
//   DIR/report-multi.html        four columns with long labels: both GPUs of the 2xH200
//                                run (two GPUs of one name; one result of GPU 1 marked
//                                invalid), the compute bench run (a run lacking most
//                                metrics) and the A100 catalogue entry;
//   DIR/report-tables-only.html  report.html without the chart library;
//   DIR/report-NAME.html, DIR/report-multi-NAME.html
//                                with LIBRARY (a script defining window.Chart) inlined
//                                instead of the built-in library; when LIBRARY does not
//                                exist they are not written (and old ones are removed).
// Usage: make_report DIR DATA_DIR [LIBRARY NAME]   (DATA_DIR: the source tree's data/)
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <exception>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/run_file.h"
#include "report/claims.h"
#include "report/compare.h"
#include "report/html.h"
#include "specs/catalogue.h"
#include "specs/published.h"

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

std::string read(const std::filesystem::path& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw Error("cannot read " + path.string());
  return {std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()};
}

RunFile run_file(const std::filesystem::path& data, const std::string& name) {
  const std::filesystem::path path = data / "reference" / name;
  return parse_run_file(read(path), path.string());
}

// "GPU-faafcc66-..." -> "faafcc66": tells GPUs of one name apart in a label.
std::string uuid_part(const GpuInfo& g) {
  const std::string u = g.uuid.rfind("GPU-", 0) == 0 ? g.uuid.substr(4) : g.uuid;
  return u.substr(0, 8);
}

// Claims as a claims file states them, judged as `gpuvs compare --claims` judges them.
std::vector<ClaimJudgement> claims(const std::vector<CompareInput>& measured) {
  const std::vector<Claim> stated = parse_claims(
      "gpu,metric,value,unit,source\n"
      "H200 96GB,memory,96,GB,example article\n"
      "H200,memory bandwidth,4.8,TB/s,example article\n"
      "H200,cuda cores,16896,cores,example article\n",
      "claims.csv");
  return judge_claims(stated, measured, Catalogue::builtin(), Published::builtin());
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
  if (argc != 3 && argc != 5) {
    std::fprintf(stderr, "usage: make_report DIR DATA_DIR [LIBRARY NAME]\n");
    return 2;
  }
  try {
    const std::filesystem::path dir = argv[1];
    const std::filesystem::path data = argv[2];
    std::filesystem::create_directories(dir);
    const Catalogue& catalogue = Catalogue::builtin();
    const GpuSpec& a100 = catalogue.get("A100-SXM4-80GB");

    const RunFile h200 = run_file(data, "h200-sxm-run.json");
    const RunFile synthetic = synthetic_run();
    const std::vector<CompareInput> pair = {{.label = "H200 (reference run)",
                                             .run = &h200,
                                             .gpu_index = 0,
                                             .run_ref = "data/reference/h200-sxm-run.json"},
                                            {.label = "A100-SXM4-80GB", .spec = &a100}};
    const Comparison c = build_comparison(pair, catalogue, Published::builtin(), CompareOptions{});
    const std::vector<ClaimJudgement> j = claims({pair[0]});
    HtmlReportInput in;
    in.title = "gpuvs report: H200 vs A100-SXM4-80GB";
    in.comparison = &c;
    in.runs = {&h200, &synthetic};
    in.claims = &j;
    in.note =
        "No GPU here: bundled H200 reference run (browser test; run 2 is synthetic test data)";

    // Labels as long as real ones get: GPU, index, host, uuid, run.
    // GPU 1's FP16 GEMM is marked invalid, as a failed check marks a result, so that
    // an invalid figure (no bar, only its label) is drawn too.
    RunFile x2 = run_file(data, "h200x2-run.json");
    for (Result& r : x2.results)
      if (r.id == "compute.gemm.fp16" && r.devices == std::vector<int>{1}) {
        r.status = Status::kInvalid;
        r.status_reason = "checksum mismatch (test data, not measured)";
      }
    const RunFile compute = run_file(data, "h200-bench-compute.json");
    std::vector<CompareInput> four;
    for (const GpuInfo& g : x2.system.gpus)
      four.push_back({.label = "H200 #" + std::to_string(g.index) + " " + x2.meta.host + " " +
                               uuid_part(g) + " h200x2-run",
                      .run = &x2,
                      .gpu_index = g.index,
                      .run_ref = "data/reference/h200x2-run.json"});
    four.push_back({.label = "H200 " + compute.meta.host + " " +
                             uuid_part(compute.system.gpus.at(0)) + " h200-bench-compute",
                    .run = &compute,
                    .gpu_index = 0,
                    .run_ref = "data/reference/h200-bench-compute.json"});
    four.push_back({.label = "A100-SXM4-80GB (datasheet, catalogue entry)", .spec = &a100});
    const Comparison multi =
        build_comparison(four, catalogue, Published::builtin(), CompareOptions{});
    HtmlReportInput in_multi;
    in_multi.title = "gpuvs report: 2xH200, H200 compute bench, A100-SXM4-80GB";
    in_multi.comparison = &multi;
    in_multi.runs = {&x2, &compute};
    in_multi.note = "Browser test: four columns with long labels";

    write(dir / "report.html", render_html(in));
    write(dir / "report-multi.html", render_html(in_multi));
    write(dir / "report-tables-only.html", render_html(in, ""));
    std::printf("%s\n", (dir / "report.html").c_str());
    if (argc == 5) {
      const std::filesystem::path library = argv[3];
      const std::string name = argv[4];
      const auto one = dir / ("report-" + name + ".html");
      const auto two = dir / ("report-multi-" + name + ".html");
      if (std::filesystem::exists(library)) {
        const std::string text = read(library);
        write(one, render_html(in, text));
        write(two, render_html(in_multi, text));
        std::printf("%s (with %s)\n", one.c_str(), library.c_str());
      } else {
        std::filesystem::remove(one);
        std::filesystem::remove(two);
        std::printf("%s not written: %s does not exist\n", one.c_str(), library.c_str());
      }
    }
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "make_report: %s\n", e.what());
    return 1;
  }
}
