// Elementwise activations, the loss, synthetic inputs, initialisation and AdamW
// (kernels.h).
#include <cmath>

#include "gpu/check.h"
#include "gpu/device.h"
#include "models/bert/device_util.cuh"
#include "models/bert/kernels.h"

namespace gpuvs::models::bert {

namespace {

constexpr int kThreads = 256;
// n % kN == 0, pointers 16-byte aligned; in place (y == x) allowed.
template <class T>
__global__ void gelu_forward_kernel(const T* x, T* y, int64_t n) {
  constexpr int kN = Vec<T>::kN;
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n / kN;
       i += int64_t(gridDim.x) * blockDim.x) {
    const Vec<T> v = load_vec(x + i * kN);
    Vec<T> o;
#pragma unroll
    for (int e = 0; e < kN; ++e)
      o.e[e] = from_f<T>(gelu(to_f(v.e[e])));
    store_vec(y + i * kN, o);
  }
}

template <class T>
__global__ void gelu_backward_kernel(const T* dy, const T* __restrict__ x, T* dx, int64_t n) {
  constexpr int kN = Vec<T>::kN;
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n / kN;
       i += int64_t(gridDim.x) * blockDim.x) {
    const Vec<T> d = load_vec(dy + i * kN), v = load_vec(x + i * kN);
    Vec<T> o;
#pragma unroll
    for (int e = 0; e < kN; ++e)
      o.e[e] = from_f<T>(to_f(d.e[e]) * gelu_grad(to_f(v.e[e])));
    store_vec(dx + i * kN, o);
  }
}

template <class T>
__global__ void tanh_kernel(const T* x, T* y, int64_t n) {
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x)
    y[i] = from_f<T>(tanhf(to_f(x[i])));
}

template <class T>
__global__ void tanh_backward_kernel(const T* dy, const T* y, T* dx, int64_t n) {
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x) {
    const float t = to_f(y[i]);
    dx[i] = from_f<T>(to_f(dy[i]) * (1.0f - t * t));
  }
}

template <class T>
__global__ void add_bias_kernel(AddBiasArgs a) {
  T* y = static_cast<T*>(a.y);
  const T* b = static_cast<const T*>(a.bias);
  const int64_t n = a.rows * a.cols;
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t r = i / a.cols, c = i - r * a.cols;
    y[r * a.ld + c] = from_f<T>(to_f(y[r * a.ld + c]) + to_f(b[c]));
  }
}

// Block-wide sum (blockDim.x == kThreads), fixed order; every thread gets it.
__device__ float block_sum(float v) {
  __shared__ BlockScratch<float, kThreads> scratch;
  return block_reduce_all<kThreads, ShuffleTree::kButterfly>(v, SumOp{}, scratch);
}

struct MaxSum {
  float m, s;
};

__device__ __forceinline__ MaxSum combine(MaxSum a, MaxSum b) {
  if (a.m == -INFINITY) return b;
  if (b.m == -INFINITY) return a;
  const float m = fmaxf(a.m, b.m);
  return {m, a.s * __expf(a.m - m) + b.s * __expf(b.m - m)};
}

struct Combine {
  __device__ MaxSum operator()(MaxSum a, MaxSum b) const { return combine(a, b); }
};

// Block-wide (max, sum of exp) (blockDim.x == kThreads), fixed order; every thread
// gets it.
__device__ MaxSum block_max_sum(MaxSum v) {
  __shared__ BlockScratch<MaxSum, kThreads> scratch;
  return block_reduce_all<kThreads, ShuffleTree::kButterfly>(v, Combine{}, scratch);
}

// One row's logits at x[0, cols), 16 bytes at a time where the row allows it (ld a
// multiple of the vector width and the row 16-byte aligned: the logits of an LM head
// over 128256 tokens are 250 KB a row), one at a time otherwise.
template <class T>
struct RowVector {
  static constexpr int kWidth = 16 / sizeof(T);
  static __device__ bool fits(const void* row, int ld) {
    return ld % kWidth == 0 && reinterpret_cast<uintptr_t>(row) % 16 == 0;
  }
};

