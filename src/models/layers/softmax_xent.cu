// Kernels of softmax_xent.h.
#include "gpu/check.h"
#include "gpu/reduce.cuh"
#include "models/layers/softmax_xent.h"

namespace gpuvs::models {

namespace {

constexpr int kThreads = 256;

// One block per row.
template <class T>
__global__ void __launch_bounds__(kThreads) xent_rows_kernel(XentArgs a) {
  __shared__ BlockScratch<float, kThreads> scratch;
  const int row = blockIdx.x;
  float* z = a.logits + int64_t(row) * a.classes;
  float mx = -INFINITY;
  for (int j = threadIdx.x; j < a.classes; j += kThreads) {
    const float v = z[j] + a.bias[j];
    z[j] = v;
    mx = fmaxf(mx, v);
  }
  mx = block_reduce_all<kThreads, ShuffleTree::kButterfly>(mx, MaxOp{}, scratch);
  float sum = 0.f;
  for (int j = threadIdx.x; j < a.classes; j += kThreads)
    sum += __expf(z[j] - mx);
  sum = block_reduce_all<kThreads, ShuffleTree::kButterfly>(sum, SumOp{}, scratch);
  const int label = a.labels[row];
  const float scale = (a.loss_scale ? *a.loss_scale : 1.f) / float(a.n);
  const float inv_sum = 1.f / sum;
  T* d = static_cast<T*>(a.dlogits) + int64_t(row) * a.classes;
  for (int j = threadIdx.x; j < a.classes; j += kThreads) {
    const float p = __expf(z[j] - mx) * inv_sum;
    d[j] = from_f<T>((p - (j == label ? 1.f : 0.f)) * scale);
  }
  if (threadIdx.x == 0) a.row_loss[row] = logf(sum) + mx - z[label];
}

// Blocks of (32 classes) x (8 row lanes) sum dlogits over rows; the last block sums
// the loss.
template <class T>
__global__ void __launch_bounds__(kThreads) xent_reduce_kernel(XentArgs a) {
  if (blockIdx.x == gridDim.x - 1) {
    __shared__ BlockScratch<float, kThreads> scratch;
    float s = 0.f;
    for (int i = threadIdx.x; i < a.n; i += kThreads)
      s += a.row_loss[i];
    s = block_reduce<kThreads, ShuffleTree::kButterfly>(s, SumOp{}, scratch);
    if (threadIdx.x == 0) *a.loss = s / float(a.n);
    return;
  }
  __shared__ ColumnScratch<float, 8, 32> lanes;
  const int lane = threadIdx.x % 32, row0 = threadIdx.x / 32;
  const int j = blockIdx.x * 32 + lane;
  const T* d = static_cast<const T*>(a.dlogits);
  float s = 0.f;
  if (j < a.classes)
    for (int i = row0; i < a.n; i += 8)
      s += to_f(d[int64_t(i) * a.classes + j]);
  s = column_reduce<8, 32>(s, row0, lane, SumOp{}, lanes);
  if (row0 != 0 || j >= a.classes) return;
  T* db = static_cast<T*>(a.dbias);
  db[j] = from_f<T>(a.accumulate ? to_f(db[j]) + s : s);
}

__global__ void add_bias_kernel(float* logits, const float* bias, int64_t total, int classes) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < total;
       i += int64_t(gridDim.x) * blockDim.x)
    logits[i] += bias[i % classes];
}

}  // namespace

void softmax_xent_forward_backward(const XentArgs& a, cudaStream_t stream) {
  GPUVS_DISPATCH_DTYPE(a.dtype, {
    xent_rows_kernel<T><<<a.n, kThreads, 0, stream>>>(a);
    GPUVS_CUDA_CHECK_LAUNCH();
    xent_reduce_kernel<T><<<(a.classes + 31) / 32 + 1, kThreads, 0, stream>>>(a);
    GPUVS_CUDA_CHECK_LAUNCH();
  });
}

void add_bias(float* logits, const float* bias, int n, int classes, cudaStream_t stream) {
  const int64_t total = int64_t(n) * classes;
  add_bias_kernel<<<static_cast<int>((total + 255) / 256), 256, 0, stream>>>(logits, bias, total,
                                                                             classes);
  GPUVS_CUDA_CHECK_LAUNCH();
}

}  // namespace gpuvs::models
