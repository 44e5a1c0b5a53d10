// Kernels of pooling.h: one thread per 16-byte channel vector of one pixel.
#include <algorithm>
#include <type_traits>

#include "core/error.h"
#include "gpu/check.h"
#include "models/layers/pooling.h"

namespace gpuvs::models {

namespace {

constexpr int kThreads = 256;

// V argmax bytes as one 4- or 8-byte access (o is a multiple of V).
template <int V>
struct Bytes {
  using Raw = std::conditional_t<V == 8, uint2, uint32_t>;
  union {
    Raw raw;
    uint8_t b[V];
  };
};

int blocks_for(int64_t n) {
  if (n >= (int64_t(1) << 32)) throw Error("pooling: tensor too large for 32-bit indexing");
  return static_cast<int>(std::min<int64_t>((n + kThreads - 1) / kThreads, 132 * 32));
}

template <class T>
__global__ void maxpool_forward_kernel(const T* __restrict__ x, T* __restrict__ y,
                                       uint8_t* __restrict__ argmax, PoolShape s, int p, int q) {
  constexpr int V = Vec<T>::kN;
  const uint32_t cv = s.c / V;
  const int64_t total = int64_t(s.n) * p * q * cv;
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < total;
       i += int64_t(gridDim.x) * blockDim.x) {
    const uint32_t u = static_cast<uint32_t>(i);  // total < 2^32 (checked on the host)
    const int c0 = static_cast<int>(u % cv) * V;
    uint32_t pix = u / cv;
    const int ow = static_cast<int>(pix % q);
    pix /= q;
    const int oh = static_cast<int>(pix % p);
    const int n = static_cast<int>(pix / p);
    float best[V];
    uint8_t pos[V];
#pragma unroll
    for (int j = 0; j < V; ++j) {
      best[j] = -INFINITY;
      pos[j] = 0;
    }
    for (int kh = 0; kh < 3; ++kh) {
      const int ih = 2 * oh - 1 + kh;
      if (ih < 0 || ih >= s.h) continue;
      for (int kw = 0; kw < 3; ++kw) {
        const int iw = 2 * ow - 1 + kw;
        if (iw < 0 || iw >= s.w) continue;
        const Vec<T> v = load_vec(x + ((int64_t(n) * s.h + ih) * s.w + iw) * s.c + c0);
#pragma unroll
        for (int j = 0; j < V; ++j) {
          const float f = to_f(v.e[j]);
          if (f > best[j] || (f != f && best[j] == best[j])) {  // NaN wins, like PyTorch
            best[j] = f;
            pos[j] = static_cast<uint8_t>(kh * 3 + kw);
          }
        }
      }
    }
    Vec<T> out;
#pragma unroll
    for (int j = 0; j < V; ++j)
      out.e[j] = from_f<T>(best[j]);
    const int64_t o = ((int64_t(n) * p + oh) * q + ow) * s.c + c0;
    store_vec(y + o, out);
    if (argmax) {
      Bytes<V> am;
#pragma unroll
      for (int j = 0; j < V; ++j)
        am.b[j] = pos[j];
      *reinterpret_cast<typename Bytes<V>::Raw*>(argmax + o) = am.raw;
    }
  }
}

template <class T>
__global__ void maxpool_backward_kernel(const T* __restrict__ dy,
                                        const uint8_t* __restrict__ argmax, T* __restrict__ dx,
                                        PoolShape s, int p, int q) {
  constexpr int V = Vec<T>::kN;
  const uint32_t cv = s.c / V;
  const int64_t total = int64_t(s.n) * s.h * s.w * cv;
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < total;
       i += int64_t(gridDim.x) * blockDim.x) {
    const uint32_t u = static_cast<uint32_t>(i);  // total < 2^32 (checked on the host)
    const int c0 = static_cast<int>(u % cv) * V;
    uint32_t pix = u / cv;
    const int iw = static_cast<int>(pix % s.w);
    pix /= s.w;
    const int ih = static_cast<int>(pix % s.h);
    const int n = static_cast<int>(pix / s.h);
    float acc[V];
#pragma unroll
    for (int j = 0; j < V; ++j)
      acc[j] = 0.f;
    // Windows oh with 2*oh-1 <= ih <= 2*oh+1.
    for (int oh = ih / 2; oh <= min((ih + 1) / 2, p - 1); ++oh) {
      const int kh = ih - 2 * oh + 1;
      for (int ow = iw / 2; ow <= min((iw + 1) / 2, q - 1); ++ow) {
        const int kw = iw - 2 * ow + 1;
        const int64_t o = ((int64_t(n) * p + oh) * q + ow) * s.c + c0;
        const Vec<T> g = load_vec(dy + o);
        const uint8_t here = static_cast<uint8_t>(kh * 3 + kw);
        Bytes<V> am;
        am.raw = *reinterpret_cast<const typename Bytes<V>::Raw*>(argmax + o);
#pragma unroll
        for (int j = 0; j < V; ++j)
          if (am.b[j] == here) acc[j] += to_f(g.e[j]);
      }
    }
    Vec<T> out;
#pragma unroll
    for (int j = 0; j < V; ++j)
      out.e[j] = from_f<T>(acc[j]);
    store_vec(dx + i * V, out);
  }
}

