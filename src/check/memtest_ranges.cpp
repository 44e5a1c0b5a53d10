// Memory test errors into ranges. See memtest_ranges.h.
#include "check/memtest_ranges.h"

#include <fmt/format.h>

#include <algorithm>

namespace gpuvs::check {

std::vector<MemErrorRange> merge_ranges(std::vector<MemError> errors, uint64_t gap) {
  std::sort(errors.begin(), errors.end(),
            [](const MemError& a, const MemError& b) { return a.address < b.address; });
  std::vector<MemErrorRange> out;
  for (const MemError& e : errors) {
    const uint32_t diff = e.expected ^ e.actual;
    if (out.empty() || e.address - out.back().last > gap) {
      out.push_back({e.address, e.address, 0, 0, false, false});
    }
    MemErrorRange& r = out.back();
    r.last = std::max(r.last, e.address);
    ++r.words;
    r.flipped |= diff;
    if (diff & e.actual) r.stuck_high = true;
    if (diff & e.expected) r.stuck_low = true;
  }
  return out;
}

std::string describe(const MemErrorRange& r) {
  std::string how;
  if (r.stuck_high && r.stuck_low) {
    how = "read 1 for 0 and 0 for 1";
  } else if (r.stuck_high) {
    how = "read 1 for 0";
  } else {
    how = "read 0 for 1";
  }
  return fmt::format("{:#x}-{:#x}: {} word{}, bits {:#010x} ({})", r.first, r.last + 3, r.words,
                     r.words == 1 ? "" : "s", r.flipped, how);
}

}  // namespace gpuvs::check
