// BERT's GEMMs, written in row-major (PyTorch) terms (RowMajorGemm, gpu/gemm_spec.h):
//   C (m, n) = alpha op(A) op(B) + beta C_in  [+ bias (n), broadcast over rows]
// with strided batches for attention, run by gpu/lt_gemm.h. Algorithms come from
// cuBLASLt's heuristic once, at construction. Where no algorithm takes the BIAS
// epilogue, the bias is added by a separate kernel.
//
// Types: A and B in the storage type; C in the storage type or FP32 (weight
// gradients, accumulated in FP32); FP32 accumulation always, TF32 tensor cores only
// with `tf32` (fp32 storage). FP8 (fp8.h): A in E4M3 or E5M2, B in E4M3, C bf16 or
// FP32, in cuBLASLt's "TN" form only (A stored (m, k), B stored (n, k)); scales:
// set_fp8_scales(). An FP8 GEMM is tried at construction (one real cublasLtMatmul on
// scratch memory, scale pointers set) for each heuristic algorithm, with the bias fused
// and then not, with fast accumulation and then not; where none runs, the constructor
// throws an Error that names the GEMM. RowMajorGemm's a_scale / b_scale are the
// dequantisation factors (device) of that trial run, as aligned as the ones run() will
// get (cuBLASLt checks scale pointers' alignment); null: 1 at 256 bytes.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "gpu/cublaslt.h"
#include "gpu/gemm_spec.h"
#include "gpu/lt_gemm.h"
#include "models/layers/dtype.h"

namespace gpuvs::models::bert {

constexpr size_t kGemmWorkspaceBytes = size_t(32) << 20;

class Gemm {
 public:
  Gemm(const LtHandle& handle, const RowMajorGemm& shape);
  Gemm(const Gemm&) = delete;
  Gemm& operator=(const Gemm&) = delete;

  double flops() const { return s_.flops(); }
  // d = alpha op(a) op(b) + beta c_in [+ bias]; c_in may equal d (or be null when
  // beta is 0). ws: kGemmWorkspaceBytes of device memory.
  void run(const void* a, const void* b, void* d, float alpha, float beta, const void* c_in,
           const void* bias, void* ws, cudaStream_t s);
  // FP8: the dequantisation factors (device, 1 / scale) of A and B for the next run().
  void set_fp8_scales(const float* a_scale_inv, const float* b_scale_inv);
  const RowMajorGemm& shape() const { return s_; }
  // How it runs: the algorithm's id and tile, "bias fused", "fast accumulation".
  std::string plan() const { return describe(gemm_.plan()); }

 private:
  RowMajorGemm s_;
  LtGemm gemm_;
};

// A dense layer y = x W^T + b on `rows` rows (PyTorch's nn.Linear), with its backward
// GEMMs: dx = dy W (optionally + an earlier gradient, beta 1) and dW (+)= dy^T x in
// FP32. x's rows are `ld_x` apart (the pooler reads the [CLS] rows of (B, T, C)), and
// so are dx's. Without `bias` the layer has none (Llama's projections); with
// `residual` the forward may add a residual (rows, out) in its epilogue (beta 1).
struct DenseShape {
  int64_t rows = 0, in = 0, out = 0;
  int64_t ld_x = 0;  // 0: in
  DType dtype = DType::kF32;
  bool tf32 = false;
  bool train = true;
  bool bias = true;
  bool residual = false;
};

class DenseLayer {
 public:
  DenseLayer(const LtHandle& handle, const DenseShape& shape);
  double forward_flops() const { return fwd_->flops(); }
  // y (rows, out) = x (rows, in) W^T + b [+ residual (rows, out), built with `residual`]
  void forward(const void* x, const void* w, const void* b, void* y, void* ws, cudaStream_t s,
               const void* residual = nullptr);
  // dx (rows, in) = dy (rows, out) W + beta dx_in
  void backward_data(const void* dy, const void* w, void* dx, float beta, const void* dx_in,
                     void* ws, cudaStream_t s);
  // dw (out, in) fp32 = dy^T x + beta dw
  void backward_weight(const void* x, const void* dy, float* dw, float beta, void* ws,
                       cudaStream_t s);

 private:
  std::unique_ptr<Gemm> fwd_, dgrad_, wgrad_;
};

}  // namespace gpuvs::models::bert
