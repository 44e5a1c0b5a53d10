// The decode step's few-row projections (row_gemm.h).
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>

#include <type_traits>

#include "core/error.h"
#include "gpu/check.h"
#include "gpu/reduce.cuh"
#include "models/layers/dtype.h"
#include "models/layers/swiglu.cuh"
#include "models/llama/dependent_launch.cuh"
#include "models/llama/rope.cuh"
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

// The distance between the two rows of W a warp holds: neighbours for kPlain, a gate
// row and its up row for kSwiGLU, the pair (i, i + D/2) of a head for kRopeCache.
__host__ __device__ inline int64_t pair_offset(const RowGemmArgs& a) {
  switch (a.output) {
    case RowOutput::kSwiGLU:
      return a.n / 2;
    case RowOutput::kRopeCache:
      return a.rope.head_dim / 2;
    default:
      return 1;
  }
}

// The epilogue of one input row r and the pair (n, n + offset) of W's rows, their sums
// s0 and s1 (scaled); n + offset may be past the end for kPlain (then s1 is unused).
template <class T, RowOutput kOut>
__device__ __forceinline__ void write_pair(const RowGemmArgs& a, int r, int64_t n, int64_t offset,
                                           float s0, float s1) {
  if constexpr (kOut == RowOutput::kPlain) {
    const float sums[2] = {s0, s1};
    for (int j = 0; j < 2; ++j) {
      const int64_t col = n + j * offset;
      if (col >= a.n) break;
      const int64_t at = int64_t(r) * a.n + col;
      const float v = sums[j] + (a.residual ? to_f(static_cast<const T*>(a.residual)[at]) : 0.0f);
      if (a.out_f32)
        static_cast<float*>(a.out)[at] = v;
      else
        static_cast<T*>(a.out)[at] = from_f<T>(v);
    }
  } else if constexpr (kOut == RowOutput::kSwiGLU) {
    // As swiglu() computes from the stored gate and up projections.
    const float g = to_f(from_f<T>(s0)), u = to_f(from_f<T>(s1));
    static_cast<T*>(a.out)[int64_t(r) * offset + n] = from_f<T>(swiglu_value(g, u));
  } else {
    // As rope_and_cache() computes from the stored projection (kernels.cu).
    const RowRope& q = a.rope;
    const int d = q.head_dim, half = d / 2;
    const int head = int(n / d), i = int(n % d);
    const int p = *q.pos;
    T* base = static_cast<T*>(a.out) + int64_t(r) * a.n + int64_t(head) * d;
    T r1 = from_f<T>(s0), r2 = from_f<T>(s1);
    if (head < q.heads + q.kv_heads) {  // a query or key head: rotated
      float f1, f2;
      rope_rotate(to_f(r1), to_f(r2), p, q.inv_freq[i], f1, f2);
      r1 = from_f<T>(f1);
      r2 = from_f<T>(f2);
    }
    base[i] = r1;
    base[i + half] = r2;
    if (head < q.heads) return;
    const bool key = head < q.heads + q.kv_heads;
    const int g = key ? head - q.heads : head - q.heads - q.kv_heads;
    const int64_t kv = int64_t(q.kv_heads) * d;
    const int64_t at = (int64_t(r) * q.max_context + p) * kv + int64_t(g) * d + i;
    void* cache = key ? q.k_cache : q.v_cache;
    if (q.fp8_cache) {
      const float inv = 1.0f / q.cache_scale;
      __nv_fp8_e4m3* c = static_cast<__nv_fp8_e4m3*>(cache);
      c[at] = __nv_fp8_e4m3(to_f(r1) * inv);  // saturating, as the cache stores
      c[at + half] = __nv_fp8_e4m3(to_f(r2) * inv);
    } else {
      T* c = static_cast<T*>(cache);
      c[at] = r1;
      c[at + half] = r2;
    }
  }
}

// One warp per pair of W's rows (pair_offset()); rows of the input up to R (a.rows <=
// R); W in T or (kW8) E4M3.
template <class T, int R, RowInput kIn, RowOutput kOut, bool kW8>
__global__ void __launch_bounds__(kThreads) row_gemm_kernel(RowGemmArgs a) {
  constexpr int V = kVec<T>;         // input elements per 16 bytes
  constexpr int VW = kWVec<T, kW8>;  // weights per 16 bytes
  constexpr int kInPerW = VW / V;    // input loads per weight load
  extern __shared__ int4 stage[];
  __shared__ float scratch[kWarps];
  const int warp = threadIdx.x / kWarpSize, lane = threadIdx.x % kWarpSize;
  const int in_vecs = int(a.k / V);
  const int vecs = int(a.k / VW);
  const int64_t offset = pair_offset(a);
  const int64_t pair = int64_t(blockIdx.x) * kWarps + warp;
  const int64_t n0 = pair / offset * 2 * offset + pair % offset;
  const int4* wrow[kOutPerWarp];
#pragma unroll
  for (int j = 0; j < kOutPerWarp; ++j) {  // past the end: the last row again, unused
    const int64_t n = n0 + j * offset;
    wrow[j] = static_cast<const int4*>(a.w) + (n < a.n ? n : a.n - 1) * vecs;
  }

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
  for (int r = 0; r < R; ++r) {
    float sums[kOutPerWarp];
#pragma unroll
    for (int j = 0; j < kOutPerWarp; ++j)
      sums[j] = warp_sum(acc[r][j]) * w_scale;
    if (lane == 0 && r < a.rows && n0 < a.n)
      write_pair<T, kOut>(a, r, n0, offset, sums[0], sums[1]);
  }
}

