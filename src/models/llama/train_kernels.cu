// The Llama decoder's training kernels (train_kernels.h). Every kernel moves 16 bytes
// at a time (Vec<T>: 8 values of a 16-bit type, 4 of fp32) and is memory-bound at the
// training shapes (N 16384 rows, C 2048-4096, F 8192-14336).
#include <algorithm>
#include <cmath>
#include <string>

#include "core/error.h"
#include "gpu/check.h"
#include "gpu/reduce.cuh"
#include "models/bert/kernels.h"
#include "models/layers/dtype.h"
#include "models/layers/swiglu.cuh"
#include "models/llama/train_kernels.h"

namespace gpuvs::models::llama {

namespace {

constexpr int kThreads = 256;
constexpr int kNormThreads = 256;  // llama::rms_norm's block: its sum order is kept
constexpr int kMaxC = 4096;
// The backward's blocks: at least 8 rows each, at most 512 blocks (4 an SM, one wave
// on 128 SMs or more), so that the partials (written and read again: 8 C bytes a
// block) stay a few percent of the traffic (3 to 4 tensors of N x C values: at N
// 16384 in bf16, 32 rows a block, 4 %).
constexpr int kNormBwdRowsPerBlock = 8;
constexpr int kNormBwdMaxBlocks = 512;
// Heads whose vectors a rotary thread loads before it stores any: the loads of
// several heads in flight at once (the compiler cannot hoist a load above a store it
// cannot prove apart).
constexpr int kRopeHeadsPerStep = 4;

unsigned grid_for(int64_t n, int threads = kThreads) {
  return static_cast<unsigned>(std::clamp<int64_t>((n + threads - 1) / threads, 1, 1 << 20));
}

bool aligned16(const void* p) {
  return reinterpret_cast<uintptr_t>(p) % 16 == 0;
}

void require(bool ok, const char* fn, const char* what) {
  if (!ok) throw Error(std::string("llama ") + fn + ": " + what);
}

void check_norm_width(const char* fn, int c) {
  require(c % 256 == 0 && c >= 256 && c <= kMaxC, fn,
          "C must be a multiple of 256 from 256 to 4096");
}

int norm_bwd_blocks(int64_t rows) {
  return static_cast<int>(std::clamp<int64_t>(
      (rows + kNormBwdRowsPerBlock - 1) / kNormBwdRowsPerBlock, 1, kNormBwdMaxBlocks));
}

// ---- RMSNorm ---------------------------------------------------------------------

// One block per row. The row is loaded 16 bytes at a time into registers and shared
// memory; the sum of squares is then taken from shared memory in llama::rms_norm's
// order (thread i: elements i, i + 256, ... in turn, then the block's butterfly), so
// that rstd, and so y, are its bits.
template <class T>
__global__ void __launch_bounds__(kNormThreads)
    rms_forward_train_kernel(const T* __restrict__ x, const T* __restrict__ w, T* __restrict__ y,
                             float* __restrict__ rstd_out, int c, float eps) {
  constexpr int kN = Vec<T>::kN;
  constexpr int kMaxV = kMaxC / (kNormThreads * kN);  // vectors per thread at most
  __shared__ uint4 row_raw[kMaxC * sizeof(T) / 16];
  __shared__ float scratch[kNormThreads / kWarpSize];
  T* row = reinterpret_cast<T*>(row_raw);
  const int64_t r = blockIdx.x;
  const T* xr = x + r * c;
  const int nv = c / kN;
  Vec<T> xv[kMaxV];
#pragma unroll
  for (int j = 0; j < kMaxV; ++j) {
    const int v = j * kNormThreads + int(threadIdx.x);
    if (v < nv) {
      xv[j] = load_vec(xr + v * kN);
      store_vec(row + v * kN, xv[j]);
    }
  }
  __syncthreads();
  float sq = 0;
  for (int i = threadIdx.x; i < c; i += kNormThreads) {
    const float v = to_f(row[i]);
    sq += v * v;
  }
  const float total = block_reduce_all<kNormThreads, ShuffleTree::kButterfly>(sq, SumOp{}, scratch);
  const float rstd = rsqrtf(total / float(c) + eps);
  if (threadIdx.x == 0) rstd_out[r] = rstd;
#pragma unroll
  for (int j = 0; j < kMaxV; ++j) {
    const int v = j * kNormThreads + int(threadIdx.x);
    if (v >= nv) continue;
    const Vec<T> wv = load_vec(w + v * kN);
    Vec<T> out;
#pragma unroll
    for (int e = 0; e < kN; ++e) {
      const float normed = to_f(from_f<T>(to_f(xv[j].e[e]) * rstd));
      out.e[e] = from_f<T>(to_f(wv.e[e]) * normed);
    }
    store_vec(y + r * c + v * kN, out);
  }
}

// Each block takes rows blockIdx.x, + gridDim.x, ...; thread i owns the vectors i,
// i + 256, ... of every row (the same columns in every row) and keeps its dw partial
// for them in registers. A row's dy and x stay in registers, packed, between the
// block's sum of g * n and the writes of dx (g and n are computed again, the same
// bits); w is read again per row (from L1: C values for every row). The block's
// partial (C) goes out at the end, each thread its own columns: no shared memory.
// At most 64 registers a thread: 4 blocks of 256 threads an SM, so the 512 blocks of
// a large N are one wave on a GPU of 128 or more SMs.
template <class T>
__global__ void __launch_bounds__(kNormThreads, 4) rms_backward_kernel(RmsNormBackwardArgs a) {
  constexpr int kN = Vec<T>::kN;
  constexpr int kMaxV = kMaxC / (kNormThreads * kN);
  __shared__ float scratch[kNormThreads / kWarpSize];
  const int c = a.c, nv = c / kN;
  const T* dy = static_cast<const T*>(a.dy);
  const T* x = static_cast<const T*>(a.x);
  const T* w = static_cast<const T*>(a.w);
  const T* dres = static_cast<const T*>(a.dres);
  T* dx = static_cast<T*>(a.dx);
  float pw[kMaxV][kN];
#pragma unroll
  for (int j = 0; j < kMaxV; ++j)
#pragma unroll
    for (int e = 0; e < kN; ++e)
      pw[j][e] = 0.0f;
  const float inv_c = 1.0f / float(c);
  for (int64_t r = blockIdx.x; r < a.rows; r += gridDim.x) {  // the same trips in every thread
    const float rstd = a.rstd[r];
    Vec<T> dv[kMaxV], xv[kMaxV];
    float sum = 0.0f;
#pragma unroll
    for (int j = 0; j < kMaxV; ++j) {
      const int v = j * kNormThreads + int(threadIdx.x);
      if (v >= nv) continue;
      dv[j] = load_vec(dy + r * c + v * kN);
      xv[j] = load_vec(x + r * c + v * kN);
      const Vec<T> wv = load_vec(w + v * kN);
#pragma unroll
      for (int e = 0; e < kN; ++e) {
        const float d = to_f(dv[j].e[e]);
        const float n = to_f(xv[j].e[e]) * rstd;
        const float g = to_f(from_f<T>(d * to_f(wv.e[e])));
        pw[j][e] += d * to_f(from_f<T>(n));
        sum += g * n;
      }
    }
    const float mean =
        block_reduce_all<kNormThreads, ShuffleTree::kButterfly>(sum, SumOp{}, scratch) * inv_c;
#pragma unroll
    for (int j = 0; j < kMaxV; ++j) {
      const int v = j * kNormThreads + int(threadIdx.x);
      if (v >= nv) continue;
      const int64_t at = r * c + v * kN;
      const Vec<T> wv = load_vec(w + v * kN);
      Vec<T> rv;
      if (dres) rv = load_vec(dres + at);
      Vec<T> out;
#pragma unroll
      for (int e = 0; e < kN; ++e) {
        const float n = to_f(xv[j].e[e]) * rstd;
        const float g = to_f(from_f<T>(to_f(dv[j].e[e]) * to_f(wv.e[e])));
        float d = rstd * (g - n * mean);
        if (dres) d = to_f(rv.e[e]) + to_f(from_f<T>(d));
        out.e[e] = from_f<T>(d);
      }
      store_vec(dx + at, out);
    }
  }
  float* part = a.partials + int64_t(blockIdx.x) * c;
#pragma unroll
  for (int j = 0; j < kMaxV; ++j) {
    const int v = j * kNormThreads + int(threadIdx.x);
    if (v >= nv) continue;
#pragma unroll
    for (int q = 0; q < kN / 4; ++q)
      reinterpret_cast<float4*>(part + v * kN)[q] =
          make_float4(pw[j][4 * q], pw[j][4 * q + 1], pw[j][4 * q + 2], pw[j][4 * q + 3]);
  }
}

// ---- Rotary embedding and the head split ------------------------------------------

// One thread per (row, vector p of the first half of a head): the angles of its kN
// pairs (columns p*kN .. p*kN + kN - 1 with their partners D/2 further) are the same
// in every head of the row, so it takes every head of the row in turn, the sines and
// cosines computed once. Forward reads the token-major row and writes the head-major
// rows; backward the other way, turning by -angle. Consecutive threads take
// consecutive vectors of a head, then the next row: both layouts are read and written
// in runs of D values.
template <class T, bool kForward>
__global__ void __launch_bounds__(kThreads) rope_split_kernel(RopeSplitArgs a) {
  constexpr int kN = Vec<T>::kN;
  const int d = a.head_dim, half = d / 2, per_row = half / kN;
  const int nh = a.heads + 2 * a.kv_heads, rotated = a.heads + a.kv_heads;
  const int64_t width = int64_t(nh) * d;
  const int64_t n = int64_t(a.batch) * a.seq * per_row;
  T* qkv = static_cast<T*>(a.qkv);
  T* q = static_cast<T*>(a.q);
  T* k = static_cast<T*>(a.k);
  T* v = static_cast<T*>(a.v);
  for (int64_t idx = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; idx < n;
       idx += int64_t(gridDim.x) * blockDim.x) {
    const int i0 = int(idx % per_row) * kN;
    const int64_t row = idx / per_row;
    const int b = int(row / a.seq), t = int(row % a.seq);
    float cs[kN], sn[kN];
#pragma unroll
    for (int e = 0; e < kN; ++e) {
      const float angle = float(t) * a.inv_freq[i0 + e];
      sincosf(angle, &sn[e], &cs[e]);
    }
    T* tok = qkv + row * width;
    // Head h's row in its head-major tensor (q: h < H, k: h < H + G, else v).
    const auto head_row = [&](int h) -> T* {
      if (h < a.heads) return q + ((int64_t(b) * a.heads + h) * a.seq + t) * d;
      const int g = h < rotated ? h - a.heads : h - rotated;
      return (h < rotated ? k : v) + ((int64_t(b) * a.kv_heads + g) * a.seq + t) * d;
    };
    for (int h0 = 0; h0 < nh; h0 += kRopeHeadsPerStep) {
      Vec<T> x1[kRopeHeadsPerStep], x2[kRopeHeadsPerStep];
#pragma unroll
      for (int u = 0; u < kRopeHeadsPerStep; ++u) {
        const int h = h0 + u;
        if (h >= nh) continue;
        const T* src = kForward ? tok + int64_t(h) * d : head_row(h);
        x1[u] = load_vec(src + i0);
        x2[u] = load_vec(src + half + i0);
      }
#pragma unroll
      for (int u = 0; u < kRopeHeadsPerStep; ++u) {
        const int h = h0 + u;
        if (h >= nh) continue;
        Vec<T> r1 = x1[u], r2 = x2[u];
        if (h < rotated) {  // the same for every thread of the warp
#pragma unroll
          for (int e = 0; e < kN; ++e) {
            const float v1 = to_f(x1[u].e[e]), v2 = to_f(x2[u].e[e]);
            if (kForward) {  // rope_rotate's expressions (rope.cuh), contraction left to the
                             // compiler
              r1.e[e] = from_f<T>(v1 * cs[e] - v2 * sn[e]);
              r2.e[e] = from_f<T>(v2 * cs[e] + v1 * sn[e]);
            } else {
              r1.e[e] = from_f<T>(v1 * cs[e] + v2 * sn[e]);
              r2.e[e] = from_f<T>(v2 * cs[e] - v1 * sn[e]);
            }
          }
        }
        T* dst = kForward ? head_row(h) : tok + int64_t(h) * d;
        store_vec(dst + i0, r1);
        store_vec(dst + half + i0, r2);
      }
    }
  }
}

// ---- SwiGLU ----------------------------------------------------------------------

// One thread per vector of kN columns of a row of da: the gate's and the up
// projection's vectors at the same columns of gu, both gradients written where they
// were read (so in place over gu is safe).
template <class T>
__global__ void __launch_bounds__(kThreads)
    swiglu_backward_kernel(const T* gu, const T* da, T* dgu, int64_t rows, int inter) {
  constexpr int kN = Vec<T>::kN;
  const int per_row = inter / kN;
  const int64_t n = rows * per_row;
  for (int64_t idx = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; idx < n;
       idx += int64_t(gridDim.x) * blockDim.x) {
    const int64_t r = idx / per_row;
    const int j = int(idx - r * per_row) * kN;
    const int64_t at = r * 2 * inter + j;
    const Vec<T> gv = load_vec(gu + at);
    const Vec<T> uv = load_vec(gu + at + inter);
    const Vec<T> dv = load_vec(da + r * inter + j);
    Vec<T> dg, du;
#pragma unroll
    for (int e = 0; e < kN; ++e) {
      const SwigluGrad q = swiglu_grad<T>(to_f(gv.e[e]), to_f(uv.e[e]), to_f(dv.e[e]));
      dg.e[e] = from_f<T>(q.gate);
      du.e[e] = from_f<T>(q.up);
    }
    store_vec(dgu + at, dg);
    store_vec(dgu + at + inter, du);
  }
}

// ---- Inputs ----------------------------------------------------------------------

__global__ void lm_inputs_kernel(LmInputArgs a) {
  const int64_t n = int64_t(a.batch) * a.seq;
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x) {
    const int t = int(i % a.seq);
    a.ids[i] = lm_input_id(a.seed, uint64_t(i), a.vocab);
    a.labels[i] = t == a.seq - 1 ? -100 : lm_input_id(a.seed, uint64_t(i + 1), a.vocab);
  }
}

}  // namespace

