// FP8 casts and scaling (fp8.h). Casts: 32 x 32 tiles, block (32, 8), each thread 4
// elements; the transposed copy goes through shared memory.
#include <cuda_fp8.h>

#include <cmath>

#include "gpu/check.h"
#include "models/bert/device_util.cuh"
#include "models/bert/fp8.h"

namespace gpuvs::models::bert {

namespace {

constexpr int kTile = 32;
constexpr int kRowsPerPass = 8;
constexpr int kThreads = 256;

__device__ __forceinline__ uint8_t to_fp8(float v, bool e5m2) {
  return static_cast<uint8_t>(
      __nv_cvt_float_to_fp8(v, __NV_SATFINITE, e5m2 ? __NV_E5M2 : __NV_E4M3));
}

// Non-negative floats order like their bit patterns as ints.
__device__ __forceinline__ void atomic_max_nonneg(float* addr, float v) {
  atomicMax(reinterpret_cast<int*>(addr), __float_as_int(v));
}

template <class Src>
__global__ void cast_kernel(Fp8CastArgs a) {
  __shared__ uint8_t tile[kTile][kTile + 1];
  const Src* src = static_cast<const Src*>(a.src);
  const float scale = a.meta->scale;
  const int tx = threadIdx.x, ty = threadIdx.y;
  const int64_t r0 = int64_t(blockIdx.y) * kTile, c0 = int64_t(blockIdx.x) * kTile;
  float amax = 0.0f;
#pragma unroll
  for (int k = 0; k < kTile / kRowsPerPass; ++k) {
    const int64_t r = r0 + ty + k * kRowsPerPass, c = c0 + tx;
    const float v = to_f(src[r * a.cols + c]);
    amax = fmaxf(amax, fabsf(v));
    const uint8_t q = to_fp8(v * scale, a.e5m2);
    if (a.out) a.out[r * a.cols + c] = q;
    tile[ty + k * kRowsPerPass][tx] = q;
  }
  if (a.out_t) {
    __syncthreads();
#pragma unroll
    for (int k = 0; k < kTile / kRowsPerPass; ++k) {
      const int64_t rt = c0 + ty + k * kRowsPerPass, ct = r0 + tx;
      a.out_t[rt * a.rows + ct] = tile[tx][ty + k * kRowsPerPass];
    }
  }
  amax = warp_max(amax);
  if (tx == 0) atomic_max_nonneg(&a.meta->amax, amax);
}

__global__ void reset_amax_kernel(Fp8Meta* m) {
  m->amax = 0.0f;
}

__global__ void amax_kernel(const float* __restrict__ x, int64_t n, Fp8Meta* m) {
  float amax = 0.0f;
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x)
    amax = fmaxf(amax, fabsf(x[i]));
  amax = warp_max(amax);
  if (threadIdx.x % kWarp == 0) atomic_max_nonneg(&m->amax, amax);
}

__device__ __forceinline__ void set_scale(Fp8Meta* m, float amax) {
  if (amax > 0.0f && isfinite(amax)) {
    m->scale = m->fmt_max / amax;
    m->scale_inv = 1.0f / m->scale;
  }
}

__global__ void current_scale_kernel(Fp8Meta* m) {
  set_scale(m, m->amax);
  m->amax = 0.0f;
}

__global__ void update_kernel(Fp8Meta* metas, int count) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= count) return;
  Fp8Meta* m = metas + i;
  if (!m->delayed) return;
  float mx = m->amax;
  for (int h = kFp8History - 1; h > 0; --h) {
    m->history[h] = m->history[h - 1];
    mx = fmaxf(mx, m->history[h]);
  }
  m->history[0] = m->amax;
  m->amax = 0.0f;
  set_scale(m, mx);
}

__global__ void add_kernel(const __nv_bfloat16* __restrict__ src, float* __restrict__ dst,
                           int64_t n, float beta) {
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x)
    dst[i] = (beta != 0.0f ? beta * dst[i] : 0.0f) + __bfloat162float(src[i]);
}

}  // namespace

Fp8Meta fp8_meta_init(bool e5m2, bool delayed) {
  Fp8Meta m{};
  m.scale = 1.0f;
  m.scale_inv = 1.0f;
  m.fmt_max = e5m2 ? kE5m2Max : kE4m3Max;
  m.delayed = delayed ? 1 : 0;
  return m;
}

void fp8_cast(const Fp8CastArgs& a, cudaStream_t s) {
  if (a.rows % kTile != 0 || a.cols % kTile != 0)
    throw Error("fp8_cast: rows and columns must be multiples of 32");
  const dim3 grid(static_cast<unsigned>(a.cols / kTile), static_cast<unsigned>(a.rows / kTile));
  const dim3 block(kTile, kRowsPerPass);
  if (a.src_f32) {
    cast_kernel<float><<<grid, block, 0, s>>>(a);
  } else {
    GPUVS_DISPATCH_DTYPE(a.dtype, { cast_kernel<T><<<grid, block, 0, s>>>(a); });
  }
  GPUVS_CUDA_CHECK_LAUNCH();
}

void fp8_current_scale(const float* src, int64_t n, Fp8Meta* meta, cudaStream_t s) {
  reset_amax_kernel<<<1, 1, 0, s>>>(meta);
  GPUVS_CUDA_CHECK_LAUNCH();
  amax_kernel<<<grid_for(n, kThreads), kThreads, 0, s>>>(src, n, meta);
  GPUVS_CUDA_CHECK_LAUNCH();
  current_scale_kernel<<<1, 1, 0, s>>>(meta);
  GPUVS_CUDA_CHECK_LAUNCH();
}

void update_fp8_metas(Fp8Meta* metas, int count, cudaStream_t s) {
  update_kernel<<<(count + kThreads - 1) / kThreads, kThreads, 0, s>>>(metas, count);
  GPUVS_CUDA_CHECK_LAUNCH();
}

void add_bf16_into_f32(const void* src, float* dst, int64_t n, float beta, cudaStream_t s) {
  add_kernel<<<grid_for(n, kThreads), kThreads, 0, s>>>(static_cast<const __nv_bfloat16*>(src), dst,
                                                        n, beta);
  GPUVS_CUDA_CHECK_LAUNCH();
}

}  // namespace gpuvs::models::bert
