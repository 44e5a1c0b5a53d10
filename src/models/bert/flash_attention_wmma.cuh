// The WMMA fused attention for bf16 and fp16, head size 64 or 128 (kernels.h): softmax(Q K^T s +
// mask) with dropout, optionally causal, times V, without the (B, H, T, T) probabilities
// in memory; grouped-query attention reads one key/value head per group of query heads.
// The algorithm is FlashAttention-2's (Dao 2023, "FlashAttention-2: Faster Attention with
// Better Parallelism and Work Partitioning"): an online softmax over key tiles in the
// forward, which keeps the row's log-sum-exp; the backward recomputes the
// probabilities from it, one kernel for dK and dV (a block per key tile of a key/value
// head, looping over its group's query heads and their queries) and one for dQ (a block
// per query tile, looping over the keys), so no atomics and a fixed summation order.
// These kernels serve attention with dropout; without it flash_attention_forward and
// _backward run flash_attention_mma_{fwd,bwd}.cu's (same algorithm, tiles in registers).
// Tiles of 64 x 64, four warps of 16 rows each; the tensor-core products through WMMA
// (16 x 16 x 16, FP32 accumulation) with the score tiles staged in shared memory for
// the element-wise steps (a lane holds half a row: 8 runs of 4 columns, interleaved
// with its partner's, which reads and writes those tiles without bank conflicts). The
// forward keeps its output and its query tile in registers. Causal attention skips the
// key tiles above the diagonal (their probabilities are all zero) and masks inside the
// diagonal tile. Dropout draws the same mask as the unfused softmax (dropout_hash.h,
// element index row * T + key), so both paths drop the same probabilities: one hash per
// 4 consecutive keys, shared by shuffles in the dK/dV kernel, whose lanes hold a key's
// column of queries.
//
// What flash_attention.cu (the forward, delta and the dispatch) and
// flash_attention_wmma_bwd.cu (the dK/dV and dQ kernels) share.
#pragma once

#include <mma.h>

#include <type_traits>

#include "core/error.h"
#include "gpu/check.h"
#include "models/bert/device_util.cuh"
#include "models/bert/kernels.h"

