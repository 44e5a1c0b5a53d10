// The fleet rule on copies of the bundled H200 run: healthy copies that differ within
// their noise raise nothing; a degraded copy is flagged on the figures it lost, and
// on nothing else; duplicates count once; too small a fleet says why.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <deque>
#include <string>

#include "report/fleet.h"

namespace gpuvs {
namespace {

const RunFile& reference() {
  static const RunFile run =
      load_run_file(std::string(GPUVS_SOURCE_DIR) + "/data/reference/h200-sxm-run.json");
  return run;
}

// Node `n` of a fleet: the reference run on another host and GPU, every figure moved
// by `jitter` (a relative amount).
RunFile node(int n, double jitter) {
  RunFile run = reference();
  run.meta.host = "node" + std::to_string(n);
  run.system.gpus[0].uuid = "GPU-0000000" + std::to_string(n) + "-aaaa-bbbb-cccc-dddddddddddd";
  for (Result& r : run.results)
    r.value *= 1 + jitter;
  return run;
}

// Within every figure's noise floor (2 %) and far inside it: +-0.4 %.
constexpr double kJitter[] = {-0.004, -0.002, 0.0, 0.002, 0.004, 0.001, -0.001, 0.003};

struct Fleet {
  std::deque<RunFile> runs;
  std::vector<FleetRun> inputs;
  void add(RunFile run, std::string file) {
    runs.push_back(std::move(run));
    inputs.push_back({std::move(file), &runs.back()});
  }
};

Fleet healthy(int n) {
  Fleet f;
  for (int i = 0; i < n; ++i)
    f.add(node(i, kJitter[i % 8]), "node" + std::to_string(i) + ".json");
  return f;
}

TEST(Fleet, HealthyCopiesWithinNoiseRaiseNoOutlier) {
  const Fleet f = healthy(8);
  const FleetReport r = judge_fleet(f.inputs, FleetOptions{});
  EXPECT_EQ(r.files, 8);
  EXPECT_EQ(r.gpus, 8);
  EXPECT_TRUE(r.outliers.empty()) << render_fleet_text(r);
  EXPECT_GT(r.groups.size(), 20u);  // HBM, GEMMs, links, launch, models ...
  EXPECT_TRUE(r.notes.empty()) << r.notes.front();
  EXPECT_NE(render_fleet_text(r).find("no outlier: every GPU within the rule"), std::string::npos);
}

TEST(Fleet, ADegradedCopyIsFlaggedOnWhatItLostAndNothingElse) {
  Fleet f = healthy(7);
  RunFile bad = node(7, 0.0);
  for (Result& r : bad.results) {
    if (r.id.rfind("memory.hbm.", 0) == 0) r.value *= 0.85;
    if (r.id == "compute.gemm.bf16") r.value *= 0.90;
  }
  f.add(std::move(bad), "node7.json");
  const FleetReport r = judge_fleet(f.inputs, FleetOptions{});
  ASSERT_EQ(r.outliers.size(), 2u) << render_fleet_text(r);
  // Worst first: HBM (-15 %) before the GEMM (-10 %).
  EXPECT_EQ(r.outliers[0].metric, "memory.bandwidth");
  EXPECT_EQ(r.outliers[1].metric, "compute.bf16");
  for (const FleetOutlier& o : r.outliers) {
    EXPECT_EQ(o.host, "node7");
    EXPECT_EQ(o.file, "node7.json");
    EXPECT_EQ(o.gpu, 0);
    EXPECT_EQ(o.uuid, "GPU-00000007-aaaa-bbbb-cccc-dddddddddddd");
    EXPECT_TRUE(o.slow);
    EXPECT_EQ(o.side, "slower");
    EXPECT_LT(o.deviation, -0.09);
  }
  EXPECT_NEAR(r.outliers[0].deviation, 0.85 - 1, 0.01);
  EXPECT_NEAR(r.outliers[0].median, 4.264e12, 0.01e12);

  const nlohmann::json doc = nlohmann::json::parse(render_fleet_json(r));
  EXPECT_EQ(doc["schema"], "gpuvs.fleet/1");
  EXPECT_DOUBLE_EQ(doc["k"].get<double>(), 3.0);
  ASSERT_EQ(doc["outliers"].size(), 2u);
  for (const char* key : {"host", "gpu", "uuid", "file", "metric", "value", "median", "deviation"})
    EXPECT_TRUE(doc["outliers"][0].contains(key)) << key;
  EXPECT_EQ(doc["outliers"][0]["host"], "node7");
  const std::string text = render_fleet_text(r);
  EXPECT_NE(text.find("slower (worse)"), std::string::npos) << text;
  EXPECT_NE(text.find("-15.0 %"), std::string::npos) << text;
}

TEST(Fleet, BothSidesAreFlaggedAndLatencySaysWhichIsWorse) {
  Fleet f = healthy(6);
  RunFile fast = node(6, 0.0), slow = node(7, 0.0);
  for (Result& r : fast.results)
    if (r.id == "launch.empty.latency") r.value *= 0.7;  // lower latency: faster
  for (Result& r : slow.results)
    if (r.id == "launch.empty.latency") r.value *= 1.3;
  f.add(std::move(fast), "fast.json");
  f.add(std::move(slow), "slow.json");
  const FleetReport r = judge_fleet(f.inputs, FleetOptions{});
  ASSERT_EQ(r.outliers.size(), 2u) << render_fleet_text(r);
  EXPECT_EQ(r.outliers[0].file, "slow.json");  // the slow side first
  EXPECT_TRUE(r.outliers[0].slow);
  EXPECT_EQ(r.outliers[0].side, "slower");
  EXPECT_EQ(r.outliers[1].file, "fast.json");
  EXPECT_FALSE(r.outliers[1].slow);
  EXPECT_EQ(r.outliers[1].side, "faster");
}

TEST(Fleet, KAndTheNoiseFloorSetTheThreshold) {
  Fleet f = healthy(6);
  RunFile off = node(6, 0.0);
  for (Result& r : off.results)
    if (r.id == "memory.hbm.copy") r.value *= 0.97;  // beyond 2 %, inside a wider k
  f.add(std::move(off), "off.json");
  EXPECT_EQ(judge_fleet(f.inputs, FleetOptions{}).outliers.size(), 1u);
  // The GPU's own noise: 2 % of noise x k 3 covers a 3 % difference.
  for (Result& r : f.runs.back().results)
    if (r.id == "memory.hbm.copy") r.stats.noise = 0.02;
  EXPECT_TRUE(judge_fleet(f.inputs, FleetOptions{}).outliers.empty());
  // A larger floor does too.
  for (Result& r : f.runs.back().results)
    if (r.id == "memory.hbm.copy") r.stats.noise = 0.001;
  EXPECT_TRUE(judge_fleet(f.inputs, FleetOptions{3.0, 0.05}).outliers.empty());
}

TEST(Fleet, ADuplicatedGpuCountsOnce) {
  Fleet f = healthy(3);
  RunFile again = f.runs[0];  // the same GPU, another copy of its file
  f.add(again, "node0-copy.json");
  RunFile later = f.runs[1];  // the same GPU measured again later, slowly
  later.meta.started_at = "2027-01-01T00:00:00Z";
  for (Result& r : later.results)
    if (r.id.rfind("memory.hbm.", 0) == 0) r.value *= 0.8;
  f.add(later, "node1-later.json");
  const FleetReport r = judge_fleet(f.inputs, FleetOptions{});
  EXPECT_EQ(r.files, 5);
  EXPECT_EQ(r.gpus, 3);
  ASSERT_EQ(r.skipped.size(), 2u);
  EXPECT_EQ(r.skipped[0].file, "node0-copy.json");
  EXPECT_EQ(r.skipped[1].file, "node1.json");  // the later run is kept
  EXPECT_NE(r.skipped[1].reason.find("counted once"), std::string::npos);
  ASSERT_EQ(r.outliers.size(), 1u) << render_fleet_text(r);
  EXPECT_EQ(r.outliers[0].file, "node1-later.json");
}

TEST(Fleet, FewerThanThreeGpusSaysWhyNothingIsJudged) {
  for (int n : {1, 2}) {
    const Fleet f = healthy(n);
    const FleetReport r = judge_fleet(f.inputs, FleetOptions{});
    EXPECT_TRUE(r.outliers.empty());
    EXPECT_TRUE(r.groups.empty());
    ASSERT_EQ(r.notes.size(), 1u);
    EXPECT_NE(r.notes[0].find("no outlier can be judged"), std::string::npos) << r.notes[0];
    EXPECT_NE(render_fleet_text(r).find("no outlier judged"), std::string::npos);
  }
}

TEST(Fleet, GpuModelsAreJudgedAmongThemselves) {
  Fleet f = healthy(4);
  for (int i = 0; i < 2; ++i) {
    RunFile other = node(10 + i, 0.0);
    other.system.gpus[0].name = "NVIDIA H100 80GB HBM3";
    for (Result& r : other.results)
      r.value *= 0.6;  // another GPU: every figure lower, none an outlier of the H200s
    f.add(std::move(other), "h100-" + std::to_string(i) + ".json");
  }
  const FleetReport r = judge_fleet(f.inputs, FleetOptions{});
  EXPECT_TRUE(r.outliers.empty()) << render_fleet_text(r);
  const std::string text = render_fleet_text(r);
  EXPECT_NE(text.find("H100 80GB HBM3: 2 GPUs, judged among themselves"), std::string::npos)
      << text;
  EXPECT_NE(text.find("measured on fewer than 3 GPUs of one model: not judged"), std::string::npos)
      << text;
}

}  // namespace
}  // namespace gpuvs
