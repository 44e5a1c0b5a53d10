// `gpuvs model` as a user meets it on a machine without a GPU (docs/models.md):
// every bad value is a usage error (exit 2) before anything touches a GPU, and a
// good command says in one line why it cannot run (exit 3).
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <string>

#include <nlohmann/json.hpp>

#include "cli_runner.h"

namespace {

using gpuvs_test::CliOutcome;
using gpuvs_test::run_gpuvs;

bool gpu_present() {
  return std::system("nvidia-smi -L >/dev/null 2>&1") == 0;
}

std::string out_dir() {
  return (std::filesystem::temp_directory_path() /
          ("gpuvs_cli_model_" + std::to_string(::getpid())))
      .string();
}

CliOutcome model(const std::string& args) {
  return run_gpuvs("--out " + out_dir() + " model " + args);
}

TEST(CliModel, HelpNamesEveryOption) {
  const CliOutcome o = run_gpuvs("model --help");
  EXPECT_EQ(o.code, 0);
  for (const char* opt :
       {"resnet50",     "bert-large", "--mode",          "--precision", "--batch",    "max",
        "--accumulate", "--graph",    "--deterministic", "--attention", "--headroom", "--seq",
        "--steps",      "--time-cap", "--profile",       "--gpu",       "--quick",    "llama",
        "--size",       "--prompt",   "--generate",      "--recompute", "--kv-cache"})
    EXPECT_NE(o.out.find(opt), std::string::npos) << "help lacks " << opt << ":\n" << o.out;
}

TEST(CliModel, NoLongerPending) {
  const CliOutcome o = run_gpuvs("--help");
  EXPECT_EQ(o.out.find("End-to-end ResNet-50 / BERT-large throughput (train or infer) (not built"),
            std::string::npos);
  EXPECT_EQ(model("resnet50 --help").err.find("not built yet"), std::string::npos);
}

struct BadCase {
  const char* args;
  const char* says;  // a piece of the one line on stderr
};

TEST(CliModel, BadValuesAreUsageErrorsBeforeAnyGpu) {
  const BadCase cases[] = {
      {"vgg16", "unknown model 'vgg16'; known: resnet50, bert-large"},
      {"resnet50 --mode eval", "--mode: 'eval' is not train or infer"},
      {"resnet50 --precision int4", "--precision: 'int4'"},
      {"resnet50 --batch 0", "--batch 0: must be positive"},
      {"resnet50 --batch 12x", "--batch 12x: unknown unit 'x'"},
      {"resnet50 --batch -4", "--batch -4: must be positive"},
      {"resnet50 --batch 1.5", "--batch 1.5: not a whole number"},
      {"resnet50 --batch 1e9", "--batch 1e9: too large: at most 16777216"},
      {"resnet50 --batch ''", "--batch '': empty"},
      {"resnet50 --batch maxx",
       "--batch maxx: not a number with a suffix k, M, G, T, P (e.g. "
       "256, 1k, or max)"},
      {"resnet50 --accumulate x", "--accumulate x: not a number"},
      {"resnet50 --accumulate -1", "--accumulate -1: must not be negative"},
      {"resnet50 --accumulate 0x2", "--accumulate 0x2: unknown unit 'x2'"},
      {"resnet50 --steps 4kk", "--steps 4kk: unknown unit 'kk'"},
      {"resnet50 --steps 2.5", "--steps 2.5: not a whole number"},
      {"bert-large --seq 12.8", "--seq 12.8: not a whole number"},
      {"bert-large --seq inf", "--seq inf: not a finite number"},
      {"resnet50 --accumulate 0", "--accumulate: must be 1 or more"},
      {"resnet50 --mode infer --accumulate 2", "--mode train only"},
      {"resnet50 --graph maybe", "--graph: 'maybe' is not on or off"},
      {"resnet50 --headroom 0.2", "--headroom: only with --batch max"},
      {"resnet50 --batch max --headroom 0.95", "--headroom 0.95: too large: at most 0.9"},
      {"resnet50 --seq 128", "--seq: only for bert-large"},
      {"bert-large --seq 256", "--seq: 256 is not 128 or 512"},
      {"resnet50 --attention fused", "--attention: only for bert-large and llama"},
      {"llama --attention fused", "--attention: 'fused' is not auto, cudnn or gpuvs (llama)"},
      {"llama --mode infer --attention cudnn", "--attention: for llama only in --mode train"},
      {"llama --attention cudnn --deterministic",
       "--attention cudnn with --deterministic: cuDNN's attention backward adds through atomics"},
      {"bert-large --attention flash", "--attention: 'flash' is not unfused or fused"},
      {"resnet50 --steps 0", "--steps: must be 1 or more"},
      {"resnet50 --time-cap 0", "--time-cap 0: must be positive"},
      {"llama --size 70b --mode infer", "--size: '70b' is not one of 1b, 3b, 8b"},
      {"llama --precision fp16",
       "llama --mode train: --precision fp16 is not built; bf16 and fp8 are"},
      {"llama --recompute some", "--recompute: 'some' is not none, selective or full"},
      {"llama --mode infer --recompute full", "--recompute: only for llama --mode train"},
      {"bert-large --recompute full", "--recompute: only for llama"},
      {"llama --seq 100", "--seq: 100 is not a multiple of 64 up to Llama 3.2 1B's context"},
      {"llama --seq 0", "--seq: 0 is not a multiple of 64"},
      {"llama --size 8b --seq 262144", "up to Llama 3.1 8B's context of 131072"},
      {"llama --prompt 64", "--prompt: only for llama --mode infer"},
      {"llama --generate 64", "--generate: only for llama --mode infer"},
      {"llama --mode infer --precision tf32", "--precision tf32 is not built"},
      {"llama --mode infer --precision fp16 --kv-cache fp8",
       "--kv-cache fp8: the FP8 cache is for bf16 activations (--precision bf16 or fp8), not fp16"},
      {"llama --mode infer --kv-cache fp16",
       "--kv-cache: 'fp16' is not bf16 (this run's activations) or fp8"},
      {"llama --mode infer --precision fp8 --kv-cache fp8x",
       "--kv-cache: 'fp8x' is not bf16 (this run's activations) or fp8"},
      {"llama --kv-cache fp8", "--kv-cache: only for llama --mode infer"},
      {"bert-large --kv-cache fp8", "--kv-cache: only for llama"},
      {"llama --mode infer --prompt 0", "--prompt: must be 1 or more"},
      {"llama --mode infer --generate 1", "--generate: must be 2 or more"},
      {"llama --mode infer --prompt 131000 --generate 128",
       "--prompt 131000 + --generate 128 is beyond Llama 3.2 1B's context of 131072"},
      {"llama --mode infer --prompt 200k", "--prompt 200k: too large: at most 131072"},
      {"resnet50 --size 8b", "--size: only for llama"},
      {"bert-large --prompt 64", "--prompt: only for llama"},
      {"llama --mode infer --seq 512", "--seq: only for bert-large and llama --mode train"},
  };
  for (const BadCase& c : cases) {
    const CliOutcome o = model(c.args);
    EXPECT_EQ(o.code, 2) << c.args << ": " << o.err;
    EXPECT_NE(o.err.find(c.says), std::string::npos) << c.args << ": " << o.err;
    EXPECT_EQ(o.err.find('\n'), o.err.size() - 1) << c.args << ": not one line: " << o.err;
    EXPECT_TRUE(o.out.empty()) << c.args;
  }
}

// Counts are read as every count is (docs/models.md): 1k is 1000, 010 is ten. Without a
// GPU the good forms get as far as saying there is none.
TEST(CliModel, CountsTakeTheSameFormsAsEverywhere) {
  if (gpu_present()) GTEST_SKIP() << "a GPU is present: these would measure";
  for (const char* args :
       {"resnet50 --batch 1k", "resnet50 --accumulate 010", "resnet50 --steps 1e2",
        "bert-large --seq 0.512k", "resnet50 --batch 64", "llama --precision fp8 --recompute full",
        "llama --recompute selective --seq 1024", "llama --attention gpuvs",
        "llama --attention cudnn --precision fp8"}) {
    const CliOutcome o = model(args);
    EXPECT_EQ(o.code, 3) << args << ": " << o.err;
    EXPECT_EQ(o.err.find('\n'), o.err.size() - 1) << args << ": not one line: " << o.err;
  }
  std::filesystem::remove_all(out_dir());
}

TEST(CliModel, ParserErrorsAreUsageErrors) {
  EXPECT_EQ(model("").code, 2);                                 // no model named
  EXPECT_EQ(model("resnet50 --steps 5 --time-cap 1").code, 2);  // one or the other
  EXPECT_EQ(model("resnet50 --frobnicate").code, 2);
}

TEST(CliModel, WithoutAGpuExit3WithOneClearLine) {
  if (gpu_present()) GTEST_SKIP() << "a GPU is present: the GPU tests cover `gpuvs model`";
  for (const char* args : {"resnet50", "resnet50 --batch max", "bert-large --seq 512 --quick",
                           "resnet50 --mode infer --precision fp16 --graph off",
                           "llama --size 8b --mode infer --batch 64 --prompt 2k",
                           "llama --size 8b --mode infer --precision fp8 --kv-cache fp8",
                           "llama --mode infer --batch max --headroom 0.2",
                           "llama --mode infer --precision fp32 --kv-cache fp32",
                           "llama --seq 4096 --batch max --accumulate 2"}) {
    const CliOutcome o = model(args);
    EXPECT_EQ(o.code, 3) << args << ": " << o.err;
    ASSERT_FALSE(o.err.empty()) << args;
    EXPECT_EQ(o.err.find('\n'), o.err.size() - 1) << "not one line: " << o.err;
    if (GPUVS_TEST_HAVE_CUDA)
      EXPECT_NE(o.err.find("no NVIDIA GPU"), std::string::npos) << o.err;
    else
      EXPECT_NE(o.err.find("built without CUDA"), std::string::npos) << o.err;
  }
  std::filesystem::remove_all(out_dir());
}

// The table of benchmarks is CUDA-free: a CPU-only build lists it too.
TEST(CliModel, BenchListShowsTheModels) {
  const CliOutcome o = run_gpuvs("bench --list");
  EXPECT_EQ(o.code, 0);
  EXPECT_NE(o.out.find("model.end_to_end"), std::string::npos) << o.out;
  EXPECT_NE(o.out.find("model.{model}.{mode}.{precision}"), std::string::npos) << o.out;
}

TEST(CliModel, BenchListAsJsonNamesEveryResultId) {
  const CliOutcome o = run_gpuvs("--json bench --list");
  ASSERT_EQ(o.code, 0) << o.err;
  const nlohmann::json doc = nlohmann::json::parse(o.out);
  EXPECT_EQ(doc["schema"], "gpuvs.benchmarks/1");
  bool hbm_copy = false;
  for (const auto& b : doc["benchmarks"])
    for (const auto& r : b["results"])
      for (const auto& id : r["ids"])
        hbm_copy = hbm_copy || id == "memory.hbm.copy";
  EXPECT_TRUE(hbm_copy) << o.out;
}

}  // namespace
