// Kernels of the launch-overhead benchmark (overhead.cpp): an empty kernel that only
// counts itself, and one link of a chain of small dependent kernels.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>

namespace gpuvs {

// <<<1, 1>>>: *counter += 1. The count proves every launch ran.
void launch_empty(unsigned long long* counter, cudaStream_t stream);

// out[i] = in[i] + 1 for n floats: 256 threads per block, one element per thread.
void launch_increment(const float* in, float* out, size_t n, cudaStream_t stream);

}  // namespace gpuvs
