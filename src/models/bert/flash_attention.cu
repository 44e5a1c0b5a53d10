// Fused attention for bf16 and fp16, head size 64 or 128 (kernels.h): softmax(Q K^T s +
// mask) with dropout, optionally causal, times V, without the (B, H, T, T) probabilities
// in memory; grouped-query attention reads one key/value head per group of query heads.
// The algorithm is FlashAttention-2's (Dao 2023, "FlashAttention-2: Faster Attention with
// Better Parallelism and Work Partitioning"): an online softmax over key tiles in the
// forward, which keeps the row's log-sum-exp; the backward recomputes the
// probabilities from it, one kernel for dK and dV (a block per key tile of a key/value
// head, looping over its group's query heads and their queries) and one for dQ (a block
// per query tile, looping over the keys), so no atomics and a fixed summation order.
// These kernels serve attention with dropout; without it flash_attention_forward and
// _backward run flash_attention_mma.cu's (same algorithm, tiles in registers).
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
#include <mma.h>

#include <type_traits>

#include "core/error.h"
#include "gpu/check.h"
#include "models/bert/device_util.cuh"
#include "models/bert/kernels.h"

namespace gpuvs::models::bert {

namespace {

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

// Launch: blockDim 128 (four warps), dynamic shared memory Layout<D>::kFwdSmem, one
// block per (b, h, query tile). Each warp keeps its 16 query rows' fragments and
// output accumulators in registers; the running maximum's rescaling of the output
// goes through a 16 x 16 tile of the rows' factors loaded as an accumulator fragment
// (fragments of one type share their element-to-position mapping, so o.x[e] *
// factor.x[e] scales every element by its row's factor).
template <class T, int D>
__global__ void __launch_bounds__(kWarps* kWarp, kFwdBlocks<D>) flash_fwd_kernel(FlashArgs a) {
  using L = Layout<D>;
  extern __shared__ __align__(128) unsigned char smem[];
  T* ks = reinterpret_cast<T*>(smem);
  T* vs = ks + L::kHalfTile;
  const int warp = threadIdx.x / kWarp, lane = threadIdx.x % kWarp;
  float* fbase = reinterpret_cast<float*>(vs + L::kHalfTile);
  float* sw = fbase + warp * kWarpS;
  T* pbase = reinterpret_cast<T*>(fbase + kWarps * kWarpS);
  T* pw = pbase + warp * kWarpP;
  float* aw = reinterpret_cast<float*>(pbase + kWarps * kWarpP) + warp * kWarpA;
  const QueryBlock blk = query_block(a);
  const int q0 = blk.q0;
  const int64_t qbase = blk.bh * a.seq * D, kvbase = blk.bkv * a.seq * D;
  FragA<T> qf[D / 16];
  {
    T* qs = reinterpret_cast<T*>(fbase);  // staged where the work tiles go
    load_tile<D>(static_cast<const T*>(a.q) + qbase + int64_t(q0) * D, qs);
    __syncthreads();
#pragma unroll
    for (int kk = 0; kk < D / 16; ++kk)
      wmma::load_matrix_sync(qf[kk], qs + warp * 16 * L::kLdh + kk * 16, L::kLdh);
  }
  FragC o[D / 16];
#pragma unroll
  for (int n = 0; n < D / 16; ++n)
    wmma::fill_fragment(o[n], 0.0f);
  const int r = lane >> 1, half = lane & 1;  // this lane: row r, columns col(j) (col_of)
  float m = -INFINITY, l = 0.0f;
  const DropMask drop = drop_mask(a.drop);
  const int qi = warp * 16 + r;                   // the row within the tile
  const int64_t qrow = blk.bh * a.seq + q0 + qi;  // (b, h, t) row index
  // Causal: the tiles up to the diagonal one; every row sees key 0 in the first tile,
  // so its running maximum is finite from there on.
  const int k_end = a.causal ? q0 + kTile : a.seq;
  for (int k0 = 0; k0 < k_end; k0 += kTile) {
    __syncthreads();  // the previous tile's K and V (first: the staged Q) no longer read
    load_tile<D>(static_cast<const T*>(a.k) + kvbase + int64_t(k0) * D, ks);
    load_tile<D>(static_cast<const T*>(a.v) + kvbase + int64_t(k0) * D, vs);
    __syncthreads();
    // S (16 q x 64 keys) = Q_w K^T
    warp_gemm_to_smem<T, D / 16>(
        sw, [&](int kk) { return qf[kk]; },
        [&](int kk, int n) {
          FragBT<T> f;
          wmma::load_matrix_sync(f, ks + n * 16 * L::kLdh + kk * 16, L::kLdh);
          return f;
        });
    __syncwarp();
    float x[32];
    float mx = -INFINITY;
    const int32_t* mask = a.mask ? a.mask + blk.b * a.seq + k0 : nullptr;
    const bool diag = a.causal && k0 == q0;
    const int after = qi - 4 * half;  // col(4c + e) > qi: 8c + e > after
#pragma unroll
    for (int c = 0; c < 8; ++c) {
      const float4 s4 = load4(sw + r * kLds + 8 * c + 4 * half);
      const float sv[4] = {s4.x, s4.y, s4.z, s4.w};
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const int j = 4 * c + e;
        const float bias = mask ? (mask[8 * c + 4 * half + e] != 0 ? 0.0f : kMaskBias) : 0.0f;
        x[j] = sv[e] * a.scale + bias;
        if (diag && 8 * c + e > after) x[j] = -INFINITY;  // a later key: weight exactly 0
        mx = fmaxf(mx, x[j]);
      }
    }
    mx = warp_reduce<ShuffleTree::kButterfly, 2>(mx, MaxOp{});  // the row's two lanes
    const float m_new = fmaxf(m, mx);
    const float alpha = __expf(m - m_new);
    float sum = 0.0f;
    const uint32_t keep = row_keep_bits(drop, uint64_t(qrow) * a.seq + k0, half);
#pragma unroll
    for (int c = 0; c < 8; ++c) {
      float pv[4];
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const float p = __expf(x[4 * c + e] - m_new);
        sum += p;
        pv[e] = apply_kept(p, drop, keep, 4 * c + e);
      }
      store_run(pw + r * kLdp, c, half, pv);
    }
    sum = warp_reduce<ShuffleTree::kButterfly, 2>(sum, SumOp{});
    l = l * alpha + sum;
    m = m_new;
    // The rows' factors: row r of aw, both lanes of the row writing 8 columns each.
    const float4 a4 = make_float4(alpha, alpha, alpha, alpha);
    *reinterpret_cast<float4*>(aw + r * 16 + half * 8) = a4;
    *reinterpret_cast<float4*>(aw + r * 16 + half * 8 + 4) = a4;
    __syncwarp();
    FragC af;
    wmma::load_matrix_sync(af, aw, 16, wmma::mem_row_major);
    // O_w (16 x D) = alpha O_w + P (16 x 64 keys) V (64 keys x D)
#pragma unroll
    for (int n = 0; n < D / 16; ++n) {
#pragma unroll
      for (int e = 0; e < o[n].num_elements; ++e)
        o[n].x[e] *= af.x[e];
    }
    FragA<T> pa[4];
#pragma unroll
    for (int kk = 0; kk < 4; ++kk)
      wmma::load_matrix_sync(pa[kk], pw + kk * 16, kLdp);
#pragma unroll
    for (int n = 0; n < D / 16; ++n) {
#pragma unroll
      for (int kk = 0; kk < 4; ++kk) {
        FragB<T> vb;
        wmma::load_matrix_sync(vb, vs + kk * 16 * L::kLdh + n * 16, L::kLdh);
        wmma::mma_sync(o[n], pa[kk], vb, o[n]);
      }
    }
  }
  __syncwarp();  // every lane is done with sw (the scores) before it holds the output
  store_rows<T, D>(o, sw, static_cast<T*>(a.o) + qrow * D, 1.0f / l, r, half);
  if (a.lse && half == 0) a.lse[qrow] = m + logf(l);
}

