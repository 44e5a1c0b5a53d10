// The Llama shapes against the parameter counts Meta publishes for them, and the
// arithmetic built on a shape: training FLOPs per token (the formula a PyTorch peer's
// MFU was computed with), the KV cache per token, a decode step's bytes, AdamW's
// state.
#include <gtest/gtest.h>

#include <cmath>
#include <numbers>

#include "models/llama/shapes.h"

namespace gpuvs::models::llama {
namespace {

TEST(LlamaShapes, ParameterCountsAreThePublishedOnes) {
  // The safetensors totals of the hub's checkpoints: 1,235,814,400 (Llama 3.2 1B,
  // tied embeddings), 3,212,749,824 (3.2 3B, tied), 8,030,261,248 (3.1 8B, untied).
  EXPECT_EQ(parameter_count(*find_shape("1b")), 1'235'814'400);
  EXPECT_EQ(parameter_count(*find_shape("3b")), 3'212'749'824);
  EXPECT_EQ(parameter_count(*find_shape("8b")), 8'030'261'248);
}

TEST(LlamaShapes, GroupedQueryAttentionAndHeadWidth) {
  const Shape s = *find_shape("3b");
  EXPECT_EQ(s.head_dim(), 128);
  EXPECT_EQ(s.kv_dim(), 1024);  // 8 KV heads for 24 query heads
  EXPECT_EQ(find_shape("1b")->head_dim(), 64);
  EXPECT_EQ(find_shape("8b")->kv_dim(), 1024);
  for (const Shape& x : shapes()) {
    EXPECT_EQ(x.vocab, 128256) << x.name;
    EXPECT_EQ(x.heads % x.kv_heads, 0) << x.name;
    EXPECT_EQ(x.hidden % x.heads, 0) << x.name;
    EXPECT_FALSE(x.source.empty()) << x.name;
  }
}

TEST(LlamaShapes, UnknownSizesAreNamed) {
  EXPECT_FALSE(find_shape("70b").has_value());
  EXPECT_FALSE(find_shape("1B").has_value());  // what --size takes, exactly
  EXPECT_EQ(size_list(), "1b, 3b, 8b");
}

TEST(LlamaShapes, TrainingFlopsGiveTheReferenceMfu) {
  // PyTorch on an H200, Llama-3.2-1B shapes, seq 2048: 45,708 tokens/s eager read as
  // MFU 0.38 of 989 TFLOP/s with 6N + 12 L h s.
  const Shape s = *find_shape("1b");
  const double per_token = train_flops_per_token(s, 2048);
  EXPECT_DOUBLE_EQ(per_token, 6.0 * 1'235'814'400 + 12.0 * 16 * 2048 * 2048);
  EXPECT_NEAR(45'708 * per_token / 989e12, 0.38, 0.005);
  EXPECT_NEAR(55'955 * per_token / 989e12, 0.465, 0.005);
  // The causal work: attention halved.
  EXPECT_DOUBLE_EQ(train_flops_per_token(s, 2048, true),
                   6.0 * 1'235'814'400 + 6.0 * 16 * 2048 * 2048);
}

TEST(LlamaShapes, KvCacheAndDecodeBytes) {
  const Shape s = *find_shape("8b");
  // K and V, 32 layers x 1024 values, bf16: 128 KiB per token of context.
  EXPECT_EQ(kv_bytes_per_token(s, 2), 131'072);
  EXPECT_EQ(kv_bytes_per_token(s, 1), 65'536);  // fp8
  // Batch 1 at a short context is the weights less the untied embedding table, of
  // which a step reads one row: 15.01 GB in bf16, so an H200 copying 4.26 TB/s
  // decodes at most ~284 tokens/s.
  const int64_t read = 8'030'261'248 - 128'256LL * 4096;
  EXPECT_EQ(decode_weight_count(s), read);
  const double step = decode_bytes_per_step(s, 2, 2, 1, 128);
  EXPECT_DOUBLE_EQ(step, double(read) * 2 + 128.0 * 131'072);
  EXPECT_NEAR(4.26e12 / step, 284, 1);
  // Batch 64 at 2048 tokens: the KV cache (17.2 GB) outweighs the weights.
  EXPECT_GT(decode_bytes_per_step(s, 2, 2, 64, 2048) - double(read) * 2, double(read) * 2);
  // A tied table is the LM head: read whole.
  EXPECT_EQ(decode_weight_count(*find_shape("1b")), parameter_count(*find_shape("1b")));
}

TEST(LlamaShapes, RopeFrequenciesTakeTheLlama3Scaling) {
  Shape s = *find_shape("1b");  // head size 64, factor 32, original context 8192
  const std::vector<double> f = rope_inv_freq(s);
  ASSERT_EQ(f.size(), 32u);
  s.rope_factor = 0;
  const std::vector<double> plain = rope_inv_freq(s);
  for (int i = 0; i < 32; ++i)
    EXPECT_DOUBLE_EQ(plain[size_t(i)], std::pow(500000.0, -2.0 * i / 64)) << i;
  // Short wavelengths (under 8192 / 4 positions) keep their frequency, long ones
  // (over 8192) are divided by 32, those between blend smoothly.
  int kept = 0, divided = 0, blended = 0;
  for (size_t i = 0; i < f.size(); ++i) {
    const double wavelen = 2 * std::numbers::pi / plain[i];
    if (wavelen < 2048) {
      EXPECT_DOUBLE_EQ(f[i], plain[i]);
      ++kept;
    } else if (wavelen > 8192) {
      EXPECT_DOUBLE_EQ(f[i], plain[i] / 32);
      ++divided;
    } else {
      EXPECT_LT(f[i], plain[i]);
      EXPECT_GT(f[i], plain[i] / 32);
      ++blended;
    }
    if (i > 0) {
      EXPECT_LT(f[i], f[i - 1]);
    }
  }
  EXPECT_GT(kept, 0);
  EXPECT_GT(divided, 0);
  EXPECT_GT(blended, 0);
  EXPECT_DOUBLE_EQ(f[0], 1.0);
  // The 8B model's factor is 8.
  EXPECT_DOUBLE_EQ(rope_inv_freq(*find_shape("8b")).back(), std::pow(500000.0, -126.0 / 128) / 8);
}

TEST(LlamaShapes, AdamWStateOfTheEightBillionModelExceedsOneGpu) {
  // 16 bytes per parameter: 128 GB for 8B, before any activation.
  EXPECT_NEAR(adamw_state_bytes(*find_shape("8b")) / 1e9, 128.5, 0.1);
  EXPECT_LT(adamw_state_bytes(*find_shape("1b")) / 1e9, 20);
}

}  // namespace
}  // namespace gpuvs::models::llama
