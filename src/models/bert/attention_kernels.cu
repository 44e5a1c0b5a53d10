// Attention's own kernels (kernels.h): head split/merge copies around the batched
// GEMMs and the fused mask + softmax + dropout, forward and backward. The softmax
// kernels take one warp per row of T <= 1024 keys, held in registers (T % 32 == 0).
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

template <class T>
__global__ void __launch_bounds__(kThreads) softmax_forward_kernel(SoftmaxArgs a) {
  const int lane = threadIdx.x % kWarp;
  const int64_t rows = int64_t(a.batch) * a.heads * a.seq;
  const int64_t row = int64_t(blockIdx.x) * kRowsPerBlock + threadIdx.x / kWarp;
  if (row >= rows) return;
  const int per_lane = a.seq / kWarp;
  const int64_t b = row / (int64_t(a.heads) * a.seq);
  const T* s = static_cast<const T*>(a.scores) + row * a.seq;
  const int32_t* mask = a.mask + b * a.seq;
  float v[kMaxKeysPerLane];
  float mx = -INFINITY;
#pragma unroll
  for (int j = 0; j < kMaxKeysPerLane; ++j) {
    if (j >= per_lane) continue;
    const int col = j * kWarp + lane;
    v[j] = to_f(s[col]) + (mask[col] != 0 ? 0.0f : kMaskBias);
    mx = fmaxf(mx, v[j]);
  }
  mx = warp_max(mx);
  float sum = 0.0f;
#pragma unroll
  for (int j = 0; j < kMaxKeysPerLane; ++j) {
    if (j >= per_lane) continue;
    v[j] = __expf(v[j] - mx);
    sum += v[j];
  }
  const float inv = 1.0f / warp_sum(sum);
  const uint64_t key = drop_key(a.drop);
  T* p = static_cast<T*>(a.p) + row * a.seq;
  T* pd = a.p_drop ? static_cast<T*>(a.p_drop) + row * a.seq : nullptr;
#pragma unroll
  for (int j = 0; j < kMaxKeysPerLane; ++j) {
    if (j >= per_lane) continue;
    const int col = j * kWarp + lane;
    const float prob = v[j] * inv;
    p[col] = from_f<T>(prob);
    if (pd) pd[col] = from_f<T>(apply_drop(prob, a.drop, key, uint64_t(row) * a.seq + col));
  }
}

template <class T>
__global__ void __launch_bounds__(kThreads) softmax_backward_kernel(SoftmaxBackwardArgs a) {
  const int lane = threadIdx.x % kWarp;
  const int64_t row = int64_t(blockIdx.x) * kRowsPerBlock + threadIdx.x / kWarp;
  if (row >= a.rows) return;
  const int per_lane = a.seq / kWarp;
  const T* dp = static_cast<const T*>(a.dp) + row * a.seq;
  const T* p = static_cast<const T*>(a.p) + row * a.seq;
  const uint64_t key = drop_key(a.drop);
  float g[kMaxKeysPerLane], pv[kMaxKeysPerLane];
  float dot = 0.0f;
#pragma unroll
  for (int j = 0; j < kMaxKeysPerLane; ++j) {
    if (j >= per_lane) continue;
    const int col = j * kWarp + lane;
    g[j] = apply_drop(to_f(dp[col]), a.drop, key, uint64_t(row) * a.seq + col);
    pv[j] = to_f(p[col]);
    dot += g[j] * pv[j];
  }
  dot = warp_sum(dot);
  T* ds = static_cast<T*>(a.ds) + row * a.seq;
#pragma unroll
  for (int j = 0; j < kMaxKeysPerLane; ++j) {
    if (j >= per_lane) continue;
    ds[j * kWarp + lane] = from_f<T>(pv[j] * (g[j] - dot));
  }
}

void check_heads(const HeadsArgs& a) {
  if (a.head_dim % 8 != 0 || a.nmat < 1 || a.nmat > 3)
    throw Error("head split: head size % 8 == 0 and 1 to 3 tensors");
}

void check_seq(int seq) {
  if (seq % kWarp != 0 || seq > kWarp * kMaxKeysPerLane)
    throw Error("attention softmax: sequence length % 32 == 0 and <= 1024");
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
  check_seq(a.seq);
  const int64_t rows = int64_t(a.batch) * a.heads * a.seq;
  const unsigned blocks = static_cast<unsigned>((rows + kRowsPerBlock - 1) / kRowsPerBlock);
  GPUVS_DISPATCH_DTYPE(a.dtype, { softmax_forward_kernel<T><<<blocks, kThreads, 0, s>>>(a); });
  GPUVS_CUDA_CHECK_LAUNCH();
}

void attention_softmax_backward(const SoftmaxBackwardArgs& a, cudaStream_t s) {
  check_seq(a.seq);
  const unsigned blocks = static_cast<unsigned>((a.rows + kRowsPerBlock - 1) / kRowsPerBlock);
  GPUVS_DISPATCH_DTYPE(a.dtype, { softmax_backward_kernel<T><<<blocks, kThreads, 0, s>>>(a); });
  GPUVS_CUDA_CHECK_LAUNCH();
}

}  // namespace gpuvs::models::bert
