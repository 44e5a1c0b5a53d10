// The Llama decoder against transformers' LlamaForCausalLM itself (docs/model-checks.md,
// Llama section): the reference dumped by scripts/models/dump_llama.py (env
// GPUVS_LLAMA_REF) gives its weights, a prompt and, per precision, the prompt's logits,
// a greedy decode of 32 tokens through transformers' own KV cache and the logits each
// token was chosen from. The decoder takes the same weights and prompt, prefills, takes
// its first token from the prefill and decodes 31 more.
//  - fp32: every token equal, the prefill's and every step's logits within kFp32Bound of
//    transformers' (summation order only).
//  - bf16, fp16: the yardstick is PyTorch's own error at that precision, K x max|PyTorch
//    at p - PyTorch at fp32| over every logit of the file where the two had the same
//    context. The prefill's logits within it of PyTorch's fp32 ones (and their distance
//    to PyTorch's at p printed); tokens equal to PyTorch's at p until a first
//    divergence, if any, which must be a near tie in PyTorch's own logits (its two
//    candidates within the yardstick); every step's logits up to there within it of
//    PyTorch's at p. After a divergence the sequences differ: not compared further.
// Each precision prints a line "llama-check <p> ..." with its figures for the record.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <iterator>
#include <memory>
#include <string>
#include <vector>

#include "core/error.h"
#include "gpu_test_util.h"
#include "model_test_util.h"
#include "models/llama/decoder.h"
#include "models/llama/shapes.h"
#include "models/llama/training.h"

