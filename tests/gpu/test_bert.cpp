// BERT-large against PyTorch (docs/model-checks.md, BERT section): the reference file
// dumped by scripts/models/dump_bert.py (env GPUVS_BERT_REF) gives transformers'
// BertForPreTraining initial weights, an input batch (with a padded sequence, so the
// attention mask matters) and what PyTorch computed from them in fp32 (TF32 off,
// dropout 0): prediction and NSP logits, the loss (MLM + NSP), every gradient, and a
// few weights after one AdamW step. Each precision must match within the tolerances of
// docs/model-checks.md; every measured error is printed as a line "bert-check
// <precision> <mode> <tensor> rel_l2=... max_err=..." for the record.
// Without the reference: a bf16 model's loss falls on a fixed batch, two fresh models
// give the same losses, a CUDA-graph step gives the eager step's losses, fp8 trains
// (compute capability >= 8.9) or is refused with a UsageError.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "core/error.h"
#include "gpu/device.h"
#include "gpu_test_util.h"
#include "models/bert/bert.h"
#include "models/tensor_compare.h"
#include "models/tensor_file.h"

namespace gpuvs::models {
namespace {

using Errors = gpuvs::models::TensorErrors;  // models/tensor_compare.h

struct Tolerance {
  double logits_rel_l2;
  double logits_max_err;
  double loss_rel;
  double grad_rel_l2;
  double adam_rel_l2;  // < 0: measured and printed only
};

// docs/model-checks.md says why each is what it is.
Tolerance tolerance(Precision p) {
  switch (p) {
    case Precision::kFp32:
      return {1e-4, 1e-4, 1e-5, 1e-3, 2e-2};
    case Precision::kTf32:
      return {1e-2, 2e-2, 1e-3, 5e-2, 2e-1};
    case Precision::kFp16:
      return {1e-2, 2e-2, 1e-3, 5e-2, -1};
    case Precision::kBf16:
      return {5e-2, 1e-1, 5e-3, 1.5e-1, -1};
    case Precision::kFp8:
      return {2e-1, 5e-1, 3e-2, 5e-1, -1};
  }
  return {0, 0, 0, 0, 0};
}

// Gradients compared one by one: the tied word embeddings (decoder and lookup), the
// other tables, the first and last layers' pieces, the heads. key.bias is left out:
// softmax is invariant to it, its gradient is zero up to rounding.
const char* const kGradients[] = {
    "bert.embeddings.word_embeddings.weight",
    "bert.embeddings.position_embeddings.weight",
    "bert.embeddings.token_type_embeddings.weight",
    "bert.embeddings.LayerNorm.weight",
    "bert.encoder.layer.0.attention.self.query.weight",
    "bert.encoder.layer.0.attention.self.value.bias",
    "bert.encoder.layer.0.attention.output.LayerNorm.weight",
    "bert.encoder.layer.11.attention.output.dense.weight",
    "bert.encoder.layer.23.intermediate.dense.weight",
    "bert.encoder.layer.23.output.dense.bias",
    "bert.encoder.layer.23.output.LayerNorm.bias",
    "bert.pooler.dense.weight",
    "cls.predictions.bias",
    "cls.predictions.transform.dense.weight",
    "cls.predictions.transform.LayerNorm.weight",
    "cls.seq_relationship.weight",
    "cls.seq_relationship.bias",
};

// As ADAM_CHECKED in scripts/models/dump_bert.py.
const char* const kAdamChecked[] = {
    "bert.embeddings.word_embeddings.weight",
    "bert.encoder.layer.0.attention.self.query.weight",
    "bert.encoder.layer.23.output.LayerNorm.weight",
    "cls.predictions.bias",
    "cls.seq_relationship.weight",
};

const char* const kInputs[] = {"input_ids", "token_type_ids", "attention_mask", "labels",
                               "next_sentence_label"};

const TensorFile* reference(std::string* why) {
  static std::string error;
  static const std::unique_ptr<TensorFile> file = [] {
    const char* path = std::getenv("GPUVS_BERT_REF");
    if (path == nullptr || *path == '\0') {
      error =
          "GPUVS_BERT_REF is not set (dump one with scripts/models/dump_bert.py on a machine "
          "with PyTorch and transformers)";
      return std::unique_ptr<TensorFile>();
    }
    if (!std::filesystem::exists(path)) {
      error = std::string("GPUVS_BERT_REF=") + path + " does not exist";
      return std::unique_ptr<TensorFile>();
    }
    auto f = std::make_unique<TensorFile>(load_tensor_file(path));
    const auto model = f->metadata.find("model");
    if (model == f->metadata.end() || model->second != "bert-large")
      throw Error(std::string(path) + ": not a bert-large reference");
    return f;
  }();
  *why = error;
  return file.get();
}

#define GPUVS_REQUIRE_REFERENCE(ref)        \
  GPUVS_REQUIRE_GPU();                      \
  std::string why_;                         \
  const TensorFile* ref = reference(&why_); \
  if (ref == nullptr) GTEST_SKIP() << why_;

// Compute capability of GPU 0 as 10 * major + minor.
int compute_capability() {
  int major = 0, minor = 0;
  cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, 0);
  cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, 0);
  return 10 * major + minor;
}

