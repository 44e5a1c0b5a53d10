// The Llama decoder on a small shape against the plain C++ forward pass
// (models/llama/reference.h) over the decoder's own weights: the prefill's logits,
// every greedy decode step taken with the KV cache, a decode step replayed from one
// CUDA graph, and the cached decode against a full forward pass over the same tokens.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <tuple>
#include <vector>

#include "core/error.h"
#include "gpu/device.h"
#include "gpu_test_util.h"
#include "models/bert/kernels.h"
#include "models/llama/decoder.h"
#include "models/llama/kernels.h"
#include "models/llama/reference.h"
#include "models/llama/row_gemm.h"
#include "models/tensor_file.h"

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

// How a decode is held against the reference.
struct Yardstick {
  double tol;           // rel_l2 of the logits at most ...
  float tie;            // ... and a different greedy choice only within tie * |best logit|
  bool rounded = true;  // the reference rounds to E4M3 where the decoder's FP8 does
  // > 0: the bound is this times E4M3's own error at that step (the rounded reference
  // against the plain one), the logits held against the plain reference: for FP8 in
  // bf16, whose bf16 rounding moves values across E4M3's rounding boundaries.
  double e4m3_factor = 0;
};

// Prefill, then every greedy step the context holds: after each, the logits against
// the reference's over the whole sequence so far (the tokens the GPU chose), and its
// choice against the reference's argmax. Returns the largest rel_l2 seen (against the
// plain reference with e4m3_factor, E4M3's own error being the second).
std::pair<double, double> expect_matches_reference(const DecoderConfig& c, const Yardstick& y) {
  const int kBatch = c.batch, kPrompt = c.prompt;
  const int kSteps = c.max_context - c.prompt - 1;
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
  Fp8Rounding fp8;
  fp8.cache = c.fp8_cache;
  fp8.cache_scale = c.cache_scale;
  fp8.input_scales = d.fp8_input_scales();
  // The prompt went through cuBLASLt's FP8 GEMMs; the decode steps too unless the
  // few-row projections (E4M3 weights, bf16 inputs) took them.
  fp8.rounded_positions = d.use_row_gemms(true) ? kPrompt : c.max_context;
  const bool both = y.e4m3_factor > 0;
  double worst = 0, worst_e4m3 = 0;
  for (int step = 0; step <= kSteps; ++step) {
    const int len = kPrompt + step;
    EXPECT_EQ(d.position(), len);
    std::vector<int32_t> flat;
    for (const auto& s : seqs)
      flat.insert(flat.end(), s.begin(), s.end());
    auto ref_of = [&](const Fp8Rounding& r) {
      return at_position(reference_logits(c.shape, w, flat, kBatch, len, r), kBatch, len, v,
                         len - 1);
    };
    const std::vector<float> ref = ref_of(y.rounded && !both ? fp8 : Fp8Rounding{});
    const std::vector<float> got = d.logits();
    const double err = rel_l2(got, ref);
    worst = std::max(worst, err);
    if (both) {
      const double e4m3 = rel_l2(ref_of(fp8), ref);
      worst_e4m3 = std::max(worst_e4m3, e4m3);
      EXPECT_LT(err, y.e4m3_factor * e4m3) << "after " << len << " tokens";
    } else {
      EXPECT_LT(err, y.tol) << "after " << len << " tokens";
    }
    const std::vector<int32_t> next = d.next_tokens();
    for (int b = 0; b < kBatch; ++b) {
      const float* r = ref.data() + int64_t(b) * v;
      const int want = argmax(r, v);
      // A different choice only where the reference all but ties (within `tie`).
      if (next[size_t(b)] != want) {
        EXPECT_LT(r[want] - r[next[size_t(b)]], y.tie * std::fabs(r[want]))
            << "sequence " << b << " after " << len << " tokens";
      }
      seqs[size_t(b)].push_back(next[size_t(b)]);
    }
    if (step < kSteps) d.decode_step();
  }
  return {worst, worst_e4m3};
}

// Batch 2, a prompt of 5 and 6 cached steps.
DecoderConfig reference_case(DType dtype, bool tied = false) {
  return config(dtype, 2, 5, 12, tied);
}

TEST(LlamaDecoder, Fp32PrefillAndCachedDecodeMatchTheReference) {
  GPUVS_REQUIRE_GPU();
  expect_matches_reference(reference_case(DType::kF32), {1e-4, 1e-3f});
}

TEST(LlamaDecoder, TiedEmbeddingsMatchTheReference) {
  GPUVS_REQUIRE_GPU();
  expect_matches_reference(reference_case(DType::kF32, true), {1e-4, 1e-3f});
}

