// The Llama decoder's kernels (kernels.h).
#include <cuda_fp8.h>

#include <algorithm>
#include <cmath>
#include <type_traits>

#include "gpu/check.h"
#include "gpu/reduce.cuh"
#include "models/layers/dtype.h"
#include "models/layers/swiglu.cuh"
#include "models/llama/dependent_launch.cuh"
#include "models/llama/kernels.h"
#include "models/llama/rope.cuh"

namespace gpuvs::models::llama {

namespace {

constexpr int kThreads = 256;

unsigned grid_for(int64_t n, int threads = kThreads) {
  return static_cast<unsigned>(std::min<int64_t>((n + threads - 1) / threads, 1 << 20));
}

__device__ __forceinline__ uint64_t mix64(uint64_t z) {
  z += 0x9e3779b97f4a7c15ull;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

template <class T>
__global__ void init_uniform_kernel(T* dst, int64_t n, float bound, uint64_t key) {
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x) {
    const uint64_t h = mix64(key ^ mix64(uint64_t(i)));
    const float u = float(h >> 40) * (1.0f / 16777216.0f);  // [0, 1), 24 bits
    dst[i] = from_f<T>((2.0f * u - 1.0f) * bound);
  }
}

template <class T>
__global__ void fill_kernel(T* dst, int64_t n, float value) {
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x)
    dst[i] = from_f<T>(value);
}

template <class T>
__global__ void embed_kernel(const int32_t* ids, const T* table, T* x, int64_t rows, int c) {
  wait_for_previous_kernel();
  let_next_kernel_start();
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < rows * c;
       i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t r = i / c;
    x[i] = table[int64_t(ids[r]) * c + (i - r * c)];
  }
}

// One block per row.
template <class T>
__global__ void rms_norm_kernel(const T* x, const T* w, T* y, int c, float eps) {
  __shared__ float scratch[kThreads / kWarpSize];
  const T* xr = x + int64_t(blockIdx.x) * c;
  T* yr = y + int64_t(blockIdx.x) * c;
  float sq = 0;
  for (int i = threadIdx.x; i < c; i += kThreads) {
    const float v = to_f(xr[i]);
    sq += v * v;
  }
  const float total = block_reduce_all<kThreads, ShuffleTree::kButterfly>(sq, SumOp{}, scratch);
  const float rstd = rsqrtf(total / float(c) + eps);
  for (int i = threadIdx.x; i < c; i += kThreads) {
    const float normed = to_f(from_f<T>(to_f(xr[i]) * rstd));
    yr[i] = from_f<T>(to_f(w[i]) * normed);
  }
}

// A cache element of type C: the activations' own type, or E4M3 (kernels.h: stored
// divided by the cache's scale, saturating to its largest finite value).
template <class C>
__device__ __forceinline__ float cache_load(C v) {
  if constexpr (std::is_same_v<C, __nv_fp8_e4m3>)
    return float(v);
  else
    return to_f(v);
}
template <class C>
__device__ __forceinline__ C cache_store(float v) {
  if constexpr (std::is_same_v<C, __nv_fp8_e4m3>)
    return C(v);  // __NV_SATFINITE
  else
    return from_f<C>(v);
}

// Non-negative floats order like their bit patterns as ints.
__device__ __forceinline__ void atomic_max_nonneg(float* addr, float v) {
  atomicMax(reinterpret_cast<int*>(addr), __float_as_int(v));
}

// Eight elements of T from p (16-byte aligned), in FP32.
template <class T>
__device__ __forceinline__ void load8(const T* p, float (&out)[8]) {
  constexpr int kN = Vec<T>::kN;
#pragma unroll
  for (int part = 0; part < 8 / kN; ++part) {
    const Vec<T> v = load_vec(p + part * kN);
#pragma unroll
    for (int k = 0; k < kN; ++k)
      out[part * kN + k] = to_f(v.e[k]);
  }
}

