// The GEMM, NCCL and host rules of `gpuvs tune` (tune/recommend.h) on synthetic run
// files (tune_rules_test_util.h), and all rules on the committed reference runs.
#include <gtest/gtest.h>

#include <string>
#include <tuple>
#include <vector>

#include "tune_rules_test_util.h"

namespace gpuvs::tune {
namespace {

// ---- 5. GEMM -----------------------------------------------------------------------

TEST(TuneRules, GemmAlgorithmAndWhetherTf32Pays) {
  RunFile run = run_with_gpus(1);
  run.results.push_back(gemm("fp32", 4096, 4096, 4096, 51.1));
  run.results.push_back(gemm("tf32", 4096, 4096, 4096, 414));
  run.results.push_back(gemm("tf32", 8192, 8192, 8192, 999));  // another shape
  Recommendations rec = recommend_gemm(run, 0, "4096x4096x4096:fp32");
  const Setting* a = find(rec, "algorithm");
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(a->value,
            ParamValue(std::string("heuristic #1: algo 66, tile 18, stages 20, split-k 1")));
  EXPECT_TRUE(contains(a->why, "51.1 TFLOP/s")) << a->why;
  const Setting* t = find(rec, "tf32");
  ASSERT_NE(t, nullptr);
  EXPECT_EQ(t->value, ParamValue(true));
  EXPECT_TRUE(contains(t->why, "pays: tf32 414 TFLOP/s is 8.10x fp32's 51.1 TFLOP/s")) << t->why;
  EXPECT_FALSE(t->caveat.empty());
  expect_rests_on_run(run, rec);

  run.results[1] = gemm("tf32", 4096, 4096, 4096, 51.1 * 1.04);
  rec = recommend_gemm(run, 0, "4096x4096x4096:tf32");
  EXPECT_EQ(find(rec, "tf32")->value, ParamValue(false));
  EXPECT_TRUE(find(rec, "tf32")->why.starts_with("does not pay"));
  expect_rests_on_run(run, rec);
}

TEST(TuneRules, GemmWhetherFp8Pays) {
  RunFile run = run_with_gpus(1);
  run.results.push_back(gemm("bf16", 8192, 8192, 8192, 827));
  run.results.push_back(gemm("fp8_e4m3", 8192, 8192, 8192, 1479));
  Recommendations rec = recommend_gemm(run, 0, "8192x8192x8192:bf16");
  EXPECT_EQ(find(rec, "fp8")->value, ParamValue(true));
  EXPECT_TRUE(contains(find(rec, "fp8")->why, "1.79x bf16's 827 TFLOP/s"));
  expect_rests_on_run(run, rec);

  // fp8 at 1.04x does not pay; an fp8 shape takes the fp8_e4m3 results.
  run.results[1] = gemm("fp8_e4m3", 8192, 8192, 8192, 827 * 1.04);
  rec = recommend_gemm(run, 0, "8192x8192x8192:fp8");
  EXPECT_EQ(find(rec, "fp8")->value, ParamValue(false));
  EXPECT_NE(find(rec, "algorithm"), nullptr);
  expect_rests_on_run(run, rec);

  // An invalid comparison result leaves the question absent, with its reason.
  run.results[0].status = Status::kInvalid;
  run.results[0].status_reason = "checksum mismatch";
  rec = recommend_gemm(run, 0, "8192x8192x8192:bf16");
  EXPECT_EQ(find(rec, "fp8"), nullptr);
  EXPECT_EQ(find(rec, "algorithm"), nullptr);
  ASSERT_EQ(rec.absent.size(), 2u);
  EXPECT_TRUE(contains(rec.absent[1].why, "checksum mismatch")) << rec.absent[1].why;
  EXPECT_TRUE(contains(rec.absent[1].why, "compute.gemm.bf16"));
}

TEST(TuneRules, GemmShapesAreRead) {
  const auto s = parse_gemm_shape("8192x4096x1024:fp16");
  ASSERT_TRUE(s);
  EXPECT_EQ(s->m, 8192);
  EXPECT_EQ(s->n, 4096);
  EXPECT_EQ(s->k, 1024);
  EXPECT_EQ(s->precision, "fp16");
  for (const char* bad : {"8192x8192", "0x1x1:bf16", "axbxc:bf16", "1x1x1x1:bf16", "1x1x1:"})
    EXPECT_FALSE(parse_gemm_shape(bad)) << bad;
}

// ---- 6. NCCL -----------------------------------------------------------------------

TEST(TuneRules, NcclWithOneGpuIsAbsent) {
  RunFile run = run_with_gpus(1);
  const Recommendations rec = recommend_nccl(run, 0);
  EXPECT_TRUE(rec.settings.empty());
  ASSERT_EQ(rec.absent.size(), 1u);
  EXPECT_EQ(rec.absent[0].section, "nccl");
  EXPECT_EQ(rec.absent[0].why, "one GPU: the collectives need two or more; nothing to tune");
}

TEST(TuneRules, NcclWithoutTheStudyIsAbsent) {
  RunFile run = run_with_gpus(2);
  run.results.push_back(busbw("all_reduce", 8 * kMiB, "default", "default", 300));
  const Recommendations rec = recommend_nccl(run, 0);
  EXPECT_TRUE(rec.settings.empty());
  ASSERT_EQ(rec.absent.size(), 1u);
  EXPECT_TRUE(contains(rec.absent[0].why, "collectives.algorithms) was not run"));
}

// all_reduce at 1, 4, 16 and 64 MiB: Tree/LL wins the two small sizes, NCCL's own
// choice ties the best at the two large ones, where Tree/LL loses.
RunFile nccl_study() {
  RunFile run = run_with_gpus(2);
  const std::vector<std::tuple<int64_t, double, double, double>> rows = {
      // bytes, default, Tree/LL, Ring/LL (GB/s)
      {1 * kMiB, 100, 130, 90},
      {4 * kMiB, 150, 190, 140},
      {16 * kMiB, 300, 250, 302},
      {64 * kMiB, 350, 280, 351}};
  for (const auto& [bytes, def, tree, ring] : rows) {
    run.results.push_back(busbw("all_reduce", bytes, "default", "default", def));
    run.results.push_back(busbw("all_reduce", bytes, "Tree", "LL", tree));
    run.results.push_back(busbw("all_reduce", bytes, "Ring", "LL", ring));
  }
  return run;
}

TEST(TuneRules, NcclRangesMergedAndLeftUnsetWithinNoise) {
  const RunFile run = nccl_study();
  const Recommendations rec = recommend_nccl(run, 0);
  const Setting* small = find(rec, "NCCL_ALGO", {"nccl", "all_reduce", "1MiB-4MiB"});
  ASSERT_NE(small, nullptr);
  EXPECT_EQ(small->value, ParamValue(std::string("Tree")));
  EXPECT_EQ(find(rec, "NCCL_PROTO", {"nccl", "all_reduce", "1MiB-4MiB"})->value,
            ParamValue(std::string("LL")));
  EXPECT_TRUE(small->env.empty());  // a range is never an export line
  EXPECT_TRUE(contains(small->why, "1.27x-1.30x NCCL's own choice's busbw")) << small->why;
  const Setting* large = find(rec, "NCCL_ALGO", {"nccl", "all_reduce", "16MiB-64MiB"});
  ASSERT_NE(large, nullptr);
  EXPECT_EQ(large->value, ParamValue(std::string("unset")));
  EXPECT_TRUE(large->env.empty());
  EXPECT_TRUE(large->why.starts_with("leave unset")) << large->why;
  // Tree/LL loses at 16 MiB and 64 MiB: no overall export.
  const Setting* all = find(rec, "NCCL_ALGO", {"nccl", "all sizes"});
  ASSERT_NE(all, nullptr);
  EXPECT_EQ(all->value, ParamValue(std::string("unset")));
  EXPECT_TRUE(all->env.empty());
  EXPECT_TRUE(contains(all->why, "per range only (Tree/LL for all_reduce 1MiB-4MiB)")) << all->why;
  for (const Setting& s : rec.settings)
    EXPECT_TRUE(s.env.empty()) << s.key;
  expect_rests_on_run(run, rec);
}

TEST(TuneRules, NcclOverallEnvOnlyWhenTheVariantNeverLoses) {
  RunFile run = nccl_study();
  // Tree/LL now ties the best at the large sizes (within 1 %): it never loses.
  for (Result& r : run.results)
    if (std::get<std::string>(r.parameters.at("algo")) == "Tree" &&
        std::get<int64_t>(r.parameters.at("bytes")) >= 16 * kMiB)
      r.value = std::get<int64_t>(r.parameters.at("bytes")) == 16 * kMiB ? 300e9 : 349e9;
  const Recommendations rec = recommend_nccl(run, 0);
  const Setting* algo = find(rec, "NCCL_ALGO", {"nccl", "all sizes"});
  const Setting* proto = find(rec, "NCCL_PROTO", {"nccl", "all sizes"});
  ASSERT_NE(algo, nullptr);
  ASSERT_NE(proto, nullptr);
  EXPECT_EQ(algo->value, ParamValue(std::string("Tree")));
  EXPECT_EQ(algo->env, "NCCL_ALGO");
  EXPECT_EQ(proto->value, ParamValue(std::string("LL")));
  EXPECT_EQ(proto->env, "NCCL_PROTO");
  EXPECT_TRUE(contains(algo->why, "beats NCCL's own choice by up to 1.30x")) << algo->why;
  expect_rests_on_run(run, rec);
}

TEST(TuneRules, NcclNoisyGainIsLeftUnset) {
  RunFile run = run_with_gpus(2);
  run.results.push_back(busbw("all_gather", 64 * kMiB, "default", "default", 300, 0.05));
  run.results.push_back(busbw("all_gather", 64 * kMiB, "Ring", "Simple", 312, 0.05));  // 1.04x
  const Recommendations rec = recommend_nccl(run, 0);
  const Setting* s = find(rec, "NCCL_ALGO", {"nccl", "all_gather", "64MiB"});
  ASSERT_NE(s, nullptr);
  EXPECT_EQ(s->value, ParamValue(std::string("unset")));
  EXPECT_TRUE(contains(find(rec, "NCCL_ALGO", {"nccl", "all sizes"})->why,
                       "within noise of the best variant at every measured size"));
  expect_rests_on_run(run, rec);
}

// ---- 7. host -----------------------------------------------------------------------

TEST(TuneRules, HostTransfersQuoteTheVerdict) {
  RunFile run = run_with_gpus(1);
  run.results.push_back(host_copy("h2d", "pinned", 64 * kMiB, 50));
  run.results.push_back(host_copy("h2d", "pageable", 64 * kMiB, 20));
  run.results.push_back(host_copy("h2d", "pinned", 1024 * kMiB, 54.3));
  run.results.push_back(host_copy("h2d", "pageable", 1024 * kMiB, 25.1));
  run.results.push_back(sparse(kVerdict));
  const Recommendations rec = recommend_host(run, 0);
  const Setting* h = find(rec, "host_memory", {"host", "h2d"});
  ASSERT_NE(h, nullptr);
  EXPECT_EQ(h->value, ParamValue(std::string("pinned")));
  EXPECT_TRUE(contains(h->why, "2.16x pageable")) << h->why;
  EXPECT_TRUE(contains(h->why, "at 1GiB")) << h->why;
  const Setting* z = find(rec, "zero_copy", {"host"});
  ASSERT_NE(z, nullptr);
  EXPECT_EQ(z->value, ParamValue(std::string("sparse access only")));
  EXPECT_TRUE(contains(z->why, kVerdict));
  // d2h and both ways were not measured: absent, each with its direction.
  EXPECT_EQ(rec.absent.size(), 2u);
  expect_rests_on_run(run, rec);
}

TEST(TuneRules, HostWithoutResultsIsAbsent) {
  RunFile run = run_with_gpus(1);
  Recommendations rec = recommend_host(run, 0);
  EXPECT_TRUE(rec.settings.empty());
  ASSERT_EQ(rec.absent.size(), 1u);
  EXPECT_TRUE(contains(rec.absent[0].why, "host.link did not run"));

  run.results.push_back(sparse("no verdict: a figure it needs is missing"));
  run.results.back().status = Status::kInvalid;
  rec = recommend_host(run, 0);
  EXPECT_TRUE(rec.settings.empty());
  ASSERT_EQ(rec.absent.size(), 1u);
  EXPECT_TRUE(contains(rec.absent[0].why, "invalid")) << rec.absent[0].why;
}

// ---- the committed reference runs ------------------------------------------------

RunFile reference(const std::string& name) {
  return load_run_file(std::string(GPUVS_SOURCE_DIR) + "/data/reference/" + name);
}

// The 2 x H200 study: variants win some ranges and lose others, so no variable is
// exported; every range and the overall answer rest on the study's own results.
TEST(TuneRules, ReferenceStudyExportsNothingThatLosesSomewhere) {
  const RunFile run = reference("h200x2-collectives-study.json");
  const Recommendations rec = recommend_nccl(run, 0);
  ASSERT_GT(rec.settings.size(), 4u);
  for (const Setting& s : rec.settings)
    EXPECT_TRUE(s.env.empty()) << param_text(s.value) << ": " << s.why;
  const Setting* all = find(rec, "NCCL_ALGO", {"nccl", "all sizes"});
  ASSERT_NE(all, nullptr);
  EXPECT_EQ(all->value, ParamValue(std::string("unset")));
  EXPECT_TRUE(all->why.starts_with("per range only")) << all->why;
  expect_rests_on_run(run, rec);
}

// The bundled H200 run: FP8 and TF32 GEMMs pay at 8192^3, pinned memory beats pageable,
// and the zero-copy verdict is quoted.
TEST(TuneRules, ReferenceRunGemmAndHost) {
  const RunFile run = reference("h200-sxm-run.json");
  TuneRequest request;
  request.models = {"bert-large", "resnet50"};
  request.gemm_shapes = {"8192x8192x8192:bf16", "8192x8192x8192:fp32"};
  const DeviceTune t = recommend(run, 0, request);
  expect_rests_on_run(run, t.settings);
  const auto value = [&](const std::string& key, const std::vector<std::string>& scope) {
    for (const Setting& s : t.settings)
      if (s.key == key && s.scope == scope) return s.value;
    return ParamValue(std::string("missing"));
  };
  EXPECT_EQ(value("fp8", {"gemm", "8192x8192x8192:bf16"}), ParamValue(true));
  EXPECT_EQ(value("tf32", {"gemm", "8192x8192x8192:fp32"}), ParamValue(true));
  EXPECT_EQ(value("host_memory", {"host", "h2d"}), ParamValue(std::string("pinned")));
  EXPECT_EQ(value("zero_copy", {"host"}), ParamValue(std::string("sparse access only")));
  EXPECT_EQ(value("precision", {"bert-large", "train"}), ParamValue(std::string("bf16")));
}

}  // namespace
}  // namespace gpuvs::tune
