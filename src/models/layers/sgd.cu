// Kernels of sgd.h: grid-stride loops over 4 elements per thread (float4 master and
// momentum).
#include <algorithm>

#include "gpu/check.h"
#include "models/layers/sgd.h"

namespace gpuvs::models {

namespace {

constexpr int kThreads = 256;
constexpr int kMaxBlocks = 132 * 8;

int blocks_for(int64_t n) {
  return static_cast<int>(std::clamp<int64_t>((n + kThreads - 1) / kThreads, 1, kMaxBlocks));
}

template <class T>
__global__ void check_finite_kernel(const T* __restrict__ g, int64_t n, LossScaleState* s) {
  bool bad = false;
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x)
    bad |= !isfinite(to_f(g[i]));
  if (__syncthreads_or(bad) && threadIdx.x == 0) s->found_inf = 1;
}

template <class T>
__global__ void sgd_kernel(SgdArgs a) {
  if (a.scaler && a.scaler->found_inf) return;
  const float inv = 1.f / ((a.scaler ? a.scaler->scale : 1.f) * float(a.micro_steps));
  const T* g = static_cast<const T*>(a.grads);
  T* model = static_cast<T*>(a.model);
  const int64_t n4 = a.n / 4;
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n4;
       i += int64_t(gridDim.x) * blockDim.x) {
    float4 w = reinterpret_cast<const float4*>(a.master)[i];
    float4 v = reinterpret_cast<const float4*>(a.momentum)[i];
    const float wd = i * 4 < a.n_decay ? a.weight_decay : 0.f;
    float* wp = &w.x;
    float* vp = &v.x;
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      const float grad = to_f(g[i * 4 + j]) * inv + wd * wp[j];
      vp[j] = a.momentum_factor * vp[j] + grad;
      wp[j] -= a.lr * vp[j];
      if (model) model[i * 4 + j] = from_f<T>(wp[j]);
    }
    reinterpret_cast<float4*>(a.master)[i] = w;
    reinterpret_cast<float4*>(a.momentum)[i] = v;
  }
}

__global__ void update_loss_scale_kernel(LossScaleState* s) {
  if (s->found_inf) {
    s->scale = fmaxf(s->scale * 0.5f, 1.0f);
    s->good_steps = 0;
  } else if (++s->good_steps >= kLossScaleGrowthInterval) {
    s->scale *= 2.0f;
    s->good_steps = 0;
  }
  s->found_inf = 0;
}

}  // namespace

void check_finite(const void* grads, int64_t n, DType dtype, LossScaleState* scaler,
                  cudaStream_t stream) {
  GPUVS_DISPATCH_DTYPE(dtype, {
    check_finite_kernel<T>
        <<<blocks_for(n), kThreads, 0, stream>>>(static_cast<const T*>(grads), n, scaler);
  });
  GPUVS_CUDA_CHECK_LAUNCH();
}

void sgd_step(const SgdArgs& a, cudaStream_t stream) {
  GPUVS_DISPATCH_DTYPE(a.grad_dtype,
                       { sgd_kernel<T><<<blocks_for(a.n / 4), kThreads, 0, stream>>>(a); });
  GPUVS_CUDA_CHECK_LAUNCH();
}

void update_loss_scale(LossScaleState* scaler, cudaStream_t stream) {
  update_loss_scale_kernel<<<1, 1, 0, stream>>>(scaler);
  GPUVS_CUDA_CHECK_LAUNCH();
}

}  // namespace gpuvs::models
