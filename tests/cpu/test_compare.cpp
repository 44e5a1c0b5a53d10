// The comparison model: measured cells from run files (with noise and share of the
// datasheet), datasheet and published fallbacks labelled as such, missing figures
// missing (never 0), invalid results never a number, noise-aware verdicts.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "core/run_file.h"
#include "report/compare.h"

namespace gpuvs {
namespace {

// Two entries with the real datasheet figures (A100 SXM4 80GB, H200 SXM).
constexpr const char* kCatalogue = R"json({"schema": "gpuvs.catalogue/1", "gpus": [
 {"id": "A100-SXM4-80GB", "name": "NVIDIA A100 SXM4 80GB", "aliases": ["A100", "A100-80GB"],
  "driver_names": ["NVIDIA A100-SXM4-80GB"], "pci_device_ids": ["0x20b2"],
  "architecture": "Ampere", "form_factor": "SXM4", "memory_type": "HBM2e",
  "source": "https://www.nvidia.com/a100-datasheet.pdf",
  "figures": {"memory.size": {"value": 80, "unit": "GB"},
              "memory.bandwidth": {"value": 2039, "unit": "GB/s"},
              "compute.fp32": {"value": 19.5, "unit": "TFLOP/s"},
              "compute.fp16": {"value": 312, "unit": "TFLOP/s"},
              "compute.fp16_sparse": {"value": 624, "unit": "TFLOP/s"},
              "compute.fp8": null,
              "link.nvlink": {"value": 600, "unit": "GB/s"},
              "gpu.cuda_cores": {"value": 6912, "unit": "1"},
              "clock.boost": {"value": 1410, "unit": "MHz"}}},
 {"id": "H200-SXM", "name": "NVIDIA H200 SXM 141GB", "aliases": ["H200"],
  "driver_names": ["NVIDIA H200"], "pci_device_ids": ["0x2335"],
  "architecture": "Hopper", "form_factor": "SXM5", "memory_type": "HBM3e",
  "source": "https://www.nvidia.com/h200-datasheet.pdf",
  "figures": {"memory.size": {"value": 141, "unit": "GB"},
              "memory.bandwidth": {"value": 4.8, "unit": "TB/s"},
              "compute.fp32": {"value": 67, "unit": "TFLOP/s"},
              "compute.fp16": {"value": 989, "unit": "TFLOP/s", "note": "dense"},
              "compute.fp16_sparse": {"value": 1979, "unit": "TFLOP/s"},
              "compute.fp8": {"value": 1979, "unit": "TFLOP/s"},
              "link.nvlink": {"value": 900, "unit": "GB/s"},
              "gpu.cuda_cores": {"value": 16896, "unit": "1"}}}
]})json";

constexpr const char* kPublished = R"json({"schema": "gpuvs.published/1", "figures": [
 {"gpu": "A100-SXM4-80GB", "metric": "model.resnet50.train", "value": 2470, "unit": "img/s",
  "precision": "mixed precision (AMP)", "setting": "batch 256 per GPU",
  "source": "https://github.com/NVIDIA/DeepLearningExamples", "publisher": "NVIDIA DLE",
  "date": "2021-04-20"}
]})json";

const Catalogue& catalogue() {
  static const Catalogue c = Catalogue::parse(kCatalogue, "test-catalogue.json");
  return c;
}

const Published& published() {
  static const Published p = Published::parse(kPublished, "test-published.json", catalogue());
  return p;
}

RunFile reference_run() {
  return load_run_file(std::string(GPUVS_SOURCE_DIR) + "/data/reference/h200-sxm-run.json");
}

// A run of one H200 with one HBM copy result.
RunFile run_with_copy(double value, double noise, Status status = Status::kOk) {
  RunFile run;
  GpuInfo g;
  g.index = 0;
  g.name = "NVIDIA H200";
  g.pci_device_id = 0x233510DE;
  run.system.gpus.push_back(g);
  Result r;
  r.id = "memory.hbm.copy";
  r.devices = {0};
  r.value = value;
  r.unit = "B/s";
  r.stats.median = value;
  r.stats.noise = noise;
  r.stats.samples = 10;
  r.status = status;
  if (status != Status::kOk) r.status_reason = "checksum mismatch at element 17";
  run.results.push_back(r);
  return run;
}