namespace gpuvs::models::bert::wmma_detail {

namespace wmma = nvcuda::wmma;

constexpr int kTile = 64;            // queries or keys per tile
constexpr int kWarps = 4;            // 16 rows each
constexpr int kLds = kTile + 8;      // fp32 score tile row stride: 288 bytes
constexpr int kLdp = kTile + 8;      // 16-bit probability tile row stride: 144 bytes
constexpr int kWarpS = 16 * kLds;    // floats of one warp's 16 x 64 score tile
constexpr int kWarpP = 16 * kLdp;    // 16-bit elements of one warp's 16 x 64 P tile
constexpr int kWarpA = 16 * 16;      // floats of one warp's 16 x 16 row-factor tile
constexpr float kMaskBias = -1e30f;  // as the unfused softmax

// Shared memory of head size D. The 16-bit tiles of Q, K, V, dO (64 rows of D) are
// padded by 8 elements (16 bytes) a row, which staggers the rows over the banks; every
// fragment pointer stays 32-byte aligned (WMMA's rule). The forward stages its query
// tile in the space of the score, probability and row-factor tiles (it keeps the
// fragments). Head size 128: 65 KiB forward, 95 KiB backward (three and two blocks an
// SM on Hopper); head size 64: 49 and 64 KiB (four and three).
template <int D>
struct Layout {
  static constexpr int kLdh = D + 8;              // 16-bit tile row stride
  static constexpr int kHalfTile = kTile * kLdh;  // 16-bit elements of one 64-row tile
  static constexpr size_t kTileBytes = size_t(kHalfTile) * 2;
  static constexpr size_t kWorkBytes = kWarps * (kWarpS * 4 + kWarpP * 2 + kWarpA * 4);
  static_assert(kWorkBytes >= kTileBytes, "the forward stages Q in the work tiles");
  static constexpr size_t kFwdSmem = 2 * kTileBytes + kWorkBytes;
  static constexpr size_t kBwdSmem =
      4 * kTileBytes + kWarps * kWarpS * 4 + kWarps * kWarpP * 2 + 2 * kTile * 4;
};

// Blocks an SM that the kernels' registers must allow, as many as their shared memory
// does (Hopper, 227 KiB): launch bounds that keep ptxas from spending registers on a
// deeper schedule that costs a block an SM.
template <int D>
constexpr int kFwdBlocks = D == 64 ? 4 : 3;
template <int D>
constexpr int kBwdBlocks = D == 64 ? 3 : 2;

template <class T>
using FragA = wmma::fragment<wmma::matrix_a, 16, 16, 16, T, wmma::row_major>;
template <class T>
using FragB = wmma::fragment<wmma::matrix_b, 16, 16, 16, T, wmma::row_major>;
template <class T>
using FragBT = wmma::fragment<wmma::matrix_b, 16, 16, 16, T, wmma::col_major>;
using FragC = wmma::fragment<wmma::accumulator, 16, 16, 16, float>;

// Key/value heads: G of FlashArgs (0 means one per query head).
__host__ __device__ __forceinline__ int kv_groups(const FlashArgs& a) {
  return a.kv_heads > 0 ? a.kv_heads : a.heads;
}

// A 64 x D tile of (rows, D) at src into smem (row stride D + 8); 128 threads.
template <int D, class T>
__device__ __forceinline__ void load_tile(const T* __restrict__ src, T* dst) {
  for (int i = threadIdx.x; i < kTile * D / 8; i += kWarps * kWarp) {
    const int r = i / (D / 8), c = (i % (D / 8)) * 8;
    *reinterpret_cast<uint4*>(dst + r * Layout<D>::kLdh + c) =
        *reinterpret_cast<const uint4*>(src + int64_t(r) * D + c);
  }
}

// out (16 x 64, fp32 smem, ld kLds) = A (16 x 16 kK) B (16 kK x 64); A and B fragments
// loaded by the callables (kk: the 16-wide step of the inner dimension, n: the
// output's 16-column block). A's fragments are loaded once for the four column
// blocks; each output block still sums its kK products in order.
template <class T, int kK, class LoadA, class LoadB>
__device__ __forceinline__ void warp_gemm_to_smem(float* out, LoadA load_a, LoadB load_b) {
  FragA<T> a[kK];
#pragma unroll
  for (int kk = 0; kk < kK; ++kk)
    a[kk] = load_a(kk);
#pragma unroll
  for (int n = 0; n < 4; ++n) {
    FragC acc;
    wmma::fill_fragment(acc, 0.0f);
#pragma unroll
    for (int kk = 0; kk < kK; ++kk) {
      auto b = load_b(kk, n);
      wmma::mma_sync(acc, a[kk], b, acc);
    }
    wmma::store_matrix_sync(out + n * 16, acc, kLds, wmma::mem_row_major);
  }
}

// out (16 x 64, fp32 smem, ld kLds) = A B^T from two 16-bit tiles (row stride D + 8): A
// the warp's 16 rows at a (16 x D), B the 64 rows at b (64 x D).
template <class T, int D>
__device__ __forceinline__ void warp_gemm_abt(float* out, const T* a, const T* b) {
  constexpr int kLdh = Layout<D>::kLdh;
  warp_gemm_to_smem<T, D / 16>(
      out,
      [&](int kk) {
        FragA<T> x;
        wmma::load_matrix_sync(x, a + kk * 16, kLdh);
        return x;
      },
      [&](int kk, int n) {
        FragBT<T> x;
        wmma::load_matrix_sync(x, b + n * 16 * kLdh + kk * 16, kLdh);
        return x;
      });
}

// acc[n] (16 x D, n the 16-column block) += A (16 x 64, smem, ld kLdp) B (64 x D, smem,
// ld ldb): the products of a 64-wide step of the tiles.
template <class T, int D>
__device__ __forceinline__ void warp_gemm_acc(FragC* acc, const T* a, const T* b) {
  FragA<T> fa[4];
#pragma unroll
  for (int kk = 0; kk < 4; ++kk)
    wmma::load_matrix_sync(fa[kk], a + kk * 16, kLdp);
#pragma unroll
  for (int kk = 0; kk < 4; ++kk) {
#pragma unroll
    for (int n = 0; n < D / 16; ++n) {
      FragB<T> fb;
      wmma::load_matrix_sync(fb, b + kk * 16 * Layout<D>::kLdh + n * 16, Layout<D>::kLdh);
      wmma::mma_sync(acc[n], fa[kk], fb, acc[n]);
    }
  }
}

// The element-wise steps: lane 2r + half holds row r of a warp's 16 x 64 tile, its j-th
// value (j < 32) in column col(j) = 8 (j / 4) + 4 half + j % 4: runs of 4 columns
// alternating with its partner's, so that a quarter warp's 16-byte loads of the fp32
// tiles (row stride 72 floats) and a half warp's 8-byte stores of the 16-bit ones (72
// elements) each touch every bank once.
__device__ __forceinline__ int col_of(int j, int half) {
  return 8 * (j >> 2) + 4 * half + (j & 3);
}

__device__ __forceinline__ float4 load4(const float* p) {
  return *reinterpret_cast<const float4*>(p);
}

// Run c of a lane's row of a 16-bit tile: v[e] to column col(4c + e).
template <class T>
__device__ __forceinline__ void store_run(T* row, int c, int half, const float* v) {
  Packed<T, 4> p;
#pragma unroll
  for (int e = 0; e < 4; ++e)
    p.e[e] = from_f<T>(v[e]);
  store_packed(row + 8 * c + 4 * half, p);
}

// Keep bits (bit j: column col(j)) of a lane's 32 elements of one row whose first
// element (column 0 of the tile) has index i0 (i0 % 4 == 0): a run of 4 columns is one
// hash group.
__device__ __forceinline__ uint32_t row_keep_bits(const DropMask& drop, uint64_t i0, int half) {
  if (!drop.on) return 0xFFFFFFFFu;
  uint32_t bits = 0;
#pragma unroll
  for (int c = 0; c < 8; ++c)
    bits |= drop_keep4(drop.key, (i0 >> 2) + 2 * c + half, drop.threshold) << (4 * c);
  return bits;
}

// A warp's 16 x D accumulators as rows of out (row stride D; lane 2r + half writes row
// r's columns half * 32 + [0, 32) of each 64), times sc (the lane's row's factor),
// through the warp's 16 x 64 fp32 score tile st, 64 columns at a time.
template <class T, int D>
__device__ __forceinline__ void store_rows(const FragC* acc, float* st, T* out_row, float sc, int r,
                                           int half) {
#pragma unroll
  for (int c = 0; c < D / 64; ++c) {
#pragma unroll
    for (int n = 0; n < 4; ++n)
      wmma::store_matrix_sync(st + n * 16, acc[c * 4 + n], kLds, wmma::mem_row_major);
    __syncwarp();
#pragma unroll
    for (int q = 0; q < 4; ++q) {
      const float4 a = load4(st + r * kLds + half * 32 + 8 * q);
      const float4 b = load4(st + r * kLds + half * 32 + 8 * q + 4);
      Packed<T, 8> p;
      p.e[0] = from_f<T>(a.x * sc);
      p.e[1] = from_f<T>(a.y * sc);
      p.e[2] = from_f<T>(a.z * sc);
      p.e[3] = from_f<T>(a.w * sc);
      p.e[4] = from_f<T>(b.x * sc);
      p.e[5] = from_f<T>(b.y * sc);
      p.e[6] = from_f<T>(b.z * sc);
      p.e[7] = from_f<T>(b.w * sc);
      store_packed(out_row + c * 64 + half * 32 + 8 * q, p);
    }
    __syncwarp();
  }
}

// The query tile and heads of a block of the forward or dQ kernel: blocks run the
// query tiles of a head from the last to the first, so that under a causal mask the
// longest (the last tiles, with the most keys) start first and the short ones fill the
// end of the grid.
struct QueryBlock {
  int q0;       // first query of the tile
  int64_t bh;   // (b, h) of the queries: b * H + h
  int64_t b;    // batch
  int64_t bkv;  // (b, g) of the keys and values: b * G + h / (H / G)
};

__device__ __forceinline__ QueryBlock query_block(const FlashArgs& a) {
  const int tiles = a.seq / kTile;
  const int groups = kv_groups(a);
  QueryBlock q;
  q.bh = blockIdx.x / tiles;
  q.q0 = (tiles - 1 - int(blockIdx.x % tiles)) * kTile;
  q.b = q.bh / a.heads;
  q.bkv = q.b * groups + (q.bh % a.heads) / (a.heads / groups);
  return q;
}

// The kernel's shared memory over the 48 KiB default, and the largest carveout: the
// blocks an SM the tiles allow (two to four) need most of the SM's 228 KiB.
template <class Kernel>
void allow_smem(Kernel k, size_t smem) {
  GPUVS_CUDA_CHECK(cudaFuncSetAttribute(k, cudaFuncAttributeMaxDynamicSharedMemorySize, int(smem)));
  GPUVS_CUDA_CHECK(cudaFuncSetAttribute(k, cudaFuncAttributePreferredSharedMemoryCarveout,
                                        int(cudaSharedmemCarveoutMaxShared)));
}

// One block per tile of each of `rows` (b, head) pairs, in a one-dimensional grid
// (B * H can pass the 65535 blocks of a grid's y).
template <class Kernel, class Args>
void launch(Kernel k, size_t smem, const Args& args, int64_t rows, int seq, cudaStream_t s) {
  const int64_t blocks = rows * (seq / kTile);
  if (blocks >= (int64_t(1) << 31)) throw Error("fused attention: too many tiles for one grid");
  k<<<static_cast<unsigned>(blocks), kWarps * kWarp, smem, s>>>(args);
  GPUVS_CUDA_CHECK_LAUNCH();
}

// The dK/dV and dQ kernels after delta (flash_attention_wmma_bwd.cu), and their
// shared-memory limits.
void backward_kernels(const FlashBackwardArgs& a, cudaStream_t s);
void init_backward_kernels();

}  // namespace gpuvs::models::bert::wmma_detail
