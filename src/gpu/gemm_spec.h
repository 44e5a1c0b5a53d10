// What one cuBLASLt GEMM is, in plain C++ (no CUDA header, so the arithmetic and the
// texts are tested on machines without a GPU): its shape, the element types, the
// column-major operands cuBLASLt takes, the row-major (PyTorch) form the models write
// and its translation, the FP8 rules, the order of FP8 attempts, the choice of the
// fastest timed algorithm, and the words a plan is described in. gpu/lt_gemm.h runs it.
//
// cuBLASLt computes D = alpha op(A) op(B) + beta C on column-major matrices, C with
// D's layout. A row-major matrix is the column-major view of its transpose, so a
// row-major C = op(A) op(B) runs as C^T = op(B)^T op(A)^T: operands swapped, each
// transposed flag kept, C's rows becoming D's columns.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace gpuvs {

// M, N, K of D (M x N) = op(A) (M x K) op(B) (K x N).
struct GemmShape {
  int64_t m = 0, n = 0, k = 0;
  double flops() const { return 2.0 * double(m) * double(n) * double(k); }
  bool operator==(const GemmShape&) const = default;
};

// Element types of GEMM operands (cudaDataType_t in gpu/lt_gemm.cpp).
enum class GemmElem { kF64, kF32, kF16, kBF16, kE4M3, kE5M2, kI8, kI32 };

size_t gemm_elem_bytes(GemmElem t);
bool is_fp8(GemmElem t);

// Compute types (cublasComputeType_t): FP32 on TF32 tensor cores is k32FFastTf32.
enum class GemmCompute { k64F, k32F, k32FFastTf32, k32I };

// A column-major rows x cols matrix as a cuBLASLt layout holds it, with `batch`
// matrices `stride` elements apart.
struct LtMatrix {
  GemmElem type = GemmElem::kF32;
  int64_t rows = 0, cols = 0, ld = 0;
  int batch = 1;
  int64_t stride = 0;
  // Bytes one matrix of the batch spans (cols x ld elements).
  size_t bytes() const { return size_t(cols) * size_t(ld) * gemm_elem_bytes(type); }
  bool operator==(const LtMatrix&) const = default;
};

// One GEMM in cuBLASLt's terms: D = alpha op(A) op(B) + beta C, C in D's layout.
struct LtGemmSpec {
  bool trans_a = false, trans_b = false;
  LtMatrix a, b, d;
  GemmCompute compute = GemmCompute::k32F;
  GemmElem scale = GemmElem::kF32;  // alpha and beta
  bool bias = false;                // + bias (d.rows), fused where cuBLASLt takes it
  // FP8 (A or B in E4M3/E5M2): fast accumulation is tried first; the trial run uses
  // beta 1 with `accumulate`; a_scale / b_scale are the device scale pointers of the
  // trial run (null: 1 in a slot of the GEMM's own), as aligned as the real ones.
  bool fast_accum = false;
  bool accumulate = false;
  const float* a_scale = nullptr;
  const float* b_scale = nullptr;

  bool fp8() const { return is_fp8(a.type) || is_fp8(b.type); }
};

// The "TN" GEMM of compute.gemm: A stored K x M (op(A) = A^T), B stored K x N, D M x N,
// every leading dimension the matrix's row count.
LtGemmSpec tn_gemm(GemmShape s, GemmElem a, GemmElem b, GemmElem d);

