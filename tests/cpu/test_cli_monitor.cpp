// `gpuvs monitor -- CMD` as a user meets it (docs/monitor.md): CMD's exit
// code forwarded, CMD not found, usage errors, the timeline and Prometheus files,
// signals. On a machine without a GPU (or NVML) CMD still runs, unwatched.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <thread>

#include "cli_runner.h"

namespace {

namespace fs = std::filesystem;
using gpuvs_test::CliOutcome;
using gpuvs_test::run_gpuvs;

bool gpu_present() {
  return std::system("nvidia-smi -L >/dev/null 2>&1") == 0;
}

class CliMonitor : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("gpuvs_cli_monitor_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  // Every run writes into the test's own directory.
  CliOutcome monitor(const std::string& args) {
    return run_gpuvs("--out " + dir_.string() + " monitor " + args);
  }
  static std::string read(const fs::path& p) {
    std::ifstream f(p);
    std::stringstream ss;
    ss << f.rdbuf();
    return ss.str();
  }
  static size_t count(const std::string& text, const std::string& what) {
    size_t n = 0;
    for (size_t pos = text.find(what); pos != std::string::npos; pos = text.find(what, pos + 1))
      ++n;
    return n;
  }

  fs::path dir_;
};

#define SKIP_WITHOUT_CUDA() \
  if (!GPUVS_TEST_HAVE_CUDA) GTEST_SKIP() << "built without CUDA: monitor says so and exits 3"

TEST_F(CliMonitor, NoCommandIsAUsageError) {
  for (const char* args : {"", "--", "--interval 50 --"}) {
    const CliOutcome o = monitor(args);
    EXPECT_EQ(o.code, 2) << args;
    EXPECT_NE(o.err.find("no command to run"), std::string::npos) << args << ": " << o.err;
    EXPECT_TRUE(o.out.empty()) << args;
  }
}

TEST_F(CliMonitor, IntervalBelow10msIsAUsageError) {
  EXPECT_EQ(monitor("--interval 5 -- true").code, 2);
}

TEST_F(CliMonitor, WithoutCudaSaysSoAndExits3) {
  if (GPUVS_TEST_HAVE_CUDA) GTEST_SKIP() << "CUDA build";
  const CliOutcome o = monitor("-- true");
  EXPECT_EQ(o.code, 3);
  EXPECT_NE(o.err.find("built without CUDA"), std::string::npos) << o.err;
}

TEST_F(CliMonitor, ExitCodeOfTheCommandIsForwarded) {
  SKIP_WITHOUT_CUDA();
  EXPECT_EQ(monitor("-- true").code, 0);
  EXPECT_EQ(monitor("-- false").code, 1);
  const CliOutcome o = monitor("-- sh -c 'exit 7'");
  EXPECT_EQ(o.code, 7) << o.err;
}

TEST_F(CliMonitor, CommandOwnsStdout) {
  SKIP_WITHOUT_CUDA();
  const CliOutcome o = monitor("-- echo hello --json");
  EXPECT_EQ(o.code, 0);
  EXPECT_EQ(o.out, "hello --json\n");  // arguments after -- belong to CMD
}

TEST_F(CliMonitor, CommandNotFoundIs127WithOneLine) {
  SKIP_WITHOUT_CUDA();
  const CliOutcome o = monitor("-- no-such-command-xyz --flag");
  EXPECT_EQ(o.code, 127);
  EXPECT_EQ(o.err, "gpuvs monitor: no-such-command-xyz: command not found\n");
  EXPECT_TRUE(o.out.empty());
}

TEST_F(CliMonitor, KilledBySigtermIs143) {
  SKIP_WITHOUT_CUDA();
  EXPECT_EQ(monitor("-- sh -c 'kill -TERM $$'").code, 143);
}

TEST_F(CliMonitor, TimelineJsonIsWritten) {
  SKIP_WITHOUT_CUDA();
  const fs::path file = dir_ / "sub" / "t.json";
  const CliOutcome o = monitor("--interval 20 --out " + file.string() + " -- sleep 0.1");
  ASSERT_EQ(o.code, 0) << o.err;
  ASSERT_TRUE(fs::exists(file));
  const nlohmann::json doc = nlohmann::json::parse(read(file));
  EXPECT_EQ(doc.at("schema"), "gpuvs.monitor/1");
  EXPECT_EQ(doc.at("exit_code"), 0);
  EXPECT_EQ(doc.at("command"), nlohmann::json::array({"sleep", "0.1"}));
  EXPECT_TRUE(doc.at("samples").is_array());
  EXPECT_EQ(doc.at("samples").size() == 0, doc.at("gpus").empty());
}

TEST_F(CliMonitor, DefaultTimelineGoesToTheOutDirectory) {
  SKIP_WITHOUT_CUDA();
  ASSERT_EQ(monitor("-- true").code, 0);
  int found = 0;
  for (const auto& e : fs::directory_iterator(dir_)) {
    const std::string name = e.path().filename().string();
    if (name.rfind("monitor-", 0) == 0 && e.path().extension() == ".json") ++found;
  }
  EXPECT_EQ(found, 1);
}

TEST_F(CliMonitor, TimelineCsvHasHeader) {
  SKIP_WITHOUT_CUDA();
  const fs::path file = dir_ / "t.csv";
  ASSERT_EQ(monitor("--csv --out " + file.string() + " -- true").code, 0);
  const std::string csv = read(file);
  EXPECT_EQ(csv.rfind("gpu,t_s,", 0), 0u) << csv;
}

TEST_F(CliMonitor, PrometheusFileExistsAfterwards) {
  SKIP_WITHOUT_CUDA();
  const fs::path prom = dir_ / "gpuvs.prom";
  const CliOutcome o = monitor("--interval 10 --prometheus " + prom.string() + " -- sleep 0.1");
  ASSERT_EQ(o.code, 0) << o.err;
  EXPECT_TRUE(fs::exists(prom));
  for (const auto& e : fs::directory_iterator(dir_))  // no temporary left behind
    EXPECT_EQ(e.path().filename().string().find("tmp"), std::string::npos) << e.path();
  if (gpu_present()) {
    EXPECT_NE(read(prom).find("gpuvs_gpu_power_watts"), std::string::npos);
  }
}

TEST_F(CliMonitor, JsonSummaryFollowsTheCommandsOutput) {
  SKIP_WITHOUT_CUDA();
  const CliOutcome o = run_gpuvs("--json --out " + dir_.string() + " monitor -- echo first");
  ASSERT_EQ(o.code, 0) << o.err;
  ASSERT_EQ(o.out.rfind("first\n", 0), 0u) << o.out;
  const nlohmann::json j = nlohmann::json::parse(o.out.substr(6));
  EXPECT_EQ(j.at("exit_code"), 0);
  EXPECT_TRUE(fs::exists(j.at("timeline").get<std::string>()));
  EXPECT_TRUE(j.at("summary").is_array());
}

TEST_F(CliMonitor, WithoutAGpuSaysOnceThatNothingCanBeSampled) {
  SKIP_WITHOUT_CUDA();
  if (gpu_present()) GTEST_SKIP() << "a GPU is present";
  const CliOutcome o = monitor("-- sh -c 'exit 5'");
  EXPECT_EQ(o.code, 5);
  EXPECT_EQ(count(o.err, "nothing can be sampled"), 1u) << o.err;
  std::istringstream lines(o.err);
  for (std::string line; std::getline(lines, line);)
    EXPECT_EQ(line.rfind("gpuvs monitor: ", 0), 0u) << line;
}

TEST_F(CliMonitor, SigtermToGpuvsIsPassedOnAndTheTimelineIsStillWritten) {
  SKIP_WITHOUT_CUDA();
  // gpuvs runs in the background; CMD says it started by creating `ready`, then the
  // shell sends SIGTERM to gpuvs (not to CMD) and reports gpuvs's exit code.
  const fs::path ready = dir_ / "ready";
  const fs::path file = dir_ / "t.json";
  const fs::path err = dir_ / "err.txt";
  const std::string script =
      std::string(GPUVS_BIN) + " monitor --out " + file.string() + " -- sh -c 'touch " +
      ready.string() + "; exec sleep 30' 2>" + err.string() + " & p=$!; i=0; while [ ! -e " +
      ready.string() + " ] && [ $i -lt 500 ]; do sleep 0.02; i=$((i+1)); done; kill -TERM $p; " +
      "wait $p; echo $?";
  FILE* pipe = ::popen(script.c_str(), "r");
  ASSERT_NE(pipe, nullptr);
  char buf[64] = {};
  const size_t n = std::fread(buf, 1, sizeof buf - 1, pipe);
  ::pclose(pipe);
  EXPECT_EQ(std::string(buf, n), "143\n");
  EXPECT_TRUE(fs::exists(file));
  EXPECT_NE(read(err).find("passed SIGTERM on to sh"), std::string::npos) << read(err);
}

TEST_F(CliMonitor, SymbolicLinksAreNotWrittenThrough) {
  SKIP_WITHOUT_CUDA();
  const fs::path target = dir_ / "target.txt";
  { std::ofstream(target) << "keep\n"; }
  const fs::path timeline = dir_ / "t.json";
  const fs::path prom = dir_ / "gpuvs.prom";
  fs::create_symlink(target, timeline);
  fs::create_symlink(target, prom);
  const CliOutcome o = monitor("--interval 10 --out " + timeline.string() + " --prometheus " +
                               prom.string() + " -- sleep 0.1");
  EXPECT_EQ(o.code, 1) << o.err;
  EXPECT_NE(o.err.find("cannot write " + timeline.string() + ": it is a symbolic link"),
            std::string::npos)
      << o.err;
  EXPECT_EQ(read(target), "keep\n");
  EXPECT_TRUE(fs::is_symlink(timeline));
  EXPECT_TRUE(fs::is_symlink(prom));
}

}  // namespace
