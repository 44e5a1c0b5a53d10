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
// This file: the forward and delta kernels and the dispatch; the backward kernels are in
// flash_attention_wmma_bwd.cu, what they share in flash_attention_wmma.cuh.
#include "models/bert/flash_attention_wmma.cuh"

namespace gpuvs::models::bert {
namespace wmma_detail {

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

namespace {

void check(const FlashArgs& a) {
  if (!flash_attention_supported(a.dtype, a.seq, a.head_dim))
    throw Error("fused attention: bf16 or fp16, head size 64 or 128, sequence length % 64 == 0");
  if (a.batch <= 0 || a.heads <= 0 || a.kv_heads < 0 || a.kv_heads > a.heads ||
      a.heads % kv_groups(a) != 0)
    throw Error("fused attention: batch and heads > 0, kv_heads 0 or a divisor of heads");
}

template <int D>
void init_head_size() {
  allow_smem(flash_fwd_kernel<__half, D>, Layout<D>::kFwdSmem);
  allow_smem(flash_fwd_kernel<__nv_bfloat16, D>, Layout<D>::kFwdSmem);
}

template <class T, int D>
void forward(const FlashArgs& a, cudaStream_t s) {
  launch(flash_fwd_kernel<T, D>, Layout<D>::kFwdSmem, a, int64_t(a.batch) * a.heads, a.seq, s);
}

// delta, then the dK/dV and dQ kernels: the WMMA ones, or where `mma` (no dropout) the
// mma.sync ones of flash_attention_mma_{fwd,bwd}.cu, which read the same delta.
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
  backward_kernels(a, s);
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
}  // namespace wmma_detail

using wmma_detail::backward_path;
using wmma_detail::check;
using wmma_detail::forward;
using wmma_detail::init_head_size;
using wmma_detail::kTile;

bool flash_attention_supported(DType dtype, int seq, int head_dim) {
  return dtype != DType::kF32 && (head_dim == 64 || head_dim == 128) && seq % kTile == 0 && seq > 0;
}

void flash_attention_init() {
  init_head_size<64>();
  init_head_size<128>();
  wmma_detail::init_backward_kernels();
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
