// The mma.sync forward of the fused attention without dropout (flash_attention_mma.cuh).
#include "models/bert/flash_attention_mma.cuh"

namespace gpuvs::models::bert {

namespace mma_detail {

template <class T, int D>
__global__ void __launch_bounds__(kRowWarps* kWarp, kFwdMinBlocks<D>) mma_fwd_kernel(FlashArgs a) {
  using L = Smem<D>;
  constexpr int kThreads = kRowWarps * kWarp;
  extern __shared__ __align__(128) unsigned char smem[];
  T* qs = reinterpret_cast<T*>(smem);
  const uint32_t qs_a = smem_u32(qs), kv_a = qs_a + kRows * L::kRowBytes;
  const int warp = int(threadIdx.x) / kWarp, lane = int(threadIdx.x) % kWarp;
  const int g = lane >> 2, t = lane & 3;
  const RowBlock blk = row_block(a);
  const T* kg = static_cast<const T*>(a.k) + blk.bkv * a.seq * D;
  const T* vg = static_cast<const T*>(a.v) + blk.bkv * a.seq * D;
  async_tile<T, D, kRows, kThreads>(
      qs_a, static_cast<const T*>(a.q) + (blk.bh * a.seq + blk.q0) * D, blk.rows);
  const auto load_kv = [&](int kt) {
    const uint32_t buf = kv_a + uint32_t(kt & 1) * 2 * L::kKeyTile;
    async_tile<T, D, kKeys, kThreads>(buf, kg + int64_t(kt) * kKeys * D, kKeys);
    async_tile<T, D, kKeys, kThreads>(buf + L::kKeyTile, vg + int64_t(kt) * kKeys * D, kKeys);
  };
  load_kv(0);
  cp_async_commit();
  const int w0 = warp * 16;           // the warp's first row in the tile
  const bool active = w0 < blk.rows;  // a short last tile leaves warps without rows
  const int warp_q0 = blk.q0 + w0;    // its first query
  const int row0 = warp_q0 + g;       // the lane's rows: row0 and row0 + 8
  const int32_t* mask = a.mask ? a.mask + blk.b * a.seq : nullptr;
  const uint32_t qa = qs_a + uint32_t(w0) * L::kRowBytes + a_lane<L::kLd>(lane);
  const uint32_t kb = b_lane<L::kLd>(lane), vb = bt_lane<L::kLd>(lane);
  float o[D / 8][4];
#pragma unroll
  for (int n = 0; n < D / 8; ++n)
    o[n][0] = o[n][1] = o[n][2] = o[n][3] = 0.0f;
  float m[2] = {-INFINITY, -INFINITY}, l[2] = {0.0f, 0.0f};  // l: the lane's columns only
  const int tiles = key_tiles(a, blk);
  for (int kt = 0; kt < tiles; ++kt) {
    if (kt + 1 < tiles) {
      load_kv(kt + 1);  // into the buffer the previous pass read (behind its barrier)
      cp_async_commit();
      cp_async_wait<1>();
    } else {
      cp_async_wait<0>();
    }
    __syncthreads();
    const int k0 = kt * kKeys;
    // Causal: a tile past the warp's last query adds exact zeros; every tile it does
    // read holds key k0 <= its first query (k0 and warp_q0 are multiples of 16), so
    // every row's maximum is finite from the first tile on.
    if (active && !(a.causal && k0 > warp_q0 + 15)) {
      const uint32_t ks_a = kv_a + uint32_t(kt & 1) * 2 * L::kKeyTile;
      float s[8][4];
      gemm_abt<T, D, 8>(s, qa, ks_a + kb);
      logits(s, a, mask, k0, row0, warp_q0, t);
      float alpha[2];
#pragma unroll
      for (int r = 0; r < 2; ++r) {
        float mx = m[r];
#pragma unroll
        for (int j = 0; j < 8; ++j)
          mx = fmaxf(mx, fmaxf(s[j][2 * r], s[j][2 * r + 1]));
        mx = quad_max(mx);
        alpha[r] = ex2(m[r] - mx);
        m[r] = mx;
      }
      float sum[2] = {0.0f, 0.0f};
#pragma unroll
      for (int j = 0; j < 8; ++j) {
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          s[j][e] = ex2(s[j][e] - m[e >> 1]);
          sum[e >> 1] += s[j][e];
        }
      }
      l[0] = l[0] * alpha[0] + sum[0];
      l[1] = l[1] * alpha[1] + sum[1];
#pragma unroll
      for (int n = 0; n < D / 8; ++n) {
        o[n][0] *= alpha[0];
        o[n][1] *= alpha[0];
        o[n][2] *= alpha[1];
        o[n][3] *= alpha[1];
      }
      gemm_pv<T, D, 4>(o, s, ks_a + L::kKeyTile + vb);
    }
    __syncthreads();  // every warp is done with this buffer before it is refilled
  }
  if (!active) return;
  l[0] = quad_sum(l[0]);
  l[1] = quad_sum(l[1]);
  T* out = static_cast<T*>(a.o) + (blk.bh * a.seq + warp_q0) * D;
  store_warp_rows<T, D>(o, 1.0f / l[0], 1.0f / l[1], qs + w0 * L::kLd, out, lane);
  if (a.lse && t == 0) {
    a.lse[blk.bh * a.seq + row0] = m[0] * kLn2 + logf(l[0]);
    a.lse[blk.bh * a.seq + row0 + 8] = m[1] * kLn2 + logf(l[1]);
  }
}

// dQ of 128 queries; warp w owns queries 16w .. 16w + 15. Launch: 256 threads, dynamic
// shared memory Smem<D>::kDq, one block per (b, h, tile of 128 queries).

void init_forward_kernels() {
  allow_smem(mma_fwd_kernel<__half, 64>, Smem<64>::kFwd);
  allow_smem(mma_fwd_kernel<__nv_bfloat16, 64>, Smem<64>::kFwd);
  allow_smem(mma_fwd_kernel<__half, 128>, Smem<128>::kFwd);
  allow_smem(mma_fwd_kernel<__nv_bfloat16, 128>, Smem<128>::kFwd);
}

template <class T, int D>
void forward(const FlashArgs& a, cudaStream_t s) {
  launch(mma_fwd_kernel<T, D>, int64_t(a.batch) * a.heads * row_tiles(a.seq), kRowWarps * kWarp,
         Smem<D>::kFwd, a, s);
}

}  // namespace mma_detail

void flash_mma_forward(const FlashArgs& a, cudaStream_t s) {
  using mma_detail::forward;
  const bool f16 = a.dtype == DType::kF16;
  if (a.head_dim == 64)
    f16 ? forward<__half, 64>(a, s) : forward<__nv_bfloat16, 64>(a, s);
  else
    f16 ? forward<__half, 128>(a, s) : forward<__nv_bfloat16, 128>(a, s);
}

}  // namespace gpuvs::models::bert
