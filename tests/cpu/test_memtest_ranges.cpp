// The memory test's errors merged into address ranges (check/memtest_ranges.h): runs
// split at the gap, bits that flipped and in which direction, the text an admin reads.
#include <gtest/gtest.h>

#include "check/memtest_ranges.h"

namespace gpuvs::check {
namespace {

TEST(MemtestRanges, NearbyErrorsMergeAndFarOnesSplit) {
  const uint64_t base = 0x7f0000000000ull;
  std::vector<MemError> errors = {
      {base + 0x2000, 0x1, 0x101},  // second range, out of order
      {base, 0x0, 0x100},           // first range
      {base + 0x40, 0xFFFFFFFF, 0xFFFFFEFF},
      {base + 0x2000 + 0x1000, 0x1, 0x0},  // exactly one gap away: same range
      {base + 0x2000 + 0x2004, 0x1, 0x0},  // more than a gap after the last: new range
  };
  const auto ranges = merge_ranges(errors);
  ASSERT_EQ(ranges.size(), 3u);
  EXPECT_EQ(ranges[0].first, base);
  EXPECT_EQ(ranges[0].last, base + 0x40);
  EXPECT_EQ(ranges[0].words, 2u);
  EXPECT_EQ(ranges[0].flipped, 0x100u);
  EXPECT_TRUE(ranges[0].stuck_high);  // 0 -> 1 at bit 8
  EXPECT_TRUE(ranges[0].stuck_low);   // 1 -> 0 at bit 8
  EXPECT_EQ(ranges[1].first, base + 0x2000);
  EXPECT_EQ(ranges[1].last, base + 0x3000);
  EXPECT_EQ(ranges[1].words, 2u);
  EXPECT_EQ(ranges[1].flipped, 0x101u);
  EXPECT_EQ(ranges[2].words, 1u);
  EXPECT_FALSE(ranges[2].stuck_high);
  EXPECT_TRUE(ranges[2].stuck_low);
}

TEST(MemtestRanges, GapIsAParameter) {
  std::vector<MemError> errors = {{0x1000, 0, 1}, {0x1010, 0, 1}};
  EXPECT_EQ(merge_ranges(errors, 0x10).size(), 1u);
  EXPECT_EQ(merge_ranges(errors, 0x0c).size(), 2u);
  EXPECT_TRUE(merge_ranges({}).empty());
}

TEST(MemtestRanges, TextNamesTheRangeTheCountAndTheBits) {
  const auto ranges = merge_ranges({{0x7f1234000000ull, 0, 0x100}, {0x7f1234000ffcull, 0, 0x100}});
  ASSERT_EQ(ranges.size(), 1u);
  EXPECT_EQ(describe(ranges[0]),
            "0x7f1234000000-0x7f1234000fff: 2 words, bits 0x00000100 (read 1 for 0)");
  const auto one = merge_ranges({{0x10, 0xF0, 0x70}});
  EXPECT_EQ(describe(one[0]), "0x10-0x13: 1 word, bits 0x00000080 (read 0 for 1)");
}

}  // namespace
}  // namespace gpuvs::check
