// Claims files (CSV and TOML) and the claims check: parsing, one-line errors for
// malformed files, metric and GPU name resolution, and the verdicts on the shipped
// example (an article comparing an A100 80GB with an "H200 96GB").
#include <gtest/gtest.h>

#include <string>

#include "core/error.h"
#include "report/claims.h"

namespace gpuvs {
namespace {

const std::string kExampleCsv =
    std::string(GPUVS_SOURCE_DIR) + "/data/claims/a100-vs-h200-96gb-article.csv";
const std::string kExampleToml =
    std::string(GPUVS_SOURCE_DIR) + "/data/claims/a100-vs-h200-96gb-article.toml";

bool toml_supported() {
  try {
    parse_claims("[[claim]]\ngpu = \"H200\"\nmetric = \"fp16\"\nvalue = 1\nunit = \"TFLOPS\"\n",
                 "probe.toml");
    return true;
  } catch (const UsageError& e) {
    return std::string(e.what()).find("CSV claims files only") == std::string::npos;
  }
}

TEST(ClaimsParse, CsvWithCommentsQuotesBomAndCrlf) {
  const std::string text =
      "\xEF\xBB\xBF# from an article\r\n"
      "\r\n"
      "metric, gpu ,value,unit,source,precision\r\n"
      "fp16,\"H200, SXM\",989,TFLOPS,\"slide 3, \"\"dense\"\"\",\r\n"
      "  # an indented comment\r\n"
      "resnet-50 training,A100 80GB,2470,img/s,,AMP\r\n";
  const std::vector<Claim> claims = parse_claims(text, "c.csv");
  ASSERT_EQ(claims.size(), 2u);
  EXPECT_EQ(claims[0].gpu, "H200, SXM");
  EXPECT_EQ(claims[0].metric, "fp16");
  EXPECT_DOUBLE_EQ(claims[0].value, 989);
  EXPECT_EQ(claims[0].unit, "TFLOPS");
  EXPECT_EQ(claims[0].source, "slide 3, \"dense\"");
  EXPECT_EQ(claims[0].line, 4);
  EXPECT_EQ(claims[1].precision, "AMP");
  EXPECT_EQ(claims[1].source, "");
  EXPECT_EQ(claims[1].line, 6);
}

TEST(ClaimsParse, ShippedExampleCsvAndTomlAgree) {
  const std::vector<Claim> csv = load_claims(kExampleCsv);
  ASSERT_EQ(csv.size(), 14u);
  EXPECT_EQ(csv[0].gpu, "A100 80GB");
  if (!toml_supported()) GTEST_SKIP() << "built without toml++";
  const std::vector<Claim> toml = load_claims(kExampleToml);
  ASSERT_EQ(toml.size(), csv.size());
  for (size_t i = 0; i < csv.size(); ++i) {
    EXPECT_EQ(toml[i].gpu, csv[i].gpu) << i;
    EXPECT_EQ(toml[i].metric, csv[i].metric) << i;
    EXPECT_DOUBLE_EQ(toml[i].value, csv[i].value) << i;
    EXPECT_EQ(toml[i].unit, csv[i].unit) << i;
    EXPECT_EQ(toml[i].source, csv[i].source) << i;
    EXPECT_GT(toml[i].line, 0);
  }
}

TEST(ClaimsParse, WithoutTomlSupportTomlIsOneLineError) {
  if (toml_supported()) GTEST_SKIP() << "built with toml++";
  try {
    load_claims(kExampleToml);
    FAIL();
  } catch (const UsageError& e) {
    const std::string msg = e.what();
    EXPECT_EQ(msg.rfind(kExampleToml + ": this build reads CSV claims files only", 0), 0u) << msg;
    EXPECT_EQ(msg.find('\n'), std::string::npos);
  }
}

TEST(ClaimsParse, TomlByContentWithoutExtension) {
  if (!toml_supported()) GTEST_SKIP() << "built without toml++";
  const auto claims = parse_claims(
      "source = \"vendor slide\"\n\n[[claim]]\ngpu = \"H100\"\nmetric = \"memory bandwidth\"\n"
      "value = 3.35\nunit = \"TB/s\"\n\n[[claim]]\ngpu = \"H100\"\nmetric = \"fp8\"\n"
      "value = 1979\nunit = \"TFLOPS\"\nsource = \"datasheet\"\n",
      "claims");
  ASSERT_EQ(claims.size(), 2u);
  EXPECT_EQ(claims[0].source, "vendor slide");
  EXPECT_EQ(claims[0].line, 3);
  EXPECT_EQ(claims[1].source, "datasheet");
  EXPECT_DOUBLE_EQ(claims[1].value, 1979);
}

// Found by fuzz_loaders: toml++ quotes the offending source, newline included.
TEST(ClaimsParse, TomlSyntaxErrorQuotingANewlineStaysOneLine) {
  if (!toml_supported()) GTEST_SKIP() << "built without toml++";
  try {
    parse_claims("[[claim]]\ngpu = \"A1\"\nvalue = n\n51uit = \"s\"\n", "bad.toml");
    FAIL() << "a TOML syntax error was accepted";
  } catch (const UsageError& e) {
    const std::string msg = e.what();
    EXPECT_EQ(msg.rfind("bad.toml:3: ", 0), 0u) << msg;
    EXPECT_EQ(msg.find('\n'), std::string::npos) << msg;
  }
}

struct Malformed {
  const char* what;
  const char* name;
  const char* text;
  int line;
  const char* says;
};

void expect_one_line_error(const Malformed& m) {
  try {
    parse_claims(m.text, m.name);
    FAIL() << m.what << ": accepted";
  } catch (const UsageError& e) {
    const std::string msg = e.what();
    EXPECT_EQ(msg.find('\n'), std::string::npos) << msg;
    EXPECT_EQ(msg.rfind(std::string(m.name) + ":" + std::to_string(m.line) + ": ", 0), 0u)
        << m.what << ": " << msg;
    EXPECT_NE(msg.find(m.says), std::string::npos) << m.what << ": " << msg;
    EXPECT_EQ(e.code(), ExitCode::kUsage);
  }
}

class ClaimsMalformed : public testing::TestWithParam<Malformed> {};

TEST_P(ClaimsMalformed, OneLineUsageErrorNamingFileAndLine) {
  expect_one_line_error(GetParam());
}

constexpr const char* kHeader = "gpu,metric,value,unit\n";

INSTANTIATE_TEST_SUITE_P(
    Csv, ClaimsMalformed,
    testing::Values(
        Malformed{"wrong header", "a.csv", "name,what,value,unit\nH200,fp16,1,TFLOPS\n", 1,
                  "unknown column 'name'"},
        Malformed{"header lacks a column", "a.csv", "gpu,metric,value\nH200,fp16,1\n", 1,
                  "lacks column 'unit'"},
        Malformed{"duplicate column", "a.csv", "gpu,gpu,metric,value,unit\n", 1, "twice"},
        Malformed{"row missing a column", "a.csv", "gpu,metric,value,unit\nH200,fp16,989\n", 2,
                  "3 fields, the header has 4"},
        Malformed{"row with an extra column", "a.csv",
                  "gpu,metric,value,unit\n# c\nH200,fp16,989,TFLOPS,x\n", 3, "5 fields"},
        Malformed{"non-number value", "a.csv", "gpu,metric,value,unit\nH200,fp16,lots,TFLOPS\n", 2,
                  "value 'lots' is not a number"},
        Malformed{"thousands separator in a quoted value", "a.csv",
                  "gpu,metric,value,unit\nH200,fp16,\"1,979\",TFLOPS\n", 2, "not a number"},
        Malformed{"unknown unit", "a.csv", "gpu,metric,value,unit\nH200,fp16,989,furlongs\n", 2,
                  "unit 'furlongs' does not fit compute.fp16"},
        Malformed{"unit of another quantity", "a.csv",
                  "gpu,metric,value,unit\nH200,memory bandwidth,4.8,TB\n", 2, "does not fit"},
        Malformed{"unknown metric", "a.csv", "gpu,metric,value,unit\nH200,fp17,1,TFLOPS\n", 2,
                  "unknown metric 'fp17'"},
        Malformed{"empty file", "a.csv", "", 1, "empty claims file"},
        Malformed{"comments only", "a.csv", "# nothing\n# here\n", 2, "empty claims file"},
        Malformed{"header only", "a.csv", kHeader, 1, "no claims after the header"},
        Malformed{"negative value", "a.csv", "gpu,metric,value,unit\nH200,fp16,-989,TFLOPS\n", 2,
                  "negative"},
        Malformed{"unterminated quote", "a.csv", "gpu,metric,value,unit\n\"H200,fp16,1,TFLOPS\n", 2,
                  "unterminated"},
        Malformed{"text after a closing quote", "a.csv",
                  "gpu,metric,value,unit\n\"H200\"x,fp16,1,TFLOPS\n", 2, "after a closing quote"},
        Malformed{"empty gpu", "a.csv", "gpu,metric,value,unit\n,fp16,1,TFLOPS\n", 2, "empty gpu"},
        Malformed{"infinite value", "a.csv", "gpu,metric,value,unit\nH200,fp16,inf,TFLOPS\n", 2,
                  "finite"},
        Malformed{"CRLF and BOM do not hide errors", "a.csv",
                  "\xEF\xBB\xBFgpu,metric,value,unit\r\nH200,fp16,x,TFLOPS\r\n", 2,
                  "value 'x' is not a number"}));

// TOML errors (only where toml++ is built in; otherwise the one-line "CSV only" error).
class ClaimsMalformedToml : public testing::TestWithParam<Malformed> {};

TEST_P(ClaimsMalformedToml, OneLineUsageErrorNamingFileAndLine) {
  if (!toml_supported()) GTEST_SKIP() << "built without toml++";
  expect_one_line_error(GetParam());
}

INSTANTIATE_TEST_SUITE_P(
    Toml, ClaimsMalformedToml,
    testing::Values(
        Malformed{"syntax", "a.toml", "[[claim]]\ngpu = \"H200\nmetric = 1\n", 2, ""},
        Malformed{"missing unit", "a.toml",
                  "[[claim]]\ngpu = \"H200\"\nmetric = \"fp16\"\nvalue = 989\n", 1,
                  "claim lacks 'unit'"},
        Malformed{"value as a string", "a.toml",
                  "[[claim]]\ngpu = \"H200\"\nmetric = \"fp16\"\nvalue = \"989\"\nunit = "
                  "\"TFLOPS\"\n",
                  4, "value must be a number"},
        Malformed{"unknown key", "a.toml",
                  "[[claim]]\ngpu = \"H200\"\nmetrc = \"fp16\"\nvalue = 1\nunit = \"TFLOPS\"\n", 3,
                  "unknown key 'metrc'"},
        Malformed{"unknown metric", "a.toml",
                  "\n[[claim]]\ngpu = \"H200\"\nmetric = \"fp17\"\nvalue = 1\nunit = \"TFLOPS\"\n",
                  2, "unknown metric"},
        Malformed{"no claims", "a.toml", "title = \"x\"\n", 1, "no [[claim]] tables"}));

TEST(ClaimsParse, UnreadableFile) {
  try {
    load_claims("/nonexistent/claims.csv");
    FAIL();
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("/nonexistent/claims.csv: cannot read"),
              std::string::npos);
  }
}

TEST(ClaimsNames, MetricAliases) {
  const std::pair<const char*, const char*> cases[] = {
      {"fp32", "compute.fp32"},
      {"FP16", "compute.fp16"},
      {"bf16", "compute.bf16"},
      {"TF32", "compute.tf32"},
      {"fp8", "compute.fp8"},
      {"INT8", "compute.int8"},
      {"fp64", "compute.fp64"},
      {"Memory Bandwidth", "memory.bandwidth"},
      {"memory", "memory.size"},
      {"NVLink", "link.nvlink"},
      {"CUDA cores", "gpu.cuda_cores"},
      {"ResNet-50 training", "model.resnet50.train"},
      {"resnet50 inference", "model.resnet50.infer"},
      {"BERT-large training", "model.bert-large.train"},
      {"model.bert_large.train", "model.bert-large.train"},  // files written before
      {"fp16 sparse", "compute.fp16_sparse"},
      {"compute.bf16", "compute.bf16"},
      {"Memory.Bandwidth", "memory.bandwidth"},
  };
  for (const auto& [name, id] : cases) {
    const MetricDef* m = resolve_claim_metric(name);
    ASSERT_NE(m, nullptr) << name;
    EXPECT_EQ(m->id, id) << name;
  }
  EXPECT_EQ(resolve_claim_metric("fp17"), nullptr);
  EXPECT_EQ(resolve_claim_metric(""), nullptr);
}

TEST(ClaimsNames, Units) {
  EXPECT_DOUBLE_EQ(*claim_to_base_unit(19.5, "TFLOPS", "FLOP/s"), 19.5e12);
  EXPECT_DOUBLE_EQ(*claim_to_base_unit(2039, "GB/s", "B/s"), 2039e9);
  EXPECT_DOUBLE_EQ(*claim_to_base_unit(16896, "cores", "1"), 16896);
  EXPECT_DOUBLE_EQ(*claim_to_base_unit(51, "samples/s", "seq/s"), 51);
  EXPECT_DOUBLE_EQ(*claim_to_base_unit(1420, "images/sec", "img/s"), 1420);
  EXPECT_FALSE(claim_to_base_unit(1, "GB", "B/s"));
}

TEST(ClaimsNames, GpuResolution) {
  const Catalogue& cat = Catalogue::builtin();
  auto id = [&](const char* name) {
    const ClaimedGpu g = resolve_claimed_gpu(name, cat);
    return g.spec ? g.spec->id : std::string("none");
  };
  EXPECT_EQ(id("A100 80GB"), "A100-SXM4-80GB");
  EXPECT_EQ(id("NVIDIA A100 80GB"), "A100-SXM4-80GB");
  EXPECT_EQ(id("A100 40GB"), "A100-SXM4-40GB");
  EXPECT_EQ(id("H100 94GB"), "H100-NVL");  // by memory size within the family
  EXPECT_EQ(id("H200 141 GB"), "H200-SXM");
  EXPECT_EQ(id("RTX 9090"), "none");
  const ClaimedGpu h = resolve_claimed_gpu("H200 96GB", cat);
  ASSERT_NE(h.spec, nullptr);
  EXPECT_EQ(h.spec->id, "H200-SXM");
  EXPECT_TRUE(h.memory_mismatch);
  EXPECT_EQ(h.family, "H200");
  EXPECT_DOUBLE_EQ(*h.named_memory_bytes, 96e9);
  EXPECT_FALSE(resolve_claimed_gpu("A100 80GB", cat).memory_mismatch);
}

const ClaimJudgement* find(const std::vector<ClaimJudgement>& js, const std::string& gpu,
                           const std::string& metric) {
  for (const ClaimJudgement& j : js)
    if (j.claim.gpu == gpu && j.claim.metric == metric) return &j;
  return nullptr;
}

void expect_verdict(const std::vector<ClaimJudgement>& js, const char* gpu, const char* metric,
                    ClaimVerdict v, const char* why_has) {
  const ClaimJudgement* j = find(js, gpu, metric);
  ASSERT_NE(j, nullptr) << gpu << " " << metric;
  EXPECT_EQ(j->verdict, v) << gpu << " " << metric << ": " << j->why;
  EXPECT_NE(j->why.find(why_has), std::string::npos) << gpu << " " << metric << ": " << j->why;
}

void expect_example_verdicts(const std::vector<ClaimJudgement>& js) {
  using V = ClaimVerdict;
  expect_verdict(js, "A100 80GB", "fp32", V::kHolds, "19.5 TFLOP/s holds (datasheet 19.5)");
  expect_verdict(js, "H200 96GB", "fp32", V::kContradicted, "is 67 TFLOP/s (datasheet)");
  expect_verdict(js, "A100 80GB", "fp16", V::kHolds, "(datasheet 312)");
  expect_verdict(js, "H200 96GB", "fp16", V::kContradicted,
                 "is 989 TFLOP/s (datasheet); 495 is neither the dense (989) nor the sparse "
                 "(1979) figure");
  expect_verdict(js, "A100 80GB", "memory bandwidth", V::kHolds, "(datasheet 2039)");
  expect_verdict(js, "H200 96GB", "memory bandwidth", V::kContradicted, "4800 GB/s (datasheet)");
  expect_verdict(js, "H200 96GB", "memory", V::kContradicted,
                 "no H200 has 96 GB; the H200 SXM has 141 GB (datasheet)");
  expect_verdict(js, "A100 80GB", "nvlink", V::kHolds, "(datasheet 600)");
  expect_verdict(js, "H200 96GB", "nvlink", V::kHolds, "(datasheet 900)");
  expect_verdict(js, "H200 96GB", "cuda cores", V::kHolds, "16896 holds");
  // Every claim about the impossible GPU says so.
  for (const ClaimJudgement& j : js)
    if (j.claim.gpu == "H200 96GB") {
      EXPECT_NE(j.why.find("no H200 has 96 GB"), std::string::npos) << j.why;
    }
  const ClaimJudgement* mem = find(js, "H200 96GB", "memory");
  EXPECT_DOUBLE_EQ(*mem->reference, 141e9);
  EXPECT_EQ(mem->reference_source, Source::kDatasheet);
  EXPECT_NEAR(mem->off_pct, (96.0 / 141 - 1) * 100, 1e-9);
  EXPECT_EQ(mem->reference_ref.rfind("https://", 0), 0u);
}

TEST(ClaimsJudge, ShippedExampleAgainstBuiltinCatalogue) {
  const auto js =
      judge_claims(load_claims(kExampleCsv), {}, Catalogue::builtin(), Published::builtin());
  ASSERT_EQ(js.size(), 14u);
  expect_example_verdicts(js);
  // Model claims without settings: not comparable with the published figures (which
  // are TF32 938 and mixed 2470 img/s for the A100); nothing published for the H200.
  expect_verdict(js, "A100 80GB", "resnet-50 training", ClaimVerdict::kUnverifiable,
                 "not comparable: the claim states no precision or batch");
  expect_verdict(js, "H200 96GB", "resnet-50 training", ClaimVerdict::kUnverifiable,
                 "no measurement, datasheet or published figure");
  if (!toml_supported()) return;
  const auto jt =
      judge_claims(load_claims(kExampleToml), {}, Catalogue::builtin(), Published::builtin());
  expect_example_verdicts(jt);
}

TEST(ClaimsJudge, MeasurementBeatsDatasheet) {
  const RunFile run =
      load_run_file(std::string(GPUVS_SOURCE_DIR) + "/data/reference/h200-sxm-run.json");
  std::vector<CompareInput> measured(1);
  measured[0].run = &run;
  measured[0].run_ref = "h200-sxm-run.json";
  const std::vector<Claim> claims = {{"H200", "memory bandwidth", 4.8, "TB/s", "", "", "", 1},
                                     {"H200", "memory bandwidth", 4.2, "TB/s", "", "", "", 2}};
  const auto js = judge_claims(claims, measured, Catalogue::builtin(), Published::builtin());
  EXPECT_EQ(js[0].verdict, ClaimVerdict::kOff) << js[0].why;
  EXPECT_EQ(js[0].reference_source, Source::kMeasured);
  EXPECT_NE(js[0].why.find("measured by gpuvs"), std::string::npos) << js[0].why;
  EXPECT_NE(js[0].why.find("datasheet 4.8"), std::string::npos) << js[0].why;
  EXPECT_NE(js[0].reference_ref.find("h200-sxm-run.json"), std::string::npos);
  EXPECT_EQ(js[1].verdict, ClaimVerdict::kHolds) << js[1].why;
}

// The H200's model runs committed under data/reference: ResNet-50 training at batch
// 256 in fp32 (831 img/s), tf32 (3964) and bf16 (7555); BERT-large training bf16 at
// seq 128 batch 64 (1607), batch 856 (1856), fp8 (1779), seq 512 batch 16 (342).
std::vector<RunFile> h200_model_runs() {
  std::vector<RunFile> runs;
  for (const char* f :
       {"h200-model-resnet50-fp32-train", "h200-model-resnet50-tf32-train",
        "h200-model-resnet50-bf16-train", "h200-model-bert-large-seq512-train",
        "h200-model-bert-large-seq128-train", "h200-model-bert-large-seq128-train-fp8",
        "h200-model-bert-large-seq128-train-batch-max"})
    runs.push_back(load_run_file(std::string(GPUVS_SOURCE_DIR) + "/data/reference/" + f + ".json"));
  return runs;
}

std::vector<CompareInput> inputs_of(const std::vector<RunFile>& runs) {
  std::vector<CompareInput> in;
  for (const RunFile& r : runs) {
    CompareInput i;
    i.run = &r;
    i.run_ref = r.meta.argv.empty() ? "run" : "reference run";
    in.push_back(i);
  }
  return in;
}

TEST(ClaimsJudge, ModelClaimsAreJudgedOnTheConfigurationsMeasuredHere) {
  const std::vector<RunFile> runs = h200_model_runs();
  const std::vector<CompareInput> measured = inputs_of(runs);
  const std::vector<Claim> claims = {
      // No settings: where it falls among what was measured.
      {"H200 96GB", "resnet-50 training", 2100, "img/s", "", "", "", 1},
      {"H200 96GB", "bert-large training", 51, "samples/s", "", "", "", 2},
      {"H200", "resnet-50 training", 7400, "img/s", "", "", "", 3},
      {"H200", "resnet-50 training", 9000, "img/s", "", "", "", 4},
      // Settings: against that configuration.
      {"H200", "resnet-50 training", 3900, "img/s", "", "TF32", "batch 256", 5},
      {"H200", "bert-large training", 2400, "seq/s", "", "bf16", "seq 128, batch 64", 6},
      {"H200", "bert-large training", 1800, "seq/s", "", "fp8", "", 7},
      {"H200", "bert-large training", 300, "seq/s", "", "fp16", "", 8},
  };
  const auto js = judge_claims(claims, measured, Catalogue::builtin(), Published::builtin());
  EXPECT_EQ(js[0].verdict, ClaimVerdict::kUnverifiable) << js[0].why;
  EXPECT_NE(js[0].why.find("2100 img/s lies between fp32, batch 256: 831 img/s and tf32, batch "
                           "256: 3964 img/s measured here"),
            std::string::npos)
      << js[0].why;
  EXPECT_EQ(js[1].verdict, ClaimVerdict::kContradicted) << js[1].why;
  EXPECT_NE(js[1].why.find("51 seq/s is below every configuration measured here (lowest: bf16, "
                           "batch 16, seq 512: 342 seq/s)"),
            std::string::npos)
      << js[1].why;
  EXPECT_EQ(js[1].reference_source, Source::kMeasured);
  EXPECT_EQ(js[2].verdict, ClaimVerdict::kHolds) << js[2].why;  // within 5 % of bf16
  EXPECT_NE(js[2].why.find("measured by gpuvs: bf16, batch 256"), std::string::npos) << js[2].why;
  // Above everything measured: left to the published figures (none for an H200's
  // training), so unverifiable, saying what was measured.
  EXPECT_EQ(js[3].verdict, ClaimVerdict::kUnverifiable) << js[3].why;
  EXPECT_NE(js[3].why.find("above every configuration measured here (highest: bf16, batch 256: "
                           "7555 img/s)"),
            std::string::npos)
      << js[3].why;
  EXPECT_EQ(js[4].verdict, ClaimVerdict::kHolds) << js[4].why;
  EXPECT_NE(js[4].why.find("tf32, batch 256"), std::string::npos) << js[4].why;
  EXPECT_EQ(js[5].verdict, ClaimVerdict::kContradicted) << js[5].why;  // +49 % of 1607
  EXPECT_NEAR(*js[5].reference, 1607.4, 1);
  EXPECT_EQ(js[6].verdict, ClaimVerdict::kHolds) << js[6].why;  // fp8 1779
  // A precision nobody measured or published for the H200: unverifiable, listing what was.
  EXPECT_EQ(js[7].verdict, ClaimVerdict::kUnverifiable) << js[7].why;
  EXPECT_NE(js[7].why.find("measured here: "), std::string::npos) << js[7].why;
}

TEST(ClaimsJudge, ThresholdsAndTolerance) {
  const std::vector<Claim> claims = {
      {"H200", "memory bandwidth", 4.8 * 1.04, "TB/s", "", "", "", 1},  // +4 %: holds
      {"H200", "memory bandwidth", 4.8 * 1.08, "TB/s", "", "", "", 2},  // +8 %: off
      {"H200", "memory bandwidth", 4.8 * 0.80, "TB/s", "", "", "", 3},  // -20 %: off
      {"H200", "memory bandwidth", 4.8 * 0.70, "TB/s", "", "", "", 4},  // -30 %: contradicted
  };
  const auto js = judge_claims(claims, {}, Catalogue::builtin(), Published::builtin());
  EXPECT_EQ(js[0].verdict, ClaimVerdict::kHolds);
  EXPECT_EQ(js[1].verdict, ClaimVerdict::kOff);
  EXPECT_NE(js[1].why.find("off by +8 %"), std::string::npos) << js[1].why;
  EXPECT_EQ(js[2].verdict, ClaimVerdict::kOff);
  EXPECT_EQ(js[3].verdict, ClaimVerdict::kContradicted);
  ClaimOptions loose;
  loose.tolerance = 0.10;
  const auto jl = judge_claims(claims, {}, Catalogue::builtin(), Published::builtin(), loose);
  EXPECT_EQ(jl[1].verdict, ClaimVerdict::kHolds);
  EXPECT_EQ(jl[3].verdict, ClaimVerdict::kContradicted);
}

TEST(ClaimsJudge, SparseUnsupportedAndUnknown) {
  const std::vector<Claim> claims = {
      {"H200", "fp16", 1979, "TFLOPS", "", "", "", 1},
      {"A100 80GB", "fp8", 624, "TFLOPS", "", "", "", 2},
      {"RTX 9090", "fp16", 1, "PFLOPS", "", "", "", 3},
  };
  const auto js = judge_claims(claims, {}, Catalogue::builtin(), Published::builtin());
  // The sparse figure holds as what it is: its own verdict, not plain "holds".
  EXPECT_EQ(js[0].verdict, ClaimVerdict::kHoldsSparse);
  EXPECT_TRUE(holds(js[0].verdict));
  EXPECT_NE(js[0].why.find("holds as the sparse figure (datasheet 1979); dense is 989"),
            std::string::npos)
      << js[0].why;
  EXPECT_EQ(js[1].verdict, ClaimVerdict::kContradicted);
  EXPECT_NE(js[1].why.find("has no FP8"), std::string::npos) << js[1].why;
  EXPECT_EQ(js[2].verdict, ClaimVerdict::kUnverifiable);
  EXPECT_NE(js[2].why.find("no GPU 'RTX 9090'"), std::string::npos) << js[2].why;
  EXPECT_FALSE(js[2].reference);
}

TEST(ClaimsJudge, ModelThroughputNeedsMatchingSettings) {
  // Published for the A100 SXM4 80GB: ResNet-50 training 2470 img/s (mixed, AMP) and
  // 938 img/s (TF32), NVIDIA DeepLearningExamples.
  const std::vector<Claim> claims = {
      {"A100 80GB", "resnet-50 training", 2400, "img/s", "", "AMP", "batch 256", 1},
      {"A100 80GB", "resnet-50 training", 1420, "img/s", "", "TF32", "", 2},
      {"A100 80GB", "resnet-50 training", 1420, "img/s", "", "", "", 3},
      {"A100 80GB", "resnet-50 training", 20000, "img/s", "", "", "", 4},
      {"A100 80GB", "resnet-50 training", 2400, "img/s", "", "AMP", "batch 64", 5},
  };
  const auto js = judge_claims(claims, {}, Catalogue::builtin(), Published::builtin());
  EXPECT_EQ(js[0].verdict, ClaimVerdict::kHolds) << js[0].why;
  EXPECT_EQ(js[0].reference_source, Source::kPublished);
  EXPECT_NE(js[0].why.find("NVIDIA DeepLearningExamples"), std::string::npos) << js[0].why;
  EXPECT_EQ(js[1].verdict, ClaimVerdict::kContradicted) << js[1].why;
  EXPECT_NE(js[1].why.find("TF32"), std::string::npos) << js[1].why;
  EXPECT_EQ(js[2].verdict, ClaimVerdict::kUnverifiable) << js[2].why;
  EXPECT_EQ(js[2].why.rfind("not comparable", 0), 0u) << js[2].why;
  EXPECT_EQ(js[3].verdict, ClaimVerdict::kContradicted) << js[3].why;
  EXPECT_EQ(js[4].verdict, ClaimVerdict::kUnverifiable) << js[4].why;  // batch differs
}

// FP64 has two datasheet figures too: the tensor cores' and the CUDA cores'. A claim
// quoting the other one holds as that one, and says so.
TEST(ClaimsJudge, Fp64TensorAndNonTensor) {
  const std::vector<Claim> claims = {
      {"H200", "fp64", 67, "TFLOPS", "", "", "", 1},
      {"H200", "fp64", 34, "TFLOPS", "", "", "", 2},
      {"H200", "fp64 tensor", 34, "TFLOPS", "", "", "", 3},
      {"H200", "fp64", 50, "TFLOPS", "", "", "", 4},
  };
  const auto js = judge_claims(claims, {}, Catalogue::builtin(), Published::builtin());
  EXPECT_EQ(js[0].verdict, ClaimVerdict::kHoldsTensor) << js[0].why;
  EXPECT_NE(js[0].why.find("holds as the tensor figure (datasheet 67); non-tensor is 34"),
            std::string::npos)
      << js[0].why;
  EXPECT_EQ(js[1].verdict, ClaimVerdict::kHolds) << js[1].why;
  EXPECT_EQ(js[2].verdict, ClaimVerdict::kHoldsNonTensor) << js[2].why;
  EXPECT_EQ(js[3].verdict, ClaimVerdict::kContradicted) << js[3].why;
  EXPECT_NE(js[3].why.find("neither the non-tensor (34) nor the tensor (67) figure"),
            std::string::npos)
      << js[3].why;
}

TEST(ClaimsJudge, VerdictNames) {
  EXPECT_STREQ(to_string(ClaimVerdict::kHoldsSparse), "holds (sparse)");
  EXPECT_STREQ(to_string(ClaimVerdict::kHoldsTensor), "holds (tensor)");
  EXPECT_STREQ(to_string(ClaimVerdict::kHoldsNonTensor), "holds (non-tensor)");
  EXPECT_FALSE(holds(ClaimVerdict::kOff));
  EXPECT_STREQ(to_string(ClaimVerdict::kHolds), "holds");
  EXPECT_STREQ(to_string(ClaimVerdict::kOff), "off");
  EXPECT_STREQ(to_string(ClaimVerdict::kContradicted), "contradicted");
  EXPECT_STREQ(to_string(ClaimVerdict::kUnverifiable), "unverifiable");
}

}  // namespace
}  // namespace gpuvs
