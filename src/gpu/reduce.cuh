// Warp and block reductions for gpuvs's kernels (nvcc only). Every kernel reduces
// through these so that a reduction's order is chosen by name, not rewritten per
// kernel: the result of a floating-point reduction depends on its tree, and kernels
// compared bit for bit (deterministic mode), against PyTorch or against exact
// checksums keep the tree they were validated with.
//
// Trees of a warp reduction over groups of kLanes lanes (kLanes a power of two, at
// most 32; each group is kLanes consecutive lanes):
//   ShuffleTree::kButterfly: xor shuffles with offsets kLanes / 2, ..., 2, 1, each step
//     v = op(v, partner's v); every lane ends with its group's result (and all lanes
//     of a group hold the same bits).
//   ShuffleTree::kDown: down shuffles with offsets kLanes / 2, ..., 1, each step
//     v = op(v, v of the lane `offset` above); the group's first lane ends with the
//     result, the other lanes with partial values.
// The group's first lane ends with the same bits in both trees (every lane it depends
// on sits below the offset, where l ^ offset == l + offset); they differ in what the
// other lanes hold. A block reduction reduces each warp with its tree, then folds the warps'
// results in warp order, op(...op(op(w0, w1), w2)..., w_last). (The kernels that started from the
// identity, s = 0, s += w0, ..., give the same bits: their warp sums come from accumulators started
// at +0, which round-to-nearest never turns into -0.)
//
// Preconditions:
// - Warp reductions use full-mask shuffles: all 32 lanes of the warp call them
//   together (no lane has returned or diverged), whatever kLanes is.
// - Block reductions: blockDim == (kThreads, 1, 1), kThreads a multiple of 32 from 32
//   to 1024 (asserted in debug builds); every thread of the block calls them (they
//   contain __syncthreads); `scratch` is the block's shared array of kThreads / 32
//   values, declared `__shared__ BlockScratch<T, kThreads> scratch;`, not used by the
//   kernel for anything else while a reduction runs.
// - T: an arithmetic type of 4 or 8 bytes (shuffled natively) or a trivially
//   copyable struct whose size is a multiple of 4 bytes (shuffled word by word, which
//   moves the same bits).
//
// The warp size is the compile-time kWarpSize: CUDA's warpSize is 32 on every NVIDIA
// GPU but is not a constant expression, so shuffle loops over it would not unroll;
// tests/gpu/test_reduce.cpp checks the device's warpSize against it.
#pragma once

#include <cassert>
#include <cstdint>
#include <cstring>
#include <type_traits>