// The (max, sum of exp) of x[0, cols) this thread sees: per vector the local maximum,
// then one combine.
template <class T>
__device__ MaxSum thread_max_sum(const T* x, int cols, bool vec) {
  MaxSum ms{-INFINITY, 0.0f};
  if (!vec) {
    for (int j = threadIdx.x; j < cols; j += kThreads)
      ms = combine(ms, MaxSum{to_f(x[j]), 1.0f});
    return ms;
  }
  constexpr int V = RowVector<T>::kWidth;
  for (int j0 = threadIdx.x * V; j0 < cols; j0 += kThreads * V) {
    const uint4 raw = *reinterpret_cast<const uint4*>(x + j0);
    const T* v = reinterpret_cast<const T*>(&raw);
    const int n = min(V, cols - j0);
    float m = -INFINITY;
    for (int k = 0; k < n; ++k)
      m = fmaxf(m, to_f(v[k]));
    float sum = 0.0f;
    for (int k = 0; k < n; ++k)
      sum += __expf(to_f(v[k]) - m);
    ms = combine(ms, MaxSum{m, sum});
  }
  return ms;
}

// One block per row.
template <class T>
__global__ void __launch_bounds__(kThreads) xent_kernel(XentArgs a) {
  const int64_t row = blockIdx.x;
  const int label = a.labels[row];
  const T* x = static_cast<const T*>(a.logits) + row * a.ld;
  T* d = a.dlogits ? static_cast<T*>(a.dlogits) + row * a.ld : nullptr;
  const bool vec = RowVector<T>::fits(x, a.ld) && (!d || RowVector<T>::fits(d, a.ld));
  if (label < 0 || label >= a.cols) {  // -100: ignored
    if (threadIdx.x == 0) a.row_loss[row] = 0.0f;
    if (d)
      for (int j = threadIdx.x; j < a.ld; j += kThreads)
        d[j] = from_f<T>(0.0f);
    return;
  }
  // The label's logit is read before the reduction's barrier: with dlogits == logits
  // (in place) other threads overwrite the row after it.
  const float target = threadIdx.x == 0 ? to_f(x[label]) : 0.0f;
  const MaxSum ms = block_max_sum(thread_max_sum(x, a.cols, vec));
  const float lse = ms.m + logf(ms.s);
  if (threadIdx.x == 0) a.row_loss[row] = lse - target;
  if (!d) return;
  const float scale = a.scaler ? a.scaler->scale : 1.0f;
  const float coef = scale / fmaxf(*a.count, 1.0f);
  auto grad = [&](int j, float xj) {
    return j < a.cols ? (__expf(xj - lse) - (j == label ? 1.0f : 0.0f)) * coef : 0.0f;
  };
  if (!vec) {
    for (int j = threadIdx.x; j < a.ld; j += kThreads)
      d[j] = from_f<T>(grad(j, j < a.cols ? to_f(x[j]) : 0.0f));
    return;
  }
  constexpr int V = RowVector<T>::kWidth;
  for (int j0 = threadIdx.x * V; j0 < a.ld; j0 += kThreads * V) {
    const uint4 raw = *reinterpret_cast<const uint4*>(x + j0);
    const T* v = reinterpret_cast<const T*>(&raw);
    uint4 out;
    T* o = reinterpret_cast<T*>(&out);
#pragma unroll
    for (int k = 0; k < V; ++k)
      o[k] = from_f<T>(grad(j0 + k, to_f(v[k])));
    *reinterpret_cast<uint4*>(d + j0) = out;
  }
}

__global__ void count_kernel(const int32_t* labels, int64_t n, float* count) {
  float c = 0.0f;
  for (int64_t i = threadIdx.x; i < n; i += kThreads)
    c += labels[i] >= 0 ? 1.0f : 0.0f;
  c = block_sum(c);
  if (threadIdx.x == 0) *count = c;
}

__global__ void finish_loss_kernel(const float* mlm, int64_t n_mlm, const float* mlm_count,
                                   const float* nsp, int64_t n_nsp, const float* nsp_count,
                                   float* loss) {
  float a = 0.0f, b = 0.0f;
  for (int64_t i = threadIdx.x; i < n_mlm; i += kThreads)
    a += mlm[i];
  for (int64_t i = threadIdx.x; i < n_nsp; i += kThreads)
    b += nsp[i];
  a = block_sum(a) / fmaxf(*mlm_count, 1.0f);
  b = block_sum(b) / fmaxf(*nsp_count, 1.0f);
  if (threadIdx.x == 0) {
    loss[0] = a + b;
    loss[1] = a;
    loss[2] = b;
  }
}