void rms_norm_forward_train(const void* x, const void* w, void* y, float* rstd, int64_t rows, int c,
                            float eps, DType dtype, cudaStream_t s) {
  constexpr const char* kFn = "rms_norm_forward_train";
  check_norm_width(kFn, c);
  require(x && w && y && rstd, kFn, "null pointer");
  require(aligned16(x) && aligned16(w) && aligned16(y), kFn, "x, w and y must be 16-byte aligned");
  require(rows >= 0 && rows <= 0x7fffffff, kFn, "rows out of range");
  if (rows == 0) return;
  GPUVS_DISPATCH_DTYPE(dtype, rms_forward_train_kernel<T><<<unsigned(rows), kNormThreads, 0, s>>>(
                                  static_cast<const T*>(x), static_cast<const T*>(w),
                                  static_cast<T*>(y), rstd, c, eps));
  GPUVS_CUDA_CHECK_LAUNCH();
}

int64_t rms_norm_partial_floats(int64_t rows, int c) {
  return int64_t(norm_bwd_blocks(rows)) * c;
}

void rms_norm_backward(const RmsNormBackwardArgs& a, cudaStream_t s) {
  constexpr const char* kFn = "rms_norm_backward";
  check_norm_width(kFn, a.c);
  require(a.dy && a.x && a.w && a.rstd && a.dx && a.dw && a.partials, kFn, "null pointer");
  require(aligned16(a.dy) && aligned16(a.x) && aligned16(a.w) && aligned16(a.dx) &&
              aligned16(a.dres) && aligned16(a.partials),
          kFn, "dy, x, w, dres, dx and partials must be 16-byte aligned");
  require(a.rows >= 0, kFn, "negative rows");
  if (a.rows == 0) {
    if (!a.accumulate) GPUVS_CUDA_CHECK(cudaMemsetAsync(a.dw, 0, size_t(a.c) * sizeof(float), s));
    return;
  }
  const int blocks = norm_bwd_blocks(a.rows);
  GPUVS_DISPATCH_DTYPE(a.dtype, rms_backward_kernel<T><<<blocks, kNormThreads, 0, s>>>(a));
  GPUVS_CUDA_CHECK_LAUNCH();
  bert::reduce_partials(a.partials, blocks, a.c, a.dw, a.accumulate, s);
}

