// The Llama decoder's training kernels (everything that is not a GEMM, attention or a
// kernel BERT already has: the word embeddings' gradient is bert::embedding_scatter,
// the loss bert::softmax_xent). Row-major PyTorch shapes as kernels.h: N = B*T rows,
// C hidden, H query heads, G key/value heads, D head size, F intermediate.
// Activations and their gradients in the storage type `dtype` (fp32, fp16, bf16);
// every sum, the saved statistics and the parameter gradients in FP32.
//
// The rounding mirrors a training of transformers' LlamaForCausalLM after
// `model.to(dtype)` (its autograd rounds every tensor it materialises to the storage
// type) where that costs nothing; each function says where it does and where it
// does not. Nothing here uses atomics: a column sum goes through FP32 partials, one
// row per block of the first pass, reduced in a fixed order (bert::reduce_partials),
// so two runs give the same bits.
//
// Every pointer to a vector of the storage type must be 16-byte aligned (the kernels
// move 16 bytes at a time); the functions check their arguments on the host and throw
// gpuvs::Error for a width, a head size or a pointer they do not support.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "bench/host_device.h"
#include "models/bert/dropout_hash.h"
#include "models/layers/dtype.h"

namespace gpuvs::models::llama {

// ---- RMSNorm ---------------------------------------------------------------------

// y (rows, C) = w * round(x * rstd) as llama::rms_norm computes it, bit for bit (the
// same sum of squares in the same order, the normalised value rounded to the storage
// type, then the product rounded), and rstd (rows) FP32 = rsqrt(mean(x^2) + eps) for
// the backward. C % 256 == 0, 256 <= C <= 4096.
void rms_norm_forward_train(const void* x, const void* w, void* y, float* rstd, int64_t rows, int c,
                            float eps, DType dtype, cudaStream_t s);

// Backward of rms_norm_forward_train, with n = x * rstd (FP32, unrounded) and
// g = round(dy * w) (the storage type: transformers' autograd materialises the
// product's gradient so):
//   dx = rstd * (g - n * mean_C(g * n))      rounded to the storage type, then
//   dx = round(dres + dx)                    where dres is set (the residual's
//                                            gradient, added in the storage type as
//                                            autograd accumulates it)
//   dw (+)= sum over rows of dy * round(n)   FP32, the products unrounded (transformers
//                                            rounds each product and the sum to the
//                                            storage type)
// dx may alias dres or dy (each element is read before it is written, by the thread
// that writes it). dw goes through `partials`, rms_norm_partial_floats(rows, C)
// floats, 16-byte aligned. C as the forward.
struct RmsNormBackwardArgs {
  int64_t rows = 0;
  int c = 0;
  DType dtype = DType::kF32;
  const void* dy = nullptr;     // (rows, C)
  const void* x = nullptr;      // (rows, C) the forward's input
  const void* w = nullptr;      // (C)
  const float* rstd = nullptr;  // (rows) from the forward
  const void* dres = nullptr;   // (rows, C) or null
  void* dx = nullptr;           // (rows, C)
  float* dw = nullptr;          // (C) fp32
  bool accumulate = false;      // dw += (else dw =)
  float* partials = nullptr;    // rms_norm_partial_floats(rows, C)
};
int64_t rms_norm_partial_floats(int64_t rows, int c);
void rms_norm_backward(const RmsNormBackwardArgs& a, cudaStream_t s);

// ---- Rotary embedding and the head split ------------------------------------------

// Forward: qkv (N, H*D + 2*G*D) token-major, each row H query heads, then G key heads,
// then G value heads, each D wide (row b * T + t) -> q (B, H, T, D), k (B, G, T, D),
// v (B, G, T, D) head-major, q and k rotated by their position t in the sequence
// (0 .. T-1): transformers' rotate_half form, pairs (i, i + D/2) turned by the angle
// t * inv_freq[i], cos and sin in FP32, the rotated value rounded once, exactly as
// rope_and_cache rotates (transformers rounds cos, sin and each product to the
// storage type). v is copied.
// Backward: q, k, v hold the gradients dq, dk, dv -> qkv the gradient dqkv, dq and dk
// turned back (the transpose of the rotation: by -angle), dv copied.
// D % 16 == 0, 16 <= D <= 256; qkv must not overlap q, k or v.
struct RopeSplitArgs {
  int batch = 0, seq = 0, heads = 0, kv_heads = 0, head_dim = 0;
  DType dtype = DType::kF32;
  const float* inv_freq = nullptr;  // (D / 2) device
  void* qkv = nullptr;              // (N, H*D + 2*G*D)
  void* q = nullptr;                // (B, H, T, D)
  void* k = nullptr;                // (B, G, T, D)
  void* v = nullptr;                // (B, G, T, D)
};
void rope_split_forward(const RopeSplitArgs& a, cudaStream_t s);
void rope_split_backward(const RopeSplitArgs& a, cudaStream_t s);

// ---- SwiGLU ----------------------------------------------------------------------

// Backward of a = silu(gate) * up, gu (rows, 2F) = [gate | up] as llama::swiglu reads
// it, da (rows, F) -> dgu (rows, 2F) = [d_gate | d_up], from the stored gate and up
// values in FP32, with s = sigmoid(gate), silu = gate * s:
//   d_up   = round(da * round(silu))
//   d_gate = round(round(da * up) * s * (1 + gate * (1 - s)))
// the roundings of transformers' autograd: act_fn(gate) is a tensor of the storage
// type, and so is the gradient the product hands to SiLU's backward (SiLU and its
// backward in FP32 inside, as PyTorch's kernels compute them, expf in full precision).
// llama::swiglu's forward rounds once, silu(gate) * up in FP32 (transformers rounds
// silu(gate) first): the backward does not depend on that choice, only its inputs do.
// dgu may alias gu. F % 8 == 0.
void swiglu_backward(const void* gu, const void* da, void* dgu, int64_t rows, int inter,
                     DType dtype, cudaStream_t s);

// ---- Inputs ----------------------------------------------------------------------

// A synthetic causal-LM batch from `seed`: ids (B, T) uniform in [0, V), element i
// (= b * T + t) a pure function of (seed, i) (lm_input_id), and labels (B, T) the next
// token, labels[b][t] = ids[b][t + 1], with -100 (ignored by bert::softmax_xent) at
// t = T - 1: transformers' LlamaForCausalLM, given labels = input_ids, shifts them so
// inside its loss; here the labels come shifted, so the loss is a plain mean over
// the B * (T - 1) valid rows. 1 <= V <= 2^31 - 1.
struct LmInputArgs {
  int batch = 0, seq = 0, vocab = 0;
  uint64_t seed = 0;
  int32_t* ids = nullptr;     // (B, T) device
  int32_t* labels = nullptr;  // (B, T) device
};
void lm_inputs(const LmInputArgs& a, cudaStream_t s);

// The token lm_inputs puts at flat index i: a 64-bit hash of (seed, i) (splitmix64's
// finaliser, twice), its high 32 bits scaled to [0, V) by a multiply and a shift
// (floor(u * V / 2^32): no modulo, a bias below V / 2^32). Host and device alike.
GPUVS_HD inline int32_t lm_input_id(uint64_t seed, uint64_t i, int vocab) {
  const uint64_t key = bert::mix64(seed * bert::kGolden + 0x4c4c414d41ull);  // "LLAMA"
  const uint64_t h = bert::mix64(key + (i + 1) * 0xD1B54A32D192ED03ull);
  return static_cast<int32_t>(((h >> 32) * static_cast<uint64_t>(vocab)) >> 32);
}

}  // namespace gpuvs::models::llama