// delta[row] = sum_d dO[row, d] O[row, d], one warp per (b, h, t) row, over token-major
// (B, T, H * D) tensors or, where those are null, f.o and d_o (B, H, T, D).
template <class T, int D>
__global__ void flash_delta_kernel(FlashBackwardArgs a) {
  const int64_t rows = int64_t(a.f.batch) * a.f.heads * a.f.seq;
  const int64_t row = (int64_t(blockIdx.x) * blockDim.x + threadIdx.x) / kWarp;
  const int lane = threadIdx.x % kWarp;
  if (row >= rows) return;
  const int64_t t = row % a.f.seq, bh = row / a.f.seq;
  const int64_t h = bh % a.f.heads, b = bh / a.f.heads;
  const bool tokens = a.o_tokens != nullptr;
  constexpr int kE = D / kWarp;  // elements a lane
  const int64_t off = (tokens ? (b * a.f.seq + t) * a.f.heads * D + h * D : row * D) + lane * kE;
  const T* o = static_cast<const T*>(tokens ? a.o_tokens : a.f.o) + off;
  const T* d = static_cast<const T*>(tokens ? a.do_tokens : a.d_o) + off;
  float s = to_f(o[0]) * to_f(d[0]) + to_f(o[1]) * to_f(d[1]);
#pragma unroll
  for (int i = 2; i < kE; ++i)
    s += to_f(o[i]) * to_f(d[i]);
  s = warp_sum(s);
  if (lane == 0) a.delta[row] = s;
}