namespace gpuvs::models::llama {
namespace {

// The low precisions' yardstick: K x PyTorch's own error, as for ResNet-50
// (docs/model-checks.md): gpuvs rounds at other points than PyTorch, and two draws of
// the same rounding error are about equally large; 3x leaves room for gpuvs' draw to
// be the larger one, far below what a wrong computation gives (O(1) of logits whose
// standard deviation is about 1.3).
constexpr double kYardstick = 3;
// fp32: the largest logit difference relative to the largest logit. gpuvs and PyTorch
// differ in summation order only (cuBLASLt's and the decoder's own kernels against
// PyTorch's, softmax and RMSNorm reductions), ~1e-6 relative per operation over four
// layers (BERT-large measured 2.6e-6 over 24). 1e-4 leaves a factor of ten and more; it
// is also below half of the smallest top-2 margin of fp32's greedy steps (0.0022 on
// logits up to 6.1 in the file of dump_llama.py's defaults), so logits within it choose
// transformers' tokens.
constexpr double kFp32Bound = 1e-4;

const TensorFile* reference(std::string* why) {
  static std::string error;
  static const std::unique_ptr<TensorFile> file = load_reference(
      "GPUVS_LLAMA_REF", "llama-tiny",
      "scripts/models/dump_llama.py on a machine with PyTorch and transformers", &error);
  *why = error;
  return file.get();
}

const std::string& meta_text(const TensorFile& f, const std::string& key) {
  const auto it = f.metadata.find(key);
  if (it == f.metadata.end())
    throw Error(f.name + ": no __metadata__ \"" + key +
                "\" (a file of an older dump_llama.py? --force rewrites it)");
  return it->second;
}

double meta(const TensorFile& f, const std::string& key) {
  return std::stod(meta_text(f, key));
}

int meta_int(const TensorFile& f, const std::string& key) {
  return std::stoi(meta_text(f, key));
}

// The shape the file was made with; the rest (source, ...) from the published 8B.
Shape shape_of(const TensorFile& f) {
  Shape s = *find_shape("8b");
  s.size = "tiny";
  s.name = "tiny Llama (transformers reference)";
  s.hidden = meta_int(f, "hidden");
  s.layers = meta_int(f, "layers");
  s.heads = meta_int(f, "heads");
  s.kv_heads = meta_int(f, "kv_heads");
  s.intermediate = meta_int(f, "intermediate");
  s.vocab = meta_int(f, "vocab");
  s.tied_embeddings = meta_int(f, "tied_embeddings") != 0;
  s.rope_theta = meta(f, "rope_theta");
  s.max_context = meta_int(f, "max_context");
  s.rms_norm_eps = meta(f, "rms_norm_eps");
  s.rope_factor = meta(f, "rope_factor");
  s.rope_low_freq_factor = meta(f, "rope_low_freq_factor");
  s.rope_high_freq_factor = meta(f, "rope_high_freq_factor");
  s.rope_original_context = meta_int(f, "rope_original_context");
  return s;
}

// The state_dict's names of one layer's weights and of the others.
const char* const kLayerWeights[] = {
    "input_layernorm.weight",  "self_attn.q_proj.weight", "self_attn.k_proj.weight",
    "self_attn.v_proj.weight", "self_attn.o_proj.weight", "post_attention_layernorm.weight",
    "mlp.gate_proj.weight",    "mlp.up_proj.weight",      "mlp.down_proj.weight"};

HostWeights weights_of(const TensorFile& f, const Shape& s) {
  auto t = [&](const std::string& name) { return f.at(name).data; };
  HostWeights w;
  w.embed = t("model.embed_tokens.weight");
  for (int l = 0; l < s.layers; ++l) {
    const std::string p = "model.layers." + std::to_string(l) + ".";
    HostWeights::Layer x;
    x.attn_norm = t(p + kLayerWeights[0]);
    x.wq = t(p + kLayerWeights[1]);
    x.wk = t(p + kLayerWeights[2]);
    x.wv = t(p + kLayerWeights[3]);
    x.wo = t(p + kLayerWeights[4]);
    x.mlp_norm = t(p + kLayerWeights[5]);
    x.gate = t(p + kLayerWeights[6]);
    x.up = t(p + kLayerWeights[7]);
    x.down = t(p + kLayerWeights[8]);
    w.layers.push_back(std::move(x));
  }
  w.final_norm = t("model.norm.weight");
  if (!s.tied_embeddings) w.lm_head = t("lm_head.weight");
  return w;
}

// Rows [first, first + count) of a tensor whose last dimension is `width`, as (count, width).
HostTensor rows(const HostTensor& t, int64_t first, int64_t count, int64_t width) {
  HostTensor out;
  out.shape = {count, width};
  out.data.assign(t.data.begin() + first * width, t.data.begin() + (first + count) * width);
  return out;
}

// The last position's rows of (B, T, V) logits, as (B, V).
HostTensor last_positions(const HostTensor& t, int batch, int seq, int v) {
  HostTensor out;
  out.shape = {batch, v};
  for (int b = 0; b < batch; ++b) {
    const HostTensor r = rows(t, int64_t(b) * seq + seq - 1, 1, v);
    out.data.insert(out.data.end(), r.data.begin(), r.data.end());
  }
  return out;
}

// compare_tensors' errors (a NaN or a size mismatch: infinite) and the largest absolute
// difference, max_err x max|ref|.
struct Distance {
  Errors e;
  double max_abs = 0;
};

Distance distance(const HostTensor& got, const HostTensor& ref, const std::string& what) {
  Distance d;
  d.e = compare(got, ref, what);
  double peak = 0;
  for (float x : ref.data)
    peak = std::max(peak, double(std::fabs(x)));
  d.max_abs = d.e.max_err * (peak > 0 ? peak : 1.0);
  return d;
}

// PyTorch's own error at precision p: max|PyTorch p - PyTorch fp32| over the prefill's
// logits (every position) and over each sequence's step logits as long as the two had
// the same context (all tokens before the step equal).
struct OwnError {
  double prefill = 0, steps = 0;
  int steps_measured = 0;
  double value() const { return std::max(prefill, steps); }
};

OwnError pytorch_error(const TensorFile& f, const std::string& p, int batch, int gen, int v) {
  OwnError o;
  o.prefill =
      distance(f.at(p + "/prefill_logits"), f.at("fp32/prefill_logits"), p + " prefill").max_abs;
  const HostTensor& steps_p = f.at(p + "/step_logits");
  const HostTensor& steps_32 = f.at("fp32/step_logits");
  const HostTensor& tokens_p = f.at(p + "/generated");
  const HostTensor& tokens_32 = f.at("fp32/generated");
  for (int b = 0; b < batch; ++b) {
    for (int i = 0; i < gen; ++i) {
      const int64_t row = int64_t(i) * batch + b;
      o.steps = std::max(
          o.steps,
          distance(rows(steps_p, row, 1, v), rows(steps_32, row, 1, v), p + " step").max_abs);
      ++o.steps_measured;
      const size_t at = size_t(b) * gen + i;
      if (tokens_p.data[at] != tokens_32.data[at]) break;  // later contexts differ
    }
  }
  return o;
}

int argmax(const std::vector<float>& x) {
  return int(std::max_element(x.begin(), x.end()) - x.begin());  // the first of equals
}

void check_precision(const std::string& p, DType dtype) {
  GPUVS_REQUIRE_REFERENCE(ref);
  const Shape s = shape_of(*ref);
  ASSERT_EQ(meta_text(*ref, "rope_type"), "llama3");
  const int batch = meta_int(*ref, "batch"), prompt = meta_int(*ref, "prompt");
  const int gen = meta_int(*ref, "generate"), v = s.vocab;
  ASSERT_GE(gen, 1);
  const HostTensor& prefill_p = ref->at(p + "/prefill_logits");
  const HostTensor& gen_tokens = ref->at(p + "/generated");     // (B, G)
  const HostTensor& step_logits = ref->at(p + "/step_logits");  // (G, B, V)
  ASSERT_EQ(ref->at("input_ids").shape, (std::vector<int64_t>{batch, prompt}));
  ASSERT_EQ(prefill_p.shape, (std::vector<int64_t>{batch, prompt, v}));
  ASSERT_EQ(gen_tokens.shape, (std::vector<int64_t>{batch, gen}));
  ASSERT_EQ(step_logits.shape, (std::vector<int64_t>{gen, batch, v}));

  // Every weight of the state_dict is one the decoder takes (no bias left out).
  int weights = 0;
  for (const auto& [name, t] : ref->tensors)
    weights +=
        name.find('/') == std::string::npos && name != "input_ids" && name != "rope_inv_freq";
  EXPECT_EQ(weights, 2 + s.layers * int(std::size(kLayerWeights)) + (s.tied_embeddings ? 0 : 1))
      << "the file's state_dict has weights the decoder does not take";

  // The rotary frequencies after the llama3 scaling, as transformers computed them (FP32).
  const std::vector<double> freq = rope_inv_freq(s);
  const HostTensor& want_freq = ref->at("rope_inv_freq");
  ASSERT_EQ(want_freq.data.size(), freq.size());
  for (size_t i = 0; i < freq.size(); ++i)
    EXPECT_NEAR(freq[i], want_freq.data[i], 1e-6 * want_freq.data[i]) << "frequency " << i;

  DecoderConfig c;
  c.shape = s;
  c.dtype = dtype;
  c.batch = batch;
  c.prompt = prompt;
  c.max_context = prompt + gen;  // 48 with the dump's defaults
  Decoder d(c, 0);
  d.set_weights(weights_of(*ref, s));
  std::vector<int32_t> ids;
  for (float x : ref->at("input_ids").data)
    ids.push_back(int32_t(x));
  d.set_prompt(ids);

  const bool fp32 = p == "fp32";
  const OwnError own = fp32 ? OwnError{} : pytorch_error(*ref, p, batch, gen, v);
  const double yardstick = kYardstick * own.value();
  if (!fp32) {
    ASSERT_GT(own.value(), 0) << "PyTorch " << p << " equals PyTorch fp32: not a " << p
                              << " reference";
  }
  // The bound on a distance: fp32's relative to the largest reference logit, else the
  // yardstick in logits.
  const auto within = [&](const Distance& e) {
    return fp32 ? e.e.max_err <= kFp32Bound : e.max_abs <= yardstick;
  };
  const auto shown = [&](const Distance& e) { return fp32 ? e.e.max_err : e.max_abs; };
  const std::string unit = fp32 ? "max|diff|/max|ref|" : "max|diff|";
  const double bound = fp32 ? kFp32Bound : yardstick;

  d.prefill();
  EXPECT_EQ(d.position(), prompt);
  HostTensor got;
  got.shape = {batch, v};
  got.data = d.logits();
  const Distance vs_32 =
      distance(got, last_positions(ref->at("fp32/prefill_logits"), batch, prompt, v),
               p + " prefill against PyTorch fp32");
  const Distance vs_p =
      distance(got, last_positions(prefill_p, batch, prompt, v), p + " prefill against PyTorch");
  EXPECT_TRUE(within(vs_32)) << p
                             << " prefill logits (last position) against PyTorch fp32: " << unit
                             << " " << shown(vs_32) << ", bound " << bound;

  // Step i's token: after the prefill (i = 0), then after decode step i.
  std::vector<int> equal(size_t(batch), 0);  // tokens equal to transformers', per sequence
  std::vector<int> diverged(size_t(batch), -1);
  double worst_step = 0;
  std::string divergences;
  for (int i = 0; i < gen; ++i) {
    if (i > 0) d.decode_step();
    const std::vector<int32_t> next = d.next_tokens();
    HostTensor lg;
    lg.shape = {batch, v};
    lg.data = d.logits();
    for (int b = 0; b < batch; ++b) {
      if (diverged[size_t(b)] >= 0) continue;  // the sequences differ from there on
      const std::string where = p + " sequence " + std::to_string(b) + " step " + std::to_string(i);
      ASSERT_TRUE(next[size_t(b)] >= 0 && next[size_t(b)] < v)
          << where << ": token " << next[size_t(b)] << " outside the vocabulary";
      const HostTensor mine = rows(lg, b, 1, v);
      const HostTensor want = rows(step_logits, int64_t(i) * batch + b, 1, v);
      const Distance e = distance(mine, want, where);
      worst_step = std::max(worst_step, shown(e));
      EXPECT_TRUE(within(e)) << where << ": logits against PyTorch " << p << ": " << unit << " "
                             << shown(e) << ", bound " << bound;
      EXPECT_EQ(next[size_t(b)], argmax(mine.data))
          << where << ": the decoder's token is not the largest of its own logits";
      const int torch_token = int(gen_tokens.data[size_t(b) * gen + i]);
      if (next[size_t(b)] == torch_token) {
        equal[size_t(b)] = i + 1;
        continue;
      }
      diverged[size_t(b)] = i;
      // PyTorch's own gap between its token and the decoder's (>= 0: its argmax).
      const double gap =
          double(want.data[size_t(torch_token)]) - want.data[size_t(next[size_t(b)])];
      char line[256];
      std::snprintf(line, sizeof line,
                    "%ssequence %d at step %d: gpuvs %d, transformers %d, PyTorch's gap %.4g",
                    divergences.empty() ? "" : "; ", b, i, int(next[size_t(b)]), torch_token, gap);
      divergences += line;
      if (fp32) {
        ADD_FAILURE() << where << ": token " << next[size_t(b)] << ", transformers " << torch_token
                      << " (its logits' margin " << gap
                      << "): fp32 must choose every token as transformers";
      } else {
        EXPECT_LE(gap, yardstick) << where << ": token " << next[size_t(b)] << ", transformers "
                                  << torch_token << ": its logit is " << gap
                                  << " below transformers' choice, not a near tie within the "
                                     "yardstick "
                                  << yardstick;
      }
    }
  }
  EXPECT_EQ(d.position(), prompt + gen - 1);

  std::string steps;
  for (int m : equal)
    steps += (steps.empty() ? "" : ", ") + std::to_string(m);
  if (fp32) {
    std::printf(
        "llama-check fp32 prefill max_err %.3e (rel_l2 %.3e) against PyTorch fp32, bound %.1e; "
        "tokens equal per sequence %s of %d; worst step max_err %.3e\n",
        vs_32.e.max_err, vs_32.e.rel_l2, kFp32Bound, steps.c_str(), gen, worst_step);
  } else {
    std::printf(
        "llama-check %s prefill max|gpuvs - PyTorch fp32| %.4g (rel_l2 %.3e), max|gpuvs - "
        "PyTorch %s| %.4g (rel_l2 %.3e); PyTorch's own %s error max|PyTorch %s - PyTorch fp32| "
        "%.4g over the prefill, %.4g over %d steps of equal context; yardstick %g x %.4g = "
        "%.4g; tokens equal per sequence %s of %d; worst step max|gpuvs - PyTorch %s| %.4g\n",
        p.c_str(), vs_32.max_abs, vs_32.e.rel_l2, p.c_str(), vs_p.max_abs, vs_p.e.rel_l2, p.c_str(),
        p.c_str(), own.prefill, own.steps, own.steps_measured, kYardstick, own.value(), yardstick,
        steps.c_str(), gen, p.c_str(), worst_step);
  }
  if (!divergences.empty())
    std::printf("llama-check %s diverged (compared no further): %s\n", p.c_str(),
                divergences.c_str());
}

TEST(LlamaReference, Fp32GreedyDecodeEqualsTransformersTokenForToken) {
  check_precision("fp32", DType::kF32);
}

TEST(LlamaReference, Bf16StaysWithinPyTorchsOwnBf16Error) {
  check_precision("bf16", DType::kBF16);
}

TEST(LlamaReference, Fp16StaysWithinPyTorchsOwnFp16Error) {
  check_precision("fp16", DType::kF16);
}

// The bf16 training against transformers': the file's training model (head size 64)
// and batch through one forward and backward of gpuvs's training, against PyTorch's
// FP32 step; the yardstick is PyTorch's own bf16 error, K x max|PyTorch bf16 - PyTorch
// fp32|, for the logits and for each parameter's gradient separately. The loss is one
// number, one draw of the rounding: within K x the larger of PyTorch's own error and
// half a bf16 step of it (2^-9 relative). Both attention kernels: cuDNN's (the default)
// and gpuvs's.
void check_training(const TensorFile* ref, AttentionKernel kernel) {
  Shape s = shape_of(*ref);
  s.heads = meta_int(*ref, "train_heads");
  s.kv_heads = meta_int(*ref, "train_kv_heads");
  ModelConfig c;
  c.model = "llama-tiny";
  c.mode = Mode::kTrain;
  c.precision = Precision::kBf16;
  c.batch = meta_int(*ref, "batch");
  c.seq = meta_int(*ref, "train_seq");
  c.attention_kernel = kernel;
  std::unique_ptr<Model> m = make_llama_training_of_shape(c, s, 0);
  const std::string kname(to_string(kernel));
  std::printf("llama-check train attention %s: %s\n", kname.c_str(), m->attention_kernel().c_str());
  const std::vector<std::string> names = m->parameter_names();
  EXPECT_EQ(names.size(), 2 + s.layers * std::size(kLayerWeights) + (s.tied_embeddings ? 0 : 1));
  for (const std::string& name : names)
    m->set_tensor(name, ref->at("train/" + name));
  m->set_tensor("input_ids", ref->at("train/input_ids"));
  m->forward_backward(false);
  const double loss = m->loss();
  const double l32 = ref->at("train/fp32/loss").data.at(0);
  const double l16 = ref->at("train/bf16/loss").data.at(0);
  const double loss_bound = kYardstick * std::max(std::fabs(l16 - l32), std::ldexp(l32, -9));
  EXPECT_NEAR(loss, l32, loss_bound) << kname << ": PyTorch bf16 " << l16;
  std::printf("llama-check train (%s) loss gpuvs %.6f, PyTorch fp32 %.6f, bf16 %.6f, bound %.4g\n",
              kname.c_str(), loss, l32, l16, loss_bound);

  double worst = 0;
  std::string worst_name;
  for (const std::string& name : names) {
    const HostTensor got = m->get_tensor("grad/" + name);
    const HostTensor& g32 = ref->at("train/fp32/grad/" + name);
    const double own = distance(ref->at("train/bf16/grad/" + name), g32, name).max_abs;
    const Distance d = distance(got, g32, name);
    ASSERT_GT(own, 0) << name << ": PyTorch bf16 equals fp32";
    EXPECT_LE(d.max_abs, kYardstick * own) << kname << " " << name << ": max|gpuvs - PyTorch fp32| "
                                           << d.max_abs << ", PyTorch's own bf16 " << own;
    if (d.max_abs / own > worst) {
      worst = d.max_abs / own;
      worst_name = name;
    }
  }
  const HostTensor logits = m->get_tensor("logits");
  const HostTensor& z32 = ref->at("train/fp32/logits");
  const double own_z = distance(ref->at("train/bf16/logits"), z32, "logits").max_abs;
  const Distance dz = distance(logits, z32, "logits");
  EXPECT_LE(dz.max_abs, kYardstick * own_z) << kname << " logits: max|gpuvs - PyTorch fp32| "
                                            << dz.max_abs << ", PyTorch's own " << own_z;
  std::printf(
      "llama-check train (%s) logits max|gpuvs - PyTorch fp32| %.4g (PyTorch's own bf16 %.4g); "
      "gradients: the largest ratio of gpuvs's error to PyTorch's own is %.3g (%s), bound %g\n",
      kname.c_str(), dz.max_abs, own_z, worst, worst_name.c_str(), kYardstick);
}

TEST(LlamaReference, Bf16TrainingStaysWithinPyTorchsOwnBf16Error) {
  GPUVS_REQUIRE_REFERENCE(ref);
  check_training(ref, AttentionKernel::kCudnn);
}

TEST(LlamaReference, Bf16TrainingWithGpuvsAttentionStaysWithinPyTorchsOwnBf16Error) {
  GPUVS_REQUIRE_REFERENCE(ref);
  check_training(ref, AttentionKernel::kGpuvs);
}

}  // namespace
}  // namespace gpuvs::models::llama
