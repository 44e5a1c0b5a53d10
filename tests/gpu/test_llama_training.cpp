// The Llama decoder's training (models/llama/training.h) on a GPU, at the published
// 1B and 3B shapes on short sequences: the loss starts where random weights put it and
// falls when one batch is trained on; each parameter tensor's gradient predicts how
// the loss moves when that tensor is perturbed (a central difference of the loss
// itself, so a wrong backward anywhere, attention, rotary, RMSNorm, SwiGLU or the
// tied head, fails); accumulation adds the micro-steps' gradients; the refusals.
// Skipped without a GPU.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "core/error.h"
#include "gpu_test_util.h"
#include "models/model.h"

namespace gpuvs::models {
namespace {

ModelConfig llama(const std::string& size, int batch, int seq) {
  ModelConfig c;
  c.model = "llama-" + size;
  c.mode = Mode::kTrain;
  c.precision = Precision::kBf16;
  c.batch = batch;
  c.seq = seq;
  c.seed = 3;
  return c;
}

// The bf16 values next to a bf16 value x (x != 0), one step towards +infinity (dir 1)
// or -infinity (dir -1): exactly representable, so the model's bf16 working copy of a
// master weight set to it is that value.
float bf16_step(float x, int dir) {
  uint32_t u;
  std::memcpy(&u, &x, 4);
  const uint32_t away = (x > 0) == (dir > 0) ? 1u : uint32_t(-1);  // magnitude up or down
  u = ((u >> 16) + away) << 16;
  float y;
  std::memcpy(&y, &u, 4);
  return y;
}

// The bf16 value of an FP32 master weight (round to nearest even, as the cast kernel).
float bf16(float x) {
  uint32_t u;
  std::memcpy(&u, &x, 4);
  u += 0x7fff + ((u >> 16) & 1);
  u &= 0xffff0000u;
  float y;
  std::memcpy(&y, &u, 4);
  return y;
}

double forward_loss(Model& m) {
  m.forward();
  return m.loss();
}

struct Check {
  double predicted = 0, measured = 0;
  size_t moved = 0;
};

// A directional derivative of the loss through `name`: every k-th element of the
// tensor (k chosen so that the loss moves by about 0.03: small enough for the first
// order to hold) goes one bf16 step up and down along its gradient's sign, the
// loss's central difference against the change the gradient predicts for exactly those
// steps, sum g_i (w+_i - w-_i) / 2. Both runs round the same way everywhere else.
Check directional(Model& m, const std::string& name) {
  const HostTensor w = m.get_tensor(name);
  const HostTensor g = m.get_tensor("grad/" + name);
  auto steps = [&](size_t i, float* up, float* down) {
    const float b = bf16(w.data[i]);
    const int s = g.data[i] > 0 ? 1 : -1;
    if (b == 0 || g.data[i] == 0) return false;
    // The same distance both ways (the central difference's second order cancels):
    // the step away from zero at b, which the finer grid below |b|'s binade holds too.
    const float u = bf16_step(std::fabs(b), 1) - std::fabs(b);
    *up = b + float(s) * u;
    *down = b - float(s) * u;
    return true;
  };
  double all = 0;
  for (size_t i = 0; i < w.data.size(); ++i) {
    float up, down;
    if (steps(i, &up, &down)) all += double(g.data[i]) * (double(up) - down) / 2;
  }
  const size_t k = std::max<size_t>(1, size_t(std::llround(all / 0.03)));
  HostTensor plus = w, minus = w;
  Check c;
  for (size_t i = 0; i < w.data.size(); i += k) {
    float up, down;
    if (!steps(i, &up, &down)) continue;
    plus.data[i] = up;
    minus.data[i] = down;
    c.predicted += double(g.data[i]) * (double(up) - down) / 2;
    ++c.moved;
  }
  m.set_tensor(name, plus);
  const double lp = forward_loss(m);
  m.set_tensor(name, minus);
  const double lm = forward_loss(m);
  m.set_tensor(name, w);
  c.measured = (lp - lm) / 2;
  return c;
}

TEST(LlamaTraining, LossStartsAtRandomWeightsLevelAndFallsOnOneBatch) {
  GPUVS_REQUIRE_GPU();
  auto m = make_model(llama("1b", 2, 128), 0);
  EXPECT_EQ(m->items_per_micro_step(), 256);
  EXPECT_EQ(m->items_unit(), "tokens/s");
  m->forward_backward(false);
  const double first = m->loss();
  // Random weights: logits of standard deviation ~0.02 * sqrt(2048) ~ 0.9 around a
  // uniform choice among 128256 tokens, so about ln(128256) + 0.9^2 / 2.
  const double uniform = std::log(128256.0);
  EXPECT_GT(first, uniform - 0.5);
  EXPECT_LT(first, uniform + 1.5);
  m->optimizer_step(1);
  double last = first;
  for (int i = 0; i < 10; ++i) {
    m->forward_backward(false);
    m->optimizer_step(1);
    last = m->loss();
    ASSERT_TRUE(std::isfinite(last)) << "step " << i;
  }
  // Eleven AdamW steps at 3e-4 on the same 254 labelled positions memorise some of them.
  EXPECT_LT(last, first - 0.3) << "first " << first << ", after 11 steps " << last;
  std::printf("llama-train 1b loss first %.4f, after 11 steps on one batch %.4f\n", first, last);
}

void expect_gradients_predict_the_loss(Model& m, const std::vector<std::string>& names) {
  m.forward_backward(false);
  for (const std::string& name : names) {
    const Check c = directional(m, name);
    std::printf("llama-train gradient %s: predicted %.6g, central difference %.6g\n", name.c_str(),
                c.predicted, c.measured);
    ASSERT_GT(std::fabs(c.predicted), 1e-4) << name << ": too small a change to compare";
    // bf16 activations: the loss of two perturbed models differs by their rounding too.
    EXPECT_NEAR(c.measured, c.predicted, 0.1 * std::fabs(c.predicted)) << name;
  }
}

TEST(LlamaTraining, GradientsPredictTheLossHeadSize64) {
  GPUVS_REQUIRE_GPU();
  auto m = make_model(llama("1b", 2, 128), 0);
  expect_gradients_predict_the_loss(
      *m, {"model.norm.weight", "model.layers.15.mlp.down_proj.weight",
           "model.layers.15.post_attention_layernorm.weight", "model.layers.10.mlp.up_proj.weight",
           "model.layers.10.mlp.gate_proj.weight", "model.layers.5.self_attn.o_proj.weight",
           "model.layers.0.self_attn.v_proj.weight", "model.layers.0.self_attn.k_proj.weight",
           "model.layers.0.self_attn.q_proj.weight", "model.layers.0.input_layernorm.weight",
           "model.embed_tokens.weight"});
}

TEST(LlamaTraining, GradientsPredictTheLossHeadSize128) {
  GPUVS_REQUIRE_GPU();
  auto m = make_model(llama("3b", 1, 128), 0);
  expect_gradients_predict_the_loss(
      *m, {"model.layers.27.mlp.down_proj.weight", "model.layers.3.self_attn.k_proj.weight",
           "model.layers.3.self_attn.q_proj.weight", "model.layers.0.self_attn.v_proj.weight"});
}

TEST(LlamaTraining, AccumulationAddsTheMicroStepsGradients) {
  GPUVS_REQUIRE_GPU();
  auto m = make_model(llama("1b", 1, 128), 0);
  const std::string name = "model.layers.7.mlp.down_proj.weight";
  m->forward_backward(false);
  const HostTensor once = m->get_tensor("grad/" + name);
  m->forward_backward(true);
  const HostTensor twice = m->get_tensor("grad/" + name);
  ASSERT_EQ(once.data.size(), twice.data.size());
  size_t exact = 0;
  double norm = 0;
  for (size_t i = 0; i < once.data.size(); ++i) {
    exact += twice.data[i] == 2 * once.data[i];
    norm += double(once.data[i]) * once.data[i];
  }
  EXPECT_GT(norm, 0);
  // The same batch twice: the same GEMM result added to itself (beta 1) is exactly 2x.
  EXPECT_EQ(exact, once.data.size());
  m->forward_backward(false);
  const HostTensor again = m->get_tensor("grad/" + name);
  EXPECT_EQ(again.data, once.data) << "accumulate false overwrites";
}

TEST(LlamaTraining, UnsupportedConfigurationsAreUsageErrors) {
  GPUVS_REQUIRE_GPU();
  ModelConfig c = llama("1b", 1, 128);
  c.precision = Precision::kFp16;
  EXPECT_THROW(make_model(c, 0), UsageError);
  c = llama("1b", 1, 100);
  EXPECT_THROW(make_model(c, 0), UsageError);
  c = llama("70b", 1, 128);
  EXPECT_THROW(make_model(c, 0), UsageError);
  c = llama("1b", 1, 128);
  c.mode = Mode::kInfer;
  EXPECT_THROW(make_model(c, 0), UsageError);
}

}  // namespace
}  // namespace gpuvs::models
