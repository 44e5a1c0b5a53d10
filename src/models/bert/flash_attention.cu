// Fused attention for bf16 and fp16, head size 64 (kernels.h): softmax(Q K^T s + mask)
// with dropout, times V, without the (B, H, T, T) probabilities in memory. The
// algorithm is FlashAttention-2's (Dao 2023, "FlashAttention-2: Faster Attention with
// Better Parallelism and Work Partitioning"): an online softmax over key tiles in the
// forward, which keeps the row's log-sum-exp; the backward recomputes the
// probabilities from it, one kernel for dK and dV (a block per key tile, looping over
// the queries) and one for dQ (a block per query tile, looping over the keys), so no
// atomics and a fixed summation order. Tiles of 64 x 64, four warps of 16 rows each;
// the tensor-core products through WMMA (16 x 16 x 16, FP32 accumulation) with the
// score tiles staged in shared memory for the element-wise steps. Dropout draws the
// same mask as the unfused softmax (dropout_hash.h, element index row * T + key), so
// both paths drop the same probabilities: one hash per 4 consecutive keys, shared by
// shuffles in the dK/dV kernel, whose lanes hold a key's column of queries.
#include <mma.h>

#include <type_traits>

#include "core/error.h"
#include "gpu/check.h"
#include "models/bert/device_util.cuh"
#include "models/bert/kernels.h"

