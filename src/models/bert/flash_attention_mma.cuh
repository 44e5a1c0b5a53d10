// Fused attention without dropout (kernels.h: flash_attention_forward and _backward
// dispatch here when drop.p == 0; the forward kernel in flash_attention_mma_fwd.cu, the
// backward ones in flash_attention_mma_bwd.cu, what they share here): the FlashAttention-2 design
// (Dao 2023) on warp-level tensor-core instructions, mma.sync.m16n8k16 (bf16 or fp16 in, FP32
// accumulation), with the operands read from shared memory by ldmatrix and the score, probability
// and gradient tiles kept in the accumulator registers, where the WMMA kernels (flash_attention.cu,
// kept for dropout) stage them through shared memory.
//
// Forward: a block of 8 warps per 128 queries of a (b, h), each warp 16 query rows;
// key/value tiles of 64 rows, double-buffered by cp.async. S = Q K^T lands in the
// accumulator fragments (a lane holds rows g and g + 8, g = lane / 4, and columns
// 2 (lane % 4) + {0, 1} of each 8-column block), the online softmax works on them with
// shuffles inside the quad of lanes that share a row, and P, rounded to 16 bits in
// registers, is directly the A operand of P V: the accumulator layout of two adjacent
// 8-column blocks is the A layout of a 16 x 16 block.
//
// Backward: delta = rowsum(dO O) first (flash_attention.cu's kernel), then two kernels
// with no atomics and a fixed summation order. dK/dV: a block of 4 warps per 64 keys of
// a key/value head, each warp 16 keys, looping over the group's query heads in order
// and their query tiles of 64 (from the diagonal tile on when causal), double-buffered;
// it works on transposed tiles (keys x queries) so that P^T and dS^T are the A
// operands of dV += P^T dO and dK += dS^T Q straight from the registers. dQ: a block of
// 8 warps per 128 queries, looping over the key tiles as the forward does. Both
// recompute P from the forward's log-sum-exp; dS = P (dP - delta).
//
// Exponentials in base 2 (ex2.approx): the scores are scaled by scale * log2(e), so
// softmax's exp(x - m) is one ex2 of a difference; the log-sum-exp is kept in natural
// units (lse = m ln 2 + ln l), as the WMMA kernels and the unfused path keep it.
// Causal: key tiles past a warp's last query are skipped (their weights are exactly 0,
// and skipping them adds nothing the masked computation would not: exact zeros), and
// the keys after a query inside the diagonal tiles get -inf (weight exactly 0).
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>
#include <type_traits>

#include "core/error.h"
#include "gpu/check.h"
#include "models/bert/device_util.cuh"
#include "models/bert/kernels.h"

namespace gpuvs::models::bert::mma_detail {

constexpr int kKeys = 64;     // keys per tile (forward, dQ) and per dK/dV block
constexpr int kRows = 128;    // queries per forward and dQ block
constexpr int kRowWarps = 8;  // forward and dQ: 16 query rows each
constexpr int kKeyWarps = 4;  // dK/dV: 16 keys each
constexpr int kStepQ = 64;    // queries per dK/dV step
constexpr float kLog2e = 1.4426950408889634f;
constexpr float kLn2 = 0.69314718055994531f;
constexpr float kMaskBias2 = -1e30f * kLog2e;  // the padding mask's -1e30, in base-2 units

// Shared memory of head size D: 16-bit tiles with rows of D + 8 elements, so that the 8
// rows an ldmatrix reads (16 bytes each) start 16 bytes apart modulo 128: no bank
// conflicts. Forward: Q (128 rows) and two buffers of K and V (64 rows each); dQ: Q and
// dO, and two buffers of K and V; dK/dV: K and V, and two buffers of Q, dO (64 rows)
// and the step's lse and delta. Head size 128: 102, 136 and 103 KiB; 64: 54, 72, 55.
template <int D>
struct Smem {
  static constexpr int kLd = D + 8;
  static constexpr uint32_t kRowBytes = uint32_t(kLd) * 2;
  static constexpr uint32_t kKeyTile = kKeys * kRowBytes;  // bytes of one K or V tile
  static constexpr size_t kFwd = size_t(kRows) * kRowBytes + 4 * kKeyTile;
  static constexpr size_t kDq = 2 * size_t(kRows) * kRowBytes + 4 * kKeyTile;
  static constexpr uint32_t kStepTile = kStepQ * kRowBytes;
  static constexpr uint32_t kStepBytes = 2 * kStepTile + 2 * kStepQ * 4;  // Q, dO, lse, delta
  static constexpr size_t kDkdv = 2 * size_t(kKeyTile) + 2 * kStepBytes;
};

// Blocks an SM the registers are bounded for: the forward keeps a 16 x D output (D / 2
// FP32 registers a lane) and a 16 x 64 tile, dQ two such tiles, dK/dV two 16 x D outputs
// and two tiles. ptxas (sm_90): forward 128 and 183 registers at head size 64 and 128,
// dQ 194 and 221, dK/dV 168 (8 bytes spilled) and 255; tighter bounds spill more.
template <int D>
constexpr int kFwdMinBlocks = D == 64 ? 2 : 1;
template <int D>
constexpr int kDkdvMinBlocks = D == 64 ? 3 : 2;

__device__ __forceinline__ uint32_t smem_u32(const void* p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

__device__ __forceinline__ void cp_async16(uint32_t dst, const void* src) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(dst), "l"(src) : "memory");
}

