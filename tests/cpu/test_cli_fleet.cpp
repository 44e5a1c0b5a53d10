// `gpuvs compare --fleet DIR` as an admin meets it: a folder of run files with one
// degraded node, a truncated file and a stray file; usage errors are one line, exit 2.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>
#include <string>

#include "cli_runner.h"
#include "core/run_file.h"
#include "scratch_dir_test.h"

namespace {

using gpuvs::RunFile;

class CliFleet : public gpuvs_test::ScratchDirTest {
 protected:
  CliFleet() : ScratchDirTest("gpuvs_cli_fleet") {}

  // Node n: the bundled H200 run on host node<n>, every figure moved by `jitter`,
  // HBM by `hbm` more.
  void write_node(int n, double jitter, double hbm = 1.0) {
    static const RunFile reference =
        gpuvs::load_run_file(std::string(GPUVS_SOURCE_DIR) + "/data/reference/h200-sxm-run.json");
    RunFile run = reference;
    run.meta.host = "node" + std::to_string(n);
    run.system.gpus[0].uuid =
        "GPU-" + std::to_string(10000000 + n) + "-0000-0000-0000-000000000000";
    for (gpuvs::Result& r : run.results)
      r.value *= (1 + jitter) * (r.id.rfind("memory.hbm.", 0) == 0 ? hbm : 1.0);
    gpuvs::save_run_file(run, dir_ / ("node" + std::to_string(n) + ".json"));
  }
};

gpuvs_test::CliOutcome gpuvs(const std::string& args) {
  return gpuvs_test::run_gpuvs(args);
}

TEST_F(CliFleet, OneDegradedNodeIsFlaggedAndACorruptFileIsSkipped) {
  const double jitter[] = {0.003, -0.003, 0.001, -0.001};
  for (int n = 0; n < 4; ++n)
    write_node(n, jitter[n]);
  write_node(4, 0.0, 0.85);
  { std::ofstream(dir_ / "node5.json") << "{\"schema\": \"gpuvs.run/1\", \"meta\": {"; }
  { std::ofstream(dir_ / "README.txt") << "not a run file, not read\n"; }

  const auto o = gpuvs("compare --fleet " + dir_.string() + " --json");
  EXPECT_EQ(o.code, 0) << o.err;
  // The truncated file: one line on stderr, naming it.
  EXPECT_EQ(o.err.find("gpuvs compare: skipped " + (dir_ / "node5.json").string() + ": "), 0u)
      << o.err;
  EXPECT_EQ(o.err.find('\n'), o.err.size() - 1) << o.err;
  const nlohmann::json doc = nlohmann::json::parse(o.out);
  EXPECT_EQ(doc["schema"], "gpuvs.fleet/1");
  EXPECT_EQ(doc["files"], 6);
  EXPECT_EQ(doc["gpus"], 5);
  ASSERT_EQ(doc["outliers"].size(), 1u) << o.out;
  const nlohmann::json& out = doc["outliers"][0];
  EXPECT_EQ(out["host"], "node4");
  EXPECT_EQ(out["gpu"], 0);
  EXPECT_EQ(out["uuid"], "GPU-10000004-0000-0000-0000-000000000000");
  EXPECT_EQ(out["file"], (dir_ / "node4.json").string());
  EXPECT_EQ(out["metric"], "memory.bandwidth");
  EXPECT_NEAR(out["deviation"].get<double>(), -0.15, 0.01);
  ASSERT_EQ(doc["skipped"].size(), 1u);
  EXPECT_EQ(doc["skipped"][0]["file"], (dir_ / "node5.json").string());

  // The table: the outlier, the skipped file.
  const auto t = gpuvs("compare --fleet " + dir_.string() + " --k 4");
  EXPECT_EQ(t.code, 0) << t.err;
  EXPECT_NE(t.out.find("Memory bandwidth"), std::string::npos) << t.out;
  EXPECT_NE(t.out.find("node4"), std::string::npos) << t.out;
  EXPECT_NE(t.out.find("slower (worse)"), std::string::npos) << t.out;
  EXPECT_NE(t.out.find("4 x MAD"), std::string::npos) << t.out;
  EXPECT_NE(t.out.find("skipped " + (dir_ / "node5.json").string()), std::string::npos) << t.out;
}

TEST_F(CliFleet, TwoFilesSayWhyNoOutlierCanBeJudged) {
  write_node(0, 0.0);
  write_node(1, 0.0, 0.5);
  const auto o = gpuvs("compare --fleet " + dir_.string());
  EXPECT_EQ(o.code, 0) << o.err;
  EXPECT_NE(o.out.find("2 GPUs in the fleet: no outlier can be judged"), std::string::npos)
      << o.out;
}

TEST_F(CliFleet, UsageErrorsAreOneLineExitTwo) {
  write_node(0, 0.0);
  const std::string kRun = (dir_ / "node0.json").string();
  const std::pair<std::string, std::string> cases[] = {
      {"compare --fleet " + (dir_ / "missing").string(), "not a directory"},
      {"compare --fleet " + kRun, "not a directory"},
      {"compare --fleet " + dir_.string() + " " + kRun, "give no other inputs"},
      {"compare " + kRun + " --k 3", "--k goes with --fleet DIR"},
      {"compare --fleet " + dir_.string() + " --k 0", "--k"},
      {"compare --fleet " + dir_.string() + " --k nan", "--k"},
  };
  for (const auto& [args, says] : cases) {
    const auto o = gpuvs(args);
    EXPECT_EQ(o.code, 2) << args << ": " << o.err;
    EXPECT_TRUE(o.out.empty()) << args << ": " << o.out;
    EXPECT_EQ(o.err.find('\n'), o.err.size() - 1) << args << ": " << o.err;
    EXPECT_NE(o.err.find(says), std::string::npos) << args << ": " << o.err;
  }
  // A folder without a run file.
  const std::filesystem::path empty = dir_ / "empty";
  std::filesystem::create_directories(empty);
  { std::ofstream(empty / "broken.json") << "[]"; }
  const auto o = gpuvs("compare --fleet " + empty.string());
  EXPECT_EQ(o.code, 2) << o.err;
  EXPECT_NE(o.err.find("no run file to compare (1 *.json file read)"), std::string::npos) << o.err;
}

}  // namespace
