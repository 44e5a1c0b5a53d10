// --progress as a user meets it without a GPU: every mode is accepted before and after
// the command, stdout is the same in every mode (the JSON of --json too), and a
// command that measures nothing writes no progress. What the modes write is tested on
// the reporter itself (test_progress.cpp); the GPU runs of run, bench and model show it.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <string>

#include "cli_runner.h"

namespace {

using gpuvs_test::CliOutcome;
using gpuvs_test::run_gpuvs;

const std::string kRun = std::string(GPUVS_SOURCE_DIR) + "/data/reference/h200-sxm-run.json";

std::string out_dir() {
  return (std::filesystem::temp_directory_path() /
          ("gpuvs_cli_progress_" + std::to_string(::getpid())))
      .string();
}

// `args` with each --progress form gives exit 0, `expected` on stdout and nothing
// on stderr.
void expect_same_output(const std::string& args, const CliOutcome& expected) {
  for (const char* mode : {"auto", "plain", "off"}) {
    for (const std::string& form : {"--progress " + std::string(mode) + " " + args,
                                    args + " --progress=" + std::string(mode)}) {
      const CliOutcome o = run_gpuvs(form);
      EXPECT_EQ(o.code, 0) << form << ": " << o.err;
      EXPECT_TRUE(o.out == expected.out) << form << " changed stdout";
      EXPECT_TRUE(o.err.empty()) << form << ": " << o.err;
    }
  }
}

TEST(CliProgress, EveryModeLeavesStdoutAlone) {
  for (const std::string& args :
       {"compare " + kRun + " A100-SXM4-80GB", "--json compare " + kRun + " A100-SXM4-80GB",
        std::string("specs list")}) {
    const CliOutcome plain = run_gpuvs(args);
    ASSERT_EQ(plain.code, 0) << args << ": " << plain.err;
    ASSERT_FALSE(plain.out.empty()) << args;
    expect_same_output(args, plain);
  }
}

// Without a GPU, `gpuvs run` measures nothing: its one line says why, whatever the
// mode, and the bundled reference it shows instead is the same.
TEST(CliProgress, WithoutAGpuRunWritesNoProgress) {
  if (std::system("nvidia-smi -L >/dev/null 2>&1") == 0)
    GTEST_SKIP() << "a GPU is present: gpuvs run measures it";
  const std::string dir = out_dir();
  const CliOutcome base = run_gpuvs("--out " + dir + " --json run");
  ASSERT_EQ(base.code, 0) << base.err;
  for (const char* mode : {"plain", "auto", "off"}) {
    const CliOutcome o = run_gpuvs("--out " + dir + " --json run --progress " + mode);
    EXPECT_EQ(o.code, 0) << mode << ": " << o.err;
    EXPECT_TRUE(o.out == base.out) << mode << " changed stdout";
    EXPECT_EQ(o.err, base.err) << mode;
  }
  std::filesystem::remove_all(dir);
}

TEST(CliProgress, HelpNamesTheModes) {
  const CliOutcome o = run_gpuvs("--help");
  EXPECT_EQ(o.code, 0);
  EXPECT_NE(o.out.find("--progress"), std::string::npos) << o.out;
  EXPECT_NE(o.out.find("{auto,plain,off}"), std::string::npos) << o.out;
}

}  // namespace
