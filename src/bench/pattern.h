// A checkable fill pattern for memory benchmarks: word i of a buffer holds
// pattern(i), a hash of i with no short period, or its complement as poison.
// A benchmark poisons its destination, runs, then counts the words that are not
// what they should be: every element written, and written right.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

namespace gpuvs {

// words[i] = pattern(i), or ~pattern(i) when `poison`. Asynchronous on `stream`.
void fill_pattern(void* buffer, size_t bytes, bool poison, cudaStream_t stream);

struct PatternCheck {
  uint64_t words = 0;       // words checked
  uint64_t mismatches = 0;  // words not equal to pattern(i)
  uint64_t first_bad = 0;   // lowest such index (meaningless when mismatches == 0)
};

// Counts the words of `buffer` that differ from pattern(i). Synchronises `stream`.
PatternCheck check_pattern(const void* buffer, size_t bytes, cudaStream_t stream);

}  // namespace gpuvs
