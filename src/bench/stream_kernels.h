// Launchers of the memory-streaming kernels. Kernels live in .cu files with no
// formatting or host logic (nvcc's host pass cannot compile fmt's compile-time
// format checks); the benchmarks that use them are plain .cpp files.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>

namespace gpuvs {

// Threads per block of the copy kernel: one 16-byte element per thread, 256-thread
// blocks, the fastest shape of the dev/hbm_copy ladder on an H200 (2026-11-30).
inline constexpr int kCopyBlock = 256;

// b[i] = a[i] for n 16-byte elements; a and b 16-byte aligned (cudaMalloc gives 256).
void launch_copy(const void* a, void* b, size_t n16, cudaStream_t stream);

// Blocks the copy kernel launches for n16 elements.
inline unsigned copy_grid(size_t n16) {
  return static_cast<unsigned>((n16 + kCopyBlock - 1) / kCopyBlock);
}

}  // namespace gpuvs
