#include "models/layers/fully_connected.h"

#include "gpu/check.h"
#include "models/layers/gemm_dtype.h"

namespace gpuvs::models {

namespace {

std::unique_ptr<LtGemm> classifier_gemm(const LtHandle& h, const RowMajorGemm& g) {
  auto gemm = std::make_unique<LtGemm>(h, to_lt_spec(g));
  gemm->choose_first(FullyConnected::kWorkspaceBytes, "the classifier GEMM");
  return gemm;
}

}  // namespace

FullyConnected::FullyConnected(const Params& p) : p_(p) {
  DenseGemms g = dense_gemms(p.n, p.in, p.out, p.in, gemm_elem(p.dtype), p.tf32);
  g.forward.c = GemmElem::kF32;  // the loss reads FP32 logits
  fwd_ = classifier_gemm(handle_, g.forward);
  if (!p.train) return;
  dgrad_ = classifier_gemm(handle_, g.dgrad);
  wgrad_ = classifier_gemm(handle_, g.wgrad);
}

void FullyConnected::run(const LtGemm& g, const void* a, const void* b, float beta, void* d,
                         void* ws, cudaStream_t s) const {
  const float alpha = 1.0f;
  LtOperands o;
  o.alpha = &alpha;
  o.beta = &beta;
  o.a = b;  // cuBLASLt's A is the row-major B (gpu/gemm_spec.h)
  o.b = a;
  o.d = d;
  o.workspace = ws;
  o.workspace_bytes = kWorkspaceBytes;
  o.stream = s;
  GPUVS_CUBLAS_CHECK(g.matmul(o));
}

void FullyConnected::forward(const void* x, const void* w, float* y, void* ws,
                             cudaStream_t s) const {
  run(*fwd_, x, w, 0.0f, y, ws, s);
}

void FullyConnected::backward_data(const void* dy, const void* w, void* dx, void* ws,
                                   cudaStream_t s) const {
  run(*dgrad_, dy, w, 0.0f, dx, ws, s);
}

void FullyConnected::backward_weight(const void* x, const void* dy, void* dw, float beta, void* ws,
                                     cudaStream_t s) const {
  run(*wgrad_, dy, x, beta, dw, ws, s);
}

}  // namespace gpuvs::models