template <class T>
__global__ void avgpool_forward_kernel(const T* __restrict__ x, T* __restrict__ y, PoolShape s) {
  constexpr int V = Vec<T>::kN;
  const uint32_t cv = s.c / V;
  const int hw = s.h * s.w;
  const int64_t total = int64_t(s.n) * cv;
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < total;
       i += int64_t(gridDim.x) * blockDim.x) {
    const uint32_t u = static_cast<uint32_t>(i);  // total < 2^32 (checked on the host)
    const int c0 = static_cast<int>(u % cv) * V;
    const int64_t n = u / cv;
    float acc[V];
#pragma unroll
    for (int j = 0; j < V; ++j)
      acc[j] = 0.f;
    for (int k = 0; k < hw; ++k) {
      const Vec<T> v = load_vec(x + (n * hw + k) * s.c + c0);
#pragma unroll
      for (int j = 0; j < V; ++j)
        acc[j] += to_f(v.e[j]);
    }
    Vec<T> out;
#pragma unroll
    for (int j = 0; j < V; ++j)
      out.e[j] = from_f<T>(acc[j] / float(hw));
    store_vec(y + n * s.c + c0, out);
  }
}

template <class T>
__global__ void avgpool_backward_kernel(const T* __restrict__ dy, T* __restrict__ dx, PoolShape s) {
  constexpr int V = Vec<T>::kN;
  const uint32_t cv = s.c / V;
  const int hw = s.h * s.w;
  const int64_t total = int64_t(s.n) * hw * cv;
  const float inv = 1.f / float(hw);
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < total;
       i += int64_t(gridDim.x) * blockDim.x) {
    const uint32_t u = static_cast<uint32_t>(i);  // total < 2^32 (checked on the host)
    const int c0 = static_cast<int>(u % cv) * V;
    const int64_t n = u / (uint32_t(hw) * cv);
    const Vec<T> g = load_vec(dy + n * s.c + c0);
    Vec<T> out;
#pragma unroll
    for (int j = 0; j < V; ++j)
      out.e[j] = from_f<T>(to_f(g.e[j]) * inv);
    store_vec(dx + i * V, out);
  }
}

}  // namespace

void maxpool_forward(const PoolShape& s, const void* x, void* y, uint8_t* argmax,
                     cudaStream_t stream) {
  const int p = maxpool_out(s.h), q = maxpool_out(s.w);
  GPUVS_DISPATCH_DTYPE(s.dtype, {
    const int64_t total = int64_t(s.n) * p * q * (s.c / Vec<T>::kN);
    maxpool_forward_kernel<T><<<blocks_for(total), kThreads, 0, stream>>>(
        static_cast<const T*>(x), static_cast<T*>(y), argmax, s, p, q);
  });
  GPUVS_CUDA_CHECK_LAUNCH();
}

void maxpool_backward(const PoolShape& s, const void* dy, const uint8_t* argmax, void* dx,
                      cudaStream_t stream) {
  const int p = maxpool_out(s.h), q = maxpool_out(s.w);
  GPUVS_DISPATCH_DTYPE(s.dtype, {
    const int64_t total = int64_t(s.n) * s.h * s.w * (s.c / Vec<T>::kN);
    maxpool_backward_kernel<T><<<blocks_for(total), kThreads, 0, stream>>>(
        static_cast<const T*>(dy), argmax, static_cast<T*>(dx), s, p, q);
  });
  GPUVS_CUDA_CHECK_LAUNCH();
}

void avgpool_forward(const PoolShape& s, const void* x, void* y, cudaStream_t stream) {
  GPUVS_DISPATCH_DTYPE(s.dtype, {
    const int64_t total = int64_t(s.n) * (s.c / Vec<T>::kN);
    avgpool_forward_kernel<T><<<blocks_for(total), kThreads, 0, stream>>>(static_cast<const T*>(x),
                                                                          static_cast<T*>(y), s);
  });
  GPUVS_CUDA_CHECK_LAUNCH();
}

void avgpool_backward(const PoolShape& s, const void* dy, void* dx, cudaStream_t stream) {
  GPUVS_DISPATCH_DTYPE(s.dtype, {
    const int64_t total = int64_t(s.n) * s.h * s.w * (s.c / Vec<T>::kN);
    avgpool_backward_kernel<T><<<blocks_for(total), kThreads, 0, stream>>>(
        static_cast<const T*>(dy), static_cast<T*>(dx), s);
  });
  GPUVS_CUDA_CHECK_LAUNCH();
}

}  // namespace gpuvs::models