// 8 elements a thread at a time; one amax atomic per block.
template <class T>
__global__ void cast_e4m3_kernel(const T* __restrict__ x, uint8_t* __restrict__ out, int64_t vecs,
                                 bert::Fp8Meta* meta) {
  wait_for_previous_kernel();
  let_next_kernel_start();
  __shared__ float scratch[kThreads / kWarpSize];
  const float scale = meta->scale;
  float amax = 0.0f;
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < vecs;
       i += int64_t(gridDim.x) * blockDim.x) {
    float v[8];
    load8(x + i * 8, v);
    uint16_t pairs[4];
#pragma unroll
    for (int k = 0; k < 4; ++k) {
      const float a = v[2 * k], b = v[2 * k + 1];
      amax = fmaxf(amax, fmaxf(fabsf(a), fabsf(b)));
      pairs[k] =
          __nv_cvt_float2_to_fp8x2(make_float2(a * scale, b * scale), __NV_SATFINITE, __NV_E4M3);
    }
    uint2 packed;
    packed.x = uint32_t(pairs[0]) | (uint32_t(pairs[1]) << 16);
    packed.y = uint32_t(pairs[2]) | (uint32_t(pairs[3]) << 16);
    *reinterpret_cast<uint2*>(out + i * 8) = packed;
  }
  amax = block_reduce_all<kThreads, ShuffleTree::kButterfly>(amax, MaxOp{}, scratch);
  if (threadIdx.x == 0) atomic_max_nonneg(&meta->amax, amax);
}

// One thread per (row, head of the H + G rotated ones, pair i < D/2); the values are
// copied by the threads of the key heads.
template <class T, class C>
__global__ void rope_cache_kernel(RopeCacheArgs a) {
  wait_for_previous_kernel();
  let_next_kernel_start();
  const int d = a.head_dim, half = d / 2;
  const int rotated = a.heads + a.kv_heads;
  const int64_t rows = int64_t(a.batch) * a.seq;
  const int64_t n = rows * rotated * half;
  const int kv = a.kv_heads * d;
  const int width = a.heads * d + 2 * kv;
  const int pos0 = *a.pos;
  T* qkv = static_cast<T*>(a.qkv);
  C* kc = static_cast<C*>(a.k_cache);
  C* vc = static_cast<C*>(a.v_cache);
  const float inv = 1.0f / a.cache_scale;
  for (int64_t idx = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; idx < n;
       idx += int64_t(gridDim.x) * blockDim.x) {
    const int i = int(idx % half);
    const int head = int((idx / half) % rotated);
    const int64_t row = idx / (int64_t(half) * rotated);
    const int b = int(row / a.seq), t = int(row % a.seq);
    const int p = pos0 + t;
    T* base = qkv + row * width + head * d;  // key heads follow the query heads
    float f1, f2;
    rope_rotate(to_f(base[i]), to_f(base[i + half]), p, a.inv_freq[i], f1, f2);
    const T r1 = from_f<T>(f1), r2 = from_f<T>(f2);
    base[i] = r1;
    base[i + half] = r2;
    if (head >= a.heads) {
      const int g = head - a.heads;
      const int64_t at = (int64_t(b) * a.max_context + p) * kv + int64_t(g) * d;
      const T* v = qkv + row * width + a.heads * d + kv + int64_t(g) * d;
      if constexpr (std::is_same_v<C, T>) {
        kc[at + i] = r1;
        kc[at + i + half] = r2;
        vc[at + i] = v[i];
        vc[at + i + half] = v[i + half];
      } else {
        kc[at + i] = cache_store<C>(to_f(r1) * inv);
        kc[at + i + half] = cache_store<C>(to_f(r2) * inv);
        vc[at + i] = cache_store<C>(to_f(v[i]) * inv);
        vc[at + i + half] = cache_store<C>(to_f(v[i + half]) * inv);
      }
    }
  }
}

constexpr int kAttnWarps = 4;
constexpr int kAttnUnroll = 4;
constexpr int kMaxHeadDim = 128;