// C (m, n) = alpha op(A) op(B) + beta C_in [+ bias (n)] in row-major (PyTorch) terms:
// op(A) is (m, k), A stored (m, k) or, with ta, (k, m); op(B) is (k, n), B stored
// (k, n) or, with tb, (n, k); leading dimensions are row strides. The bias then runs
// along cuBLASLt's D rows, per output feature, as its BIAS epilogue wants.
//
// FP8 (A in E4M3 or E5M2, B in E4M3; C bf16 or FP32): cuBLASLt's FP8 kernels take only
// its "TN" form, here ta false and tb true (cuBLASLt docs, cublasLtMatmul, FP8 section,
// Hopper): sizes and leading dimensions multiples of 16, E5M2 x E5M2 not supported,
// FP32 compute, bias bf16.
struct RowMajorGemm {
  bool ta = false, tb = false;
  int64_t m = 0, n = 0, k = 0;
  int64_t lda = 0, ldb = 0, ldc = 0;
  int batch = 1;
  int64_t stride_a = 0, stride_b = 0, stride_c = 0;  // elements between batches
  GemmElem a = GemmElem::kF32, b = GemmElem::kF32, c = GemmElem::kF32;
  bool tf32 = false;  // FP32 operands on TF32 tensor cores
  bool bias = false;
  bool accumulate = false;         // run() may get beta != 0 (FP8 trial runs use beta 1 then)
  bool fast_accum = false;         // FP8: faster, less exact accumulation where cuBLASLt runs it
  const float* a_scale = nullptr;  // FP8 trial-run scales (LtGemmSpec)
  const float* b_scale = nullptr;
  std::string name;  // in messages: "ffn1 fwd", ...

  bool fp8() const { return is_fp8(a) || is_fp8(b); }
  double flops() const { return 2.0 * double(m) * double(n) * double(k) * batch; }
};

// The three GEMMs of a dense layer y = x W^T (PyTorch's nn.Linear) on `rows` rows,
// every operand of type `t` (callers change what differs, such as an FP32 output):
// forward y (rows, out) = x (rows, in) (W stored (out, in))^T, dgrad dx (rows, in) =
// dy (rows, out) W, wgrad dW (out, in) = (dy stored (rows, out))^T x. x's rows, and
// dx's, are `ld_x` apart.
struct DenseGemms {
  RowMajorGemm forward, dgrad, wgrad;
};
DenseGemms dense_gemms(int64_t rows, int64_t in, int64_t out, int64_t ld_x, GemmElem t, bool tf32);

// cuBLASLt's view of `g`: its A is g's B, its B g's A, its D (n x m) g's C.
LtGemmSpec to_lt_spec(const RowMajorGemm& g);

// "ffn1 fwd: m 512 n 4096 k 1024, A e4m3 stored (m, k), B e4m3 stored (n, k), D bf16,
// + bias": what a message about this GEMM says.
std::string describe(const RowMajorGemm& g);

// Why an FP8 GEMM cannot run as written (a message naming it), or nullopt.
std::optional<std::string> fp8_layout_problem(const RowMajorGemm& g);

// The FP8 trials in order: the bias fused before separate, fast accumulation before
// exact, each only where asked for.
struct Fp8Attempt {
  bool fuse_bias = false;
  bool fast_accum = false;
};
std::vector<Fp8Attempt> fp8_attempts(bool bias, bool fast_accum);
// "; bias fused, fast accumulation on: 3 algorithm(s), last status ..." for the error
// that lists the attempts none of which ran.
std::string describe_failed_attempt(const Fp8Attempt& a, size_t algorithms,
                                    std::string_view status);

// The algorithm one GEMM runs and why: cuBLASLt's id and tile, whether the bias is fused.
struct LtPlan {
  int heuristic_index = 0;  // rank in cuBLASLt's list; 0 is its first choice
  int algo_id = -1, tile = -1;
  bool bias = false;  // a bias was asked for
  bool fused_bias = false;
  bool fast_accum = false;
};
// "algo 21 tile 18, bias fused, fast accumulation".
std::string describe(const LtPlan& p);

// The fastest of `count` candidates: time(i) gives candidate i's seconds, nullopt where
// it does not run. Two passes, the second in reverse order, keeping each candidate's
// faster time: the GPU warms up (and its clock falls under a power cap) while they are
// timed, which would otherwise favour the ones timed first. A candidate that fails in
// the first pass is not timed again. Ties go to the earlier candidate.
struct FastestPick {
  size_t index = 0;
  double seconds = 0;
  int tried = 0;  // candidates that ran
};
std::optional<FastestPick> pick_fastest(size_t count,
                                        const std::function<std::optional<double>(size_t)>& time);

}  // namespace gpuvs