__device__ __forceinline__ uint64_t hash3(uint64_t seed, uint64_t salt, uint64_t i) {
  return mix64(mix64(seed * 0x9E3779B97F4A7C15ull + salt) + i * 0xD1B54A32D192ED03ull);
}

__device__ __forceinline__ float unit(uint64_t h) {  // [0, 1)
  return float(h >> 40) * (1.0f / 16777216.0f);
}

// BERT's special tokens in the uncased vocabulary: [CLS] 101, [SEP] 102, [MASK] 103;
// ordinary word pieces from 999 on.
constexpr int kCls = 101, kSep = 102, kMask = 103, kFirstWord = 999, kVocabSize = 30522;

__global__ void inputs_kernel(InputArgs a) {
  const int64_t n = int64_t(a.batch) * a.seq;
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x) {
    const int t = static_cast<int>(i % a.seq);
    const int half = a.seq / 2;
    const int words = kVocabSize - kFirstWord;
    int id = kFirstWord + static_cast<int>(hash3(a.seed, 1, i) % words);
    int label = -100;
    if (t == 0) {
      id = kCls;
    } else if (t == half - 1 || t == a.seq - 1) {
      id = kSep;
    } else if (unit(hash3(a.seed, 2, i)) < 0.15f) {  // masked LM: 80 % [MASK], 10 % random
      label = id;
      const float u = unit(hash3(a.seed, 3, i));
      if (u < 0.8f)
        id = kMask;
      else if (u < 0.9f)
        id = kFirstWord + static_cast<int>(hash3(a.seed, 4, i) % words);
    }
    a.ids[i] = id;
    a.types[i] = t < half ? 0 : 1;
    a.mask[i] = 1;
    a.labels[i] = label;
    if (t == 0) a.nsp_labels[i / a.seq] = static_cast<int32_t>(hash3(a.seed, 5, i / a.seq) & 1);
  }
}

__global__ void init_normal_kernel(float* dst, int64_t n, float std, uint64_t seed, uint64_t salt) {
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x) {
    const uint64_t h = hash3(seed, salt, i);
    // Box-Muller from two 24-bit uniforms; u1 in (0, 1].
    const float u1 = (float(h >> 40) + 1.0f) * (1.0f / 16777216.0f);
    const float u2 = float((h >> 16) & 0xFFFFFFull) * (1.0f / 16777216.0f);
    dst[i] = std * sqrtf(-2.0f * logf(u1)) * cospif(2.0f * u2);
  }
}

__global__ void fill_kernel(float* dst, int64_t n, float value) {
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x)
    dst[i] = value;
}

template <class T>
__global__ void from_float_kernel(const float* __restrict__ src, T* __restrict__ dst, int64_t n) {
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x)
    dst[i] = from_f<T>(src[i]);
}

template <class T>
__global__ void to_float_kernel(const T* __restrict__ src, float* __restrict__ dst, int64_t n) {
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x)
    dst[i] = to_f(src[i]);
}

// Values of rows x cols (row stride ld) that are NaN or infinite, added into *count.
template <class T>
__global__ void count_nonfinite_kernel(const T* __restrict__ src, int64_t rows, int64_t cols,
                                       int64_t ld, unsigned long long* count) {
  unsigned long long mine = 0;
  const int64_t n = rows * cols;
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x)
    if (!isfinite(to_f(src[(i / cols) * ld + i % cols]))) ++mine;
  if (mine) atomicAdd(count, mine);
}

__global__ void advance_rng_kernel(uint64_t* rng) {
  *rng += 1;
}

__global__ void check_finite_kernel(const float* __restrict__ g, int64_t n, LossScaleState* s) {
  bool bad = false;
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x)
    bad |= !isfinite(g[i]);
  if (__syncthreads_or(bad) && threadIdx.x == 0) s->found_inf = 1;
}

__global__ void adam_count_kernel(LossScaleState* s) {
  if (!s->found_inf) s->adam_step += 1;
}

