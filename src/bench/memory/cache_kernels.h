// Kernels of the cache benchmarks (cache.cpp): an L2-resident read and a shared-
// memory read, each summing what it reads so that the sum proves every load happened
// and returned the right data.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

#include "bench/common/pattern.h"

namespace gpuvs {

inline constexpr int kCacheBlock = 256;

// Blocks of the cache kernels on the current device: SMs x resident blocks.
unsigned l2_read_grid();
unsigned smem_read_grid();

// `passes` times over a (n) doubles holding stream_a(i) (stream_kernels.h), grid-
// stride, 16-byte ld.global.cg loads (cached in L2, not L1: each SM re-reads lines
// that other SMs brought in, so the figure is L2's, not L1's). partials[block] =
// the block's sum; the total is passes x stream_expected_sum(kRead, n).
void launch_l2_read(const void* a, size_t n, int passes, double* partials, unsigned grid,
                    cudaStream_t stream);

// Shared memory: each block fills kSmemVectors 16-byte vectors (word w of the block's
// array = pattern_word(w)), then each thread reads `iterations` vectors with
// ld.shared.v4 (vector (t + it x kCacheBlock) mod kSmemVectors: conflict-free) and
// adds x ^ y ^ z ^ w of each. partials[block] = the block's sum mod 2^32.
// `iterations` must be a multiple of kSmemVectors / kCacheBlock.
inline constexpr int kSmemVectors = 1024;  // 16 KiB per block
void launch_smem_read(int iterations, uint32_t* partials, unsigned grid, cudaStream_t stream);

// What every block's partial must be.
inline uint32_t smem_expected_block_sum(int iterations) {
  uint32_t period = 0;
  for (uint32_t v = 0; v < kSmemVectors; ++v)
    period += pattern_word(4 * v) ^ pattern_word(4 * v + 1) ^ pattern_word(4 * v + 2) ^
              pattern_word(4 * v + 3);
  const uint32_t visits = static_cast<uint32_t>(iterations) / (kSmemVectors / kCacheBlock);
  return period * visits;
}

}  // namespace gpuvs
