#include "bench/collectives/nccl_kernels.h"

#include <cmath>

#include "gpu/check.h"

namespace gpuvs {

namespace {

// Grid-stride loops, 256 threads, at most 4096 blocks: the buffers reach GiBs.
constexpr int kThreads = 256;

unsigned blocks_for(size_t count) {
  const size_t b = (count + kThreads - 1) / kThreads;
  return static_cast<unsigned>(b < 4096 ? (b == 0 ? 1 : b) : 4096);
}

__global__ void fill_kernel(float* buf, size_t count, int rank) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < count;
       i += size_t(gridDim.x) * blockDim.x)
    buf[i] = collective_pattern(rank, i);
}

__global__ void poison_kernel(float* buf, size_t count) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < count;
       i += size_t(gridDim.x) * blockDim.x)
    buf[i] = __int_as_float(0x7fc00000);  // quiet NaN: equal to nothing
}

__device__ float expected_value(const Expectation& e, uint64_t j) {
  switch (e.kind) {
    case ExpectKind::kSumOverRanks: {
      float s = 0;
      for (int r = 0; r < e.ranks; ++r)
        s += collective_pattern(r, e.offset + j);
      return s;
    }
    case ExpectKind::kFromRank:
      return collective_pattern(e.source, e.offset + j);
    case ExpectKind::kGathered:
      return collective_pattern(static_cast<int>(j / e.chunk), j % e.chunk);
    case ExpectKind::kAllToAll:
      return collective_pattern(static_cast<int>(j / e.chunk), e.rank * e.chunk + j % e.chunk);
  }
  return 0;
}

__global__ void check_kernel(const float* buf, size_t count, Expectation e,
                             unsigned long long* mismatches) {
  unsigned long long local = 0;
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < count;
       i += size_t(gridDim.x) * blockDim.x)
    local += buf[i] != expected_value(e, i) ? 1 : 0;
  if (local != 0) atomicAdd(mismatches, local);
}

}  // namespace

void fill_pattern(float* buf, size_t count, int rank, cudaStream_t stream) {
  fill_kernel<<<blocks_for(count), kThreads, 0, stream>>>(buf, count, rank);
  GPUVS_CUDA_CHECK_LAUNCH();
}

void poison(float* buf, size_t count, cudaStream_t stream) {
  poison_kernel<<<blocks_for(count), kThreads, 0, stream>>>(buf, count);
  GPUVS_CUDA_CHECK_LAUNCH();
}

void count_mismatches(const float* buf, size_t count, const Expectation& expect,
                      unsigned long long* mismatches, cudaStream_t stream) {
  check_kernel<<<blocks_for(count), kThreads, 0, stream>>>(buf, count, expect, mismatches);
  GPUVS_CUDA_CHECK_LAUNCH();
}

}  // namespace gpuvs
