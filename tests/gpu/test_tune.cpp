// `gpuvs tune` end to end on a GPU, through the real binary: a quick tune of BERT-large
// and one --gemm shape measures, writes its run file and caches a result whose every setting rests
// on results of that run file; the same call again answers from the cache with the same document
// and no new run file; detect shows the cached settings. Skipped without a GPU.
#include <gtest/gtest.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include <filesystem>
#include <string>

#include "../cpu/cli_runner.h"
#include "core/run_file.h"
#include "gpu_test_util.h"

namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;

int json_files(const fs::path& dir) {
  int n = 0;
  for (const auto& e : fs::directory_iterator(dir))
    n += e.path().extension() == ".json";
  return n;
}

TEST(Tune, QuickTuneMeasuresCachesAndAnswersFromTheCache) {
  GPUVS_REQUIRE_GPU();
  const fs::path dir = fs::temp_directory_path() / ("gpuvs_tune_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir / "runs");
  const std::string args = "--out " + (dir / "runs").string() +
                           " --progress plain --json tune --model bert-large --quick --gpu 0 "
                           "--gemm 4096x4096x4096:bf16 --cache " +
                           (dir / "cache").string();
  const gpuvs_test::CliOutcome first = gpuvs_test::run_gpuvs(args);
  ASSERT_TRUE(first.code == 0 || first.code == 4) << first.err;
  const json doc = json::parse(first.out);
  EXPECT_EQ(doc["schema"], "gpuvs.tune/1");
  ASSERT_EQ(doc["devices"].size(), 1u);
  const json& d = doc["devices"][0];
  EXPECT_EQ(json_files(dir / "runs"), 1);
  EXPECT_EQ(json_files(dir / "cache"), 1);

  // Every setting's measured evidence is a result of the run file it names.
  const gpuvs::RunFile run = gpuvs::load_run_file(d["run_file"].get<std::string>());
  int precision = 0, batch = 0, gemm = 0;
  for (const json& s : d["settings"]) {
    precision += s["key"] == "precision";
    batch += s["key"] == "batch";
    gemm += s["scope"][0] == "gemm";
    for (const json& e : s["rests_on"]) {
      if (e["basis"] != "measured") continue;
      bool found = false;
      for (const gpuvs::Result& r : run.results)
        found = found ||
                (r.id == e["result_id"].get<std::string>() && r.value == e["value"].get<double>());
      EXPECT_TRUE(found) << s.dump();
    }
  }
  EXPECT_EQ(precision, 2) << "train and infer";
  EXPECT_EQ(batch, 2);
  EXPECT_GT(gemm, 0) << "the --gemm shape's algorithm and whether FP8 pays";
  EXPECT_NE(first.err.find("gpuvs: ["), std::string::npos) << "plain progress lines";

  const gpuvs_test::CliOutcome second = gpuvs_test::run_gpuvs(args);
  EXPECT_EQ(second.code, 0) << second.err;
  EXPECT_EQ(json::parse(second.out), doc);
  EXPECT_NE(second.err.find("answered from the cache"), std::string::npos) << second.err;
  EXPECT_EQ(json_files(dir / "runs"), 1) << "no measurement, no new run file";

  const gpuvs_test::CliOutcome detect =
      gpuvs_test::run_gpuvs("detect --cache " + (dir / "cache").string());
  EXPECT_EQ(detect.code, 0) << detect.err;
  EXPECT_NE(detect.out.find("precision"), std::string::npos) << detect.out;
  fs::remove_all(dir);
}

}  // namespace
