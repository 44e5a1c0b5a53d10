// `gpuvs import` as a user meets it: the real binary writes a run file that loads and
// that compare reads, prints one gpuvs.import/1 document with --json, refuses what is
// not a tool's output with exit 2 and one line (writing nothing), fails to write with
// exit 1, and is in --help, the manual page and the completions.
// Built into test_cli (GPUVS_BIN names the binary).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cli_runner.h"
#include "core/run_file.h"
#include "scratch_dir_test.h"

namespace {

namespace fs = std::filesystem;
using gpuvs_test::run_gpuvs;

const fs::path kData = GPUVS_TEST_DATA_DIR;
const std::string kAllReduce = (kData / "nccl_tests/all_reduce_2gpu_h200_v2.17.6.txt").string();
const std::string kNvbench = (kData / "nvbench/copy_reduce_h200x2.json").string();
const std::string kNvbandwidth = (kData / "nvbandwidth/h200x2_v0.8.json").string();

bool has(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

bool one_line(const std::string& err) {
  return !err.empty() && err.find('\n') == err.size() - 1;
}

class CliImport : public gpuvs_test::ScratchDirTest {
 protected:
  CliImport() : ScratchDirTest("gpuvs_cli_import") {}
  size_t files_in_dir() const {
    return static_cast<size_t>(
        std::distance(fs::directory_iterator(dir_), fs::directory_iterator()));
  }
};

TEST_F(CliImport, WritesARunFileThatLoadsAndCompares) {
  const std::string out = (dir_ / "nccl.json").string();
  const auto r = run_gpuvs("import nccl-tests " + kAllReduce + " --out " + out);
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_TRUE(r.err.empty()) << r.err;
  EXPECT_TRUE(has(r.out, "gpuvs import: 58 results from 1 nccl-tests file into " + out)) << r.out;
  EXPECT_TRUE(has(r.out, "all_reduce_perf (nccl-tests 2.17.6): 29 sizes on 2 GPUs")) << r.out;
  const gpuvs::RunFile run = gpuvs::load_run_file(out);
  EXPECT_EQ(run.meta.command, "import");
  EXPECT_EQ(run.results.size(), 58u);

  const auto c = run_gpuvs("compare " + out);
  ASSERT_EQ(c.code, 0) << c.err;
  EXPECT_TRUE(has(c.out, "all_reduce bus bandwidth · 2 GPUs, 2 GiB")) << c.out;
  EXPECT_TRUE(has(c.out, "367 GB/s")) << c.out;
  EXPECT_TRUE(has(c.out, "measured by nccl-tests 2.17.6 (imported)")) << c.out;
}

TEST_F(CliImport, JsonIsOneDocumentSayingWhatWasReadAndWritten) {
  const std::string out = (dir_ / "nvbench.json").string();
  const auto r = run_gpuvs("--json import nvbench " + kNvbench + " --out " + out);
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_TRUE(r.err.empty()) << r.err;
  const nlohmann::json doc = nlohmann::json::parse(r.out);  // nothing else on stdout
  EXPECT_EQ(doc["schema"], "gpuvs.import/1");
  EXPECT_EQ(doc["tool"], "nvbench");
  EXPECT_EQ(doc["out"], out);
  EXPECT_EQ(doc["results"], 11);
  EXPECT_EQ(doc["errors"], 0);
  EXPECT_EQ(doc["gpus"], 2);
  ASSERT_EQ(doc["files"].size(), 1u);
  EXPECT_EQ(doc["files"][0]["path"], kNvbench);
  EXPECT_EQ(doc["files"][0]["results"], 11);
  EXPECT_EQ(doc["files"][0]["notes"].size(), 1u);
  EXPECT_TRUE(fs::exists(out));
}

// Without --out the file goes where every run file goes: the global --out DIR.
TEST_F(CliImport, DefaultsToTheGlobalOutputFolder) {
  const auto r = run_gpuvs("--json --out " + dir_.string() + " import nvbandwidth " + kNvbandwidth);
  ASSERT_EQ(r.code, 0) << r.err;
  const std::string out = nlohmann::json::parse(r.out)["out"];
  EXPECT_EQ(fs::path(out).parent_path(), dir_);
  EXPECT_TRUE(fs::path(out).filename().string().starts_with("import-")) << out;
  EXPECT_TRUE(has(out, "hgx_h200_03")) << out;  // the host the file names
  EXPECT_EQ(gpuvs::load_run_file(out).results.size(), 20u);
}

// Refusals: exit 2, one line naming the file and what was wrong, and nothing written.
TEST_F(CliImport, RefusalsAreOneLineAndWriteNothing) {
  const std::string out = (dir_ / "never.json").string();
  const fs::path empty = dir_ / "empty.log";
  std::ofstream(empty).flush();
  struct Case {
    std::string args, says;
  };
  const std::vector<Case> cases = {
      {"ncl-tests " + kAllReduce, "unknown tool \"ncl-tests\"; did you mean: nccl-tests?"},
      {"nccl-tests " + empty.string(), empty.string() + ": the file is empty"},
      {"nccl-tests " + kNvbench, kNvbench + ": not a nccl-tests log: it is JSON"},
      {"nvbench " + kNvbandwidth, kNvbandwidth + ": not nvbench's JSON: it is nvbandwidth's"},
      {"nvbandwidth " + kNvbench, kNvbench + ": not nvbandwidth's JSON: it is nvbench's"},
      {"nvbench " + kAllReduce, kAllReduce + ": not valid JSON at byte 0"},
      {"nvbench " + (dir_ / "missing.json").string(),
       (dir_ / "missing.json").string() + ": cannot read: No such file or directory"},
      // A good file first does not make a bad one behind it half-imported.
      {"nccl-tests " + kAllReduce + " " + empty.string(), empty.string() + ": the file is empty"},
      {"nccl-tests " + kAllReduce + " --op broadcast", "the log is of \"all_reduce_perf\""},
      {"nvbench " + kNvbench + " --buffer-size 64M", "--buffer-size goes with nvbandwidth"},
  };
  for (const Case& c : cases) {
    const auto r = run_gpuvs("import " + c.args + " --out " + out);
    EXPECT_EQ(r.code, 2) << c.args << ": " << r.err;
    EXPECT_TRUE(one_line(r.err)) << r.err;
    EXPECT_TRUE(has(r.err, c.says)) << c.args << ": " << r.err;
    EXPECT_TRUE(r.out.empty()) << r.out;
    EXPECT_FALSE(fs::exists(out)) << c.args;
  }
  EXPECT_EQ(files_in_dir(), 1u);  // the empty log alone: no temporary file left either
  const auto usage = run_gpuvs("import nccl-tests");
  EXPECT_EQ(usage.code, 2);
  EXPECT_TRUE(has(usage.err, "gpuvs import: files is required")) << usage.err;
}

// A file that cannot be written is a failure (exit 1), not a usage error.
TEST_F(CliImport, AFileThatCannotBeWrittenIsExitOne) {
  const std::string out = (dir_ / "no-such-folder" / "x.json").string();
  const auto r = run_gpuvs("import nccl-tests " + kAllReduce + " --out " + out);
  EXPECT_EQ(r.code, 1) << r.err;
  EXPECT_TRUE(one_line(r.err)) << r.err;
  EXPECT_TRUE(has(r.err, "cannot write " + out)) << r.err;
}

TEST(CliImportHelp, InTheHelpTheManualPageAndTheCompletions) {
  const auto help = run_gpuvs("import --help");
  EXPECT_EQ(help.code, 0);
  EXPECT_TRUE(has(help.out, "nccl-tests, nvbench, nvbandwidth")) << help.out;
  EXPECT_TRUE(has(help.out, "--buffer-size")) << help.out;
  EXPECT_TRUE(has(help.out, "peer.ce|sm.unidirectional|bidirectional.nvbandwidth")) << help.out;
  EXPECT_TRUE(has(run_gpuvs("--help").out, "import"));
  EXPECT_TRUE(has(run_gpuvs("--man").out, ".SS \"gpuvs import\""));
  const std::string bash = run_gpuvs("--completion bash").out;
  EXPECT_TRUE(has(bash, "    import) words='-h --help --out --op --buffer-size")) << bash;
}

}  // namespace
