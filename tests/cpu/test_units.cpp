// Decimal SI formatting of figures and parsing of user-given sizes.
#include <gtest/gtest.h>

#include "core/units.h"

namespace gpuvs {
namespace {

TEST(Units, FormatsDecimalPrefixes) {
  EXPECT_EQ(format_si(4.31e12, "B/s"), "4.31 TB/s");
  EXPECT_EQ(format_si(55.5e9, "B/s"), "55.5 GB/s");
  EXPECT_EQ(format_si(785e12, "FLOP/s"), "785 TFLOP/s");
  EXPECT_EQ(format_si(1.426e15, "FLOP/s", 4), "1426 TFLOP/s");  // datasheets stop at tera
  EXPECT_EQ(format_si(3.958e15, "OP/s"), "3958 TOP/s");
  EXPECT_EQ(format_si(15.2e-6, "s"), "15.2 µs");
  EXPECT_EQ(format_si(2.0, "s"), "2.00 s");
  EXPECT_EQ(format_si(0, "B/s"), "0.00 B/s");
  // Sub-unit prefixes are only for time: a tiny bandwidth stays in B/s.
  EXPECT_EQ(format_si(0.5, "B/s"), "0.500 B/s");
  EXPECT_EQ(format_si(4723, "img/s"), "4723 img/s");  // counts of things: no prefix
  EXPECT_EQ(format_si(9163.69, "seq/s"), "9164 seq/s");
  EXPECT_EQ(format_si(32.5, "seq/s"), "32.5 seq/s");
  EXPECT_EQ(format_si(206.3, "FLOP/B"), "206 FLOP/B");
}

TEST(Units, RoundingAtPrefixBoundary) {
  EXPECT_EQ(format_si(999.96e9, "B/s"), "1.00 TB/s");
}

TEST(Units, BinarySizes) {
  EXPECT_EQ(format_bytes_binary(512), "512 B");
  EXPECT_EQ(format_bytes_binary(int64_t{4} << 30), "4 GiB");
  EXPECT_EQ(format_bytes_binary(int64_t{3} << 19), "1.5 MiB");
}

TEST(Units, ParsesSizes) {
  EXPECT_EQ(parse_size("4096"), 4096);
  EXPECT_EQ(parse_size("4GiB"), int64_t{4} << 30);
  EXPECT_EQ(parse_size("512 MiB"), int64_t{512} << 20);
  EXPECT_EQ(parse_size("2GB"), 2000000000);
  EXPECT_EQ(parse_size("1e9"), 1000000000);
  EXPECT_EQ(parse_size("1.5KiB"), 1536);
  EXPECT_EQ(parse_size(""), -1);
  EXPECT_EQ(parse_size("abc"), -1);
  EXPECT_EQ(parse_size("-4GiB"), -1);
  EXPECT_EQ(parse_size("4 parsecs"), -1);
  EXPECT_EQ(parse_size("0.3B"), -1);
  EXPECT_EQ(parse_size("1e30"), -1);
}

}  // namespace
}  // namespace gpuvs
