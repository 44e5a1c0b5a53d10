// FP8 for BERT's encoder GEMMs (precision fp8, compute capability >= 8.9): E4M3 for
// activations and weights (forward), E5M2 for gradients, one scale per tensor.
//
// Scaling (as NVIDIA's Transformer Engine "delayed scaling"): every FP8 tensor has an
// Fp8Meta on the GPU. A cast multiplies by meta.scale, saturates to the format's
// largest finite value, and records the tensor's amax (atomicMax). update_fp8_metas()
// then pushes the step's amax into a history of kFp8History steps and sets
// scale = fmt_max / max(history) for the next step (scale_inv = 1 / scale is what the
// GEMM multiplies back). Weights change once per step and are cast right after the
// optimizer, so they use the current amax instead (amax pass, then scale, then cast).
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>
#include <vector>

#include "gpu/device.h"
#include "models/layers/dtype.h"

namespace gpuvs::models::bert {

constexpr int kFp8History = 16;
constexpr float kE4m3Max = 448.0f;
constexpr float kE5m2Max = 57344.0f;

// 256 bytes, scale_inv first: in an array from cudaMalloc every scale_inv, which the
// FP8 GEMMs take as their scale pointers, is 256-byte aligned. cuBLASLt checks the
// alignment of scale pointers when it picks an algorithm (bench/compute/gemm_runner.cpp found so);
// the first H200 run's refusal came with scale_inv 4 bytes into a 96-byte meta.
struct Fp8Meta {
  float scale_inv;  // 1 / scale: the GEMM's dequantisation factor
  float scale;      // multiply before the cast
  float amax;       // amax of the current step (reset by the update)
  float fmt_max;    // kE4m3Max or kE5m2Max
  int32_t delayed;  // 1: history-based (activations, gradients); 0: current (weights)
  int32_t pad[3];
  float history[kFp8History];
  int32_t pad_to_256[40];
};
static_assert(sizeof(Fp8Meta) == 256, "Fp8Meta: 256 bytes, every scale_inv 256-byte aligned");

// A fresh meta: scale 1, empty history.
Fp8Meta fp8_meta_init(bool e5m2, bool delayed);

// What a cast casts: src itself, or the GELU or SwiGLU (or their gradient) computed
// from it, fused so that the activation's output need not be written in 16 bits and
// read back (Transformer Engine fuses its casts into the producing kernels for the
// same reason).
enum class Fp8CastOp {
  kCopy,      // v = src
  kGelu,      // v = gelu(src), rounded to dtype: what gelu_forward writes
  kGeluGrad,  // v = src * gelu'(aux), rounded to dtype: what gelu_backward writes
  // v (rows, cols) = silu(gate) * up from src (rows, 2 cols), gate first, rounded to
  // dtype: what Llama's swiglu writes.
  kSwiglu,
  // v (rows, cols) = the gradient of gate and up (cols / 2 each, gate first) from
  // aux = their values (rows, cols) and src = the SwiGLU output's gradient (rows,
  // cols / 2), rounded to dtype: what Llama's swiglu_backward writes. value_out must
  // not be aux (each half reads both).
  kSwigluGrad,
};

// out (rows, cols) fp8 = saturate(v * meta.scale), and out_t (cols, rows) its
// transpose (either may be null); meta.amax = max(meta.amax, max |v|), v as `op` says.
// src is fp32 (src_f32; kCopy only) or `dtype` (16-bit activations). value_out (rows,
// cols) `dtype`, where set (not with kCopy): v itself, as the unfused GELU kernel
// writes it; it may be src (in place). rows a multiple of 32, cols of 64; src, aux and
// value_out 32-byte aligned, out 8-byte and out_t 16-byte aligned (an Error otherwise).
struct Fp8CastArgs {
  int64_t rows = 0, cols = 0;
  const void* src = nullptr;
  bool src_f32 = false;
  DType dtype = DType::kBF16;
  bool e5m2 = false;
  uint8_t* out = nullptr;
  uint8_t* out_t = nullptr;
  Fp8Meta* meta = nullptr;
  Fp8CastOp op = Fp8CastOp::kCopy;
  const void* aux = nullptr;  // kGeluGrad: the GELU's input (rows, cols) `dtype`; kSwigluGrad
                              // gate and up
  void* value_out = nullptr;
  // kGeluGrad only, where set: (fp8_colsum_partial_floats(rows, cols)) fp32, the column
  // sums of v per 64-row tile, in a fixed order; reduce_partials (kernels.h) over the
  // tiles gives the bias gradient without reading v back.
  float* colsum = nullptr;
};
int64_t fp8_colsum_partial_floats(int64_t rows, int64_t cols);
void fp8_cast(const Fp8CastArgs& a, cudaStream_t s);

// One tensor of a batch of current scalings: its FP32 values (n of them, a multiple of
// 4, 16-byte aligned) and its meta.
struct Fp8ScaleJob {
  const float* src = nullptr;
  int64_t n = 0;
  Fp8Meta* meta = nullptr;
};

// The current scaling of weights for many tensors at once: for every job, meta.amax =
// max |src|, then meta.scale from it, in three launches whatever the count (the
// weights' cast after every AdamW step scales all 96 encoder weights; one tensor at a
// time it took 4 launches each, with an atomic per warp on one address).
class Fp8ScaleBatch {
 public:
  Fp8ScaleBatch() = default;
  // Checks every job (an Error otherwise) and copies the list to the device.
  explicit Fp8ScaleBatch(const std::vector<Fp8ScaleJob>& jobs);
  void run(cudaStream_t s) const;

 private:
  DeviceBuffer jobs_;
  int count_ = 0;
};

// For every delayed meta: push amax into the history, new scale from its maximum.
void update_fp8_metas(Fp8Meta* metas, int count, cudaStream_t s);

// dst (n) fp32 = beta * dst + src (n) bf16.
void add_bf16_into_f32(const void* src, float* dst, int64_t n, float beta, cudaStream_t s);

}  // namespace gpuvs::models::bert
