// One cuBLASLt GEMM (gpu/gemm_spec.h says what it computes): it builds the matmul
// descriptor and the matrix layouts from an LtGemmSpec, asks cuBLASLt's heuristic for
// algorithms, chooses one (the heuristic's first, the first FP8 algorithm that really
// runs, or one the caller timed), carries the epilogue, bias and FP8 scale pointers,
// and runs it. Every GEMM of the benchmarks and the models goes through this type;
// what a layer adds is its operands' shapes (RowMajorGemm) and the kernels around.
#pragma once

#include <cublasLt.h>
#include <cuda_runtime_api.h>

#include <cstddef>
#include <string_view>
#include <vector>

#include "gpu/cublaslt.h"
#include "gpu/gemm_spec.h"

namespace gpuvs {

// An algorithm cuBLASLt's heuristic offered.
struct LtAlgo {
  cublasLtMatmulAlgo_t algo{};
  size_t workspace_bytes = 0;  // what it needs, at most the preference's limit
  int heuristic_index = 0;     // rank in cuBLASLt's list; 0 is its first choice
};

// One cublasLtMatmul call's pointers: D = alpha op(A) op(B) + beta C.
struct LtOperands {
  const void* alpha = nullptr;  // host values of the spec's scale type
  const void* beta = nullptr;
  const void* a = nullptr;
  const void* b = nullptr;
  const void* c = nullptr;  // null: D (C and D share a layout)
  void* d = nullptr;
  void* workspace = nullptr;
  size_t workspace_bytes = 0;
  cudaStream_t stream = nullptr;
};

class LtGemm {
 public:
  LtGemm(const LtHandle& handle, const LtGemmSpec& spec);
  LtGemm(const LtGemm&) = delete;
  LtGemm& operator=(const LtGemm&) = delete;

  const LtGemmSpec& spec() const { return spec_; }

  // Up to `max_count` algorithms in cuBLASLt's heuristic order under a preference of
  // `max_workspace_bytes`: empty when cuBLASLt has none for this problem
  // (CUBLAS_STATUS_NOT_SUPPORTED); any other failure throws.
  std::vector<LtAlgo> heuristics(size_t max_workspace_bytes, int max_count) const;

  // The heuristic's first algorithm, with the bias epilogue where the spec asks for a
  // bias and some algorithm takes it (else the caller adds the bias: plan().fused_bias
  // false). Throws Error "cuBLASLt has no algorithm for <subject>".
  void choose_first(size_t max_workspace_bytes, std::string_view subject);
  // FP8: the scale (and bias) pointers are set before the heuristic query, since
  // cuBLASLt picks kernels by them; every candidate of each attempt (fp8_attempts) is
  // then run once on scratch memory, as the heuristic alone has accepted FP8 GEMMs that
  // cublasLtMatmul then refused (CUBLAS_STATUS_NOT_SUPPORTED on the first H200 run).
  // The first that runs is chosen; where none does, throws an Error naming `subject`
  // and every attempt. Synchronises the device.
  void choose_fp8_by_trial(size_t max_workspace_bytes, std::string_view subject);
  // An algorithm the caller picked (timed) from heuristics().
  void choose(const LtAlgo& algo);

  const LtPlan& plan() const { return plan_; }

  // FP8: the device scale factors of cuBLASLt's A and B for the next runs.
  void set_fp8_scales(const float* a_scale, const float* b_scale);
  // The bias (d.rows) of the next runs, where the plan fuses it.
  void set_bias(const void* bias);

  // cublasLtMatmul with the chosen algorithm, or with `algo`; the status is returned
  // for the caller's message.
  cublasStatus_t matmul(const LtOperands& o) const { return matmul(o, algo_); }
  cublasStatus_t matmul(const LtOperands& o, const cublasLtMatmulAlgo_t& algo) const;

 private:
  std::vector<LtAlgo> query(const LtMatmulPreference& pref, int max_count) const;
  void chose(const cublasLtMatmulAlgo_t& algo, int heuristic_index);

  const LtHandle& handle_;
  LtGemmSpec spec_;
  LtMatmulDesc desc_;
  LtMatrixLayout a_, b_, d_;
  cublasLtMatmulAlgo_t algo_{};
  LtPlan plan_;
};

}  // namespace gpuvs
