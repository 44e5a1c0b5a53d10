// Tensor-core (and plain FP32) GEMMs through cuBLASLt (gpu/lt_gemm.h): the precisions,
// their cuBLASLt types and check tolerances, and a runner that owns one precision's
// operands and picks an algorithm for a shape by timing cuBLASLt's top heuristics.
//
// Every GEMM is D = alpha * op(A) op(B) (+ beta C with beta = 0, C = D) in the "TN"
// layout, the one FP8 and INT8 require and the fastest for the others: A stored K x M
// column-major with op(A) = A^T, B stored K x N column-major, D M x N column-major.
// FLOPs per GEMM: 2 M N K (a multiply-add is 2), INT8 the same count in OP.
#pragma once

#include <cublasLt.h>

#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "bench/benchmarks.h"
#include "bench/compute/arch_rates.h"
#include "bench/compute/gemm_check.h"
#include "gpu/cublaslt.h"
#include "gpu/device.h"
#include "gpu/lt_gemm.h"
#include "measure/harness.h"

namespace gpuvs {

enum class GemmPrecision { kFp64, kFp32, kTf32, kFp16, kBf16, kFp8E4m3, kFp8E5m2, kInt8 };

struct GemmTypes {
  std::string_view name;      // "bf16": result ids compute.gemm.<name>
  std::string_view label;     // "BF16 GEMM"
  ElemType a, b, d;           // C has D's type
  GemmElem a_lt, b_lt, d_lt;  // the same types as cuBLASLt takes them
  GemmCompute compute;
  std::string_view compute_name;  // "32F", "32F_FAST_TF32", "64F", "32I"
  GemmElem scale;                 // type of alpha and beta
  ArithRate rate;
  bool op_unit;            // reported in OP/s (integer), else FLOP/s
  float scale_a, scale_b;  // FP8 per-tensor scale factors (1 elsewhere)
  GemmTolerance tolerance;
  std::string_view tolerance_why;  // one line; docs/compute.md has the long form
  int min_cc;                      // compute capability x 10 (89: 8.9)
};

std::span<const GemmPrecision> gemm_precisions();
const GemmTypes& gemm_types(GemmPrecision p);

// Why this GPU (compute capability "9.0") cannot run the precision, or nullopt.
std::optional<std::string> gemm_unsupported_reason(GemmPrecision p, std::string_view cc);

// Bytes of A + B + C + D for one GEMM (the roofline's convention, docs/compute.md).
double gemm_operand_bytes(GemmPrecision p, GemmShape s);

// An algorithm chosen for one shape, with what it took to choose it.
struct GemmAlgo {
  GemmShape shape;
  cublasLtMatmulAlgo_t algo{};
  size_t workspace_bytes = 0;
  int heuristic_index = 0;  // rank in cuBLASLt's list; 0 is its first choice
  int tried = 0;            // algorithms timed
  LtAlgoConfig config;
  double seconds = 0;                  // median seconds per GEMM while choosing (search options)
  std::shared_ptr<const LtGemm> gemm;  // the shape's descriptor and layouts
};

// Cheap harness options for choosing among algorithms and shapes: a few short samples.
MeasureOptions gemm_search_options();

class GemmRunner {
 public:
  // Allocates operands large enough for every shape within `capacity` (each of M, N,
  // K at most capacity's) and fills A and B with random values.
  GemmRunner(GemmPrecision p, GemmShape capacity, const LtHandle& handle, cudaStream_t stream);
  GemmRunner(const GemmRunner&) = delete;
  GemmRunner& operator=(const GemmRunner&) = delete;

  GemmPrecision precision() const { return p_; }
  const GemmTypes& types() const { return types_; }

  // Times up to `max_algos` of cuBLASLt's heuristic algorithms for `shape` with the
  // harness under `search` and returns the fastest; nullopt when cuBLASLt has none.
  std::optional<GemmAlgo> choose(GemmShape shape, int max_algos, const MeasureOptions& search,
                                 WallClock& clock);

  // Enqueues one GEMM with `algo` on `stream`.
  void enqueue(const GemmAlgo& algo, cudaStream_t stream) const;

  // Poisons D, runs one GEMM with `algo`, and checks it (gemm_check.h).
  GemmCheck run_and_check(const GemmAlgo& algo);
  // Checks D as it is now, without running anything.
  GemmCheck check(GemmShape shape);
  Validation validate(const GemmAlgo& algo);

  // The operands as check_gemm sees them for `shape` (scale: alpha x FP8 scales).
  GemmView view(GemmShape shape) const;
  void* d() const { return d_.get(); }  // (M, N) column-major, for tests

 private:
  void enqueue(const LtGemm& gemm, const LtAlgo& algo, cudaStream_t stream) const;

  GemmPrecision p_;
  const GemmTypes& types_;
  GemmShape capacity_;
  const LtHandle& handle_;
  cudaStream_t stream_;
  DeviceBuffer a_, b_, d_, scales_, workspace_;
  const float* a_scale_ = nullptr;  // FP8: the scale factors' device slots
  const float* b_scale_ = nullptr;
  alignas(8) unsigned char alpha_[8] = {};
  alignas(8) unsigned char beta_[8] = {};
};

// One line for a Result's validation field.
std::string describe_check(const GemmCheck& c, const GemmTolerance& t);

// What compute.gemm runs; run_compute_gemm (compute/gemm.cpp) picks these from the context.
struct GemmBenchOptions {
  std::vector<GemmPrecision> precisions;  // empty: every precision, in table order
  GemmShape standard{8192, 8192, 8192};
  bool search_best = true;  // also search shapes for compute.gemm.<p>.best
  int max_algos = 8;        // cuBLASLt heuristic algorithms timed per measured shape
  // Idle seconds before each measured figure, and before each shape the search times:
  // a GPU that has just run another precision's GEMMs starts power-capped, which would
  // make every figure depend on what ran before it.
  double rest_s = 0;
  double search_rest_s = 0;
  // Also measure compute.gemm.<p>.sustained: the standard shape after `preload_s` of
  // back-to-back products, once the clock has settled under the power cap.
  bool sustained = false;
  double preload_s = 1.0;
  std::optional<std::string> compute_capability;  // instead of the GPU's (tests)
};

// Results: compute.gemm.<p> for each precision, compute.gemm.<p>.best when searching,
// compute.gemm.<p>.sustained when asked; a precision the GPU cannot run gives
// status-unsupported results.
std::vector<Result> run_gemm_bench(BenchContext& ctx, const GemmBenchOptions& options);

}  // namespace gpuvs
