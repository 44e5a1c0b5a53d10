// Usage errors as a user meets them, on every build and machine: every malformed
// command line is exit 2 with one line on stderr naming the option and, for a
// number out of range, its bound in a readable form; nothing on stdout; found before
// anything is measured (a machine without a GPU does not hide them behind exit 3).
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <utility>

#include "cli_runner.h"

namespace {

namespace fs = std::filesystem;
using gpuvs_test::CliOutcome;
using gpuvs_test::run_gpuvs;

using Case = std::pair<std::string, std::string>;  // arguments, expected part of the line

fs::path out_dir() {
  return fs::temp_directory_path() / ("gpuvs_cli_usage_" + std::to_string(::getpid()));
}

// Exit 2, one line starting with "gpuvs", holding `expected`, nothing on stdout, no
// long run of digits (a bound printed as a 309-digit double).
void expect_usage_error(const std::string& args, const std::string& expected) {
  const CliOutcome o = run_gpuvs("--out " + out_dir().string() + " " + args);
  EXPECT_EQ(o.code, 2) << args << ": " << o.err;
  ASSERT_FALSE(o.err.empty()) << args;
  EXPECT_EQ(o.err.find('\n'), o.err.size() - 1) << args << ": not one line: " << o.err;
  EXPECT_EQ(o.err.rfind("gpuvs", 0), 0u) << args << ": " << o.err;
  EXPECT_NE(o.err.find(expected), std::string::npos) << args << ": " << o.err;
  EXPECT_EQ(o.err.find("0000000000"), std::string::npos) << args << ": " << o.err;
  EXPECT_TRUE(o.out.empty()) << args << ": " << o.out;
}

void expect_usage_errors(std::initializer_list<Case> cases) {
  for (const auto& [args, expected] : cases)
    expect_usage_error(args, expected);
  fs::remove_all(out_dir());
}

// CLI11's own errors (unknown option, missing value, excluded options, extra or
// missing positional, a value not in a list): one line naming the command whose help
// tells more, not CLI11's two lines.
TEST(CliUsage, ParseErrorsAreOneLineNamingTheCommand) {
  expect_usage_errors({
      {"--frobnicate", "gpuvs: The following argument was not expected: --frobnicate"},
      {"frobnicate", "(see gpuvs --help)"},
      {"bench --frobnicate", "gpuvs bench: "},
      {"bench --time-cap", "(see gpuvs bench --help)"},
      {"compare --format", "gpuvs compare: "},
      {"compare H200-SXM --format xml", "(see gpuvs compare --help)"},
      {"specs show", "gpuvs specs show: "},
      {"specs diff H200-SXM", "(see gpuvs specs diff --help)"},
      {"specs list extra words", "gpuvs specs list: "},
      {"model resnet50 --steps 5 --time-cap 1", "excludes"},
      {"model", "gpuvs model: "},
      {"advise --model", "gpuvs advise: "},
      {"monitor --interval", "gpuvs monitor: "},
  });
  const CliOutcome o = run_gpuvs("bench --frobnicate");
  EXPECT_EQ(o.err.find("Run with --help"), std::string::npos) << o.err;
}

// --progress takes auto, plain or off, before or after the command; anything else is
// refused before any command runs (a model run too, which would probe the GPU).
TEST(CliUsage, ProgressModeIsOneOfThree) {
  expect_usage_errors({
      {"--progress bogus specs list", "--progress: bogus not in {auto,plain,off}"},
      {"specs list --progress live", "--progress: live not in {auto,plain,off}"},
      {"model resnet50 --progress PLAIN", "gpuvs model: --progress: PLAIN not in"},
      {"bench memory --progress ''", "--progress"},
      {"run --progress", "gpuvs run: "},
  });
}

// Every number of every command is read by one parser with a range: NaN, infinities,
// negative, too large or too small values name the option and the bound.
TEST(CliUsage, NumbersOfEveryCommandAreCheckedWithARange) {
  expect_usage_errors({
      {"compare H200-SXM A100-SXM4-80GB --tolerance nan", "--tolerance nan: not a finite number"},
      {"compare H200-SXM --tolerance inf", "--tolerance inf: not a finite number"},
      {"compare H200-SXM --tolerance -1", "--tolerance -1: must not be negative"},
      {"compare H200-SXM --tolerance 101", "--tolerance 101: too large: at most 100"},
      {"compare H200-SXM --tolerance 1e400", "--tolerance 1e400: too large: at most 100"},
      {"bench --time-cap nan", "--time-cap nan: not a finite number"},
      {"bench --time-cap -2", "--time-cap -2: must be positive"},
      {"bench --time-cap 1e400", "--time-cap 1e400: too large: at most 86400"},
      {"bench --noise nan", "--noise nan: not a finite number"},
      {"bench --noise 2", "--noise 2: too large: at most 1"},
      {"bench --noise 0", "--noise 0: must be positive"},
      {"bench collectives --timeout -inf", "--timeout -inf: not a finite number"},
      {"bench --monitor-interval 1.5", "--monitor-interval 1.5: not a whole number"},
      {"bench --monitor-interval -1", "--monitor-interval -1: must not be negative"},
      {"run --monitor-interval nan", "--monitor-interval nan: not a finite number"},
      {"run --monitor-interval 1e12", "--monitor-interval 1e12: too large: at most 3600000"},
      {"model resnet50 --time-cap nan", "--time-cap nan: not a finite number"},
      {"model resnet50 --batch max --headroom nan", "--headroom nan: not a finite number"},
      {"model resnet50 --batch max --headroom 0.95", "--headroom 0.95: too large: at most 0.9"},
      {"monitor --interval nan -- true", "--interval nan: not a finite number"},
      {"monitor --interval 5 -- true", "--interval 5: too small: at least 10"},
      {"monitor --interval 99999999999999999999 -- true", "too large: at most 3600000"},
  });
}

// --baseline takes a column number of any length (not an internal error of stoul).
TEST(CliUsage, BaselineNumbersOfAnyLengthAreColumnsOrNot) {
  expect_usage_errors({
      {"compare H200-SXM A100-SXM4-80GB --baseline 99999999999999999999",
       "--baseline 99999999999999999999: no such column (columns: 1 = "},
      {"compare H200-SXM A100-SXM4-80GB --baseline 0", "--baseline 0: no such column"},
      {"compare H200-SXM A100-SXM4-80GB --baseline 3", "--baseline 3: no such column"},
      {"compare H200-SXM --baseline 18446744073709551616", "no such column"},
  });
  const CliOutcome o =
      run_gpuvs("compare H200-SXM A100-SXM4-80GB --baseline 00000000000000000000000002");
  EXPECT_EQ(o.code, 0) << o.err;
}

// advise refuses an option that the chosen mode does not use, whatever its value,
// and values no model or GPU can have.
TEST(CliUsage, AdviseRefusesOptionsOfTheOtherModeAndImpossibleValues) {
  expect_usage_errors({
      {"advise infer --model llama-2-7b --optimizer lion",
       "advise infer: --optimizer applies to training (advise train), not to inference"},
      {"advise infer --model llama-2-7b --parallel bogus", "advise infer: --parallel applies"},
      {"advise infer --model llama-2-7b --recompute full", "--recompute applies to training"},
      {"advise infer --model llama-2-7b --no-flash-attention",
       "--flash-attention/--no-flash-attention applies to training"},
      {"advise infer --model llama-2-7b --tokens 2T", "--tokens applies to training"},
      {"advise infer --model llama-2-7b --max-days 3", "--max-days applies to training"},
      {"advise infer --model llama-2-7b --network 50GB/s", "--network applies to training"},
      {"advise infer --model llama-2-7b --global-batch 8", "--global-batch applies to training"},
      {"advise --model llama-2-7b --context abc",
       "advise train: --context applies to inference (advise infer), not to training"},
      {"advise train --model llama-2-7b --batch 16", "--batch applies to inference"},
      {"advise --model llama-2-7b --kv-precision fp8", "--kv-precision applies to inference"},
      {"advise --model llama-2-7b --bw-util 0.5", "--bw-util applies to inference"},
      {"advise --model 0.0001", "--model 0.0001: too small: at least 1000000"},
      {"advise --model 999", "--model 999: too small: at least 1000000"},
      {"advise --model 7B --params 10k", "--params 10k: too small: at least 1000000"},
      {"advise --model 7B --mfu nan", "--mfu nan: not a finite number"},
      {"advise --model 7B --mfu 1e-300", "--mfu 1e-300: too small: at least 0.01"},
      {"advise infer --model 7B --bw-util 1.5", "--bw-util 1.5: too large: at most 1"},
      {"advise --model 7B --max-days 1e9", "--max-days 1e9: too large: at most 36500"},
      {"advise --model 7B --tokens 0.5", "--tokens 0.5: too small: at least 1"},
      {"advise infer --model 7B --context 1e40", "--context 1e40: too large"},
      {"advise --model 7B --parallel bogus", "bogus"},
      {"advise --model 7B --optimizer lion", "lion"},
      {"advise banana --model 7B", "advise: unknown mode banana (train or infer)"},
  });
}

// Arguments that are wrong on any machine are exit 2 before the GPU is probed and
// before a build without CUDA says so (exit 3).
TEST(CliUsage, ArgumentsAreCheckedBeforeTheGpuIsProbed) {
  const fs::path empty_dir = out_dir().string() + "_nccl";
  fs::create_directories(empty_dir);
  const fs::path file = empty_dir / "plain.txt";
  std::ofstream(file) << "x\n";
  expect_usage_errors({
      {"run --gpu abc", "--gpu: abc is not a GPU index"},
      {"run --gpu -1", "--gpu: -1 is not a GPU index"},
      {"run --gpu 0,,1", "--gpu: '' is not a GPU index"},
      {"run --gpu 1.5", "--gpu: 1.5 is not a GPU index"},
      {"run --gpu 99999999999999999999", "--gpu: 99999999999999999999 is not a GPU index"},
      {"run --gpu 0,", "--gpu: 0, ends with a comma"},
      {"bench --gpu x", "--gpu: x is not a GPU index"},
      {"bench no-such-benchmark", "unknown benchmark 'no-such-benchmark'; known: memory.hbm"},
      {"bench memory --nccl-tests /nonexistent",
       "--nccl-tests: nccl-tests directory /nonexistent does not exist"},
      {"bench collectives --nccl-tests " + file.string(), "is not a directory"},
      {"bench collectives --ops all_reduce --nccl-tests " + empty_dir.string(),
       "--nccl-tests: no all_reduce_perf in " + empty_dir.string()},
      {"bench collectives --nccl-tests ''", "--nccl-tests: empty file name"},
      {"bench collectives --rank 1", "--rank and --ranks go together"},
      {"model resnet50 --precision fp8", "fp8 is for BERT-large and Llama"},
      {"model resnet50 --gpu x", "--gpu: x is not a GPU index"},
      {"model bert-large --gpu 0,abc", "--gpu: abc is not a GPU index"},
      {"model resnet50 --precision fp4", "--precision: 'fp4' is not one of"},
  });
  fs::remove_all(empty_dir);
}

// A file name option never takes the next option (or the `--` before a command) as
// its value.
TEST(CliUsage, FileOptionsDoNotTakeTheNextOptionAsTheirName) {
  expect_usage_errors({
      {"bench --nccl-tests --quick", "--nccl-tests --quick: not a file name"},
      {"monitor --out -- true", "--out --: not a file name"},
  });
  const CliOutcome o = run_gpuvs("--out --json specs list");
  EXPECT_EQ(o.code, 2) << o.err;
  EXPECT_NE(o.err.find("--out --json: not a file name"), std::string::npos) << o.err;
}

// What gpuvs could not write is named with the OS's reason.
TEST(CliUsage, WriteErrorsSayWhy) {
  const CliOutcome full = run_gpuvs("specs list >/dev/full");
  EXPECT_EQ(full.code, 1) << full.err;
  EXPECT_EQ(full.err, "gpuvs: cannot write to standard output: No space left on device\n");
  const CliOutcome json = run_gpuvs("--json specs show H200-SXM >/dev/full");
  EXPECT_EQ(json.code, 1) << json.err;
  EXPECT_NE(json.err.find("No space left on device"), std::string::npos) << json.err;

  const fs::path dir = out_dir().string() + "_write";
  fs::remove_all(dir);
  fs::create_directories(dir / "compare.md");  // a directory where a file goes
  const CliOutcome o = run_gpuvs("--out " + dir.string() + " compare H200-SXM");
  EXPECT_EQ(o.code, 1) << o.err;
  EXPECT_NE(o.err.find("cannot write " + (dir / "compare.md").string() + ": Is a directory"),
            std::string::npos)
      << o.err;
  fs::remove_all(dir);
}

}  // namespace