namespace {

void check_rope(const char* fn, const RopeSplitArgs& a) {
  require(a.head_dim % 16 == 0 && a.head_dim >= 16 && a.head_dim <= 256, fn,
          "D must be a multiple of 16 from 16 to 256");
  require(a.batch >= 0 && a.seq >= 0 && a.heads > 0 && a.kv_heads > 0, fn,
          "batch and seq must be >= 0, heads and kv_heads > 0");
  require(a.inv_freq && a.qkv && a.q && a.k && a.v, fn, "null pointer");
  require(aligned16(a.qkv) && aligned16(a.q) && aligned16(a.k) && aligned16(a.v), fn,
          "qkv, q, k and v must be 16-byte aligned");
}

template <bool kForward>
void launch_rope(const RopeSplitArgs& a, cudaStream_t s) {
  const int64_t rows = int64_t(a.batch) * a.seq;
  if (rows == 0) return;
  GPUVS_DISPATCH_DTYPE(a.dtype, {
    const int64_t n = rows * (a.head_dim / 2 / Vec<T>::kN);
    rope_split_kernel<T, kForward><<<grid_for(n), kThreads, 0, s>>>(a);
  });
  GPUVS_CUDA_CHECK_LAUNCH();
}

}  // namespace

void rope_split_forward(const RopeSplitArgs& a, cudaStream_t s) {
  check_rope("rope_split_forward", a);
  launch_rope<true>(a, s);
}

