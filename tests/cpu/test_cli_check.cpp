// `gpuvs check` as a user meets it, on this CPU machine: the real binary with a
// scripted NVML (tests/fake_nvml, through GPUVS_NVML_LIBRARY). Each fault of
// docs/check.md gives its documented verdict and exit code; without NVML it is exit 3.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "cli_runner.h"
#include "scratch_dir_test.h"

namespace {

using gpuvs_test::CliOutcome;
using json = nlohmann::json;

json healthy_gpu(int index) {
  json links = json::array();
  for (int l = 0; l < 18; ++l)
    links.push_back(
        {{"active", 1}, {"replay", 0}, {"recovery", 0}, {"crc_flit", 0}, {"crc_data", 0}});
  return {{"name", "NVIDIA H200"},
          {"uuid", "GPU-5a1e0000-0000-0000-0000-00000000000" + std::to_string(index)},
          {"pci_bus_id", "00000000:1" + std::to_string(index) + ":00.0"},
          {"ecc_mode", 1},
          {"mig_mode", 0},
          {"persistence_mode", 1},
          {"power_limit_mw", 700000},
          {"power_default_limit_mw", 700000},
          {"pcie_gen", 5},
          {"pcie_gen_max", 5},
          {"pcie_width", 16},
          {"pcie_width_max", 16},
          {"pcie_replay", 0},
          {"temperature", 31},
          {"temperature_slowdown", 87},
          {"temperature_gpu_max", 85},
          {"clock_event_reasons", 1},
          {"ecc",
           {{"corrected_volatile", 0},
            {"corrected_aggregate", 0},
            {"uncorrected_volatile", 0},
            {"uncorrected_aggregate", 0}}},
          {"remapped_rows", {{"corrected", 0}, {"uncorrected", 0}, {"pending", 0}, {"failure", 0}}},
          {"histogram", {{"max", 8192}, {"high", 0}, {"partial", 0}, {"low", 0}, {"none", 0}}},
          {"nvlinks", links}};
}

json node(int gpus = 2) {
  json script = {{"driver_version", "580.95.05"}, {"cuda_driver_version", 13000}};
  for (int i = 0; i < gpus; ++i)
    script["gpus"].push_back(healthy_gpu(i));
  return script;
}

class CliCheck : public gpuvs_test::ScratchDirTest {
 protected:
  CliCheck() : ScratchDirTest("gpuvs_cli_check") {}

  // Runs `gpuvs check ARGS` against `script`; the window is short to keep tests fast.
  CliOutcome check(const json& script, const std::string& args = "") {
    const std::string path = (dir_ / "script.json").string();
    std::ofstream(path) << script.dump();
    ::setenv("GPUVS_NVML_LIBRARY", GPUVS_FAKE_NVML, 1);
    ::setenv("GPUVS_FAKE_NVML_SCRIPT", path.c_str(), 1);
    return gpuvs_test::run_gpuvs("check --xid-window 0.05 " + args);
  }

  // The gpuvs.check/1 document of a --json run.
  json document(const json& script, const std::string& args = "") {
    const CliOutcome o = check(script, "--json " + args);
    last_code_ = o.code;
    return json::parse(o.out);
  }

  static std::string test_status(const json& doc, int gpu, const std::string& test) {
    for (const json& t : doc["gpus"][gpu]["tests"])
      if (t["test"] == test) return t["status"];
    return "missing";
  }

