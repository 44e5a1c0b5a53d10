// The WMMA fused attention's backward kernels, dK/dV and dQ (flash_attention_wmma.cuh).
#include "models/bert/flash_attention_wmma.cuh"

namespace gpuvs::models::bert::wmma_detail {

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

namespace {

template <int D>
void init_head_size() {
  allow_smem(flash_dkdv_kernel<__half, D>, Layout<D>::kBwdSmem);
  allow_smem(flash_dkdv_kernel<__nv_bfloat16, D>, Layout<D>::kBwdSmem);
  allow_smem(flash_dq_kernel<__half, D>, Layout<D>::kBwdSmem);
  allow_smem(flash_dq_kernel<__nv_bfloat16, D>, Layout<D>::kBwdSmem);
}

template <class T, int D>
void launch_backward(const FlashBackwardArgs& a, cudaStream_t s) {
  const FlashArgs& f = a.f;
  launch(flash_dkdv_kernel<T, D>, Layout<D>::kBwdSmem, a, int64_t(f.batch) * kv_groups(f), f.seq,
         s);
  launch(flash_dq_kernel<T, D>, Layout<D>::kBwdSmem, a, int64_t(f.batch) * f.heads, f.seq, s);
}

}  // namespace

void init_backward_kernels() {
  init_head_size<64>();
  init_head_size<128>();
}

void backward_kernels(const FlashBackwardArgs& a, cudaStream_t s) {
  const bool f16 = a.f.dtype == DType::kF16;
  if (a.f.head_dim == 64)
    f16 ? launch_backward<__half, 64>(a, s) : launch_backward<__nv_bfloat16, 64>(a, s);
  else
    f16 ? launch_backward<__half, 128>(a, s) : launch_backward<__nv_bfloat16, 128>(a, s);
}

}  // namespace gpuvs::models::bert::wmma_detail