const Row* find_row(const Comparison& c, const std::string& metric) {
  for (const Row& r : c.rows)
    if (r.metric == metric) return &r;
  return nullptr;
}

TEST(Compare, RealH200RunAgainstA100Datasheet) {
  const RunFile run = reference_run();
  std::vector<CompareInput> in(2);
  in[0].run = &run;
  in[0].gpu_index = 0;
  in[0].run_ref = "h200-sxm-run.json";
  in[1].spec = catalogue().find("A100");
  const Comparison c = build_comparison(in, catalogue(), published(), CompareOptions{});

  ASSERT_EQ(c.columns.size(), 2u);
  EXPECT_TRUE(c.columns[0].measured);
  EXPECT_EQ(c.columns[0].catalogue_id, "H200-SXM");  // matched by PCI id and driver name
  // A measured column names its GPU, host, UUID and file.
  EXPECT_EQ(c.columns[0].label, fmt::format("H200 {} {} h200-sxm-run", run.meta.host,
                                            run.system.gpus[0].uuid.substr(4, 8)));
  EXPECT_EQ(c.columns[0].file, "h200-sxm-run.json");
  EXPECT_EQ(c.columns[0].host, run.meta.host);
  EXPECT_EQ(c.columns[0].uuid, run.system.gpus[0].uuid);
  EXPECT_EQ(c.columns[0].gpu_index, 0);
  EXPECT_FALSE(c.columns[1].measured);
  EXPECT_EQ(c.columns[1].label, "A100-SXM4-80GB");

  const Row* bw = find_row(c, "memory.bandwidth");
  ASSERT_NE(bw, nullptr);
  const Cell& h200 = bw->cells[0];
  ASSERT_TRUE(h200.value);
  EXPECT_EQ(h200.source, Source::kMeasured);
  // The figures of the bundled run itself (re-measured runs replace the file).
  const Result* copy = nullptr;
  for (const Result& r : run.results)
    if (r.id == "memory.hbm.copy") copy = &r;
  ASSERT_NE(copy, nullptr);
  EXPECT_DOUBLE_EQ(*h200.value, copy->value);
  EXPECT_GT(*h200.value, 4.0e12);  // an H200 copies at ~4.3 TB/s
  ASSERT_TRUE(h200.noise);
  EXPECT_DOUBLE_EQ(*h200.noise, copy->stats.noise);
  ASSERT_TRUE(h200.of_datasheet);
  EXPECT_NEAR(*h200.of_datasheet, copy->value / 4.8e12, 1e-9);
  EXPECT_NE(h200.source_ref.find("h200-sxm-run.json"), std::string::npos) << h200.source_ref;
  EXPECT_NE(h200.source_ref.find("memory.hbm.copy"), std::string::npos);
  EXPECT_EQ(h200.verdict, "baseline");
  const Cell& a100 = bw->cells[1];
  EXPECT_EQ(a100.source, Source::kDatasheet);
  EXPECT_DOUBLE_EQ(*a100.value, 2039e9);
  EXPECT_EQ(a100.source_ref, "https://www.nvidia.com/a100-datasheet.pdf");
  // Measured against a datasheet: no ratio and no verdict, but the two datasheets' ratio.
  EXPECT_FALSE(a100.ratio);
  EXPECT_EQ(a100.verdict, "different basis");
  EXPECT_EQ(a100.basis, "");
  ASSERT_TRUE(a100.datasheet_ratio);
  EXPECT_NEAR(*a100.datasheet_ratio, 2039e9 / 4.8e12, 1e-9);

  // Measured where the run has it: the best-shape FP16 GEMM.
  const Row* fp16_measured = find_row(c, "compute.fp16");
  ASSERT_NE(fp16_measured, nullptr);
  EXPECT_EQ(fp16_measured->cells[0].source, Source::kMeasured);
  EXPECT_NE(fp16_measured->cells[0].source_ref.find("compute.gemm.fp16"), std::string::npos);

  // Not measured: the H200 column falls back to its datasheet, labelled as such.
  RunFile memory_only = run;
  std::erase_if(memory_only.results,
                [](const Result& r) { return r.id.rfind("compute.", 0) == 0; });
  in[0].run = &memory_only;
  const Comparison c2 = build_comparison(in, catalogue(), published(), CompareOptions{});
  const Row* fp16 = find_row(c2, "compute.fp16");
  ASSERT_NE(fp16, nullptr);
  EXPECT_EQ(fp16->cells[0].source, Source::kDatasheet);
  EXPECT_DOUBLE_EQ(*fp16->cells[0].value, 989e12);
  EXPECT_TRUE(fp16->cells[0].fallback);
  EXPECT_EQ(fp16->cells[0].note, "datasheet: the run did not measure it; dense");
  // Datasheet against datasheet: a ratio, of that basis.
  EXPECT_EQ(fp16->cells[1].basis, "datasheet");
  EXPECT_NEAR(*fp16->cells[1].ratio, 312e12 / 989e12, 1e-9);
  EXPECT_FALSE(fp16->cells[0].noise);
  EXPECT_FALSE(fp16->cells[0].of_datasheet);

  // Missing stays missing: no boost clock for the H200 in this catalogue.
  const Row* clock = find_row(c, "clock.boost");
  ASSERT_NE(clock, nullptr);
  EXPECT_FALSE(clock->cells[0].value);
  EXPECT_FALSE(clock->cells[0].ratio);
  EXPECT_EQ(clock->cells[0].verdict, "");
  EXPECT_FALSE(clock->cells[1].ratio);  // no baseline value: no ratio

  // Published model figure for the A100 only, in a row of its own settings; the
  // H200's measured ResNet-50 training in the row of its configuration.
  const Row* rn = nullptr;
  for (const Row& r : c.rows)
    if (r.metric == "model.resnet50.train" && r.published) rn = &r;
  ASSERT_NE(rn, nullptr);
  EXPECT_EQ(rn->cells[1].source, Source::kPublished);
  EXPECT_NE(rn->cells[1].note.find("NVIDIA DLE"), std::string::npos);
  EXPECT_FALSE(rn->cells[0].value);
  const Row* measured_rn = find_row(c, "model.resnet50.train");
  ASSERT_NE(measured_rn, nullptr);
  EXPECT_FALSE(measured_rn->published);
  EXPECT_EQ(measured_rn->config_text, "bf16, batch 256");
  EXPECT_EQ(measured_rn->cells[0].source, Source::kMeasured);
  EXPECT_FALSE(measured_rn->cells[1].value);

  // Rows where nothing is known are dropped; an "unsupported" cell is not missing.
  EXPECT_EQ(find_row(c2, "compute.bf16"), nullptr);
  const Row* fp8 = find_row(c, "compute.fp8");
  ASSERT_NE(fp8, nullptr);
  EXPECT_TRUE(fp8->cells[1].unsupported);
  EXPECT_FALSE(fp8->cells[1].value);

  // Rows follow metrics() order.
  size_t last = 0;
  for (const Row& r : c.rows) {
    size_t pos = 0;
    for (; pos < metrics().size() && metrics()[pos].id != r.metric; ++pos) {
    }
    EXPECT_GE(pos, last);
    last = pos;
  }
}

