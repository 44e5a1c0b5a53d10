// Attention's own kernels (kernels.h): head split/merge copies around the batched
// GEMMs and the fused mask + softmax + dropout, forward and backward. The softmax
// kernels take one warp per row of T <= 1024 keys, held in registers (T % 32 == 0),
// with vector loads and stores of contiguous elements per lane.
#include <cstdint>
#include <initializer_list>

#include "gpu/check.h"
#include "models/bert/device_util.cuh"
#include "models/bert/kernels.h"

namespace gpuvs::models::bert {

namespace {

constexpr int kThreads = 256;
constexpr int kRowsPerBlock = kThreads / kWarp;
constexpr int kMaxKeysPerLane = 32;  // T <= 1024
constexpr float kMaskBias = -1e30f;

// One thread per 16-byte vector of the token-major tensor (B, T, nmat, H, D).
template <class T, bool kToHeads>
__global__ void heads_kernel(HeadsArgs a) {
  constexpr int kN = Vec<T>::kN;
  const int dvecs = a.head_dim / kN;
  const int64_t n = int64_t(a.batch) * a.seq * a.nmat * a.heads * dvecs;
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x) {
    int64_t r = i;
    const int dv = static_cast<int>(r % dvecs);
    r /= dvecs;
    const int h = static_cast<int>(r % a.heads);
    r /= a.heads;
    const int m = static_cast<int>(r % a.nmat);
    r /= a.nmat;
    const int t = static_cast<int>(r % a.seq);
    const int64_t b = r / a.seq;
    T* tok = static_cast<T*>(a.tokens) + i * kN;
    T* head = static_cast<T*>(a.split[m]) + ((b * a.heads + h) * a.seq + t) * a.head_dim + dv * kN;
    if (kToHeads)
      store_vec(head, load_vec(tok));
    else
      store_vec(tok, load_vec(head));
  }
}

// The softmax kernels: one warp per row of T keys (T % 32 == 0, T <= 1024), the row in
// registers. Each lane holds T / 32 keys as chunks of kV contiguous elements: chunk c
// of lane l is columns (c * 32 + l) * kV .. + kV, so a warp's load of one chunk is
// 32 * kV contiguous elements, each lane's a single 4- to 16-byte access (kV = 8 for
// 16-bit types at T = 512: 16 bytes; kV = 4 at T = 128: 8 bytes). The key mask is read
// the same way, and dropout takes one hash per 4 consecutive elements (kV >= 4).
// Blocks of kThreads (8 rows); scores, p, p_drop, dp, ds and mask 16-byte aligned.
template <class T, int kV>
__global__ void __launch_bounds__(kThreads) softmax_forward_kernel(SoftmaxArgs a) {
  constexpr int kMaxChunks = kMaxKeysPerLane / kV;
  const int lane = threadIdx.x % kWarp;
  const int64_t rows = int64_t(a.batch) * a.heads * a.seq;
  const int64_t row = int64_t(blockIdx.x) * kRowsPerBlock + threadIdx.x / kWarp;
  if (row >= rows) return;
  const int chunks = a.seq / (kWarp * kV);
  const int64_t b = row / (int64_t(a.heads) * a.seq);
  const T* s = static_cast<const T*>(a.scores) + row * a.seq;  // (T) of (B, H, T, T)
  const int32_t* mask = a.mask + b * a.seq;                    // (T) of (B, T)
  float v[kMaxKeysPerLane];
  float mx = -INFINITY;
#pragma unroll
  for (int c = 0; c < kMaxChunks; ++c) {
    if (c >= chunks) continue;
    const int col = (c * kWarp + lane) * kV;
    const Packed<T, kV> sv = load_packed<kV>(s + col);
    const Packed<int32_t, kV> mv = load_packed<kV>(mask + col);
#pragma unroll
    for (int k = 0; k < kV; ++k) {
      const float x = to_f(sv.e[k]) + (mv.e[k] != 0 ? 0.0f : kMaskBias);
      v[c * kV + k] = x;
      mx = fmaxf(mx, x);
    }
  }
  mx = warp_max(mx);
  float sum = 0.0f;
#pragma unroll
  for (int c = 0; c < kMaxChunks; ++c) {
    if (c >= chunks) continue;
#pragma unroll
    for (int k = 0; k < kV; ++k) {
      const float e = __expf(v[c * kV + k] - mx);
      v[c * kV + k] = e;
      sum += e;
    }
  }
  const float inv = 1.0f / warp_sum(sum);
  const DropMask drop = drop_mask(a.drop);
  T* p = static_cast<T*>(a.p) + row * a.seq;
  T* pd = a.p_drop ? static_cast<T*>(a.p_drop) + row * a.seq : nullptr;
#pragma unroll
  for (int c = 0; c < kMaxChunks; ++c) {
    if (c >= chunks) continue;
    const int col = (c * kWarp + lane) * kV;
#pragma unroll
    for (int k = 0; k < kV; ++k)
      v[c * kV + k] *= inv;
    Packed<T, kV> out;
#pragma unroll
    for (int k = 0; k < kV; ++k)
      out.e[k] = from_f<T>(v[c * kV + k]);
    store_packed<kV>(p + col, out);
    if (!pd) continue;
    const uint32_t keep = drop_bits<kV>(drop, uint64_t(row) * a.seq + col);
#pragma unroll
    for (int k = 0; k < kV; ++k)
      out.e[k] = from_f<T>(apply_kept(v[c * kV + k], drop, keep, k));
    store_packed<kV>(pd + col, out);
  }
}

template <class T, int kV>
__global__ void __launch_bounds__(kThreads) softmax_backward_kernel(SoftmaxBackwardArgs a) {
  constexpr int kMaxChunks = kMaxKeysPerLane / kV;
  const int lane = threadIdx.x % kWarp;
  const int64_t row = int64_t(blockIdx.x) * kRowsPerBlock + threadIdx.x / kWarp;
  if (row >= a.rows) return;
  const int chunks = a.seq / (kWarp * kV);
  const T* dp = static_cast<const T*>(a.dp) + row * a.seq;  // (T)
  const T* p = static_cast<const T*>(a.p) + row * a.seq;    // (T)
  const DropMask drop = drop_mask(a.drop);
  float g[kMaxKeysPerLane], pv[kMaxKeysPerLane];
  float dot = 0.0f;
#pragma unroll
  for (int c = 0; c < kMaxChunks; ++c) {
    if (c >= chunks) continue;
    const int col = (c * kWarp + lane) * kV;
    const Packed<T, kV> dv = load_packed<kV>(dp + col);
    const Packed<T, kV> ppv = load_packed<kV>(p + col);
    const uint32_t keep = drop_bits<kV>(drop, uint64_t(row) * a.seq + col);
#pragma unroll
    for (int k = 0; k < kV; ++k) {
      const int i = c * kV + k;
      g[i] = apply_kept(to_f(dv.e[k]), drop, keep, k);
      pv[i] = to_f(ppv.e[k]);
      dot += g[i] * pv[i];
    }
  }
  dot = warp_sum(dot);
  T* ds = static_cast<T*>(a.ds) + row * a.seq;  // (T)
#pragma unroll
  for (int c = 0; c < kMaxChunks; ++c) {
    if (c >= chunks) continue;
    Packed<T, kV> out;
#pragma unroll
    for (int k = 0; k < kV; ++k)
      out.e[k] = from_f<T>(pv[c * kV + k] * (g[c * kV + k] - dot));
    store_packed<kV>(ds + (c * kWarp + lane) * kV, out);
  }
}

void check_heads(const HeadsArgs& a) {
  if (a.head_dim % 8 != 0 || a.nmat < 1 || a.nmat > 3)
    throw Error("head split: head size % 8 == 0 and 1 to 3 tensors");
}

void check_softmax(int seq, std::initializer_list<const void*> pointers) {
  if (seq % kWarp != 0 || seq < kWarp || seq > kWarp * kMaxKeysPerLane)
    throw Error("attention softmax: sequence length % 32 == 0 and <= 1024");
  for (const void* p : pointers)
    if (reinterpret_cast<uintptr_t>(p) % 16 != 0)
      throw Error("attention softmax: tensors must be 16-byte aligned");
}

// f.template operator()<kV>() with kV the chunk of the softmax kernels for rows of
// `seq` elements of T: the largest power of two of at most 16 bytes that divides the
// lane's seq / 32 elements.
template <class T, class F>
void with_chunk(int seq, F&& f) {
  const int per_lane = seq / kWarp;
  if constexpr (sizeof(T) == 2) {
    if (per_lane % 8 == 0) return f.template operator()<8>();
  }
  if (per_lane % 4 == 0) return f.template operator()<4>();
  if (per_lane % 2 == 0) return f.template operator()<2>();
  return f.template operator()<1>();
}

}  // namespace

