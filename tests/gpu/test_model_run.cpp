// Models end to end on a GPU (the trainer, docs/models.md): the batch search
// finds a fit and survives out-of-memory, a batch far too large is a clear error
// (exit 1, run file kept), CUDA graph on and off give the same loss, accumulation
// sums the micro-steps' gradients, and `gpuvs model` writes its results.
// Skipped without a GPU. Uses ResNet-50 through make_model; the batch search and the
// out-of-memory paths also run on BERT-large (they share the runner).
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <random>
#include <string>

#include "../cpu/cli_runner.h"
#include "core/error.h"
#include "core/run_file.h"
#include "gpu/check.h"
#include "gpu_test_util.h"
#include "models/trainer.h"
#include "suite/registry.h"

namespace gpuvs::models {
namespace {

namespace fs = std::filesystem;

// 8192 images of ResNet-50 training need ~0.6 TB, 8192 sequences of BERT-large at
// 128 tokens ~1.2 TB: more than any GPU has.
constexpr int kFarTooLarge = 8192;

ModelConfig resnet(Mode mode, Precision precision, int batch) {
  ModelConfig c;
  c.model = "resnet50";
  c.mode = mode;
  c.precision = precision;
  c.batch = batch;
  c.seed = 7;
  return c;
}

ModelConfig bert(Mode mode, Precision precision, int batch) {
  ModelConfig c = resnet(mode, precision, batch);
  c.model = "bert-large";
  c.seq = 128;
  return c;
}

double l2(const std::vector<float>& v) {
  double s = 0;
  for (float x : v)
    s += double(x) * x;
  return std::sqrt(s);
}

fs::path temp_dir(const std::string& name) {
  const fs::path dir =
      fs::temp_directory_path() / ("gpuvs_model_run_" + std::to_string(::getpid()) + "_" + name);
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

RunFile only_run_file(const fs::path& dir) {
  std::vector<fs::path> files;
  for (const auto& e : fs::directory_iterator(dir))
    if (e.path().extension() == ".json") files.push_back(e.path());
  if (files.size() != 1) throw Error("expected one run file in " + dir.string());
  RunFile run = load_run_file(files[0]);
  expect_ids_in_table(run.results);
  return run;
}

const Result* find_result(const RunFile& run, const std::string& id) {
  for (const Result& r : run.results)
    if (r.id == id) return &r;
  return nullptr;
}

TEST(ModelRun, BenchLeavesModelsOutUnlessNamed) {
  // No GPU needed: the table only. Every benchmark of the table has its entry point.
  EXPECT_EQ(benchmarks().size(), benchmark_defs().size());
  for (const BenchmarkInfo* b : select_benchmarks({}))
    EXPECT_NE(b->group, "model") << b->name;
  const std::vector<std::string> named = {"model"};
  const auto models = select_benchmarks(named);
  ASSERT_EQ(models.size(), 1u);
  EXPECT_EQ(models[0]->name, "model.end_to_end");
  const auto suite = run_suite();
  EXPECT_TRUE(std::find(suite.begin(), suite.end(), models[0]) != suite.end())
      << "gpuvs run's quick pass includes the models";
}

TEST(ModelRun, OutOfMemoryIsCaughtAndTheGpuRecovers) {
  GPUVS_REQUIRE_GPU();
  for (const auto make : {resnet, bert}) {
    const ModelConfig huge_config = make(Mode::kTrain, Precision::kBf16, kFarTooLarge);
    const FitProbe huge = try_fit(huge_config, 0);
    EXPECT_FALSE(huge.fits) << huge_config.model;
    EXPECT_FALSE(huge.detail.empty()) << huge_config.model;
    EXPECT_THROW(build_model(huge_config, 0), OutOfMemoryError) << huge_config.model;
    // Everything the failed candidates took is back: a small model builds and steps.
    const FitProbe small = try_fit(make(Mode::kTrain, Precision::kBf16, 32), 0);
    EXPECT_TRUE(small.fits) << huge_config.model << ": " << small.detail;
    ASSERT_TRUE(small.used_bytes.has_value());
    EXPECT_GT(*small.used_bytes, 1e8);  // weights, gradients, momentum, activations
  }
}

// The search on one configuration: it went past the memory, found the largest fit
// within 8 or 2 % of the first failure, and its recommended batch fits with
// autotuning.
// Returns the largest fit.
int check_batch_search(const ModelConfig& config) {
  const double t0 = steady_wall_clock().now_s();
  std::vector<std::string> seen;
  const BatchSearchResult r =
      find_max_batch(config, 0, 0.10, [&](const std::string& line) { seen.push_back(line); });
  const double seconds = steady_wall_clock().now_s() - t0;
  std::string tried;
  for (const BatchProbe& p : r.probes)
    tried += std::to_string(p.batch) + (p.probe.fits ? " fits, " : " out of memory, ");
  ::testing::Test::RecordProperty(config.model + "_search_seconds", std::to_string(seconds));
  std::printf("batch search %s: %s max %d, recommended %d, %.1f s\n", config.model.c_str(),
              tried.c_str(), r.max_batch, r.recommended_batch, seconds);
  EXPECT_TRUE(std::any_of(r.probes.begin(), r.probes.end(),
                          [](const BatchProbe& p) { return !p.probe.fits; }))
      << "the search went past the memory: " << tried;
  EXPECT_GT(r.first_failure, r.max_batch);
  EXPECT_LE(r.first_failure - r.max_batch,
            std::max(8, static_cast<int>(BatchSearchOptions{}.relative_width * r.max_batch)))
      << tried;
  EXPECT_GT(r.recommended_batch, 0);
  EXPECT_LE(r.recommended_batch, r.max_batch);
  // One line per candidate, then the answer.
  EXPECT_EQ(seen.size(), r.probes.size() + 1);
  if (!seen.empty()) {
    EXPECT_NE(seen.back().find("recommended " + std::to_string(r.recommended_batch)),
              std::string::npos)
        << seen.back();
  }
  ModelConfig rec_config = config;
  rec_config.batch = r.recommended_batch;
  const FitProbe rec = try_fit(rec_config, 0);
  EXPECT_TRUE(rec.fits) << rec.detail;
  return r.max_batch;
}

TEST(ModelRun, BatchMaxFindsAFitAndRecoversFromOutOfMemory) {
  GPUVS_REQUIRE_GPU();
  EXPECT_GE(check_batch_search(resnet(Mode::kTrain, Precision::kBf16, 256)), 256)
      << "an 80 GB+ GPU fits ResNet-50 bf16 training at 256";
}

TEST(ModelRun, BertBatchMaxFindsAFitAndRecoversFromOutOfMemory) {
  GPUVS_REQUIRE_GPU();
  EXPECT_GE(check_batch_search(bert(Mode::kTrain, Precision::kBf16, 64)), 64)
      << "an 80 GB+ GPU fits BERT-large bf16 training at 64 sequences of 128";
}

// Runs `steps` steps and returns the loss after each.
std::vector<double> losses(const ModelConfig& config, bool graph, int steps) {
  const auto model = build_model(config, 0);
  model->generate_input(config.seed);
  const StepRunner runner(*model, graph);
  EXPECT_EQ(runner.graphed(), graph);
  std::vector<double> out;
  for (int i = 0; i < steps; ++i) {
    runner.launch();
    out.push_back(model->loss());  // synchronises
  }
  return out;
}

TEST(ModelRun, GraphOnAndOffGiveTheSameLoss) {
  GPUVS_REQUIRE_GPU();
  for (Precision p : {Precision::kFp32, Precision::kBf16}) {
    ModelConfig c = resnet(Mode::kTrain, p, 32);
    c.accumulate = 2;  // the graph holds both micro-steps and the update
    // Deterministic: both models take the same algorithms (timed choices may differ,
    // and in bf16 another algorithm moves the loss by ~0.3 % after one update), so
    // graph and eager run the same kernels on the same data.
    c.deterministic = true;
    const auto eager = losses(c, false, 3);
    const auto graphed = losses(c, true, 3);
    for (size_t i = 0; i < eager.size(); ++i) {
      EXPECT_TRUE(std::isfinite(eager[i]));
      EXPECT_NEAR(graphed[i], eager[i], 1e-6 * std::fabs(eager[i]))
          << to_string(p) << " step " << i;
    }
  }
}

// `n` synthetic images (N, 3, 224, 224) and labels, from a fixed seed.
std::pair<HostTensor, HostTensor> images(int n, int offset, const HostTensor& all_in,
                                         const HostTensor& all_labels) {
  const int64_t per = 3 * 224 * 224;
  HostTensor in{{n, 3, 224, 224}, {}};
  in.data.assign(all_in.data.begin() + offset * per, all_in.data.begin() + (offset + n) * per);
  HostTensor labels{{n}, {}};
  labels.data.assign(all_labels.data.begin() + offset, all_labels.data.begin() + offset + n);
  return {in, labels};
}

// Accumulation sums the micro-steps' gradients: after micro-steps on batches P and Q
// the gradients are exactly those of P plus those of Q, each taken alone (batch norm
// normalises each micro-batch with its own statistics, so P + Q is not one batch of
// 2N; the sum of the two gradients is what accumulation promises). Deterministic fp32:
// both models pick the same algorithms, so the only difference is where the sum is
// formed (in cuDNN's / cuBLASLt's beta = 1, or on the host).
TEST(ModelRun, AccumulatedGradientsAreTheSumOfTheMicroSteps) {
  GPUVS_REQUIRE_GPU();
  constexpr int kN = 16;
  std::mt19937 rng(11);
  std::normal_distribution<float> normal(0.f, 1.f);
  HostTensor all_in{{2 * kN, 3, 224, 224}, std::vector<float>(size_t{2 * kN} * 3 * 224 * 224)};
  for (float& v : all_in.data)
    v = normal(rng);
  HostTensor all_labels{{2 * kN}, std::vector<float>(2 * kN)};
  for (int i = 0; i < 2 * kN; ++i)
    all_labels.data[i] = static_cast<float>((i * 37) % 1000);

  ModelConfig c = resnet(Mode::kTrain, Precision::kFp32, kN);
  c.accumulate = 2;
  c.deterministic = true;
  const auto acc = build_model(c, 0);
  const auto alone = build_model(c, 0);
  const char* const names[] = {
      "grad/conv1.weight",      "grad/bn1.weight", "grad/layer2.0.conv2.weight",
      "grad/layer4.2.bn3.bias", "grad/fc.weight",  "grad/fc.bias"};
  const auto feed = [&](Model& m, int half) {
    const auto [in, labels] = images(kN, half * kN, all_in, all_labels);
    m.set_tensor("input", in);
    m.set_tensor("labels", labels);
  };
  feed(*acc, 0);
  acc->forward_backward(/*accumulate=*/false);
  std::vector<HostTensor> g_p;
  for (const char* n : names)
    g_p.push_back(acc->get_tensor(n));
  feed(*acc, 1);
  acc->forward_backward(/*accumulate=*/true);
  feed(*alone, 1);
  alone->forward_backward(/*accumulate=*/false);
  for (size_t i = 0; i < std::size(names); ++i) {
    const HostTensor sum = acc->get_tensor(names[i]);
    const HostTensor g_q = alone->get_tensor(names[i]);
    ASSERT_EQ(sum.data.size(), g_q.data.size()) << names[i];
    std::vector<float> want(sum.data.size()), diff(sum.data.size());
    for (size_t j = 0; j < want.size(); ++j) {
      want[j] = g_p[i].data[j] + g_q.data[j];
      diff[j] = sum.data[j] - want[j];
    }
    const double rel = l2(diff) / l2(want);
    std::printf("accumulate %s: |sum - (P + Q)| / |P + Q| = %.3e\n", names[i], rel);
    ASSERT_GT(l2(g_q.data), 0) << names[i];
    EXPECT_LE(rel, 1e-6) << names[i];
  }
}

// `gpuvs model MODEL_ARGS --batch kFarTooLarge` exits 1, says the batch does not fit
// and names the memory, and keeps the run file with the error in it.
void check_far_too_large(const std::string& model_args, const std::string& name) {
  const fs::path dir = temp_dir("oom_" + name);
  const auto o =
      gpuvs_test::run_gpuvs("--out " + dir.string() + " model " + model_args + " --batch " +
                            std::to_string(kFarTooLarge) + " --steps 3 --gpu 0");
  EXPECT_EQ(o.code, 1) << o.out << o.err;
  const std::string says = "batch " + std::to_string(kFarTooLarge) + " does not fit on GPU 0";
  EXPECT_NE(o.out.find(says), std::string::npos) << o.out;
  EXPECT_NE(o.out.find("total"), std::string::npos) << o.out;  // names the memory
  const RunFile run = only_run_file(dir);
  ASSERT_EQ(run.errors.size(), 1u);
  EXPECT_NE(run.errors[0].message.find(says), std::string::npos);
  fs::remove_all(dir);
}

TEST(ModelRun, FarTooLargeBatchIsAClearErrorExit1) {
  GPUVS_REQUIRE_GPU();
  check_far_too_large("resnet50", "resnet50");
  check_far_too_large("bert-large --seq 128", "bert");
}

TEST(ModelRun, Fp8OnResNetIsAUsageError) {
  GPUVS_REQUIRE_GPU();
  const fs::path dir = temp_dir("fp8");
  const auto o =
      gpuvs_test::run_gpuvs("--out " + dir.string() + " model resnet50 --precision fp8 --gpu 0");
  EXPECT_EQ(o.code, 2) << o.out << o.err;
  EXPECT_NE(o.err.find("fp8"), std::string::npos) << o.err;
  fs::remove_all(dir);
}

TEST(ModelRun, ModelCommandWritesEveryFigure) {
  GPUVS_REQUIRE_GPU();
  const fs::path dir = temp_dir("cmd");
  const auto o = gpuvs_test::run_gpuvs("--out " + dir.string() +
                                       " model resnet50 --batch 32 --accumulate 2 --steps 20 "
                                       "--profile --gpu 0");
  EXPECT_TRUE(o.code == 0 || o.code == 4) << o.code << o.out << o.err;  // 4: throttled
  const RunFile run = only_run_file(dir);
  EXPECT_TRUE(run.errors.empty());
  const std::string base = "model.resnet50.train.bf16";
  const Result* head = find_result(run, base);
  ASSERT_NE(head, nullptr);
  EXPECT_EQ(head->status, Status::kOk) << head->status_reason;
  EXPECT_EQ(head->unit, "img/s");
  EXPECT_GT(head->value, 0);
  EXPECT_EQ(int_parameter(*head, "global_batch"), 64);
  EXPECT_EQ(head->stats.samples, 20);
  const Result* step = find_result(run, base + ".step_time");
  ASSERT_NE(step, nullptr);
  EXPECT_EQ(step->samples.size(), 20u);
  ASSERT_TRUE(step->stats.p99.has_value());
  EXPECT_GE(*step->stats.p99, step->value);
  // Throughput and step time describe the same steps: within 20 %.
  EXPECT_NEAR(64 / step->value, head->value, 0.2 * head->value);
  const Result* mem = find_result(run, base + ".peak_memory");
  ASSERT_NE(mem, nullptr);
  EXPECT_GT(mem->value, 1e8);
  EXPECT_NE(find_result(run, base + ".energy_per_item"), nullptr);
  EXPECT_NE(find_result(run, base + ".flops"), nullptr);
  EXPECT_EQ(find_result(run, base + ".tokens"), nullptr) << "images are not tokens";
  const bool layers = std::any_of(run.results.begin(), run.results.end(), [&](const Result& r) {
    return r.id.rfind(base + ".layer", 0) == 0;
  });
  EXPECT_TRUE(layers) << "--profile adds per-layer results (or says why not)";
  fs::remove_all(dir);
}

// A sequence model also reports tokens/s: the same samples as seq/s times the
// sequence length.
TEST(ModelRun, BertReportsTokensPerSecond) {
  GPUVS_REQUIRE_GPU();
  const fs::path dir = temp_dir("bert");
  const auto o = gpuvs_test::run_gpuvs("--out " + dir.string() +
                                       " model bert-large --batch 8 --seq 128 --steps 5 --gpu 0");
  EXPECT_TRUE(o.code == 0 || o.code == 4) << o.code << o.out << o.err;  // 4: throttled
  const RunFile run = only_run_file(dir);
  const std::string base = "model.bert-large.train.bf16";
  const Result* head = find_result(run, base);
  const Result* tokens = find_result(run, base + ".tokens");
  ASSERT_NE(head, nullptr);
  ASSERT_NE(tokens, nullptr);
  EXPECT_EQ(head->unit, "seq/s");
  EXPECT_EQ(tokens->unit, "tokens/s");
  ASSERT_EQ(tokens->samples.size(), head->samples.size());
  for (size_t i = 0; i < head->samples.size(); ++i)
    EXPECT_DOUBLE_EQ(tokens->samples[i], 128 * head->samples[i]);
  EXPECT_DOUBLE_EQ(tokens->value, 128 * head->value);
  fs::remove_all(dir);
}

// The Llama decoder's training through `gpuvs model`: tokens/s as the headline (its
// item is the token), MFU as a fraction of the datasheet's dense bf16 peak, the
// sequence length recorded, the per-region profile.
TEST(ModelRun, LlamaTrainingReportsTokensAndMfu) {
  GPUVS_REQUIRE_GPU();
  const fs::path dir = temp_dir("llama");
  const auto o = gpuvs_test::run_gpuvs("--out " + dir.string() +
                                       " model llama --size 1b --seq 256 --batch 2 --steps 5 "
                                       "--profile --gpu 0");
  EXPECT_TRUE(o.code == 0 || o.code == 4) << o.code << o.out << o.err;  // 4: throttled
  const RunFile run = only_run_file(dir);
  const std::string base = "model.llama-1b.train.bf16";
  const Result* head = find_result(run, base);
  const Result* tokens = find_result(run, base + ".tokens");
  const Result* mfu = find_result(run, base + ".mfu");
  const Result* flops = find_result(run, base + ".flops");
  ASSERT_NE(head, nullptr);
  ASSERT_NE(tokens, nullptr);
  ASSERT_NE(mfu, nullptr);
  ASSERT_NE(flops, nullptr);
  EXPECT_EQ(head->status, Status::kOk) << head->status_reason;
  EXPECT_EQ(head->unit, "tokens/s");
  EXPECT_EQ(int_parameter(*head, "seq"), 256);
  EXPECT_EQ(int_parameter(*head, "batch"), 2);
  EXPECT_DOUBLE_EQ(tokens->value, head->value);
  if (mfu->status == Status::kOk) {
    ASSERT_TRUE(mfu->peak.has_value());
    EXPECT_EQ(mfu->peak->kind, "datasheet");
    EXPECT_NEAR(mfu->value, flops->value / mfu->peak->value, 1e-9);
    EXPECT_GT(mfu->value, 0);
    EXPECT_LT(mfu->value, 1);
  } else {
    EXPECT_EQ(mfu->status, Status::kUnsupported);
    EXPECT_FALSE(mfu->status_reason.empty());
  }
  // Against the GEMM measured in the same run: measured, below 1 (the model's GEMMs
  // are this one's shape at best and attention and the rest run beside them) and
  // above the datasheet MFU (no GEMM reaches the datasheet peak).
  const Result* mfu_gemm = find_result(run, base + ".mfu.gemm");
  ASSERT_NE(mfu_gemm, nullptr);
  EXPECT_EQ(mfu_gemm->status, Status::kOk) << mfu_gemm->status_reason;
  ASSERT_TRUE(mfu_gemm->peak.has_value());
  EXPECT_EQ(mfu_gemm->peak->kind, "measured");
  EXPECT_NEAR(mfu_gemm->value, flops->value / mfu_gemm->peak->value, 1e-9);
  EXPECT_GT(mfu_gemm->value, 0);
  EXPECT_LT(mfu_gemm->value, 1);
  if (mfu->status == Status::kOk) {
    EXPECT_GT(mfu_gemm->value, mfu->value);
  }
  EXPECT_GT(mfu_gemm->parameters.count("gemm_sustained_flops"), 0u);
  std::printf("llama-train mfu %.3f (datasheet), %.3f (GEMM %.0f TFLOP/s measured)\n", mfu->value,
              mfu_gemm->value, mfu_gemm->peak->value / 1e12);
  const bool layers = std::any_of(run.results.begin(), run.results.end(), [&](const Result& r) {
    return r.id.rfind(base + ".layer.fwd.attention", 0) == 0;
  });
  EXPECT_TRUE(layers) << "--profile times the attention among the regions";
  fs::remove_all(dir);
}

}  // namespace
}  // namespace gpuvs::models
