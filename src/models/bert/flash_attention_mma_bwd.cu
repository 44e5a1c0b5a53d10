// The mma.sync backward of the fused attention without dropout: the dK/dV and dQ
// kernels (flash_attention_mma.cuh).
#include "models/bert/flash_attention_mma.cuh"

namespace gpuvs::models::bert {

namespace mma_detail {

template <class T, int D>
__global__ void __launch_bounds__(kRowWarps* kWarp, 1) mma_dq_kernel(FlashBackwardArgs ba) {
  using L = Smem<D>;
  constexpr int kThreads = kRowWarps * kWarp;
  const FlashArgs& a = ba.f;
  extern __shared__ __align__(128) unsigned char smem[];
  T* qs = reinterpret_cast<T*>(smem);
  const uint32_t qs_a = smem_u32(qs), dos_a = qs_a + kRows * L::kRowBytes;
  const uint32_t kv_a = dos_a + kRows * L::kRowBytes;
  const int warp = int(threadIdx.x) / kWarp, lane = int(threadIdx.x) % kWarp;
  const int g = lane >> 2, t = lane & 3;
  const RowBlock blk = row_block(a);
  const T* kg = static_cast<const T*>(a.k) + blk.bkv * a.seq * D;
  const T* vg = static_cast<const T*>(a.v) + blk.bkv * a.seq * D;
  const int64_t qoff = (blk.bh * a.seq + blk.q0) * D;
  async_tile<T, D, kRows, kThreads>(qs_a, static_cast<const T*>(a.q) + qoff, blk.rows);
  async_tile<T, D, kRows, kThreads>(dos_a, static_cast<const T*>(ba.d_o) + qoff, blk.rows);
  const auto load_kv = [&](int kt) {
    const uint32_t buf = kv_a + uint32_t(kt & 1) * 2 * L::kKeyTile;
    async_tile<T, D, kKeys, kThreads>(buf, kg + int64_t(kt) * kKeys * D, kKeys);
    async_tile<T, D, kKeys, kThreads>(buf + L::kKeyTile, vg + int64_t(kt) * kKeys * D, kKeys);
  };
  load_kv(0);
  cp_async_commit();
  const int w0 = warp * 16;
  const bool active = w0 < blk.rows;
  const int warp_q0 = blk.q0 + w0;
  const int row0 = warp_q0 + g;
  const int32_t* mask = a.mask ? a.mask + blk.b * a.seq : nullptr;
  float lse2[2] = {0.0f, 0.0f}, delta[2] = {0.0f, 0.0f};
  if (active) {
    for (int r = 0; r < 2; ++r) {
      lse2[r] = a.lse[blk.bh * a.seq + row0 + 8 * r] * kLog2e;
      delta[r] = ba.delta[blk.bh * a.seq + row0 + 8 * r];
    }
  }
  const uint32_t arow = uint32_t(w0) * L::kRowBytes + a_lane<L::kLd>(lane);
  const uint32_t kb = b_lane<L::kLd>(lane), kbt = bt_lane<L::kLd>(lane);
  float dq[D / 8][4];
#pragma unroll
  for (int n = 0; n < D / 8; ++n)
    dq[n][0] = dq[n][1] = dq[n][2] = dq[n][3] = 0.0f;
  const int tiles = key_tiles(a, blk);
  for (int kt = 0; kt < tiles; ++kt) {
    if (kt + 1 < tiles) {
      load_kv(kt + 1);
      cp_async_commit();
      cp_async_wait<1>();
    } else {
      cp_async_wait<0>();
    }
    __syncthreads();
    const int k0 = kt * kKeys;
    if (active && !(a.causal && k0 > warp_q0 + 15)) {
      const uint32_t ks_a = kv_a + uint32_t(kt & 1) * 2 * L::kKeyTile, vs_a = ks_a + L::kKeyTile;
      float p[8][4];
      gemm_abt<T, D, 8>(p, qs_a + arow, ks_a + kb);  // S = Q_w K^T
      logits(p, a, mask, k0, row0, warp_q0, t);
#pragma unroll
      for (int j = 0; j < 8; ++j)
#pragma unroll
        for (int e = 0; e < 4; ++e)
          p[j][e] = ex2(p[j][e] - lse2[e >> 1]);
      float ds[8][4];
      gemm_abt<T, D, 8>(ds, dos_a + arow, vs_a + kb);  // dP = dO_w V^T
#pragma unroll
      for (int j = 0; j < 8; ++j)
#pragma unroll
        for (int e = 0; e < 4; ++e)
          ds[j][e] = p[j][e] * (ds[j][e] - delta[e >> 1]);
      gemm_pv<T, D, 4>(dq, ds, ks_a + kbt);  // dQ_w += dS K
    }
    __syncthreads();
  }
  if (!active) return;
  T* out = static_cast<T*>(ba.dq) + (blk.bh * a.seq + warp_q0) * D;
  store_warp_rows<T, D>(dq, a.scale, a.scale, qs + w0 * L::kLd, out, lane);
}

// dK and dV of 64 keys of a key/value head (b, g), summed over the group's query heads
// in order and, for each, over its query tiles of 64 in order (causal: from the one
// holding the tile's first key). Warp w owns keys 16w .. 16w + 15 and works on
// transposed tiles (its keys x 64 queries). Launch: 128 threads, dynamic shared memory
// Smem<D>::kDkdv, one block per (b, g, key tile).
template <class T, int D>
__global__ void __launch_bounds__(kKeyWarps* kWarp, kDkdvMinBlocks<D>)
    mma_dkdv_kernel(FlashBackwardArgs ba) {
  using L = Smem<D>;
  constexpr int kThreads = kKeyWarps * kWarp;
  static_assert(kStepQ * 2 <= kThreads, "one thread a value of lse and delta");
  const FlashArgs& a = ba.f;
  extern __shared__ __align__(128) unsigned char smem[];
  T* ks = reinterpret_cast<T*>(smem);
  T* vs = ks + kKeys * L::kLd;
  const uint32_t ks_a = smem_u32(ks), vs_a = ks_a + L::kKeyTile;
  const uint32_t step_a = vs_a + L::kKeyTile;  // buffer i at step_a + i * kStepBytes
  const float* step_f = reinterpret_cast<const float*>(smem + 2 * L::kKeyTile);
  const int warp = int(threadIdx.x) / kWarp, lane = int(threadIdx.x) % kWarp;
  const int g = lane >> 2, t = lane & 3;
  const int tiles = a.seq / kKeys;
  const int groups = kv_groups(a), rep = a.heads / groups;
  const int64_t bkv = blockIdx.x / tiles, b = bkv / groups, grp = bkv % groups;
  const int k0 = int(blockIdx.x % tiles) * kKeys;
  const int64_t kvoff = (bkv * a.seq + k0) * D;
  async_tile<T, D, kKeys, kThreads>(ks_a, static_cast<const T*>(a.k) + kvoff, kKeys);
  async_tile<T, D, kKeys, kThreads>(vs_a, static_cast<const T*>(a.v) + kvoff, kKeys);
  const int q_first = a.causal ? k0 / kStepQ : 0;
  const int per_head = a.seq / kStepQ - q_first;
  const int steps = rep * per_head;
  // Step i: query head grp * rep + i / per_head, queries (q_first + i % per_head) * 64 ..
  const auto step_rows = [&](int i) {
    return (b * a.heads + grp * rep + i / per_head) * a.seq + (q_first + i % per_head) * kStepQ;
  };
  const auto load_step = [&](int i) {
    const uint32_t buf = step_a + uint32_t(i & 1) * L::kStepBytes;
    const int64_t row = step_rows(i);
    async_tile<T, D, kStepQ, kThreads>(buf, static_cast<const T*>(a.q) + row * D, kStepQ);
    async_tile<T, D, kStepQ, kThreads>(buf + L::kStepTile, static_cast<const T*>(ba.d_o) + row * D,
                                       kStepQ);
    const int x = int(threadIdx.x);
    if (x < kStepQ)
      cp_async4(buf + 2 * L::kStepTile + x * 4, a.lse + row + x);
    else if (x < 2 * kStepQ)
      cp_async4(buf + 2 * L::kStepTile + x * 4, ba.delta + row + x - kStepQ);
  };
  load_step(0);
  cp_async_commit();
  const int key0 = k0 + warp * 16 + g;  // the lane's keys: key0 and key0 + 8
  const float sl2 = a.scale * kLog2e;
  float bias[2] = {0.0f, 0.0f};
  if (a.mask) {
    bias[0] = a.mask[b * a.seq + key0] != 0 ? 0.0f : kMaskBias2;
    bias[1] = a.mask[b * a.seq + key0 + 8] != 0 ? 0.0f : kMaskBias2;
  }
  const uint32_t arow = uint32_t(warp * 16) * L::kRowBytes + a_lane<L::kLd>(lane);
  const uint32_t xb = b_lane<L::kLd>(lane), xbt = bt_lane<L::kLd>(lane);
  float dk[D / 8][4], dv[D / 8][4];
#pragma unroll
  for (int n = 0; n < D / 8; ++n) {
    dk[n][0] = dk[n][1] = dk[n][2] = dk[n][3] = 0.0f;
    dv[n][0] = dv[n][1] = dv[n][2] = dv[n][3] = 0.0f;
  }
  for (int i = 0; i < steps; ++i) {
    if (i + 1 < steps) {
      load_step(i + 1);
      cp_async_commit();
      cp_async_wait<1>();
    } else {
      cp_async_wait<0>();
    }
    __syncthreads();
    const uint32_t qs_a = step_a + uint32_t(i & 1) * L::kStepBytes, dos_a = qs_a + L::kStepTile;
    const float* lse_s = step_f + (i & 1) * (L::kStepBytes / 4) + 2 * L::kStepTile / 4;
    const float* delta_s = lse_s + kStepQ;
    const int q0 = (q_first + i % per_head) * kStepQ;
    // Causal: queries before a key give it no weight; only tiles holding such queries
    // (q0 < k0 + 64: the first one, as steps and key tiles are both 64) need the test.
    const bool diag = a.causal && q0 < k0 + kKeys;
    float p[8][4];
    gemm_abt<T, D, 8>(p, ks_a + arow, qs_a + xb);  // S^T = K_w Q^T
#pragma unroll
    for (int j = 0; j < 8; ++j) {
      const int qc = 8 * j + 2 * t;  // the lane's query columns qc, qc + 1
      const float l0 = lse_s[qc] * kLog2e, l1 = lse_s[qc + 1] * kLog2e;
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const float x = a.mask ? p[j][e] * sl2 + bias[e >> 1] : p[j][e] * sl2;
        float y = ex2(x - ((e & 1) ? l1 : l0));
        if (diag && q0 + qc + (e & 1) < key0 + 8 * (e >> 1)) y = 0.0f;
        p[j][e] = y;
      }
    }
    gemm_pv<T, D, 4>(dv, p, dos_a + xbt);  // dV_w += P^T dO
    float ds[8][4];
    gemm_abt<T, D, 8>(ds, vs_a + arow, dos_a + xb);  // dP^T = V_w dO^T
#pragma unroll
    for (int j = 0; j < 8; ++j) {
      const int qc = 8 * j + 2 * t;
      const float d0 = delta_s[qc], d1 = delta_s[qc + 1];
#pragma unroll
      for (int e = 0; e < 4; ++e)
        ds[j][e] = p[j][e] * (ds[j][e] - ((e & 1) ? d1 : d0));
    }
    gemm_pv<T, D, 4>(dk, ds, qs_a + xbt);  // dK_w += dS^T Q
    __syncthreads();  // every warp is done with this buffer before it is refilled
  }
  const int64_t out = (bkv * a.seq + k0 + warp * 16) * D;
  store_warp_rows<T, D>(dk, a.scale, a.scale, ks + warp * 16 * L::kLd, static_cast<T*>(ba.dk) + out,
                        lane);
  store_warp_rows<T, D>(dv, 1.0f, 1.0f, vs + warp * 16 * L::kLd, static_cast<T*>(ba.dv) + out,
                        lane);
}

template <int D>
void init_backward_kernels() {
  allow_smem(mma_dq_kernel<__half, D>, Smem<D>::kDq);
  allow_smem(mma_dq_kernel<__nv_bfloat16, D>, Smem<D>::kDq);
  allow_smem(mma_dkdv_kernel<__half, D>, Smem<D>::kDkdv);
  allow_smem(mma_dkdv_kernel<__nv_bfloat16, D>, Smem<D>::kDkdv);
}

template <class T, int D>
void backward(const FlashBackwardArgs& a, cudaStream_t s) {
  const FlashArgs& f = a.f;
  launch(mma_dkdv_kernel<T, D>, int64_t(f.batch) * kv_groups(f) * (f.seq / kKeys),
         kKeyWarps * kWarp, Smem<D>::kDkdv, a, s);
  launch(mma_dq_kernel<T, D>, int64_t(f.batch) * f.heads * row_tiles(f.seq), kRowWarps * kWarp,
         Smem<D>::kDq, a, s);
}

}  // namespace mma_detail

void flash_mma_init() {
  mma_detail::init_forward_kernels();
  mma_detail::init_backward_kernels<64>();
  mma_detail::init_backward_kernels<128>();
}

void flash_mma_backward(const FlashBackwardArgs& a, cudaStream_t s) {
  using mma_detail::backward;
  const bool f16 = a.f.dtype == DType::kF16;
  if (a.f.head_dim == 64)
    f16 ? backward<__half, 64>(a, s) : backward<__nv_bfloat16, 64>(a, s);
  else
    f16 ? backward<__half, 128>(a, s) : backward<__nv_bfloat16, 128>(a, s);
}

}  // namespace gpuvs::models::bert