template <class T>
__global__ void adamw_kernel(AdamWArgs a) {
  if (a.scaler->found_inf) return;
  const float step = float(a.scaler->adam_step);
  const float bc1 = 1.0f - powf(a.beta1, step), bc2 = 1.0f - powf(a.beta2, step);
  const float inv = 1.0f / (a.scaler->scale * float(a.micro_steps));
  const float step_size = a.lr / bc1, inv_sqrt_bc2 = rsqrtf(bc2);
  T* model = static_cast<T*>(a.model);
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < a.n;
       i += int64_t(gridDim.x) * blockDim.x) {
    const float g = a.grads[i] * inv;
    float w = a.master[i];
    if (i < a.n_decay) w *= 1.0f - a.lr * a.weight_decay;
    const float m = a.beta1 * a.m[i] + (1.0f - a.beta1) * g;
    const float v = a.beta2 * a.v[i] + (1.0f - a.beta2) * g * g;
    w -= step_size * m / (sqrtf(v) * inv_sqrt_bc2 + a.eps);
    a.m[i] = m;
    a.v[i] = v;
    a.master[i] = w;
    if (model) model[i] = from_f<T>(w);
  }
}

__global__ void update_loss_scale_kernel(LossScaleState* s) {
  if (s->found_inf) {
    s->scale = fmaxf(s->scale * 0.5f, 1.0f);
    s->good_steps = 0;
  } else if (++s->good_steps >= kLossScaleGrowthInterval) {
    s->scale *= 2.0f;
    s->good_steps = 0;
  }
  s->found_inf = 0;
}

}  // namespace

void gelu_forward(const void* x, void* y, int64_t n, DType dtype, cudaStream_t s) {
  GPUVS_DISPATCH_DTYPE(dtype, {
    gelu_forward_kernel<T><<<grid_for(n / Vec<T>::kN, kThreads), kThreads, 0, s>>>(
        static_cast<const T*>(x), static_cast<T*>(y), n);
  });
  GPUVS_CUDA_CHECK_LAUNCH();
}

void gelu_backward(const void* dy, const void* x, void* dx, int64_t n, DType dtype,
                   cudaStream_t s) {
  GPUVS_DISPATCH_DTYPE(dtype, {
    gelu_backward_kernel<T><<<grid_for(n / Vec<T>::kN, kThreads), kThreads, 0, s>>>(
        static_cast<const T*>(dy), static_cast<const T*>(x), static_cast<T*>(dx), n);
  });
  GPUVS_CUDA_CHECK_LAUNCH();
}

void tanh_forward(const void* x, void* y, int64_t n, DType dtype, cudaStream_t s) {
  GPUVS_DISPATCH_DTYPE(dtype, {
    tanh_kernel<T><<<grid_for(n, kThreads), kThreads, 0, s>>>(static_cast<const T*>(x),
                                                              static_cast<T*>(y), n);
  });
  GPUVS_CUDA_CHECK_LAUNCH();
}

void tanh_backward(const void* dy, const void* y, void* dx, int64_t n, DType dtype,
                   cudaStream_t s) {
  GPUVS_DISPATCH_DTYPE(dtype, {
    tanh_backward_kernel<T><<<grid_for(n, kThreads), kThreads, 0, s>>>(
        static_cast<const T*>(dy), static_cast<const T*>(y), static_cast<T*>(dx), n);
  });
  GPUVS_CUDA_CHECK_LAUNCH();
}

void add_bias(const AddBiasArgs& a, cudaStream_t s) {
  GPUVS_DISPATCH_DTYPE(
      a.dtype, { add_bias_kernel<T><<<grid_for(a.rows * a.cols, kThreads), kThreads, 0, s>>>(a); });
  GPUVS_CUDA_CHECK_LAUNCH();
}

void count_valid_labels(const int32_t* labels, int64_t n, float* count, cudaStream_t s) {
  count_kernel<<<1, kThreads, 0, s>>>(labels, n, count);
  GPUVS_CUDA_CHECK_LAUNCH();
}

void softmax_xent(const XentArgs& a, cudaStream_t s) {
  GPUVS_DISPATCH_DTYPE(a.dtype,
                       { xent_kernel<T><<<static_cast<unsigned>(a.rows), kThreads, 0, s>>>(a); });
  GPUVS_CUDA_CHECK_LAUNCH();
}