namespace gpuvs {

inline constexpr int kWarpSize = 32;
inline constexpr unsigned kFullWarpMask = 0xffffffffu;

enum class ShuffleTree { kButterfly, kDown };

// Shared memory of a block reduction of kThreads threads: one value per warp.
template <class T, int kThreads>
using BlockScratch = T[kThreads / kWarpSize];

struct SumOp {
  template <class T>
  __device__ __forceinline__ T operator()(T a, T b) const {
    return a + b;
  }
};

// Max and min: fmaxf / fmax (fminf / fmin) for floating point, where a NaN loses to a
// number; operator< otherwise.
template <bool kMax>
struct ExtremumOp {
  __device__ __forceinline__ float operator()(float a, float b) const {
    return kMax ? fmaxf(a, b) : fminf(a, b);
  }
  __device__ __forceinline__ double operator()(double a, double b) const {
    return kMax ? fmax(a, b) : fmin(a, b);
  }
  template <class T>
  __device__ __forceinline__ T operator()(T a, T b) const {
    return (kMax ? a < b : b < a) ? b : a;
  }
};
using MaxOp = ExtremumOp<true>;
using MinOp = ExtremumOp<false>;

namespace reduce_detail {

template <class T>
constexpr bool kNativeShuffle = std::is_arithmetic_v<T> && (sizeof(T) == 4 || sizeof(T) == 8);

template <ShuffleTree kTree, int kLanes, class T>
__device__ __forceinline__ T shuffle(T v, int offset) {
  if constexpr (kNativeShuffle<T>) {
    if constexpr (kTree == ShuffleTree::kButterfly) {
      return __shfl_xor_sync(kFullWarpMask, v, offset, kLanes);
    } else {
      return __shfl_down_sync(kFullWarpMask, v, static_cast<unsigned>(offset), kLanes);
    }
  } else {
    static_assert(std::is_trivially_copyable_v<T> && sizeof(T) % 4 == 0,
                  "reductions shuffle 4-byte words: T must be trivially copyable, a "
                  "multiple of 4 bytes");
    constexpr int kWords = static_cast<int>(sizeof(T) / 4);
    uint32_t w[kWords];
    memcpy(w, &v, sizeof(T));
#pragma unroll
    for (int i = 0; i < kWords; ++i)
      w[i] = shuffle<kTree, kLanes>(w[i], offset);
    T out;
    memcpy(&out, w, sizeof(T));
    return out;
  }
}

template <int kThreads>
__device__ __forceinline__ void check_block() {
  static_assert(kThreads % kWarpSize == 0 && kThreads >= kWarpSize && kThreads <= 1024,
                "block reductions need a block of whole warps, at most 1024 threads");
  assert(blockDim.x == kThreads && blockDim.y == 1 && blockDim.z == 1);
}

// The warps' results, folded in warp order (scratch written and synchronised).
template <int kThreads, class T, class Op>
__device__ __forceinline__ T fold_warps(const T* scratch, Op op) {
  T r = scratch[0];
#pragma unroll
  for (int w = 1; w < kThreads / kWarpSize; ++w)
    r = op(r, scratch[w]);
  return r;
}

}  // namespace reduce_detail

// The reduction of v over each group of kLanes lanes (see the trees above).
template <ShuffleTree kTree, int kLanes = kWarpSize, class T, class Op>
__device__ __forceinline__ T warp_reduce(T v, Op op) {
  static_assert(kLanes >= 1 && kLanes <= kWarpSize && (kLanes & (kLanes - 1)) == 0,
                "kLanes: a power of two up to the warp size");
#pragma unroll
  for (int offset = kLanes / 2; offset > 0; offset >>= 1)
    v = op(v, reduce_detail::shuffle<kTree, kLanes>(v, offset));
  return v;
}

namespace reduce_detail {

// Each warp's result in scratch[warp], synchronised; returns the thread's warp value.
template <int kThreads, ShuffleTree kTree, class T, class Op>
__device__ __forceinline__ T publish_warps(T v, Op op, T* scratch) {
  check_block<kThreads>();
  v = warp_reduce<kTree>(v, op);
  if (threadIdx.x % kWarpSize == 0) scratch[threadIdx.x / kWarpSize] = v;
  __syncthreads();
  return v;
}

}  // namespace reduce_detail

// Butterfly sum and max over the warp: every lane gets the result.
template <class T>
__device__ __forceinline__ T warp_sum(T v) {
  return warp_reduce<ShuffleTree::kButterfly>(v, SumOp{});
}

template <class T>
__device__ __forceinline__ T warp_max(T v) {
  return warp_reduce<ShuffleTree::kButterfly>(v, MaxOp{});
}

// The reduction of v over the block, valid in thread 0 only (other threads get an
// unspecified value). Synchronises once; the caller synchronises again before reusing
// scratch.
template <int kThreads, ShuffleTree kTree, class T, class Op>
__device__ __forceinline__ T block_reduce(T v, Op op, T* scratch) {
  v = reduce_detail::publish_warps<kThreads, kTree>(v, op, scratch);
  return threadIdx.x == 0 ? reduce_detail::fold_warps<kThreads>(scratch, op) : v;
}

// The reduction of v over the block, in every thread (each folds the warps' results
// in the same order, so all get the same bits). Synchronises twice; scratch may be
// reused as soon as it returns.
template <int kThreads, ShuffleTree kTree, class T, class Op>
__device__ __forceinline__ T block_reduce_all(T v, Op op, T* scratch) {
  reduce_detail::publish_warps<kThreads, kTree>(v, op, scratch);
  const T r = reduce_detail::fold_warps<kThreads>(scratch, op);
  __syncthreads();
  return r;
}

// Shared memory of a column reduction: a (kRows, kCols) tile, padded by a column so
// that neither the row writes nor the column reads conflict on banks.
template <class T, int kRows, int kCols>
using ColumnScratch = T[kRows][kCols + 1];

// The reduction over the rows of a (kRows, kCols) tile of per-thread values, such as
// partial sums of columns: thread (row, col) gives v; the threads of row 0 get their
// column's op(...op(op(r0, r1), r2)..., r_last), in row order; the others get v back.
// Every thread of the block calls it with a distinct (row, col), row < kRows and
// col < kCols (it contains __syncthreads); scratch is the block's
// `__shared__ ColumnScratch<T, kRows, kCols>`. Synchronises once; the caller
// synchronises again before reusing scratch.
template <int kRows, int kCols, class T, class Op>
__device__ __forceinline__ T column_reduce(T v, int row, int col, Op op, T (*scratch)[kCols + 1]) {
  scratch[row][col] = v;
  __syncthreads();
  if (row != 0) return v;
  T r = scratch[0][col];
#pragma unroll
  for (int k = 1; k < kRows; ++k)
    r = op(r, scratch[k][col]);
  return r;
}

}  // namespace gpuvs
