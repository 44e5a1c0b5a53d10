// Roofline streaming kernels. Counting and layout are described in roofline_kernels.h.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "bench/compute/roofline_kernels.h"
#include "core/error.h"
#include "gpu/check.h"

namespace gpuvs {

namespace {

// The constants are made on the host and passed as whole registers: converted in
// the kernel, the two FP16 constants end up packed in one register, and an HFMA2
// reading both halves of it as two operands issued at half rate on an H200 (66.8 TFLOP/s
// against 104 with separate registers).
struct F32 {
  using V = float;
  static __device__ V step(V x, V a, V b) { return __fmaf_rn(x, a, b); }
  static V from(double v) { return static_cast<float>(v); }
};
struct H2 {
  using V = __half2;
  static __device__ V step(V x, V a, V b) { return __hfma2(x, a, b); }
  static V from(double v) { return __float2half2_rn(static_cast<float>(v)); }
};
struct B2 {
  using V = __nv_bfloat162;
  static __device__ V step(V x, V a, V b) { return __hfma2(x, a, b); }
  static V from(double v) { return __float2bfloat162_rn(static_cast<float>(v)); }
};

template <class V>
__device__ __forceinline__ V from_bits(uint32_t u) {
  V v;
  memcpy(&v, &u, sizeof(v));
  return v;
}
template <class V>
__device__ __forceinline__ uint32_t to_bits(V v) {
  uint32_t u;
  memcpy(&u, &v, sizeof(u));
  return u;
}

// Launch: kRooflineBlock threads, one 16-byte vector each; grid = ceil(n16 / block).
// The four 32-bit lanes are four independent chains held in registers.
template <class T>
__global__ void __launch_bounds__(kRooflineBlock)
    roofline_kernel(const uint4* __restrict__ x,  // (n16)
                    uint4* __restrict__ y,        // (n16)
                    size_t n16, int k, typename T::V a, typename T::V b) {
  using V = typename T::V;
  const size_t i = blockIdx.x * size_t{blockDim.x} + threadIdx.x;
  if (i >= n16) return;
  const uint4 in = x[i];
  V l0 = from_bits<V>(in.x), l1 = from_bits<V>(in.y), l2 = from_bits<V>(in.z),
    l3 = from_bits<V>(in.w);
#pragma unroll 16
  for (int r = 0; r < k; ++r) {
    l0 = T::step(l0, a, b);
    l1 = T::step(l1, a, b);
    l2 = T::step(l2, a, b);
    l3 = T::step(l3, a, b);
  }
  y[i] = make_uint4(to_bits(l0), to_bits(l1), to_bits(l2), to_bits(l3));
}

// Launch: kRooflineBlock threads, grid-stride over the scalar elements.
__global__ void fill_kernel(FmaType t, void* x, size_t elements) {
  for (size_t e = blockIdx.x * size_t{blockDim.x} + threadIdx.x; e < elements;
       e += size_t{gridDim.x} * blockDim.x) {
    const double v = fma_initial(static_cast<uint32_t>(e), 0);
    if (t == FmaType::kFp32) {
      static_cast<float*>(x)[e] = static_cast<float>(v);
    } else if (t == FmaType::kFp16x2) {
      static_cast<__half*>(x)[e] = __double2half(v);
    } else {
      static_cast<__nv_bfloat16*>(x)[e] = __double2bfloat16(v);
    }
  }
}

unsigned grid_for(size_t n16) {
  return static_cast<unsigned>((n16 + kRooflineBlock - 1) / kRooflineBlock);
}

}  // namespace

void fill_roofline_input(FmaType t, void* x, size_t n16, cudaStream_t stream) {
  const size_t elements = n16 * (t == FmaType::kFp32 ? 4 : 8);
  fill_kernel<<<4096, kRooflineBlock, 0, stream>>>(t, x, elements);
  GPUVS_CUDA_CHECK_LAUNCH();
}

void launch_roofline(FmaType t, const void* x, void* y, size_t n16, int k, FmaChain chain,
                     cudaStream_t stream) {
  const auto* in = static_cast<const uint4*>(x);
  auto* out = static_cast<uint4*>(y);
  switch (t) {
    case FmaType::kFp32:
      roofline_kernel<F32><<<grid_for(n16), kRooflineBlock, 0, stream>>>(
          in, out, n16, k, F32::from(chain.a), F32::from(chain.b));
      break;
    case FmaType::kFp16x2:
      roofline_kernel<H2><<<grid_for(n16), kRooflineBlock, 0, stream>>>(
          in, out, n16, k, H2::from(chain.a), H2::from(chain.b));
      break;
    case FmaType::kBf16x2:
      roofline_kernel<B2><<<grid_for(n16), kRooflineBlock, 0, stream>>>(
          in, out, n16, k, B2::from(chain.a), B2::from(chain.b));
      break;
    default:
      throw Error("roofline: only FP32, FP16x2 and BF16x2 have a streaming kernel");
  }
  GPUVS_CUDA_CHECK_LAUNCH();
}

}  // namespace gpuvs