void finish_loss(const float* mlm_rows, int64_t n_mlm, const float* mlm_count,
                 const float* nsp_rows, int64_t n_nsp, const float* nsp_count, float* loss,
                 cudaStream_t s) {
  finish_loss_kernel<<<1, kThreads, 0, s>>>(mlm_rows, n_mlm, mlm_count, nsp_rows, n_nsp, nsp_count,
                                            loss);
  GPUVS_CUDA_CHECK_LAUNCH();
}

void generate_inputs(const InputArgs& a, cudaStream_t s) {
  inputs_kernel<<<grid_for(int64_t(a.batch) * a.seq, kThreads), kThreads, 0, s>>>(a);
  GPUVS_CUDA_CHECK_LAUNCH();
}

void init_normal(float* dst, int64_t n, float std, uint64_t seed, uint64_t salt, cudaStream_t s) {
  init_normal_kernel<<<grid_for(n, kThreads), kThreads, 0, s>>>(dst, n, std, seed, salt);
  GPUVS_CUDA_CHECK_LAUNCH();
}

void fill(float* dst, int64_t n, float value, cudaStream_t s) {
  fill_kernel<<<grid_for(n, kThreads), kThreads, 0, s>>>(dst, n, value);
  GPUVS_CUDA_CHECK_LAUNCH();
}

void cast_from_float(const float* src, void* dst, int64_t n, DType dtype, cudaStream_t s) {
  GPUVS_DISPATCH_DTYPE(dtype, {
    from_float_kernel<T><<<grid_for(n, kThreads), kThreads, 0, s>>>(src, static_cast<T*>(dst), n);
  });
  GPUVS_CUDA_CHECK_LAUNCH();
}

void cast_to_float(const void* src, float* dst, int64_t n, DType dtype, cudaStream_t s) {
  GPUVS_DISPATCH_DTYPE(dtype, {
    to_float_kernel<T>
        <<<grid_for(n, kThreads), kThreads, 0, s>>>(static_cast<const T*>(src), dst, n);
  });
  GPUVS_CUDA_CHECK_LAUNCH();
}

int64_t count_nonfinite(const void* src, int64_t rows, int64_t cols, int64_t ld, DType dtype,
                        cudaStream_t s) {
  DeviceBuffer count(sizeof(unsigned long long));
  GPUVS_CUDA_CHECK(cudaMemsetAsync(count.get(), 0, count.bytes(), s));
  auto* c = count.as<unsigned long long>();
  GPUVS_DISPATCH_DTYPE(dtype, {
    count_nonfinite_kernel<T><<<grid_for(rows * cols, kThreads), kThreads, 0, s>>>(
        static_cast<const T*>(src), rows, cols, ld, c);
  });
  GPUVS_CUDA_CHECK_LAUNCH();
  unsigned long long host = 0;
  GPUVS_CUDA_CHECK(cudaMemcpyAsync(&host, c, sizeof host, cudaMemcpyDeviceToHost, s));
  GPUVS_CUDA_CHECK(cudaStreamSynchronize(s));
  return static_cast<int64_t>(host);
}

void advance_rng(uint64_t* rng, cudaStream_t s) {
  advance_rng_kernel<<<1, 1, 0, s>>>(rng);
  GPUVS_CUDA_CHECK_LAUNCH();
}

void check_finite(const float* grads, int64_t n, LossScaleState* scaler, cudaStream_t s) {
  check_finite_kernel<<<grid_for(n, kThreads), kThreads, 0, s>>>(grads, n, scaler);
  GPUVS_CUDA_CHECK_LAUNCH();
}

void adamw_step(const AdamWArgs& a, cudaStream_t s) {
  adam_count_kernel<<<1, 1, 0, s>>>(a.scaler);
  GPUVS_CUDA_CHECK_LAUNCH();
  GPUVS_DISPATCH_DTYPE(a.dtype,
                       { adamw_kernel<T><<<grid_for(a.n, kThreads), kThreads, 0, s>>>(a); });
  GPUVS_CUDA_CHECK_LAUNCH();
}

void update_loss_scale(LossScaleState* scaler, cudaStream_t s) {
  update_loss_scale_kernel<<<1, 1, 0, s>>>(scaler);
  GPUVS_CUDA_CHECK_LAUNCH();
}

}  // namespace gpuvs::models::bert
