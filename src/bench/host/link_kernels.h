// Zero-copy kernels (link.cpp): kernels that read or write mapped pinned host
// memory directly over the host link. Launch: SMs x 4 blocks of 256 threads,
// grid-stride over 16-byte vectors (enough loads in flight to cover the link's
// latency); buffers 16-byte aligned, sizes multiples of 16 bytes.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

namespace gpuvs {

// Blocks the zero-copy kernels launch on the current device (partials needed).
unsigned zero_copy_grid();

// partials[block] = sum of the 32-bit words the block read, over `passes` passes of
// the whole buffer.
void launch_zero_copy_read(const void* src, size_t bytes, int passes, uint64_t* partials,
                           cudaStream_t stream);
// One 16-byte vector from every `stride_bytes` of the buffer (its first 16 bytes).
void launch_zero_copy_sparse_read(const void* src, size_t bytes, size_t stride_bytes,
                                  uint64_t* partials, cudaStream_t stream);
// Word i of dst = pattern_word(i) (pattern.h).
void launch_zero_copy_write(void* dst, size_t bytes, cudaStream_t stream);

}  // namespace gpuvs