TEST(Compare, NoMissingValueIsEverZero) {
  const RunFile run = reference_run();
  std::vector<CompareInput> in(2);
  in[0].run = &run;
  in[1].spec = catalogue().find("A100");
  const Comparison c = build_comparison(in, catalogue(), published(), CompareOptions{});
  for (const Row& r : c.rows)
    for (const Cell& cell : r.cells)
      if (cell.value) {
        EXPECT_GT(*cell.value, 0) << r.metric;
      }
}

TEST(Compare, WithoutDatasheetRowsOnlyMeasurementsRemain) {
  const RunFile run = reference_run();
  std::vector<CompareInput> in(2);
  in[0].run = &run;
  in[1].spec = catalogue().find("A100");
  CompareOptions o;
  o.include_datasheet_rows = false;
  o.include_published = false;
  const Comparison c = build_comparison(in, catalogue(), published(), o);
  ASSERT_FALSE(c.rows.empty());
  EXPECT_NE(find_row(c, "memory.bandwidth"), nullptr);
  for (const Row& r : c.rows) {  // only what the run measured; the datasheet side is empty
    EXPECT_EQ(r.cells[0].source, Source::kMeasured) << r.metric;
    EXPECT_TRUE(r.cells[0].value) << r.metric;
    EXPECT_FALSE(r.cells[1].value) << r.metric;
    EXPECT_EQ(r.cells[1].verdict, "") << r.metric;
  }
}

