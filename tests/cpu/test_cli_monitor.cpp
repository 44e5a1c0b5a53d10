// `gpuvs monitor -- CMD` as a user meets it (docs/monitor.md): CMD's exit
// code forwarded, CMD not found, usage errors, the timeline and Prometheus files,
// signals. On a machine without a GPU (or NVML) CMD still runs, unwatched.
#include <gtest/gtest.h>
#include <signal.h>
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
#include <utility>

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
  // Joinable with a fleet's other logs: host and wall-clock start; each GPU's UUID and
  // PCI bus id beside its name.
  EXPECT_FALSE(doc.at("host").get<std::string>().empty());
  EXPECT_GT(doc.at("start_unix_s").get<double>(), 1.7e9);
  EXPECT_EQ(doc.at("started_at").get<std::string>().back(), 'Z');
  for (const auto& g : doc.at("gpus")) {
    EXPECT_TRUE(g.contains("uuid")) << g;
    EXPECT_TRUE(g.contains("pci_bus_id")) << g;
  }
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
  EXPECT_NE(csv.find(",throttle_reasons,host,uuid,pci_bus_id,time_utc\n"), std::string::npos)
      << csv;
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

// With --json, stdout is one JSON document: CMD's own output goes to stderr.
TEST_F(CliMonitor, JsonIsAloneOnStdoutAndTheCommandsOutputGoesToStderr) {
  SKIP_WITHOUT_CUDA();
  const CliOutcome o = run_gpuvs("--json --out " + dir_.string() + " monitor -- echo first");
  ASSERT_EQ(o.code, 0) << o.err;
  const nlohmann::json j = nlohmann::json::parse(o.out);
  EXPECT_EQ(o.out.rfind("{", 0), 0u) << o.out;  // nothing of CMD's before the document
  EXPECT_NE(o.err.find("first\n"), std::string::npos) << o.err;
  EXPECT_EQ(j.at("schema"), "gpuvs.monitor-summary/1");
  EXPECT_EQ(j.at("exit_code"), 0);
  EXPECT_TRUE(fs::exists(j.at("timeline").get<std::string>()));
  EXPECT_TRUE(j.at("summary").is_array());
  EXPECT_FALSE(j.at("host").get<std::string>().empty());
  EXPECT_EQ(j.at("started_at").get<std::string>().size(), 24u) << j.at("started_at");
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

// gpuvs runs in the background; CMD says it started by creating `ready`, then the
// shell sends `sig` to gpuvs (not to CMD) and reports gpuvs's exit code.
std::string signal_gpuvs_during(const fs::path& dir, const std::string& sig) {
  const fs::path ready = dir / "ready";
  const fs::path file = dir / "t.json";
  const fs::path err = dir / "err.txt";
  fs::remove(ready);
  fs::remove(file);
  const std::string script = std::string(GPUVS_BIN) + " monitor --out " + file.string() +
                             " -- sh -c 'touch " + ready.string() + "; exec sleep 30' 2>" +
                             err.string() + " & p=$!; i=0; while [ ! -e " + ready.string() +
                             " ] && [ $i -lt 500 ]; do sleep 0.02; i=$((i+1)); done; kill -" + sig +
                             " $p; wait $p; echo $?";
  FILE* pipe = ::popen(script.c_str(), "r");
  if (pipe == nullptr) return "popen failed";
  char buf[64] = {};
  const size_t n = std::fread(buf, 1, sizeof buf - 1, pipe);
  ::pclose(pipe);
  return std::string(buf, n);
}

TEST_F(CliMonitor, SigtermToGpuvsIsPassedOnAndTheTimelineIsStillWritten) {
  SKIP_WITHOUT_CUDA();
  EXPECT_EQ(signal_gpuvs_during(dir_, "TERM"), "143\n");
  EXPECT_TRUE(fs::exists(dir_ / "t.json"));
  EXPECT_NE(read(dir_ / "err.txt").find("passed SIGTERM on to sh"), std::string::npos)
      << read(dir_ / "err.txt");
}

// A scheduler's warning signals (Slurm's --signal=USR1@N), SIGALRM and a SIGPIPE sent
// by another process do not kill gpuvs and orphan CMD: CMD gets them, gpuvs waits
// for it, writes the timeline and exits with CMD's code (128 + N: sleep dies of each).
// Needs a CUDA build (the monitor runs CMD there), not a GPU.
TEST_F(CliMonitor, SchedulerSignalsArePassedOnAndTheTimelineIsStillWritten) {
  SKIP_WITHOUT_CUDA();
  const std::pair<const char*, int> signals[] = {
      {"USR1", SIGUSR1}, {"USR2", SIGUSR2}, {"ALRM", SIGALRM}, {"PIPE", SIGPIPE}};
  for (const auto& [name, number] : signals) {
    EXPECT_EQ(signal_gpuvs_during(dir_, name), std::to_string(128 + number) + "\n") << name;
    EXPECT_TRUE(fs::exists(dir_ / "t.json")) << name;
    const nlohmann::json doc = nlohmann::json::parse(read(dir_ / "t.json"));
    EXPECT_EQ(doc.at("signal"), number) << name;
    EXPECT_NE(read(dir_ / "err.txt").find(std::string("passed SIG") + name + " on to sh"),
              std::string::npos)
        << read(dir_ / "err.txt");
  }
}

// The outputs are checked before CMD starts, on every build: an output that cannot
// be written is exit 2 and CMD does not run (its exit code would be lost after it).
TEST_F(CliMonitor, SymbolicLinksAreRefusedBeforeTheCommandRuns) {
  const fs::path target = dir_ / "target.txt";
  { std::ofstream(target) << "keep\n"; }
  const fs::path timeline = dir_ / "t.json";
  const fs::path prom = dir_ / "gpuvs.prom";
  fs::create_symlink(target, timeline);
  fs::create_symlink(target, prom);
  const fs::path ran = dir_ / "ran";
  const CliOutcome o = monitor("--interval 10 --out " + timeline.string() + " --prometheus " +
                               prom.string() + " -- touch " + ran.string());
  EXPECT_EQ(o.code, 2) << o.err;
  EXPECT_EQ(o.err, "gpuvs: monitor --out " + timeline.string() +
                       ": it is a symbolic link (gpuvs does not write through links; remove it "
                       "or write elsewhere) (nothing was run)\n");
  EXPECT_FALSE(fs::exists(ran));
  EXPECT_EQ(read(target), "keep\n");
  EXPECT_TRUE(fs::is_symlink(timeline));
  EXPECT_TRUE(fs::is_symlink(prom));
  const CliOutcome p = monitor("--prometheus " + prom.string() + " -- touch " + ran.string());
  EXPECT_EQ(p.code, 2) << p.err;
  EXPECT_NE(p.err.find("--prometheus " + prom.string() + ": it is a symbolic link"),
            std::string::npos)
      << p.err;
  EXPECT_FALSE(fs::exists(ran));
}

TEST_F(CliMonitor, OutputsThatCannotBeWrittenAreRefusedBeforeTheCommandRuns) {
  const fs::path ran = dir_ / "ran";
  const fs::path file = dir_ / "plain.txt";
  { std::ofstream(file) << "x\n"; }
  const fs::path sub = dir_ / "sub";
  fs::create_directories(sub);
  const std::pair<std::string, std::string> cases[] = {
      {"--out " + dir_.string(), "monitor --out " + dir_.string() + ": Is a directory"},
      {"--out " + (file / "t.json").string(), file.string() + " is not a directory"},
      {"--out " + (file / "deeper" / "t.json").string(), "deeper is not a directory"},
      {"--prometheus " + sub.string(), "monitor --prometheus " + sub.string() + ": Is a directory"},
      {"--prometheus " + (dir_ / "missing" / "x.prom").string(),
       "--prometheus: directory " + (dir_ / "missing").string() + " does not exist"},
      {"--out " + (sub / "same").string() + " --prometheus " + (sub / "same").string(),
       "--out and --prometheus name the same file"},
  };
  for (const auto& [args, expected] : cases) {
    const CliOutcome o = monitor(args + " -- touch " + ran.string());
    EXPECT_EQ(o.code, 2) << args << ": " << o.err;
    EXPECT_NE(o.err.find(expected), std::string::npos) << args << ": " << o.err;
    EXPECT_EQ(o.err.find('\n'), o.err.size() - 1) << "not one line: " << o.err;
    EXPECT_FALSE(fs::exists(ran)) << args;
  }
  // The default timeline folder (the global --out) is checked as well.
  const CliOutcome g = run_gpuvs("--out " + file.string() + " monitor -- touch " + ran.string());
  EXPECT_EQ(g.code, 2) << g.err;
  EXPECT_NE(
      g.err.find("timeline folder " + file.string() + ": " + file.string() + " is not a directory"),
      std::string::npos)
      << g.err;
  EXPECT_FALSE(fs::exists(ran));
}

// An empty command, and an option that took `--` as its file name, are usage errors:
// no file named `--` is made.
TEST_F(CliMonitor, EmptyCommandAndDashDashAsAFileNameAreUsageErrors) {
  const CliOutcome e = monitor("-- ''");
  EXPECT_EQ(e.code, 2) << e.err;
  EXPECT_EQ(e.err, "gpuvs: monitor: the command to run is empty ('')\n");
  for (const char* option : {"--prometheus", "--out"}) {
    const CliOutcome o = run_gpuvs("--out " + dir_.string() + " monitor " + option + " -- true");
    EXPECT_EQ(o.code, 2) << option << ": " << o.err;
    EXPECT_NE(o.err.find(std::string(option) + " --: not a file name"), std::string::npos) << o.err;
    EXPECT_FALSE(fs::exists("--")) << option;
  }
  const CliOutcome p = monitor("--prometheus '' -- true");
  EXPECT_EQ(p.code, 2) << p.err;
  EXPECT_NE(p.err.find("--prometheus: empty file name"), std::string::npos) << p.err;
}

}  // namespace
