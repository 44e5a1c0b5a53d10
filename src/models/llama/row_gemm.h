// The decode step's projections for a few rows: out (rows, N) = in (rows, K) times
// W (N, K) transposed, as nn.Linear computes, for rows <= 4 (batch 1 to 4 at one new
// token each). cuBLASLt's GEMMs tile for many rows; at one row a projection only
// streams its weights, and what decides its speed is how much of them is in flight and
// how little time passes between one projection and the next. Here each warp streams
// two rows of W with 16-byte loads, the block's input rows wait in shared memory, and
// each kernel starts while the one before it finishes (programmatic dependent launch
// on compute capability 9.0 and later): it issues its first weight loads, which depend
// on nothing, then waits for the previous kernel's results before it reads its input.
//
// The input can be made on the way in and the output on the way out, in the rounding
// the decoder's own kernels use, so that RMSNorm, SwiGLU and the rotary embedding need
// no kernel and no round trip of their own. The input is one of
//   kPlain    in = x (rows, K)
//   kRmsNorm  in = norm_weight * round(x * rsqrt(mean(x^2) + eps)), x (rows, K)
// and the output one of
//   kPlain     out = acc (+ residual) in the storage type, or FP32 (the LM head's
//              logits); `residual` may be `out` itself (each element is read, then
//              written, by one thread)
//   kSwiGLU    W is the gate's rows over the up projection's (N = 2·I): out (rows, I) =
//              round(silu(round(gate)) * round(up)), what the down projection reads
//   kRopeCache W is Q, K and V's rows (N = (H + 2·G)·D): out (rows, N) the projection
//              rounded, its query and key heads rotated as rope_and_cache() rotates them,
//              the keys and values written into the caches at the rows' positions, as
//              rope_and_cache() writes them (models/llama/kernels.h)
// Each warp holds the two rows of W whose outputs the epilogue needs together: a gate
// row and its up row, the pair (i, i + D/2) of a head.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "models/layers/dtype.h"

namespace gpuvs::models::llama {

enum class RowInput { kPlain, kRmsNorm };
enum class RowOutput { kPlain, kSwiGLU, kRopeCache };

// kRopeCache's part: rows b = 0 .. rows - 1 are the sequences' new tokens at *pos.
struct RowRope {
  int heads = 0, kv_heads = 0, head_dim = 0, max_context = 0;
  const int* pos = nullptr;         // (1) device
  const float* inv_freq = nullptr;  // (D / 2) device
  void* k_cache = nullptr;          // (rows, max_context, G·D)
  void* v_cache = nullptr;
  bool fp8_cache = false;  // E4M3 caches (bf16 activations), values / cache_scale
  float cache_scale = 1.0f;
};

struct RowGemmArgs {
  int rows = 1;
  int64_t k = 0, n = 0;
  DType dtype = DType::kBF16;  // x, W, norm_weight, residual and a non-FP32 out
  RowInput input = RowInput::kPlain;
  const void* x = nullptr;
  const void* norm_weight = nullptr;  // (K), kRmsNorm only
  float eps = 1e-5f;
  const void* w = nullptr;  // (N, K) row-major
  // W in E4M3 (one byte a weight) times *w_scale (device, FP32): the decoder's FP8
  // weights; the input and the output stay in `dtype`.
  bool w_fp8 = false;
  const float* w_scale = nullptr;
  const void* residual = nullptr;  // kPlain only
  void* out = nullptr;
  bool out_f32 = false;  // kPlain only
  RowOutput output = RowOutput::kPlain;
  RowRope rope;  // kRopeCache
};

// Whether row_gemm() takes these rows and this K: rows 1 to 4, K a multiple of one
// 16-byte load of W and of the input, the staged input rows within the shared memory
// it allows itself.
bool row_gemm_fits(int rows, int64_t k, DType dtype, bool w_fp8 = false);
// Requires row_gemm_fits() (Error otherwise). `dependent_launch`: start while the
// kernel before it finishes (only on compute capability 9.0 and later).
void row_gemm(const RowGemmArgs& a, bool dependent_launch, cudaStream_t s);

}  // namespace gpuvs::models::llama
