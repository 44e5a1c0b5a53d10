// BERT's GEMMs through cuBLASLt, written in row-major (PyTorch) terms:
//   C (m, n) = alpha op(A) op(B) + beta C_in  [+ bias (n), broadcast over rows]
// where op(A) is (m, k) and op(B) is (k, n); A stored (m, k) or, transposed, (k, m);
// B stored (k, n) or, transposed, (n, k). Strided batches for attention. cuBLASLt is
// column-major, so each GEMM runs as C^T = op(B)^T op(A)^T (operands swapped); the
// bias then runs along D's rows, i.e. per output feature, as cuBLASLt's BIAS epilogue
// wants. Algorithms come from cuBLASLt's heuristic once, at construction. Where no
// algorithm takes the BIAS epilogue, the bias is added by a separate kernel.
//
// Types: A and B in the storage type; C in the storage type or FP32 (weight
// gradients, accumulated in FP32); FP32 accumulation always, TF32 tensor cores only
// with `tf32` (fp32 storage).
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "gpu/cublaslt.h"
#include "models/layers/dtype.h"

namespace gpuvs::models::bert {

constexpr size_t kGemmWorkspaceBytes = size_t(32) << 20;

struct GemmShape {
  bool ta = false, tb = false;
  int64_t m = 0, n = 0, k = 0;
  int64_t lda = 0, ldb = 0, ldc = 0;  // row strides in elements
  int batch = 1;
  int64_t stride_a = 0, stride_b = 0, stride_c = 0;  // elements between batches
  DType ab = DType::kF32;
  bool c_f32 = false;  // C and D in FP32 (else in `ab`)
  bool tf32 = false;
  bool bias = false;        // + bias (n) of C's type
  bool accumulate = false;  // run() may get beta != 0 (FP8 trial runs use beta 1 then)
  // FP8 (fp8.h): A in E4M3 or E5M2 (a_e5m2), B in E4M3; C and D in bf16 or FP32
  // (c_f32); `ab` is ignored. cuBLASLt's FP8 kernels take only its "TN" form, here
  // ta false and tb true: A stored (m, k), B stored (n, k). Scales: set_fp8_scales().
  // FP8 rules (cuBLASLt docs, cublasLtMatmul, FP8 section, Hopper): "TN" in cuBLASLt's
  // column-major terms (its A transposed, B not: as here), sizes and leading
  // dimensions multiples of 16, E5M2 x E5M2 not supported, FP32 compute, C of D's type
  // (bf16) or FP32 with D FP32, bias bf16. An FP8 GEMM is tried at construction (one
  // real cublasLtMatmul on scratch memory, scale pointers set) for each heuristic
  // algorithm, with the bias fused and then not, with fast accumulation and then
  // not; where none runs, the constructor throws an Error that names the GEMM.
  bool fp8 = false;
  bool a_e5m2 = false;
  bool fast_accum = false;  // FP8 forward GEMMs: faster, less exact accumulation
  // FP8: dequantisation factors (device) for the trial run, as aligned as the ones
  // run() will get (cuBLASLt checks scale pointers' alignment); null: 1 at 256 bytes.
  const float* a_scale = nullptr;
  const float* b_scale = nullptr;
  std::string name;  // in error messages: "ffn1 fwd", ...
};

// "ffn1 fwd: m 512 n 4096 k 1024, A e4m3 (m, k), B e4m3 (n, k), D bf16, bias": what a
// message about this GEMM says.
std::string describe(const GemmShape& s);

class Gemm {
 public:
  Gemm(const LtHandle& handle, const GemmShape& shape);
  ~Gemm();
  Gemm(const Gemm&) = delete;
  Gemm& operator=(const Gemm&) = delete;

  double flops() const { return 2.0 * double(s_.m) * double(s_.n) * double(s_.k) * s_.batch; }
  // d = alpha op(a) op(b) + beta c_in [+ bias]; c_in may equal d (or be null when
  // beta is 0). ws: kGemmWorkspaceBytes of device memory.
  void run(const void* a, const void* b, void* d, float alpha, float beta, const void* c_in,
           const void* bias, void* ws, cudaStream_t s);
  // FP8: the dequantisation factors (device, 1 / scale) of A and B for the next run().
  void set_fp8_scales(const float* a_scale_inv, const float* b_scale_inv);
  const GemmShape& shape() const { return s_; }
  // How it runs: "bias fused", "fast accumulation", the algorithm's id and tile.
  std::string plan() const;

 private:
  struct Plan;
  const LtHandle& handle_;
  GemmShape s_;
  std::unique_ptr<Plan> plan_;
};

// A dense layer y = x W^T + b on `rows` rows (PyTorch's nn.Linear), with its backward
// GEMMs: dx = dy W (optionally + an earlier gradient, beta 1) and dW (+)= dy^T x in
// FP32. x's rows are `ld_x` apart (the pooler reads the [CLS] rows of (B, T, C)), and
// so are dx's.
struct LinearShape {
  int64_t rows = 0, in = 0, out = 0;
  int64_t ld_x = 0;  // 0: in
  DType dtype = DType::kF32;
  bool tf32 = false;
  bool train = true;
};

class Linear {
 public:
  Linear(const LtHandle& handle, const LinearShape& shape);
  double forward_flops() const { return fwd_->flops(); }
  // y (rows, out) = x (rows, in) W^T + b
  void forward(const void* x, const void* w, const void* b, void* y, void* ws, cudaStream_t s);
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
