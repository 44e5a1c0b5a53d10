#include "models/bert/gemm.h"

#include <fmt/format.h>

#include "core/error.h"
#include "models/bert/kernels.h"
#include "models/layers/gemm_dtype.h"

namespace gpuvs::models::bert {

namespace {

// cuBLASLt's view of `g`, FP8's layout rules checked first (the error names the GEMM).
LtGemmSpec checked_spec(const RowMajorGemm& g) {
  if (g.fp8())
    if (const auto problem = fp8_layout_problem(g)) throw Error(*problem);
  return to_lt_spec(g);
}

}  // namespace

Gemm::Gemm(const LtHandle& handle, const RowMajorGemm& shape)
    : s_(shape), gemm_(handle, checked_spec(shape)) {
  if (s_.fp8())
    gemm_.choose_fp8_by_trial(kGemmWorkspaceBytes, describe(s_));
  else
    gemm_.choose_first(kGemmWorkspaceBytes, describe(s_));
}

void Gemm::set_fp8_scales(const float* a_scale_inv, const float* b_scale_inv) {
  gemm_.set_fp8_scales(b_scale_inv, a_scale_inv);  // cuBLASLt's A: our B
}

void Gemm::run(const void* a, const void* b, void* d, float alpha, float beta, const void* c_in,
               const void* bias, void* ws, cudaStream_t s) {
  if (gemm_.plan().fused_bias) gemm_.set_bias(bias);
  LtOperands o;
  o.alpha = &alpha;
  o.beta = &beta;
  o.a = b;  // cuBLASLt's A is our B
  o.b = a;
  o.c = c_in;
  o.d = d;
  o.workspace = ws;
  o.workspace_bytes = kGemmWorkspaceBytes;
  o.stream = s;
  const cublasStatus_t st = gemm_.matmul(o);
  if (st != CUBLAS_STATUS_SUCCESS)
    throw Error(fmt::format("cublasLtMatmul refused {} ({}; beta {}): {}", describe(s_), plan(),
                            beta, cublasLtGetStatusString(st)));
  if (s_.bias && !gemm_.plan().fused_bias) {
    AddBiasArgs ab;
    ab.rows = s_.m * s_.batch;  // bias GEMMs are not batched; rows of C
    ab.cols = s_.n;
    ab.ld = s_.ldc;
    ab.dtype = dtype_of(s_.c);
    ab.y = d;
    ab.bias = bias;
    add_bias(ab, s);
  }
}

DenseLayer::DenseLayer(const LtHandle& handle, const DenseShape& p) {
  DenseGemms g =
      dense_gemms(p.rows, p.in, p.out, p.ld_x ? p.ld_x : p.in, gemm_elem(p.dtype), p.tf32);
  g.forward.bias = p.bias;
  g.forward.accumulate = p.residual;
  g.wgrad.c = GemmElem::kF32;  // accumulated in FP32
  fwd_ = std::make_unique<Gemm>(handle, g.forward);
  if (!p.train) return;
  dgrad_ = std::make_unique<Gemm>(handle, g.dgrad);
  wgrad_ = std::make_unique<Gemm>(handle, g.wgrad);
}

void DenseLayer::forward(const void* x, const void* w, const void* b, void* y, void* ws,
                         cudaStream_t s, const void* residual) {
  fwd_->run(x, w, y, 1.0f, residual ? 1.0f : 0.0f, residual, b, ws, s);
}

void DenseLayer::backward_data(const void* dy, const void* w, void* dx, float beta,
                               const void* dx_in, void* ws, cudaStream_t s) {
  dgrad_->run(dy, w, dx, 1.0f, beta, dx_in, nullptr, ws, s);
}

void DenseLayer::backward_weight(const void* x, const void* dy, float* dw, float beta, void* ws,
                                 cudaStream_t s) {
  wgrad_->run(dy, x, dw, 1.0f, beta, nullptr, nullptr, ws, s);
}

}  // namespace gpuvs::models::bert