TEST(LlamaDecoder, Bf16StaysWithinBf16sRounding) {
  GPUVS_REQUIRE_GPU();
  // Against the FP32 reference over the bf16 weights: the activations' rounding only.
  expect_matches_reference(reference_case(DType::kBF16), {3e-2, 5e-2f});
}

// FP8 (DecoderConfig::fp8_weights, fp8_cache) with FP32 activations against the
// reference over the decoder's own E4M3 weights times their scales (download_weights),
// rounding to E4M3 where the decoder does: the GEMM inputs with its calibrated scales,
// the cache's keys and values with the cache's scale. The cache alone meets the same
// values at the same rounding: what is left is FP32's, and the plain reference (nothing
// rounded) is many times farther. The FP8 GEMMs' tensor-core sums are not exact FP32
// even without fast accumulation (on the H200: rounded 0.07-0.08, plain 0.24-0.26), so
// some inputs of the next projection cross an E4M3 boundary the reference's did not:
// with FP8 weights the rounded reference must still be 2.5x closer than the plain one.
TEST(LlamaDecoder, Fp8ComputesTheQuantisedModel) {
  GPUVS_REQUIRE_GPU();
  GPUVS_REQUIRE_FP8();
  struct Case {
    const char* name;
    bool weights, cache;
    float scale;
    double tol;
    float tie;
    double apart;  // the plain reference at least this many times farther
  };
  for (const Case& k : {Case{"weights", true, false, 1.0f, 0.12, 0.08f, 2.5},
                        Case{"cache", false, true, 1.0f, 2e-3, 1e-2f, 5},
                        Case{"cache at 1/4", false, true, 0.25f, 2e-3, 1e-2f, 5},
                        Case{"weights and cache", true, true, 1.0f, 0.12, 0.08f, 2.5}}) {
    SCOPED_TRACE(k.name);
    DecoderConfig c = reference_case(DType::kF32);
    c.fp8_weights = k.weights;
    c.fp8_cache = k.cache;
    c.cache_scale = k.scale;
    const double rounded = expect_matches_reference(c, {k.tol, k.tie}).first;
    const double plain = expect_matches_reference(c, {0.4, 0.3f, false}).first;
    RecordProperty(std::string("rel_l2 ") + k.name,
                   std::to_string(rounded) + " rounded, " + std::to_string(plain) + " not");
    EXPECT_GT(plain, k.apart * rounded);
  }
}

// FP8 as `--precision fp8 [--kv-cache fp8]` runs it, in bf16: bf16's rounding moves
// some values across E4M3's rounding boundaries, so no reference rounds exactly where
// the decoder did; the logits stay within twice E4M3's own error of the quantised model
// (the rounded reference against the plain one, step by step). Batch 2 decodes with the
// row kernels (E4M3 weights, bf16 inputs), batch 6 through cuBLASLt.
TEST(LlamaDecoder, Fp8InBf16StaysWithinE4m3sError) {
  GPUVS_REQUIRE_GPU();
  GPUVS_REQUIRE_FP8();
  for (int batch : {2, 6})
    for (const bool cache : {false, true}) {
      SCOPED_TRACE("batch " + std::to_string(batch) + (cache ? ", FP8 cache" : ""));
      DecoderConfig c = config(DType::kBF16, batch, 5, 12);
      c.fp8_weights = true;
      c.fp8_cache = cache;
      const auto [err, e4m3] = expect_matches_reference(c, {0, 0.15f, true, 2.0});
      RecordProperty("rel_l2_batch_" + std::to_string(batch) + (cache ? "_cache" : ""),
                     std::to_string(err) + " against E4M3's " + std::to_string(e4m3));
    }
  DecoderConfig c = reference_case(DType::kBF16);
  c.fp8_cache = true;
  const auto [err, e4m3] = expect_matches_reference(c, {0, 0.15f, true, 2.0});
  RecordProperty("rel_l2_cache_only",
                 std::to_string(err) + " against E4M3's " + std::to_string(e4m3));
}

