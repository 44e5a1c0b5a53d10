// The decode step's few-row projections (row_gemm.h).
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>

#include <type_traits>

#include "core/error.h"
#include "gpu/check.h"
#include "gpu/reduce.cuh"
#include "models/layers/dtype.h"
#include "models/llama/dependent_launch.cuh"
#include "models/llama/row_gemm.h"

namespace gpuvs::models::llama {

namespace {

constexpr int kThreads = 256;
constexpr int kWarps = kThreads / kWarpSize;
constexpr int kOutPerWarp = 2;  // rows of W a warp streams side by side
constexpr int kGroup = 4;       // 16-byte loads per lane and row of W in flight
constexpr int kMaxRows = 4;
// The staged input rows: at most this much shared memory per block, so that two
// blocks (16 warps streaming) fit on an SM with 228 KB.
constexpr size_t kMaxStageBytes = 96 * 1024;

template <class T>
constexpr int kVec = int(16 / sizeof(T));  // elements per 16-byte load

// The 16 bytes of v as kVec<T> floats.
template <class T>
__device__ __forceinline__ void unpack(const int4& v, float* f);
template <>
__device__ __forceinline__ void unpack<float>(const int4& v, float* f) {
  f[0] = __int_as_float(v.x);
  f[1] = __int_as_float(v.y);
  f[2] = __int_as_float(v.z);
  f[3] = __int_as_float(v.w);
}
template <>
__device__ __forceinline__ void unpack<__half>(const int4& v, float* f) {
  const __half2* h = reinterpret_cast<const __half2*>(&v);
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    const float2 t = __half22float2(h[i]);
    f[2 * i] = t.x;
    f[2 * i + 1] = t.y;
  }
}
template <>
__device__ __forceinline__ void unpack<__nv_bfloat16>(const int4& v, float* f) {
  const unsigned w[4] = {unsigned(v.x), unsigned(v.y), unsigned(v.z), unsigned(v.w)};
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    f[2 * i] = __uint_as_float(w[i] << 16);
    f[2 * i + 1] = __uint_as_float(w[i] & 0xffff0000u);
  }
}

// 16 E4M3 weights of a 16-byte load as floats (two at a time through half2).
__device__ __forceinline__ void unpack_e4m3(const int4& v, float* f) {
  const __nv_fp8x2_storage_t* p = reinterpret_cast<const __nv_fp8x2_storage_t*>(&v);
#pragma unroll
  for (int i = 0; i < 8; ++i) {
    const float2 t = __half22float2(__half2(__nv_cvt_fp8x2_to_halfraw2(p[i], __NV_E4M3)));
    f[2 * i] = t.x;
    f[2 * i + 1] = t.y;
  }
}

// The weights of one 16-byte load of W: kVec<T> of type T, or 16 E4M3.
template <class T, bool kW8>
constexpr int kWVec = kW8 ? 16 : kVec<T>;

template <class T, bool kW8>
__device__ __forceinline__ void unpack_w(const int4& v, float* f) {
  if constexpr (kW8)
    unpack_e4m3(v, f);
  else
    unpack<T>(v, f);
}

// kVec<T> floats, each rounded to T, as 16 bytes.
template <class T>
__device__ __forceinline__ int4 pack(const float* f) {
  int4 v;
  T* t = reinterpret_cast<T*>(&v);
#pragma unroll
  for (int i = 0; i < kVec<T>; ++i)
    t[i] = from_f<T>(f[i]);
  return v;
}

