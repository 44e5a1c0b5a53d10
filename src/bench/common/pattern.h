// A checkable fill pattern for memory benchmarks: word i of a buffer holds
// pattern(i), a hash of i with no short period, or its complement as poison.
// A benchmark poisons its destination, runs, then counts the words that are not
// what they should be: every element written, and written right.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

#include "bench/host_device.h"

namespace gpuvs {

// The value every 32-bit word i holds: distinct neighbours, no period shorter than
// 2^32, never equal to its own poison (~pattern). Host and device compute the same.
GPUVS_HD inline uint32_t pattern_word(uint64_t i) {
  uint64_t x = i * 0x9E3779B97F4A7C15ull;
  x ^= x >> 29;
  return static_cast<uint32_t>(x) ^ static_cast<uint32_t>(x >> 32);
}

// words[i] = pattern(i), or ~pattern(i) when `poison`. Asynchronous on `stream`.
// `buffer` may be device memory, peer memory or a mapped host buffer's device pointer.
void fill_pattern(void* buffer, size_t bytes, bool poison, cudaStream_t stream);

struct PatternCheck {
  uint64_t words = 0;       // words checked
  uint64_t mismatches = 0;  // words not equal to pattern(i)
  uint64_t first_bad = 0;   // lowest such index (meaningless when mismatches == 0)
};

// Counts the words of `buffer` that differ from pattern(i). Synchronises `stream`.
// `scratch`: two 64-bit words of device memory for the counters; when null they are
// allocated here (pass them where the device may be full: memory.capacity).
PatternCheck check_pattern(const void* buffer, size_t bytes, cudaStream_t stream,
                           unsigned long long* scratch = nullptr);

// The same on host memory (pageable or pinned), by the CPU.
void fill_pattern_host(void* buffer, size_t bytes, bool poison);
PatternCheck check_pattern_host(const void* buffer, size_t bytes);

}  // namespace gpuvs
