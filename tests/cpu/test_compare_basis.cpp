// Like with like, on the run files gpuvs wrote on H200s (data/reference) and the
// built-in catalogue and published figures: hostile mixes of a run lacking metrics, a
// catalogue-only column, two GPUs of one run, a published figure at another
// precision, model runs of several configurations, collectives; and the headline.
#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <string>
#include <vector>

#include "core/run_file.h"
#include "report/compare.h"
#include "report/headline.h"

namespace gpuvs {
namespace {

RunFile reference(const std::string& name) {
  return load_run_file(std::string(GPUVS_SOURCE_DIR) + "/data/reference/" + name + ".json");
}

// Every GPU of every run, then the catalogue entries.
std::vector<CompareInput> inputs(const std::vector<const RunFile*>& runs,
                                 const std::vector<std::string>& specs = {}) {
  std::vector<CompareInput> in;
  for (const RunFile* r : runs)
    for (const GpuInfo& g : r->system.gpus) {
      CompareInput i;
      i.run = r;
      i.gpu_index = g.index;
      i.run_ref = r->meta.host + "/" + r->meta.started_at + ".json";
      in.push_back(i);
    }
  for (const std::string& s : specs) {
    CompareInput i;
    i.spec = Catalogue::builtin().find(s);
    in.push_back(i);
  }
  return in;
}

Comparison compare(const std::vector<CompareInput>& in, size_t baseline = 0) {
  CompareOptions o;
  o.baseline = baseline;
  return build_comparison(in, Catalogue::builtin(), Published::builtin(), o);
}

const Row* row(const Comparison& c, const std::string& metric, const std::string& config = "") {
  for (const Row& r : c.rows)
    if (r.metric == metric && (config.empty() || r.config_text == config)) return &r;
  return nullptr;
}

bool speed_or_size_verdict(const std::string& v) {
  return v == "same" || v == "faster" || v == "slower" || v == "higher" || v == "lower";
}

// The rule itself, on every cell of a comparison: a verdict only between one basis.
void expect_like_with_like(const Comparison& c) {
  for (const Row& r : c.rows) {
    const Cell& base = r.cells[c.baseline];
    for (size_t i = 0; i < r.cells.size(); ++i) {
      const Cell& cell = r.cells[i];
      if (i == c.baseline) continue;
      if (speed_or_size_verdict(cell.verdict)) {
        EXPECT_EQ(basis_of(cell), basis_of(base)) << r.metric << " " << r.config_text << " " << i;
        EXPECT_EQ(cell.basis, basis_of(base)) << r.metric;
        EXPECT_TRUE(cell.ratio) << r.metric;
      } else {
        EXPECT_FALSE(cell.ratio) << r.metric << " " << r.config_text << " " << i;
      }
      if (cell.value && base.value && !cell.invalid && !base.invalid &&
          basis_of(cell) != basis_of(base)) {
        EXPECT_EQ(cell.verdict, "different basis") << r.metric << " " << i;
      }
    }
  }
}

// gpuvs compare h200x2-run.json h200-bench-compute.json A100-SXM4-80GB: two GPUs of one
// run, a run without HBM or link results, and a catalogue column.
TEST(CompareBasis, TwoRunsOfOneGpuTypeAndADatasheet) {
  const RunFile two = reference("h200x2-run");
  const RunFile compute = reference("h200-bench-compute");
  const Comparison c = compare(inputs({&two, &compute}, {"A100-SXM4-80GB"}));
  ASSERT_EQ(c.columns.size(), 4u);
  expect_like_with_like(c);
  // Columns tell the two GPUs of one run apart, and the other run from them.
  std::set<std::string> labels;
  for (const Column& col : c.columns)
    EXPECT_TRUE(labels.insert(col.label).second) << col.label;
  EXPECT_NE(c.columns[0].label.find("H200 #0 "), std::string::npos) << c.columns[0].label;
  EXPECT_NE(c.columns[1].label.find("H200 #1 "), std::string::npos) << c.columns[1].label;
  EXPECT_EQ(c.columns[1].uuid, two.system.gpus[1].uuid);

  const Row* bw = row(c, "memory.bandwidth");
  ASSERT_NE(bw, nullptr);
  EXPECT_EQ(bw->cells[1].verdict, "same");  // both GPUs measured 4.27 TB/s
  EXPECT_EQ(bw->cells[1].basis, "measured");
  // The compute run did not measure HBM: its datasheet stands in, marked, no verdict.
  EXPECT_TRUE(bw->cells[2].fallback);
  EXPECT_DOUBLE_EQ(*bw->cells[2].value, 4.8e12);
  EXPECT_EQ(bw->cells[2].verdict, "different basis");
  EXPECT_EQ(bw->cells[3].verdict, "different basis");
  const Row* nvlink = row(c, "link.nvlink");
  ASSERT_NE(nvlink, nullptr);
  EXPECT_EQ(nvlink->cells[0].source, Source::kMeasured);
  EXPECT_NEAR(*nvlink->cells[0].value, 779e9, 2e9);
  EXPECT_EQ(nvlink->cells[2].verdict, "different basis");  // 900 datasheet, not "1.16x faster"
  // Datasheet figures meet each other: the two H200 columns' memory size is the same
  // datasheet figure, the A100's is lower.
  const Row* size = row(c, "memory.size");
  ASSERT_NE(size, nullptr);
  EXPECT_EQ(size->cells[2].verdict, "same");
  EXPECT_EQ(size->cells[3].verdict, "lower");
  EXPECT_EQ(size->cells[3].basis, "datasheet");
  // The measured figures that reach the comparison now: host link, peer, all_reduce,
  // launch, models.
  for (const char* m :
       {"link.pcie", "link.host_h2d", "link.peer_latency", "collective.all_reduce_busbw",
        "collective.all_reduce_latency", "launch.latency", "launch.chain_graph",
        "model.resnet50.train", "model.resnet50.infer.step_time"}) {
    const Row* r = row(c, m);
    ASSERT_NE(r, nullptr) << m;
    EXPECT_EQ(r->cells[0].source, Source::kMeasured) << m;
    EXPECT_TRUE(r->cells[0].value) << m;
  }
  EXPECT_EQ(row(c, "collective.all_reduce_busbw")->config_text, "2 GPUs, 2 GiB");
  EXPECT_EQ(row(c, "link.pcie")->config_text, "256 MiB");
  // Of 67 cells with a figure on both sides against the baseline, none mixes bases:
  // checked above for every row; the count of verdicts across bases is zero.
  size_t across = 0;
  for (const Row& r : c.rows)
    for (size_t i = 1; i < r.cells.size(); ++i)
      if (speed_or_size_verdict(r.cells[i].verdict) &&
          basis_of(r.cells[i]) != basis_of(r.cells[c.baseline]))
        ++across;
  EXPECT_EQ(across, 0u);
}

// Model runs of three precisions: one row per configuration, a measured figure never
// in a published row, published figures at their own settings in rows of their own.
TEST(CompareBasis, ModelRowsPerConfigurationAndPublishedBesideThem) {
  const RunFile fp32 = reference("h200-model-resnet50-fp32-train");
  const RunFile tf32 = reference("h200-model-resnet50-tf32-train");
  const RunFile bf16 = reference("h200-model-resnet50-bf16-train");
  const Comparison c = compare(inputs({&fp32, &tf32, &bf16}, {"A100-SXM4-80GB"}));
  expect_like_with_like(c);
  std::vector<const Row*> measured, published;
  for (const Row& r : c.rows)
    if (r.metric == "model.resnet50.train") (r.published ? published : measured).push_back(&r);
  ASSERT_EQ(measured.size(), 3u);
  EXPECT_EQ(measured[0]->config_text, "fp32, batch 256");
  EXPECT_EQ(measured[1]->config_text, "tf32, batch 256");
  EXPECT_EQ(measured[2]->config_text, "bf16, batch 256");
  for (size_t k = 0; k < 3; ++k) {
    // Each configuration's row holds its own run's figure and no other.
    for (size_t i = 0; i < 4; ++i) {
      EXPECT_EQ(static_cast<bool>(measured[k]->cells[i].value), i == k) << k << " " << i;
      if (measured[k]->cells[i].value) {
        EXPECT_EQ(measured[k]->cells[i].source, Source::kMeasured);
      }
    }
  }
  ASSERT_EQ(published.size(), 2u);  // the A100's AMP and TF32 figures
  for (const Row* r : published) {
    EXPECT_NE(r->config_text.find("published, NVIDIA DeepLearningExamples (PyTorch): "),
              std::string::npos)
        << r->config_text;
    for (size_t i = 0; i < 3; ++i)
      EXPECT_FALSE(r->cells[i].value) << r->config_text;
    EXPECT_EQ(r->cells[3].source, Source::kPublished);
  }
  EXPECT_EQ(published[0]->config_text,
            "published, NVIDIA DeepLearningExamples (PyTorch): fp16, batch 256");
  // A configuration's other figures come in rows of the same configuration.
  const Row* step = row(c, "model.resnet50.train.step_time", "tf32, batch 256");
  ASSERT_NE(step, nullptr);
  EXPECT_TRUE(step->cells[1].value);
  EXPECT_FALSE(step->cells[2].value);
}

// The MLPerf figure of an H200 (TensorRT, INT8) is never shown in place of the bf16
// inference measured here: it has a row of its own settings, beside.
TEST(CompareBasis, PublishedFigureAtAnotherPrecisionStaysInItsOwnRow) {
  const RunFile infer = reference("h200-model-resnet50-bf16-infer");
  const Comparison c = compare(inputs({&infer}, {"A100-SXM4-80GB"}));
  expect_like_with_like(c);
  const Row* measured = row(c, "model.resnet50.infer", "bf16, batch 256");
  ASSERT_NE(measured, nullptr);
  EXPECT_NEAR(*measured->cells[0].value, 25723, 1);
  EXPECT_FALSE(measured->cells[1].value);
  const Row* mlperf = row(c, "model.resnet50.infer",
                          "published, MLPerf Inference Offline (closed division, TensorRT): int8");
  ASSERT_NE(mlperf, nullptr);
  EXPECT_DOUBLE_EQ(*mlperf->cells[0].value, 94620);  // the H200's, labelled published
  EXPECT_EQ(mlperf->cells[0].source, Source::kPublished);
  EXPECT_EQ(mlperf->cells[1].basis, "published");  // MLPerf against MLPerf: a ratio
  EXPECT_NEAR(*mlperf->cells[1].ratio, 40576.5 / 94620, 1e-9);
  // Two published figures of one GPU in different suites and settings never share a row.
  for (const Row& r : c.rows)
    if (r.published && r.metric == "model.bert-large.infer") {
      EXPECT_FALSE(r.cells[1].value && r.cells[0].value && r.cells[1].note == r.cells[0].note);
    }
}

// The collectives of a two-GPU run reach the comparison: bus bandwidth at the largest
// size, latency at the smallest, per GPU count; not only datasheet rows.
TEST(CompareBasis, CollectivesReachTheComparison) {
  const RunFile run = reference("h200x2-collectives-allreduce");
  const Comparison c = compare(inputs({&run}));
  const Row* busbw = row(c, "collective.all_reduce_busbw");
  ASSERT_NE(busbw, nullptr);
  EXPECT_EQ(busbw->config_text, "2 GPUs, 4 GiB");
  EXPECT_NEAR(*busbw->cells[0].value, 343.5e9, 1e9);
  const Row* latency = row(c, "collective.all_reduce_latency");
  ASSERT_NE(latency, nullptr);
  EXPECT_EQ(latency->config_text, "2 GPUs, 8 B");
  EXPECT_NEAR(*latency->cells[0].value, 12.7e-6, 0.1e-6);
  EXPECT_FALSE(latency->higher_is_better);
  EXPECT_TRUE(latency->speed);
}

// Two sweeps of different sizes compare at the largest size both measured.
TEST(CompareBasis, SweepsCompareAtACommonSize) {
  const RunFile two = reference("h200x2-run");
  RunFile shorter = two;
  // Drop the largest host-link size from the second copy.
  double largest = 0;
  for (const Result& r : two.results)
    if (r.id == "host.h2d.pinned")
      if (auto b = number_parameter(r, "bytes")) largest = std::max(largest, *b);
  std::erase_if(shorter.results, [&](const Result& r) {
    return r.id == "host.h2d.pinned" && number_parameter(r, "bytes") == largest;
  });
  shorter.meta.started_at = "2026-12-01T00:00:00Z";
  std::vector<CompareInput> in = inputs({&two, &shorter});
  const Comparison c = compare(in);
  const Row* h2d = row(c, "link.host_h2d");
  ASSERT_NE(h2d, nullptr);
  EXPECT_EQ(h2d->config_text, "16 MiB");  // not 256 MiB, which the second lacks
  for (const Cell& cell : h2d->cells)
    EXPECT_TRUE(cell.value);
}

TEST(Headline, PairsSayWhichIsFasterOnWhichBasis) {
  const RunFile two = reference("h200x2-run");
  const RunFile infer = reference("h200-model-resnet50-bf16-infer");
  // Baseline: the A100's datasheet; then both H200s of the two-GPU run, then a model run.
  std::vector<CompareInput> in = inputs({&two, &infer}, {"A100-SXM4-80GB"});
  std::rotate(in.begin(), in.end() - 1, in.end());
  const Comparison c = compare(in);
  const std::vector<HeadlinePair> pairs = build_headline(c);
  ASSERT_EQ(pairs.size(), 3u);
  auto item = [&](const HeadlinePair& p, const std::string& metric, size_t n = 0) {
    for (const HeadlineItem& it : p.items)
      if (it.metric == metric && n-- == 0) return &it;
    return static_cast<const HeadlineItem*>(nullptr);
  };
  const HeadlinePair& h200 = pairs[0];
  EXPECT_EQ(h200.baseline, 0u);
  // Measured H200 against the A100's datasheet: both shown, no ratio, the datasheets' one.
  const HeadlineItem* bw = item(h200, "memory.bandwidth");
  ASSERT_NE(bw, nullptr);
  EXPECT_EQ(bw->basis, "different");
  EXPECT_FALSE(bw->ratio);
  EXPECT_NEAR(*bw->datasheet_ratio, 4.8 / 2.039, 1e-9);
  EXPECT_EQ(headline_comparison_text(*bw), "different basis, no ratio; datasheets 2.35x");
  // Memory size: datasheet against datasheet.
  const HeadlineItem* size = item(h200, "memory.size");
  ASSERT_NE(size, nullptr);
  EXPECT_EQ(size->basis, "datasheet");
  EXPECT_EQ(size->verdict, "higher");
  EXPECT_EQ(headline_comparison_text(*size), "1.76x higher (datasheet)");
  // The A100 has no FP8: said, not a missing figure.
  const HeadlineItem* fp8 = item(h200, "compute.fp8");
  ASSERT_NE(fp8, nullptr);
  EXPECT_EQ(headline_comparison_text(*fp8), "baseline lacks it (datasheet)");
  // ResNet-50 inference: the H200's measured bf16 against the A100's published MLPerf
  // (different bases), then MLPerf against MLPerf (one basis, a ratio).
  const HeadlinePair& rn = pairs[2];
  const HeadlineItem* first = item(rn, "model.resnet50.infer", 0);
  const HeadlineItem* second = item(rn, "model.resnet50.infer", 1);
  ASSERT_NE(first, nullptr);
  ASSERT_NE(second, nullptr);
  EXPECT_EQ(first->basis, "different");
  EXPECT_EQ(basis_of(first->other), "measured");
  EXPECT_EQ(second->basis, "published");
  EXPECT_NEAR(*second->ratio, 94620 / 40576.5, 1e-9);
  EXPECT_EQ(second->verdict, "faster");
  // Every item is one of the headline metrics, and the summary counts like with like.
  for (const HeadlinePair& p : pairs) {
    EXPECT_FALSE(p.summary.empty());
    for (const HeadlineItem& it : p.items) {
      const MetricDef* m = find_metric(it.metric);
      ASSERT_NE(m, nullptr) << it.metric;
      EXPECT_TRUE(m->headline) << it.metric;
      if (it.basis == "different") {
        EXPECT_FALSE(it.ratio) << it.metric;
      }
    }
  }
  EXPECT_NE(pairs[0].summary.find("of different bases or settings"), std::string::npos)
      << pairs[0].summary;
  // One column: no pair.
  EXPECT_TRUE(build_headline(compare(inputs({&infer}))).empty());
}

}  // namespace
}  // namespace gpuvs