#define GPUVS_REQUIRE_PRECISION(p)                                          \
  if ((p) == Precision::kFp8 && compute_capability() < 89)                  \
    GTEST_SKIP() << "fp8 needs compute capability 8.9 or newer (this GPU: " \
                 << compute_capability() / 10 << "." << compute_capability() % 10 << ")";

Errors compare(const HostTensor& got, const HostTensor& ref, const std::string& what) {
  const Errors e = gpuvs::models::compare_tensors(got, ref);
  EXPECT_TRUE(e.same_shape) << what;
  EXPECT_EQ(got.data.size(), ref.data.size()) << what;
  return e;
}

HostTensor minus(HostTensor a, const HostTensor& b) {
  return gpuvs::models::tensor_difference(std::move(a), b);
}

void print(Precision p, const char* mode, const std::string& tensor, const Errors& e) {
  std::printf("bert-check %s %s %s rel_l2=%.3e max_err=%.3e\n", std::string(to_string(p)).c_str(),
              mode, tensor.c_str(), e.rel_l2, e.max_err);
}

std::unique_ptr<Model> model_from(const TensorFile& ref, Precision p, Mode mode) {
  const HostTensor& ids = ref.at("input_ids");
  ModelConfig c;
  c.model = "bert-large";
  c.mode = mode;
  c.precision = p;
  c.batch = static_cast<int>(ids.shape.at(0));
  c.seq = static_cast<int>(ids.shape.at(1));
  c.graph = false;
  auto model = make_bert_large(c, 0);
  dynamic_cast<bert::BertLarge&>(*model).set_dropout(false);  // the reference has none
  for (const std::string& name : model->parameter_names())
    model->set_tensor(name, ref.at(name));
  for (const char* name : kInputs)
    model->set_tensor(name, ref.at(name));
  return model;
}

TEST(BertReference, EveryParameterHasAReferenceTensor) {
  GPUVS_REQUIRE_REFERENCE(ref);
  const auto model = model_from(*ref, Precision::kFp32, Mode::kTrain);
  const std::vector<std::string> names = model->parameter_names();
  EXPECT_EQ(names.size(), 398u) << "BertForPreTraining (large) has 398 distinct parameters";
  int64_t count = 0;
  for (const std::string& n : names) {
    ASSERT_TRUE(ref->contains(n)) << n;
    ASSERT_TRUE(ref->contains("grad/" + n)) << n;
    count += ref->at(n).numel();
  }
  EXPECT_EQ(count, model->parameter_count());
  EXPECT_EQ(count, 336226108) << "BertForPreTraining (BERT-large) parameter count";
  // The tied decoder reads back as the word embeddings.
  const Errors tied = compare(model->get_tensor("cls.predictions.decoder.weight"),
                              ref->at("bert.embeddings.word_embeddings.weight"), "tied");
  EXPECT_EQ(tied.rel_l2, 0.0);
}