// The block's input rows, made as row_gemm.h says, into `stage` (rows, K) in T.
template <class T, RowInput kIn>
__device__ void stage_input(const RowGemmArgs& a, int4* stage, float* scratch) {
  constexpr int V = kVec<T>;
  const int vecs = int(a.k / V);  // 16-byte vectors per row
  const int total = a.rows * vecs;
  const T* x = static_cast<const T*>(a.x);
  if constexpr (kIn == RowInput::kSwiGLU) {
    const int4* xv = reinterpret_cast<const int4*>(x);
    for (int i = threadIdx.x; i < total; i += kThreads) {
      const int r = i / vecs, c = i - r * vecs;
      float g[V], u[V], o[V];
      unpack<T>(xv[int64_t(r) * 2 * vecs + c], g);
      unpack<T>(xv[int64_t(r) * 2 * vecs + vecs + c], u);
#pragma unroll
      for (int e = 0; e < V; ++e)
        o[e] = g[e] / (1.0f + __expf(-g[e])) * u[e];
      stage[i] = pack<T>(o);
    }
    __syncthreads();
    return;
  }
  // The rows as they are, and for RMSNorm each row's sum of squares on the way.
  const int4* xv = reinterpret_cast<const int4*>(x);
  float sq[kMaxRows] = {};
  for (int i = threadIdx.x; i < total; i += kThreads) {
    const int4 v = xv[i];
    stage[i] = v;
    if constexpr (kIn == RowInput::kRmsNorm) {
      float f[V];
      unpack<T>(v, f);
      float s = 0;
#pragma unroll
      for (int e = 0; e < V; ++e)
        s += f[e] * f[e];
      const int r = i / vecs;
#pragma unroll
      for (int rr = 0; rr < kMaxRows; ++rr)
        if (rr == r) sq[rr] += s;
    }
  }
  if constexpr (kIn == RowInput::kRmsNorm) {
    float rstd[kMaxRows];
    for (int r = 0; r < a.rows; ++r) {
      const float total_sq =
          block_reduce_all<kThreads, ShuffleTree::kButterfly>(sq[r], SumOp{}, scratch);
      rstd[r] = rsqrtf(total_sq / float(a.k) + a.eps);
    }
    // In place: w * round(x * rstd), as rms_norm() rounds.
    const int4* wv = static_cast<const int4*>(a.norm_weight);
    for (int i = threadIdx.x; i < total; i += kThreads) {
      const int r = i / vecs, c = i - r * vecs;
      float f[V], w[V];
      unpack<T>(stage[i], f);
      unpack<T>(wv[c], w);
      float rs = 0;
#pragma unroll
      for (int rr = 0; rr < kMaxRows; ++rr)
        if (rr == r) rs = rstd[rr];
#pragma unroll
      for (int e = 0; e < V; ++e)
        f[e] = w[e] * to_f(from_f<T>(f[e] * rs));
      stage[i] = pack<T>(f);
    }
  }
  __syncthreads();
}

// One warp per kOutPerWarp rows of W; rows of the input up to R (a.rows <= R); W in
// T or (kW8) E4M3.
template <class T, int R, RowInput kIn, bool kW8>
__global__ void __launch_bounds__(kThreads) row_gemm_kernel(RowGemmArgs a) {
  constexpr int V = kVec<T>;         // input elements per 16 bytes
  constexpr int VW = kWVec<T, kW8>;  // weights per 16 bytes
  constexpr int kInPerW = VW / V;    // input loads per weight load
  extern __shared__ int4 stage[];
  __shared__ float scratch[kWarps];
  const int warp = threadIdx.x / kWarpSize, lane = threadIdx.x % kWarpSize;
  const int in_vecs = int(a.k / V);
  const int vecs = int(a.k / VW);
  const int64_t n0 = (int64_t(blockIdx.x) * kWarps + warp) * kOutPerWarp;
  const int4* wrow[kOutPerWarp];
#pragma unroll
  for (int j = 0; j < kOutPerWarp; ++j)  // past the end: the last row again, unused
    wrow[j] = static_cast<const int4*>(a.w) + (n0 + j < a.n ? n0 + j : a.n - 1) * vecs;

  int4 next[kGroup][kOutPerWarp];
  auto load = [&](int group) {
#pragma unroll
    for (int u = 0; u < kGroup; ++u) {
      const int c = lane + kWarpSize * (group * kGroup + u);
#pragma unroll
      for (int j = 0; j < kOutPerWarp; ++j)
        next[u][j] = c < vecs ? __ldcs(wrow[j] + c) : make_int4(0, 0, 0, 0);
    }
  };
  // The weights depend on no kernel: their first loads go out before the wait.
  load(0);
  wait_for_previous_kernel();
  stage_input<T, kIn>(a, stage, scratch);
  let_next_kernel_start();

  float acc[R][kOutPerWarp] = {};
  const int groups = (vecs + kWarpSize * kGroup - 1) / (kWarpSize * kGroup);
  for (int g = 0; g < groups; ++g) {
    int4 cur[kGroup][kOutPerWarp];
#pragma unroll
    for (int u = 0; u < kGroup; ++u)
#pragma unroll
      for (int j = 0; j < kOutPerWarp; ++j)
        cur[u][j] = next[u][j];
    if (g + 1 < groups) load(g + 1);
#pragma unroll
    for (int u = 0; u < kGroup; ++u) {
      const int c = lane + kWarpSize * (g * kGroup + u);
      if (c >= vecs) break;
      float w[kOutPerWarp][VW];
#pragma unroll
      for (int j = 0; j < kOutPerWarp; ++j)
        unpack_w<T, kW8>(cur[u][j], w[j]);
#pragma unroll
      for (int r = 0; r < R; ++r) {
        if (r >= a.rows) break;
        float xs[VW];
#pragma unroll
        for (int h = 0; h < kInPerW; ++h)
          unpack<T>(stage[r * in_vecs + c * kInPerW + h], xs + h * V);
#pragma unroll
        for (int j = 0; j < kOutPerWarp; ++j)
#pragma unroll
          for (int e = 0; e < VW; ++e)
            acc[r][j] = fmaf(xs[e], w[j][e], acc[r][j]);
      }
    }
  }

  const float w_scale = kW8 ? *a.w_scale : 1.0f;
#pragma unroll
  for (int r = 0; r < R; ++r)
#pragma unroll
    for (int j = 0; j < kOutPerWarp; ++j) {
      const float s = warp_sum(acc[r][j]) * w_scale;
      const int64_t n = n0 + j;
      if (lane != 0 || r >= a.rows || n >= a.n) continue;
      const int64_t at = int64_t(r) * a.n + n;
      const float v = s + (a.residual ? to_f(static_cast<const T*>(a.residual)[at]) : 0.0f);
      if (a.out_f32)
        static_cast<float*>(a.out)[at] = v;
      else
        static_cast<T*>(a.out)[at] = from_f<T>(v);
    }
}

