// Launch-overhead kernels; see overhead_kernels.h.
#include "bench/launch/overhead_kernels.h"
#include "gpu/check.h"

namespace gpuvs {

namespace {

__global__ void empty_kernel(unsigned long long* counter) {
  *counter += 1;  // one thread, launches on one stream run one after another
}

// Launch: 256 threads, grid = ceil(n / 256).
__global__ void increment_kernel(const float* __restrict__ in,  // (n)
                                 float* __restrict__ out,       // (n)
                                 size_t n) {
  const size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x;
  if (i < n) out[i] = in[i] + 1.0f;
}

}  // namespace

void launch_empty(unsigned long long* counter, cudaStream_t stream) {
  empty_kernel<<<1, 1, 0, stream>>>(counter);
  GPUVS_CUDA_CHECK_LAUNCH();
}

void launch_increment(const float* in, float* out, size_t n, cudaStream_t stream) {
  increment_kernel<<<static_cast<unsigned>((n + 255) / 256), 256, 0, stream>>>(in, out, n);
  GPUVS_CUDA_CHECK_LAUNCH();
}

}  // namespace gpuvs
