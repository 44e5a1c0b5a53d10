#include "models/layers/linear.h"

#include "core/error.h"
#include "gpu/check.h"
#include "models/layers/cuda_dtype.h"

namespace gpuvs::models {

// Column-major view (cuBLASLt's): D (m x n) = op(A) op(B); row-major PyTorch
// matrices are their transposes.
struct Linear::Plan {
  LtMatmulDesc desc;
  LtMatrixLayout a, b, d;
  cublasLtMatmulAlgo_t algo{};

  Plan(const LtHandle& h, cublasComputeType_t compute, cublasOperation_t ta, cublasOperation_t tb,
       cudaDataType_t ab_type, uint64_t a_rows, uint64_t a_cols, uint64_t b_rows, uint64_t b_cols,
       cudaDataType_t d_type, uint64_t m, uint64_t n)
      : desc(compute, CUDA_R_32F),
        a(ab_type, a_rows, a_cols, static_cast<int64_t>(a_rows)),
        b(ab_type, b_rows, b_cols, static_cast<int64_t>(b_rows)),
        d(d_type, m, n, static_cast<int64_t>(m)) {
    desc.set(CUBLASLT_MATMUL_DESC_TRANSA, ta);
    desc.set(CUBLASLT_MATMUL_DESC_TRANSB, tb);
    LtMatmulPreference pref(Linear::kWorkspaceBytes);
    const auto found = lt_heuristics(h, desc, a, b, d, d, pref, 1);
    if (found.empty()) throw Error("cuBLASLt has no algorithm for the classifier GEMM");
    algo = found[0].algo;
  }
};

Linear::Linear(const Params& p) : p_(p) {
  const cublasComputeType_t compute = p.tf32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F;
  const cudaDataType_t t = cuda_data_type(p.dtype);
  const uint64_t n = p.n, in = p.in, out = p.out;
  // y^T (out x N) = W^T-stored (in x out)^T * x^T (in x N)
  fwd_ = std::make_unique<Plan>(handle_, compute, CUBLAS_OP_T, CUBLAS_OP_N, t, in, out, in, n,
                                CUDA_R_32F, out, n);
  if (p.train) {
    // dx^T (in x N) = W-stored (in x out) * dy^T (out x N)
    dgrad_ = std::make_unique<Plan>(handle_, compute, CUBLAS_OP_N, CUBLAS_OP_N, t, in, out, out, n,
                                    t, in, n);
    // dW^T (in x out) = x^T (in x N) * (dy^T (out x N))^T
    wgrad_ = std::make_unique<Plan>(handle_, compute, CUBLAS_OP_N, CUBLAS_OP_T, t, in, n, out, n, t,
                                    in, out);
  }
}

Linear::~Linear() = default;

void Linear::run(const Plan& plan, const void* a, const void* b, float beta, void* d, void* ws,
                 cudaStream_t s) const {
  const float alpha = 1.0f;
  GPUVS_CUBLAS_CHECK(cublasLtMatmul(handle_.get(), plan.desc.get(), &alpha, a, plan.a.get(), b,
                                    plan.b.get(), &beta, d, plan.d.get(), d, plan.d.get(),
                                    &plan.algo, ws, kWorkspaceBytes, s));
}

void Linear::forward(const void* x, const void* w, float* y, void* ws, cudaStream_t s) const {
  run(*fwd_, w, x, 0.0f, y, ws, s);
}

void Linear::backward_data(const void* dy, const void* w, void* dx, void* ws,
                           cudaStream_t s) const {
  run(*dgrad_, w, dy, 0.0f, dx, ws, s);
}

void Linear::backward_weight(const void* x, const void* dy, void* dw, float beta, void* ws,
                             cudaStream_t s) const {
  run(*wgrad_, x, dy, beta, dw, ws, s);
}

}  // namespace gpuvs::models
