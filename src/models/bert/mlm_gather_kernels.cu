// The MLM head's row gathering (kernels.h): a one-block compaction of the masked
// positions (a block-wide exclusive scan, cub::BlockScan, over chunks of the rows) and
// a 16-byte-vector row gather.
#include <cub/block/block_scan.cuh>

#include "core/error.h"
#include "gpu/check.h"
#include "models/bert/device_util.cuh"
#include "models/bert/kernels.h"

namespace gpuvs::models::bert {

namespace {

constexpr int kScanThreads = 1024;

__global__ void __launch_bounds__(kScanThreads) compact_kernel(CompactArgs a) {
  using Scan = cub::BlockScan<int, kScanThreads>;
  __shared__ typename Scan::TempStorage temp;
  __shared__ int base;
  for (int64_t i = threadIdx.x; i < a.cap; i += kScanThreads) {
    a.idx[i] = -1;
    a.glabels[i] = -100;
  }
  if (threadIdx.x == 0) base = 0;
  __syncthreads();
  for (int64_t c0 = 0; c0 < a.n; c0 += kScanThreads) {
    const int64_t r = c0 + threadIdx.x;
    const int label = r < a.n ? a.labels[r] : -100;
    const int flag = label >= 0 ? 1 : 0;
    int offset = 0, total = 0;
    Scan(temp).ExclusiveSum(flag, offset, total);
    const int64_t slot = int64_t(base) + offset;
    if (r < a.n) {
      const bool kept = flag && slot < a.cap;
      a.inv[r] = kept ? static_cast<int32_t>(slot) : -1;
      if (kept) {
        a.idx[slot] = static_cast<int32_t>(r);
        a.glabels[slot] = label;
      }
    }
    __syncthreads();  // every thread has read `base` and `temp` is free again
    if (threadIdx.x == 0) base += total;
    __syncthreads();
  }
}

// One thread per 16 bytes of a row.
__global__ void gather_kernel(const int32_t* __restrict__ map, int64_t rows, int64_t vecs_per_row,
                              const uint4* __restrict__ src, uint4* __restrict__ dst) {
  const int64_t total = rows * vecs_per_row;
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < total;
       i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t r = i / vecs_per_row, v = i % vecs_per_row;
    const int32_t from = map[r];
    dst[i] = from >= 0 ? src[int64_t(from) * vecs_per_row + v] : make_uint4(0, 0, 0, 0);
  }
}

}  // namespace

void compact_labels(const CompactArgs& a, cudaStream_t s) {
  compact_kernel<<<1, kScanThreads, 0, s>>>(a);
  GPUVS_CUDA_CHECK_LAUNCH();
}

void gather_rows(const int32_t* map, int64_t rows, int64_t cols, const void* src, void* dst,
                 DType dtype, cudaStream_t s) {
  if (cols % 8 != 0) throw Error("gather_rows: columns must be a multiple of 8");
  const int64_t vecs = cols * int64_t(dtype_size(dtype)) / 16;
  constexpr int kThreads = 256;
  gather_kernel<<<grid_for(rows * vecs, kThreads), kThreads, 0, s>>>(
      map, rows, vecs, static_cast<const uint4*>(src), static_cast<uint4*>(dst));
  GPUVS_CUDA_CHECK_LAUNCH();
}

}  // namespace gpuvs::models::bert
