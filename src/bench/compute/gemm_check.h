// Checks a GEMM's output against an FP64 reference computed on the GPU, and fills
// GEMM inputs with reproducible random values.
//
// The problem is D = scale * op(A) op(B) in the "TN" layout every GEMM here uses:
// A is stored K x M column-major (ld K), op(A) = A^T; B is stored K x N column-major
// (ld K); D is M x N column-major (ld M). So row i of op(A) and column j of B are
// both contiguous runs of K elements.
//
// Two checks, both against the inputs as stored (FP8, BF16 ... read exactly):
//  1. sampled elements: every element of a few whole rows and columns of D (always the
//     first and last, plus pseudo-random ones) against an FP64 dot product:
//       |d_ij - r_ij| <= tau * |scale| * sum_k |a_ik b_kj| + u_out * |r_ij|;
//  2. checksums over all of D: each row sum and column sum of D against the same sum
//     of the reference, obtained without the full product (e^T op(A) op(B) =
//     (e^T op(A)) op(B), and likewise for rows), bounded by summing the per-element
//     bound over the row or column.
// An element or checksum that is NaN fails (the comparison is written so that NaN
// never passes). Before the checked run the caller poisons D (fill_poison), so an
// element the GEMM does not write fails too. Tolerances per precision and why they
// hold are in docs/compute.md.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

namespace gpuvs {

enum class ElemType { kF64, kF32, kF16, kBF16, kE4M3, kE5M2, kI8, kI32 };

size_t elem_bytes(ElemType t);
const char* to_string(ElemType t);  // "bf16", "e4m3", "i8" ...

// `count` elements of pseudo-random values from `seed`: floating types uniform in
// [-1, 1) rounded to the type, INT8 uniform in [-127, 127]. Never zeros: tensor-core
// power (and so the clock under a power cap) depends on the data. Asynchronous.
void fill_random(void* data, ElemType type, size_t count, uint64_t seed, cudaStream_t stream);

// All bytes 0xFF: NaN in every floating type, -1 in INT32. Asynchronous.
void fill_poison(void* data, ElemType type, size_t count, cudaStream_t stream);

struct GemmView {
  const void* a = nullptr;  // (K, M) column-major, op(A) = A^T
  ElemType a_type = ElemType::kF32;
  const void* b = nullptr;  // (K, N) column-major
  ElemType b_type = ElemType::kF32;
  const void* d = nullptr;  // (M, N) column-major
  ElemType d_type = ElemType::kF32;
  int64_t m = 0, n = 0, k = 0;
  double scale = 1;  // D = scale * op(A) op(B): alpha times the FP8 scale factors
};

struct GemmTolerance {
  double relative = 0;         // tau, per unit of |scale| * sum_k |a_ik b_kj|
  double output_roundoff = 0;  // u_out, the unit roundoff of D's type (0: exact)
};

struct GemmCheck {
  bool passed = false;
  int64_t elements_checked = 0;
  int64_t element_failures = 0;
  int64_t checksums_checked = 0;  // M row sums + N column sums
  int64_t checksum_failures = 0;
  double worst_ratio = 0;      // largest |error| / bound seen (infinity for NaN)
  int64_t first_bad_row = -1;  // of the lowest failing sampled element (i * N + j order)
  int64_t first_bad_col = -1;
  int sampled_rows = 0;
  int sampled_cols = 0;
};

// Runs both checks on `stream` and synchronises it.
GemmCheck check_gemm(const GemmView& view, const GemmTolerance& tolerance, cudaStream_t stream);

}  // namespace gpuvs
