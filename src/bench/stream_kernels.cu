// Memory-streaming kernels. Launch shapes and their reasons are in stream_kernels.h.
#include "bench/stream_kernels.h"

#include "gpu/check.h"

namespace gpuvs {

namespace {

// Launch: kCopyBlock threads, one uint4 each; grid = copy_grid(n).
__global__ void copy_kernel(const uint4* __restrict__ a,  // (n)
                            uint4* __restrict__ b,        // (n)
                            size_t n) {
  const size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x;
  if (i < n) b[i] = a[i];
}

}  // namespace

void launch_copy(const void* a, void* b, size_t n16, cudaStream_t stream) {
  copy_kernel<<<copy_grid(n16), kCopyBlock, 0, stream>>>(static_cast<const uint4*>(a),
                                                         static_cast<uint4*>(b), n16);
}

}  // namespace gpuvs