// The E4M3 weights are the bf16 decoder's of the same seed, rounded: within E4M3's
// relative precision (one scale per tensor, from its amax), everything else identical.
TEST(LlamaDecoder, Fp8WeightsAreTheBf16OnesRounded) {
  GPUVS_REQUIRE_GPU();
  GPUVS_REQUIRE_FP8();
  DecoderConfig c = config(DType::kBF16, 1, 4, 8);
  Decoder bf16(c, 0);
  c.fp8_weights = true;
  Decoder fp8(c, 0);
  const HostWeights a = bf16.download_weights(), b = fp8.download_weights();
  EXPECT_EQ(a.embed, b.embed);
  EXPECT_EQ(a.lm_head, b.lm_head);
  EXPECT_EQ(a.final_norm, b.final_norm);
  ASSERT_EQ(a.layers.size(), b.layers.size());
  for (size_t l = 0; l < a.layers.size(); ++l) {
    const HostWeights::Layer &x = a.layers[l], &y = b.layers[l];
    EXPECT_EQ(x.attn_norm, y.attn_norm);
    EXPECT_EQ(x.mlp_norm, y.mlp_norm);
    for (const auto& [name, p, q] :
         {std::tuple{"wq", &x.wq, &y.wq}, std::tuple{"wk", &x.wk, &y.wk},
          std::tuple{"wv", &x.wv, &y.wv}, std::tuple{"wo", &x.wo, &y.wo},
          std::tuple{"gate", &x.gate, &y.gate}, std::tuple{"up", &x.up, &y.up},
          std::tuple{"down", &x.down, &y.down}}) {
      const double err = rel_l2(*q, *p);
      EXPECT_LT(err, 0.04) << "layer " << l << " " << name;  // 2^-4 / sqrt(3) = 0.036
      EXPECT_GT(err, 0.005) << "layer " << l << " " << name << ": not rounded to E4M3?";
    }
  }
  // set_weights() rounds host weights the same way: the bf16 weights put into the FP8
  // decoder come back as its own.
  fp8.set_weights(a);
  const HostWeights again = fp8.download_weights();
  EXPECT_EQ(again.layers[1].down, b.layers[1].down);
  EXPECT_EQ(again.layers[0].wk, b.layers[0].wk);
}