// Verdict between two measured H200 runs of given values and noise.
std::string verdict(double base, double base_noise, double other, double other_noise) {
  const RunFile a = run_with_copy(base, base_noise);
  const RunFile b = run_with_copy(other, other_noise);
  std::vector<CompareInput> in(2);
  in[0].run = &a;
  in[1].run = &b;
  const Comparison c = build_comparison(in, catalogue(), published(), CompareOptions{});
  const Row* bw = find_row(c, "memory.bandwidth");
  return bw ? bw->cells[1].verdict : "no row";
}

TEST(Compare, VerdictIsNoiseAware) {
  // 2 % noise each: 2 sigma of the combined noise is 5.7 %.
  EXPECT_EQ(verdict(4.0e12, 0.02, 4.2e12, 0.02), "same");    // +5 %: inside the noise
  EXPECT_EQ(verdict(4.0e12, 0.02, 3.8e12, 0.02), "same");    // -5 %
  EXPECT_EQ(verdict(4.0e12, 0.02, 4.5e12, 0.02), "faster");  // +12.5 %: beyond
  EXPECT_EQ(verdict(4.0e12, 0.02, 3.5e12, 0.02), "slower");  // -12.5 %
  // Quiet measurements: never finer than 1 %.
  EXPECT_EQ(verdict(4.0e12, 0.001, 4.03e12, 0.001), "same");   // +0.75 %
  EXPECT_EQ(verdict(4.0e12, 0.001, 4.1e12, 0.001), "faster");  // +2.5 %
}

TEST(Compare, MeasuredAndDatasheetGetNoSpeedVerdict) {
  // Measured 4.0 TB/s vs the H200's datasheet 4.8 TB/s: of different bases, no ratio
  // ("1.20x faster" would compare a promise with a measurement).
  const RunFile run = run_with_copy(4.0e12, 0.03);
  std::vector<CompareInput> in(3);
  in[0].run = &run;
  in[1].spec = catalogue().find("H200");
  in[2].spec = catalogue().find("A100");
  const Comparison c = build_comparison(in, catalogue(), published(), CompareOptions{});
  EXPECT_EQ(c.columns[1].label, "H200-SXM");
  const Row* bw = find_row(c, "memory.bandwidth");
  ASSERT_NE(bw, nullptr);
  for (size_t i : {1, 2}) {
    EXPECT_EQ(bw->cells[i].verdict, "different basis") << i;
    EXPECT_FALSE(bw->cells[i].ratio) << i;
    EXPECT_FALSE(bw->cells[i].diff_pct) << i;
    EXPECT_FALSE(bw->cells[i].noise) << i;  // a datasheet figure has no noise
  }
  // The like-with-like ratio that exists: datasheet over datasheet.
  EXPECT_NEAR(*bw->cells[1].datasheet_ratio, 1.0, 1e-12);
  EXPECT_NEAR(*bw->cells[2].datasheet_ratio, 2039e9 / 4.8e12, 1e-12);
  EXPECT_NEAR(*bw->cells[0].of_datasheet, 4.0 / 4.8, 1e-12);
  // Non-throughput metrics read higher/lower.
  const Row* size = find_row(c, "memory.size");
  ASSERT_NE(size, nullptr);
  EXPECT_EQ(size->cells[0].verdict, "baseline");  // datasheet fallback of the run's GPU
  EXPECT_EQ(size->cells[1].verdict, "same");
  EXPECT_EQ(size->cells[2].verdict, "lower");
}

TEST(Compare, BaselineOption) {
  std::vector<CompareInput> in(2);
  in[0].spec = catalogue().find("A100");
  in[1].spec = catalogue().find("H200");
  CompareOptions o;
  o.baseline = 1;
  const Comparison c = build_comparison(in, catalogue(), published(), o);
  EXPECT_EQ(c.baseline, 1u);
  const Row* cores = find_row(c, "gpu.cuda_cores");
  ASSERT_NE(cores, nullptr);
  EXPECT_EQ(cores->cells[1].verdict, "baseline");
  EXPECT_EQ(cores->cells[0].verdict, "lower");
  EXPECT_NEAR(*cores->cells[0].ratio, 6912.0 / 16896, 1e-12);
}