// One block per (row, head, split); each warp takes every kAttnWarps-th run of
// kAttnUnroll positions of the block's range, lane l holding dims [l*E, l*E + E) with
// E = D / 32, an online softmax per warp; then the warps are merged.
template <class T, class C, int E>
__global__ void attention_kernel(AttentionArgs a) {
  wait_for_previous_kernel();
  let_next_kernel_start();
  constexpr int kD = E * kWarpSize;
  const int splits = a.splits;
  const int split = int(blockIdx.x % splits);
  const int head = int((blockIdx.x / splits) % a.heads);
  const int64_t row = int64_t(blockIdx.x) / (int64_t(splits) * a.heads);
  const int b = int(row / a.seq), t = int(row % a.seq);
  const int len = *a.pos + t + 1;  // positions 0 .. *pos + t
  const int chunk = (len + splits - 1) / splits;
  const int lo = split * chunk, hi = min(len, lo + chunk);
  const int group = a.heads / a.kv_heads;
  const int g = head / group;
  const int kv = a.kv_heads * kD;
  const int width = a.heads * kD + 2 * kv;
  const int warp = threadIdx.x / kWarpSize, lane = threadIdx.x % kWarpSize;

  const T* q = static_cast<const T*>(a.qkv) + row * width + int64_t(head) * kD + lane * E;
  // The keys' cache scale folds into the queries, the values' into the output.
  const float cs = std::is_same_v<C, T> ? 1.0f : a.cache_scale;
  const float scale = rsqrtf(float(kD)) * cs;
  float qv[E];
#pragma unroll
  for (int e = 0; e < E; ++e)
    qv[e] = to_f(q[e]) * scale;
  const C* kbase = static_cast<const C*>(a.k_cache) + int64_t(b) * a.max_context * kv +
                   int64_t(g) * kD + lane * E;
  const C* vbase = static_cast<const C*>(a.v_cache) + int64_t(b) * a.max_context * kv +
                   int64_t(g) * kD + lane * E;
  float m = -INFINITY, l = 0, acc[E];
#pragma unroll
  for (int e = 0; e < E; ++e)
    acc[e] = 0;
  // kAttnUnroll positions at a time, their keys and values loaded together: one
  // position at a time waits a memory latency per position.
  for (int p0 = lo + warp * kAttnUnroll; p0 < hi; p0 += kAttnWarps * kAttnUnroll) {
    float kf[kAttnUnroll][E], vf[kAttnUnroll][E];
#pragma unroll
    for (int u = 0; u < kAttnUnroll; ++u) {
      const bool in = p0 + u < hi;
      const C* k = kbase + int64_t(p0 + u) * kv;
      const C* v = vbase + int64_t(p0 + u) * kv;
#pragma unroll
      for (int e = 0; e < E; ++e) {
        kf[u][e] = in ? cache_load(k[e]) : 0.0f;
        vf[u][e] = in ? cache_load(v[e]) : 0.0f;
      }
    }
    float sc[kAttnUnroll];
    float m_new = m;
#pragma unroll
    for (int u = 0; u < kAttnUnroll; ++u) {
      float dot = 0;
#pragma unroll
      for (int e = 0; e < E; ++e)
        dot += qv[e] * kf[u][e];
      sc[u] = p0 + u < hi ? warp_sum(dot) : -INFINITY;
      m_new = fmaxf(m_new, sc[u]);
    }
    const float correction = __expf(m - m_new);  // 0 on the first positions
    l *= correction;
#pragma unroll
    for (int e = 0; e < E; ++e)
      acc[e] *= correction;
#pragma unroll
    for (int u = 0; u < kAttnUnroll; ++u) {
      const float w = p0 + u < hi ? __expf(sc[u] - m_new) : 0.0f;
      l += w;
#pragma unroll
      for (int e = 0; e < E; ++e)
        acc[e] += w * vf[u][e];
    }
    m = m_new;
  }

  __shared__ float sm_m[kAttnWarps], sm_l[kAttnWarps];
  __shared__ float sm_acc[kAttnWarps][kD];
  if (lane == 0) {
    sm_m[warp] = m;
    sm_l[warp] = l;
  }
#pragma unroll
  for (int e = 0; e < E; ++e)
    sm_acc[warp][lane * E + e] = acc[e];
  __syncthreads();
  float mm = -INFINITY;
  for (int w = 0; w < kAttnWarps; ++w)
    mm = fmaxf(mm, sm_m[w]);
  float ll = 0;
  for (int w = 0; w < kAttnWarps; ++w)
    if (sm_l[w] > 0) ll += sm_l[w] * __expf(sm_m[w] - mm);
  for (int d = threadIdx.x; d < kD; d += blockDim.x) {
    float o = 0;
    for (int w = 0; w < kAttnWarps; ++w)
      if (sm_l[w] > 0) o += sm_acc[w][d] * __expf(sm_m[w] - mm);
    o *= cs;
    if (splits == 1) {
      static_cast<T*>(a.out)[row * a.heads * kD + int64_t(head) * kD + d] =
          from_f<T>(ll > 0 ? o / ll : 0.0f);
    } else {
      float* part = a.partials + ((row * a.heads + head) * splits + split) * (kD + 2);
      part[2 + d] = o;
      if (d == 0) {
        part[0] = mm;
        part[1] = ll;
      }
    }
  }
}

