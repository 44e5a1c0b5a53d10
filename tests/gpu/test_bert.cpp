// BERT-large against PyTorch (docs/model-checks.md, BERT section): the reference file
// dumped by scripts/models/dump_bert.py (env GPUVS_BERT_REF) gives transformers'
// BertForPreTraining initial weights, an input batch (with a padded sequence, so the
// attention mask matters) and what PyTorch computed from them in fp32 (TF32 off,
// dropout 0): prediction and NSP logits, the loss (MLM + NSP), every gradient, and a
// few weights after one AdamW step. Each precision must match within the tolerances of
// docs/model-checks.md; every measured error is printed as a line "bert-check
// <precision> <mode> <tensor> rel_l2=... max_err=..." for the record.
// The bf16 and fp16 checks run again with the fused attention (FusedAttention/...).
// Without the reference: a bf16 model's loss falls on a fixed batch, two fresh models
// give the same losses, a CUDA-graph step gives the eager step's losses, fp8 trains
// (compute capability >= 8.9) or is refused with a UsageError, the fused attention is
// as close to an fp32 model as the unfused one, and the attention softmax kernels
// match a host computation (dropout mask included).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "core/error.h"
#include "gpu/check.h"
#include "gpu/device.h"
#include "gpu_test_util.h"
#include "model_test_util.h"
#include "models/bert/bert.h"
#include "models/bert/kernels.h"
#include "models/tensor_compare.h"
#include "models/tensor_file.h"