// Keep bits (bit j: query row0 + col(j), col_of) of the dK/dV kernel's lane: key kidx
// of a warp whose lanes 2r + half hold key r of 16 (kidx % 4 == r % 4) and the 32
// query rows of their half. Element (row, kidx) is in hash group (row * T + kidx) / 4,
// shared by the four lanes of keys 4m .. 4m + 3 (same half): lane t = r % 4 of them
// hashes the 8 groups of its queries j % 4 == t and the four swap their bits by
// shuffles, 8 hashes per lane instead of 32. The whole warp calls it.
__device__ __forceinline__ uint32_t column_keep_bits(const DropMask& drop, uint64_t row0, int seq,
                                                     int kidx, int lane) {
  if (!drop.on) return 0xFFFFFFFFu;
  const int t = (lane >> 1) & 3, half = lane & 1;
  uint32_t mine = 0;  // bits 4i .. 4i + 3: query j = 4i + t, keys 4m .. 4m + 3
#pragma unroll
  for (int i = 0; i < 8; ++i) {
    const uint64_t idx = (row0 + col_of(4 * i + t, half)) * uint64_t(seq) + kidx;
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

// dK and dV of one key tile (64 keys of one key/value head (b, g)), summed over the
// group's H / G query heads in order and, for each, over its query tiles (under a
// causal mask from the diagonal tile on: earlier queries do not see these keys).
// Warp w owns keys w*16..+16 and works on transposed score tiles (keys x queries).
// Launch: blockDim 128, dynamic shared memory Layout<D>::kBwdSmem, one block per
// (b, g, key tile).
template <class T, int D>
__global__ void __launch_bounds__(kWarps* kWarp, kBwdBlocks<D>)
    flash_dkdv_kernel(FlashBackwardArgs a) {
  using L = Layout<D>;
  extern __shared__ __align__(128) unsigned char smem[];
  T* ks = reinterpret_cast<T*>(smem);
  T* vs = ks + L::kHalfTile;
  T* qs = vs + L::kHalfTile;
  T* dos = qs + L::kHalfTile;
  const int warp = threadIdx.x / kWarp, lane = threadIdx.x % kWarp;
  float* fbase = reinterpret_cast<float*>(dos + L::kHalfTile);
  float* sw = fbase + warp * kWarpS;
  T* pw = reinterpret_cast<T*>(fbase + kWarps * kWarpS) + warp * kWarpP;
  float* lse_s =
      reinterpret_cast<float*>(reinterpret_cast<T*>(fbase + kWarps * kWarpS) + kWarps * kWarpP);
  float* delta_s = lse_s + kTile;
  const FlashArgs& f = a.f;
  const int tiles = f.seq / kTile;
  const int groups = kv_groups(f), rep = f.heads / groups;
  const int64_t bkv = blockIdx.x / tiles, b = bkv / groups, g = bkv % groups;
  const int k0 = int(blockIdx.x % tiles) * kTile;
  const int64_t kvbase = bkv * f.seq * D;
  load_tile<D>(static_cast<const T*>(f.k) + kvbase + int64_t(k0) * D, ks);
  load_tile<D>(static_cast<const T*>(f.v) + kvbase + int64_t(k0) * D, vs);
  const int r = lane >> 1, half = lane & 1;  // row r (a key), query columns col(j) (col_of)
  const int ki = warp * 16 + r;              // the key within the tile
  const int kidx = k0 + ki;
  const float bias = f.mask ? (f.mask[b * f.seq + kidx] != 0 ? 0.0f : kMaskBias) : 0.0f;
  const DropMask drop = drop_mask(f.drop);
  FragC dk[D / 16], dv[D / 16];
#pragma unroll
  for (int n = 0; n < D / 16; ++n) {
    wmma::fill_fragment(dk[n], 0.0f);
    wmma::fill_fragment(dv[n], 0.0f);
  }
  for (int hh = 0; hh < rep; ++hh) {
    const int64_t bh = b * f.heads + g * rep + hh;
    const int64_t qbase = bh * f.seq * D;
    for (int q0 = f.causal ? k0 : 0; q0 < f.seq; q0 += kTile) {
      __syncthreads();  // the previous query tile is no longer read
      load_tile<D>(static_cast<const T*>(f.q) + qbase + int64_t(q0) * D, qs);
      load_tile<D>(static_cast<const T*>(a.d_o) + qbase + int64_t(q0) * D, dos);
      for (int i = threadIdx.x; i < kTile; i += kWarps * kWarp) {
        lse_s[i] = f.lse[bh * f.seq + q0 + i];
        delta_s[i] = a.delta[bh * f.seq + q0 + i];
      }
      __syncthreads();
      // S^T (16 keys x 64 q) = K_w Q^T
      warp_gemm_abt<T, D>(sw, ks + warp * 16 * L::kLdh, qs);
      __syncwarp();
      float p[32];
      const uint32_t keep = column_keep_bits(drop, uint64_t(bh * f.seq + q0), f.seq, kidx, lane);
      const bool diag = f.causal && q0 == k0;
      const int before = ki - 4 * half;  // col(4c + e) < ki: 8c + e < before
#pragma unroll
      for (int c = 0; c < 8; ++c) {
        const float4 s4 = load4(sw + r * kLds + 8 * c + 4 * half);
        const float4 l4 = load4(lse_s + 8 * c + 4 * half);
        const float sv[4] = {s4.x, s4.y, s4.z, s4.w}, lv[4] = {l4.x, l4.y, l4.z, l4.w};
        float y[4];
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          const int j = 4 * c + e;
          p[j] = __expf(sv[e] * f.scale + bias - lv[e]);
          if (diag && 8 * c + e < before) p[j] = 0.0f;  // an earlier query: not this key
          y[e] = apply_kept(p[j], drop, keep, j);
        }
        store_run(pw + r * kLdp, c, half, y);
      }
      __syncwarp();
      // dV_w += Pd^T (16 keys x 64 q) dO (64 q x D)
      warp_gemm_acc<T, D>(dv, pw, dos);
      // dPd^T (16 keys x 64 q) = V_w dO^T
      warp_gemm_abt<T, D>(sw, vs + warp * 16 * L::kLdh, dos);
      __syncwarp();  // every lane is done reading pw (dV) and has written sw
#pragma unroll
      for (int c = 0; c < 8; ++c) {
        const float4 g4 = load4(sw + r * kLds + 8 * c + 4 * half);
        const float4 d4 = load4(delta_s + 8 * c + 4 * half);
        const float gv[4] = {g4.x, g4.y, g4.z, g4.w}, dv4[4] = {d4.x, d4.y, d4.z, d4.w};
        float y[4];
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          const int j = 4 * c + e;
          y[e] = p[j] * (apply_kept(gv[e], drop, keep, j) - dv4[e]);
        }
        store_run(pw + r * kLdp, c, half, y);
      }
      __syncwarp();
      // dK_w += dS^T (16 keys x 64 q) Q (64 q x D)
      warp_gemm_acc<T, D>(dk, pw, qs);
      __syncwarp();
    }
  }
  // Out through the warp's fp32 tile: dK scaled by s (S = s Q K^T).
  const int64_t out_row = bkv * f.seq + kidx;
  store_rows<T, D>(dk, sw, static_cast<T*>(a.dk) + out_row * D, f.scale, r, half);
  store_rows<T, D>(dv, sw, static_cast<T*>(a.dv) + out_row * D, 1.0f, r, half);
}

