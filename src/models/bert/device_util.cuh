// Device helpers shared by BERT's kernels (nvcc only): the dropout hash and warp sums.
#pragma once

#include <cstdint>

#include "models/bert/kernels.h"
#include "models/layers/dtype.h"

namespace gpuvs::models::bert {

constexpr int kWarp = 32;

// splitmix64's finaliser (Steele, Lea, Flood 2014): a bijective 64-bit mix.
__device__ __forceinline__ uint64_t mix64(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

// The key of one dropout site in one step.
__device__ __forceinline__ uint64_t drop_key(const Dropout& d) {
  return d.p > 0.0f ? mix64(*d.rng * 0x9E3779B97F4A7C15ull + d.site) : 0;
}

// u in [0, 1) for element i of the site with `key` (24 random bits).
__device__ __forceinline__ float drop_uniform(uint64_t key, uint64_t i) {
  return float(mix64(key + i * 0x9E3779B97F4A7C15ull) >> 40) * (1.0f / 16777216.0f);
}

// Inverted dropout of v (element i); identity when p is 0.
__device__ __forceinline__ float apply_drop(float v, const Dropout& d, uint64_t key, uint64_t i) {
  if (d.p <= 0.0f) return v;
  return drop_uniform(key, i) >= d.p ? v / (1.0f - d.p) : 0.0f;
}

__device__ __forceinline__ float warp_sum(float v) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1)
    v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

__device__ __forceinline__ float warp_max(float v) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1)
    v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}

inline int grid_for(int64_t n, int threads, int max_blocks = 132 * 16) {
  const int64_t b = (n + threads - 1) / threads;
  return static_cast<int>(b < 1 ? 1 : (b > max_blocks ? max_blocks : b));
}

}  // namespace gpuvs::models::bert
