// Zero-copy kernels; launch assumptions in host_kernels.h.
#include "bench/common/pattern.h"
#include "bench/host/link_kernels.h"
#include "gpu/check.h"
#include "gpu/reduce.cuh"

namespace gpuvs {

namespace {

constexpr int kBlock = 256;

__device__ uint64_t words_sum(uint4 v) {
  return static_cast<uint64_t>(v.x) + v.y + v.z + v.w;
}

// Launch: kBlock threads.
__device__ void write_block_sum(uint64_t v, uint64_t* partials) {
  __shared__ BlockScratch<uint64_t, kBlock> scratch;
  v = block_reduce<kBlock, ShuffleTree::kDown>(v, SumOp{}, scratch);
  if (threadIdx.x == 0) partials[blockIdx.x] = v;
}

// Launch: kBlock threads, any grid.
__global__ void read_kernel(const uint4* __restrict__ src,  // (n16)
                            size_t n16, int passes, uint64_t* partials) {
  uint64_t acc = 0;
  const size_t stride = static_cast<size_t>(gridDim.x) * kBlock;
  for (int p = 0; p < passes; ++p)
    for (size_t i = blockIdx.x * static_cast<size_t>(kBlock) + threadIdx.x; i < n16; i += stride)
      acc += words_sum(src[i]);
  write_block_sum(acc, partials);
}

// Launch: kBlock threads, any grid; reads vector k x step for every k.
__global__ void sparse_read_kernel(const uint4* __restrict__ src, size_t count, size_t step,
                                   uint64_t* partials) {
  uint64_t acc = 0;
  const size_t stride = static_cast<size_t>(gridDim.x) * kBlock;
  for (size_t k = blockIdx.x * static_cast<size_t>(kBlock) + threadIdx.x; k < count; k += stride)
    acc += words_sum(src[k * step]);
  write_block_sum(acc, partials);
}

// Launch: kBlock threads, any grid.
__global__ void write_kernel(uint4* __restrict__ dst, size_t n16) {
  const size_t stride = static_cast<size_t>(gridDim.x) * kBlock;
  for (size_t i = blockIdx.x * static_cast<size_t>(kBlock) + threadIdx.x; i < n16; i += stride) {
    const uint64_t w = 4 * static_cast<uint64_t>(i);
    dst[i] =
        make_uint4(pattern_word(w), pattern_word(w + 1), pattern_word(w + 2), pattern_word(w + 3));
  }
}

}  // namespace

unsigned zero_copy_grid() {
  int device = 0, sms = 0;
  GPUVS_CUDA_CHECK(cudaGetDevice(&device));
  GPUVS_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
  return static_cast<unsigned>(sms) * 4;
}

void launch_zero_copy_read(const void* src, size_t bytes, int passes, uint64_t* partials,
                           cudaStream_t stream) {
  read_kernel<<<zero_copy_grid(), kBlock, 0, stream>>>(static_cast<const uint4*>(src), bytes / 16,
                                                       passes, partials);
  GPUVS_CUDA_CHECK_LAUNCH();
}

void launch_zero_copy_sparse_read(const void* src, size_t bytes, size_t stride_bytes,
                                  uint64_t* partials, cudaStream_t stream) {
  sparse_read_kernel<<<zero_copy_grid(), kBlock, 0, stream>>>(
      static_cast<const uint4*>(src), bytes / stride_bytes, stride_bytes / 16, partials);
  GPUVS_CUDA_CHECK_LAUNCH();
}

void launch_zero_copy_write(void* dst, size_t bytes, cudaStream_t stream) {
  write_kernel<<<zero_copy_grid(), kBlock, 0, stream>>>(static_cast<uint4*>(dst), bytes / 16);
  GPUVS_CUDA_CHECK_LAUNCH();
}

}  // namespace gpuvs