// lse and delta carry no alignment promise beyond their element's.
__device__ __forceinline__ void cp_async4(uint32_t dst, const void* src) {
  asm volatile("cp.async.ca.shared.global [%0], [%1], 4;\n" ::"r"(dst), "l"(src) : "memory");
}

__device__ __forceinline__ void cp_async_commit() {
  asm volatile("cp.async.commit_group;\n" ::: "memory");
}

template <int kPending>
__device__ __forceinline__ void cp_async_wait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(kPending) : "memory");
}

// Four 8 x 8 matrices of 16-bit elements; lanes 8i .. 8i + 7 give matrix i's row
// addresses, register i gets matrix i (a lane: row lane / 4, columns 2 (lane % 4) + {0,
// 1}; transposed: that of the transpose). Volatile: the same address holds a different
// tile on a later pass.
__device__ __forceinline__ void ldsm4(uint32_t (&r)[4], uint32_t addr) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(addr));
}

__device__ __forceinline__ void ldsm4_trans(uint32_t (&r)[4], uint32_t addr) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(addr));
}

// c (16 x 8, FP32) += a (16 x 16) b (16 x 8).
template <class T>
__device__ __forceinline__ void mma16816(float (&c)[4], const uint32_t (&a)[4], uint32_t b0,
                                         uint32_t b1) {
  if constexpr (std::is_same_v<T, __nv_bfloat16>) {
    asm("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, "
        "%7}, {%8, %9}, {%0, %1, %2, %3};\n"
        : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
  } else {
    asm("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, {%4, %5, %6, "
        "%7}, {%8, %9}, {%0, %1, %2, %3};\n"
        : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
  }
}

// Two values rounded to T in one register, lo in the low half (the lower column): cvt
// puts its first source in the upper half.
template <class T>
__device__ __forceinline__ uint32_t pack2(float lo, float hi) {
  uint32_t u;
  if constexpr (std::is_same_v<T, __nv_bfloat16>)
    asm("cvt.rn.bf16x2.f32 %0, %1, %2;\n" : "=r"(u) : "f"(hi), "f"(lo));
  else
    asm("cvt.rn.f16x2.f32 %0, %1, %2;\n" : "=r"(u) : "f"(hi), "f"(lo));
  return u;
}

__device__ __forceinline__ float ex2(float x) {
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;\n" : "=f"(y) : "f"(x));
  return y;
}

__device__ __forceinline__ float quad_max(float x) {
  x = fmaxf(x, __shfl_xor_sync(0xffffffffu, x, 1));
  return fmaxf(x, __shfl_xor_sync(0xffffffffu, x, 2));
}

__device__ __forceinline__ float quad_sum(float x) {
  x += __shfl_xor_sync(0xffffffffu, x, 1);
  return x + __shfl_xor_sync(0xffffffffu, x, 2);
}

// The A operand of a 16 x 16 block from the accumulators of its two 8-column halves.
template <class T>
__device__ __forceinline__ void acc_to_a(uint32_t (&a)[4], const float (&lo)[4],
                                         const float (&hi)[4]) {
  a[0] = pack2<T>(lo[0], lo[1]);
  a[1] = pack2<T>(lo[2], lo[3]);
  a[2] = pack2<T>(hi[0], hi[1]);
  a[3] = pack2<T>(hi[2], hi[3]);
}

// A lane's byte offsets into a 16-bit tile (row stride kLd elements) for ldsm4:
// - a_lane: the A operand (16 rows x 16 columns, row-major) at row 0, column 0;
// - b_lane: B = X^T for X stored row-major (16 rows of X = two 8-column blocks of B's n,
//   16 columns = B's k): registers 0, 1 the first block's b0, b1, registers 2, 3 the
//   second's;
// - bt_lane (ldsm4_trans): B = X for X stored row-major (16 rows = B's k, 16 columns =
//   two 8-column blocks of n): registers 0, 1 the first block's, 2, 3 the second's.
template <int kLd>
__device__ __forceinline__ uint32_t a_lane(int lane) {
  return uint32_t(((lane & 15) * kLd + (lane >> 4) * 8) * 2);
}
template <int kLd>
__device__ __forceinline__ uint32_t b_lane(int lane) {
  return uint32_t((((lane >> 4) * 8 + (lane & 7)) * kLd + ((lane >> 3) & 1) * 8) * 2);
}
template <int kLd>
__device__ __forceinline__ uint32_t bt_lane(int lane) {
  return uint32_t(((((lane >> 3) & 1) * 8 + (lane & 7)) * kLd + (lane >> 4) * 8) * 2);
}

// acc (16 x 8 kN) = A (16 x D at a, the lane's a_lane address) X^T (X: 8 kN rows x D at
// x, the lane's b_lane address); every output block sums its D / 16 products in order.
template <class T, int D, int kN>
__device__ __forceinline__ void gemm_abt(float (&acc)[kN][4], uint32_t a, uint32_t x) {
  constexpr uint32_t kRow = Smem<D>::kRowBytes;
#pragma unroll
  for (int n = 0; n < kN; ++n)
    acc[n][0] = acc[n][1] = acc[n][2] = acc[n][3] = 0.0f;
#pragma unroll
  for (int k = 0; k < D / 16; ++k) {
    uint32_t af[4];
    ldsm4(af, a + k * 32);
#pragma unroll
    for (int n = 0; n < kN / 2; ++n) {
      uint32_t bf[4];
      ldsm4(bf, x + n * 16 * kRow + k * 32);
      mma16816<T>(acc[2 * n], af, bf[0], bf[1]);
      mma16816<T>(acc[2 * n + 1], af, bf[2], bf[3]);
    }
  }
}

// acc (16 x D) += A (16 x 16 kK, as accumulators p: 8-column blocks, rounded to T) X (X:
// 16 kK rows x D at x, the lane's bt_lane address).
template <class T, int D, int kK>
__device__ __forceinline__ void gemm_pv(float (&acc)[D / 8][4], const float (&p)[2 * kK][4],
                                        uint32_t x) {
  constexpr uint32_t kRow = Smem<D>::kRowBytes;
#pragma unroll
  for (int k = 0; k < kK; ++k) {
    uint32_t af[4];
    acc_to_a<T>(af, p[2 * k], p[2 * k + 1]);
#pragma unroll
    for (int n = 0; n < D / 16; ++n) {
      uint32_t bf[4];
      ldsm4_trans(bf, x + k * 16 * kRow + n * 32);
      mma16816<T>(acc[2 * n], af, bf[0], bf[1]);
      mma16816<T>(acc[2 * n + 1], af, bf[2], bf[3]);
    }
  }
}

// kTileRows x D of (rows, D) at src into a tile at dst (row stride D + 8) by cp.async,
// rows >= valid left alone; kThreads threads.
template <class T, int D, int kTileRows, int kThreads>
__device__ __forceinline__ void async_tile(uint32_t dst, const T* src, int valid) {
  constexpr int kChunks = D / 8;
  static_assert(kTileRows * kChunks % kThreads == 0, "whole passes");
#pragma unroll
  for (int i = 0; i < kTileRows * kChunks / kThreads; ++i) {
    const int idx = i * kThreads + int(threadIdx.x);
    const int r = idx / kChunks, c = idx % kChunks;
    if (r < valid)
      cp_async16(dst + uint32_t(r) * Smem<D>::kRowBytes + c * 16, src + int64_t(r) * D + c * 8);
  }
}

// The warp's 16 x D accumulators (rows g and g + 8 of the lane) times the rows' factors
// into rows of out (row stride D), through the warp's own 16 rows of a shared tile at
// stage (row stride D + 8) for 16-byte stores. The warp alone reads and writes those
// rows.
template <class T, int D>
__device__ __forceinline__ void store_warp_rows(const float (&acc)[D / 8][4], float f0, float f1,
                                                T* stage, T* out, int lane) {
  constexpr int kLd = Smem<D>::kLd;
  const int g = lane >> 2, t = lane & 3;
  __syncwarp();  // the warp's last ldmatrix of these rows is behind every lane
#pragma unroll
  for (int n = 0; n < D / 8; ++n) {
    *reinterpret_cast<uint32_t*>(stage + g * kLd + 8 * n + 2 * t) =
        pack2<T>(acc[n][0] * f0, acc[n][1] * f0);
    *reinterpret_cast<uint32_t*>(stage + (g + 8) * kLd + 8 * n + 2 * t) =
        pack2<T>(acc[n][2] * f1, acc[n][3] * f1);
  }
  __syncwarp();
#pragma unroll
  for (int i = lane; i < 16 * D / 8; i += kWarp) {
    const int r = i / (D / 8), c = (i % (D / 8)) * 8;
    *reinterpret_cast<uint4*>(out + int64_t(r) * D + c) =
        *reinterpret_cast<const uint4*>(stage + r * kLd + c);
  }
}

__host__ __device__ __forceinline__ int kv_groups(const FlashArgs& a) {
  return a.kv_heads > 0 ? a.kv_heads : a.heads;
}

__host__ __device__ __forceinline__ int row_tiles(int seq) {
  return (seq + kRows - 1) / kRows;
}

// The query tile of a forward or dQ block: a head's tiles run from the last to the
// first, so that under a causal mask the longest start first.
struct RowBlock {
  int q0;       // first query of the tile
  int rows;     // queries of the tile (the last one may be short: T % 128 == 64)
  int64_t bh;   // b * H + h
  int64_t b;    // batch
  int64_t bkv;  // b * G + h / (H / G)
};

__device__ __forceinline__ RowBlock row_block(const FlashArgs& a) {
  const int tiles = row_tiles(a.seq);
  const int groups = kv_groups(a);
  RowBlock r;
  r.bh = blockIdx.x / tiles;
  r.q0 = (tiles - 1 - int(blockIdx.x % tiles)) * kRows;
  r.rows = min(kRows, a.seq - r.q0);
  r.b = r.bh / a.heads;
  r.bkv = r.b * groups + (r.bh % a.heads) / (a.heads / groups);
  return r;
}

// Key tiles a query tile reads: under a causal mask those up to its last query.
__device__ __forceinline__ int key_tiles(const FlashArgs& a, const RowBlock& r) {
  return (a.causal ? r.q0 + r.rows : a.seq) / kKeys;
}

// s (16 x 64, the warp's rows x keys k0..) as base-2 logits: scale * log2(e), the
// padding mask's bias, and -inf after the row under a causal mask where the tile
// reaches past the warp's first row (row0: the lane's first row's query).
__device__ __forceinline__ void logits(float (&s)[8][4], const FlashArgs& a, const int32_t* mask,
                                       int k0, int row0, int warp_q0, int t) {
  const float sl2 = a.scale * kLog2e;
  const bool diag = a.causal && k0 + kKeys - 1 > warp_q0;
#pragma unroll
  for (int j = 0; j < 8; ++j) {
    const int key = k0 + 8 * j + 2 * t;
    float bias[2] = {0.0f, 0.0f};
    if (mask) {
      bias[0] = mask[key] != 0 ? 0.0f : kMaskBias2;
      bias[1] = mask[key + 1] != 0 ? 0.0f : kMaskBias2;
    }
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      float x = mask ? s[j][e] * sl2 + bias[e & 1] : s[j][e] * sl2;
      if (diag && key + (e & 1) > row0 + 8 * (e >> 1)) x = -INFINITY;
      s[j][e] = x;
    }
  }
}

// Launch: 256 threads, dynamic shared memory Smem<D>::kFwd, one block per (b, h, tile of
// 128 queries).

template <class Kernel>
void allow_smem(Kernel k, size_t smem) {
  GPUVS_CUDA_CHECK(cudaFuncSetAttribute(k, cudaFuncAttributeMaxDynamicSharedMemorySize, int(smem)));
  GPUVS_CUDA_CHECK(cudaFuncSetAttribute(k, cudaFuncAttributePreferredSharedMemoryCarveout,
                                        int(cudaSharedmemCarveoutMaxShared)));
}

template <class Kernel, class Args>
void launch(Kernel k, int64_t blocks, int threads, size_t smem, const Args& args, cudaStream_t s) {
  if (blocks >= (int64_t(1) << 31)) throw Error("fused attention: too many tiles for one grid");
  k<<<static_cast<unsigned>(blocks), threads, smem, s>>>(args);
  GPUVS_CUDA_CHECK_LAUNCH();
}

// The forward kernels' shared-memory limits (flash_attention_mma_fwd.cu), set by
// flash_mma_init with the backward ones'.
void init_forward_kernels();

}  // namespace gpuvs::models::bert::mma_detail