  int last_code_ = -1;
};

TEST_F(CliCheck, HealthyH200NodePasses) {
  const CliOutcome o = check(node());
  EXPECT_EQ(o.code, 0) << o.err;
  EXPECT_NE(o.out.find("GPU 0  NVIDIA H200"), std::string::npos) << o.out;
  EXPECT_NE(o.out.find("2 GPU(s): 2 pass, 0 warn, 0 fail"), std::string::npos) << o.out;
  EXPECT_TRUE(o.err.empty()) << o.err;
}

TEST_F(CliCheck, JsonDocumentOnStdoutOnly) {
  const json doc = document(node());
  EXPECT_EQ(last_code_, 0);
  EXPECT_EQ(doc["schema"], "gpuvs.check/1");
  EXPECT_EQ(doc["driver_version"], "580.95.05");
  EXPECT_EQ(doc["cuda_driver_version"], "13.0");
  EXPECT_EQ(doc["gpus"].size(), 2u);
  EXPECT_EQ(doc["gpus"][1]["readings"]["nvlinks"].size(), 18u);
}

// A cache entry for GPU 0 measured under `driver`: the tune fixture with GPU 0's UUID.
void write_tune_cache(const std::filesystem::path& dir, const std::string& driver) {
  std::ifstream in(std::string(GPUVS_TEST_DATA_DIR) + "/tune/h200-example.json");
  json doc = json::parse(in);
  const std::string uuid = healthy_gpu(0)["uuid"];
  doc["devices"][0]["fingerprint"]["uuid"] = uuid;
  doc["devices"][0]["fingerprint"]["driver_version"] = driver;
  std::filesystem::create_directories(dir);
  std::ofstream(dir / (uuid + ".json")) << doc.dump(2);
}

TEST_F(CliCheck, ADriverOtherThanTheTunedOneWarns) {
  write_tune_cache(dir_ / "cache", "570.86.15");
  const json doc = document(node(2), "--cache " + (dir_ / "cache").string());
  EXPECT_EQ(last_code_, 4);
  EXPECT_EQ(test_status(doc, 0, "versions.tune_cache"), "warn");
  EXPECT_EQ(test_status(doc, 1, "versions.tune_cache"), "pass");  // never tuned
  bool named = false;
  for (const json& t : doc["gpus"][0]["tests"])
    if (t["test"] == "versions.tune_cache")
      named = t["reason"].get<std::string>().find("580.95.05 now, 570.86.15 when tuned") !=
              std::string::npos;
  EXPECT_TRUE(named) << doc["gpus"][0]["tests"].dump();

  write_tune_cache(dir_ / "cache", "580.95.05");
  const json same = document(node(2), "--cache " + (dir_ / "cache").string());
  EXPECT_EQ(last_code_, 0);
  EXPECT_EQ(test_status(same, 0, "versions.tune_cache"), "pass");
}

TEST_F(CliCheck, UncorrectedEccFails) {
  json s = node();
  s["gpus"][1]["ecc"]["uncorrected_volatile"] = 1;
  s["gpus"][1]["ecc"]["uncorrected_aggregate"] = 1;
  const json doc = document(s);
  EXPECT_EQ(last_code_, 1);
  EXPECT_EQ(doc["gpus"][0]["status"], "pass");
  EXPECT_EQ(doc["gpus"][1]["status"], "fail");
  EXPECT_EQ(test_status(doc, 1, "ecc.uncorrected"), "fail");
}

TEST_F(CliCheck, CorrectedEccOnlyPassesWithTheCount) {
  json s = node(1);
  s["gpus"][0]["ecc"]["corrected_volatile"] = 12;
  s["gpus"][0]["ecc"]["corrected_aggregate"] = 340;
  const CliOutcome o = check(s);
  EXPECT_EQ(o.code, 0) << o.out;
  EXPECT_NE(o.out.find("12 corrected ECC error(s) since the driver loaded, 340"), std::string::npos)
      << o.out;
}

TEST_F(CliCheck, PendingRowRemapWarns) {
  json s = node(1);
  s["gpus"][0]["remapped_rows"]["pending"] = 1;
  s["gpus"][0]["remapped_rows"]["uncorrected"] = 1;
  const json doc = document(s);
  EXPECT_EQ(last_code_, 4);
  EXPECT_EQ(test_status(doc, 0, "row_remap"), "warn");
}

TEST_F(CliCheck, FailedRowRemapFails) {
  json s = node(1);
  s["gpus"][0]["remapped_rows"]["failure"] = 1;
  const json doc = document(s);
  EXPECT_EQ(last_code_, 1);
  EXPECT_EQ(test_status(doc, 0, "row_remap"), "fail");
}

TEST_F(CliCheck, DowntrainedPcieWidth) {
  json s = node(1);
  s["gpus"][0]["pcie_width"] = 8;
  json doc = document(s);
  EXPECT_EQ(last_code_, 4);  // idle: NVIDIA allows a reduced link when not in use
  EXPECT_EQ(test_status(doc, 0, "pcie.link"), "warn");
  s["gpus"][0]["clock_event_reasons"] = 0;  // busy and still x8
  doc = document(s);
  EXPECT_EQ(last_code_, 1);
  EXPECT_EQ(test_status(doc, 0, "pcie.link"), "fail");
}

TEST_F(CliCheck, Xid79DuringTheCheckFails) {
  json s = node(2);
  s["gpus"][1]["xids"] = {79};
  const json doc = document(s);
  EXPECT_EQ(last_code_, 1);
  EXPECT_EQ(test_status(doc, 0, "xid"), "pass");
  EXPECT_EQ(test_status(doc, 1, "xid"), "fail");
  EXPECT_EQ(doc["gpus"][1]["readings"]["xids"], json({79}));
}

TEST_F(CliCheck, NvLinkDownFails) {
  json s = node(1);
  s["gpus"][0]["nvlinks"][5]["active"] = 0;
  const json doc = document(s);
  EXPECT_EQ(last_code_, 1);
  EXPECT_EQ(test_status(doc, 0, "nvlink.state"), "fail");
}

TEST_F(CliCheck, RisingReplayCountersWarn) {
  json s = node(1);
  s["gpus"][0]["pcie_replay"] = {3, 5};  // first reading 3, second 5
  s["gpus"][0]["nvlinks"][2]["recovery"] = {0, 1};
  const json doc = document(s);
  EXPECT_EQ(last_code_, 4);
  EXPECT_EQ(test_status(doc, 0, "pcie.replay"), "warn");
  EXPECT_EQ(test_status(doc, 0, "nvlink.errors"), "warn");
  EXPECT_EQ(doc["gpus"][0]["readings"]["first"]["pcie_replay"], 3);
  EXPECT_EQ(doc["gpus"][0]["readings"]["last"]["pcie_replay"], 5);
}

TEST_F(CliCheck, GpuListSelectsByNvmlIndex) {
  json s = node(3);
  s["gpus"][0]["remapped_rows"]["failure"] = 1;
  const json doc = document(s, "--gpu 1,2");
  EXPECT_EQ(last_code_, 0);
  ASSERT_EQ(doc["gpus"].size(), 2u);
  EXPECT_EQ(doc["gpus"][0]["gpu"], 1);
  const CliOutcome o = check(s, "--gpu 3");
  EXPECT_EQ(o.code, 2);
  EXPECT_NE(o.err.find("GPU 3 does not exist (3 visible)"), std::string::npos) << o.err;
}

TEST_F(CliCheck, PrometheusFileAndCheckFile) {
  json s = node(1);
  s["gpus"][0]["persistence_mode"] = 0;
  const std::string prom = (dir_ / "gpuvs.prom").string();
  const std::string out = (dir_ / "out").string();
  const CliOutcome o = check(s, "--prometheus " + prom + " --out " + out);
  EXPECT_EQ(o.code, 4) << o.err;
  std::ifstream in(prom);
  std::stringstream text;
  text << in.rdbuf();
  EXPECT_NE(text.str().find("gpuvs_check_test{host="), std::string::npos) << text.str();
  EXPECT_NE(text.str().find(",uuid=\"GPU-5a1e0000-0000-0000-0000-000000000000\","
                            "pci_bus_id=\"00000000:10:00.0\",test=\"persistence_mode\"} 1\n"),
            std::string::npos)
      << text.str();
  int files = 0;
  for (const auto& e : std::filesystem::directory_iterator(out)) {
    ++files;
    EXPECT_EQ(e.path().filename().string().rfind("check-", 0), 0u) << e.path();
    std::ifstream f(e.path());
    EXPECT_EQ(json::parse(f)["schema"], "gpuvs.check/1");
  }
  EXPECT_EQ(files, 1);
}

TEST_F(CliCheck, HostileNamesFromNvmlAreEscaped) {
  json s = node(1);
  s["gpus"][0]["name"] = "NVIDIA H200\x1b[2J\r";
  const CliOutcome o = check(s);
  EXPECT_EQ(o.code, 0) << o.err;
  EXPECT_EQ(o.out.find('\x1b'), std::string::npos) << o.out;
  EXPECT_EQ(o.out.find('\r'), std::string::npos) << o.out;
  const json doc = document(s);
  EXPECT_EQ(doc["gpus"][0]["name"], "NVIDIA H200\x1b[2J\r");
}

TEST_F(CliCheck, NoNvmlIsExit3) {
  ::setenv("GPUVS_NVML_LIBRARY", "/nonexistent/gpuvs-test/libnvidia-ml.so.1", 1);
  const CliOutcome o = gpuvs_test::run_gpuvs("check");
  EXPECT_EQ(o.code, 3);
  EXPECT_TRUE(o.out.empty()) << o.out;
  EXPECT_NE(o.err.find("NVML is not available"), std::string::npos) << o.err;
  EXPECT_EQ(std::count(o.err.begin(), o.err.end(), '\n'), 1) << o.err;
}

TEST_F(CliCheck, NoGpuIsExit3) {
  const CliOutcome o = check(json{{"driver_version", "580.95.05"}, {"gpus", json::array()}});
  EXPECT_EQ(o.code, 3);
  EXPECT_NE(o.err.find("no GPU"), std::string::npos) << o.err;
}

TEST_F(CliCheck, LevelsNotBuiltAndBadArgumentsAreUsageErrors) {
  // Found before NVML is touched: the same answer with no NVML at all.
  ::setenv("GPUVS_NVML_LIBRARY", "/nonexistent/gpuvs-test/libnvidia-ml.so.1", 1);
  for (const char* level : {"2", "3"}) {
    const CliOutcome o = gpuvs_test::run_gpuvs(std::string("check --level ") + level);
    if (GPUVS_TEST_HAVE_CUDA) {
      // A CUDA build has them: past the arguments, to the missing NVML (exit 3).
      EXPECT_EQ(o.code, 3) << level << ": " << o.err;
      EXPECT_NE(o.err.find("NVML is not available"), std::string::npos) << o.err;
    } else {
      EXPECT_EQ(o.code, 2) << level;
      EXPECT_NE(o.err.find(std::string("level ") + level + " is not in this build yet"),
                std::string::npos)
          << o.err;
    }
  }
  for (const char* args :
       {"--level 0", "--level 4", "--level 1.5", "--gpu x", "--xid-window -1", "--xid-window nan",
        "--prometheus /nonexistent/dir/x.prom", "--duration 60", "--level 2 --duration 60",
        "--level 3 --duration 5", "--baseline /tmp/x.json", "--level 3 --duration 1e9"}) {
    const CliOutcome o = gpuvs_test::run_gpuvs(std::string("check ") + args);
    EXPECT_EQ(o.code, 2) << args << ": " << o.err;
    EXPECT_EQ(std::count(o.err.begin(), o.err.end(), '\n'), 1) << args << ": " << o.err;
  }
}

// One rank of eight on a node (srun --ntasks-per-node=8 gpuvs check): it checks the GPU
// of its local rank and writes its own file, named with its rank; one rank per node
// checks every GPU.
TEST_F(CliCheck, EachLauncherRankChecksItsGpusAndWritesItsOwnFile) {
  const std::string out = (dir_ / "out").string();
  ::setenv("SLURM_PROCID", "13", 1);
  ::setenv("SLURM_STEP_NUM_TASKS", "16", 1);
  ::setenv("SLURM_LOCALID", "5", 1);
  ::setenv("SLURM_STEP_TASKS_PER_NODE", "8(x2)", 1);
  const json one = document(node(8), "--out " + out);
  EXPECT_EQ(last_code_, 0);
  ASSERT_EQ(one["gpus"].size(), 1u) << one.dump();
  EXPECT_EQ(one["gpus"][0]["uuid"].get<std::string>(), healthy_gpu(5)["uuid"].get<std::string>());
  int files = 0;
  for (const auto& e : std::filesystem::directory_iterator(out)) {
    ++files;
    EXPECT_NE(e.path().filename().string().find("-rank13.json"), std::string::npos) << e.path();
  }
  EXPECT_EQ(files, 1);
  ::setenv("SLURM_STEP_TASKS_PER_NODE", "1(x16)", 1);
  EXPECT_EQ(document(node(8))["gpus"].size(), 8u);
  for (const char* v :
       {"SLURM_PROCID", "SLURM_STEP_NUM_TASKS", "SLURM_LOCALID", "SLURM_STEP_TASKS_PER_NODE"})
    ::unsetenv(v);
}

// Level 2 where CUDA sees none of the GPUs NVML reports (the scripted NVML's bus ids
// are no real GPU's): each GPU warns that CUDA does not see it and keeps level 1's
// tests, judged over the whole check; exit 4. A build without CUDA has no level 2.
TEST_F(CliCheck, Level2OnGpusCudaDoesNotSeeWarnsAndKeepsLevel1) {
  if (!GPUVS_TEST_HAVE_CUDA) GTEST_SKIP() << "built without CUDA: no level 2";
  json script = node(2);
  for (int g = 0; g < 2; ++g)  // a PCI domain no real GPU sits in
    script["gpus"][g]["pci_bus_id"] = "0000fffe:f" + std::to_string(g) + ":00.0";
  const json doc = document(script, "--level 2");
  EXPECT_EQ(last_code_, 4);
  ASSERT_EQ(doc["gpus"].size(), 2u);
  for (int g = 0; g < 2; ++g) {
    EXPECT_EQ(test_status(doc, g, "cuda.visible"), "warn");
    EXPECT_EQ(test_status(doc, g, "ecc.uncorrected"), "pass");
    EXPECT_EQ(test_status(doc, g, "xid"), "pass");
    EXPECT_EQ(test_status(doc, g, "memtest"), "missing");  // nothing loaded a hidden GPU
  }
  EXPECT_EQ(doc["level"], 2);
}

}  // namespace
