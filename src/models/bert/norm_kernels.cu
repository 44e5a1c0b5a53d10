// LayerNorm (with residual and dropout), the embeddings, column sums and the word
// embeddings' scatter (kernels.h). LayerNorm kernels: one warp per row of C <= 1024
// elements (C % 256 == 0), 16-byte loads, the row in registers, 8 warps per block.
#include <algorithm>

#include "gpu/check.h"
#include "models/bert/device_util.cuh"
#include "models/bert/kernels.h"

namespace gpuvs::models::bert {

namespace {

constexpr int kLnWarps = 8;
constexpr int kLnThreads = kLnWarps * kWarp;
constexpr int kLnMaxPerLane = 32;  // C <= 1024
constexpr int kLnBwdMaxBlocks = 256;
constexpr int kColThreads = 256;
constexpr int kColVecThreads = 128;
constexpr int kColChunk = 32;  // rows per partial

// Normalises v (the lane's elements of one row; vector j of the lane is columns
// (j * 32 + lane) * kN ...) and writes y = dropout(LN(v) * gamma + beta).
template <class T>
__device__ __forceinline__ void ln_finish(float (&v)[kLnMaxPerLane], int c, int64_t row,
                                          const T* gamma, T* y, float* stats, float eps,
                                          const Dropout& y_drop) {
  constexpr int kN = Vec<T>::kN;
  const int lane = threadIdx.x % kWarp;
  const int nv = c / (kWarp * kN);
  float sum = 0.0f;
#pragma unroll
  for (int j = 0; j < kLnMaxPerLane / kN; ++j)
    if (j < nv)
#pragma unroll
      for (int e = 0; e < kN; ++e)
        sum += v[j * kN + e];
  const float mean = warp_sum(sum) / c;
  float sq = 0.0f;
#pragma unroll
  for (int j = 0; j < kLnMaxPerLane / kN; ++j)
    if (j < nv)
#pragma unroll
      for (int e = 0; e < kN; ++e) {
        const float d = v[j * kN + e] - mean;
        sq += d * d;
      }
  const float rstd = rsqrtf(warp_sum(sq) / c + eps);
  if (stats && lane == 0) {
    stats[row * 2] = mean;
    stats[row * 2 + 1] = rstd;
  }
  const DropMask drop = drop_mask(y_drop);
  const T* beta = gamma + c;
#pragma unroll
  for (int j = 0; j < kLnMaxPerLane / kN; ++j) {
    if (j >= nv) continue;
    const int col = (j * kWarp + lane) * kN;
    const Vec<T> g = load_vec(gamma + col);
    const Vec<T> b = load_vec(beta + col);
    const uint32_t keep = drop_bits<kN>(drop, uint64_t(row) * c + col);
    Vec<T> out;
#pragma unroll
    for (int e = 0; e < kN; ++e) {
      const float f = (v[j * kN + e] - mean) * rstd * to_f(g.e[e]) + to_f(b.e[e]);
      out.e[e] = from_f<T>(apply_kept(f, drop, keep, e));
    }
    store_vec(y + row * c + col, out);
  }
}

template <class T>
__device__ __forceinline__ void store_row(const float (&v)[kLnMaxPerLane], int c, T* dst) {
  constexpr int kN = Vec<T>::kN;
  const int lane = threadIdx.x % kWarp;
  const int nv = c / (kWarp * kN);
#pragma unroll
  for (int j = 0; j < kLnMaxPerLane / kN; ++j) {
    if (j >= nv) continue;
    const int col = (j * kWarp + lane) * kN;
    Vec<T> out;
#pragma unroll
    for (int e = 0; e < kN; ++e)
      out.e[e] = from_f<T>(v[j * kN + e]);
    store_vec(dst + col, out);
  }
}

template <class T>
__global__ void __launch_bounds__(kLnThreads) ln_forward_kernel(LnForwardArgs a) {
  constexpr int kN = Vec<T>::kN;
  const int lane = threadIdx.x % kWarp;
  const int64_t row = int64_t(blockIdx.x) * kLnWarps + threadIdx.x / kWarp;
  if (row >= a.rows) return;
  const int nv = a.c / (kWarp * kN);
  const T* x = static_cast<const T*>(a.x) + row * a.c;
  const T* res = a.residual ? static_cast<const T*>(a.residual) + row * a.c : nullptr;
  const DropMask drop = drop_mask(a.x_drop);
  float v[kLnMaxPerLane];
#pragma unroll
  for (int j = 0; j < kLnMaxPerLane / kN; ++j) {
    if (j >= nv) continue;
    const int col = (j * kWarp + lane) * kN;
    const Vec<T> xv = load_vec(x + col);
    Vec<T> rv;
    if (res) rv = load_vec(res + col);
    const uint32_t keep = drop_bits<kN>(drop, uint64_t(row) * a.c + col);
#pragma unroll
    for (int e = 0; e < kN; ++e) {
      float f = apply_kept(to_f(xv.e[e]), drop, keep, e);
      if (res) f += to_f(rv.e[e]);
      v[j * kN + e] = f;
    }
  }
  if (a.z_out) store_row<T>(v, a.c, static_cast<T*>(a.z_out) + row * a.c);
  ln_finish<T>(v, a.c, row, static_cast<const T*>(a.gamma), static_cast<T*>(a.y), a.stats, a.eps,
               a.y_drop);
}

template <class T>
__global__ void __launch_bounds__(kLnThreads) embedding_kernel(EmbeddingArgs a) {
  constexpr int kN = Vec<T>::kN;
  const int lane = threadIdx.x % kWarp;
  const int64_t row = int64_t(blockIdx.x) * kLnWarps + threadIdx.x / kWarp;
  if (row >= int64_t(a.batch) * a.seq) return;
  const int nv = a.c / (kWarp * kN);
  const int t = static_cast<int>(row % a.seq);
  const T* w = static_cast<const T*>(a.word) + int64_t(a.ids[row]) * a.c;
  const T* p = static_cast<const T*>(a.pos) + int64_t(t) * a.c;
  const T* ty = static_cast<const T*>(a.type) + int64_t(a.types[row]) * a.c;
  float v[kLnMaxPerLane];
#pragma unroll
  for (int j = 0; j < kLnMaxPerLane / kN; ++j) {
    if (j >= nv) continue;
    const int col = (j * kWarp + lane) * kN;
    const Vec<T> wv = load_vec(w + col), pv = load_vec(p + col), tv = load_vec(ty + col);
#pragma unroll
    for (int e = 0; e < kN; ++e)
      v[j * kN + e] = to_f(wv.e[e]) + to_f(pv.e[e]) + to_f(tv.e[e]);
  }
  if (a.z_out) store_row<T>(v, a.c, static_cast<T*>(a.z_out) + row * a.c);
  ln_finish<T>(v, a.c, row, static_cast<const T*>(a.gamma), static_cast<T*>(a.y), a.stats, a.eps,
               a.y_drop);
}

int ln_bwd_blocks(int64_t rows) {
  return static_cast<int>(std::min<int64_t>((rows + kLnWarps - 1) / kLnWarps, kLnBwdMaxBlocks));
}

// Each warp takes rows warp, warp + W, ... (W warps in the grid); per-lane column
// partials of dgamma and dbeta are summed over the block's warps in shared memory in
// warp order, then written as the block's partial (2, C). The row is read twice (the
// second time mostly from L1) instead of kept in registers: with only the dgamma and
// dbeta partials held, two blocks fit on an SM without spills.
// For the columns col ... col + kN - 1 of a row: d = dropout'(dy), xh = the normalised
// input, g = d * gamma.
template <class T>
__device__ __forceinline__ void ln_bwd_load(const T* dy, const T* z, const T* gamma, int64_t row,
                                            int c, int col, float mean, float rstd,
                                            const DropMask& ydrop, float (&d)[Vec<T>::kN],
                                            float (&xh)[Vec<T>::kN], float (&g)[Vec<T>::kN]) {
  constexpr int kN = Vec<T>::kN;
  const Vec<T> dv = load_vec(dy + col), zv = load_vec(z + col), gv = load_vec(gamma + col);
  const uint32_t keep = drop_bits<kN>(ydrop, uint64_t(row) * c + col);
#pragma unroll
  for (int e = 0; e < kN; ++e) {
    d[e] = apply_kept(to_f(dv.e[e]), ydrop, keep, e);
    xh[e] = (to_f(zv.e[e]) - mean) * rstd;
    g[e] = d[e] * to_f(gv.e[e]);
  }
}

template <class T>
__global__ void __launch_bounds__(kLnThreads, 2) ln_backward_kernel(LnBackwardArgs a) {
  constexpr int kN = Vec<T>::kN;
  constexpr int kV = kLnMaxPerLane / kN;
  __shared__ float shared[kLnWarps][1024];
  const int lane = threadIdx.x % kWarp, warp = threadIdx.x / kWarp;
  const int nv = a.c / (kWarp * kN);
  const T* gamma = static_cast<const T*>(a.gamma);
  float pg[kLnMaxPerLane], pb[kLnMaxPerLane];
#pragma unroll
  for (int i = 0; i < kLnMaxPerLane; ++i)
    pg[i] = pb[i] = 0.0f;
  const DropMask ydrop = drop_mask(a.y_drop), xdrop = drop_mask(a.x_drop);
  const int64_t warps = int64_t(gridDim.x) * kLnWarps;
  for (int64_t row = int64_t(blockIdx.x) * kLnWarps + warp; row < a.rows; row += warps) {
    const T* dy = static_cast<const T*>(a.dy) + row * a.c;
    const T* z = static_cast<const T*>(a.z) + row * a.c;
    const float mean = a.stats[row * 2], rstd = a.stats[row * 2 + 1];
    float sum_g = 0.0f, sum_gx = 0.0f;
#pragma unroll
    for (int j = 0; j < kV; ++j) {
      if (j >= nv) continue;
      float d[kN], xh[kN], g[kN];
      ln_bwd_load<T>(dy, z, gamma, row, a.c, (j * kWarp + lane) * kN, mean, rstd, ydrop, d, xh, g);
#pragma unroll
      for (int e = 0; e < kN; ++e) {
        pg[j * kN + e] += d[e] * xh[e];
        pb[j * kN + e] += d[e];
        sum_g += g[e];
        sum_gx += g[e] * xh[e];
      }
    }
    const float mg = warp_sum(sum_g) / a.c, mgx = warp_sum(sum_gx) / a.c;
#pragma unroll
    for (int j = 0; j < kV; ++j) {
      if (j >= nv) continue;
      const int col = (j * kWarp + lane) * kN;
      float d[kN], xh[kN], g[kN];
      ln_bwd_load<T>(dy, z, gamma, row, a.c, col, mean, rstd, ydrop, d, xh, g);
      const uint32_t keep = a.dx ? drop_bits<kN>(xdrop, uint64_t(row) * a.c + col) : 0u;
      Vec<T> dz, dx;
#pragma unroll
      for (int e = 0; e < kN; ++e) {
        const float v = rstd * (g[e] - mg - xh[e] * mgx);
        dz.e[e] = from_f<T>(v);
        dx.e[e] = from_f<T>(apply_kept(v, xdrop, keep, e));
      }
      store_vec(static_cast<T*>(a.dz) + row * a.c + col, dz);
      if (a.dx) store_vec(static_cast<T*>(a.dx) + row * a.c + col, dx);
    }
  }
  float* out = a.partials + int64_t(blockIdx.x) * 2 * a.c;
#pragma unroll
  for (int pass = 0; pass < 2; ++pass) {
    const float* src = pass == 0 ? pg : pb;
#pragma unroll
    for (int j = 0; j < kV; ++j) {
      if (j >= nv) continue;
      const int col = (j * kWarp + lane) * kN;
#pragma unroll
      for (int e = 0; e < kN; ++e)
        shared[warp][col + e] = src[j * kN + e];
    }
    __syncthreads();
    for (int col = threadIdx.x; col < a.c; col += kLnThreads) {
      float s = 0.0f;
#pragma unroll
      for (int w = 0; w < kLnWarps; ++w)
        s += shared[w][col];
      out[pass * a.c + col] = s;
    }
    __syncthreads();
  }
}

// out[j] (+)= the sum over p of partials[p * width + j]. Block (32, kReduceLanes): x a
// column, y a lane of partials (p = y, y + kReduceLanes, ...); the lanes' sums are
// added in lane order, so the result is the same on every run.
constexpr int kReduceLanes = 16;
__global__ void __launch_bounds__(kWarp* kReduceLanes)
    reduce_partials_kernel(const float* __restrict__ partials, int64_t count, int64_t width,
                           float* __restrict__ out, bool accumulate) {
  __shared__ ColumnScratch<float, kReduceLanes, kWarp> lanes;
  const int64_t j = int64_t(blockIdx.x) * kWarp + threadIdx.x;
  float s = 0.0f;
  if (j < width)
    for (int64_t p = threadIdx.y; p < count; p += kReduceLanes)
      s += partials[p * width + j];
  s = column_reduce<kReduceLanes, kWarp>(s, threadIdx.y, threadIdx.x, SumOp{}, lanes);
  if (threadIdx.y != 0 || j >= width) return;
  out[j] = accumulate ? out[j] + s : s;
}

// grid (column blocks, row chunks): each thread sums one column over kColChunk rows,
// per group (at most 2).
template <class T>
__global__ void colsum_kernel(ColSumArgs a) {
  const int64_t j = int64_t(blockIdx.x) * kColThreads + threadIdx.x;
  if (j >= a.cols) return;
  const int64_t r0 = int64_t(blockIdx.y) * kColChunk;
  const int64_t r1 = r0 + kColChunk < a.rows ? r0 + kColChunk : a.rows;
  const T* x = static_cast<const T*>(a.x);
  float s0 = 0.0f, s1 = 0.0f;
  for (int64_t r = r0; r < r1; ++r) {
    const float v = to_f(x[r * a.ld + j]);
    if (a.group && a.group[r] == 1)
      s1 += v;
    else
      s0 += v;
  }
  float* p = a.partials + int64_t(blockIdx.y) * a.groups * a.cols;
  p[j] = s0;
  if (a.groups == 2) p[a.cols + j] = s1;
}

// One group, 16-byte rows (cols and ld multiples of Vec<T>::kN, x 16-byte aligned):
// each thread sums kN adjacent columns over kColChunk rows with one 16-byte load per
// row (the bias gradients of the dense layers; colsum_kernel loads 2 bytes at a time).
template <class T>
__global__ void __launch_bounds__(kColVecThreads) colsum_vec_kernel(ColSumArgs a) {
  constexpr int kN = Vec<T>::kN;
  const int64_t j = (int64_t(blockIdx.x) * kColVecThreads + threadIdx.x) * kN;
  if (j >= a.cols) return;
  const int64_t r0 = int64_t(blockIdx.y) * kColChunk;
  const int64_t r1 = r0 + kColChunk < a.rows ? r0 + kColChunk : a.rows;
  const T* x = static_cast<const T*>(a.x) + j;
  float s[kN] = {};
  for (int64_t r = r0; r < r1; ++r) {
    const Vec<T> v = load_vec(x + r * a.ld);
#pragma unroll
    for (int e = 0; e < kN; ++e)
      s[e] += to_f(v.e[e]);
  }
  float* p = a.partials + int64_t(blockIdx.y) * a.cols + j;
#pragma unroll
  for (int e = 0; e < kN; ++e)
    p[e] = s[e];
}

template <class T>
__global__ void scatter_kernel(const int32_t* __restrict__ ids, const T* __restrict__ dz,
                               int64_t rows, int c, float* __restrict__ dword) {
  const int64_t n = rows * c;
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t r = i / c;
    atomicAdd(dword + int64_t(ids[r]) * c + (i - r * c), to_f(dz[i]));
  }
}

void check_ln_width(int c) {
  if (c % 256 != 0 || c > 1024) throw Error("LayerNorm kernels need C % 256 == 0, C <= 1024");
}

}  // namespace

