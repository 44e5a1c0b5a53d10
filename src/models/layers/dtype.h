// Element types of activations, weights and gradients, and the device helpers that
// kernels use to move 16 bytes at a time over C in NHWC tensors. Device parts only
// under nvcc; the DType enum and sizes are plain C++.
#pragma once

#include <cstddef>
#include <cstdint>

#ifdef __CUDACC__
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#endif

namespace gpuvs::models {

// The type tensors are stored in for the math: fp32 and tf32 store float.
enum class DType { kF32, kF16, kBF16 };

inline size_t dtype_size(DType t) {
  return t == DType::kF32 ? 4 : 2;
}
// Elements per 16-byte vector.
inline int dtype_vec(DType t) {
  return t == DType::kF32 ? 4 : 8;
}

#ifdef __CUDACC__

template <class T>
__device__ __forceinline__ float to_f(T v);
template <>
__device__ __forceinline__ float to_f<float>(float v) {
  return v;
}
template <>
__device__ __forceinline__ float to_f<__half>(__half v) {
  return __half2float(v);
}
template <>
__device__ __forceinline__ float to_f<__nv_bfloat16>(__nv_bfloat16 v) {
  return __bfloat162float(v);
}

template <class T>
__device__ __forceinline__ T from_f(float v);
template <>
__device__ __forceinline__ float from_f<float>(float v) {
  return v;
}
template <>
__device__ __forceinline__ __half from_f<__half>(float v) {
  return __float2half_rn(v);
}
template <>
__device__ __forceinline__ __nv_bfloat16 from_f<__nv_bfloat16>(float v) {
  return __float2bfloat16_rn(v);
}

// kVec elements of T in 16 bytes; load/store as one uint4.
template <class T>
struct Vec {
  static constexpr int kN = 16 / sizeof(T);
  union {
    uint4 raw;
    T e[kN];
  };
  __device__ __forceinline__ Vec() {}
};

template <class T>
__device__ __forceinline__ Vec<T> load_vec(const T* p) {  // p 16-byte aligned
  Vec<T> v;
  v.raw = *reinterpret_cast<const uint4*>(p);
  return v;
}

template <class T>
__device__ __forceinline__ void store_vec(T* p, const Vec<T>& v) {  // p 16-byte aligned
  *reinterpret_cast<uint4*>(p) = v.raw;
}

// Runs the statements given with T the device type of `t`.
#define GPUVS_DISPATCH_DTYPE(t, ...)        \
  do {                                      \
    switch (t) {                            \
      case ::gpuvs::models::DType::kF32: {  \
        using T = float;                    \
        __VA_ARGS__;                        \
      } break;                              \
      case ::gpuvs::models::DType::kF16: {  \
        using T = __half;                   \
        __VA_ARGS__;                        \
      } break;                              \
      case ::gpuvs::models::DType::kBF16: { \
        using T = __nv_bfloat16;            \
        __VA_ARGS__;                        \
      } break;                              \
    }                                       \
  } while (0)

#endif  // __CUDACC__

}  // namespace gpuvs::models
