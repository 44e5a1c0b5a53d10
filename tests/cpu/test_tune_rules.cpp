// The model rules of `gpuvs tune` (tune/recommend.h: precision, batch and knee, CUDA
// graph, global batch) and recommend() over a whole request, on synthetic run files
// (tune_rules_test_util.h).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tune_rules_test_util.h"

namespace gpuvs::tune {
namespace {

// ---- 1. precision ------------------------------------------------------------------

RunFile bert_precisions(double fp8) {
  RunFile run = run_with_gpus(1);
  for (const auto& [p, v] : std::vector<std::pair<std::string, double>>{
           {"fp32", 300}, {"tf32", 900}, {"fp16", 1590}, {"bf16", 1610}, {"fp8", fp8}})
    run.results.push_back(rate("bert-large", "train", p, 64, v));
  return run;
}

// The precision chosen for the model and mode, its evidence checked against the run.
Setting chosen_precision(const RunFile& run, const std::string& model, const std::string& mode) {
  const Recommendations rec = recommend_precision(run, 0, model, mode);
  expect_rests_on_run(run, rec);
  const Setting* s = find(rec, "precision");
  return s ? *s : Setting{};
}

// The precision setting with fp8 at `ratio` times bf16.
Setting precision_with_fp8(double ratio) {
  return chosen_precision(bert_precisions(1610 * ratio), "bert-large", "train");
}

TEST(TuneRules, Fp8AtFourPercentIsNotChosen) {
  const Setting got = precision_with_fp8(1.04);
  const Setting* s = &got;
  EXPECT_EQ(s->value, ParamValue(std::string("bf16")));
  EXPECT_TRUE(contains(s->why, "fp8 1674 is 1.040x bf16")) << s->why;
  EXPECT_TRUE(contains(s->why, "did not pay")) << s->why;
  EXPECT_TRUE(s->caveat.empty());
  EXPECT_EQ(s->scope, (std::vector<std::string>{"bert-large", "train"}));
}

TEST(TuneRules, Fp8AtSixPercentIsChosenWithTheChecksCaveat) {
  const Setting got = precision_with_fp8(1.06);
  const Setting* s = &got;
  EXPECT_EQ(s->value, ParamValue(std::string("fp8")));
  EXPECT_TRUE(contains(s->why, "1.060x bf16")) << s->why;
  EXPECT_TRUE(contains(s->caveat, "rel_l2 up to 0.2")) << s->caveat;
  EXPECT_TRUE(contains(s->caveat, "docs/model-checks.md"));
  // The ratio is derived from the two measured figures.
  const auto derived = std::find_if(s->rests_on.begin(), s->rests_on.end(),
                                    [](const Evidence& e) { return e.basis == "derived"; });
  ASSERT_NE(derived, s->rests_on.end());
  EXPECT_NEAR(derived->value, 1.06, 1e-9);
}

TEST(TuneRules, Fp8WithinItsNoiseDoesNotPay) {
  RunFile run = bert_precisions(0);
  run.results.back() = rate("bert-large", "train", "fp8", 64, 1610 * 1.06, {.noise = 0.08});
  const Setting s = chosen_precision(run, "bert-large", "train");
  EXPECT_EQ(s.value, ParamValue(std::string("bf16")));
  EXPECT_TRUE(contains(s.why, "within noise (8.0 %)")) << s.why;
}

TEST(TuneRules, TieWithinNoisePrefersTheWiderFormat) {
  RunFile run = run_with_gpus(1);
  run.results.push_back(rate("resnet50", "train", "bf16", 256, 3000));
  run.results.push_back(rate("resnet50", "train", "fp16", 256, 2985));  // 1.005x: a tie
  run.results.push_back(rate("resnet50", "train", "fp32", 256, 1000));
  Setting s = chosen_precision(run, "resnet50", "train");
  EXPECT_EQ(s.value, ParamValue(std::string("fp16")));
  EXPECT_TRUE(contains(s.why, "wider format is kept")) << s.why;

  run.results[1].value = 2900;  // 1.03x: beyond the 1 % floor
  s = chosen_precision(run, "resnet50", "train");
  EXPECT_EQ(s.value, ParamValue(std::string("bf16")));
  EXPECT_TRUE(contains(s.why, "bf16: the fastest, 3000 img/s, 1.034x fp16")) << s.why;
}

TEST(TuneRules, Tf32CarriesTheRoundingCaveat) {
  RunFile run = run_with_gpus(1);
  run.results.push_back(rate("resnet50", "infer", "fp32", 256, 1000));
  run.results.push_back(rate("resnet50", "infer", "tf32", 256, 3000));
  const Setting s = chosen_precision(run, "resnet50", "infer");
  EXPECT_EQ(s.value, ParamValue(std::string("tf32")));
  EXPECT_TRUE(contains(s.caveat, "reduced-precision math mode"));
}

TEST(TuneRules, ResultsNotOkAreNeverUsed) {
  RunFile run = run_with_gpus(1);
  run.results.push_back(
      rate("bert-large", "train", "bf16", 64, 5000, {.status = Status::kInvalid}));
  run.results.push_back(rate("bert-large", "train", "fp16", 64, 1500));
  run.results.push_back(rate("bert-large", "train", "fp32", 64, 400));
  Recommendations rec = recommend_precision(run, 0, "bert-large", "train");
  EXPECT_EQ(find(rec, "precision")->value, ParamValue(std::string("fp16")));
  EXPECT_TRUE(contains(find(rec, "precision")->why, "not used: model.bert-large.train.bf16"));
  EXPECT_TRUE(contains(find(rec, "precision")->why, "invalid: training loss"));
  expect_rests_on_run(run, rec);

  // Nothing ok: no setting, and the absent section says why.
  run.results.erase(run.results.begin() + 1, run.results.end());
  rec = recommend_precision(run, 0, "bert-large", "train");
  EXPECT_TRUE(rec.settings.empty());
  ASSERT_EQ(rec.absent.size(), 1u);
  EXPECT_EQ(rec.absent[0].section, "bert-large train");
  EXPECT_TRUE(contains(rec.absent[0].why, "invalid")) << rec.absent[0].why;
}

TEST(TuneRules, ResultsOfAnotherGpuAreNotThisGpus) {
  RunFile run = run_with_gpus(2);
  run.results.push_back(rate("resnet50", "train", "bf16", 256, 3000, {.gpu = 1}));
  run.results.push_back(rate("resnet50", "train", "fp32", 256, 1000, {.gpu = 1}));
  run.results.push_back(rate("resnet50", "train", "fp32", 256, 1100));
  const Recommendations rec = recommend_precision(run, 0, "resnet50", "train");
  EXPECT_EQ(find(rec, "precision")->value, ParamValue(std::string("fp32")));
  expect_rests_on_run(run, rec);
}

// ---- 2. batch ----------------------------------------------------------------------

TEST(TuneRules, BatchIsTheSearchsRecommendationAtTheRequestsHeadroom) {
  RunFile run = run_with_gpus(1);
  run.results.push_back(max_batch("bf16", 960, 856, 0.10));
  run.results.push_back(rate("bert-large", "train", "bf16", 64, 1610));
  run.results.push_back(rate("bert-large", "train", "bf16", 856, 1856));
  Recommendations rec = recommend_batch(run, 0, "bert-large", "train", "bf16", 0.10);
  const Setting* b = find(rec, "batch");
  ASSERT_NE(b, nullptr);
  EXPECT_EQ(b->value, ParamValue(int64_t{856}));
  EXPECT_TRUE(contains(b->why, "960 is the largest that fits (968 did not)")) << b->why;
  EXPECT_TRUE(contains(b->why, "1856 seq/s at 856, 1.15x batch 64's 1610")) << b->why;
  expect_rests_on_run(run, rec);

  rec = recommend_batch(run, 0, "bert-large", "train", "bf16", 0.20);
  EXPECT_EQ(find(rec, "batch"), nullptr);
  ASSERT_FALSE(rec.absent.empty());
  EXPECT_TRUE(contains(rec.absent[0].why, "the request asks 20.0 %")) << rec.absent[0].why;
}

TEST(TuneRules, KneeWhenTheBestIsTheLargestBatch) {
  RunFile run = run_with_gpus(1);
  for (const auto& [b, v] :
       std::vector<std::pair<int64_t, double>>{{32, 1000}, {64, 1500}, {128, 1800}, {256, 1900}})
    run.results.push_back(rate("bert-large", "train", "bf16", b, v));
  const Recommendations rec = recommend_batch(run, 0, "bert-large", "train", "bf16", 0.1);
  const Setting* k = find(rec, "batch_knee");
  ASSERT_NE(k, nullptr);
  EXPECT_EQ(k->value, ParamValue(int64_t{256}));  // 1800 is 0.947x: outside 3 %
  EXPECT_TRUE(contains(k->why, "the best measured")) << k->why;
  // No search in the run: the batch is absent, with its reason.
  EXPECT_EQ(find(rec, "batch"), nullptr);
  ASSERT_EQ(rec.absent.size(), 1u);
  EXPECT_TRUE(contains(rec.absent[0].why, "model.bert-large.train.bf16.max_batch"));
  expect_rests_on_run(run, rec);
}

TEST(TuneRules, KneeOfANonMonotoneLadder) {
  RunFile run = run_with_gpus(1);
  for (const auto& [b, v] :
       std::vector<std::pair<int64_t, double>>{{32, 1000}, {64, 1850}, {128, 1700}, {256, 1900}})
    run.results.push_back(rate("bert-large", "train", "bf16", b, v));
  // An eager result and another precision are no part of the ladder.
  run.results.push_back(rate("bert-large", "train", "bf16", 16, 1899, {.graph = false}));
  run.results.push_back(rate("bert-large", "train", "fp16", 16, 1899));
  const Recommendations rec = recommend_batch(run, 0, "bert-large", "train", "bf16", 0.1);
  const Setting* k = find(rec, "batch_knee");
  ASSERT_NE(k, nullptr);
  EXPECT_EQ(k->value, ParamValue(int64_t{64}));  // 1850 / 1900 = 0.974, the dip at 128 aside
  EXPECT_TRUE(contains(k->why, "0.974x the best measured (1900 at batch 256)")) << k->why;
  expect_rests_on_run(run, rec);
}

TEST(TuneRules, OneBatchIsNoLadder) {
  RunFile run = run_with_gpus(1);
  run.results.push_back(rate("bert-large", "train", "bf16", 64, 1610));
  const Recommendations rec = recommend_batch(run, 0, "bert-large", "train", "bf16", 0.1);
  EXPECT_EQ(find(rec, "batch_knee"), nullptr);
  EXPECT_TRUE(std::any_of(rec.absent.begin(), rec.absent.end(),
                          [](const Absent& a) { return contains(a.why, "batch_knee: 1 batch"); }));
}

// ---- 3. CUDA graph -----------------------------------------------------------------

TEST(TuneRules, CudaGraphWithinNoiseIsLeftOff) {
  RunFile run = run_with_gpus(1);
  run.results.push_back(rate("resnet50", "train", "bf16", 256, 3000));
  run.results.push_back(rate("resnet50", "train", "bf16", 256, 2990, {.graph = false}));
  const Recommendations rec = recommend_cuda_graph(run, 0, "resnet50", "train", "bf16", {});
  const Setting* g = find(rec, "cuda_graph");
  ASSERT_NE(g, nullptr);
  EXPECT_EQ(g->value, ParamValue(false));
  EXPECT_TRUE(g->why.starts_with("either: within noise")) << g->why;
  expect_rests_on_run(run, rec);
}

TEST(TuneRules, CudaGraphOnWhenItGainsAtThePreferredBatch) {
  RunFile run = run_with_gpus(1);
  run.results.push_back(rate("resnet50", "train", "bf16", 64, 2600));
  run.results.push_back(rate("resnet50", "train", "bf16", 64, 2000, {.graph = false}));
  run.results.push_back(rate("resnet50", "train", "bf16", 512, 3000));
  run.results.push_back(rate("resnet50", "train", "bf16", 512, 3000, {.graph = false}));
  Recommendations rec = recommend_cuda_graph(run, 0, "resnet50", "train", "bf16", {128, 64});
  EXPECT_EQ(find(rec, "cuda_graph")->value, ParamValue(true));
  EXPECT_TRUE(contains(find(rec, "cuda_graph")->why, "on: 1.30x eager"))
      << find(rec, "cuda_graph")->why;
  expect_rests_on_run(run, rec);
  // Without a preference: the largest batch measured both ways.
  rec = recommend_cuda_graph(run, 0, "resnet50", "train", "bf16", {});
  EXPECT_EQ(find(rec, "cuda_graph")->value, ParamValue(false));
  EXPECT_TRUE(contains(find(rec, "cuda_graph")->why, "at batch 512"));
  // The eager run is missing: absent.
  run.results.erase(run.results.begin() + 1);
  run.results.erase(run.results.begin() + 2);
  rec = recommend_cuda_graph(run, 0, "resnet50", "train", "bf16", {});
  EXPECT_TRUE(rec.settings.empty());
  ASSERT_EQ(rec.absent.size(), 1u);
  EXPECT_TRUE(contains(rec.absent[0].why, "without the graph"));
}

// ---- 4. global batch ---------------------------------------------------------------

TEST(TuneRules, GlobalBatchPicksTheFastestMeasuredWay) {
  RunFile run = run_with_gpus(1);
  run.results.push_back(rate("bert-large", "train", "bf16", 1024, 1700));
  run.results.push_back(rate("bert-large", "train", "bf16", 512, 1750, {.accumulate = 2}));
  run.results.push_back(rate("bert-large", "train", "bf16", 256, 1790, {.accumulate = 4}));
  run.results.push_back(rate("bert-large", "train", "bf16", 128, 1900, {.accumulate = 4}));  // 512
  Recommendations rec = recommend_global_batch(run, 0, "bert-large", "bf16", 1024);
  const std::vector<std::string> scope = {"bert-large", "train", "global batch 1024"};
  ASSERT_NE(find(rec, "micro_batch", scope), nullptr);
  EXPECT_EQ(find(rec, "micro_batch", scope)->value, ParamValue(int64_t{256}));
  EXPECT_EQ(find(rec, "accumulation", scope)->value, ParamValue(int64_t{4}));
  EXPECT_TRUE(contains(find(rec, "micro_batch")->why, "the fastest of 3 measured ways to 1024"));
  expect_rests_on_run(run, rec);

  rec = recommend_global_batch(run, 0, "bert-large", "bf16", 4096);
  EXPECT_TRUE(rec.settings.empty());
  ASSERT_EQ(rec.absent.size(), 1u);
  EXPECT_TRUE(contains(rec.absent[0].why, "global batch 4096: no ok")) << rec.absent[0].why;
}

// ---- everything at once ------------------------------------------------------------

TEST(TuneRules, RecommendRunsEveryRuleOfTheRequest) {
  RunFile run = bert_precisions(1610 * 1.10);
  for (const auto& [b, v] :
       std::vector<std::pair<int64_t, double>>{{32, 1500}, {128, 1850}, {856, 1900}})
    run.results.push_back(rate("bert-large", "train", "fp8", b, v));
  run.results.push_back(max_batch("fp8", 960, 856, 0.10));
  run.results.push_back(rate("bert-large", "train", "fp8", 128, 1500, {.graph = false}));
  run.results.push_back(gemm("bf16", 8192, 8192, 8192, 827));
  run.results.push_back(gemm("fp8_e4m3", 8192, 8192, 8192, 1479));
  run.results.push_back(host_copy("d2h", "pinned", 1024 * kMiB, 55.2));
  run.results.push_back(host_copy("d2h", "pageable", 1024 * kMiB, 54.9));
  TuneRequest request;
  request.models = {"bert-large", "resnet50"};
  request.gemm_shapes = {"8192x8192x8192:bf16"};
  request.global_batch = 2048;
  const DeviceTune t = recommend(run, 0, request);
  expect_rests_on_run(run, t.settings);
  const auto value = [&](const std::string& key) -> ParamValue {
    for (const Setting& s : t.settings)
      if (s.key == key) return s.value;
    return std::string("missing");
  };
  EXPECT_EQ(value("precision"), ParamValue(std::string("fp8")));
  EXPECT_EQ(value("batch"), ParamValue(int64_t{856}));
  EXPECT_EQ(value("batch_knee"), ParamValue(int64_t{128}));
  EXPECT_EQ(value("cuda_graph"), ParamValue(true));
  EXPECT_EQ(value("fp8"), ParamValue(true));
  EXPECT_EQ(value("host_memory"), ParamValue(std::string("either")));
  const auto absent = [&](const std::string& section, const std::string& part) {
    return std::any_of(t.absent.begin(), t.absent.end(), [&](const Absent& a) {
      return a.section == section && contains(a.why, part);
    });
  };
  EXPECT_TRUE(absent("resnet50", "no resnet50 results"));
  EXPECT_TRUE(absent("bert-large train", "global batch 2048"));
  EXPECT_TRUE(absent("nccl", "one GPU"));
  EXPECT_TRUE(absent("host", "zero_copy"));
}

}  // namespace
}  // namespace gpuvs::tune