// dQ of one query tile; warp w owns queries w*16..+16. Launch: blockDim 128, dynamic
// shared memory Layout<D>::kBwdSmem, one block per (b, h, query tile).
template <class T, int D>
__global__ void __launch_bounds__(kWarps* kWarp, kBwdBlocks<D>)
    flash_dq_kernel(FlashBackwardArgs a) {
  using L = Layout<D>;
  extern __shared__ __align__(128) unsigned char smem[];
  T* qs = reinterpret_cast<T*>(smem);
  T* dos = qs + L::kHalfTile;
  T* ks = dos + L::kHalfTile;
  T* vs = ks + L::kHalfTile;
  const int warp = threadIdx.x / kWarp, lane = threadIdx.x % kWarp;
  float* fbase = reinterpret_cast<float*>(vs + L::kHalfTile);
  float* sw = fbase + warp * kWarpS;
  T* pw = reinterpret_cast<T*>(fbase + kWarps * kWarpS) + warp * kWarpP;
  const FlashArgs& f = a.f;
  const QueryBlock blk = query_block(f);
  const int q0 = blk.q0;
  const int64_t qbase = blk.bh * f.seq * D, kvbase = blk.bkv * f.seq * D;
  load_tile<D>(static_cast<const T*>(f.q) + qbase + int64_t(q0) * D, qs);
  load_tile<D>(static_cast<const T*>(a.d_o) + qbase + int64_t(q0) * D, dos);
  const int r = lane >> 1, half = lane & 1;  // row r (a query), key columns col(j) (col_of)
  const int qi = warp * 16 + r;
  const int64_t qrow = blk.bh * f.seq + q0 + qi;
  const float lse = f.lse[qrow], delta = a.delta[qrow];
  const DropMask drop = drop_mask(f.drop);
  FragC dq[D / 16];
#pragma unroll
  for (int n = 0; n < D / 16; ++n)
    wmma::fill_fragment(dq[n], 0.0f);
  const int k_end = f.causal ? q0 + kTile : f.seq;
  for (int k0 = 0; k0 < k_end; k0 += kTile) {
    __syncthreads();
    load_tile<D>(static_cast<const T*>(f.k) + kvbase + int64_t(k0) * D, ks);
    load_tile<D>(static_cast<const T*>(f.v) + kvbase + int64_t(k0) * D, vs);
    __syncthreads();
    // S (16 q x 64 keys) = Q_w K^T
    warp_gemm_abt<T, D>(sw, qs + warp * 16 * L::kLdh, ks);
    __syncwarp();
    float p[32];
    const int32_t* mask = f.mask ? f.mask + blk.b * f.seq + k0 : nullptr;
    const bool diag = f.causal && k0 == q0;
    const int after = qi - 4 * half;  // col(4c + e) > qi: 8c + e > after
#pragma unroll
    for (int c = 0; c < 8; ++c) {
      const float4 s4 = load4(sw + r * kLds + 8 * c + 4 * half);
      const float sv[4] = {s4.x, s4.y, s4.z, s4.w};
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const int j = 4 * c + e;
        const float bias = mask ? (mask[8 * c + 4 * half + e] != 0 ? 0.0f : kMaskBias) : 0.0f;
        p[j] = __expf(sv[e] * f.scale + bias - lse);
        if (diag && 8 * c + e > after) p[j] = 0.0f;  // a later key
      }
    }
    __syncwarp();
    // dPd (16 q x 64 keys) = dO_w V^T
    warp_gemm_abt<T, D>(sw, dos + warp * 16 * L::kLdh, vs);
    __syncwarp();
    const uint32_t keep = row_keep_bits(drop, uint64_t(qrow) * f.seq + k0, half);
#pragma unroll
    for (int c = 0; c < 8; ++c) {
      const float4 g4 = load4(sw + r * kLds + 8 * c + 4 * half);
      const float gv[4] = {g4.x, g4.y, g4.z, g4.w};
      float y[4];
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const int j = 4 * c + e;
        y[e] = p[j] * (apply_kept(gv[e], drop, keep, j) - delta);
      }
      store_run(pw + r * kLdp, c, half, y);
    }
    __syncwarp();
    // dQ_w += dS (16 q x 64 keys) K (64 keys x D)
    warp_gemm_acc<T, D>(dq, pw, ks);
    __syncwarp();
  }
  store_rows<T, D>(dq, sw, static_cast<T*>(a.dq) + qrow * D, f.scale, r, half);
}