size_t stage_bytes(int rows, int64_t k, DType dtype) {
  return size_t(rows) * size_t(k) * dtype_size(dtype);
}

template <class T, int R, RowInput kIn, bool kW8>
void launch(const RowGemmArgs& a, bool dependent, cudaStream_t s) {
  auto kernel = row_gemm_kernel<T, R, kIn, kW8>;
  const size_t smem = stage_bytes(a.rows, a.k, a.dtype);
  GPUVS_CUDA_CHECK(
      cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, int(smem)));
  const unsigned blocks = unsigned((a.n + kWarps * kOutPerWarp - 1) / (kWarps * kOutPerWarp));
  launch_kernel(kernel, dim3(blocks), dim3(kThreads), smem, s, dependent, a);
}

template <class T, RowInput kIn, bool kW8>
void launch_rows(const RowGemmArgs& a, bool dependent, cudaStream_t s) {
  if (a.rows == 1)
    launch<T, 1, kIn, kW8>(a, dependent, s);
  else if (a.rows == 2)
    launch<T, 2, kIn, kW8>(a, dependent, s);
  else
    launch<T, 4, kIn, kW8>(a, dependent, s);
}

// FP8 weights with bf16 inputs only (the decoder's FP8 precision).
template <class T, RowInput kIn>
void launch_weights(const RowGemmArgs& a, bool dependent, cudaStream_t s) {
  if constexpr (std::is_same_v<T, __nv_bfloat16>) {
    if (a.w_fp8) {
      launch_rows<T, kIn, true>(a, dependent, s);
      return;
    }
  }
  launch_rows<T, kIn, false>(a, dependent, s);
}

}  // namespace

bool row_gemm_fits(int rows, int64_t k, DType dtype, bool w_fp8) {
  const int64_t vec = w_fp8 ? 16 : 16 / int64_t(dtype_size(dtype));
  return rows >= 1 && rows <= kMaxRows && k > 0 && k % vec == 0 &&
         (!w_fp8 || dtype == DType::kBF16) && stage_bytes(rows, k, dtype) <= kMaxStageBytes;
}

void row_gemm(const RowGemmArgs& a, bool dependent_launch, cudaStream_t s) {
  if (!row_gemm_fits(a.rows, a.k, a.dtype, a.w_fp8) || a.n < 1)
    throw Error("llama row_gemm: rows and K outside what it takes (row_gemm_fits)");
  if (a.w_fp8 && a.w_scale == nullptr) throw Error("llama row_gemm: FP8 weights need w_scale");
  GPUVS_DISPATCH_DTYPE(a.dtype, {
    switch (a.input) {
      case RowInput::kPlain:
        launch_weights<T, RowInput::kPlain>(a, dependent_launch, s);
        break;
      case RowInput::kRmsNorm:
        launch_weights<T, RowInput::kRmsNorm>(a, dependent_launch, s);
        break;
      case RowInput::kSwiGLU:
        launch_weights<T, RowInput::kSwiGLU>(a, dependent_launch, s);
        break;
    }
  });
}

}  // namespace gpuvs::models::llama
