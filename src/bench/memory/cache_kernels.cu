// Cache kernels; launch assumptions in cache_kernels.h.
#include "bench/memory/cache_kernels.h"
#include "gpu/check.h"
#include "gpu/reduce.cuh"

namespace gpuvs {

namespace {

// Launch: kCacheBlock threads, any grid.
__global__ void __launch_bounds__(kCacheBlock)
    l2_read_kernel(const double2* __restrict__ a,  // (n2)
                   size_t n2, int passes, double* partials) {
  double acc = 0;
  const size_t stride = static_cast<size_t>(gridDim.x) * kCacheBlock;
  for (int p = 0; p < passes; ++p) {
    size_t i = blockIdx.x * static_cast<size_t>(kCacheBlock) + threadIdx.x;
    for (; i + 3 * stride < n2; i += 4 * stride) {
      const double2 v0 = __ldcg(a + i), v1 = __ldcg(a + i + stride);
      const double2 v2 = __ldcg(a + i + 2 * stride), v3 = __ldcg(a + i + 3 * stride);
      acc += (v0.x + v0.y) + (v1.x + v1.y) + (v2.x + v2.y) + (v3.x + v3.y);
    }
    for (; i < n2; i += stride) {
      const double2 v = __ldcg(a + i);
      acc += v.x + v.y;
    }
  }
  __shared__ BlockScratch<double, kCacheBlock> scratch;
  const double s = block_reduce<kCacheBlock, ShuffleTree::kDown>(acc, SumOp{}, scratch);
  if (threadIdx.x == 0) partials[blockIdx.x] = s;
}

// Launch: kCacheBlock threads, any grid; 16 KiB static shared memory.
__global__ void __launch_bounds__(kCacheBlock)
    smem_read_kernel(int iterations, uint32_t* partials) {
  __shared__ uint4 vectors[kSmemVectors];
  for (int v = threadIdx.x; v < kSmemVectors; v += kCacheBlock)
    vectors[v] = make_uint4(pattern_word(4 * v), pattern_word(4 * v + 1), pattern_word(4 * v + 2),
                            pattern_word(4 * v + 3));
  __syncthreads();
  const uint32_t base = static_cast<uint32_t>(__cvta_generic_to_shared(vectors));
  uint32_t acc = 0;
#pragma unroll 8
  for (int it = 0; it < iterations; ++it) {
    const uint32_t v = (threadIdx.x + static_cast<uint32_t>(it) * kCacheBlock) & (kSmemVectors - 1);
    uint32_t x, y, z, w;
    // The same addresses come back every kSmemVectors / kCacheBlock iterations:
    // without .volatile, ptxas keeps the four distinct vectors in registers and the
    // loop reads nothing (an H200 then "reached" 358 TB/s, 10x its peak). `asm
    // volatile` alone does not stop that: it binds nvcc, not ptxas.
    asm volatile("ld.volatile.shared.v4.u32 {%0, %1, %2, %3}, [%4];"
                 : "=r"(x), "=r"(y), "=r"(z), "=r"(w)
                 : "r"(base + v * 16));
    acc += x ^ y ^ z ^ w;
  }
  __shared__ BlockScratch<uint32_t, kCacheBlock> scratch;
  const uint32_t s = block_reduce<kCacheBlock, ShuffleTree::kDown>(acc, SumOp{}, scratch);
  if (threadIdx.x == 0) partials[blockIdx.x] = s;
}

unsigned resident_grid(const void* kernel) {
  int device = 0, sms = 0, per_sm = 0;
  GPUVS_CUDA_CHECK(cudaGetDevice(&device));
  GPUVS_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
  GPUVS_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, kCacheBlock, 0));
  return static_cast<unsigned>(sms) * static_cast<unsigned>(per_sm > 0 ? per_sm : 1);
}

}  // namespace

unsigned l2_read_grid() {
  return resident_grid(reinterpret_cast<const void*>(l2_read_kernel));
}

unsigned smem_read_grid() {
  return resident_grid(reinterpret_cast<const void*>(smem_read_kernel));
}

void launch_l2_read(const void* a, size_t n, int passes, double* partials, unsigned grid,
                    cudaStream_t stream) {
  l2_read_kernel<<<grid, kCacheBlock, 0, stream>>>(static_cast<const double2*>(a), n / 2, passes,
                                                   partials);
  GPUVS_CUDA_CHECK_LAUNCH();
}

void launch_smem_read(int iterations, uint32_t* partials, unsigned grid, cudaStream_t stream) {
  smem_read_kernel<<<grid, kCacheBlock, 0, stream>>>(iterations, partials);
  GPUVS_CUDA_CHECK_LAUNCH();
}

}  // namespace gpuvs
