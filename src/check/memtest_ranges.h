// What a memory test found, as an admin reads it: the words that held the wrong value,
// merged into address ranges with the bits that flipped. Plain C++ (no CUDA): the GPU
// side records mismatching words, this side turns them into ranges and text, tested
// on the CPU (docs/check.md, "Memory test").
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace gpuvs::check {

// One word that did not hold what was written.
struct MemError {
  uint64_t address = 0;   // device virtual address of the 32-bit word
  uint32_t expected = 0;  // what was written
  uint32_t actual = 0;    // what was read back

  bool operator==(const MemError&) const = default;
};

// Consecutive errors no more than `gap` bytes apart, merged.
struct MemErrorRange {
  uint64_t first = 0;       // address of the first bad word
  uint64_t last = 0;        // address of the last bad word (inclusive)
  uint64_t words = 0;       // bad words recorded in the range
  uint32_t flipped = 0;     // OR of expected ^ actual over the range: which bit lanes
  bool stuck_high = false;  // some flipped bit read 1 where 0 was written
  bool stuck_low = false;   // some flipped bit read 0 where 1 was written

  bool operator==(const MemErrorRange&) const = default;
};

// Default merge distance: one 4 KiB page. Errors of one failing row or column of an
// HBM bank land within a few KiB of each other in the virtual address space.
inline constexpr uint64_t kRangeGapBytes = 4096;

// The errors merged into ranges, sorted by address; duplicates (the same word failing
// in several patterns) count once per pattern.
std::vector<MemErrorRange> merge_ranges(std::vector<MemError> errors,
                                        uint64_t gap = kRangeGapBytes);

// "0x7f1234000000-0x7f1234000fff: 12 words, bits 0x00000100 (read 1 for 0)": the
// range covers the last bad word's four bytes.
std::string describe(const MemErrorRange& r);

}  // namespace gpuvs::check
