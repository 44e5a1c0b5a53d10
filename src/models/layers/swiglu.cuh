// SwiGLU's arithmetic for one element (nvcc only): the forward silu(gate) * up and the
// backward of PyTorch's silu followed by mul, rounding to the storage type where
// PyTorch's 16-bit kernels round. The SwiGLU kernels (llama/kernels.cu,
// llama/train_kernels.cu) and the FP8 casts fused with them (bert/fp8_kernels.cu)
// compute through these, so a fused cast writes the values the unfused kernels would.
#pragma once

#include "models/layers/dtype.h"

namespace gpuvs::models {

// silu(g) * u in FP32; the caller rounds it to its storage type.
__device__ __forceinline__ float swiglu_value(float g, float u) {
  return g / (1.0f + __expf(-g)) * u;
}

// The gradients of the gate and the up projection for d = dL/d(silu(g) * u), unrounded
// (the caller rounds each to T).
struct SwigluGrad {
  float gate, up;
};
template <class T>
__device__ __forceinline__ SwigluGrad swiglu_grad(float g, float u, float d) {
  const float ex = expf(-g);  // inf for gate < -88: s = 0, silu = -0, no NaN
  const float s = 1.0f / (1.0f + ex);
  const float act = to_f(from_f<T>(g / (1.0f + ex)));  // PyTorch's silu, rounded
  const float dact = to_f(from_f<T>(d * u));
  return {dact * s * (1.0f + g * (1.0f - s)), d * act};  // PyTorch's silu_backward; mul's
}

}  // namespace gpuvs::models
