// `gpuvs advise` as a user meets it: the real binary's ranked tables, JSON, run
// files, prices and one-line usage errors (exit 2). Built into test_cli (GPUVS_BIN
// names the binary).
#include <gtest/gtest.h>

#include <sys/wait.h>
#include <unistd.h>
#include "cli_runner.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

namespace {

using AdviseRun = gpuvs_test::CliOutcome;

AdviseRun gpuvs_advise(const std::string& args) {
  return gpuvs_test::run_gpuvs(args);
}

bool has(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

std::string source(const std::string& path) {
  return std::string(GPUVS_SOURCE_DIR) + "/" + path;
}

// The table row of a GPU: " 3  H200-SXM  ..."
std::string row(const std::string& out, const std::string& gpu) {
  std::istringstream in(out);
  for (std::string line; std::getline(in, line);)
    if (line.find("  " + gpu + " ") != std::string::npos) return line;
  return {};
}

TEST(CliAdvise, TrainingTableWithPricesAndTheNaiveRule) {
  const AdviseRun r =
      gpuvs_advise("advise --model llama-2-7b --tokens 2T --max-days 30 --prices example");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_TRUE(r.err.empty()) << r.err;
  EXPECT_TRUE(has(r.out, "Naive rule")) << r.out;
  EXPECT_TRUE(has(r.out, "EXAMPLE")) << r.out;
  EXPECT_TRUE(has(r.out, "Ranked by cost")) << r.out;
  EXPECT_TRUE(has(row(r.out, "H100-SXM"), "yes")) << r.out;
  EXPECT_TRUE(has(row(r.out, "V100-SXM2-32GB"), "no BF16")) << r.out;
}

TEST(CliAdvise, ExplainShowsTheArithmetic) {
  const AdviseRun r = gpuvs_advise(
      "advise --model 70B --tokens 2T --candidates H200,H100-SXM "
      "--explain");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_TRUE(has(r.out, "(6·N + 12·L·h·s) · T")) << r.out;
  EXPECT_TRUE(has(r.out, "Korthikanti")) << r.out;
  EXPECT_TRUE(has(r.out, "16 B/param")) << r.out;
  EXPECT_TRUE(has(r.out, "H200-SXM; this calculation") || has(r.out, "→ H200-SXM;")) << r.out;
}

TEST(CliAdvise, JsonOnStdoutOnly) {
  const AdviseRun r = gpuvs_advise("--json advise --model resnet50 --prices example");
  ASSERT_EQ(r.code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["schema"], "gpuvs.advise/1");
  EXPECT_EQ(j["mode"], "train");
  EXPECT_EQ(j["currency"], "USD");
  EXPECT_FALSE(j["candidates"].empty());
  EXPECT_EQ(j["candidates"][0]["fits"], true);
  EXPECT_TRUE(j["naive_rule"]["line"].is_string());
}

TEST(CliAdvise, InferenceTable) {
  const AdviseRun r = gpuvs_advise("advise infer --model llama-2-70b --batch 16 --context 4096");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_TRUE(has(r.out, "tokens/s")) << r.out;
  EXPECT_TRUE(has(row(r.out, "H200-SXM"), "memory-bound")) << r.out;
}

TEST(CliAdvise, RunFileIsUsed) {
  const AdviseRun r = gpuvs_advise("advise infer --model llama-2-70b --candidates H200 --run " +
                                   source("data/reference/h200-sxm-run.json"));
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_TRUE(has(row(r.out, "H200-SXM"), "measured bandwidth")) << r.out;
  EXPECT_TRUE(has(r.out, "used in this estimate")) << r.out;
}

// A ranking of a measured GPU among estimates says, in one line, which rests on what.
TEST(CliAdvise, MixedBasesAreSaid) {
  const auto mixed =
      gpuvs_advise("advise --model resnet50 --run " + source("data/reference/h200x2-run.json"));
  ASSERT_EQ(mixed.code, 0) << mixed.err;
  EXPECT_NE(mixed.out.find("The ranking mixes bases: "), std::string::npos) << mixed.out;
  EXPECT_NE(mixed.out.find("measured (H200-SXM)"), std::string::npos) << mixed.out;
  EXPECT_NE(mixed.out.find("published (A100-SXM4-80GB)"), std::string::npos) << mixed.out;
  const auto json = gpuvs_advise("--json advise --model resnet50 --run " +
                                 source("data/reference/h200x2-run.json"));
  ASSERT_EQ(json.code, 0) << json.err;
  const nlohmann::json doc = nlohmann::json::parse(json.out);
  EXPECT_TRUE(doc["bases_mixed"].get<bool>());
  bool measured_row = false;
  for (const auto& c : doc["candidates"])
    if (c["gpu"] == "H200-SXM") measured_row = c["basis_class"] == "measured";
  EXPECT_TRUE(measured_row) << json.out;
  // One basis for every candidate (datasheet × MFU): no such line.
  const auto one = gpuvs_advise("advise --model llama-2-7b --tokens 1T");
  ASSERT_EQ(one.code, 0) << one.err;
  EXPECT_EQ(one.out.find("mixes bases"), std::string::npos) << one.out;
}

TEST(CliAdvise, BadInputIsOneLineAndExit2) {
  const auto bad_prices = std::filesystem::temp_directory_path() /
                          ("gpuvs_bad_prices_" + std::to_string(::getpid()) + ".csv");
  {
    std::ofstream f(bad_prices);
    f << "gpu,price_per_gpu_hour,currency\nH200,-1,USD\n";
  }
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"advise", "--model is required"},
      {"advise --model=-7B", "must be positive"},
      {"advise --model 0", "must be positive"},
      {"advise --model 7X", "unknown unit 'X'"},
      {"advise --model llama-9", "unknown model"},
      {"advise --model 7B --tokens 0", "--tokens: must be positive"},
      {"advise --model 7B --gpus=-1", "--gpus: must be positive"},
      {"advise --model 7B --candidates H300", "unknown GPU"},
      {"advise --model 7B --mfu 1.5", "at most 1"},
      {"advise --model 7B --precision fp64", "unknown precision"},
      {"advise --model 7B --parallel zero4", "unknown strategy"},
      {"advise sideways --model 7B", "unknown mode"},
      {"advise infer --model resnet50", "transformer"},
      {"advise --model 7B --prices /nonexistent.csv", "cannot read"},
      {"advise --model 7B --prices " + bad_prices.string(), ":2: price '-1'"},
      {"advise --model 7B --run " + source("tests/data/runs/foreign_nvbench.json"), "schema"},
  };
  for (const auto& [args, expect] : cases) {
    const AdviseRun r = gpuvs_advise(args);
    EXPECT_EQ(r.code, 2) << args << ": " << r.err;
    EXPECT_TRUE(r.out.empty()) << args;
    EXPECT_TRUE(has(r.err, expect)) << args << ": " << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << args << ": " << r.err;
  }
  std::filesystem::remove(bad_prices);
}

}  // namespace
