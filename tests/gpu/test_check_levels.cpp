// `gpuvs check --level 2` and `--level 3` on a GPU, through the real binary: on a
// healthy GPU every test of the level is there and passes (warnings allowed only for
// what level 1 warns of on a shared machine), the check file and the run file of the
// measured figures are written, and the run file works as the next check's baseline.
// Skipped without a GPU.
#include <gtest/gtest.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include <filesystem>
#include <set>
#include <string>

#include "../cpu/cli_runner.h"
#include "core/run_file.h"
#include "gpu_test_util.h"

namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;

std::set<std::string> tests_of(const json& gpu) {
  std::set<std::string> out;
  for (const json& t : gpu["tests"])
    out.insert(t["test"].get<std::string>());
  return out;
}

// Every test of `gpu` whose id starts with one of `prefixes` passed.
void expect_passed(const json& gpu, std::initializer_list<const char*> prefixes) {
  for (const json& t : gpu["tests"]) {
    const std::string id = t["test"].get<std::string>();
    for (const char* p : prefixes) {
      if (id.rfind(p, 0) == 0) {
        EXPECT_EQ(t["status"].get<std::string>(), "pass") << id << ": " << t["reason"];
      }
    }
  }
}

fs::path fresh_dir(const std::string& name) {
  const fs::path dir = fs::temp_directory_path() / (name + "_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

fs::path only_file(const fs::path& dir, const std::string& prefix) {
  fs::path found;
  int n = 0;
  for (const auto& e : fs::directory_iterator(dir))
    if (e.path().filename().string().rfind(prefix, 0) == 0) {
      found = e.path();
      ++n;
    }
  EXPECT_EQ(n, 1) << prefix << " in " << dir;
  return found;
}

TEST(CheckGpuLevels, Level2PassesOnAHealthyGpuAndItsRunFileIsABaseline) {
  GPUVS_REQUIRE_GPU();
  const fs::path dir = fresh_dir("gpuvs_check2");
  const gpuvs_test::CliOutcome o = gpuvs_test::run_gpuvs(
      "--out " + dir.string() + " --progress plain --json check --level 2 --gpu 0");
  ASSERT_TRUE(o.code == 0 || o.code == 4) << o.err << o.out;
  const json doc = json::parse(o.out);
  ASSERT_EQ(doc["gpus"].size(), 1u);
  const json& gpu = doc["gpus"][0];
  const std::set<std::string> ids = tests_of(gpu);
  for (const char* id : {"memtest", "gemm.bf16.result", "gemm.bf16.repeatable", "gemm.bf16.node",
                         "gemm.fp32.result", "gemm.fp32.repeatable", "gemm.fp32.node",
                         "hbm.bandwidth", "host.h2d", "host.d2h", "ecc.uncorrected", "xid"})
    EXPECT_EQ(ids.count(id), 1u) << id << " missing";
  expect_passed(gpu, {"memtest", "gemm.", "hbm.", "host."});
  only_file(dir, "check-2");
  const fs::path run = only_file(dir, "check-run-");
  const gpuvs::RunFile r = gpuvs::load_run_file(run);
  EXPECT_FALSE(r.results.empty());

  // The same GPU against its own figures: every baseline test is there, none fails
  // beyond the rules' -5 % (noise on a shared machine may warn nothing: pass or fail).
  const fs::path again = fresh_dir("gpuvs_check2b");
  const gpuvs_test::CliOutcome b = gpuvs_test::run_gpuvs(
      "--out " + again.string() + " --json check --level 2 --gpu 0 --baseline " + run.string());
  ASSERT_TRUE(b.code == 0 || b.code == 4 || b.code == 1) << b.err;
  const json judged = json::parse(b.out);
  std::set<std::string> baseline_tests;
  for (const json& t : judged["gpus"][0]["tests"])
    if (const std::string id = t["test"].get<std::string>(); id.rfind("baseline.", 0) == 0)
      baseline_tests.insert(id);
  for (const char* id : {"baseline.memory.bandwidth", "baseline.compute.bf16",
                         "baseline.link.host_h2d", "baseline.link.host_d2h"})
    EXPECT_EQ(baseline_tests.count(id), 1u) << id << " missing: " << b.out;
  fs::remove_all(dir);
  fs::remove_all(again);
}

TEST(CheckGpuLevels, Level3RunsTheSustainedLoad) {
  GPUVS_REQUIRE_GPU();
  const fs::path dir = fresh_dir("gpuvs_check3");
  const gpuvs_test::CliOutcome o = gpuvs_test::run_gpuvs(
      "--out " + dir.string() + " --json check --level 3 --duration 30 --gpu 0");
  ASSERT_TRUE(o.code == 0 || o.code == 4) << o.err << o.out;
  const json gpu = json::parse(o.out)["gpus"][0];
  const std::set<std::string> ids = tests_of(gpu);
  for (const char* id : {"sustained.load", "sustained.memtest", "memtest", "hbm.bandwidth"})
    EXPECT_EQ(ids.count(id), 1u) << id << " missing";
  expect_passed(gpu, {"sustained.memtest", "memtest", "gemm."});
  fs::remove_all(dir);
}

}  // namespace
