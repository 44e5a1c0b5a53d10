// The gpuvs binary as a user meets it: help, version, unknown commands, commands
// not built yet, and what it says and returns on a machine without a GPU.
#include <gtest/gtest.h>

#include <sys/wait.h>
#include "cli_runner.h"

#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

namespace {

using Outcome = gpuvs_test::CliOutcome;

Outcome run_gpuvs(const std::string& args) {
  return gpuvs_test::run_gpuvs(args);
}

bool gpu_present() {
  return std::system("nvidia-smi -L >/dev/null 2>&1") == 0;
}

TEST(Cli, VersionNamesVersionAndCommit) {
  const Outcome o = run_gpuvs("--version");
  EXPECT_EQ(o.code, 0);
  EXPECT_NE(o.out.find("gpuvs 0."), std::string::npos) << o.out;
  EXPECT_NE(o.out.find("(git "), std::string::npos) << o.out;
}

TEST(Cli, HelpListsEveryCommandAndExitCodes) {
  const Outcome o = run_gpuvs("--help");
  EXPECT_EQ(o.code, 0);
  for (const char* cmd :
       {"run", "detect", "bench", "model", "compare", "specs", "advise", "tune", "monitor"})
    EXPECT_NE(o.out.find(cmd), std::string::npos) << "help lacks " << cmd;
  EXPECT_NE(o.out.find("Exit codes"), std::string::npos);
}

TEST(Cli, EveryCommandHasHelp) {
  for (const char* cmd :
       {"run", "detect", "bench", "model", "compare", "specs", "advise", "tune", "monitor"}) {
    const Outcome o = run_gpuvs(std::string(cmd) + " --help");
    EXPECT_EQ(o.code, 0) << cmd;
    EXPECT_NE(o.out.find("Usage"), std::string::npos) << cmd << ": " << o.out;
  }
}

TEST(Cli, NoCommandIsAUsageError) {
  const Outcome o = run_gpuvs("");
  EXPECT_EQ(o.code, 2);
  EXPECT_NE(o.err.find("Usage"), std::string::npos);
}

TEST(Cli, UnknownCommandOrFlagIsAUsageError) {
  EXPECT_EQ(run_gpuvs("frobnicate").code, 2);
  EXPECT_EQ(run_gpuvs("--frobnicate").code, 2);
  EXPECT_EQ(run_gpuvs("bench --time-cap -1").code, 2);
}

std::string out_dir() {
  return (std::filesystem::temp_directory_path() / ("gpuvs_cli_out_" + std::to_string(::getpid())))
      .string();
}

void expect_one_clear_line(const Outcome& o, const std::string& cmd) {
  ASSERT_FALSE(o.err.empty()) << cmd;
  EXPECT_EQ(o.err.find('\n'), o.err.size() - 1) << "not one line: " << o.err;
  EXPECT_EQ(o.err.rfind("gpuvs", 0), 0u) << o.err;
  if (GPUVS_TEST_HAVE_CUDA)
    EXPECT_NE(o.err.find("no NVIDIA GPU"), std::string::npos) << o.err;
  else
    EXPECT_NE(o.err.find("built without CUDA"), std::string::npos) << o.err;
}

TEST(Cli, WithoutAGpuDetectAndBenchExit3WithOneClearLine) {
  if (gpu_present()) GTEST_SKIP() << "a GPU is present: the GPU tests cover these commands";
  for (const char* cmd : {"detect", "bench", "detect --json", "bench memory", "run --gpu 0"}) {
    const Outcome o = run_gpuvs("--out " + out_dir() + " " + cmd);
    EXPECT_EQ(o.code, 3) << cmd << ": " << o.err;
    EXPECT_TRUE(o.out.empty()) << cmd << " wrote to stdout: " << o.out;
    expect_one_clear_line(o, cmd);
  }
}

// Collective options are checked before anything touches a GPU: a mistake is a
// usage error (exit 2, one line naming what is wrong) on every machine and build.
TEST(Cli, CollectiveOptionMistakesAreUsageErrors) {
  const std::pair<const char*, const char*> cases[] = {
      {"--sizes 1G:8", "MIN is larger than MAX"},
      {"--sizes 8:1G:1", "FACTOR must be a number above 1"},
      {"--ops all_reduce,gather", "unknown operation 'gather'"},
      {"--algos Ring,Butterfly", "unknown value 'Butterfly'"},
      {"--graph sometimes", "expected auto, off or on"},
      {"--rank 1", "--rank and --ranks go together"},
      {"--rank 2 --ranks 2 --rendezvous file:/tmp/x",
       "rank 2 (from --rank/--ranks) is outside 0..1"},
      {"--rank 0 --ranks 2 --rendezvous tcp:host", "expected file:PATH"},
  };
  for (const auto& [args, expected] : cases) {
    const Outcome o = run_gpuvs("--out " + out_dir() + " bench collectives " + args);
    EXPECT_EQ(o.code, 2) << args << ": " << o.err;
    EXPECT_NE(o.err.find(expected), std::string::npos) << args << ": " << o.err;
    EXPECT_EQ(o.err.find('\n'), o.err.size() - 1) << "not one line: " << o.err;
  }
}

// The numbers of `bench collectives` (--sizes, --rank, --ranks) are read before the
// build's CUDA or a GPU is asked for: a bad one is exit 2 in one line on every build.
TEST(Cli, CollectiveNumbersAreUsageErrorsOnEveryBuild) {
  const std::pair<const char*, const char*> cases[] = {
      {"--sizes 8:4kk", "--sizes 8:4kk: MAX 4kk is not a positive number of bytes: unknown unit"},
      {"--sizes 8:4gb",
       "--sizes 8:4gb: MAX 4gb is not a positive number of bytes: unknown unit "
       "'gb' (did you mean GB?)"},
      {"--sizes 0:4G", "--sizes 0:4G: MIN 0 is not a positive number of bytes: must be positive"},
      {"--sizes -8:4G", "--sizes -8:4G: MIN -8 is not a positive number of bytes"},
      {"--sizes 8:1.5", "--sizes 8:1.5: MAX 1.5 is not a positive number of bytes: not a whole"},
      {"--sizes 8:inf", "--sizes 8:inf: MAX inf is not a positive number of bytes: not a finite"},
      {"--sizes 8:1e30", "--sizes 8:1e30: MAX 1e30 is not a positive number of bytes: too large"},
      {"--sizes :4G", "--sizes :4G: MIN '' is not a positive number of bytes: empty"},
      {"--sizes 8:4G:0.5", "--sizes 8:4G:0.5: FACTOR must be a number above 1"},
      {"--sizes 8:4G:2x", "--sizes 8:4G:2x: FACTOR must be a number above 1: unknown unit 'x'"},
      {"--sizes 8", "--sizes 8: wrong number of fields"},
      {"--sizes 1G:8", "--sizes 1G:8: MIN is larger than MAX"},
      {"--rank -1 --ranks 2", "--rank -1: must not be negative"},
      {"--rank 1.5 --ranks 2", "--rank 1.5: not a whole number"},
      {"--rank 0 --ranks 0", "--ranks 0: must be positive"},
      {"--rank 0 --ranks 4kk", "--ranks 4kk: unknown unit 'kk'"},
      {"--rank 0 --ranks ''", "--ranks '': empty"},
      {"--rank 0 --ranks 0x2", "--ranks 0x2: unknown unit 'x2'"},
  };
  for (const auto& [args, expected] : cases) {
    const Outcome o = run_gpuvs("--out " + out_dir() + " bench collectives " + args);
    EXPECT_EQ(o.code, 2) << args << ": " << o.err;
    EXPECT_EQ(o.err.rfind(std::string("gpuvs: ") + expected, 0), 0u) << args << ": " << o.err;
    EXPECT_EQ(o.err.find('\n'), o.err.size() - 1) << "not one line: " << o.err;
    EXPECT_TRUE(o.out.empty()) << args;
  }
  // Good forms get past the options: without a GPU, to the one line saying so.
  if (gpu_present()) GTEST_SKIP() << "a GPU is present: the good forms would measure";
  for (const char* args : {"--sizes 8:4G:2", "--sizes 1K:1m:4", "--sizes 64KiB:2GB",
                           "--sizes 8:4G:1.5", "--sizes 1Ki:1Ti"}) {
    const Outcome o = run_gpuvs("--out " + out_dir() + " bench collectives " + args);
    EXPECT_EQ(o.code, 3) << args << ": " << o.err;
    expect_one_clear_line(o, args);
  }
}

// Several ranks and no way to meet (no MPI launcher, no NCCL_COMM_ID, no rendezvous):
// say how to meet.
TEST(Cli, RanksWithoutAWayToMeetAreToldHow) {
  if (!GPUVS_TEST_HAVE_CUDA) GTEST_SKIP() << "built without CUDA: bench says so first";
  const Outcome o = run_gpuvs("--out " + out_dir() + " bench collectives --rank 0 --ranks 2");
  EXPECT_EQ(o.code, 2) << o.err;
  EXPECT_NE(o.err.find("2 ranks (from --rank/--ranks) but no way for them to meet"),
            std::string::npos)
      << o.err;
  EXPECT_NE(o.err.find("--rendezvous file:PATH"), std::string::npos) << o.err;
}

// A launcher's ranks that each measure their own node (srun -N 64 --ntasks-per-node=1
// gpuvs run): no way to meet is needed, so a rank on a node without a GPU says so and
// exits 3, as one process would, instead of refusing the launch (exit 2).
TEST(Cli, LauncherRanksOnANodeWithoutAGpuExit3) {
  if (gpu_present()) GTEST_SKIP() << "a GPU is present: the ranks would measure it";
  struct Vars {
    const char* name;
    std::vector<std::pair<const char*, const char*>> env;
  };
  for (const Vars& v : std::vector<Vars>{
           {"Slurm",
            {{"SLURM_PROCID", "3"},
             {"SLURM_STEP_NUM_TASKS", "64"},
             {"SLURM_LOCALID", "0"},
             {"SLURM_STEP_TASKS_PER_NODE", "1(x64)"}}},
           {"Open MPI",
            {{"OMPI_COMM_WORLD_RANK", "3"},
             {"OMPI_COMM_WORLD_SIZE", "64"},
             {"OMPI_COMM_WORLD_LOCAL_RANK", "0"},
             {"OMPI_COMM_WORLD_LOCAL_SIZE", "1"}}},
       }) {
    for (const auto& [k, val] : v.env)
      ::setenv(k, val, 1);
    for (const char* cmd : {"run", "bench memory", "bench memory --rank 3 --ranks 64"}) {
      const Outcome o = run_gpuvs("--out " + out_dir() + " " + cmd);
      EXPECT_EQ(o.code, 3) << v.name << ": " << cmd << ": " << o.err;
      EXPECT_TRUE(o.out.empty()) << v.name << ": " << cmd << ": " << o.out;
      expect_one_clear_line(o, cmd);
    }
    for (const auto& [k, val] : v.env)
      ::unsetenv(k);
  }
}

// --fleet-summary is for a launcher's ranks with a shared --out: anything else is a
// usage error, before any GPU.
TEST(Cli, FleetSummaryNeedsRanksAndAnOutputFolder) {
  if (!GPUVS_TEST_HAVE_CUDA) GTEST_SKIP() << "built without CUDA: run says so first";
  const Outcome one = run_gpuvs("--out " + out_dir() + " run --fleet-summary");
  EXPECT_EQ(one.code, 2) << one.err;
  EXPECT_NE(one.err.find("--fleet-summary: for the ranks of a launcher"), std::string::npos)
      << one.err;
  ::setenv("SLURM_PROCID", "0", 1);
  ::setenv("SLURM_STEP_NUM_TASKS", "4", 1);
  const Outcome no_out = run_gpuvs("run --fleet-summary");
  ::unsetenv("SLURM_PROCID");
  ::unsetenv("SLURM_STEP_NUM_TASKS");
  EXPECT_EQ(no_out.code, 2) << no_out.err;
  EXPECT_NE(no_out.err.find("--fleet-summary needs --out DIR"), std::string::npos) << no_out.err;
}

TEST(Cli, WithoutAGpuRunShowsTheBundledReferenceAgainstTheA100) {
  if (gpu_present()) GTEST_SKIP() << "a GPU is present: gpuvs run measures it instead";
  const std::string dir = out_dir();
  std::filesystem::remove_all(dir);
  const Outcome o = run_gpuvs("--out " + dir + " run");
  EXPECT_EQ(o.code, 0) << o.err;
  expect_one_clear_line(o, "run");  // why nothing was measured
  EXPECT_NE(o.out.find("bundled reference run"), std::string::npos) << o.out;
  EXPECT_NE(o.out.find("A100-SXM4-80GB (datasheet)"), std::string::npos) << o.out;
  EXPECT_NE(o.out.find("Memory bandwidth"), std::string::npos) << o.out;
  EXPECT_NE(o.out.find("(pub)"), std::string::npos) << "published figures labelled: " << o.out;
  const auto html = std::filesystem::path(dir) / "reference-report.html";
  ASSERT_TRUE(std::filesystem::exists(html));
  EXPECT_GT(std::filesystem::file_size(html), 1000u);

  const Outcome j = run_gpuvs("--out " + dir + " --json run");
  EXPECT_EQ(j.code, 0) << j.err;
  EXPECT_EQ(j.out.rfind("{", 0), 0u) << "JSON on stdout only: " << j.out.substr(0, 200);
  EXPECT_NE(j.out.find("\"measured\""), std::string::npos);
  std::filesystem::remove_all(dir);
}

TEST(Cli, WithoutAGpuRunRefusesASymbolicLinkAsItsReport) {
  if (gpu_present()) GTEST_SKIP() << "a GPU is present: gpuvs run measures it instead";
  const std::filesystem::path dir = out_dir() + "_link";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  const auto target = dir / "target.txt";
  { std::ofstream(target) << "keep\n"; }
  const auto html = dir / "reference-report.html";
  std::filesystem::create_symlink(target, html);
  const Outcome o = run_gpuvs("--out " + dir.string() + " run");
  EXPECT_EQ(o.code, 1) << o.err;
  EXPECT_NE(o.err.find("gpuvs: cannot write " + html.string() + ": it is a symbolic link"),
            std::string::npos)
      << o.err;
  std::ifstream in(target);
  std::stringstream kept;
  kept << in.rdbuf();
  EXPECT_TRUE(kept.str() == "keep\n")
      << "the target now holds " << kept.str().size() << " bytes: " << kept.str().substr(0, 60);
  EXPECT_TRUE(std::filesystem::is_symlink(html));
  std::filesystem::remove_all(dir);
}

}  // namespace
