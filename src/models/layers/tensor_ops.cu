// Kernels of tensor_ops.h.
#include <algorithm>

#include "gpu/check.h"
#include "models/layers/tensor_ops.h"

namespace gpuvs::models {

namespace {

// splitmix64 finaliser (Steele, Lea, Flood 2014): a good 64-bit mixer.
__device__ __forceinline__ uint64_t mix64(uint64_t z) {
  z += 0x9e3779b97f4a7c15ull;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

__device__ __forceinline__ float uniform01(uint64_t bits) {  // (0, 1]
  return (float((bits >> 40) & 0xffffffu) + 1.0f) * (1.0f / 16777216.0f);
}

template <class T>
__global__ void generate_images_kernel(SyntheticImages s, uint64_t seed, T* __restrict__ x,
                                       int32_t* __restrict__ labels) {
  const int64_t pixels = int64_t(s.n) * s.h * s.w;
  const uint64_t key = mix64(seed);
  for (int64_t p = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; p < pixels;
       p += int64_t(gridDim.x) * blockDim.x) {
    for (int c = 0; c < s.c_padded; c += 2) {
      // Box-Muller: two normals from two uniforms.
      const uint64_t r = mix64(key ^ mix64(uint64_t(p) * 64 + uint64_t(c)));
      const float u1 = uniform01(r);
      const float u2 = uniform01(r << 24);
      const float rad = sqrtf(-2.0f * logf(u1));
      float sn, cs;
      sincospif(2.0f * u2, &sn, &cs);
      x[p * s.c_padded + c] = from_f<T>(c < s.c ? rad * cs : 0.f);
      if (c + 1 < s.c_padded) x[p * s.c_padded + c + 1] = from_f<T>(c + 1 < s.c ? rad * sn : 0.f);
    }
    if (p < s.n)
      labels[p] =
          static_cast<int32_t>(mix64(key ^ (0xabcdefull + uint64_t(p))) % uint64_t(s.classes));
  }
}

template <class T>
__global__ void cast_from_float_kernel(const float* __restrict__ src, T* __restrict__ dst,
                                       int64_t n) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x)
    dst[i] = from_f<T>(src[i]);
}

template <class T>
__global__ void cast_to_float_kernel(const T* __restrict__ src, float* __restrict__ dst,
                                     int64_t n) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x)
    dst[i] = to_f(src[i]);
}

}  // namespace

static int cast_blocks(int64_t n) {
  return static_cast<int>(std::clamp<int64_t>((n + 255) / 256, 1, 132 * 8));
}

void generate_images(const SyntheticImages& s, uint64_t seed, void* x, int32_t* labels,
                     cudaStream_t stream) {
  const int64_t pixels = int64_t(s.n) * s.h * s.w;
  const int blocks = static_cast<int>(std::min<int64_t>((pixels + 255) / 256, 132 * 16));
  GPUVS_DISPATCH_DTYPE(s.dtype, {
    generate_images_kernel<T><<<blocks, 256, 0, stream>>>(s, seed, static_cast<T*>(x), labels);
  });
  GPUVS_CUDA_CHECK_LAUNCH();
}

void cast_from_float(const float* src, void* dst, int64_t n, DType dtype, cudaStream_t stream) {
  GPUVS_DISPATCH_DTYPE(dtype, {
    cast_from_float_kernel<T><<<cast_blocks(n), 256, 0, stream>>>(src, static_cast<T*>(dst), n);
  });
  GPUVS_CUDA_CHECK_LAUNCH();
}

void cast_to_float(const void* src, float* dst, int64_t n, DType dtype, cudaStream_t stream) {
  GPUVS_DISPATCH_DTYPE(dtype, {
    cast_to_float_kernel<T><<<cast_blocks(n), 256, 0, stream>>>(static_cast<const T*>(src), dst, n);
  });
  GPUVS_CUDA_CHECK_LAUNCH();
}

}  // namespace gpuvs::models
