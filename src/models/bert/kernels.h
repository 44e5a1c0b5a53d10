// BERT's own kernels (everything that is not a GEMM). Row-major PyTorch shapes;
// B batch, T sequence, C hidden (1024), H heads, D head size (64), N = B*T rows.
// Activations are in the storage type `dtype` (fp32, fp16, bf16); statistics,
// parameter gradients and losses in FP32; math in FP32 everywhere.
//
// Dropout is a pure function of (step counter on the device, site, element index)
// through a counter-based hash, so the backward pass regenerates the forward's mask
// instead of storing it, and a CUDA graph replays a new mask every step (the counter
// lives on the GPU and advance_rng() moves it): dropout_hash.h, one 16-bit uniform per
// element from one hash per 4 elements, kept where u16 >= round(p * 65536), kept
// values scaled by 1 / (1 - p) (PyTorch's inverted dropout).
//
// Column sums (bias, LayerNorm, position and token-type gradients) are reduced in two
// fixed-order passes through FP32 partials: deterministic, no atomics. The only
// atomics are the word-embedding gradient's scatter (fp32 atomicAdd: its order, and
// so its last bits, may differ between runs).
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "models/layers/dtype.h"

namespace gpuvs::models::bert {

struct Dropout {
  float p = 0.0f;                 // 0: off
  const uint64_t* rng = nullptr;  // (1) device step counter
  uint32_t site = 0;              // which dropout in the network
};

// ---- norm_kernels.cu ----------------------------------------------------------

// y = LN(z) * gamma + beta over rows of C (C % 256 == 0, C <= 1024), one warp per row:
//   z = dropout(x) + residual   (residual may be null; x_drop applies to x)
//   y = dropout(LN(z))          (y_drop, for the embeddings' dropout after LN)
// Saves z (when z_out is set and differs from x) and (mean, rstd) per row.
struct LnForwardArgs {
  int64_t rows = 0;
  int c = 0;
  DType dtype = DType::kF32;
  const void* x = nullptr;         // (rows, C)
  const void* residual = nullptr;  // (rows, C) or null
  const void* gamma = nullptr;     // (C) then beta (C) right after it
  void* z_out = nullptr;           // (rows, C) or null
  void* y = nullptr;               // (rows, C)
  float* stats = nullptr;          // (rows, 2) mean, rstd, or null
  float eps = 1e-12f;
  Dropout x_drop, y_drop;
};
void layer_norm_forward(const LnForwardArgs& a, cudaStream_t s);

// The embeddings: z = word[ids] + pos[t] + type[types], y = dropout(LN(z)).
struct EmbeddingArgs {
  int batch = 0, seq = 0, c = 0;
  DType dtype = DType::kF32;
  const int32_t* ids = nullptr;    // (B, T)
  const int32_t* types = nullptr;  // (B, T)
  const void* word = nullptr;      // (V, C)
  const void* pos = nullptr;       // (P, C)
  const void* type = nullptr;      // (2, C)
  const void* gamma = nullptr;     // (C) then beta (C)
  void* z_out = nullptr;           // (N, C) or null
  void* y = nullptr;               // (N, C)
  float* stats = nullptr;          // (N, 2) or null
  float eps = 1e-12f;
  Dropout y_drop;
};
void embedding_forward(const EmbeddingArgs& a, cudaStream_t s);

// Backward of layer_norm_forward: dy' = y_drop'(dy); dz = LN'(dy'); dx = x_drop'(dz)
// (written when dx is set; in place over dy allowed for dz). dgamma and dbeta
// (+)= column sums, through `partials` (ln_partial_floats(rows, C) floats).
struct LnBackwardArgs {
  int64_t rows = 0;
  int c = 0;
  DType dtype = DType::kF32;
  const void* dy = nullptr;      // (rows, C)
  const void* z = nullptr;       // (rows, C) LN input
  const void* gamma = nullptr;   // (C)
  const float* stats = nullptr;  // (rows, 2)
  void* dz = nullptr;            // (rows, C)
  void* dx = nullptr;            // (rows, C) or null
  float* dgamma = nullptr;       // (C) then dbeta (C), fp32
  bool accumulate = false;
  float* partials = nullptr;
  Dropout x_drop, y_drop;
};
int64_t ln_partial_floats(int64_t rows, int c);
void layer_norm_backward(const LnBackwardArgs& a, cudaStream_t s);

// out[g * cols + j] (+)= sum over rows i with group(i) == g of x[i * ld + j]; group
// null: one group. Through `partials` (colsum_partial_floats(rows, cols, groups)).
struct ColSumArgs {
  int64_t rows = 0, cols = 0, ld = 0;  // ld 0: cols
  DType dtype = DType::kF32;
  const void* x = nullptr;
  const int32_t* group = nullptr;  // (rows) in [0, groups), or null
  int groups = 1;
  float* out = nullptr;  // (groups, cols) fp32
  bool accumulate = false;
  float* partials = nullptr;
};
int64_t colsum_partial_floats(int64_t rows, int64_t cols, int groups);
void column_sum(const ColSumArgs& a, cudaStream_t s);
// out[j] (+)= the sum over p < count of partials[p * width + j], in a fixed order.
void reduce_partials(const float* partials, int64_t count, int64_t width, float* out,
                     bool accumulate, cudaStream_t s);

// dword[ids[i]] += dz[i] (fp32 atomics) for the word embeddings' gradient.
void embedding_scatter(const int32_t* ids, const void* dz, int64_t rows, int c, DType dtype,
                       float* dword, cudaStream_t s);

// ---- attention_kernels.cu -----------------------------------------------------

// (B, T, nmat, H, D) <-> nmat tensors (B, H, T, D), nmat 1 or 3 (q, k, v).
struct HeadsArgs {
  int batch = 0, seq = 0, heads = 0, head_dim = 0, nmat = 1;
  DType dtype = DType::kF32;
  void* tokens = nullptr;                        // (B, T, nmat * H * D)
  void* split[3] = {nullptr, nullptr, nullptr};  // each (B, H, T, D)
};
void tokens_to_heads(const HeadsArgs& a, cudaStream_t s);
void heads_to_tokens(const HeadsArgs& a, cudaStream_t s);

// p = softmax(scores + mask) over the last dimension (T <= 1024, T % 32 == 0), masked
// keys (mask 0) get -1e30 added as transformers adds the dtype's minimum; p_drop =
// dropout(p) when dropout is on (else null). In place over scores allowed.
struct SoftmaxArgs {
  int batch = 0, heads = 0, seq = 0;
  DType dtype = DType::kF32;
  const void* scores = nullptr;   // (B, H, T, T), already scaled
  const int32_t* mask = nullptr;  // (B, T) attention_mask
  void* p = nullptr;              // (B, H, T, T)
  void* p_drop = nullptr;         // (B, H, T, T) or null
  Dropout drop;
};
void attention_softmax_forward(const SoftmaxArgs& a, cudaStream_t s);
// ds = p * (dp' - sum_j dp'_j p_j) with dp' = dropout'(dp); in place over dp allowed.
struct SoftmaxBackwardArgs {
  int64_t rows = 0;  // B * H * T
  int seq = 0;
  DType dtype = DType::kF32;
  const void* dp = nullptr;  // (rows, T) gradient of p_drop (or of p without dropout)
  const void* p = nullptr;   // (rows, T)
  void* ds = nullptr;        // (rows, T)
  Dropout drop;
};
void attention_softmax_backward(const SoftmaxBackwardArgs& a, cudaStream_t s);

// ---- misc_kernels.cu ------------------------------------------------------------

// Exact GELU (erf form, BERT's "gelu"): y = x * Phi(x); backward dx = dy * Phi'(.)
void gelu_forward(const void* x, void* y, int64_t n, DType dtype, cudaStream_t s);
void gelu_backward(const void* dy, const void* x, void* dx, int64_t n, DType dtype, cudaStream_t s);
void tanh_forward(const void* x, void* y, int64_t n, DType dtype, cudaStream_t s);
// dx = dy * (1 - y^2), y = tanh output
void tanh_backward(const void* dy, const void* y, void* dx, int64_t n, DType dtype, cudaStream_t s);

// Fallback where cuBLASLt has no BIAS epilogue: y (rows, cols; ld) += bias (cols).
struct AddBiasArgs {
  int64_t rows = 0, cols = 0, ld = 0;
  DType dtype = DType::kF32;
  void* y = nullptr;
  const void* bias = nullptr;
};
void add_bias(const AddBiasArgs& a, cudaStream_t s);

// Loss scaling state (fp16), as PyTorch's GradScaler: 65536, x0.5 on overflow (the
// step skipped), x2 after 2000 clean steps.
struct LossScaleState {
  float scale;
  int32_t good_steps;
  int32_t found_inf;
  int32_t adam_step;  // AdamW steps taken (for the bias correction)
};
constexpr float kInitialLossScale = 65536.0f;
constexpr int kLossScaleGrowthInterval = 2000;

// Softmax cross-entropy per row over `cols` classes of a row of `ld` (padding
// columns get a zero gradient), label -100 ignored (loss 0, zero gradient row):
// row_loss[i] = logsumexp - x[label]; dlogits = (softmax - onehot) * scale / count,
// count = valid labels (count_valid_labels), scale = the loss scale (or 1). dlogits may
// be logits (in place).
struct XentArgs {
  int64_t rows = 0;
  int cols = 0, ld = 0;
  DType dtype = DType::kF32;
  const void* logits = nullptr;     // (rows, ld)
  const int32_t* labels = nullptr;  // (rows)
  const float* count = nullptr;     // (1) device
  const LossScaleState* scaler = nullptr;
  float* row_loss = nullptr;  // (rows)
  void* dlogits = nullptr;    // (rows, ld) or null (loss only)
};
void count_valid_labels(const int32_t* labels, int64_t n, float* count, cudaStream_t s);
void softmax_xent(const XentArgs& a, cudaStream_t s);
// loss[0] = mlm + nsp, loss[1] = mlm mean, loss[2] = nsp mean (fixed-order sums).
void finish_loss(const float* mlm_rows, int64_t n_mlm, const float* mlm_count,
                 const float* nsp_rows, int64_t n_nsp, const float* nsp_count, float* loss,
                 cudaStream_t s);

// ---- flash_attention.cu ----------------------------------------------------------

// Fused attention (bf16/fp16, head size 64 or 128, T % 64 == 0; flash_attention_supported):
// o = dropout(softmax(q k^T scale + mask bias [+ causal mask])) v per (b, h). q and o are
// (B, H, T, D); k and v (B, G, T, D) with G = kv_heads key/value heads (grouped-query
// attention: query head h reads key/value head h / (H / G); 0 means G = H, as BERT). mask
// (B, T) over the keys (0: masked, as the unfused softmax's -1e30 bias), or null for no
// padding mask; causal: query t attends keys 0..t only (the later keys get weight exactly
// 0). In training lse (B, H, T) fp32, each row's log-sum-exp, for the backward. The
// kernels move 16 bytes at a time: q, k, v, o (and the backward's tensors) 16-byte
// aligned.
struct FlashArgs {
  int batch = 0, heads = 0, seq = 0, head_dim = 64;
  int kv_heads = 0;  // G: 0 (= heads) or a divisor of heads
  DType dtype = DType::kBF16;
  const void *q = nullptr, *k = nullptr, *v = nullptr;
  const int32_t* mask = nullptr;  // (B, T) or null
  bool causal = false;
  float scale = 0.125f;
  Dropout drop;
  void* o = nullptr;     // (B, H, T, D)
  float* lse = nullptr;  // (B, H, T); null: not kept (inference)
};
bool flash_attention_supported(DType dtype, int seq, int head_dim);
// Lets the kernels use their shared memory (over 48 KiB) on the current device, for every
// head size and type: once, before the first launch and outside graph capture.
void flash_attention_init();
void flash_attention_forward(const FlashArgs& a, cudaStream_t s);

// dq (B, H, T, D), dk and dv (B, G, T, D) from d_o (B, H, T, D), the forward's q, k, v,
// mask, causal, drop and lse (in f), and its output for delta (B, H, T) fp32 scratch =
// rowsum(d_o o): o and d_o token-major (B, T, H * D) in o_tokens and do_tokens, or, where
// both are null, f.o and d_o (B, H, T, D). A key/value head's dk and dv are the sums over
// its H / G query heads, in a fixed order (no atomics: deterministic).
struct FlashBackwardArgs {
  FlashArgs f;
  const void* d_o = nullptr;                             // (B, H, T, D)
  const void *o_tokens = nullptr, *do_tokens = nullptr;  // (B, T, H * D) or null
  float* delta = nullptr;                                // (B, H, T)
  void* dq = nullptr;                                    // (B, H, T, D)
  void *dk = nullptr, *dv = nullptr;                     // (B, G, T, D)
};
void flash_attention_backward(const FlashBackwardArgs& a, cudaStream_t s);

// The two implementations behind flash_attention_forward and _backward, which pick by
// drop.p (internal; tests compare them). The WMMA kernels (flash_attention.cu) take any
// dropout; the mma.sync kernels (flash_attention_mma_{fwd,bwd}.cu) none (drop.p == 0), and their
// backward expects delta already computed (flash_attention_backward does that first).
void flash_attention_forward_wmma(const FlashArgs& a, cudaStream_t s);
void flash_attention_backward_wmma(const FlashBackwardArgs& a, cudaStream_t s);
void flash_mma_init();  // called by flash_attention_init
void flash_mma_forward(const FlashArgs& a, cudaStream_t s);
void flash_mma_backward(const FlashBackwardArgs& a, cudaStream_t s);

// ---- mlm_gather_kernels.cu -----------------------------------------------------

// The masked positions (labels >= 0) of N rows, in order, for an MLM head that runs
// its decoder on those rows only (training): idx (cap) the row of slot i, -1 past the
// count; inv (N) the slot of row r, -1 where r is not masked (or past cap); glabels
// (cap) the slot's label, -100 past the count. One block; cap >= the count (the caller
// checks it on the host).
struct CompactArgs {
  int64_t n = 0, cap = 0;
  const int32_t* labels = nullptr;  // (N)
  int32_t* idx = nullptr;           // (cap)
  int32_t* inv = nullptr;           // (N)
  int32_t* glabels = nullptr;       // (cap)
};
void compact_labels(const CompactArgs& a, cudaStream_t s);

// dst row r (rows, cols) = src row map[r] (cols), or zeros where map[r] < 0; cols % 8
// == 0 (16-byte vectors for 16-bit types, two for fp32).
void gather_rows(const int32_t* map, int64_t rows, int64_t cols, const void* src, void* dst,
                 DType dtype, cudaStream_t s);

// Synthetic pre-training batch from `seed` (see BertLarge::generate_input).
struct InputArgs {
  int batch = 0, seq = 0;
  uint64_t seed = 0;
  int32_t* ids = nullptr;         // (B, T)
  int32_t* types = nullptr;       // (B, T)
  int32_t* mask = nullptr;        // (B, T)
  int32_t* labels = nullptr;      // (B, T), -100 where not masked
  int32_t* nsp_labels = nullptr;  // (B)
};
void generate_inputs(const InputArgs& a, cudaStream_t s);

// dst (n) = std * N(0, 1) from (seed, salt, index), or a constant.
void init_normal(float* dst, int64_t n, float std, uint64_t seed, uint64_t salt, cudaStream_t s);
void fill(float* dst, int64_t n, float value, cudaStream_t s);
void cast_from_float(const float* src, void* dst, int64_t n, DType dtype, cudaStream_t s);
void cast_to_float(const void* src, float* dst, int64_t n, DType dtype, cudaStream_t s);
// How many of the rows x cols values of src (storage dtype, row stride ld) are NaN or
// infinite, counted on the GPU: the output check at a large batch reads back only the
// count (the logits at batch 7696 are 60 GB). Synchronises.
int64_t count_nonfinite(const void* src, int64_t rows, int64_t cols, int64_t ld, DType dtype,
                        cudaStream_t s);
void advance_rng(uint64_t* rng, cudaStream_t s);

// AdamW (torch.optim.AdamW, bias-corrected) over the flat arrays; weight decay on
// [0, n_decay). g = grad / (scale * micro_steps). fp16: check_finite first; a step
// with an overflow is skipped (and not counted), then update_loss_scale.
struct AdamWArgs {
  int64_t n = 0, n_decay = 0;
  DType dtype = DType::kF32;
  float* master = nullptr;       // (n) fp32
  float* m = nullptr;            // (n) fp32
  float* v = nullptr;            // (n) fp32
  const float* grads = nullptr;  // (n) fp32
  void* model = nullptr;         // (n) dtype working copy, or null (fp32: master is it)
  float lr = 1e-4f, beta1 = 0.9f, beta2 = 0.999f, eps = 1e-6f, weight_decay = 0.01f;
  int micro_steps = 1;
  LossScaleState* scaler = nullptr;  // device, always set
};
void check_finite(const float* grads, int64_t n, LossScaleState* scaler, cudaStream_t s);
void adamw_step(const AdamWArgs& a, cudaStream_t s);
void update_loss_scale(LossScaleState* scaler, cudaStream_t s);

}  // namespace gpuvs::models::bert
