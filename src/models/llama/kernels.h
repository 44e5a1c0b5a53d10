// The Llama decoder's own kernels (everything that is not a GEMM): row-major
// PyTorch shapes; N rows = batch x new tokens, C hidden, H query heads, G key/value
// heads (grouped-query attention: query head h reads key/value head h / (H / G)),
// D head size, KV = G x D. Activations and the KV cache in the storage type `dtype`
// (fp32, fp16, bf16); every sum in FP32.
//
// The position of the first new token is read from the device (`pos`), so that one
// CUDA graph of a decode step replays at every position: advance_position() moves it.
// `dependent` (or `dependent_launch`): launched to start while the kernel before it
// finishes (dependent_launch.cuh), on compute capability 9.0 and later only.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "models/bert/fp8.h"
#include "models/layers/dtype.h"

namespace gpuvs::models::llama {

// dst (n) uniform in [-bound, bound) from (seed, salt, index): the same values for
// the same arguments, whatever the batch or the other tensors.
void init_uniform(void* dst, DType dtype, int64_t n, float bound, uint64_t seed, uint64_t salt,
                  cudaStream_t s);
void fill(void* dst, DType dtype, int64_t n, float value, cudaStream_t s);

// x (rows, C) = table[ids] (table (V, C)).
void embed(const int32_t* ids, const void* table, void* x, int64_t rows, int c, DType dtype,
           cudaStream_t s, bool dependent = false);

// y (rows, C) = w * round(x * rsqrt(mean(x^2) + eps)), as transformers' LlamaRMSNorm
// rounds: the normalised value to the storage type, then the product.
void rms_norm(const void* x, const void* w, void* y, int64_t rows, int c, float eps, DType dtype,
              cudaStream_t s);

// out (n) E4M3 = saturate(x * meta.scale), x (n) bf16 or fp32, n a multiple of 8, x
// 16-byte and out 8-byte aligned; meta.amax = max(meta.amax, max |x|) (bert/fp8.h's
// scaling: the decoder calibrates its scales from these amaxes).
void cast_e4m3(const void* x, DType dtype, uint8_t* out, int64_t n, bert::Fp8Meta* meta,
               cudaStream_t s);

// The KV cache in E4M3 (fp8_cache, bf16 or fp32 activations): a key or value v is stored
// as saturate(v / cache_scale) and read back as e4m3 * cache_scale.

// qkv (N, H*D + 2*KV), row b * seq + t at position *pos + t: rotates the query and key
// heads in place (pairs (i, i + D/2) by angle position * inv_freq[i], transformers'
// rotate_half form, cos and sin in FP32) and writes the rotated keys and the values
// into the caches (batch, max_context, KV) at that position.
struct RopeCacheArgs {
  int batch = 0, seq = 0, heads = 0, kv_heads = 0, head_dim = 0, max_context = 0;
  DType dtype = DType::kF32;
  const int* pos = nullptr;         // (1) device
  const float* inv_freq = nullptr;  // (D / 2) device
  void* qkv = nullptr;
  void* k_cache = nullptr;
  void* v_cache = nullptr;
  bool fp8_cache = false;
  float cache_scale = 1.0f;
  bool dependent_launch = false;
};
void rope_and_cache(const RopeCacheArgs& a, cudaStream_t s);

// Causal attention of the new rows against the cache: out (N, H*D), row b * seq + t
// attends to cache positions 0 .. *pos + t of sequence b, softmax(q k / sqrt(D)) v.
// With `splits` > 1 each (row, head) is cut into that many ranges of the context
// (flash-decoding: more blocks for a short batch), whose partial results `partials`
// (attention_partial_floats) holds until they are combined.
struct AttentionArgs {
  int batch = 0, seq = 0, heads = 0, kv_heads = 0, head_dim = 0, max_context = 0;
  DType dtype = DType::kF32;
  const int* pos = nullptr;
  const void* qkv = nullptr;  // queries: the first H*D columns of each row
  const void* k_cache = nullptr;
  const void* v_cache = nullptr;
  bool fp8_cache = false;
  float cache_scale = 1.0f;
  void* out = nullptr;
  int splits = 1;
  float* partials = nullptr;
  bool dependent_launch = false;
};
int64_t attention_partial_floats(int64_t rows, int heads, int head_dim, int splits);
// How many context ranges a step of `rows` rows takes: enough blocks to cover the
// GPU's `sms` twice, each range at least 64 positions of `max_context`.
int attention_splits(int64_t rows, int heads, int max_context, int sms);
void attention(const AttentionArgs& a, cudaStream_t s);

// a (rows, I) = silu(gu[:, :I]) * gu[:, I:], gu (rows, 2I): the gate's and the up
// projection's outputs side by side.
void swiglu(const void* gu, void* a, int64_t rows, int inter, DType dtype, cudaStream_t s);

// y (batch, C) = the last row of each sequence of x (batch * seq, C).
void gather_last_rows(const void* x, void* y, int batch, int seq, int c, DType dtype,
                      cudaStream_t s);

// out[r] = the index of the largest of logits (rows, V) row r (the first of equals).
void argmax_rows(const float* logits, int32_t* out, int rows, int v, cudaStream_t s,
                 bool dependent = false);

// *pos += by.
void advance_position(int* pos, int by, cudaStream_t s, bool dependent = false);

}  // namespace gpuvs::models::llama