namespace gpuvs::models {
namespace {

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
  static const std::unique_ptr<TensorFile> file = load_reference(
      "GPUVS_BERT_REF", "bert-large",
      "scripts/models/dump_bert.py on a machine with PyTorch and transformers", &error);
  *why = error;
  return file.get();
}

#define GPUVS_REQUIRE_PRECISION(p) \
  if ((p) == Precision::kFp8) GPUVS_REQUIRE_FP8();

// A reference check's model: precision and attention; printed as "bf16" or "bf16-fused".
struct Variant {
  Precision precision;
  Attention attention;
};

std::string label(const Variant& v) {
  return std::string(to_string(v.precision)) + (v.attention == Attention::kFused ? "-fused" : "");
}

void print(const Variant& v, const char* mode, const std::string& tensor, const Errors& e) {
  std::printf("bert-check %s %s %s rel_l2=%.3e max_err=%.3e\n", label(v).c_str(), mode,
              tensor.c_str(), e.rel_l2, e.max_err);
}

std::unique_ptr<Model> model_from(const TensorFile& ref, Variant v, Mode mode) {
  const HostTensor& ids = ref.at("input_ids");
  ModelConfig c;
  c.model = "bert-large";
  c.mode = mode;
  c.precision = v.precision;
  c.attention = v.attention;
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
  const auto model = model_from(*ref, {Precision::kFp32, Attention::kUnfused}, Mode::kTrain);
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

class BertVsPyTorch : public testing::TestWithParam<Variant> {};

TEST_P(BertVsPyTorch, TrainStepMatches) {
  GPUVS_REQUIRE_REFERENCE(ref);
  const Variant v = GetParam();
  GPUVS_REQUIRE_PRECISION(v.precision);
  const Tolerance tol = tolerance(v.precision);
  const auto model = model_from(*ref, v, Mode::kTrain);
  model->forward_backward(false);
  const double loss = model->loss();

  for (const char* name : {"prediction_logits", "seq_relationship_logits"}) {
    const Errors e = compare(model->get_tensor(name), ref->at(name), name);
    print(v, "train", name, e);
    EXPECT_LE(e.rel_l2, tol.logits_rel_l2) << name;
    EXPECT_LE(e.max_err, tol.logits_max_err) << name;
  }
  const double ref_loss = ref->at("loss").data.at(0);
  std::printf(
      "bert-check %s train loss gpuvs=%.7f pytorch=%.7f (mlm %.7f / %.7f, nsp %.7f / "
      "%.7f)\n",
      label(v).c_str(), loss, ref_loss, model->get_tensor("loss/mlm").data.at(0),
      ref->at("loss/mlm").data.at(0), model->get_tensor("loss/nsp").data.at(0),
      ref->at("loss/nsp").data.at(0));
  EXPECT_NEAR(loss, ref_loss, tol.loss_rel * std::fabs(ref_loss));

  for (const char* name : kGradients) {
    const std::string g = std::string("grad/") + name;
    const Errors e = compare(model->get_tensor(g), ref->at(g), g);
    print(v, "train", g, e);
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
  print(v, "train-worst", worst_name, worst);
}

TEST_P(BertVsPyTorch, InferenceMatches) {
  GPUVS_REQUIRE_REFERENCE(ref);
  const Variant v = GetParam();
  GPUVS_REQUIRE_PRECISION(v.precision);
  const Tolerance tol = tolerance(v.precision);
  const auto model = model_from(*ref, v, Mode::kInfer);
  model->forward();
  for (const char* name : {"prediction_logits", "seq_relationship_logits"}) {
    const Errors e = compare(model->get_tensor(name), ref->at(name), name);
    print(v, "infer", name, e);
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
  const Variant v = GetParam();
  GPUVS_REQUIRE_PRECISION(v.precision);
  const Tolerance tol = tolerance(v.precision);
  const auto model = model_from(*ref, v, Mode::kTrain);
  model->forward_backward(false);
  model->optimizer_step(1);
  for (const char* name : kAdamChecked) {
    const HostTensor& before = ref->at(name);
    const std::string key = std::string("adamw/") + name;
    const Errors e =
        compare(minus(model->get_tensor(name), before), minus(ref->at(key), before), key);
    print(v, "train", key, e);
    // The first Adam step moves each weight by about lr * sign(grad): gradients near
    // zero flip sign under rounding, so only fp32 and tf32 are held to a bound.
    if (tol.adam_rel_l2 >= 0) {
      EXPECT_LE(e.rel_l2, tol.adam_rel_l2) << key;
    }
  }
}

std::string precision_name(const testing::TestParamInfo<Variant>& info) {
  return std::string(to_string(info.param.precision));
}

INSTANTIATE_TEST_SUITE_P(Precisions, BertVsPyTorch,
                         testing::Values(Variant{Precision::kFp32, Attention::kUnfused},
                                         Variant{Precision::kTf32, Attention::kUnfused},
                                         Variant{Precision::kBf16, Attention::kUnfused},
                                         Variant{Precision::kFp16, Attention::kUnfused},
                                         Variant{Precision::kFp8, Attention::kUnfused}),
                         precision_name);
// The fused attention (bf16/fp16 only) with the same tolerances.
INSTANTIATE_TEST_SUITE_P(FusedAttention, BertVsPyTorch,
                         testing::Values(Variant{Precision::kBf16, Attention::kFused},
                                         Variant{Precision::kFp16, Attention::kFused}),
                         precision_name);

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
  return step_losses(*model, steps);
}

TEST(BertTraining, LossFallsOnAFixedBatch) {
  GPUVS_REQUIRE_GPU();
  const std::vector<double> losses = train_losses(40, 7);
  std::printf("bert-check bf16 train losses (40 steps, batch 8, seq 128): %s\n",
              join(losses, 5).c_str());
  for (double l : losses)
    ASSERT_TRUE(std::isfinite(l)) << join(losses, 5);
  // About ln(30522) + ln(2) = 11.0 at init; memorising 8 sequences' masked words
  // brings it well down.
  EXPECT_GT(losses[0], 9.0) << join(losses, 5);
  const double last = (losses[37] + losses[38] + losses[39]) / 3;
  EXPECT_LT(last, 0.8 * losses[0]) << join(losses, 5);
}

TEST(BertTraining, TwoRunsGiveTheSameLosses) {
  GPUVS_REQUIRE_GPU();
  const std::vector<double> a = train_losses(5, 11);
  const std::vector<double> b = train_losses(5, 11);
  std::printf("bert-check bf16 determinism run1: %s\n", join(a, 5).c_str());
  std::printf("bert-check bf16 determinism run2: %s\n", join(b, 5).c_str());
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
  std::printf("bert-check bf16 graph: eager %s, graph %s (%zu nodes)\n", join(eager, 5).c_str(),
              join(graphed, 5).c_str(), graph.nodes());
  for (int i = 0; i < kSteps; ++i)
    EXPECT_NEAR(graphed[i], eager[i], 1e-4 * std::fabs(eager[i])) << i;
}

// Gradient accumulation: after micro-steps on batches A and B (the second with
// accumulate = true) the gradients are A's plus B's. The model giving B's alone runs
// A first too (without accumulating), so both B steps see the same dropout counter and,
// in fp8, the same delayed scales (the amax history moves after every micro-step).
// Covers the GEMMs' beta = 1, the LayerNorm and bias column sums' accumulate flag and
// fp8's fused bias sums. Bound 1e-6 relative: both sums are single FP32 adds of the
// same values; 1e-5 for the word embeddings, whose lookup gradient is added by FP32
// atomics one token at a time (onto A's gradient in the accumulating model).
TEST(BertTraining, AccumulatedGradientsAreTheSumOfTheMicroSteps) {
  GPUVS_REQUIRE_GPU();
  const char* const names[] = {"bert.embeddings.word_embeddings.weight",
                               "bert.embeddings.LayerNorm.weight",
                               "bert.encoder.layer.0.attention.self.query.weight",
                               "bert.encoder.layer.0.attention.self.value.bias",
                               "bert.encoder.layer.11.attention.output.LayerNorm.weight",
                               "bert.encoder.layer.23.intermediate.dense.weight",
                               "bert.encoder.layer.23.intermediate.dense.bias",
                               "bert.encoder.layer.23.output.dense.bias",
                               "cls.predictions.bias",
                               "cls.seq_relationship.weight"};
  for (const Precision p : {Precision::kFp32, Precision::kBf16, Precision::kFp8}) {
    if (p == Precision::kFp8 && compute_capability() < 89) continue;
    const auto acc = make_bert_large(small_config(3, p), 0);
    const auto alone = make_bert_large(small_config(3, p), 0);
    acc->generate_input(21);
    acc->forward_backward(false);
    std::vector<HostTensor> g_a;
    for (const char* n : names)
      g_a.push_back(acc->get_tensor(std::string("grad/") + n));
    acc->generate_input(22);
    acc->forward_backward(true);
    alone->generate_input(21);
    alone->forward_backward(false);
    alone->generate_input(22);
    alone->forward_backward(false);
    for (std::size_t i = 0; i < std::size(names); ++i) {
      const HostTensor sum = acc->get_tensor(std::string("grad/") + names[i]);
      const HostTensor g_b = alone->get_tensor(std::string("grad/") + names[i]);
      ASSERT_EQ(sum.data.size(), g_b.data.size()) << names[i];
      double diff2 = 0, want2 = 0, b2 = 0;
      for (std::size_t j = 0; j < sum.data.size(); ++j) {
        const double want = double(g_a[i].data[j]) + g_b.data[j];
        diff2 += (sum.data[j] - want) * (sum.data[j] - want);
        want2 += want * want;
        b2 += double(g_b.data[j]) * g_b.data[j];
      }
      const double rel = std::sqrt(diff2 / want2);
      std::printf("bert-check %s accumulate %s: |sum - (A + B)| / |A + B| = %.3e\n",
                  std::string(to_string(p)).c_str(), names[i], rel);
      ASSERT_GT(b2, 0) << names[i];
      const bool atomics = i == 0;  // the word embeddings
      EXPECT_LE(rel, atomics ? 1e-5 : 1e-6) << to_string(p) << " " << names[i];
    }
  }
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
  // 200 steps on one fixed batch (dropout off), fp8 and bf16 from the same weights:
  // the documented gap (docs/model-checks.md) is on the mean of the last 10 losses,
  // at most 10 % of bf16's own drop over the run.
  constexpr int kSteps = 200, kTail = 10;
  const std::vector<double> fp8 = train_losses(kSteps, 13, false, Precision::kFp8);
  const std::vector<double> bf16 = train_losses(kSteps, 13, false, Precision::kBf16);
  const auto every = [](const std::vector<double>& v, int stride) {
    std::vector<double> out;
    for (std::size_t i = 0; i < v.size(); i += stride)
      out.push_back(v[i]);
    out.push_back(v.back());
    return out;
  };
  const auto tail_mean = [&](const std::vector<double>& v) {
    double sum = 0;
    for (int i = 0; i < kTail; ++i)
      sum += v[v.size() - 1 - i];
    return sum / kTail;
  };
  std::printf("bert-check fp8 train losses (every 20th of %d): %s\n", kSteps,
              join(every(fp8, 20), 5).c_str());
  std::printf("bert-check bf16 train losses (every 20th of %d): %s\n", kSteps,
              join(every(bf16, 20), 5).c_str());
  for (double l : fp8)
    ASSERT_TRUE(std::isfinite(l)) << join(fp8, 5);
  EXPECT_NEAR(fp8[0], bf16[0], 3e-2 * bf16[0]);
  const double drop = bf16[0] - tail_mean(bf16);
  const double gap = tail_mean(fp8) - tail_mean(bf16);
  std::printf(
      "bert-check fp8 vs bf16 after %d steps: last-%d mean %.5f vs %.5f, gap %.5f = %.1f %% "
      "of bf16's drop %.5f (allowed 10 %%)\n",
      kSteps, kTail, tail_mean(fp8), tail_mean(bf16), gap, 100 * gap / drop, drop);
  ASSERT_GT(drop, 0) << join(bf16, 5);
  EXPECT_LE(std::fabs(gap), 0.1 * drop)
      << "fp8 " << join(every(fp8, 20), 5) << "\nbf16 " << join(every(bf16, 20), 5);
}

// --attention fused where the fused kernels cannot run is a UsageError (exit 2) that
// names the option and the reason, raised before any GPU work (no GPU needed).
TEST(BertConfig, FusedAttentionIsRefusedWhereUnsupported) {
  const auto refusal = [](Precision p, int seq) {
    ModelConfig c = small_config(1, p);
    c.seq = seq;
    c.attention = Attention::kFused;
    try {
      make_bert_large(c, 0);
    } catch (const UsageError& e) {
      std::printf("bert-check fused attention, %s seq %d: %s\n", std::string(to_string(p)).c_str(),
                  seq, e.what());
      return std::string(e.what());
    }
    return std::string("accepted");
  };
  for (const Precision p : {Precision::kFp32, Precision::kTf32}) {
    const std::string why = refusal(p, 128);
    EXPECT_NE(why.find("--attention"), std::string::npos) << why;
    EXPECT_NE(why.find("FP32"), std::string::npos) << why;
  }
  const std::string why = refusal(Precision::kBf16, 96);
  EXPECT_NE(why.find("--attention"), std::string::npos) << why;
  EXPECT_NE(why.find("multiple of 64"), std::string::npos) << why;
}

// The fused attention against an fp32 model (unfused attention) with the same weights,
// batch and dropout masks: the weights are cast from the same fp32 master, the batch
// is a function of the seed, and the masks of the step counter, site and element
// index, none of which depends on the precision. Each 16-bit path's error is measured
// against fp32, and the fused path's may be at most 1.5 x the unfused path's (with a
// floor of 1e-3 for what both get almost exactly): fused attention must not lose more
// accuracy than the unfused one. One training step with dropout (loss, gradients),
// then the inference logits; bf16 and fp16, seq 128 (batch 8) and 512 (batch 2).
// One known exception, measured on an H200 and documented (docs/model-checks.md): the
// fused backward takes delta = rowsum(dO * O) from the 16-bit O, as FlashAttention-2
// does, which the recomputed fp32 probabilities do not match exactly; the rows of dS
// then no longer sum to zero and dQ = dS K picks up the keys' common component. The
// query-weight gradient of the last layer (the first in the backward, where that
// error is not yet drowned by others) was 2.3-3.0x the unfused path's error: it may be
// up to kDqRatio x.
TEST(BertAttention, FusedMatchesUnfused) {
  GPUVS_REQUIRE_GPU();
  constexpr double kRatio = 1.5, kFloor = 1e-3, kDqRatio = 4.0;
  const char* grads[] = {"bert.encoder.layer.0.attention.self.query.weight",
                         "bert.encoder.layer.0.attention.self.key.weight",
                         "bert.encoder.layer.0.attention.self.value.weight",
                         "bert.encoder.layer.23.attention.self.query.weight",
                         "bert.embeddings.word_embeddings.weight"};
  struct Outputs {
    double loss = 0;
    std::vector<HostTensor> tensors;  // grads..., then the inference logits
  };
  for (const int seq : {128, 512}) {
    const auto run = [&](Precision p, Attention attention) {
      ModelConfig c = small_config(21, p);
      c.seq = seq;
      c.batch = seq == 512 ? 2 : 8;
      c.attention = attention;
      const auto model = make_bert_large(c, 0);
      model->generate_input(21);
      Outputs out;
      model->forward_backward(false);
      out.loss = model->loss();
      for (const char* g : grads)
        out.tensors.push_back(model->get_tensor(std::string("grad/") + g));
      model->forward();  // dropout off: the logits
      out.tensors.push_back(model->get_tensor("prediction_logits"));
      return out;
    };
    const Outputs ref = run(Precision::kFp32, Attention::kUnfused);
    for (const Precision p : {Precision::kBf16, Precision::kFp16}) {
      const std::string name(to_string(p));
      const Outputs un = run(p, Attention::kUnfused);
      const Outputs fu = run(p, Attention::kFused);
      const double lu = std::fabs(un.loss - ref.loss) / std::fabs(ref.loss);
      const double lf = std::fabs(fu.loss - ref.loss) / std::fabs(ref.loss);
      std::printf(
          "bert-check %s fused-vs-fp32 seq %d loss fp32 %.6f unfused %.6f (rel %.3e) fused %.6f "
          "(rel %.3e)\n",
          name.c_str(), seq, ref.loss, un.loss, lu, fu.loss, lf);
      EXPECT_LE(lf, std::max(kRatio * lu, kFloor)) << name << " seq " << seq << " loss";
      for (std::size_t i = 0; i < ref.tensors.size(); ++i) {
        const std::string what = i < std::size(grads) ? grads[i] : "prediction_logits (infer)";
        const Errors eu = compare(un.tensors[i], ref.tensors[i], what);
        const Errors ef = compare(fu.tensors[i], ref.tensors[i], what);
        const Errors ff = compare(fu.tensors[i], un.tensors[i], what);
        std::printf(
            "bert-check %s fused-vs-fp32 seq %d %s unfused rel_l2=%.3e max_err=%.3e fused "
            "rel_l2=%.3e max_err=%.3e (fused-vs-unfused rel_l2=%.3e)\n",
            name.c_str(), seq, what.c_str(), eu.rel_l2, eu.max_err, ef.rel_l2, ef.max_err,
            ff.rel_l2);
        const bool dq_bound = what == "bert.encoder.layer.23.attention.self.query.weight";
        EXPECT_LE(ef.rel_l2, std::max((dq_bound ? kDqRatio : kRatio) * eu.rel_l2, kFloor))
            << name << " seq " << seq << " " << what;
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