// Decoder::memory_bytes() is what the constructor takes (the batch search's figure),
// whatever the precision and batch.
TEST(LlamaDecoder, MemoryBytesIsWhatTheConstructorTakes) {
  GPUVS_REQUIRE_GPU();
  DeviceScope scope(0);
  std::vector<DecoderConfig> cases = {config(DType::kBF16, 1, 16, 64),
                                      config(DType::kF32, 64, 100, 300)};
  if (compute_capability() >= 89) {
    DecoderConfig c = config(DType::kBF16, 33, 64, 4096);
    c.fp8_weights = c.fp8_cache = true;
    cases.push_back(c);
  }
  for (const DecoderConfig& c : cases) {
    // Built once first: the kernels cuBLASLt loads on first use stay loaded.
    { Decoder warm(c, 0); }
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    size_t before = 0, after = 0, total = 0;
    ASSERT_EQ(cudaMemGetInfo(&before, &total), cudaSuccess);
    const double planned = double(Decoder::memory_bytes(c, 0));
    {
      Decoder d(c, 0);
      ASSERT_EQ(cudaMemGetInfo(&after, &total), cudaSuccess);
    }
    const double used = double(before) - double(after);
    // The allocator's 2 MB pages and cuBLASLt's handle; the planned figure includes the
    // E4M3 weights' staging, freed by then.
    EXPECT_NEAR(used, planned, 64.0 * (1 << 20)) << "batch " << c.batch;
    EXPECT_GT(planned, 0.5 * used);
  }
  // More sequences, more memory: the cache and the activations grow with the batch.
  DecoderConfig small = config(DType::kBF16, 1, 128, 1024), big = small;
  big.batch = 100;
  EXPECT_GT(Decoder::memory_bytes(big, 0),
            Decoder::memory_bytes(small, 0) + 99 * 2 * 2 * 1024 * 128);
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

// The few-row projection against a plain FP64 one, FP32 throughout: every input kind,
// 1 to 4 rows, an N that is no multiple of a block's 16 outputs, and the residual
// read from the output it overwrites.
TEST(LlamaRowGemm, EveryInputKindMatchesAPlainProduct) {
  GPUVS_REQUIRE_GPU();
  constexpr int64_t kK = 384, kN = 83;
  constexpr float kEps = 1e-5f;
  auto value = [](int64_t i, int salt) {
    return float((i * 7919 + salt * 104729) % 2001) / 1000.0f - 1.0f;
  };
  DeviceScope scope(0);
  for (RowInput in : {RowInput::kPlain, RowInput::kRmsNorm}) {
    for (int rows = 1; rows <= 4; ++rows) {
      const int64_t xk = kK;
      std::vector<float> x(size_t(rows * xk)), w(size_t(kN * kK)), norm(static_cast<size_t>(kK)),
          res(size_t(rows * kN));
      for (size_t i = 0; i < x.size(); ++i)
        x[i] = value(int64_t(i), 1);
      for (size_t i = 0; i < w.size(); ++i)
        w[i] = value(int64_t(i), 2);
      for (size_t i = 0; i < norm.size(); ++i)
        norm[i] = 1.0f + 0.5f * value(int64_t(i), 3);
      for (size_t i = 0; i < res.size(); ++i)
        res[i] = value(int64_t(i), 4);
      std::vector<double> want(res.size());
      for (int r = 0; r < rows; ++r) {
        std::vector<double> input(static_cast<size_t>(kK));
        double sq = 0;
        for (int64_t k = 0; k < kK; ++k)
          sq += double(x[size_t(r * xk + k)]) * x[size_t(r * xk + k)];
        const double rstd = 1.0 / std::sqrt(sq / double(kK) + kEps);
        for (int64_t k = 0; k < kK; ++k) {
          const double v = x[size_t(r * xk + k)];
          if (in == RowInput::kPlain) input[size_t(k)] = v;
          if (in == RowInput::kRmsNorm) input[size_t(k)] = norm[size_t(k)] * v * rstd;
        }
        for (int64_t n = 0; n < kN; ++n) {
          double acc = res[size_t(r * kN + n)];
          for (int64_t k = 0; k < kK; ++k)
            acc += input[size_t(k)] * w[size_t(n * kK + k)];
          want[size_t(r * kN + n)] = acc;
        }
      }
      DeviceBuffer dx(x.size() * 4), dw(w.size() * 4), dn(norm.size() * 4), dout(res.size() * 4);
      ASSERT_EQ(cudaMemcpy(dx.get(), x.data(), x.size() * 4, cudaMemcpyHostToDevice), cudaSuccess);
      ASSERT_EQ(cudaMemcpy(dw.get(), w.data(), w.size() * 4, cudaMemcpyHostToDevice), cudaSuccess);
      ASSERT_EQ(cudaMemcpy(dn.get(), norm.data(), norm.size() * 4, cudaMemcpyHostToDevice),
                cudaSuccess);
      ASSERT_EQ(cudaMemcpy(dout.get(), res.data(), res.size() * 4, cudaMemcpyHostToDevice),
                cudaSuccess);
      ASSERT_TRUE(row_gemm_fits(rows, kK, DType::kF32));
      RowGemmArgs a;
      a.rows = rows;
      a.k = kK;
      a.n = kN;
      a.dtype = DType::kF32;
      a.input = in;
      a.x = dx.get();
      a.norm_weight = dn.get();
      a.eps = kEps;
      a.w = dw.get();
      a.residual = dout.get();
      a.out = dout.get();
      row_gemm(a, true, nullptr);
      ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
      std::vector<float> got(res.size());
      ASSERT_EQ(cudaMemcpy(got.data(), dout.get(), got.size() * 4, cudaMemcpyDeviceToHost),
                cudaSuccess);
      double worst = 0;
      for (size_t i = 0; i < got.size(); ++i)
        worst = std::max(worst, std::fabs(got[i] - want[i]) / (1.0 + std::fabs(want[i])));
      EXPECT_LT(worst, 1e-4) << "input kind " << int(in) << ", " << rows << " rows";
    }
  }
  EXPECT_FALSE(row_gemm_fits(5, 256, DType::kBF16));
  EXPECT_FALSE(row_gemm_fits(1, 100, DType::kBF16));   // not a whole number of 16-byte loads
  EXPECT_FALSE(row_gemm_fits(4, 14336, DType::kF32));  // 229 KB of staged rows
}

// The few-row projection with E4M3 weights and bf16 inputs against a plain FP64
// product of the same values: 1 to 4 rows, an N that is no multiple of a block's
// outputs, an FP32 output (the sums' order only) and a bf16 one with the residual.
TEST(LlamaRowGemm, Fp8WeightsMatchAPlainProduct) {
  GPUVS_REQUIRE_GPU();
  constexpr int64_t kK = 512, kN = 83;
  constexpr float kScale = 0.37f;
  auto bf16_bits = [](float f) {  // round to nearest even
    uint32_t u;
    std::memcpy(&u, &f, 4);
    return uint16_t((u + 0x7FFFu + ((u >> 16) & 1u)) >> 16);
  };
  DeviceScope scope(0);
  for (int rows = 1; rows <= 4; ++rows) {
    for (bool residual : {false, true}) {
      std::vector<uint16_t> x(size_t(rows * kK)), res(size_t(rows * kN));
      std::vector<uint8_t> w(size_t(kN * kK));
      for (size_t i = 0; i < x.size(); ++i)
        x[i] = bf16_bits(float(int64_t(i * 7919 % 2001)) / 1000.0f - 1.0f);
      for (size_t i = 0; i < w.size(); ++i) {
        const uint8_t b = uint8_t((i * 104729 + 17) % 256);
        w[i] = (b & 0x7F) == 0x7F ? uint8_t(b & 0xF0) : b;  // no NaN patterns
      }
      for (size_t i = 0; i < res.size(); ++i)
        res[i] = bf16_bits(float(int64_t(i * 31 % 97)) / 50.0f - 1.0f);
      std::vector<double> want(res.size());
      for (int r = 0; r < rows; ++r)
        for (int64_t n = 0; n < kN; ++n) {
          double acc = 0;
          for (int64_t k = 0; k < kK; ++k)
            acc += double(bfloat16_to_float(x[size_t(r * kK + k)])) *
                   e4m3_to_float(w[size_t(n * kK + k)]);
          acc *= kScale;
          if (residual) acc += bfloat16_to_float(res[size_t(r * kN + n)]);
          want[size_t(r * kN + n)] = acc;
        }
      DeviceBuffer dx(x.size() * 2), dw(w.size()), dscale(4), dout(res.size() * 4);
      ASSERT_EQ(cudaMemcpy(dx.get(), x.data(), x.size() * 2, cudaMemcpyHostToDevice), cudaSuccess);
      ASSERT_EQ(cudaMemcpy(dw.get(), w.data(), w.size(), cudaMemcpyHostToDevice), cudaSuccess);
      ASSERT_EQ(cudaMemcpy(dscale.get(), &kScale, 4, cudaMemcpyHostToDevice), cudaSuccess);
      if (residual) {
        ASSERT_EQ(cudaMemcpy(dout.get(), res.data(), res.size() * 2, cudaMemcpyHostToDevice),
                  cudaSuccess);
      }
      ASSERT_TRUE(row_gemm_fits(rows, kK, DType::kBF16, true));
      RowGemmArgs a;
      a.rows = rows;
      a.k = kK;
      a.n = kN;
      a.dtype = DType::kBF16;
      a.x = dx.get();
      a.w = dw.get();
      a.w_fp8 = true;
      a.w_scale = dscale.as<float>();
      a.residual = residual ? dout.get() : nullptr;
      a.out = dout.get();
      a.out_f32 = !residual;
      row_gemm(a, true, nullptr);
      ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
      std::vector<float> got(res.size());
      if (residual) {
        std::vector<uint16_t> raw(res.size());
        ASSERT_EQ(cudaMemcpy(raw.data(), dout.get(), raw.size() * 2, cudaMemcpyDeviceToHost),
                  cudaSuccess);
        for (size_t i = 0; i < raw.size(); ++i)
          got[i] = bfloat16_to_float(raw[i]);
      } else {
        ASSERT_EQ(cudaMemcpy(got.data(), dout.get(), got.size() * 4, cudaMemcpyDeviceToHost),
                  cudaSuccess);
      }
      double worst = 0;
      for (size_t i = 0; i < got.size(); ++i)
        worst = std::max(worst, std::fabs(got[i] - want[i]) / (1.0 + std::fabs(want[i])));
      // bf16's output rounding (2^-9 relative), or the FP32 sums' order.
      EXPECT_LT(worst, residual ? 4e-3 : 1e-5) << rows << " rows, residual " << residual;
    }
  }
  EXPECT_FALSE(row_gemm_fits(1, 264, DType::kBF16, true));  // K not a whole 16-byte load of W
  EXPECT_FALSE(row_gemm_fits(1, 512, DType::kF32, true));   // FP8 weights take bf16 inputs
}

// The SwiGLU and rotary epilogues against the plain projection followed by the kernels
// they replace, swiglu() and rope_and_cache(): bit for bit, in bf16 and FP32, bf16 with
// E4M3 weights and with the E4M3 cache, 1 to 4 rows; and the pairs they refuse.
TEST(LlamaRowGemm, EpiloguesWriteWhatTheSeparateKernelsWrite) {
  GPUVS_REQUIRE_GPU();
  constexpr int kHeads = 4, kKv = 2, kD = 64, kInter = 192, kContext = 8, kPos = 5;
  constexpr int64_t kK = 256, kQkv = (kHeads + 2 * kKv) * kD, kKvWidth = kKv * kD;
  auto value = [](int64_t i, int salt) {
    return float((i * 7919 + salt * 104729) % 2001) / 1000.0f - 1.0f;
  };
  DeviceScope scope(0);
  Stream stream;
  const cudaStream_t st = stream.get();
  // n values of `salt` in dtype on the device.
  auto upload = [&](int64_t n, int salt, DType dtype, float scale) {
    DeviceBuffer b(size_t(n) * dtype_size(dtype));
    std::vector<float> f(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i)
      f[size_t(i)] = scale * value(i, salt);
    DeviceBuffer tmp(f.size() * 4);
    EXPECT_EQ(cudaMemcpy(tmp.get(), f.data(), f.size() * 4, cudaMemcpyHostToDevice), cudaSuccess);
    bert::cast_from_float(tmp.as<float>(), b.get(), n, dtype, st);
    EXPECT_EQ(cudaStreamSynchronize(st), cudaSuccess);
    return b;
  };
  auto bytes_of = [](const DeviceBuffer& b) {
    std::vector<char> h(b.bytes());
    EXPECT_EQ(cudaMemcpy(h.data(), b.get(), h.size(), cudaMemcpyDeviceToHost), cudaSuccess);
    return h;
  };
  DeviceBuffer pos(4), freq(kD / 2 * 4), scale(4);
  const int p0 = kPos;
  std::vector<float> inv_freq(kD / 2);
  for (int i = 0; i < kD / 2; ++i)
    inv_freq[size_t(i)] = float(std::pow(10000.0, -2.0 * i / kD));
  const float one = 0.25f;
  ASSERT_EQ(cudaMemcpy(pos.get(), &p0, 4, cudaMemcpyHostToDevice), cudaSuccess);
  ASSERT_EQ(cudaMemcpy(freq.get(), inv_freq.data(), freq.bytes(), cudaMemcpyHostToDevice),
            cudaSuccess);
  ASSERT_EQ(cudaMemcpy(scale.get(), &one, 4, cudaMemcpyHostToDevice), cudaSuccess);
  struct Case {
    DType dtype;
    bool w_fp8, fp8_cache;
  };
  for (const Case c : {Case{DType::kBF16, false, false}, Case{DType::kF32, false, false},
                       Case{DType::kBF16, true, false}, Case{DType::kBF16, false, true}}) {
    for (int rows = 1; rows <= 4; ++rows) {
      const std::string at = std::string(c.dtype == DType::kF32 ? "fp32" : "bf16") +
                             (c.w_fp8 ? " e4m3 weights" : "") + (c.fp8_cache ? " e4m3 cache" : "") +
                             ", " + std::to_string(rows) + " rows";
      const size_t es = dtype_size(c.dtype);
      DeviceBuffer x = upload(rows * kK, 1, c.dtype, 1.0f), norm = upload(kK, 3, c.dtype, 1.0f);
      // E4M3 weights: a spread of finite byte patterns.
      auto weights = [&](int64_t n, int salt) {
        if (!c.w_fp8) return upload(n, salt, c.dtype, 0.1f);
        std::vector<uint8_t> w(static_cast<size_t>(n));
        for (size_t i = 0; i < w.size(); ++i) {
          const uint8_t b = uint8_t((i * 104729 + size_t(salt) * 17) % 256);
          w[i] = (b & 0x7F) == 0x7F ? uint8_t(b & 0xF0) : b;  // no NaN patterns
        }
        DeviceBuffer d(w.size());
        EXPECT_EQ(cudaMemcpy(d.get(), w.data(), w.size(), cudaMemcpyHostToDevice), cudaSuccess);
        return d;
      };
      DeviceBuffer wqkv = weights(kQkv * kK, 2), wgu = weights(2 * kInter * kK, 4);
      RowGemmArgs a;
      a.rows = rows;
      a.k = kK;
      a.dtype = c.dtype;
      a.input = RowInput::kRmsNorm;
      a.x = x.get();
      a.norm_weight = norm.get();
      a.w_fp8 = c.w_fp8;
      a.w_scale = scale.as<float>();
      // SwiGLU: the gate and up projection, then swiglu().
      a.w = wgu.get();
      a.n = 2 * kInter;
      DeviceBuffer gu(size_t(rows) * 2 * kInter * es), want(size_t(rows) * kInter * es),
          got(want.bytes());
      a.out = gu.get();
      row_gemm(a, true, st);
      swiglu(gu.get(), want.get(), rows, kInter, c.dtype, st);
      a.output = RowOutput::kSwiGLU;
      a.out = got.get();
      row_gemm(a, true, st);
      ASSERT_EQ(cudaStreamSynchronize(st), cudaSuccess);
      EXPECT_EQ(bytes_of(got), bytes_of(want)) << "SwiGLU, " << at;
      // The rotary embedding and the caches: the QKV projection, then rope_and_cache().
      const size_t cache_bytes = size_t(rows) * kContext * kKvWidth * (c.fp8_cache ? 1 : es);
      DeviceBuffer qkv_want(size_t(rows) * kQkv * es), qkv_got(qkv_want.bytes());
      DeviceBuffer kc_want(cache_bytes), vc_want(cache_bytes), kc_got(cache_bytes),
          vc_got(cache_bytes);
      for (auto* b : {&kc_want, &vc_want, &kc_got, &vc_got})
        ASSERT_EQ(cudaMemsetAsync(b->get(), 0, b->bytes(), st), cudaSuccess);
      a.w = wqkv.get();
      a.n = kQkv;
      a.output = RowOutput::kPlain;
      a.out = qkv_want.get();
      row_gemm(a, true, st);
      RopeCacheArgs r;
      r.batch = rows;
      r.seq = 1;
      r.heads = kHeads;
      r.kv_heads = kKv;
      r.head_dim = kD;
      r.max_context = kContext;
      r.dtype = c.dtype;
      r.pos = pos.as<int>();
      r.inv_freq = freq.as<float>();
      r.qkv = qkv_want.get();
      r.k_cache = kc_want.get();
      r.v_cache = vc_want.get();
      r.fp8_cache = c.fp8_cache;
      r.cache_scale = 0.5f;
      rope_and_cache(r, st);
      a.output = RowOutput::kRopeCache;
      a.out = qkv_got.get();
      a.rope.heads = kHeads;
      a.rope.kv_heads = kKv;
      a.rope.head_dim = kD;
      a.rope.max_context = kContext;
      a.rope.pos = pos.as<int>();
      a.rope.inv_freq = freq.as<float>();
      a.rope.k_cache = kc_got.get();
      a.rope.v_cache = vc_got.get();
      a.rope.fp8_cache = c.fp8_cache;
      a.rope.cache_scale = 0.5f;
      row_gemm(a, true, st);
      ASSERT_EQ(cudaStreamSynchronize(st), cudaSuccess);
      EXPECT_EQ(bytes_of(qkv_got), bytes_of(qkv_want)) << "rotated QKV, " << at;
      EXPECT_EQ(bytes_of(kc_got), bytes_of(kc_want)) << "key cache, " << at;
      EXPECT_EQ(bytes_of(vc_got), bytes_of(vc_want)) << "value cache, " << at;
      const std::vector<char> kc = bytes_of(kc_got);
      EXPECT_NE(std::count(kc.begin(), kc.end(), char(0)), std::ptrdiff_t(kc.size()))
          << "nothing written, " << at;
      // What the epilogues refuse: a residual, another input, a width of other heads.
      RowGemmArgs bad = a;
      bad.residual = qkv_got.get();
      EXPECT_THROW(row_gemm(bad, true, st), Error);
      bad = a;
      bad.input = RowInput::kPlain;
      EXPECT_THROW(row_gemm(bad, true, st), Error);
      bad = a;
      bad.n = kQkv - kD;
      EXPECT_THROW(row_gemm(bad, true, st), Error);
    }
  }
}

// The few-row projections at the decode step's shapes of the 8B and 1B models, bf16
// and E4M3 weights, one row: each a chain of dependent launches in one CUDA graph, as a
// decode step runs them, over copies of W that together exceed the L2 cache, so that
// every launch streams its weights from HBM. Prints each one's time and its weights'
// bytes per second; the replayed chain must compute what one plain launch does.
TEST(LlamaRowGemm, PrintsBandwidthAtTheDecodeShapes) {
  GPUVS_REQUIRE_GPU();
  DeviceScope scope(0);
  struct Case {
    const char* size;
    const char* what;
    RowInput in;
    bool residual, f32;
  };
  const Case cases[] = {{"8b", "qkv", RowInput::kRmsNorm, false, false},
                        {"8b", "attention.output", RowInput::kPlain, true, false},
                        {"8b", "gate.and.up", RowInput::kRmsNorm, false, false},
                        {"8b", "down", RowInput::kPlain, true, false},
                        {"8b", "lm.head", RowInput::kRmsNorm, false, true},
                        {"1b", "qkv", RowInput::kRmsNorm, false, false},
                        {"1b", "attention.output", RowInput::kPlain, true, false},
                        {"1b", "gate.and.up", RowInput::kRmsNorm, false, false},
                        {"1b", "down", RowInput::kPlain, true, false}};
  constexpr size_t kStreamBytes = size_t(512) << 20;  // ten times the H200's L2
  constexpr int kReplays = 5;
  Stream stream;
  const cudaStream_t st = stream.get();
  DeviceBuffer scale(4);
  const float one = 1.0f;
  ASSERT_EQ(cudaMemcpy(scale.get(), &one, 4, cudaMemcpyHostToDevice), cudaSuccess);
  for (const Case& c : cases) {
    const Shape s = *find_shape(c.size);
    const std::string what = c.what;
    const int64_t k = what == "down" ? s.intermediate : s.hidden;
    const int64_t n = what == "qkv"           ? s.hidden + 2 * int64_t(s.kv_dim())
                      : what == "gate.and.up" ? 2 * int64_t(s.intermediate)
                      : what == "lm.head"     ? s.vocab
                                              : s.hidden;
    for (const bool fp8 : {false, true}) {
      if (fp8 && c.f32) continue;  // the LM head stays bf16
      const size_t w_bytes = size_t(n * k) * (fp8 ? 1 : 2);
      const int copies = int(std::max<size_t>(2, (kStreamBytes + w_bytes - 1) / w_bytes));
      DeviceBuffer w(w_bytes * size_t(copies));
      DeviceBuffer x(size_t(2 * k) * 2), norm(size_t(k) * 2);
      DeviceBuffer out(size_t(n) * (c.f32 ? 4 : 2)), once(out.bytes()), res(size_t(n) * 2);
      // Small values (bf16 0x3C3C is 0.0115, E4M3 0x3C is 1.5 times the scale 1): the
      // sums stay finite whatever the order.
      ASSERT_EQ(cudaMemsetAsync(w.get(), 0x3C, w.bytes(), st), cudaSuccess);
      ASSERT_EQ(cudaMemsetAsync(x.get(), 0x3C, x.bytes(), st), cudaSuccess);
      ASSERT_EQ(cudaMemsetAsync(norm.get(), 0x3F, norm.bytes(), st), cudaSuccess);
      ASSERT_EQ(cudaMemsetAsync(res.get(), 0x3C, res.bytes(), st), cudaSuccess);
      ASSERT_TRUE(row_gemm_fits(1, k, DType::kBF16, fp8));
      RowGemmArgs a;
      a.k = k;
      a.n = n;
      a.input = c.in;
      a.x = x.get();
      a.norm_weight = norm.get();
      a.w_fp8 = fp8;
      a.w_scale = scale.as<float>();
      a.out_f32 = c.f32;
      auto run = [&](int i, void* o) {
        a.w = static_cast<const char*>(w.get()) + size_t(i % copies) * w_bytes;
        a.out = o;
        // A residual of its own, not the output: every launch computes the same sums.
        a.residual = c.residual ? res.get() : nullptr;
        row_gemm(a, true, st);
      };
      run(copies - 1, once.get());
      const int launches = std::max(copies, 32);
      GraphExec graph(st, [&](cudaStream_t) {
        for (int i = 0; i < launches; ++i)
          run(i, out.get());
      });
      graph.launch(st);  // warm-up
      Event start, stop;
      start.record(st);
      for (int r = 0; r < kReplays; ++r)
        graph.launch(st);
      stop.record(st);
      stop.synchronize();
      const double per_launch = stop.seconds_since(start) / (kReplays * launches);
      std::printf("row-gemm-bandwidth %s %s %s weights, 1 row, K %lld N %lld: %.2f us, %.2f TB/s\n",
                  c.size, c.what, fp8 ? "e4m3" : "bf16", static_cast<long long>(k),
                  static_cast<long long>(n), per_launch * 1e6,
                  double(w_bytes) / per_launch * 1e-12);
      std::vector<char> got(out.bytes()), want(out.bytes());
      ASSERT_EQ(cudaMemcpy(got.data(), out.get(), got.size(), cudaMemcpyDeviceToHost), cudaSuccess);
      ASSERT_EQ(cudaMemcpy(want.data(), once.get(), want.size(), cudaMemcpyDeviceToHost),
                cudaSuccess);
      // The last launch read copy (launches - 1) % copies; every copy holds the same bytes.
      EXPECT_EQ(got, want) << c.size << " " << c.what;
    }
  }
}

// Decode steps through the few-row projections and through cuBLASLt's GEMMs choose
// the same tokens, at every batch the former takes; the profile names every region.
TEST(LlamaDecoder, RowKernelsAndCublasLtDecodeTheSame) {
  GPUVS_REQUIRE_GPU();
  constexpr int kPrompt = 5, kSteps = 8;
  for (DType dtype : {DType::kF32, DType::kBF16}) {
    for (int batch = 1; batch <= 4; ++batch) {
      DecoderConfig c = config(dtype, batch, kPrompt, kPrompt + kSteps + 1);
      Decoder rows(c, 0);
      c.row_gemms = false;
      Decoder lt(c, 0);
      ASSERT_TRUE(rows.use_row_gemms(true));
      ASSERT_FALSE(lt.use_row_gemms(false));
      rows.prefill();
      lt.prefill();
      if (batch == 1) rows.enable_profile(true);
      for (int i = 0; i < kSteps; ++i) {
        rows.decode_step();
        lt.decode_step();
        const std::string at = "batch " + std::to_string(batch) + ", step " + std::to_string(i);
        ASSERT_EQ(rows.next_tokens(), lt.next_tokens()) << at;
        EXPECT_LT(rel_l2(rows.logits(), lt.logits()), dtype == DType::kF32 ? 1e-5 : 2e-2) << at;
      }
      if (batch != 1) continue;
      const auto regions = rows.profile_times();
      rows.enable_profile(false);
      std::vector<std::string> names;
      for (const auto& [name, seconds] : regions) {
        names.push_back(name);
        EXPECT_GT(seconds, 0.0) << name;
      }
      EXPECT_EQ(names, (std::vector<std::string>{"embed", "qkv", "attention", "attention output",
                                                 "gate and up", "down", "lm head"}));
    }
  }
}

}  // namespace
}  // namespace gpuvs::models::llama