TEST(Compare, InvalidResultIsNeverANumber) {
  const RunFile run = run_with_copy(1.234e12, 0.001, Status::kInvalid);
  std::vector<CompareInput> in(2);
  in[0].spec = catalogue().find("A100");
  in[1].run = &run;
  const Comparison c = build_comparison(in, catalogue(), published(), CompareOptions{});
  const Row* bw = find_row(c, "memory.bandwidth");
  ASSERT_NE(bw, nullptr);
  const Cell& cell = bw->cells[1];
  EXPECT_TRUE(cell.invalid);
  EXPECT_FALSE(cell.value);
  EXPECT_FALSE(cell.ratio);
  EXPECT_FALSE(cell.of_datasheet);
  EXPECT_EQ(cell.verdict, "");
  EXPECT_NE(cell.note.find("checksum mismatch"), std::string::npos);
}

TEST(Compare, ThrottledAndOtherGpusResults) {
  RunFile run = run_with_copy(4.0e12, 0.001);
  run.results[0].clocks = ClockRecord{};
  run.results[0].clocks->throttle_reasons = {"sw_power_cap"};
  GpuInfo second = run.system.gpus[0];
  second.index = 1;
  run.system.gpus.push_back(second);
  std::vector<CompareInput> in(2);
  in[0].run = &run;
  in[0].gpu_index = 0;
  in[1].run = &run;
  in[1].gpu_index = 1;
  const Comparison c = build_comparison(in, catalogue(), published(), CompareOptions{});
  // Two GPUs of one run: told apart by index (and UUID, host, file where known).
  EXPECT_EQ(c.columns[0].label, "H200 #0");
  EXPECT_EQ(c.columns[1].label, "H200 #1");
  const Row* bw = find_row(c, "memory.bandwidth");
  ASSERT_NE(bw, nullptr);
  // Power capping is shown as such, not as a slowdown.
  EXPECT_FALSE(bw->cells[0].throttled);
  EXPECT_TRUE(bw->cells[0].power_capped);
  // GPU 1 has no result of its own: its datasheet, not GPU 0's measurement, marked as
  // a fallback and never given a speed verdict against GPU 0's measurement.
  EXPECT_EQ(bw->cells[1].source, Source::kDatasheet);
  EXPECT_TRUE(bw->cells[1].fallback);
  EXPECT_DOUBLE_EQ(*bw->cells[1].value, 4.8e12);
  EXPECT_EQ(bw->cells[1].verdict, "different basis");
}

TEST(Compare, UnknownGpuInARunHasNoDatasheet) {
  RunFile run = run_with_copy(1.0e12, 0.001);
  run.system.gpus[0].name = "NVIDIA Imaginary 9000";
  run.system.gpus[0].pci_device_id = 0xFFFF10DE;
  std::vector<CompareInput> in(1);
  in[0].run = &run;
  const Comparison c = build_comparison(in, catalogue(), published(), CompareOptions{});
  EXPECT_EQ(c.columns[0].catalogue_id, "");
  ASSERT_EQ(c.rows.size(), 1u);
  EXPECT_FALSE(c.rows[0].cells[0].of_datasheet);
}

TEST(Compare, DuplicateLabelsAreMadeUnique) {
  std::vector<CompareInput> in(2);
  in[0].spec = catalogue().find("H200");
  in[1].spec = catalogue().find("H200");
  const Comparison c = build_comparison(in, catalogue(), published(), CompareOptions{});
  EXPECT_EQ(c.columns[0].label, "H200-SXM");
  EXPECT_EQ(c.columns[1].label, "H200-SXM (2)");
}

TEST(Compare, SourceNames) {
  EXPECT_STREQ(to_string(Source::kMeasured), "measured");
  EXPECT_STREQ(to_string(Source::kDatasheet), "datasheet");
  EXPECT_STREQ(to_string(Source::kPublished), "published");
  EXPECT_STREQ(to_string(Source::kDerived), "derived");
  EXPECT_TRUE(is_throughput_unit("B/s"));
  EXPECT_TRUE(is_throughput_unit("img/s"));
  EXPECT_FALSE(is_throughput_unit("B"));
  EXPECT_FALSE(is_throughput_unit("W"));
}

}  // namespace
}  // namespace gpuvs
