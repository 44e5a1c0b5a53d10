// The memory test's kernels (check/memtest.h): fill words with a pattern, check them,
// and the read-then-write sweeps of moving inversions. Every check counts the words
// that differ and records the first ones (address, expected, actual).
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

namespace gpuvs::check {

// The value of word i (i counted over the whole tested memory, so that every chunk
// holds its own values): `constant`, or a hash of (seed, i) when `random`;
// complemented when `invert`.
struct PatternSpec {
  bool random = false;
  uint32_t constant = 0;
  uint64_t seed = 0;
  bool invert = false;
};

// A mismatching word as the device records it.
struct DeviceMemError {
  unsigned long long address;
  uint32_t expected;
  uint32_t actual;
};

// Where mismatches go (device memory): `count` counts them all, `claimed` the records
// taken (it may pass `capacity`; only the first `capacity` are written).
struct ErrorSink {
  unsigned long long* count = nullptr;
  unsigned long long* claimed = nullptr;
  DeviceMemError* records = nullptr;
  unsigned capacity = 0;
};

// words[k] = pattern(first_index + k), k < n. Asynchronous.
void launch_fill(uint32_t* words, size_t n, uint64_t first_index, PatternSpec p, cudaStream_t s);

// Counts (and records) the words that are not pattern(first_index + k). Asynchronous.
void launch_check(const uint32_t* words, size_t n, uint64_t first_index, PatternSpec p,
                  ErrorSink sink, cudaStream_t s);

// Moving inversions: each word is checked against `expect` and then overwritten with
// `write`, each thread walking its words upwards, or downwards when `descending`, so
// that a write that disturbs a neighbour is caught by the neighbour's check.
void launch_check_and_write(uint32_t* words, size_t n, uint64_t first_index, PatternSpec expect,
                            PatternSpec write, bool descending, ErrorSink sink, cudaStream_t s);

}  // namespace gpuvs::check
