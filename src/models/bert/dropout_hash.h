// BERT's dropout mask as a pure function, for kernels (nvcc) and host code (the
// tests' references) alike: plain C++, no CUDA header.
//
// Element i of a dropout site is kept when its 16-bit uniform u16(i) >= threshold:
//   h = mix64(key + (i >> 2) * golden)   one splitmix64 finaliser per GROUP of 4
//   u16(i) = bits 16 * (i & 3) .. + 15 of h
//   threshold = round(p * 65536)
// so p is quantised to 1/65536 (p = 0.1 drops with probability 6554 / 65536 =
// 0.1000061); kept values are scaled by 1 / (1 - p) with p as given (PyTorch's
// inverted dropout). key = mix64(step * golden + site), the step counter living on the
// GPU. Kernels that hold 4 consecutive elements take one mix for all four
// (drop_keep4); the per-element drop_keep gives the same bits, so every kernel, the
// unfused softmax and the fused attention included, draws the same mask.
#pragma once

#include <cstdint>

#include "bench/host_device.h"

namespace gpuvs::models::bert {

constexpr uint64_t kGolden = 0x9E3779B97F4A7C15ull;  // 2^64 / golden ratio, odd

// splitmix64's finaliser (Steele, Lea, Flood 2014): a bijective 64-bit mix.
GPUVS_HD inline uint64_t mix64(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

// The key of dropout site `site` at step counter `step`.
GPUVS_HD inline uint64_t dropout_key(uint64_t step, uint32_t site) {
  return mix64(step * kGolden + site);
}

// round(p * 65536) for p in [0, 1): p * 65536 is exact in float (a power of two), so
// host and device agree.
GPUVS_HD inline uint32_t dropout_threshold(float p) {
  return static_cast<uint32_t>(p * 65536.0f + 0.5f);
}

// Keep bits of elements 4g .. 4g + 3 (bit k: element 4g + k).
GPUVS_HD inline uint32_t drop_keep4(uint64_t key, uint64_t g, uint32_t threshold) {
  const uint64_t h = mix64(key + g * kGolden);
  uint32_t bits = 0;
  for (int k = 0; k < 4; ++k)
    bits |= uint32_t(((h >> (16 * k)) & 0xFFFFu) >= threshold) << k;
  return bits;
}

// Keep bit of element i (the same bit drop_keep4 gives it).
GPUVS_HD inline bool drop_keep(uint64_t key, uint64_t i, uint32_t threshold) {
  const uint64_t h = mix64(key + (i >> 2) * kGolden);
  return ((h >> (16 * (i & 3))) & 0xFFFFu) >= threshold;
}

// Keep bits of the kN consecutive elements i0 .. i0 + kN - 1 (bit k: element i0 + k);
// one mix per group of 4 where kN % 4 == 0 and i0 % 4 == 0 (the caller's alignment),
// else one per element.
template <int kN>
GPUVS_HD inline uint32_t drop_keep_bits(uint64_t key, uint64_t i0, uint32_t threshold) {
  uint32_t bits = 0;
  if constexpr (kN % 4 == 0) {
    for (int q = 0; q < kN / 4; ++q)
      bits |= drop_keep4(key, (i0 >> 2) + q, threshold) << (4 * q);
  } else {
    for (int k = 0; k < kN; ++k)
      bits |= uint32_t(drop_keep(key, i0 + k, threshold)) << k;
  }
  return bits;
}

}  // namespace gpuvs::models::bert