class BertVsPyTorch : public testing::TestWithParam<Precision> {};

TEST_P(BertVsPyTorch, TrainStepMatches) {
  GPUVS_REQUIRE_REFERENCE(ref);
  const Precision p = GetParam();
  GPUVS_REQUIRE_PRECISION(p);
  const Tolerance tol = tolerance(p);
  const auto model = model_from(*ref, p, Mode::kTrain);
  model->forward_backward(false);
  const double loss = model->loss();

  for (const char* name : {"prediction_logits", "seq_relationship_logits"}) {
    const Errors e = compare(model->get_tensor(name), ref->at(name), name);
    print(p, "train", name, e);
    EXPECT_LE(e.rel_l2, tol.logits_rel_l2) << name;
    EXPECT_LE(e.max_err, tol.logits_max_err) << name;
  }
  const double ref_loss = ref->at("loss").data.at(0);
  std::printf(
      "bert-check %s train loss gpuvs=%.7f pytorch=%.7f (mlm %.7f / %.7f, nsp %.7f / "
      "%.7f)\n",
      std::string(to_string(p)).c_str(), loss, ref_loss, model->get_tensor("loss/mlm").data.at(0),
      ref->at("loss/mlm").data.at(0), model->get_tensor("loss/nsp").data.at(0),
      ref->at("loss/nsp").data.at(0));
  EXPECT_NEAR(loss, ref_loss, tol.loss_rel * std::fabs(ref_loss));

  for (const char* name : kGradients) {
    const std::string g = std::string("grad/") + name;
    const Errors e = compare(model->get_tensor(g), ref->at(g), g);
    print(p, "train", g, e);
    EXPECT_LE(e.rel_l2, tol.grad_rel_l2) << g;
  }
  // Every gradient measured; the worst printed (not asserted: see the doc).
  std::string worst_name;
  Errors worst;
  for (const std::string& name : model->parameter_names()) {
    if (name.find("attention.self.key.bias") != std::string::npos) continue;
    const std::string g = "grad/" + name;
    const Errors e = compare(model->get_tensor(g), ref->at(g), g);
    if (e.rel_l2 >= worst.rel_l2) {
      worst = e;
      worst_name = g;
    }
  }
  print(p, "train-worst", worst_name, worst);
}

TEST_P(BertVsPyTorch, InferenceMatches) {
  GPUVS_REQUIRE_REFERENCE(ref);
  const Precision p = GetParam();
  GPUVS_REQUIRE_PRECISION(p);
  const Tolerance tol = tolerance(p);
  const auto model = model_from(*ref, p, Mode::kInfer);
  model->forward();
  for (const char* name : {"prediction_logits", "seq_relationship_logits"}) {
    const Errors e = compare(model->get_tensor(name), ref->at(name), name);
    print(p, "infer", name, e);
    EXPECT_LE(e.rel_l2, tol.logits_rel_l2) << name;
    EXPECT_LE(e.max_err, tol.logits_max_err) << name;
  }
  // "logits", every model's main output (what the runner validates), is the MLM logits.
  const HostTensor logits = model->get_tensor("logits");
  EXPECT_EQ(logits.shape, ref->at("prediction_logits").shape);
  EXPECT_TRUE(logits.data == model->get_tensor("prediction_logits").data);
}

