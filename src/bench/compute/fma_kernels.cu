// FMA chain kernels. Shapes, counting and the chain are described in fma_kernels.h.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cmath>

#include "bench/compute/fma_kernels.h"
#include "gpu/check.h"

namespace gpuvs {

namespace {

// One accumulator type: how to start, step, and add into the written sum.
struct F64 {
  using V = double;
  using P = double;
  static __device__ V init(uint32_t t, int j) { return fma_initial(t, 2 * j); }
  static __device__ V step(V x, P a, P b) { return __fma_rn(x, a, b); }
  static __device__ double sum(const V* acc) {
    double s = 0;
    for (int j = 0; j < kFmaAccumulators; ++j)
      s = __dadd_rn(s, acc[j]);
    return s;
  }
  static P param(double v) { return v; }
};

struct F32 {
  using V = float;
  using P = float;
  static __device__ V init(uint32_t t, int j) { return static_cast<float>(fma_initial(t, 2 * j)); }
  static __device__ V step(V x, P a, P b) { return __fmaf_rn(x, a, b); }
  static __device__ double sum(const V* acc) {
    float s = 0;
    for (int j = 0; j < kFmaAccumulators; ++j)
      s = __fadd_rn(s, acc[j]);
    return s;
  }
  static P param(double v) { return static_cast<float>(v); }
};

struct H2 {
  using V = __half2;
  using P = __half2;
  static __device__ V init(uint32_t t, int j) {
    return __halves2half2(__double2half(fma_initial(t, 2 * j)),
                          __double2half(fma_initial(t, 2 * j + 1)));
  }
  static __device__ V step(V x, P a, P b) { return __hfma2(x, a, b); }
  static __device__ double sum(const V* acc) {
    float s = 0;
    for (int j = 0; j < kFmaAccumulators; ++j) {
      s = __fadd_rn(s, __low2float(acc[j]));
      s = __fadd_rn(s, __high2float(acc[j]));
    }
    return s;
  }
  static P param(double v) { return __float2half2_rn(static_cast<float>(v)); }
};

struct B2 {
  using V = __nv_bfloat162;
  using P = __nv_bfloat162;
  static __device__ V init(uint32_t t, int j) {
    return __halves2bfloat162(__double2bfloat16(fma_initial(t, 2 * j)),
                              __double2bfloat16(fma_initial(t, 2 * j + 1)));
  }
  static __device__ V step(V x, P a, P b) { return __hfma2(x, a, b); }
  static __device__ double sum(const V* acc) {
    float s = 0;
    for (int j = 0; j < kFmaAccumulators; ++j) {
      s = __fadd_rn(s, __low2float(acc[j]));
      s = __fadd_rn(s, __high2float(acc[j]));
    }
    return s;
  }
  static P param(double v) { return __float2bfloat162_rn(static_cast<float>(v)); }
};

struct I32 {
  using V = uint32_t;
  using P = uint32_t;
  static __device__ V init(uint32_t t, int j) { return fma_seed(t, 2 * j); }
  static __device__ V step(V x, P a, P b) { return x * a + b; }  // one IMAD
  static __device__ double sum(const V* acc) {
    uint32_t s = 0;
    for (int j = 0; j < kFmaAccumulators; ++j)
      s += acc[j];
    return s;
  }
  static P param(double v) { return static_cast<uint32_t>(v); }
};

// Launch: kFmaBlock threads per block, fma_blocks_per_sm x SMs blocks (one wave).
// Register use capped (launch bounds: 2048 / kFmaBlock blocks per SM) so that every
// SM holds 2048 threads: 16 warps per scheduler hide the FMA latency.
template <class T>
__global__ void __launch_bounds__(kFmaBlock, 2048 / kFmaBlock)
    fma_kernel(double* __restrict__ out,  // (blocks x kFmaBlock)
               int64_t outer, typename T::P a, typename T::P b) {
  const uint32_t tid = blockIdx.x * blockDim.x + threadIdx.x;
  typename T::V acc[kFmaAccumulators];
#pragma unroll
  for (int j = 0; j < kFmaAccumulators; ++j)
    acc[j] = T::init(tid, j);
  for (int64_t o = 0; o < outer; ++o) {
#pragma unroll
    for (int u = 0; u < kFmaUnroll; ++u) {
#pragma unroll
      for (int j = 0; j < kFmaAccumulators; ++j)
        acc[j] = T::step(acc[j], a, b);
    }
  }
  out[tid] = T::sum(acc);
}

template <class T>
void launch(double* out, int blocks, int64_t outer, FmaChain chain, cudaStream_t stream) {
  fma_kernel<T><<<blocks, kFmaBlock, 0, stream>>>(out, outer, T::param(chain.a), T::param(chain.b));
  GPUVS_CUDA_CHECK_LAUNCH();
}

template <class T>
int blocks_per_sm() {
  int n = 0;
  GPUVS_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&n, fma_kernel<T>, kFmaBlock, 0));
  return n;
}

}  // namespace

FmaChain fma_chain(FmaType t, int64_t steps) {
  switch (t) {
    case FmaType::kFp64:
    case FmaType::kFp32: {
      int s = 1;
      while (s < 40 && (int64_t{1} << s) < steps)
        ++s;
      const double step = std::ldexp(1.0, -s);
      return {1.0 - step, 0.75 * step};
    }
    case FmaType::kFp16x2:
    case FmaType::kBf16x2:
      // A step of (0.75 - x) / 16: larger than the halves' spacing near 1 (2^-10,
      // 2^-7) for the first ~50-100 steps. A smaller step would round back to x at
      // once, and the chain would never move.
      return {1.0 - 0x1.0p-4, 0.75 * 0x1.0p-4};
    case FmaType::kInt32:
      return {1664525.0, 1013904223.0};
  }
  return {};
}

int fma_blocks_per_sm(FmaType t) {
  switch (t) {
    case FmaType::kFp64:
      return blocks_per_sm<F64>();
    case FmaType::kFp32:
      return blocks_per_sm<F32>();
    case FmaType::kFp16x2:
      return blocks_per_sm<H2>();
    case FmaType::kBf16x2:
      return blocks_per_sm<B2>();
    case FmaType::kInt32:
      return blocks_per_sm<I32>();
  }
  return 0;
}

void launch_fma(FmaType t, double* out, int blocks, int64_t outer, FmaChain chain,
                cudaStream_t stream) {
  switch (t) {
    case FmaType::kFp64:
      return launch<F64>(out, blocks, outer, chain, stream);
    case FmaType::kFp32:
      return launch<F32>(out, blocks, outer, chain, stream);
    case FmaType::kFp16x2:
      return launch<H2>(out, blocks, outer, chain, stream);
    case FmaType::kBf16x2:
      return launch<B2>(out, blocks, outer, chain, stream);
    case FmaType::kInt32:
      return launch<I32>(out, blocks, outer, chain, stream);
  }
}

}  // namespace gpuvs