size_t stage_bytes(int rows, int64_t k, DType dtype) {
  return size_t(rows) * size_t(k) * dtype_size(dtype);
}

template <class T, int R, RowInput kIn, RowOutput kOut, bool kW8>
void launch(const RowGemmArgs& a, bool dependent, cudaStream_t s) {
  auto kernel = row_gemm_kernel<T, R, kIn, kOut, kW8>;
  const size_t smem = stage_bytes(a.rows, a.k, a.dtype);
  GPUVS_CUDA_CHECK(
      cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, int(smem)));
  const int64_t pairs = (a.n + 1) / 2;
  const unsigned blocks = unsigned((pairs + kWarps - 1) / kWarps);
  launch_kernel(kernel, dim3(blocks), dim3(kThreads), smem, s, dependent, a);
}

template <class T, RowInput kIn, RowOutput kOut, bool kW8>
void launch_rows(const RowGemmArgs& a, bool dependent, cudaStream_t s) {
  if (a.rows == 1)
    launch<T, 1, kIn, kOut, kW8>(a, dependent, s);
  else if (a.rows == 2)
    launch<T, 2, kIn, kOut, kW8>(a, dependent, s);
  else
    launch<T, 4, kIn, kOut, kW8>(a, dependent, s);
}

// FP8 weights with bf16 inputs only (the decoder's FP8 precision).
template <class T, RowInput kIn, RowOutput kOut>
void launch_weights(const RowGemmArgs& a, bool dependent, cudaStream_t s) {
  if constexpr (std::is_same_v<T, __nv_bfloat16>) {
    if (a.w_fp8) {
      launch_rows<T, kIn, kOut, true>(a, dependent, s);
      return;
    }
  }
  launch_rows<T, kIn, kOut, false>(a, dependent, s);
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
  // The pairs the decoder runs: the attention's output and the down projection
  // (plain), the QKV projection (normed in, rotated and cached out), the gate and up
  // projection (normed in, SwiGLU out) and the LM head (normed in, plain out).
  const bool norm = a.input == RowInput::kRmsNorm;
  if (a.output != RowOutput::kPlain && !norm)
    throw Error("llama row_gemm: the SwiGLU and rotary outputs take the RMSNorm input");
  if (a.output != RowOutput::kPlain && (a.residual != nullptr || a.out_f32))
    throw Error(
        "llama row_gemm: the SwiGLU and rotary outputs add no residual and stay in the "
        "activations' type");
  if (a.output == RowOutput::kSwiGLU && a.n % 2 != 0)
    throw Error("llama row_gemm: the SwiGLU output needs the gate's and the up projection's rows");
  if (a.output == RowOutput::kRopeCache) {
    const RowRope& q = a.rope;
    if (q.head_dim < 2 || q.head_dim % 2 != 0 ||
        a.n != int64_t(q.heads + 2 * q.kv_heads) * q.head_dim || q.pos == nullptr ||
        q.inv_freq == nullptr || q.k_cache == nullptr || q.v_cache == nullptr)
      throw Error(
          "llama row_gemm: the rotary output needs N = (H + 2G) * D, the positions, the "
          "frequencies and the caches");
    if (q.fp8_cache && a.dtype == DType::kF16)
      throw Error("llama row_gemm: an FP8 cache is for bf16 or fp32 activations");
  }
  GPUVS_DISPATCH_DTYPE(a.dtype, {
    if (!norm)
      launch_weights<T, RowInput::kPlain, RowOutput::kPlain>(a, dependent_launch, s);
    else if (a.output == RowOutput::kSwiGLU)
      launch_weights<T, RowInput::kRmsNorm, RowOutput::kSwiGLU>(a, dependent_launch, s);
    else if (a.output == RowOutput::kRopeCache)
      launch_weights<T, RowInput::kRmsNorm, RowOutput::kRopeCache>(a, dependent_launch, s);
    else
      launch_weights<T, RowInput::kRmsNorm, RowOutput::kPlain>(a, dependent_launch, s);
  });
}

}  // namespace gpuvs::models::llama