// One block per (row, head): merges the splits' (max, sum, unnormalised output).
template <class T>
__global__ void attention_combine_kernel(AttentionArgs a) {
  wait_for_previous_kernel();
  let_next_kernel_start();
  const int d_size = a.head_dim, splits = a.splits;
  const int64_t rh = blockIdx.x;  // row * heads + head
  const float* part = a.partials + rh * splits * (d_size + 2);
  float mm = -INFINITY;
  for (int s = 0; s < splits; ++s)
    if (part[s * (d_size + 2) + 1] > 0) mm = fmaxf(mm, part[s * (d_size + 2)]);
  float ll = 0;
  for (int s = 0; s < splits; ++s) {
    const float* p = part + s * (d_size + 2);
    if (p[1] > 0) ll += p[1] * __expf(p[0] - mm);
  }
  for (int d = threadIdx.x; d < d_size; d += blockDim.x) {
    float o = 0;
    for (int s = 0; s < splits; ++s) {
      const float* p = part + s * (d_size + 2);
      if (p[1] > 0) o += p[2 + d] * __expf(p[0] - mm);
    }
    static_cast<T*>(a.out)[rh * d_size + d] = from_f<T>(ll > 0 ? o / ll : 0.0f);
  }
}

template <class T>
__global__ void swiglu_kernel(const T* gu, T* out, int64_t rows, int inter) {
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < rows * inter;
       i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t r = i / inter, j = i - r * inter;
    const float g = to_f(gu[r * 2 * inter + j]);
    const float u = to_f(gu[r * 2 * inter + inter + j]);
    out[i] = from_f<T>(swiglu_value(g, u));
  }
}

// The same per element, 16 bytes at a time (inter a multiple of the vector width, the
// rows 16-byte aligned): one division per vector instead of per element, full-width
// loads. The training's activations (16384 x 8192 per layer) go through here.
template <class T>
__global__ void swiglu_vec_kernel(const T* gu, T* out, int64_t rows, int inter) {
  constexpr int V = 16 / sizeof(T);
  const int64_t per_row = inter / V;
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < rows * per_row;
       i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t r = i / per_row, j = (i - r * per_row) * V;
    const uint4 gv = *reinterpret_cast<const uint4*>(gu + r * 2 * inter + j);
    const uint4 uv = *reinterpret_cast<const uint4*>(gu + r * 2 * inter + inter + j);
    const T* g = reinterpret_cast<const T*>(&gv);
    const T* u = reinterpret_cast<const T*>(&uv);
    uint4 ov;
    T* o = reinterpret_cast<T*>(&ov);
#pragma unroll
    for (int k = 0; k < V; ++k) {
      o[k] = from_f<T>(swiglu_value(to_f(g[k]), to_f(u[k])));
    }
    *reinterpret_cast<uint4*>(out + r * inter + j) = ov;
  }
}

template <class T>
__global__ void gather_last_kernel(const T* x, T* y, int batch, int seq, int c) {
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < int64_t(batch) * c;
       i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t b = i / c;
    y[i] = x[(b * seq + seq - 1) * c + (i - b * c)];
  }
}

// One block per row: the largest value and, among equals, the smallest index.
__global__ void argmax_kernel(const float* logits, int32_t* out, int v) {
  wait_for_previous_kernel();
  let_next_kernel_start();
  const float* row = logits + int64_t(blockIdx.x) * v;
  float best = -INFINITY;
  int at = 0x7fffffff;
  for (int i = threadIdx.x; i < v; i += kThreads) {
    const float x = row[i];
    if (x > best) {  // NaN never wins
      best = x;
      at = i;
    }
  }
  __shared__ float sv[kThreads];
  __shared__ int si[kThreads];
  sv[threadIdx.x] = best;
  si[threadIdx.x] = at;
  __syncthreads();
  for (int stride = kThreads / 2; stride > 0; stride /= 2) {
    if (threadIdx.x < stride) {
      const float ov = sv[threadIdx.x + stride];
      const int oi = si[threadIdx.x + stride];
      if (ov > sv[threadIdx.x] || (ov == sv[threadIdx.x] && oi < si[threadIdx.x])) {
        sv[threadIdx.x] = ov;
        si[threadIdx.x] = oi;
      }
    }
    __syncthreads();
  }
  if (threadIdx.x == 0) out[blockIdx.x] = si[0] == 0x7fffffff ? 0 : si[0];
}

