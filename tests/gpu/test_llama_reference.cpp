// The Llama decoder against transformers' LlamaForCausalLM itself: the reference
// dumped by scripts/models/dump_llama.py (env GPUVS_LLAMA_REF) gives its weights, a
// prompt, and per precision the prompt's logits, a greedy decode of 32 tokens with
// transformers' own KV cache and the logits each token was chosen from. The decoder
// takes the same weights and prompt. FP32: every token equal, every step's logits
// within FP32's summation-order error. bf16 and fp16: the yardstick is PyTorch's own
// error at that precision, the distance between its logits at that precision and its
// FP32 logits; tokens equal until a near tie in PyTorch's own logits, if any.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "gpu_test_util.h"
#include "model_test_util.h"
#include "models/llama/decoder.h"
#include "models/llama/shapes.h"

namespace gpuvs::models::llama {
namespace {

const TensorFile* reference(std::string* why) {
  static std::string error;
  static const std::unique_ptr<TensorFile> file = load_reference(
      "GPUVS_LLAMA_REF", "llama-tiny",
      "scripts/models/dump_llama.py on a machine with PyTorch and transformers", &error);
  *why = error;
  return file.get();
}

double meta(const TensorFile& f, const char* key) {
  return std::stod(f.metadata.at(key));
}

Shape shape_of(const TensorFile& f) {
  Shape s;
  s.size = "tiny";
  s.name = "tiny Llama (transformers)";
  s.hidden = int(meta(f, "hidden"));
  s.layers = int(meta(f, "layers"));
  s.heads = int(meta(f, "heads"));
  s.kv_heads = int(meta(f, "kv_heads"));
  s.intermediate = int(meta(f, "intermediate"));
  s.vocab = int(meta(f, "vocab"));
  s.tied_embeddings = meta(f, "tied_embeddings") != 0;
  s.rope_theta = meta(f, "rope_theta");
  s.max_context = int(meta(f, "max_context"));
  s.rms_norm_eps = meta(f, "rms_norm_eps");
  s.rope_factor = meta(f, "rope_factor");
  s.rope_low_freq_factor = meta(f, "rope_low_freq_factor");
  s.rope_high_freq_factor = meta(f, "rope_high_freq_factor");
  s.rope_original_context = int(meta(f, "rope_original_context"));
  return s;
}

HostWeights weights_of(const TensorFile& f, const Shape& s) {
  auto t = [&](const std::string& name) { return f.at(name).data; };
  HostWeights w;
  w.embed = t("model.embed_tokens.weight");
  for (int l = 0; l < s.layers; ++l) {
    const std::string p = "model.layers." + std::to_string(l) + ".";
    HostWeights::Layer x;
    x.attn_norm = t(p + "input_layernorm.weight");
    x.wq = t(p + "self_attn.q_proj.weight");
    x.wk = t(p + "self_attn.k_proj.weight");
    x.wv = t(p + "self_attn.v_proj.weight");
    x.wo = t(p + "self_attn.o_proj.weight");
    x.mlp_norm = t(p + "post_attention_layernorm.weight");
    x.gate = t(p + "mlp.gate_proj.weight");
    x.up = t(p + "mlp.up_proj.weight");
    x.down = t(p + "mlp.down_proj.weight");
    w.layers.push_back(std::move(x));
  }
  w.final_norm = t("model.norm.weight");
  if (!s.tied_embeddings) w.lm_head = t("lm_head.weight");
  return w;
}

double rel_l2(const float* a, const float* b, int64_t n) {
  double num = 0, den = 0;
  for (int64_t i = 0; i < n; ++i) {
    num += (double(a[i]) - b[i]) * (double(a[i]) - b[i]);
    den += double(b[i]) * b[i];
  }
  return std::sqrt(num / std::max(den, 1e-30));
}

double max_abs(const float* a, const float* b, int64_t n) {
  double m = 0;
  for (int64_t i = 0; i < n; ++i)
    m = std::max(m, std::fabs(double(a[i]) - b[i]));
  return m;
}

// Row (b) of the last position of (B, T, V) logits.
std::vector<float> last_position(const HostTensor& t, int batch, int seq, int v) {
  std::vector<float> out;
  for (int b = 0; b < batch; ++b)
    out.insert(out.end(), t.data.begin() + (int64_t(b) * seq + seq - 1) * v,
               t.data.begin() + (int64_t(b) * seq + seq) * v);
  return out;
}

void check_precision(const std::string& p, DType dtype) {
  GPUVS_REQUIRE_REFERENCE(ref);
  const Shape s = shape_of(*ref);
  const int batch = int(meta(*ref, "batch")), prompt = int(meta(*ref, "prompt"));
  const int gen = int(meta(*ref, "generate"));
  const int v = s.vocab;

  // The rotary frequencies after the llama3 scaling, as transformers computed them.
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
  c.max_context = prompt + gen;
  Decoder d(c, 0);
  d.set_weights(weights_of(*ref, s));
  std::vector<int32_t> ids;
  for (float x : ref->at("input_ids").data)
    ids.push_back(int32_t(x));
  d.set_prompt(ids);

  const std::vector<float> torch_p =
      last_position(ref->at(p + "/prefill_logits"), batch, prompt, v);
  const std::vector<float> torch_32 =
      last_position(ref->at("fp32/prefill_logits"), batch, prompt, v);
  const int64_t n = int64_t(batch) * v;
  // PyTorch's own error at this precision (0 for fp32, where FP32's bound stands).
  const double yard_rel = p == "fp32" ? 0.0 : rel_l2(torch_p.data(), torch_32.data(), n);
  const double yard_abs = p == "fp32" ? 0.0 : max_abs(torch_p.data(), torch_32.data(), n);
  constexpr double kFp32Rel = 1e-4;  // summation order only (cuBLASLt and row kernels)
  const double bound_vs_fp32 = std::max(2.0 * yard_rel, kFp32Rel);
  const double bound_vs_p = std::max(3.0 * yard_rel, kFp32Rel);
  const double tie = std::max(2.0 * yard_abs, 1e-3);

  d.prefill();
  const std::vector<float> got = d.logits();
  const double prefill_vs_32 = rel_l2(got.data(), torch_32.data(), n);
  const double prefill_vs_p = rel_l2(got.data(), torch_p.data(), n);
  EXPECT_LT(prefill_vs_32, bound_vs_fp32) << p << " prefill logits against PyTorch fp32";
  EXPECT_LT(prefill_vs_p, bound_vs_p) << p << " prefill logits against PyTorch " << p;

  const HostTensor& gen_tokens = ref->at(p + "/generated");     // (B, G)
  const HostTensor& step_logits = ref->at(p + "/step_logits");  // (G, B, V)
  std::vector<int> matched(size_t(batch), gen);                 // steps equal per sequence
  double worst_step = 0;
  for (int i = 0; i < gen; ++i) {
    if (i > 0) d.decode_step();
    const std::vector<int32_t> next = d.next_tokens();
    const std::vector<float> lg = d.logits();
    for (int b = 0; b < batch; ++b) {
      if (matched[size_t(b)] < i) continue;  // diverged earlier: the sequences differ
      const float* want = step_logits.data.data() + (int64_t(i) * batch + b) * v;
      const double e = rel_l2(lg.data() + int64_t(b) * v, want, v);
      worst_step = std::max(worst_step, e);
      EXPECT_LT(e, bound_vs_p) << p << " sequence " << b << " step " << i << " logits";
      const int torch_token = int(gen_tokens.data[size_t(b) * gen + i]);
      if (next[size_t(b)] == torch_token) continue;
      const double margin = double(want[torch_token]) - want[next[size_t(b)]];
      if (p == "fp32") {
        ADD_FAILURE() << "fp32 sequence " << b << " step " << i << ": token " << next[size_t(b)]
                      << ", transformers " << torch_token << " (its margin " << margin << ")";
      } else {
        EXPECT_LE(std::fabs(margin), tie)
            << p << " sequence " << b << " step " << i << ": token " << next[size_t(b)]
            << ", transformers " << torch_token << ", not a near tie in PyTorch's own logits";
      }
      matched[size_t(b)] = i;  // compared no further
    }
  }
  std::string steps;
  for (int m : matched)
    steps += (steps.empty() ? "" : ", ") + std::to_string(m);
  std::printf(
      "llama reference %s: prefill rel_l2 %.3g against PyTorch fp32 (bound %.3g), %.3g against "
      "PyTorch %s (bound %.3g); PyTorch's own %s error rel_l2 %.3g, max %.3g; decode steps "
      "equal per sequence: %s of %d; worst step logits rel_l2 %.3g\n",
      p.c_str(), prefill_vs_32, bound_vs_fp32, prefill_vs_p, p.c_str(), bound_vs_p, p.c_str(),
      yard_rel, yard_abs, steps.c_str(), gen, worst_step);
  if (p == "fp32") {
    for (int m : matched)
      EXPECT_EQ(m, gen);
  }
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

}  // namespace
}  // namespace gpuvs::models::llama