void reduce_partials(const float* partials, int64_t count, int64_t width, float* out,
                     bool accumulate, cudaStream_t s) {
  reduce_partials_kernel<<<static_cast<unsigned>((width + kWarp - 1) / kWarp),
                           dim3(kWarp, kReduceLanes), 0, s>>>(partials, count, width, out,
                                                              accumulate);
  GPUVS_CUDA_CHECK_LAUNCH();
}

void layer_norm_forward(const LnForwardArgs& a, cudaStream_t s) {
  check_ln_width(a.c);
  const unsigned blocks = static_cast<unsigned>((a.rows + kLnWarps - 1) / kLnWarps);
  GPUVS_DISPATCH_DTYPE(a.dtype, { ln_forward_kernel<T><<<blocks, kLnThreads, 0, s>>>(a); });
  GPUVS_CUDA_CHECK_LAUNCH();
}

void embedding_forward(const EmbeddingArgs& a, cudaStream_t s) {
  check_ln_width(a.c);
  const unsigned blocks =
      static_cast<unsigned>((int64_t(a.batch) * a.seq + kLnWarps - 1) / kLnWarps);
  GPUVS_DISPATCH_DTYPE(a.dtype, { embedding_kernel<T><<<blocks, kLnThreads, 0, s>>>(a); });
  GPUVS_CUDA_CHECK_LAUNCH();
}