__global__ void advance_kernel(int* pos, int by) {
  wait_for_previous_kernel();
  let_next_kernel_start();
  *pos += by;
}

}  // namespace

void init_uniform(void* dst, DType dtype, int64_t n, float bound, uint64_t seed, uint64_t salt,
                  cudaStream_t s) {
  if (n == 0) return;
  const uint64_t key = seed * 0x100000001b3ull ^ (salt + 0x51ed2701ull);
  GPUVS_DISPATCH_DTYPE(dtype, init_uniform_kernel<T>
                       <<<grid_for(n), kThreads, 0, s>>>(static_cast<T*>(dst), n, bound, key));
  GPUVS_CUDA_CHECK_LAUNCH();
}

void fill(void* dst, DType dtype, int64_t n, float value, cudaStream_t s) {
  if (n == 0) return;
  GPUVS_DISPATCH_DTYPE(
      dtype, fill_kernel<T><<<grid_for(n), kThreads, 0, s>>>(static_cast<T*>(dst), n, value));
  GPUVS_CUDA_CHECK_LAUNCH();
}

void embed(const int32_t* ids, const void* table, void* x, int64_t rows, int c, DType dtype,
           cudaStream_t s, bool dependent) {
  GPUVS_DISPATCH_DTYPE(
      dtype, launch_kernel(embed_kernel<T>, grid_for(rows * c), kThreads, 0, s, dependent, ids,
                           static_cast<const T*>(table), static_cast<T*>(x), rows, c));
  GPUVS_CUDA_CHECK_LAUNCH();
}

void rms_norm(const void* x, const void* w, void* y, int64_t rows, int c, float eps, DType dtype,
              cudaStream_t s) {
  if (rows == 0) return;
  GPUVS_DISPATCH_DTYPE(
      dtype, rms_norm_kernel<T><<<unsigned(rows), kThreads, 0, s>>>(
                 static_cast<const T*>(x), static_cast<const T*>(w), static_cast<T*>(y), c, eps));
  GPUVS_CUDA_CHECK_LAUNCH();
}

void rope_and_cache(const RopeCacheArgs& a, cudaStream_t s) {
  const int64_t n = int64_t(a.batch) * a.seq * (a.heads + a.kv_heads) * (a.head_dim / 2);
  if (a.fp8_cache && a.dtype == DType::kF16)
    throw Error("llama rope_and_cache: an FP8 cache is for bf16 or fp32 activations");
  if (a.fp8_cache && a.dtype == DType::kF32)
    launch_kernel(rope_cache_kernel<float, __nv_fp8_e4m3>, grid_for(n), kThreads, 0, s,
                  a.dependent_launch, a);
  else if (a.fp8_cache)
    launch_kernel(rope_cache_kernel<__nv_bfloat16, __nv_fp8_e4m3>, grid_for(n), kThreads, 0, s,
                  a.dependent_launch, a);
  else
    GPUVS_DISPATCH_DTYPE(a.dtype, launch_kernel(rope_cache_kernel<T, T>, grid_for(n), kThreads, 0,
                                                s, a.dependent_launch, a));
  GPUVS_CUDA_CHECK_LAUNCH();
}

int64_t attention_partial_floats(int64_t rows, int heads, int head_dim, int splits) {
  return splits > 1 ? rows * heads * splits * (head_dim + 2) : 0;
}

int attention_splits(int64_t rows, int heads, int max_context, int sms) {
  const int64_t blocks = rows * heads;
  const int64_t wanted = (2 * int64_t(sms) + blocks - 1) / std::max<int64_t>(blocks, 1);
  const int64_t most = std::max(1, max_context / 64);
  return static_cast<int>(std::clamp<int64_t>(wanted, 1, std::min<int64_t>(most, 64)));
}