void tokens_to_heads(const HeadsArgs& a, cudaStream_t s) {
  check_heads(a);
  const int64_t n = int64_t(a.batch) * a.seq * a.nmat * a.heads * a.head_dim;
  GPUVS_DISPATCH_DTYPE(a.dtype, {
    heads_kernel<T, true><<<grid_for(n / Vec<T>::kN, kThreads), kThreads, 0, s>>>(a);
  });
  GPUVS_CUDA_CHECK_LAUNCH();
}

void heads_to_tokens(const HeadsArgs& a, cudaStream_t s) {
  check_heads(a);
  const int64_t n = int64_t(a.batch) * a.seq * a.nmat * a.heads * a.head_dim;
  GPUVS_DISPATCH_DTYPE(a.dtype, {
    heads_kernel<T, false><<<grid_for(n / Vec<T>::kN, kThreads), kThreads, 0, s>>>(a);
  });
  GPUVS_CUDA_CHECK_LAUNCH();
}

void attention_softmax_forward(const SoftmaxArgs& a, cudaStream_t s) {
  check_softmax(a.seq, {a.scores, a.mask, a.p, a.p_drop});
  const int64_t rows = int64_t(a.batch) * a.heads * a.seq;
  const unsigned blocks = static_cast<unsigned>((rows + kRowsPerBlock - 1) / kRowsPerBlock);
  GPUVS_DISPATCH_DTYPE(a.dtype, {
    with_chunk<T>(a.seq,
                  [&]<int kV>() { softmax_forward_kernel<T, kV><<<blocks, kThreads, 0, s>>>(a); });
  });
  GPUVS_CUDA_CHECK_LAUNCH();
}

void attention_softmax_backward(const SoftmaxBackwardArgs& a, cudaStream_t s) {
  check_softmax(a.seq, {a.dp, a.p, a.ds});
  const unsigned blocks = static_cast<unsigned>((a.rows + kRowsPerBlock - 1) / kRowsPerBlock);
  GPUVS_DISPATCH_DTYPE(a.dtype, {
    with_chunk<T>(a.seq,
                  [&]<int kV>() { softmax_backward_kernel<T, kV><<<blocks, kThreads, 0, s>>>(a); });
  });
  GPUVS_CUDA_CHECK_LAUNCH();
}

}  // namespace gpuvs::models::bert
