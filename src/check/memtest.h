// The memory test of `gpuvs check --level 2` (docs/check.md, "Memory test"): as much of
// the GPU's free memory as can be had (at least 90 %, in chunks), written and read back
// with walking ones and zeros, moving inversions and random patterns; every word that
// does not hold what was written is counted, and the first ones are recorded with
// their addresses and merged into ranges.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "check/memtest_ranges.h"

namespace gpuvs::check {

// One allocation of the test: `count` 32-bit words from word `first_index` of the
// whole tested memory.
struct MemtestChunk {
  uint32_t* words = nullptr;
  size_t count = 0;
  uint64_t first_index = 0;
};

struct MemtestOptions {
  // Free memory left to the driver and the context, bytes; the rest is tested.
  size_t reserve_bytes = size_t{512} << 20;
  size_t chunk_bytes = size_t{1} << 30;
  // Exactly this much instead (tests; at least one word).
  std::optional<size_t> bytes;
  uint64_t seed = 1;            // of the random patterns
  unsigned max_records = 4096;  // mismatching words recorded (all are counted)
  // Which pattern is running ("walking ones, bit 7").
  std::function<void(const std::string&)> progress;
  // Called after a pattern was written and before it is read back (tests inject a
  // fault here by writing a wrong word).
  std::function<void(std::span<const MemtestChunk>, cudaStream_t)> after_write;
};

struct MemtestPass {
  std::string name;  // "walking ones", "walking zeros", "moving inversions 0x55555555", "random"
  int sweeps = 0;    // writes and reads over the whole memory
  uint64_t errors = 0;
  double seconds = 0;
};

struct MemtestResult {
  size_t free_bytes = 0;  // cudaMemGetInfo before the test
  size_t total_bytes = 0;
  size_t tested_bytes = 0;  // what the chunks held
  double seconds = 0;
  std::vector<MemtestPass> passes;
  uint64_t errors = 0;                // mismatching words, every pass
  std::vector<MemError> recorded;     // the first max_records of them
  std::vector<MemErrorRange> ranges;  // `recorded`, merged
  double bandwidth = 0;               // bytes moved / seconds, B/s (a sanity figure)

  double fraction_of_free() const {
    return free_bytes > 0 ? double(tested_bytes) / double(free_bytes) : 0.0;
  }
  bool truncated() const { return errors > recorded.size(); }
};

// Runs the test on `device`; allocations that fail shrink the chunk (down to 64 MiB)
// before giving up. Throws gpuvs::Error on a CUDA error other than out-of-memory.
MemtestResult run_memtest(int device, const MemtestOptions& options);

}  // namespace gpuvs::check