int64_t ln_partial_floats(int64_t rows, int c) {
  return int64_t(ln_bwd_blocks(rows)) * 2 * c;
}

void layer_norm_backward(const LnBackwardArgs& a, cudaStream_t s) {
  check_ln_width(a.c);
  const int blocks = ln_bwd_blocks(a.rows);
  GPUVS_DISPATCH_DTYPE(a.dtype, { ln_backward_kernel<T><<<blocks, kLnThreads, 0, s>>>(a); });
  GPUVS_CUDA_CHECK_LAUNCH();
  reduce_partials(a.partials, blocks, 2 * int64_t(a.c), a.dgamma, a.accumulate, s);
}

int64_t colsum_partial_floats(int64_t rows, int64_t cols, int groups) {
  return (rows + kColChunk - 1) / kColChunk * groups * cols;
}

void column_sum(const ColSumArgs& args, cudaStream_t s) {
  ColSumArgs a = args;
  if (a.ld == 0) a.ld = a.cols;
  if (a.groups < 1 || a.groups > 2) throw Error("column_sum: 1 or 2 groups");
  const int64_t chunks = (a.rows + kColChunk - 1) / kColChunk;
  const int vec = a.dtype == DType::kF32 ? 4 : 8;  // Vec<T>::kN
  const bool vectorised = a.groups == 1 && !a.group && a.cols % vec == 0 && a.ld % vec == 0 &&
                          reinterpret_cast<uintptr_t>(a.x) % 16 == 0;
  if (vectorised) {
    const int64_t per_block = int64_t(kColVecThreads) * vec;
    const dim3 grid(static_cast<unsigned>((a.cols + per_block - 1) / per_block),
                    static_cast<unsigned>(chunks));
    GPUVS_DISPATCH_DTYPE(a.dtype, { colsum_vec_kernel<T><<<grid, kColVecThreads, 0, s>>>(a); });
  } else {
    const dim3 grid(static_cast<unsigned>((a.cols + kColThreads - 1) / kColThreads),
                    static_cast<unsigned>(chunks));
    GPUVS_DISPATCH_DTYPE(a.dtype, { colsum_kernel<T><<<grid, kColThreads, 0, s>>>(a); });
  }
  GPUVS_CUDA_CHECK_LAUNCH();
  reduce_partials(a.partials, chunks, a.groups * a.cols, a.out, a.accumulate, s);
}

void embedding_scatter(const int32_t* ids, const void* dz, int64_t rows, int c, DType dtype,
                       float* dword, cudaStream_t s) {
  GPUVS_DISPATCH_DTYPE(dtype, {
    scatter_kernel<T>
        <<<grid_for(rows * c, 256), 256, 0, s>>>(ids, static_cast<const T*>(dz), rows, c, dword);
  });
  GPUVS_CUDA_CHECK_LAUNCH();
}

}  // namespace gpuvs::models::bert
