// The Llama decoder on a small shape against the plain C++ forward pass
// (models/llama/reference.h) over the decoder's own weights: the prefill's logits,
// every greedy decode step taken with the KV cache, a decode step replayed from one
// CUDA graph, and the cached decode against a full forward pass over the same tokens.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "core/error.h"
#include "gpu/device.h"
#include "gpu_test_util.h"
#include "models/llama/decoder.h"
#include "models/llama/reference.h"

namespace gpuvs::models::llama {
namespace {

// Every part of the published shapes, small: grouped-query attention (8 query heads
// on 2 key/value heads), head size 32, llama3 rotary scaling, untied embeddings.
Shape tiny(bool tied = false) {
  Shape s = *find_shape("8b");
  s.name = "tiny Llama";
  s.hidden = 256;
  s.layers = 2;
  s.heads = 8;
  s.kv_heads = 2;
  s.intermediate = 512;
  s.vocab = 512;
  s.tied_embeddings = tied;
  s.rope_original_context = 64;  // the scaled and blended frequencies within reach
  return s;
}

DecoderConfig config(DType dtype, int batch, int prompt, int context, bool tied = false) {
  DecoderConfig c;
  c.shape = tiny(tied);
  c.dtype = dtype;
  c.batch = batch;
  c.prompt = prompt;
  c.max_context = context;
  c.seed = 7;
  c.init_bound = 0.15f;  // decisive logits: the greedy choice has a margin
  return c;
}

double rel_l2(const std::vector<float>& a, const std::vector<float>& b) {
  double num = 0, den = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    num += (double(a[i]) - b[i]) * (double(a[i]) - b[i]);
    den += double(b[i]) * b[i];
  }
  return std::sqrt(num / std::max(den, 1e-30));
}

// The rows of the reference's (batch, seq, V) logits at position t.
std::vector<float> at_position(const std::vector<float>& logits, int batch, int seq, int v, int t) {
  std::vector<float> out;
  for (int b = 0; b < batch; ++b)
    out.insert(out.end(), logits.begin() + (int64_t(b) * seq + t) * v,
               logits.begin() + (int64_t(b) * seq + t + 1) * v);
  return out;
}

int argmax(const float* p, int n) {
  return int(std::max_element(p, p + n) - p);
}

std::vector<int32_t> prompt_ids(int batch, int prompt, int vocab) {
  std::vector<int32_t> ids;
  for (int i = 0; i < batch * prompt; ++i)
    ids.push_back(int32_t((i * 37 + 11) % vocab));
  return ids;
}

// Prefill, then `steps` greedy steps: after each, the logits against the reference's
// over the whole sequence so far (the tokens the GPU chose), and its choice against
// the reference's argmax.
void expect_matches_reference(DType dtype, double tol, float tie, bool tied) {
  constexpr int kBatch = 2, kPrompt = 5, kSteps = 6;
  const DecoderConfig c = config(dtype, kBatch, kPrompt, kPrompt + kSteps + 1, tied);
  Decoder d(c, 0);
  const int v = c.shape.vocab;
  std::vector<int32_t> ids = prompt_ids(kBatch, kPrompt, v);
  d.set_prompt(ids);
  const HostWeights w = d.download_weights();
  // seqs[b]: sequence b's tokens so far.
  std::vector<std::vector<int32_t>> seqs(kBatch);
  for (int b = 0; b < kBatch; ++b)
    seqs[size_t(b)].assign(ids.begin() + b * kPrompt, ids.begin() + (b + 1) * kPrompt);
  d.prefill();
  for (int step = 0; step <= kSteps; ++step) {
    const int len = kPrompt + step;
    EXPECT_EQ(d.position(), len);
    std::vector<int32_t> flat;
    for (const auto& s : seqs)
      flat.insert(flat.end(), s.begin(), s.end());
    const std::vector<float> ref =
        at_position(reference_logits(c.shape, w, flat, kBatch, len), kBatch, len, v, len - 1);
    const std::vector<float> got = d.logits();
    EXPECT_LT(rel_l2(got, ref), tol) << "after " << len << " tokens";
    const std::vector<int32_t> next = d.next_tokens();
    for (int b = 0; b < kBatch; ++b) {
      const float* r = ref.data() + int64_t(b) * v;
      const int want = argmax(r, v);
      // A different choice only where the reference all but ties (within `tie`).
      if (next[size_t(b)] != want) {
        EXPECT_LT(r[want] - r[next[size_t(b)]], tie * std::fabs(r[want]))
            << "sequence " << b << " after " << len << " tokens";
      }
      seqs[size_t(b)].push_back(next[size_t(b)]);
    }
    if (step < kSteps) d.decode_step();
  }
}

TEST(LlamaDecoder, Fp32PrefillAndCachedDecodeMatchTheReference) {
  GPUVS_REQUIRE_GPU();
  expect_matches_reference(DType::kF32, 1e-4, 1e-3f, false);
}

TEST(LlamaDecoder, TiedEmbeddingsMatchTheReference) {
  GPUVS_REQUIRE_GPU();
  expect_matches_reference(DType::kF32, 1e-4, 1e-3f, true);
}

TEST(LlamaDecoder, Bf16StaysWithinBf16sRounding) {
  GPUVS_REQUIRE_GPU();
  // Against the FP32 reference over the bf16 weights: the activations' rounding only.
  expect_matches_reference(DType::kBF16, 3e-2, 5e-2f, false);
}

// The cached decode's last logits equal a prefill over the same tokens.
TEST(LlamaDecoder, CachedDecodeEqualsAFullForwardPass) {
  GPUVS_REQUIRE_GPU();
  constexpr int kBatch = 3, kPrompt = 4, kSteps = 9;
  Decoder cached(config(DType::kF32, kBatch, kPrompt, 64), 0);
  const int v = cached.config().shape.vocab;
  std::vector<int32_t> ids = prompt_ids(kBatch, kPrompt, v);
  cached.set_prompt(ids);
  std::vector<std::vector<int32_t>> seqs(kBatch);
  for (int b = 0; b < kBatch; ++b)
    seqs[size_t(b)].assign(ids.begin() + b * kPrompt, ids.begin() + (b + 1) * kPrompt);
  cached.prefill();
  for (int i = 0; i < kSteps; ++i) {
    const std::vector<int32_t> next = cached.next_tokens();
    for (int b = 0; b < kBatch; ++b)
      seqs[size_t(b)].push_back(next[size_t(b)]);
    cached.decode_step();
  }
  const int len = kPrompt + kSteps;
  Decoder full(config(DType::kF32, kBatch, len, 64), 0);
  std::vector<int32_t> flat;
  for (const auto& s : seqs)
    flat.insert(flat.end(), s.begin(), s.end());
  full.set_prompt(flat);
  full.prefill();
  EXPECT_LT(rel_l2(cached.logits(), full.logits()), 1e-5);
  EXPECT_EQ(cached.next_tokens(), full.next_tokens());
}

// One decode step captured as a CUDA graph replays at every position: the same tokens
// and logits as the steps run one by one.
TEST(LlamaDecoder, AGraphOfOneDecodeStepReplaysAtEveryPosition) {
  GPUVS_REQUIRE_GPU();
  constexpr int kBatch = 2, kPrompt = 6, kSteps = 12;
  const DecoderConfig c = config(DType::kBF16, kBatch, kPrompt, 32);
  Decoder eager(c, 0), graphed(c, 0);
  eager.prefill();
  graphed.prefill();
  DeviceScope scope(0);
  cudaGraph_t graph = nullptr;
  cudaGraphExec_t exec = nullptr;
  ASSERT_EQ(cudaStreamBeginCapture(graphed.stream(), cudaStreamCaptureModeThreadLocal),
            cudaSuccess);
  graphed.decode_step();
  ASSERT_EQ(cudaStreamEndCapture(graphed.stream(), &graph), cudaSuccess);
  ASSERT_EQ(cudaGraphInstantiate(&exec, graph, 0), cudaSuccess);
  for (int i = 0; i < kSteps; ++i) {
    eager.decode_step();
    ASSERT_EQ(cudaGraphLaunch(exec, graphed.stream()), cudaSuccess);
    EXPECT_EQ(graphed.next_tokens(), eager.next_tokens()) << "step " << i;
  }
  EXPECT_EQ(graphed.position(), kPrompt + kSteps);
  EXPECT_EQ(graphed.logits(), eager.logits());
  cudaGraphExecDestroy(exec);
  cudaGraphDestroy(graph);
}

TEST(LlamaDecoder, AContextBeyondTheModelsIsRefused) {
  GPUVS_REQUIRE_GPU();
  DecoderConfig c = config(DType::kBF16, 1, 4, 4);
  c.max_context = c.shape.max_context + 1;
  EXPECT_THROW(Decoder(c, 0), UsageError);
  c.max_context = 2;  // shorter than the prompt
  EXPECT_THROW(Decoder(c, 0), UsageError);
}

}  // namespace
}  // namespace gpuvs::models::llama