void rope_split_backward(const RopeSplitArgs& a, cudaStream_t s) {
  check_rope("rope_split_backward", a);
  launch_rope<false>(a, s);
}

void swiglu_backward(const void* gu, const void* da, void* dgu, int64_t rows, int inter,
                     DType dtype, cudaStream_t s) {
  constexpr const char* kFn = "swiglu_backward";
  require(inter > 0 && inter % 8 == 0, kFn, "F must be a positive multiple of 8");
  require(gu && da && dgu, kFn, "null pointer");
  require(aligned16(gu) && aligned16(da) && aligned16(dgu), kFn,
          "gu, da and dgu must be 16-byte aligned");
  require(rows >= 0, kFn, "negative rows");
  if (rows == 0) return;
  GPUVS_DISPATCH_DTYPE(dtype, {
    const int64_t n = rows * (inter / Vec<T>::kN);
    swiglu_backward_kernel<T><<<grid_for(n), kThreads, 0, s>>>(
        static_cast<const T*>(gu), static_cast<const T*>(da), static_cast<T*>(dgu), rows, inter);
  });
  GPUVS_CUDA_CHECK_LAUNCH();
}

void lm_inputs(const LmInputArgs& a, cudaStream_t s) {
  constexpr const char* kFn = "lm_inputs";
  require(a.vocab >= 1, kFn, "vocab must be at least 1");
  require(a.batch >= 0 && a.seq >= 0, kFn, "batch and seq must be >= 0");
  require(a.ids && a.labels, kFn, "null pointer");
  const int64_t n = int64_t(a.batch) * a.seq;
  if (n == 0) return;
  lm_inputs_kernel<<<grid_for(n), kThreads, 0, s>>>(a);
  GPUVS_CUDA_CHECK_LAUNCH();
}

}  // namespace gpuvs::models::llama