void check(const FlashArgs& a) {
  if (!flash_attention_supported(a.dtype, a.seq, a.head_dim))
    throw Error("fused attention: bf16 or fp16, head size 64 or 128, sequence length % 64 == 0");
  if (a.batch <= 0 || a.heads <= 0 || a.kv_heads < 0 || a.kv_heads > a.heads ||
      a.heads % kv_groups(a) != 0)
    throw Error("fused attention: batch and heads > 0, kv_heads 0 or a divisor of heads");
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

template <int D>
void init_head_size() {
  allow_smem(flash_fwd_kernel<__half, D>, Layout<D>::kFwdSmem);
  allow_smem(flash_fwd_kernel<__nv_bfloat16, D>, Layout<D>::kFwdSmem);
  allow_smem(flash_dkdv_kernel<__half, D>, Layout<D>::kBwdSmem);
  allow_smem(flash_dkdv_kernel<__nv_bfloat16, D>, Layout<D>::kBwdSmem);
  allow_smem(flash_dq_kernel<__half, D>, Layout<D>::kBwdSmem);
  allow_smem(flash_dq_kernel<__nv_bfloat16, D>, Layout<D>::kBwdSmem);
}

template <class T, int D>
void forward(const FlashArgs& a, cudaStream_t s) {
  launch(flash_fwd_kernel<T, D>, Layout<D>::kFwdSmem, a, int64_t(a.batch) * a.heads, a.seq, s);
}

// delta, then the dK/dV and dQ kernels: the WMMA ones, or where `mma` (no dropout) the
// mma.sync ones of flash_attention_mma.cu, which read the same delta.
template <class T, int D>
void backward(const FlashBackwardArgs& a, bool mma, cudaStream_t s) {
  const FlashArgs& f = a.f;
  const int64_t rows = int64_t(f.batch) * f.heads * f.seq;
  constexpr int kThreads = 256;
  const unsigned blocks = static_cast<unsigned>((rows * kWarp + kThreads - 1) / kThreads);
  flash_delta_kernel<T, D><<<blocks, kThreads, 0, s>>>(a);
  GPUVS_CUDA_CHECK_LAUNCH();
  if (mma) {
    flash_mma_backward(a, s);
    return;
  }
  launch(flash_dkdv_kernel<T, D>, Layout<D>::kBwdSmem, a, int64_t(f.batch) * kv_groups(f), f.seq,
         s);
  launch(flash_dq_kernel<T, D>, Layout<D>::kBwdSmem, a, int64_t(f.batch) * f.heads, f.seq, s);
}

void backward_path(const FlashBackwardArgs& a, bool mma, cudaStream_t s) {
  check(a.f);
  const bool f16 = a.f.dtype == DType::kF16;
  if (a.f.head_dim == 64)
    f16 ? backward<__half, 64>(a, mma, s) : backward<__nv_bfloat16, 64>(a, mma, s);
  else
    f16 ? backward<__half, 128>(a, mma, s) : backward<__nv_bfloat16, 128>(a, mma, s);
}

}  // namespace