void attention(const AttentionArgs& a, cudaStream_t s) {
  const int64_t rows = int64_t(a.batch) * a.seq;
  const unsigned blocks = static_cast<unsigned>(rows * a.heads * a.splits);
  auto launch = [&](auto kernel) {
    launch_kernel(kernel, blocks, kAttnWarps * kWarpSize, 0, s, a.dependent_launch, a);
  };
  if (a.head_dim != 32 && a.head_dim != 64 && a.head_dim != 128)
    throw Error("llama attention: head size must be 32, 64 or 128");
  if (a.fp8_cache && a.dtype == DType::kF16)
    throw Error("llama attention: an FP8 cache is for bf16 or fp32 activations");
  // The kernel of cache type C at the head size.
  auto by_head = [&](auto t, auto c) {
    using T = decltype(t);
    using C = decltype(c);
    if (a.head_dim == 32)
      launch(attention_kernel<T, C, 1>);
    else if (a.head_dim == 64)
      launch(attention_kernel<T, C, 2>);
    else
      launch(attention_kernel<T, C, 4>);
  };
  if (a.fp8_cache && a.dtype == DType::kF32)
    by_head(float{}, __nv_fp8_e4m3{});
  else if (a.fp8_cache)
    by_head(__nv_bfloat16{}, __nv_fp8_e4m3{});
  else
    GPUVS_DISPATCH_DTYPE(a.dtype, by_head(T{}, T{}));
  GPUVS_CUDA_CHECK_LAUNCH();
  if (a.splits > 1) {
    GPUVS_DISPATCH_DTYPE(
        a.dtype, launch_kernel(attention_combine_kernel<T>, unsigned(rows * a.heads), kMaxHeadDim,
                               0, s, a.dependent_launch, a));
    GPUVS_CUDA_CHECK_LAUNCH();
  }
}

void cast_e4m3(const void* x, DType dtype, uint8_t* out, int64_t n, bert::Fp8Meta* meta,
               cudaStream_t s) {
  if (dtype != DType::kBF16 && dtype != DType::kF32)
    throw Error("llama cast_e4m3: bf16 or fp32 input");
  if (n % 8 != 0 || reinterpret_cast<uintptr_t>(x) % 16 != 0 ||
      reinterpret_cast<uintptr_t>(out) % 8 != 0)
    throw Error("llama cast_e4m3: n a multiple of 8, x 16-byte and out 8-byte aligned");
  if (n == 0) return;
  if (dtype == DType::kF32)
    cast_e4m3_kernel<<<grid_for(n / 8), kThreads, 0, s>>>(static_cast<const float*>(x), out, n / 8,
                                                          meta);
  else
    cast_e4m3_kernel<<<grid_for(n / 8), kThreads, 0, s>>>(static_cast<const __nv_bfloat16*>(x), out,
                                                          n / 8, meta);
  GPUVS_CUDA_CHECK_LAUNCH();
}

void swiglu(const void* gu, void* a, int64_t rows, int inter, DType dtype, cudaStream_t s) {
  const size_t width = 16 / dtype_size(dtype);
  const bool aligned = (reinterpret_cast<uintptr_t>(gu) | reinterpret_cast<uintptr_t>(a)) % 16 == 0;
  if (aligned && inter % width == 0) {
    GPUVS_DISPATCH_DTYPE(
        dtype, swiglu_vec_kernel<T><<<grid_for(rows * (inter / int64_t(width))), kThreads, 0, s>>>(
                   static_cast<const T*>(gu), static_cast<T*>(a), rows, inter));
  } else {
    GPUVS_DISPATCH_DTYPE(dtype, swiglu_kernel<T><<<grid_for(rows * inter), kThreads, 0, s>>>(
                                    static_cast<const T*>(gu), static_cast<T*>(a), rows, inter));
  }
  GPUVS_CUDA_CHECK_LAUNCH();
}

void gather_last_rows(const void* x, void* y, int batch, int seq, int c, DType dtype,
                      cudaStream_t s) {
  GPUVS_DISPATCH_DTYPE(dtype,
                       gather_last_kernel<T><<<grid_for(int64_t(batch) * c), kThreads, 0, s>>>(
                           static_cast<const T*>(x), static_cast<T*>(y), batch, seq, c));
  GPUVS_CUDA_CHECK_LAUNCH();
}

void argmax_rows(const float* logits, int32_t* out, int rows, int v, cudaStream_t s,
                 bool dependent) {
  launch_kernel(argmax_kernel, unsigned(rows), kThreads, 0, s, dependent, logits, out, v);
  GPUVS_CUDA_CHECK_LAUNCH();
}

void advance_position(int* pos, int by, cudaStream_t s, bool dependent) {
  launch_kernel(advance_kernel, 1, 1, 0, s, dependent, pos, by);
  GPUVS_CUDA_CHECK_LAUNCH();
}

}  // namespace gpuvs::models::llama
