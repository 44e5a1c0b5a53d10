// Kernels of batch_norm.h. One reduction layout serves forward statistics and the
// backward sums: a block of 256 threads covers `tpr` 16-byte channel vectors per
// row and 256/tpr rows at a time, grid (channel tiles, row chunks).
#include <algorithm>

#include "core/error.h"
#include "gpu/check.h"
#include "gpu/reduce.cuh"
#include "models/layers/batch_norm.h"

namespace gpuvs::models {

namespace {

constexpr int kThreads = 256;
constexpr int kTargetBlocks = 1024;  // enough to fill an H100/H200 (132 SMs) several times

// Blocks of the elementwise (apply) kernels: at most 16 per SM of an H100/H200, and a
// multiple of C / (kThreads x vec) so that the grid stride is a multiple of C: each
// thread then stays on the same channels for all its vectors and loads their
// coefficients once.
int elementwise_blocks(int64_t nvec, int c, int vec) {
  const int64_t per_c = std::max<int64_t>(1, c / (int64_t(kThreads) * vec));
  int64_t blocks = std::min<int64_t>((nvec + kThreads - 1) / kThreads, 132 * 16);
  blocks = (blocks + per_c - 1) / per_c * per_c;
  return static_cast<int>(blocks);
}

struct ReduceGrid {
  int tpr;     // threads across channels per row
  int rpb;     // rows per block pass
  int tiles;   // blocks across channels
  int chunks;  // blocks across rows
};

ReduceGrid reduce_grid(const BnShape& s) {
  const int vec = dtype_vec(s.dtype);
  const int groups = s.c / vec;
  ReduceGrid g{};
  g.tpr = std::min(groups, kThreads);
  g.rpb = kThreads / g.tpr;
  g.tiles = groups / g.tpr;
  const int64_t max_chunks = (s.m + g.rpb - 1) / g.rpb;
  g.chunks = static_cast<int>(std::min<int64_t>(max_chunks, std::max(1, kTargetBlocks / g.tiles)));
  return g;
}

// Where backward takes the ReLU mask from: none (no ReLU), the output y (y > 0, the
// layers with a residual add), or x again (x*scale + shift > 0 with the forward's
// scale/shift, computed by the same fmaf: one tensor fewer to read).
enum class Mask { kNone, kFromY, kFromX };

// Sums over rows, two quantities per channel, into partials (chunks, 2, C).
// kBackward=false: x and x*x. kBackward=true: g and g*(x - mean), g = dy through the
// ReLU mask.
template <class T, bool kBackward, Mask kMask>
__global__ void __launch_bounds__(kThreads)
    reduce_kernel(const T* __restrict__ x,         // (M, C)
                  const T* __restrict__ dy,        // (M, C) backward only
                  const T* __restrict__ y,         // (M, C) backward, Mask::kFromY only
                  const float* __restrict__ mean,  // (C) backward only
                  const float* __restrict__ ss,    // (2, C) backward, Mask::kFromX only
                  int64_t m, int c, int tpr, int rpb, float* __restrict__ partials) {
  constexpr int V = Vec<T>::kN;
  __shared__ float sh[2][kThreads * V];
  const int lane = threadIdx.x % tpr;
  const int r = threadIdx.x / tpr;
  const int ch0 = (blockIdx.x * tpr + lane) * V;
  const int64_t begin = m * blockIdx.y / gridDim.y;
  const int64_t end = m * (blockIdx.y + 1) / gridDim.y;
  float a[V], b[V], mu[V], sc[V], sf[V];
#pragma unroll
  for (int j = 0; j < V; ++j) {
    a[j] = 0.f;
    b[j] = 0.f;
    mu[j] = kBackward ? mean[ch0 + j] : 0.f;
    sc[j] = kMask == Mask::kFromX ? ss[ch0 + j] : 0.f;
    sf[j] = kMask == Mask::kFromX ? ss[c + ch0 + j] : 0.f;
  }
  for (int64_t row = begin + r; row < end; row += rpb) {
    const int64_t off = row * c + ch0;
    const Vec<T> xv = load_vec(x + off);
    if constexpr (!kBackward) {
#pragma unroll
      for (int j = 0; j < V; ++j) {
        const float v = to_f(xv.e[j]);
        a[j] += v;
        b[j] += v * v;
      }
    } else {
      const Vec<T> dv = load_vec(dy + off);
      Vec<T> yv;
      if constexpr (kMask == Mask::kFromY) yv = load_vec(y + off);
#pragma unroll
      for (int j = 0; j < V; ++j) {
        float g = to_f(dv.e[j]);
        const float xf = to_f(xv.e[j]);
        if constexpr (kMask == Mask::kFromY) g = to_f(yv.e[j]) > 0.f ? g : 0.f;
        if constexpr (kMask == Mask::kFromX) g = fmaf(xf, sc[j], sf[j]) > 0.f ? g : 0.f;
        a[j] += g;
        b[j] += g * (xf - mu[j]);
      }
    }
  }
  const int width = tpr * V;
#pragma unroll
  for (int j = 0; j < V; ++j) {
    sh[0][r * width + lane * V + j] = a[j];
    sh[1][r * width + lane * V + j] = b[j];
  }
  __syncthreads();
  for (int idx = threadIdx.x; idx < width; idx += kThreads) {
    float sa = 0.f, sb = 0.f;
    for (int k = 0; k < rpb; ++k) {
      sa += sh[0][k * width + idx];
      sb += sh[1][k * width + idx];
    }
    const int ch = blockIdx.x * width + idx;
    partials[(int64_t(blockIdx.y) * 2 + 0) * c + ch] = sa;
    partials[(int64_t(blockIdx.y) * 2 + 1) * c + ch] = sb;
  }
}

struct Sums {
  double a, b;
};

struct AddSums {
  __device__ Sums operator()(Sums x, Sums y) const { return {x.a + y.a, x.b + y.b}; }
};

// The two sums of channel ch over the chunks' partials, in double; valid in row
// threadIdx.y == 0. Block (32, 32): 32 channels, 32 lanes over the chunks.
__device__ __forceinline__ Sums sum_partials(const float* partials, int chunks, int c, int ch) {
  __shared__ ColumnScratch<Sums, 32, 32> lanes;
  Sums s{0.0, 0.0};
  if (ch < c) {
    for (int k = threadIdx.y; k < chunks; k += 32) {
      s.a += partials[(int64_t(k) * 2 + 0) * c + ch];
      s.b += partials[(int64_t(k) * 2 + 1) * c + ch];
    }
  }
  return column_reduce<32, 32>(s, threadIdx.y, threadIdx.x, AddSums{}, lanes);
}

__global__ void finalize_forward_kernel(const float* __restrict__ partials, int chunks, int64_t m,
                                        int c, BnForwardArgs a) {
  const int ch = blockIdx.x * 32 + threadIdx.x;
  const Sums sums = sum_partials(partials, chunks, c, ch);  // (sum x, sum x^2)
  if (threadIdx.y != 0 || ch >= c) return;
  const double mean = sums.a / double(m);
  const double var = fmax(sums.b / double(m) - mean * mean, 0.0);
  const float invstd = static_cast<float>(1.0 / sqrt(var + double(a.eps)));
  const float scale = a.gamma[ch] * invstd;
  a.save_mean[ch] = static_cast<float>(mean);
  a.save_invstd[ch] = invstd;
  a.scale_shift[ch] = scale;
  a.scale_shift[c + ch] = a.beta[ch] - static_cast<float>(mean) * scale;
  const float unbiased = m > 1 ? static_cast<float>(var * double(m) / double(m - 1)) : 0.f;
  a.running_mean[ch] = (1.f - a.momentum) * a.running_mean[ch] + a.momentum * float(mean);
  a.running_var[ch] = (1.f - a.momentum) * a.running_var[ch] + a.momentum * unbiased;
}

__global__ void scale_from_running_kernel(int c, BnForwardArgs a) {
  const int ch = blockIdx.x * blockDim.x + threadIdx.x;
  if (ch >= c) return;
  const float scale = a.gamma[ch] * rsqrtf(a.running_var[ch] + a.eps);
  a.scale_shift[ch] = scale;
  a.scale_shift[c + ch] = a.beta[ch] - a.running_mean[ch] * scale;
}

template <class T>
__global__ void finalize_backward_kernel(const float* __restrict__ partials, int chunks, int64_t m,
                                         int c, BnBackwardArgs a) {
  const int ch = blockIdx.x * 32 + threadIdx.x;
  const Sums sums = sum_partials(partials, chunks, c, ch);  // (sum g, sum g (x - mean))
  if (threadIdx.y != 0 || ch >= c) return;
  const float invstd = a.save_invstd[ch];
  const float dbeta = static_cast<float>(sums.a);
  const float dgamma = static_cast<float>(sums.b) * invstd;
  T* dg = static_cast<T*>(a.dgamma);
  T* db = static_cast<T*>(a.dbeta);
  dg[ch] = from_f<T>(a.accumulate ? to_f(dg[ch]) + dgamma : dgamma);
  db[ch] = from_f<T>(a.accumulate ? to_f(db[ch]) + dbeta : dbeta);
  const float k1 = a.gamma[ch] * invstd;
  const float k2 = -k1 * invstd * dgamma / float(m);
  a.coef[ch] = k1;
  a.coef[c + ch] = k2;
  a.coef[2 * c + ch] = -k1 * dbeta / float(m) - k2 * a.save_mean[ch];
}

// Grid-stride over 16-byte vectors, two per iteration (both loaded before either is
// used); scale/shift (2, C) fp32, loaded once per thread (elementwise_blocks keeps a
// thread on the same channels).
template <class T, bool kRelu, bool kResidual>
__global__ void __launch_bounds__(kThreads)
    apply_forward_kernel(const T* __restrict__ x, const T* __restrict__ res,
                         const float* __restrict__ ss, T* __restrict__ y, int64_t nvec, int c) {
  constexpr int V = Vec<T>::kN;
  const int64_t stride = int64_t(gridDim.x) * blockDim.x;
  int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x;
  if (i >= nvec) return;
  const int ch0 = static_cast<int>((i * V) & (c - 1));  // C a power of two
  float sc[V], sf[V];
#pragma unroll
  for (int j = 0; j < V; ++j) {
    sc[j] = ss[ch0 + j];
    sf[j] = ss[c + ch0 + j];
  }
  const auto apply = [&](const Vec<T>& xv, const Vec<T>& rv) {
    Vec<T> out;
#pragma unroll
    for (int j = 0; j < V; ++j) {
      float v = fmaf(to_f(xv.e[j]), sc[j], sf[j]);  // as Mask::kFromX
      if constexpr (kResidual) v += to_f(rv.e[j]);
      if constexpr (kRelu) v = fmaxf(v, 0.f);
      out.e[j] = from_f<T>(v);
    }
    return out;
  };
  for (; i + stride < nvec; i += 2 * stride) {
    const Vec<T> x0 = load_vec(x + i * V), x1 = load_vec(x + (i + stride) * V);
    Vec<T> r0, r1;
    if constexpr (kResidual) {
      r0 = load_vec(res + i * V);
      r1 = load_vec(res + (i + stride) * V);
    }
    store_vec(y + i * V, apply(x0, r0));
    store_vec(y + (i + stride) * V, apply(x1, r1));
  }
  if (i < nvec) {
    Vec<T> r0;
    if constexpr (kResidual) r0 = load_vec(res + i * V);
    store_vec(y + i * V, apply(load_vec(x + i * V), r0));
  }
}

// dx = k1*g + k2*x + k3 with g = dy through the ReLU mask; g also to g_out. Two
// vectors per iteration and the coefficients in registers, as the forward.
template <class T, Mask kMask, bool kGOut>
__global__ void __launch_bounds__(kThreads)
    apply_backward_kernel(const T* dy, const T* __restrict__ y, const T* __restrict__ x,
                          const float* __restrict__ ss, const float* __restrict__ coef, T* dx,
                          T* __restrict__ g_out, int64_t nvec, int c) {
  constexpr int V = Vec<T>::kN;
  const int64_t stride = int64_t(gridDim.x) * blockDim.x;
  int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x;
  if (i >= nvec) return;
  const int ch0 = static_cast<int>((i * V) & (c - 1));  // C a power of two
  float k1[V], k2[V], k3[V], sc[V], sf[V];
#pragma unroll
  for (int j = 0; j < V; ++j) {
    k1[j] = coef[ch0 + j];
    k2[j] = coef[c + ch0 + j];
    k3[j] = coef[2 * c + ch0 + j];
    sc[j] = kMask == Mask::kFromX ? ss[ch0 + j] : 0.f;
    sf[j] = kMask == Mask::kFromX ? ss[c + ch0 + j] : 0.f;
  }
  struct In {
    Vec<T> d, x, y;
  };
  const auto load = [&](int64_t k) {
    In in;
    in.d = load_vec(dy + k * V);
    in.x = load_vec(x + k * V);
    if constexpr (kMask == Mask::kFromY) in.y = load_vec(y + k * V);
    return in;
  };
  const auto apply = [&](int64_t k, const In& in) {
    Vec<T> out, gv;
#pragma unroll
    for (int j = 0; j < V; ++j) {
      float g = to_f(in.d.e[j]);
      const float xf = to_f(in.x.e[j]);
      if constexpr (kMask == Mask::kFromY) g = to_f(in.y.e[j]) > 0.f ? g : 0.f;
      if constexpr (kMask == Mask::kFromX) g = fmaf(xf, sc[j], sf[j]) > 0.f ? g : 0.f;
      if constexpr (kGOut) gv.e[j] = from_f<T>(g);
      out.e[j] = from_f<T>(k1[j] * g + k2[j] * xf + k3[j]);
    }
    store_vec(dx + k * V, out);
    if constexpr (kGOut) store_vec(g_out + k * V, gv);
  };
  for (; i + stride < nvec; i += 2 * stride) {
    const In a = load(i), b = load(i + stride);
    apply(i, a);
    apply(i + stride, b);
  }
  if (i < nvec) apply(i, load(i));
}

template <class T, Mask kMask>
void launch_backward(const BnShape& s, const BnBackwardArgs& a, cudaStream_t stream) {
  const int64_t nvec = s.m * s.c / dtype_vec(s.dtype);
  const T* x = static_cast<const T*>(a.x);
  const T* dy = static_cast<const T*>(a.dy);
  const T* y = static_cast<const T*>(a.y);
  const ReduceGrid g = reduce_grid(s);
  reduce_kernel<T, true, kMask><<<dim3(g.tiles, g.chunks), kThreads, 0, stream>>>(
      x, dy, y, a.save_mean, a.scale_shift, s.m, s.c, g.tpr, g.rpb, a.partials);
  GPUVS_CUDA_CHECK_LAUNCH();
  finalize_backward_kernel<T>
      <<<(s.c + 31) / 32, dim3(32, 32), 0, stream>>>(a.partials, g.chunks, s.m, s.c, a);
  GPUVS_CUDA_CHECK_LAUNCH();
  T* dx = static_cast<T*>(a.dx);
  T* g_out = static_cast<T*>(a.g_out);
  const int blocks = elementwise_blocks(nvec, s.c, dtype_vec(s.dtype));
  if (g_out)
    apply_backward_kernel<T, kMask, true>
        <<<blocks, kThreads, 0, stream>>>(dy, y, x, a.scale_shift, a.coef, dx, g_out, nvec, s.c);
  else
    apply_backward_kernel<T, kMask, false>
        <<<blocks, kThreads, 0, stream>>>(dy, y, x, a.scale_shift, a.coef, dx, g_out, nvec, s.c);
  GPUVS_CUDA_CHECK_LAUNCH();
}

}  // namespace

int64_t bn_partials_floats(const BnShape& s) {
  const ReduceGrid g = reduce_grid(s);
  return int64_t(g.chunks) * 2 * s.c;
}

void check_shape(const BnShape& s) {
  if (s.c < 8 || (s.c & (s.c - 1)) != 0 || s.m < 1)
    throw Error("batch norm: C must be a power of two >= 8 and M >= 1");
}

void bn_forward(const BnShape& s, const BnForwardArgs& a, cudaStream_t stream) {
  check_shape(s);
  const int64_t nvec = s.m * s.c / dtype_vec(s.dtype);
  GPUVS_DISPATCH_DTYPE(s.dtype, {
    const T* x = static_cast<const T*>(a.x);
    if (a.train) {
      const ReduceGrid g = reduce_grid(s);
      reduce_kernel<T, false, Mask::kNone><<<dim3(g.tiles, g.chunks), kThreads, 0, stream>>>(
          x, nullptr, nullptr, nullptr, nullptr, s.m, s.c, g.tpr, g.rpb, a.partials);
      GPUVS_CUDA_CHECK_LAUNCH();
      finalize_forward_kernel<<<(s.c + 31) / 32, dim3(32, 32), 0, stream>>>(a.partials, g.chunks,
                                                                            s.m, s.c, a);
      GPUVS_CUDA_CHECK_LAUNCH();
    } else {
      scale_from_running_kernel<<<(s.c + 255) / 256, 256, 0, stream>>>(s.c, a);
      GPUVS_CUDA_CHECK_LAUNCH();
    }
    const T* res = static_cast<const T*>(a.residual);
    T* y = static_cast<T*>(a.y);
    const int blocks = elementwise_blocks(nvec, s.c, dtype_vec(s.dtype));
    if (a.relu && res)
      apply_forward_kernel<T, true, true>
          <<<blocks, kThreads, 0, stream>>>(x, res, a.scale_shift, y, nvec, s.c);
    else if (a.relu)
      apply_forward_kernel<T, true, false>
          <<<blocks, kThreads, 0, stream>>>(x, res, a.scale_shift, y, nvec, s.c);
    else if (res)
      apply_forward_kernel<T, false, true>
          <<<blocks, kThreads, 0, stream>>>(x, res, a.scale_shift, y, nvec, s.c);
    else
      apply_forward_kernel<T, false, false>
          <<<blocks, kThreads, 0, stream>>>(x, res, a.scale_shift, y, nvec, s.c);
    GPUVS_CUDA_CHECK_LAUNCH();
  });
}

void bn_backward(const BnShape& s, const BnBackwardArgs& a, cudaStream_t stream) {
  check_shape(s);
  if (a.relu && !a.y && !a.scale_shift)
    throw Error("batch norm backward: a ReLU mask needs y or the forward's scale/shift");
  GPUVS_DISPATCH_DTYPE(s.dtype, {
    if (!a.relu)
      launch_backward<T, Mask::kNone>(s, a, stream);
    else if (a.y)
      launch_backward<T, Mask::kFromY>(s, a, stream);
    else
      launch_backward<T, Mask::kFromX>(s, a, stream);
  });
}

}  // namespace gpuvs::models