namespace gpuvs::models::bert {

namespace {

namespace wmma = nvcuda::wmma;

constexpr int kD = 64;               // head size
constexpr int kTile = 64;            // queries or keys per tile
constexpr int kWarps = 4;            // 16 rows each
constexpr int kLdh = kD + 8;         // 16-bit tile row stride (elements): 144 bytes
constexpr int kLdf = kD + 4;         // fp32 tile row stride: 272 bytes
constexpr float kMaskBias = -1e30f;  // as the unfused softmax

constexpr int kHalfTile = kTile * kLdh;  // 16-bit elements of one 64-row tile
constexpr int kWarpF = 16 * kLdf;        // floats of one warp's 16-row fp32 tile
constexpr int kWarpH = 16 * kLdh;        // 16-bit elements of one warp's 16-row tile
constexpr size_t kTileBytes = size_t(kHalfTile) * 2;
constexpr size_t kFwdSmem = 3 * kTileBytes + 2 * kWarps * kWarpF * 4 + kWarps * kWarpH * 2;
constexpr size_t kBwdSmem =
    4 * kTileBytes + kWarps * kWarpF * 4 + kWarps * kWarpH * 2 + 2 * kTile * 4;

template <class T>
using FragA = wmma::fragment<wmma::matrix_a, 16, 16, 16, T, wmma::row_major>;
template <class T>
using FragB = wmma::fragment<wmma::matrix_b, 16, 16, 16, T, wmma::row_major>;
template <class T>
using FragBT = wmma::fragment<wmma::matrix_b, 16, 16, 16, T, wmma::col_major>;
using FragC = wmma::fragment<wmma::accumulator, 16, 16, 16, float>;

// A 64 x 64 tile of (rows, 64) at src into smem (row stride kLdh); 128 threads.
template <class T>
__device__ __forceinline__ void load_tile(const T* __restrict__ src, T* dst) {
  for (int i = threadIdx.x; i < kTile * kD / 8; i += kWarps * kWarp) {
    const int r = i / (kD / 8), c = (i % (kD / 8)) * 8;
    *reinterpret_cast<uint4*>(dst + r * kLdh + c) =
        *reinterpret_cast<const uint4*>(src + int64_t(r) * kD + c);
  }
}

// out (16 x 64, fp32 smem, ld kLdf) = A (16 x 64) B (64 x 64); A and B fragments
// loaded by the callables (kk: the 16-wide step of the inner dimension, n: the
// output's 16-column block).
template <class T, class LoadA, class LoadB>
__device__ __forceinline__ void warp_gemm_to_smem(float* out, LoadA load_a, LoadB load_b) {
#pragma unroll
  for (int n = 0; n < 4; ++n) {
    FragC acc;
    wmma::fill_fragment(acc, 0.0f);
#pragma unroll
    for (int kk = 0; kk < 4; ++kk) {
      auto a = load_a(kk);
      auto b = load_b(kk, n);
      wmma::mma_sync(acc, a, b, acc);
    }
    wmma::store_matrix_sync(out + n * 16, acc, kLdf, wmma::mem_row_major);
  }
}

template <class T>
__global__ void __launch_bounds__(kWarps* kWarp) flash_fwd_kernel(FlashArgs a) {
  extern __shared__ __align__(128) unsigned char smem[];
  T* qs = reinterpret_cast<T*>(smem);
  T* ks = qs + kHalfTile;
  T* vs = ks + kHalfTile;
  const int warp = threadIdx.x / kWarp, lane = threadIdx.x % kWarp;
  float* sw = reinterpret_cast<float*>(vs + kHalfTile) + warp * kWarpF;
  float* ow = reinterpret_cast<float*>(vs + kHalfTile) + (kWarps + warp) * kWarpF;
  T* pw = reinterpret_cast<T*>(reinterpret_cast<float*>(vs + kHalfTile) + 2 * kWarps * kWarpF) +
          warp * kWarpH;
  const int64_t bh = blockIdx.y, b = bh / a.heads;
  const int q0 = blockIdx.x * kTile;
  const int64_t base = bh * a.seq * kD;
  load_tile(static_cast<const T*>(a.q) + base + int64_t(q0) * kD, qs);
  const int r = lane >> 1, half = lane & 1;  // this lane: row r, columns half * 32 + [0, 32)
  for (int j = 0; j < 32; ++j)
    ow[r * kLdf + half * 32 + j] = 0.0f;
  float m = -INFINITY, l = 0.0f;
  const DropMask drop = drop_mask(a.drop);
  const int64_t qrow = bh * a.seq + q0 + warp * 16 + r;  // (b, h, t) row index
  for (int k0 = 0; k0 < a.seq; k0 += kTile) {
    __syncthreads();  // the previous tile's K and V are no longer read
    load_tile(static_cast<const T*>(a.k) + base + int64_t(k0) * kD, ks);
    load_tile(static_cast<const T*>(a.v) + base + int64_t(k0) * kD, vs);
    __syncthreads();
    // S (16 q x 64 keys) = Q_w K^T
    warp_gemm_to_smem<T>(
        sw,
        [&](int kk) {
          FragA<T> f;
          wmma::load_matrix_sync(f, qs + warp * 16 * kLdh + kk * 16, kLdh);
          return f;
        },
        [&](int kk, int n) {
          FragBT<T> f;
          wmma::load_matrix_sync(f, ks + n * 16 * kLdh + kk * 16, kLdh);
          return f;
        });
    __syncwarp();
    float x[32];
    float mx = -INFINITY;
    const int32_t* mask = a.mask + b * a.seq + k0 + half * 32;
#pragma unroll
    for (int j = 0; j < 32; ++j) {
      x[j] = sw[r * kLdf + half * 32 + j] * a.scale + (mask[j] != 0 ? 0.0f : kMaskBias);
      mx = fmaxf(mx, x[j]);
    }
    mx = warp_reduce<ShuffleTree::kButterfly, 2>(mx, MaxOp{});  // the row's two lanes
    const float m_new = fmaxf(m, mx);
    const float alpha = __expf(m - m_new);
    float sum = 0.0f;
    // The lane's 32 keys are consecutive elements: 8 groups of 4, one hash each.
    const uint32_t keep = drop_bits<32>(drop, uint64_t(qrow) * a.seq + k0 + half * 32);
#pragma unroll
    for (int j = 0; j < 32; ++j) {
      const float p = __expf(x[j] - m_new);
      sum += p;
      pw[r * kLdh + half * 32 + j] = from_f<T>(apply_kept(p, drop, keep, j));
    }
    sum = warp_reduce<ShuffleTree::kButterfly, 2>(sum, SumOp{});
    l = l * alpha + sum;
    m = m_new;
#pragma unroll
    for (int j = 0; j < 32; ++j)
      ow[r * kLdf + half * 32 + j] *= alpha;
    __syncwarp();
    // O_w (16 x 64) += P (16 x 64 keys) V (64 keys x 64)
#pragma unroll
    for (int n = 0; n < 4; ++n) {
      FragC acc;
      wmma::load_matrix_sync(acc, ow + n * 16, kLdf, wmma::mem_row_major);
#pragma unroll
      for (int kk = 0; kk < 4; ++kk) {
        FragA<T> pa;
        FragB<T> vb;
        wmma::load_matrix_sync(pa, pw + kk * 16, kLdh);
        wmma::load_matrix_sync(vb, vs + kk * 16 * kLdh + n * 16, kLdh);
        wmma::mma_sync(acc, pa, vb, acc);
      }
      wmma::store_matrix_sync(ow + n * 16, acc, kLdf, wmma::mem_row_major);
    }
    __syncwarp();
  }
  const float inv = 1.0f / l;
  T* o = static_cast<T*>(a.o) + qrow * kD + half * 32;
#pragma unroll
  for (int j = 0; j < 32; ++j)
    o[j] = from_f<T>(ow[r * kLdf + half * 32 + j] * inv);
  if (a.lse && half == 0) a.lse[qrow] = m + logf(l);
}

// delta[row] = sum_d dO[row, d] O[row, d] over token-major (B, T, H * 64) tensors; one
// warp per (b, h, t) row.
template <class T>
__global__ void flash_delta_kernel(FlashBackwardArgs a) {
  const int64_t rows = int64_t(a.f.batch) * a.f.heads * a.f.seq;
  const int64_t row = (int64_t(blockIdx.x) * blockDim.x + threadIdx.x) / kWarp;
  const int lane = threadIdx.x % kWarp;
  if (row >= rows) return;
  const int64_t t = row % a.f.seq, bh = row / a.f.seq;
  const int64_t h = bh % a.f.heads, b = bh / a.f.heads;
  const int64_t off = (b * a.f.seq + t) * a.f.heads * kD + h * kD + lane * 2;
  const T* o = static_cast<const T*>(a.o_tokens) + off;
  const T* d = static_cast<const T*>(a.do_tokens) + off;
  float s = to_f(o[0]) * to_f(d[0]) + to_f(o[1]) * to_f(d[1]);
  s = warp_sum(s);
  if (lane == 0) a.delta[row] = s;
}

// Keep bits (bit j: query row0 + j) of the dK/dV kernel's lane: key kidx of a warp
// whose lanes 2r + half hold key r of 16 (kidx % 4 == r % 4) and 32 consecutive query
// rows. Element (row, kidx) is in hash group (row * T + kidx) / 4, shared by the four
// lanes of keys 4m .. 4m + 3 (same half): lane t = r % 4 of them hashes the 8 groups
// of queries j % 4 == t and the four swap their bits by shuffles, 8 hashes per lane
// instead of 32. The whole warp calls it.
__device__ __forceinline__ uint32_t column_keep_bits(const DropMask& drop, uint64_t row0, int seq,
                                                     int kidx, int lane) {
  if (!drop.on) return 0xFFFFFFFFu;
  const int t = (lane >> 1) & 3;
  uint32_t mine = 0;  // bits 4i .. 4i + 3: query 4i + t, keys 4m .. 4m + 3
#pragma unroll
  for (int i = 0; i < 8; ++i) {
    const uint64_t idx = (row0 + 4 * i + t) * uint64_t(seq) + kidx;
    mine |= drop_keep4(drop.key, idx >> 2, drop.threshold) << (4 * i);
  }
  uint32_t keep = 0;
#pragma unroll
  for (int tt = 0; tt < 4; ++tt) {
    const uint32_t w = __shfl_sync(0xffffffffu, mine, lane + 2 * (tt - t));
#pragma unroll
    for (int i = 0; i < 8; ++i)
      keep |= ((w >> (4 * i + t)) & 1u) << (4 * i + tt);
  }
  return keep;
}

// dK and dV of one key tile (64 keys of one (b, h)); warp w owns keys w*16..+16 and
// works on transposed score tiles (keys x queries).
template <class T>
__global__ void __launch_bounds__(kWarps* kWarp) flash_dkdv_kernel(FlashBackwardArgs a) {
  extern __shared__ __align__(128) unsigned char smem[];
  T* ks = reinterpret_cast<T*>(smem);
  T* vs = ks + kHalfTile;
  T* qs = vs + kHalfTile;
  T* dos = qs + kHalfTile;
  const int warp = threadIdx.x / kWarp, lane = threadIdx.x % kWarp;
  float* fbase = reinterpret_cast<float*>(dos + kHalfTile);
  float* sw = fbase + warp * kWarpF;
  T* pw = reinterpret_cast<T*>(fbase + kWarps * kWarpF) + warp * kWarpH;
  float* lse_s =
      reinterpret_cast<float*>(reinterpret_cast<T*>(fbase + kWarps * kWarpF) + kWarps * kWarpH);
  float* delta_s = lse_s + kTile;
  const FlashArgs& f = a.f;
  const int64_t bh = blockIdx.y, b = bh / f.heads;
  const int k0 = blockIdx.x * kTile;
  const int64_t base = bh * f.seq * kD;
  load_tile(static_cast<const T*>(f.k) + base + int64_t(k0) * kD, ks);
  load_tile(static_cast<const T*>(f.v) + base + int64_t(k0) * kD, vs);
  const int r = lane >> 1, half = lane & 1;  // row r (a key), query columns half * 32 + [0, 32)
  const int kidx = k0 + warp * 16 + r;
  const float bias = f.mask[b * f.seq + kidx] != 0 ? 0.0f : kMaskBias;
  const DropMask drop = drop_mask(f.drop);
  FragC dk[4], dv[4];
#pragma unroll
  for (int n = 0; n < 4; ++n) {
    wmma::fill_fragment(dk[n], 0.0f);
    wmma::fill_fragment(dv[n], 0.0f);
  }
  for (int q0 = 0; q0 < f.seq; q0 += kTile) {
    __syncthreads();  // the previous query tile is no longer read
    load_tile(static_cast<const T*>(f.q) + base + int64_t(q0) * kD, qs);
    load_tile(static_cast<const T*>(a.d_o) + base + int64_t(q0) * kD, dos);
    for (int i = threadIdx.x; i < kTile; i += kWarps * kWarp) {
      lse_s[i] = f.lse[bh * f.seq + q0 + i];
      delta_s[i] = a.delta[bh * f.seq + q0 + i];
    }
    __syncthreads();
    // S^T (16 keys x 64 q) = K_w Q^T
    warp_gemm_to_smem<T>(
        sw,
        [&](int kk) {
          FragA<T> x;
          wmma::load_matrix_sync(x, ks + warp * 16 * kLdh + kk * 16, kLdh);
          return x;
        },
        [&](int kk, int n) {
          FragBT<T> x;
          wmma::load_matrix_sync(x, qs + n * 16 * kLdh + kk * 16, kLdh);
          return x;
        });
    __syncwarp();
    float p[32];
    const uint32_t keep =
        column_keep_bits(drop, uint64_t(bh * f.seq + q0 + half * 32), f.seq, kidx, lane);
#pragma unroll
    for (int j = 0; j < 32; ++j) {
      const int qc = half * 32 + j;
      p[j] = __expf(sw[r * kLdf + qc] * f.scale + bias - lse_s[qc]);
      pw[r * kLdh + qc] = from_f<T>(apply_kept(p[j], drop, keep, j));
    }
    __syncwarp();
    // dV_w += Pd^T (16 keys x 64 q) dO (64 q x 64)
#pragma unroll
    for (int kk = 0; kk < 4; ++kk) {
      FragA<T> pa;
      wmma::load_matrix_sync(pa, pw + kk * 16, kLdh);
#pragma unroll
      for (int n = 0; n < 4; ++n) {
        FragB<T> db;
        wmma::load_matrix_sync(db, dos + kk * 16 * kLdh + n * 16, kLdh);
        wmma::mma_sync(dv[n], pa, db, dv[n]);
      }
    }
    // dPd^T (16 keys x 64 q) = V_w dO^T
    warp_gemm_to_smem<T>(
        sw,
        [&](int kk) {
          FragA<T> x;
          wmma::load_matrix_sync(x, vs + warp * 16 * kLdh + kk * 16, kLdh);
          return x;
        },
        [&](int kk, int n) {
          FragBT<T> x;
          wmma::load_matrix_sync(x, dos + n * 16 * kLdh + kk * 16, kLdh);
          return x;
        });
    __syncwarp();  // every lane is done reading pw (dV) and has written sw
#pragma unroll
    for (int j = 0; j < 32; ++j) {
      const int qc = half * 32 + j;
      const float g = apply_kept(sw[r * kLdf + qc], drop, keep, j);
      pw[r * kLdh + qc] = from_f<T>(p[j] * (g - delta_s[qc]));
    }
    __syncwarp();
    // dK_w += dS^T (16 keys x 64 q) Q (64 q x 64)
#pragma unroll
    for (int kk = 0; kk < 4; ++kk) {
      FragA<T> sa;
      wmma::load_matrix_sync(sa, pw + kk * 16, kLdh);
#pragma unroll
      for (int n = 0; n < 4; ++n) {
        FragB<T> qb;
        wmma::load_matrix_sync(qb, qs + kk * 16 * kLdh + n * 16, kLdh);
        wmma::mma_sync(dk[n], sa, qb, dk[n]);
      }
    }
    __syncwarp();
  }
  // Out through the warp's fp32 tile: dK scaled by s (S = s Q K^T).
  const int64_t out_row = bh * f.seq + k0 + warp * 16 + r;
#pragma unroll
  for (int which = 0; which < 2; ++which) {
#pragma unroll
    for (int n = 0; n < 4; ++n)
      wmma::store_matrix_sync(sw + n * 16, which == 0 ? dk[n] : dv[n], kLdf, wmma::mem_row_major);
    __syncwarp();
    T* out = static_cast<T*>(which == 0 ? a.dk : a.dv) + out_row * kD + half * 32;
    const float sc = which == 0 ? f.scale : 1.0f;
#pragma unroll
    for (int j = 0; j < 32; ++j)
      out[j] = from_f<T>(sw[r * kLdf + half * 32 + j] * sc);
    __syncwarp();
  }
}

// dQ of one query tile; warp w owns queries w*16..+16.
template <class T>
__global__ void __launch_bounds__(kWarps* kWarp) flash_dq_kernel(FlashBackwardArgs a) {
  extern __shared__ __align__(128) unsigned char smem[];
  T* qs = reinterpret_cast<T*>(smem);
  T* dos = qs + kHalfTile;
  T* ks = dos + kHalfTile;
  T* vs = ks + kHalfTile;
  const int warp = threadIdx.x / kWarp, lane = threadIdx.x % kWarp;
  float* fbase = reinterpret_cast<float*>(vs + kHalfTile);
  float* sw = fbase + warp * kWarpF;
  T* pw = reinterpret_cast<T*>(fbase + kWarps * kWarpF) + warp * kWarpH;
  const FlashArgs& f = a.f;
  const int64_t bh = blockIdx.y, b = bh / f.heads;
  const int q0 = blockIdx.x * kTile;
  const int64_t base = bh * f.seq * kD;
  load_tile(static_cast<const T*>(f.q) + base + int64_t(q0) * kD, qs);
  load_tile(static_cast<const T*>(a.d_o) + base + int64_t(q0) * kD, dos);
  const int r = lane >> 1, half = lane & 1;  // row r (a query), key columns half * 32 + [0, 32)
  const int64_t qrow = bh * f.seq + q0 + warp * 16 + r;
  const float lse = f.lse[qrow], delta = a.delta[qrow];
  const DropMask drop = drop_mask(f.drop);
  FragC dq[4];
#pragma unroll
  for (int n = 0; n < 4; ++n)
    wmma::fill_fragment(dq[n], 0.0f);
  for (int k0 = 0; k0 < f.seq; k0 += kTile) {
    __syncthreads();
    load_tile(static_cast<const T*>(f.k) + base + int64_t(k0) * kD, ks);
    load_tile(static_cast<const T*>(f.v) + base + int64_t(k0) * kD, vs);
    __syncthreads();
    // S (16 q x 64 keys) = Q_w K^T
    warp_gemm_to_smem<T>(
        sw,
        [&](int kk) {
          FragA<T> x;
          wmma::load_matrix_sync(x, qs + warp * 16 * kLdh + kk * 16, kLdh);
          return x;
        },
        [&](int kk, int n) {
          FragBT<T> x;
          wmma::load_matrix_sync(x, ks + n * 16 * kLdh + kk * 16, kLdh);
          return x;
        });
    __syncwarp();
    float p[32];
    const int32_t* mask = f.mask + b * f.seq + k0 + half * 32;
#pragma unroll
    for (int j = 0; j < 32; ++j)
      p[j] =
          __expf(sw[r * kLdf + half * 32 + j] * f.scale + (mask[j] != 0 ? 0.0f : kMaskBias) - lse);
    __syncwarp();
    // dPd (16 q x 64 keys) = dO_w V^T
    warp_gemm_to_smem<T>(
        sw,
        [&](int kk) {
          FragA<T> x;
          wmma::load_matrix_sync(x, dos + warp * 16 * kLdh + kk * 16, kLdh);
          return x;
        },
        [&](int kk, int n) {
          FragBT<T> x;
          wmma::load_matrix_sync(x, vs + n * 16 * kLdh + kk * 16, kLdh);
          return x;
        });
    __syncwarp();
    const uint32_t keep = drop_bits<32>(drop, uint64_t(qrow) * f.seq + k0 + half * 32);
#pragma unroll
    for (int j = 0; j < 32; ++j) {
      const int kc = half * 32 + j;
      const float g = apply_kept(sw[r * kLdf + kc], drop, keep, j);
      pw[r * kLdh + kc] = from_f<T>(p[j] * (g - delta));
    }
    __syncwarp();
    // dQ_w += dS (16 q x 64 keys) K (64 keys x 64)
#pragma unroll
    for (int kk = 0; kk < 4; ++kk) {
      FragA<T> sa;
      wmma::load_matrix_sync(sa, pw + kk * 16, kLdh);
#pragma unroll
      for (int n = 0; n < 4; ++n) {
        FragB<T> kb;
        wmma::load_matrix_sync(kb, ks + kk * 16 * kLdh + n * 16, kLdh);
        wmma::mma_sync(dq[n], sa, kb, dq[n]);
      }
    }
    __syncwarp();
  }
#pragma unroll
  for (int n = 0; n < 4; ++n)
    wmma::store_matrix_sync(sw + n * 16, dq[n], kLdf, wmma::mem_row_major);
  __syncwarp();
  T* out = static_cast<T*>(a.dq) + qrow * kD + half * 32;
#pragma unroll
  for (int j = 0; j < 32; ++j)
    out[j] = from_f<T>(sw[r * kLdf + half * 32 + j] * f.scale);
}

void check(const FlashArgs& a) {
  if (!flash_attention_supported(a.dtype, a.seq, a.head_dim))
    throw Error("fused attention: bf16 or fp16, head size 64, sequence length % 64 == 0");
}

template <class Kernel>
void allow_smem(Kernel k, size_t smem) {
  GPUVS_CUDA_CHECK(cudaFuncSetAttribute(k, cudaFuncAttributeMaxDynamicSharedMemorySize, int(smem)));
}

template <class Kernel>
void launch(Kernel k, size_t smem, const FlashArgs& f, const FlashBackwardArgs* bwd,
            cudaStream_t s) {
  const dim3 grid(static_cast<unsigned>(f.seq / kTile),
                  static_cast<unsigned>(int64_t(f.batch) * f.heads));
  if constexpr (std::is_invocable_v<Kernel, FlashArgs>) {
    k<<<grid, kWarps * kWarp, smem, s>>>(f);
  } else {
    k<<<grid, kWarps * kWarp, smem, s>>>(*bwd);
  }
  GPUVS_CUDA_CHECK_LAUNCH();
}

}  // namespace

bool flash_attention_supported(DType dtype, int seq, int head_dim) {
  return dtype != DType::kF32 && head_dim == kD && seq % kTile == 0 && seq > 0;
}

void flash_attention_init() {
  allow_smem(flash_fwd_kernel<__half>, kFwdSmem);
  allow_smem(flash_fwd_kernel<__nv_bfloat16>, kFwdSmem);
  allow_smem(flash_dkdv_kernel<__half>, kBwdSmem);
  allow_smem(flash_dkdv_kernel<__nv_bfloat16>, kBwdSmem);
  allow_smem(flash_dq_kernel<__half>, kBwdSmem);
  allow_smem(flash_dq_kernel<__nv_bfloat16>, kBwdSmem);
}

void flash_attention_forward(const FlashArgs& a, cudaStream_t s) {
  check(a);
  if (a.dtype == DType::kF16)
    launch(flash_fwd_kernel<__half>, kFwdSmem, a, nullptr, s);
  else
    launch(flash_fwd_kernel<__nv_bfloat16>, kFwdSmem, a, nullptr, s);
}

void flash_attention_backward(const FlashBackwardArgs& a, cudaStream_t s) {
  check(a.f);
  const int64_t rows = int64_t(a.f.batch) * a.f.heads * a.f.seq;
  constexpr int kThreads = 256;
  const unsigned blocks = static_cast<unsigned>((rows * kWarp + kThreads - 1) / kThreads);
  if (a.f.dtype == DType::kF16) {
    flash_delta_kernel<__half><<<blocks, kThreads, 0, s>>>(a);
    GPUVS_CUDA_CHECK_LAUNCH();
    launch(flash_dkdv_kernel<__half>, kBwdSmem, a.f, &a, s);
    launch(flash_dq_kernel<__half>, kBwdSmem, a.f, &a, s);
  } else {
    flash_delta_kernel<__nv_bfloat16><<<blocks, kThreads, 0, s>>>(a);
    GPUVS_CUDA_CHECK_LAUNCH();
    launch(flash_dkdv_kernel<__nv_bfloat16>, kBwdSmem, a.f, &a, s);
    launch(flash_dq_kernel<__nv_bfloat16>, kBwdSmem, a.f, &a, s);
  }
}

}  // namespace gpuvs::models::bert
