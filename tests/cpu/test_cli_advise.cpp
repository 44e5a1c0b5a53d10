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

// --explain walks the layout search: each count and tensor-parallel degree tried, why
// it was rejected (memory, batch, a count tp does not divide), each fitting one's time
// split; a search of thousands of layouts shows its first and last dozen.
TEST(CliAdvise, ExplainWalksTheLayoutSearch) {
  const AdviseRun r = gpuvs_advise(
      "advise --model llama-2-70b --candidates H200 --gpus 16 --global-batch 4 --explain");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_TRUE(has(r.out, "layout search (chosen: 16 GPUs, tp 8 × dp 2):")) << r.out;
  EXPECT_TRUE(has(r.out,
                  "16 GPUs, tp 1 × dp 16: rejected, batch: the global batch of 4 at "
                  "micro-batch 1 gives at most 4 data-parallel ranks"))
      << r.out;
  EXPECT_TRUE(has(r.out, "16 GPUs, tp 4 × dp 4: 160 GB per GPU of 141 GB: rejected, memory"))
      << r.out;
  EXPECT_TRUE(has(r.out, "16 GPUs, tp 8 × dp 2: 109 GB per GPU of 141 GB: fits")) << r.out;
  EXPECT_TRUE(has(r.out, "16 GPUs, tp 8 × dp 2: compute ")) << r.out;
  EXPECT_TRUE(has(r.out, "+ exposed data-parallel ")) << r.out;

  const AdviseRun none = gpuvs_advise(
      "advise --model 405B --layers 126 --hidden 16384 --heads 128 --kv-heads 8 --seq 8192 "
      "--vocab 128256 --tokens 15.6T --candidates H100-SXM --explain");
  ASSERT_EQ(none.code, 0) << none.err;
  EXPECT_TRUE(has(none.out, "layout search (none fits):")) << none.out;
  EXPECT_TRUE(has(none.out, "1 GPU, tp 1 × dp 1: ")) << none.out;
  EXPECT_TRUE(has(none.out, "1 GPU, tp 2: rejected, 1 is not a multiple of 2")) << none.out;
  EXPECT_TRUE(has(none.out, " more layouts ...")) << none.out;
  EXPECT_TRUE(has(none.out, "16384 GPUs, tp 8 × dp 2048: rejected, batch")) << none.out;
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
      {"advise --model 7B --tokens 0", "--tokens 0: must be positive"},
      {"advise --model 7B --gpus=-1", "--gpus -1: must be positive"},
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

nlohmann::json advise_json(const std::string& args) {
  const AdviseRun r = gpuvs_advise("--json advise " + args);
  EXPECT_EQ(r.code, 0) << args << ": " << r.err;
  if (r.code != 0) return nlohmann::json::object();
  return nlohmann::json::parse(r.out);
}

bool workload_says(const nlohmann::json& j, const std::string& part) {
  for (const auto& line : j["workload"])
    if (has(line.get<std::string>(), part)) return true;
  return false;
}

// --context is a count of tokens: 4k is 4000 (decimal, as every count), not 4096.
TEST(CliAdvise, ContextTakesSuffixes) {
  EXPECT_EQ(
      advise_json("infer --model llama-2-70b --candidates H200 --context 4k")["request"]["context"],
      4000);
  EXPECT_EQ(advise_json(
                "infer --model llama-2-70b --candidates H200 --context 128k")["request"]["context"],
            128000);
  EXPECT_EQ(advise_json(
                "infer --model llama-2-70b --candidates H200 --context 4096")["request"]["context"],
            4096);
  const AdviseRun text = gpuvs_advise("advise infer --model llama-2-70b --context 4k --batch 2");
  ASSERT_EQ(text.code, 0) << text.err;
  EXPECT_TRUE(has(text.out, "batch 2 × context 4000")) << text.out;
  // Training has no context: said, not ignored.
  const AdviseRun train = gpuvs_advise("advise --model 7B --context 4k");
  EXPECT_EQ(train.code, 2) << train.err;
  EXPECT_TRUE(has(train.err, "--context applies to inference")) << train.err;
}

// --global-batch in tokens, as papers give it ("16M tokens"): the nearest whole number
// of the model's sequences, said in the workload; "seq" spells the plain count. A
// layout whose dp × micro-batch does not divide the batch says what it runs instead.
TEST(CliAdvise, GlobalBatchInTokensBecomesWholeSequences) {
  const nlohmann::json j = advise_json(
      "--model llama-2-7b --tokens 2T --candidates H200 --gpus 16 --global-batch '16M tokens'");
  EXPECT_EQ(j["request"]["global_batch"], 3906);
  EXPECT_TRUE(workload_says(
      j,
      "global batch given: 16.0M tokens = 3906.25 sequences of 4096: 3906 used (15998976 "
      "tokens)"))
      << j["workload"];
  EXPECT_EQ(
      advise_json(
          "--model llama-2-7b --candidates H200 --global-batch 4Mtok")["request"]["global_batch"],
      977);
  EXPECT_EQ(
      advise_json(
          "--model llama-2-7b --candidates H200 --global-batch 2048seq")["request"]["global_batch"],
      2048);
  const std::string why = j["candidates"][0]["why"];
  EXPECT_TRUE(has(why, "the batch becomes 3920 (dp 16 × micro-batch 1 × 245), not 3906")) << why;
  const std::string exact =
      advise_json("--model llama-2-7b --tokens 2T --candidates H200 --gpus 16 --global-batch 2048")
          ["candidates"][0]["why"];
  EXPECT_FALSE(has(exact, "the batch becomes")) << exact;

  const AdviseRun small = gpuvs_advise("advise --model llama-2-7b --global-batch '10 tokens'");
  EXPECT_EQ(small.code, 2) << small.err;
  EXPECT_TRUE(has(small.err, "10 tokens is less than one sequence of 4096 tokens")) << small.err;
  const AdviseRun cnn = gpuvs_advise("advise --model resnet50 --global-batch '1M tokens'");
  EXPECT_EQ(cnn.code, 2) << cnn.err;
  EXPECT_TRUE(has(cnn.err, "a CNN's batch counts samples")) << cnn.err;
  const AdviseRun bad = gpuvs_advise("advise --model llama-2-7b --global-batch 'x tokens'");
  EXPECT_EQ(bad.code, 2) << bad.err;
  // A fixed layout with more data-parallel ranks than the batch has micro-batches.
  const AdviseRun few = gpuvs_advise("advise --model llama-2-7b --gpus 16 --tp 2 --global-batch 4");
  EXPECT_EQ(few.code, 2) << few.err;
  EXPECT_TRUE(has(few.err,
                  "--gpus 16 at --tp 2 makes 8 data-parallel ranks, more than the "
                  "global batch of 4 at micro-batch 1 feeds (4)"))
      << few.err;
  EXPECT_EQ(gpuvs_advise("advise --model llama-2-7b --gpus 16 --tp 4 --global-batch 4").code, 0);
}

// --global-batch counts sequences (samples for a CNN), as docs/advise.md says: 16M
// is sixteen million sequences of the model's 4096 tokens, not 16M tokens.
TEST(CliAdvise, GlobalBatchIsACountOfSequences) {
  const nlohmann::json j =
      advise_json("--model llama-2-7b --tokens 2T --candidates H200 --global-batch 16M");
  EXPECT_EQ(j["request"]["global_batch"], 16000000);
  EXPECT_TRUE(workload_says(j, "global batch: 16000000 sequences × 4096 tokens = 65.5B tokens"))
      << j["workload"];
  EXPECT_EQ(
      advise_json(
          "--model llama-2-7b --candidates H200 --global-batch 1k")["request"]["global_batch"],
      1000);
  EXPECT_EQ(advise_json("--model llama-2-7b --candidates H200 --global-batch 1024 "
                        "--micro-batch 2")["request"]["micro_batch"],
            2);
  EXPECT_EQ(advise_json(
                "--model resnet50 --candidates H200 --global-batch 8k")["request"]["global_batch"],
            8000);
}

// The forms that worked before the one parser keep their meaning.
TEST(CliAdvise, EveryNumberFormKeepsItsMeaning) {
  nlohmann::json j = advise_json("--model 70B --tokens 2T --candidates H200");
  EXPECT_EQ(j["model"]["params"], 70e9);
  EXPECT_EQ(j["request"]["tokens"], 2e12);
  EXPECT_EQ(advise_json("--model 7B --tokens 1.5T --candidates H200")["request"]["tokens"], 1.5e12);
  EXPECT_EQ(advise_json("--model 7B --tokens 300B --candidates H200")["request"]["tokens"], 300e9);
  EXPECT_EQ(advise_json("--model 7B --tokens 1.5e11 --candidates H200")["request"]["tokens"],
            1.5e11);
  EXPECT_EQ(advise_json("--model 25.6M --candidates H200")["model"]["params"], 25.6e6);
  EXPECT_EQ(advise_json("--model llama-2-7b --params 6.74B --candidates H200")["model"]["params"],
            6.74e9);
  j = advise_json(
      "--model 7B --candidates H200 --network 25GB/s --overhead 2GiB --fragmentation 0 "
      "--mfu 0.5 --gpus 16 --tp 2 --max-days 1.5 --micro-batch 2 --global-batch 2048");
  EXPECT_EQ(j["assumptions"]["network_bandwidth"], 25e9);
  EXPECT_EQ(j["assumptions"]["overhead_fixed_bytes"], 2147483648.0);
  EXPECT_EQ(j["assumptions"]["overhead_fraction"], 0);
  EXPECT_EQ(j["assumptions"]["mfu"], 0.5);
  EXPECT_EQ(j["request"]["gpus"], 16);
  EXPECT_EQ(j["request"]["tp"], 2);
  EXPECT_EQ(j["request"]["max_days"], 1.5);
  EXPECT_EQ(j["request"]["micro_batch"], 2);
  EXPECT_EQ(j["request"]["global_batch"], 2048);
  EXPECT_EQ(
      advise_json(
          "--model 7B --candidates H200 --overhead 2GB")["assumptions"]["overhead_fixed_bytes"],
      2e9);
  j = advise_json(
      "--model 7B --candidates H200 --layers 32 --hidden 4096 --heads 32 --kv-heads 8 "
      "--seq 2048 --vocab 32k");
  EXPECT_EQ(j["model"]["layers"], 32);
  EXPECT_EQ(j["model"]["hidden"], 4096);
  EXPECT_EQ(j["model"]["kv_heads"], 8);
  EXPECT_EQ(j["model"]["seq"], 2048);
  EXPECT_EQ(j["model"]["vocab"], 32000);
  j = advise_json(
      "--model 25M --kind cnn --flops-per-sample 8.2GFLOP --activation-bytes 45MB --samples 115M "
      "--candidates H200");
  EXPECT_EQ(j["model"]["forward_flops_per_sample"], 8.2e9);
  EXPECT_EQ(j["model"]["activation_bytes_per_sample"], 45e6);
  EXPECT_EQ(j["request"]["samples"], 115e6);
  j = advise_json(
      "--model 25M --kind cnn --flops-per-sample 8.2G --activation-bytes 1.5MiB "
      "--samples 1e6 --candidates H200");
  EXPECT_EQ(j["model"]["forward_flops_per_sample"], 8.2e9);
  EXPECT_EQ(j["model"]["activation_bytes_per_sample"], 1572864.0);
  j = advise_json("infer --model llama-2-70b --candidates H200 --batch 16 --bw-util 0.9");
  EXPECT_EQ(j["request"]["batch"], 16);
  EXPECT_EQ(j["assumptions"]["bandwidth_utilization"], 0.9);
}

// Every option that takes a number refuses a bad one the same way: one line naming
// the option and the text, exit 2, nothing on stdout.
TEST(CliAdvise, EveryNumberOptionRefusesBadFormsInOneLine) {
  struct NumberOption {
    const char* before;  // the command up to the option
    const char* option;
    bool whole;        // a fraction is refused
    bool zero_ok;      // 0 is allowed, so -1 "must not be negative"
    const char* unit;  // appended to the numbers that should get past the unit
  };
  const NumberOption options[] = {
      {"advise --model 7B", "--params", false, false, ""},
      {"advise --model 7B", "--layers", true, false, ""},
      {"advise --model 7B", "--hidden", true, false, ""},
      {"advise --model 7B", "--heads", true, false, ""},
      {"advise --model 7B", "--kv-heads", true, false, ""},
      {"advise --model 7B", "--seq", true, false, ""},
      {"advise --model 7B", "--vocab", true, false, ""},
      {"advise --model 25M --kind cnn", "--flops-per-sample", false, false, ""},
      {"advise --model 25M --kind cnn", "--activation-bytes", true, false, ""},
      {"advise --model 7B", "--tokens", false, false, ""},
      {"advise --model resnet50", "--samples", false, false, ""},
      {"advise --model 7B", "--micro-batch", true, false, ""},
      {"advise --model 7B", "--global-batch", true, false, ""},
      {"advise --model 7B", "--mfu", false, false, ""},
      {"advise infer --model 7B", "--bw-util", false, false, ""},
      {"advise --model 7B", "--network", false, false, "GB/s"},
      {"advise --model 7B", "--overhead", true, true, ""},
      {"advise --model 7B", "--fragmentation", false, true, ""},
      {"advise --model 7B", "--gpus", true, false, ""},
      {"advise --model 7B", "--tp", true, false, ""},
      {"advise --model 7B", "--max-days", false, false, ""},
      {"advise infer --model 7B", "--context", true, false, ""},
      {"advise infer --model 7B", "--batch", true, false, ""},
  };
  for (const NumberOption& o : options) {
    const std::string unit = o.unit;
    std::vector<std::pair<std::string, std::string>> bad = {
        {"4kk", "4kk: unknown unit 'kk"},
        {"''", "'': empty: give "},
        {"-1" + unit, "-1" + unit + (o.zero_ok ? ": must not be negative" : ": must be positive")},
        {"inf", "inf: not a finite number"},
        {"nan", "nan: not a finite number"},
        {"1e400" + unit, "1e400" + unit + ": too large: at most "},
        {"0x10", "0x10: unknown unit 'x10"},
    };
    if (o.whole) bad.push_back({"1.5", "1.5: not a whole number"});
    if (!o.zero_ok) bad.push_back({"0" + unit, "0" + unit + ": must be positive"});
    for (const auto& [text, says] : bad) {
      const std::string args = std::string(o.before) + " " + o.option + " " + text;
      const AdviseRun r = gpuvs_advise(args);
      EXPECT_EQ(r.code, 2) << args << ": " << r.err;
      EXPECT_TRUE(r.out.empty()) << args;
      EXPECT_EQ(r.err.rfind(std::string("gpuvs: ") + o.option + " " + says, 0), 0u)
          << args << ": " << r.err;
      EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << args << ": " << r.err;
    }
  }
  // --model is a preset or a size; a size is read like --params.
  for (const auto& [text, says] : std::vector<std::pair<std::string, std::string>>{
           {"7kk", "--model 7kk: unknown unit 'kk'"},
           {"-7B", "--model -7B: must be positive"},
           {"1e31", "--model 1e31: too large: at most 1e30"},
           {"7b", "--model 7b: unknown unit 'b' (did you mean B?)"}}) {
    const AdviseRun r = gpuvs_advise("advise --model " + text);
    EXPECT_EQ(r.code, 2) << text << ": " << r.err;
    EXPECT_EQ(r.err.rfind("gpuvs: " + says, 0), 0u) << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  }
  // Bits are not bytes; a bare G is not a byte size.
  const AdviseRun bits = gpuvs_advise("advise --model 7B --network 400Gb/s");
  EXPECT_EQ(bits.code, 2);
  EXPECT_TRUE(has(bits.err, "400 Gb/s = 50GB/s")) << bits.err;
  const AdviseRun bare = gpuvs_advise("advise --model 7B --overhead 2G");
  EXPECT_EQ(bare.code, 2);
  EXPECT_TRUE(has(bare.err, "GB is 10^9 bytes, GiB 2^30")) << bare.err;
}

}  // namespace