bool flash_attention_supported(DType dtype, int seq, int head_dim) {
  return dtype != DType::kF32 && (head_dim == 64 || head_dim == 128) && seq % kTile == 0 && seq > 0;
}

void flash_attention_init() {
  init_head_size<64>();
  init_head_size<128>();
  flash_mma_init();
}

void flash_attention_forward_wmma(const FlashArgs& a, cudaStream_t s) {
  check(a);
  const bool f16 = a.dtype == DType::kF16;
  if (a.head_dim == 64)
    f16 ? forward<__half, 64>(a, s) : forward<__nv_bfloat16, 64>(a, s);
  else
    f16 ? forward<__half, 128>(a, s) : forward<__nv_bfloat16, 128>(a, s);
}

void flash_attention_backward_wmma(const FlashBackwardArgs& a, cudaStream_t s) {
  backward_path(a, false, s);
}

// Without dropout (the Llama training, and BERT where its attention dropout is off) the
// mma.sync kernels, which keep the tiles in registers; the WMMA kernels hold dropout's
// mask.
void flash_attention_forward(const FlashArgs& a, cudaStream_t s) {
  if (a.drop.p > 0.0f) {
    flash_attention_forward_wmma(a, s);
    return;
  }
  check(a);
  flash_mma_forward(a, s);
}

void flash_attention_backward(const FlashBackwardArgs& a, cudaStream_t s) {
  backward_path(a, !(a.f.drop.p > 0.0f), s);
}

}  // namespace gpuvs::models::bert
