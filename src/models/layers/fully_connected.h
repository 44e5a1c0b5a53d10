// The fully connected classifier y = x W^T (the bias is added by the caller) through
// cuBLASLt (gpu/lt_gemm.h), with its two backward GEMMs. Row-major PyTorch shapes:
// x (N, in), W (out, in), y (N, out). The forward output is FP32 whatever the input
// type (the loss reads FP32 logits); gradients are in the storage type. Algorithms
// come from cuBLASLt's heuristic once, at construction.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <memory>

#include "gpu/cublaslt.h"
#include "gpu/lt_gemm.h"
#include "models/layers/dtype.h"

namespace gpuvs::models {

class FullyConnected {
 public:
  struct Params {
    int n = 0, in = 0, out = 0;
    DType dtype = DType::kF32;
    bool tf32 = false;  // FP32 data on TF32 tensor cores
    bool train = true;
  };
  static constexpr size_t kWorkspaceBytes = 32u << 20;

  explicit FullyConnected(const Params& p);
  FullyConnected(const FullyConnected&) = delete;
  FullyConnected& operator=(const FullyConnected&) = delete;

  double forward_flops() const { return 2.0 * p_.n * double(p_.in) * p_.out; }

  // y (N, out) fp32 = x (N, in) W^T
  void forward(const void* x, const void* w, float* y, void* ws, cudaStream_t s) const;
  // dx (N, in) = dy (N, out) W
  void backward_data(const void* dy, const void* w, void* dx, void* ws, cudaStream_t s) const;
  // dW (out, in) = beta dW + dy^T x
  void backward_weight(const void* x, const void* dy, void* dw, float beta, void* ws,
                       cudaStream_t s) const;

 private:
  // d = op(a) op(b) + beta d in RowMajorGemm's terms.
  void run(const LtGemm& g, const void* a, const void* b, float beta, void* d, void* ws,
           cudaStream_t s) const;
  Params p_;
  LtHandle handle_;
  std::unique_ptr<LtGemm> fwd_, dgrad_, wgrad_;
};

}  // namespace gpuvs::models
