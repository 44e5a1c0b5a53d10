// `gpuvs specs` as a user meets it: the real binary's tables, JSON and exit codes.
// Built into test_cli (GPUVS_BIN names the binary).
#include <gtest/gtest.h>

#include <sys/wait.h>
#include <unistd.h>
#include "cli_runner.h"

#include <nlohmann/json.hpp>

#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

namespace {

using SpecsRun = gpuvs_test::CliOutcome;

SpecsRun gpuvs_specs(const std::string& args) {
  return gpuvs_test::run_gpuvs(args);
}

bool has(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

// The table row of a metric, e.g. "FP16 tensor (dense)   312 TFLOP/s   989 TFLOP/s ...".
std::string row(const std::string& out, const std::string& metric_name) {
  std::istringstream in(out);
  for (std::string line; std::getline(in, line);)
    if (line.rfind(metric_name + " ", 0) == 0) return line;
  return {};
}

TEST(CliSpecs, DiffShowsTheDoneWhenFigures) {
  const SpecsRun r = gpuvs_specs("specs diff A100-SXM4-80GB H200-SXM");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_TRUE(r.err.empty()) << r.err;
  const std::string fp16 = row(r.out, "FP16 tensor (dense)");
  EXPECT_TRUE(has(fp16, "312 TFLOP/s")) << fp16;
  EXPECT_TRUE(has(fp16, "989 TFLOP/s")) << fp16;
  EXPECT_TRUE(has(fp16, "3.17x")) << fp16;
  EXPECT_TRUE(has(fp16, "+217 %")) << fp16;
  const std::string bw = row(r.out, "Memory bandwidth");
  EXPECT_TRUE(has(bw, "2.039 TB/s")) << bw;
  EXPECT_TRUE(has(bw, "4.80 TB/s")) << bw;
  const std::string mem = row(r.out, "Memory size");
  EXPECT_TRUE(has(mem, "80.0 GB")) << mem;
  EXPECT_TRUE(has(mem, "141 GB")) << mem;
  // FP8: the A100 has none; no ratio is made up from it.
  const std::string fp8 = row(r.out, "FP8 tensor (dense)");
  EXPECT_TRUE(has(fp8, "none")) << fp8;
  EXPECT_FALSE(has(fp8, "x ")) << fp8;
  EXPECT_FALSE(has(fp8, "%")) << fp8;
  EXPECT_TRUE(has(r.out, "Sources:"));
  EXPECT_TRUE(has(r.out, "https://www.nvidia.com/en-us/data-center/h200/"));
}

TEST(CliSpecs, DiffJsonHasRawValuesAndMissingAsNull) {
  const SpecsRun r = gpuvs_specs("--json specs diff A100 H200");
  ASSERT_EQ(r.code, 0) << r.err;
  const nlohmann::json j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["schema"], "gpuvs.specs.diff/1");
  EXPECT_EQ(nlohmann::ordered_json::parse(r.out).begin().key(), "schema") << "first";
  EXPECT_EQ(j["a"], "A100-SXM4-80GB");
  EXPECT_EQ(j["b"], "H200-SXM");
  bool seen_fp16 = false;
  bool seen_fp8 = false;
  for (const auto& row : j["rows"]) {
    if (row["metric"] == "compute.fp16") {
      seen_fp16 = true;
      EXPECT_DOUBLE_EQ(row["a"]["value"].get<double>(), 312e12);
      EXPECT_DOUBLE_EQ(row["b"]["value"].get<double>(), 989e12);
      EXPECT_NEAR(row["ratio"].get<double>(), 989.0 / 312.0, 1e-12);
    }
    if (row["metric"] == "compute.fp8") {
      seen_fp8 = true;
      EXPECT_TRUE(row["a"]["value"].is_null());
      EXPECT_EQ(row["a"]["status"], "none");
      EXPECT_TRUE(row["ratio"].is_null());
    }
  }
  EXPECT_TRUE(seen_fp16);
  EXPECT_TRUE(seen_fp8);
}

TEST(CliSpecs, UnknownNameIsExit2WithSuggestions) {
  const SpecsRun r = gpuvs_specs("specs show H300");
  EXPECT_EQ(r.code, 2);
  EXPECT_TRUE(r.out.empty()) << r.out;
  ASSERT_FALSE(r.err.empty());
  EXPECT_EQ(r.err.find('\n'), r.err.size() - 1) << "not one line: " << r.err;
  EXPECT_EQ(r.err.rfind("gpuvs: unknown GPU", 0), 0u) << r.err;
  EXPECT_TRUE(has(r.err, "H300")) << r.err;
  EXPECT_TRUE(has(r.err, "did you mean: ")) << r.err;
  EXPECT_TRUE(has(r.err, "H200-SXM")) << r.err;
  EXPECT_EQ(gpuvs_specs("specs diff A100 H300").code, 2);
}

TEST(CliSpecs, ListShowsEveryGpu) {
  const SpecsRun r = gpuvs_specs("specs list");
  ASSERT_EQ(r.code, 0) << r.err;
  for (const char* id : {"V100-SXM2-32GB", "A100-PCIe-40GB", "A100-SXM4-80GB", "H100-SXM",
                         "H100-NVL", "H200-SXM", "H200-NVL", "GH200-96GB", "B200", "L40S", "L4"})
    EXPECT_TRUE(has(r.out, id)) << id;
  const SpecsRun j = gpuvs_specs("specs list --json");
  ASSERT_EQ(j.code, 0) << j.err;
  const nlohmann::json list = nlohmann::json::parse(j.out);
  EXPECT_EQ(list["schema"], "gpuvs.specs.list/1");
  EXPECT_GE(list["gpus"].size(), 40u);
  // One GPU: its schema, then the same fields as in the list, and its published results.
  const SpecsRun one = gpuvs_specs("--json specs show H200");
  ASSERT_EQ(one.code, 0) << one.err;
  const nlohmann::json gpu = nlohmann::json::parse(one.out);
  EXPECT_EQ(gpu["schema"], "gpuvs.specs.gpu/1");
  EXPECT_EQ(gpu["id"], "H200-SXM");
  EXPECT_TRUE(gpu["published"].is_array());
  EXPECT_TRUE(gpu["figures"].is_array());
}

TEST(CliSpecs, ShowGivesFiguresSourcesAndPublishedResults) {
  const SpecsRun r = gpuvs_specs("specs show a100");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_TRUE(has(r.out, "A100-SXM4-80GB"));
  EXPECT_TRUE(has(r.out, "NVIDIA A100-SXM4-80GB")) << "driver name";
  EXPECT_TRUE(has(r.out, "0x20b2")) << "PCI device id";
  EXPECT_TRUE(has(r.out, "datasheet: https://"));
  EXPECT_TRUE(has(row(r.out, "FP16 tensor (dense)"), "312 TFLOP/s"));
  EXPECT_TRUE(has(r.out, "Not in this GPU: FP8 tensor (dense)"));
  EXPECT_TRUE(has(r.out, "Published results"));
  EXPECT_TRUE(has(r.out, "DeepLearningExamples"));
  const SpecsRun j = gpuvs_specs("--json specs show H200");
  ASSERT_EQ(j.code, 0) << j.err;
  const nlohmann::json doc = nlohmann::json::parse(j.out);
  EXPECT_EQ(doc["id"], "H200-SXM");
  EXPECT_FALSE(doc["published"].empty());
}

TEST(CliSpecs, ShowFindsAGpuByWhatNvidiaSmiPrints) {
  // The name nvidia-smi prints and the PCI device id find the entry as its id does.
  for (const auto& [typed, id] : std::vector<std::pair<std::string, std::string>>{
           {"'NVIDIA GeForce RTX 4090'", "RTX-4090"},
           {"0x2684", "RTX-4090"},
           {"'NVIDIA RTX 6000 Ada Generation'", "RTX-6000-Ada"},
           {"0x26b1", "RTX-6000-Ada"},
           {"'NVIDIA L40'", "L40"},
           {"0x2941", "GB200"},
           {"'Tesla T4'", "T4"}}) {
    const SpecsRun r = gpuvs_specs("--json specs show " + typed);
    ASSERT_EQ(r.code, 0) << typed << ": " << r.err;
    EXPECT_EQ(nlohmann::json::parse(r.out)["id"], id) << typed;
  }
  const SpecsRun t = gpuvs_specs("specs show 'NVIDIA GeForce RTX 4090'");
  ASSERT_EQ(t.code, 0) << t.err;
  EXPECT_TRUE(has(t.out, "RTX-4090")) << t.out;
  EXPECT_TRUE(has(t.out, "0x2684")) << "PCI device id shown";
  EXPECT_TRUE(has(row(t.out, "BF16 tensor (dense)"), "165.2 TFLOP/s")) << t.out;
  // Two of the new entries side by side, found by driver name and by id.
  const SpecsRun d = gpuvs_specs("specs diff 'NVIDIA GeForce RTX 3090' 0x2684");
  ASSERT_EQ(d.code, 0) << d.err;
  EXPECT_TRUE(has(row(d.out, "Memory bandwidth"), "936 GB/s")) << d.out;
  EXPECT_EQ(gpuvs_specs("specs show 0xffff").code, 2) << "no GPU has that id";
}

TEST(CliSpecs, CatalogueFileReplacesTheBuiltinOne) {
  const auto dir = std::filesystem::temp_directory_path();
  const auto good = dir / ("gpuvs_specs_good_" + std::to_string(::getpid()) + ".json");
  const auto bad = dir / ("gpuvs_specs_bad_" + std::to_string(::getpid()) + ".json");
  std::ofstream(good) << R"({"schema": "gpuvs.catalogue/1", "gpus": [
    {"id": "MY-GPU", "name": "My GPU", "architecture": "Test", "form_factor": "PCIe",
     "memory_type": "HBM3", "source": "https://example.com/my-gpu",
     "figures": {"memory.size": {"value": 1, "unit": "TB"}}}]})";
  std::ofstream(bad) << R"({"schema": "gpuvs.catalogue/1", "gpus": [{"id": 7}]})";
  const SpecsRun r = gpuvs_specs("specs show my-gpu --catalogue " + good.string());
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_TRUE(has(r.out, "1.00 TB")) << r.out;
  const SpecsRun b = gpuvs_specs("specs list --catalogue " + bad.string());
  EXPECT_EQ(b.code, 2);
  EXPECT_TRUE(has(b.err, bad.string() + ": gpus[0].id: expected a string")) << b.err;
  EXPECT_EQ(gpuvs_specs("specs list --catalogue /nonexistent/catalogue.json").code, 2);
  std::filesystem::remove(good);
  std::filesystem::remove(bad);
}

TEST(CliSpecs, MissingArgumentsAreUsageErrors) {
  EXPECT_EQ(gpuvs_specs("specs").code, 2);
  EXPECT_EQ(gpuvs_specs("specs show").code, 2);
  EXPECT_EQ(gpuvs_specs("specs diff A100").code, 2);
  EXPECT_EQ(gpuvs_specs("specs frobnicate").code, 2);
}

}  // namespace