// One AdamW step (lr 1e-4, betas 0.9/0.999, eps 1e-6, decay 0.01 except biases and
// LayerNorm) against torch.optim.AdamW: the change of a few weights.
TEST_P(BertVsPyTorch, AdamWStepMatches) {
  GPUVS_REQUIRE_REFERENCE(ref);
  const Precision p = GetParam();
  GPUVS_REQUIRE_PRECISION(p);
  const Tolerance tol = tolerance(p);
  const auto model = model_from(*ref, p, Mode::kTrain);
  model->forward_backward(false);
  model->optimizer_step(1);
  for (const char* name : kAdamChecked) {
    const HostTensor& before = ref->at(name);
    const std::string key = std::string("adamw/") + name;
    const Errors e =
        compare(minus(model->get_tensor(name), before), minus(ref->at(key), before), key);
    print(p, "train", key, e);
    // The first Adam step moves each weight by about lr * sign(grad): gradients near
    // zero flip sign under rounding, so only fp32 and tf32 are held to a bound.
    if (tol.adam_rel_l2 >= 0) {
      EXPECT_LE(e.rel_l2, tol.adam_rel_l2) << key;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Precisions, BertVsPyTorch,
                         testing::Values(Precision::kFp32, Precision::kTf32, Precision::kBf16,
                                         Precision::kFp16, Precision::kFp8),
                         [](const testing::TestParamInfo<Precision>& info) {
                           return std::string(to_string(info.param));
                         });

ModelConfig small_config(uint64_t seed, Precision p = Precision::kBf16) {
  ModelConfig c;
  c.model = "bert-large";
  c.mode = Mode::kTrain;
  c.precision = p;
  c.batch = 8;
  c.seq = 128;
  c.graph = false;
  c.seed = seed;
  return c;
}

// Losses of `steps` optimizer steps on one fixed synthetic batch.
std::vector<double> train_losses(int steps, uint64_t seed, bool dropout = true,
                                 Precision p = Precision::kBf16) {
  const auto model = make_bert_large(small_config(seed, p), 0);
  dynamic_cast<bert::BertLarge&>(*model).set_dropout(dropout);
  model->generate_input(seed);
  std::vector<double> losses;
  for (int i = 0; i < steps; ++i) {
    model->forward_backward(false);
    model->optimizer_step(1);
    losses.push_back(model->loss());
  }
  return losses;
}

std::string join(const std::vector<double>& v) {
  std::string s;
  char buf[32];
  for (double x : v) {
    std::snprintf(buf, sizeof buf, "%s%.5f", s.empty() ? "" : " ", x);
    s += buf;
  }
  return s;
}

TEST(BertTraining, LossFallsOnAFixedBatch) {
  GPUVS_REQUIRE_GPU();
  const std::vector<double> losses = train_losses(40, 7);
  std::printf("bert-check bf16 train losses (40 steps, batch 8, seq 128): %s\n",
              join(losses).c_str());
  for (double l : losses)
    ASSERT_TRUE(std::isfinite(l)) << join(losses);
  // About ln(30522) + ln(2) = 11.0 at init; memorising 8 sequences' masked words
  // brings it well down.
  EXPECT_GT(losses[0], 9.0) << join(losses);
  const double last = (losses[37] + losses[38] + losses[39]) / 3;
  EXPECT_LT(last, 0.8 * losses[0]) << join(losses);
}

TEST(BertTraining, TwoRunsGiveTheSameLosses) {
  GPUVS_REQUIRE_GPU();
  const std::vector<double> a = train_losses(5, 11);
  const std::vector<double> b = train_losses(5, 11);
  std::printf("bert-check bf16 determinism run1: %s\n", join(a).c_str());
  std::printf("bert-check bf16 determinism run2: %s\n", join(b).c_str());
  ASSERT_EQ(a.size(), b.size());
  double worst = 0;
  for (std::size_t i = 0; i < a.size(); ++i)
    worst = std::max(worst, std::fabs(a[i] - b[i]) / std::fabs(a[i]));
  std::printf("bert-check bf16 determinism max_rel_diff=%.3e bitwise=%s\n", worst,
              a == b ? "yes" : "no");
  // Same weights, inputs and dropout masks; only the word-embedding gradient's fp32
  // atomics may add in another order (docs/model-checks.md).
  EXPECT_LE(worst, 1e-4);
  EXPECT_EQ(a[0], b[0]) << "the first loss precedes any update: it must be bitwise equal";
}

TEST(BertTraining, GraphStepMatchesEagerStep) {
  GPUVS_REQUIRE_GPU();
  constexpr int kSteps = 3;
  // Dropout off: the warm-up step below (every kernel and cuBLASLt plan run once
  // before the capture) would otherwise shift the graph's dropout masks by one step.
  const std::vector<double> eager = train_losses(kSteps, 5, false);
  const auto model = make_bert_large(small_config(5), 0);
  dynamic_cast<bert::BertLarge&>(*model).set_dropout(false);
  model->generate_input(5);
  model->forward_backward(false);  // warm-up, no update: the weights stay the same
  const GraphExec graph(model->stream(), [&](cudaStream_t) {
    model->forward_backward(false);
    model->optimizer_step(1);
  });
  std::vector<double> graphed;
  for (int i = 0; i < kSteps; ++i) {
    graph.launch(model->stream());
    graphed.push_back(model->loss());
  }
  std::printf("bert-check bf16 graph: eager %s, graph %s (%zu nodes)\n", join(eager).c_str(),
              join(graphed).c_str(), graph.nodes());
  for (int i = 0; i < kSteps; ++i)
    EXPECT_NEAR(graphed[i], eager[i], 1e-4 * std::fabs(eager[i])) << i;
}

// Below compute capability 8.9, fp8 is refused with a reason; from 8.9 on it trains:
// its losses stay finite and its first loss is close to bf16's on the same batch.
TEST(BertConfig, Fp8TrainsOrIsRefusedWithAReason) {
  GPUVS_REQUIRE_GPU();
  if (compute_capability() < 89) {
    try {
      make_bert_large(small_config(1, Precision::kFp8), 0);
      FAIL() << "fp8 was accepted below compute capability 8.9";
    } catch (const UsageError& e) {
      std::printf("bert-check fp8: %s\n", e.what());
      EXPECT_NE(std::string(e.what()).find("fp8"), std::string::npos);
    }
    return;
  }
  const std::vector<double> fp8 = train_losses(10, 13, false, Precision::kFp8);
  const std::vector<double> bf16 = train_losses(10, 13, false, Precision::kBf16);
  std::printf("bert-check fp8 train losses: %s\n", join(fp8).c_str());
  std::printf("bert-check bf16 train losses: %s\n", join(bf16).c_str());
  for (double l : fp8)
    ASSERT_TRUE(std::isfinite(l)) << join(fp8);
  EXPECT_NEAR(fp8[0], bf16[0], 3e-2 * bf16[0]);
  EXPECT_LT(fp8[9], fp8[0]) << join(fp8);
}

// The fused (flash) attention, opt-in with GPUVS_BERT_FLASH=1, against the unfused path
// on the same weights and batch, dropout on (both draw the same masks): one training
// step's losses and gradients, and the inference logits, at seq 128 and 512.
TEST(BertAttention, FusedMatchesUnfused) {
  GPUVS_REQUIRE_GPU();
  const char* grads[] = {"bert.encoder.layer.0.attention.self.query.weight",
                         "bert.encoder.layer.0.attention.self.key.weight",
                         "bert.encoder.layer.0.attention.self.value.weight",
                         "bert.encoder.layer.23.attention.self.query.weight",
                         "bert.embeddings.word_embeddings.weight"};
  for (const Precision p : {Precision::kBf16, Precision::kFp16}) {
    const std::string name(to_string(p));
    for (const int seq : {128, 512}) {
      ModelConfig c = small_config(21, p);
      c.seq = seq;
      c.batch = seq == 512 ? 2 : 8;
      const auto run = [&](bool flash, std::vector<HostTensor>* out) {
        if (flash)
          setenv("GPUVS_BERT_FLASH", "1", 1);
        else
          unsetenv("GPUVS_BERT_FLASH");
        const auto model = make_bert_large(c, 0);
        unsetenv("GPUVS_BERT_FLASH");
        model->generate_input(21);
        model->forward_backward(false);
        const double loss = model->loss();
        for (const char* g : grads)
          out->push_back(model->get_tensor(std::string("grad/") + g));
        model->forward();  // dropout off: the logits
        out->push_back(model->get_tensor("prediction_logits"));
        return loss;
      };
      std::vector<HostTensor> fused, unfused;
      const double lf = run(true, &fused), lu = run(false, &unfused);
      std::printf("bert-check %s flash seq %d loss fused %.6f unfused %.6f\n", name.c_str(), seq,
                  lf, lu);
      EXPECT_NEAR(lf, lu, 2e-3 * std::fabs(lu)) << name << " seq " << seq;
      for (std::size_t i = 0; i < fused.size(); ++i) {
        const std::string what = i < std::size(grads) ? grads[i] : "prediction_logits (infer)";
        const Errors e = compare(fused[i], unfused[i], what);
        std::printf("bert-check %s flash seq %d %s rel_l2=%.3g max_err=%.3g\n", name.c_str(), seq,
                    what.c_str(), e.rel_l2, e.max_err);
        EXPECT_LE(e.rel_l2, 5e-2) << name << " seq " << seq << " " << what;
      }
    }
  }
}

// Which of the encoder's GEMMs cuBLASLt runs in FP8 (fwd, dgrad, wgrad of QKV,
// attention output, FFN1, FFN2), printed as "bert-check fp8 plan: ..."; on Hopper
// (9.0) all twelve must be FP8, none fallen back to bf16.
TEST(BertConfig, Fp8PlanRunsTheEncoderGemmsInFp8) {
  GPUVS_REQUIRE_GPU();
  GPUVS_REQUIRE_PRECISION(Precision::kFp8);
  const auto model = make_bert_large(small_config(2, Precision::kFp8), 0);
  const std::string plan = dynamic_cast<bert::BertLarge&>(*model).fp8_plan();
  std::size_t lines = 0, start = 0;
  for (std::size_t nl = plan.find('\n'); nl != std::string::npos; nl = plan.find('\n', start)) {
    std::printf("bert-check fp8 plan: %s\n", plan.substr(start, nl - start).c_str());
    ++lines;
    start = nl + 1;
  }
  EXPECT_EQ(lines, 4u) << plan;
  if (compute_capability() == 90) {
    EXPECT_EQ(plan.find(" bf16 ("), std::string::npos) << plan;
  }
  model->forward_backward(false);
  EXPECT_TRUE(std::isfinite(model->loss()));
}

TEST(BertConfig, SyntheticInputIsAPreTrainingBatch) {
  GPUVS_REQUIRE_GPU();
  const auto model = make_bert_large(small_config(3), 0);
  model->generate_input(3);
  const HostTensor ids = model->get_tensor("input_ids");
  const HostTensor labels = model->get_tensor("labels");
  const HostTensor types = model->get_tensor("token_type_ids");
  const HostTensor nsp = model->get_tensor("next_sentence_label");
  ASSERT_EQ(ids.shape, (std::vector<int64_t>{8, 128}));
  int masked = 0, words = 0;
  for (int b = 0; b < 8; ++b) {
    EXPECT_EQ(ids.data[b * 128], 101.0f) << "[CLS] first";
    EXPECT_EQ(ids.data[b * 128 + 127], 102.0f) << "[SEP] last";
    EXPECT_EQ(types.data[b * 128], 0.0f);
    EXPECT_EQ(types.data[b * 128 + 127], 1.0f);
    EXPECT_TRUE(nsp.data[b] == 0.0f || nsp.data[b] == 1.0f);
    for (int t = 1; t < 127; ++t) {
      const float l = labels.data[b * 128 + t];
      if (t == 63) continue;  // the middle [SEP]
      ++words;
      if (l != -100.0f) {
        ++masked;
        EXPECT_GE(l, 999.0f);
        EXPECT_LT(l, 30522.0f);
      }
    }
  }
  const double fraction = double(masked) / words;
  std::printf("bert-check synthetic batch: %d of %d word positions masked (%.3f)\n", masked, words,
              fraction);
  EXPECT_NEAR(fraction, 0.15, 0.04);
}

}  // namespace
}  // namespace gpuvs::models
