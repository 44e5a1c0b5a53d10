// Baseline rules: each figure against the baseline's figure of the same metric and
// configuration, SuperBench's limits by default, a rule file's before them.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>

#include "core/error.h"
#include "report/baseline.h"

namespace gpuvs {
namespace {

const RunFile& reference() {
  static const RunFile run =
      load_run_file(std::string(GPUVS_SOURCE_DIR) + "/data/reference/h200-sxm-run.json");
  return run;
}

void scale(RunFile& run, std::string_view id_prefix, double factor) {
  for (Result& r : run.results)
    if (r.id.rfind(id_prefix, 0) == 0) r.value *= factor;
}

const BaselineJudgement* find(const std::vector<BaselineJudgement>& v, std::string_view metric) {
  const auto it = std::find_if(v.begin(), v.end(),
                               [&](const BaselineJudgement& j) { return j.metric == metric; });
  return it == v.end() ? nullptr : &*it;
}

TEST(Baseline, ARunAgainstItselfPassesEveryRuledFigure) {
  const auto judged = judge_against_baseline(reference(), reference(), BaselineRules::defaults());
  // HBM, the GEMMs, the host link, launch latency and the models of the H200 run.
  for (const char* m :
       {"memory.bandwidth", "compute.bf16", "compute.fp8", "compute.int8", "link.pcie",
        "link.host_h2d", "launch.latency", "model.resnet50.train", "model.bert-large.infer"})
    EXPECT_NE(find(judged, m), nullptr) << m;
  for (const BaselineJudgement& j : judged) {
    EXPECT_EQ(j.verdict, BaselineVerdict::kPass) << j.metric << ": " << j.reason;
    EXPECT_DOUBLE_EQ(*j.ratio, 1.0) << j.metric;
  }
  // Figures no rule names are not judged: FMA peaks, step times, memory size.
  for (const char* m : {"compute.fp32", "model.resnet50.train.step_time", "launch.rate"})
    EXPECT_EQ(find(judged, m), nullptr) << m;
  // A sweep at the one size both measured: the host link's largest, once.
  EXPECT_EQ(std::count_if(judged.begin(), judged.end(),
                          [](const BaselineJudgement& j) { return j.metric == "link.pcie"; }),
            1);
}

TEST(Baseline, FivePercentDropFailsAndFourPassesForBandwidth) {
  RunFile now = reference();
  scale(now, "memory.hbm.", 0.94);
  scale(now, "compute.gemm.bf16", 0.96);
  const auto judged = judge_against_baseline(now, reference(), BaselineRules::defaults());
  const BaselineJudgement* hbm = find(judged, "memory.bandwidth");
  ASSERT_NE(hbm, nullptr);
  EXPECT_EQ(hbm->verdict, BaselineVerdict::kFail);
  EXPECT_NEAR(*hbm->ratio, 0.94, 1e-12);
  EXPECT_DOUBLE_EQ(hbm->limit, -0.05);
  EXPECT_NE(hbm->reason.find("6.0 % below the baseline's 4.26 TB/s (limit -5.0 %)"),
            std::string::npos)
      << hbm->reason;
  EXPECT_EQ(find(judged, "compute.bf16")->verdict, BaselineVerdict::kPass);
  // Faster than the baseline is never a failure of a drop rule.
  RunFile fast = reference();
  scale(fast, "memory.hbm.", 1.5);
  EXPECT_EQ(
      find(judge_against_baseline(fast, reference(), BaselineRules::defaults()), "memory.bandwidth")
          ->verdict,
      BaselineVerdict::kPass);
}

TEST(Baseline, LaunchLatencyMayRiseTenPercent) {
  for (const auto& [factor, verdict] :
       {std::pair{1.08, BaselineVerdict::kPass}, std::pair{1.12, BaselineVerdict::kFail},
        std::pair{0.5, BaselineVerdict::kPass}}) {
    RunFile now = reference();
    scale(now, "launch.empty.latency", factor);
    const auto judged = judge_against_baseline(now, reference(), BaselineRules::defaults());
    EXPECT_EQ(find(judged, "launch.latency")->verdict, verdict) << factor;
  }
}

TEST(Baseline, OnlyTheSameConfigurationIsCompared) {
  RunFile now = reference();
  // This run trained ResNet-50 at another batch: no figure to hold against the
  // baseline's, however much slower it is.
  for (Result& r : now.results)
    if (r.id.rfind("model.resnet50.train", 0) == 0) {
      r.parameters["batch"] = int64_t{64};
      r.value *= 0.5;
    }
  const auto judged = judge_against_baseline(now, reference(), BaselineRules::defaults());
  const BaselineJudgement* resnet = find(judged, "model.resnet50.train");
  ASSERT_NE(resnet, nullptr);
  EXPECT_EQ(resnet->verdict, BaselineVerdict::kNotMeasured);
  EXPECT_FALSE(resnet->value);
  EXPECT_EQ(
      std::count_if(judged.begin(), judged.end(),
                    [](const BaselineJudgement& j) { return j.metric == "model.resnet50.train"; }),
      1);
}

TEST(Baseline, AnInvalidFigureFails) {
  RunFile now = reference();
  for (Result& r : now.results)
    if (r.id.rfind("compute.gemm.bf16", 0) == 0) {
      r.status = Status::kInvalid;
      r.status_reason = "checksum mismatch";
    }
  const auto judged = judge_against_baseline(now, reference(), BaselineRules::defaults());
  const BaselineJudgement* bf16 = find(judged, "compute.bf16");
  ASSERT_NE(bf16, nullptr);
  EXPECT_EQ(bf16->verdict, BaselineVerdict::kFail);
  EXPECT_EQ(bf16->reason, "invalid: checksum mismatch");
}

TEST(Baseline, RuleFileComesBeforeTheDefaults) {
  const BaselineRules rules = parse_baseline_rules(
      "# tighter HBM, no launch latency\n"
      "memory.bandwidth   -2.5%\n"
      "launch.*  off   # host-side, too noisy here\n"
      "\n"
      "compute.fp64 -3\n",
      "rules.txt");
  RunFile now = reference();
  scale(now, "memory.hbm.", 0.97);
  scale(now, "launch.empty.latency", 2.0);
  const auto judged = judge_against_baseline(now, reference(), rules);
  EXPECT_EQ(find(judged, "memory.bandwidth")->verdict, BaselineVerdict::kFail);
  EXPECT_DOUBLE_EQ(find(judged, "memory.bandwidth")->limit, -0.025);
  EXPECT_EQ(find(judged, "launch.latency"), nullptr);
  ASSERT_NE(find(judged, "compute.fp64"), nullptr);  // a metric the defaults leave out
  EXPECT_DOUBLE_EQ(find(judged, "compute.fp64")->limit, -0.03);
  EXPECT_DOUBLE_EQ(find(judged, "compute.bf16")->limit, -0.05);  // the defaults still apply
}

TEST(Baseline, BadRuleLinesAreOneLineUsageErrorsWithTheLine) {
  const std::pair<const char*, const char*> cases[] = {
      {"memory.bandwidth\n", "rules.txt:1: memory.bandwidth: expected `METRIC LIMIT`"},
      {"# ok\nmemory.bandwidth 5\n", "rules.txt:2: limit 5: give the limit with its sign"},
      {"memory.bandwidth -abc\n", "rules.txt:1: limit -abc:"},
      {"memory.bandwidth -100\n", "rules.txt:1: limit -100: a drop of 100 % or more"},
      {"memory.bandwidth -5 extra\n", "expected `METRIC LIMIT`"},
      {"memory.bandwidth -nan\n", "rules.txt:1: limit -nan:"},
      {"a \xe9 -5\n", "rules.txt:1:"},
  };
  for (const auto& [text, says] : cases) {
    try {
      parse_baseline_rules(text, "rules.txt");
      ADD_FAILURE() << "accepted: " << text;
    } catch (const UsageError& e) {
      const std::string msg = e.what();
      EXPECT_NE(msg.find(says), std::string::npos) << msg;
      EXPECT_EQ(msg.find('\n'), std::string::npos) << msg;
    }
  }
}

TEST(Baseline, PatternsMatchWholeIds) {
  EXPECT_TRUE(metric_pattern_matches("model.*.train", "model.resnet50.train"));
  EXPECT_FALSE(metric_pattern_matches("model.*.train", "model.resnet50.train.step_time"));
  EXPECT_TRUE(metric_pattern_matches("*", "anything.at.all"));
  EXPECT_TRUE(metric_pattern_matches("link.host_*", "link.host_d2h"));
  EXPECT_FALSE(metric_pattern_matches("link.pcie", "link.pcie2"));
  EXPECT_FALSE(metric_pattern_matches("link.pcie", "link.pci"));
  EXPECT_TRUE(metric_pattern_matches("a*b*c", "aXXbYYc"));
  EXPECT_FALSE(metric_pattern_matches("a*b*c", "aXXbYY"));
}

}  // namespace
}  // namespace gpuvs
