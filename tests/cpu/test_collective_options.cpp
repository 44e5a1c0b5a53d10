// Parsing of `gpuvs bench collectives` options: sizes, ops, NCCL values, graph mode.
#include <gtest/gtest.h>

#include "comm/collective_options.h"
#include "core/error.h"

namespace gpuvs::comm {
namespace {

std::string usage(const std::function<void()>& f) {
  try {
    f();
  } catch (const UsageError& e) {
    return e.what();
  }
  return "";
}

TEST(CollectiveOptions, SizesWithBinarySuffixes) {
  EXPECT_EQ(parse_size("8"), 8);
  EXPECT_EQ(parse_size("64K"), 64 * 1024);
  EXPECT_EQ(parse_size("64KiB"), 64 * 1024);
  EXPECT_EQ(parse_size("1m"), 1 << 20);
  EXPECT_EQ(parse_size("4G"), int64_t{4} << 30);
  EXPECT_EQ(parse_size("16B"), 16);
  EXPECT_EQ(parse_size("2GB"), 2000000000);  // the house's decimal units still hold
  EXPECT_FALSE(parse_size(""));
  EXPECT_FALSE(parse_size("0"));
  EXPECT_FALSE(parse_size("-8"));
  EXPECT_FALSE(parse_size("8X"));
  EXPECT_FALSE(parse_size("99999999999999999G"));
}

// Every spelling of a message size, through core/units' parser: nccl-tests' letters in
// either case and the IEC prefixes are binary, the units spelled with B keep theirs.
TEST(CollectiveOptions, EverySpellingOfASize) {
  EXPECT_EQ(parse_size("64k"), 64 * 1024);
  EXPECT_EQ(parse_size("64Ki"), 64 * 1024);
  EXPECT_EQ(parse_size("1M"), 1 << 20);
  EXPECT_EQ(parse_size("1MiB"), 1 << 20);
  EXPECT_EQ(parse_size("4g"), int64_t{4} << 30);
  EXPECT_EQ(parse_size("4GiB"), int64_t{4} << 30);
  EXPECT_EQ(parse_size("1T"), int64_t{1} << 40);
  EXPECT_EQ(parse_size("1.5K"), 1536);
  EXPECT_EQ(parse_size("1e3"), 1000);
  EXPECT_EQ(parse_size("64 K"), 64 * 1024);
  EXPECT_EQ(parse_size("32kB"), 32000);
  EXPECT_EQ(parse_size("1MB"), 1000000);
  EXPECT_FALSE(parse_size("0.5"));    // not a whole number of bytes
  EXPECT_FALSE(parse_size("1.1B"));   // nor this
  EXPECT_FALSE(parse_size("4gb"));    // lower-case units with B are not units
  EXPECT_FALSE(parse_size("0x100"));  // no hexadecimal
  EXPECT_FALSE(parse_size("inf"));
  EXPECT_EQ(parse_size("4611686018427387904"), int64_t{1} << 62);
  EXPECT_FALSE(parse_size("4611686018427387905"));
}

TEST(CollectiveOptions, RangeGivesTheNcclTestsSweep) {
  CollectiveOptions o;
  parse_size_range("8:2G:2", o);
  const auto sizes = collective_sizes(o);
  ASSERT_EQ(sizes.size(), 29u);  // nccl-tests -b 8 -e 2G -f 2
  EXPECT_EQ(sizes.front(), 8);
  EXPECT_EQ(sizes[1], 16);
  EXPECT_EQ(sizes.back(), int64_t{2} << 30);
  parse_size_range("1K:1M:4", o);
  EXPECT_EQ(collective_sizes(o), (std::vector<int64_t>{1024, 4096, 16384, 65536, 262144, 1048576}));
  o.sizes = {1 << 20, 8, 8};
  EXPECT_EQ(collective_sizes(o), (std::vector<int64_t>{8, 1 << 20}));
}

TEST(CollectiveOptions, RangeErrorsSayWhatIsExpected) {
  CollectiveOptions o;
  EXPECT_NE(usage([&] { parse_size_range("8", o); }).find("expected MIN:MAX[:FACTOR]"),
            std::string::npos);
  EXPECT_NE(usage([&] { parse_size_range("1G:8", o); }).find("MIN is larger than MAX"),
            std::string::npos);
  EXPECT_NE(usage([&] { parse_size_range("8:1G:1", o); }).find("FACTOR must be a number above 1"),
            std::string::npos);
  EXPECT_NE(usage([&] { parse_size_range("8:1Q", o); }).find("not a positive number"),
            std::string::npos);
  EXPECT_EQ(
      usage([&] {
        parse_size_range("8:4kk", o);
      }).rfind("--sizes 8:4kk: MAX 4kk is not a positive number of bytes: unknown unit 'kk'", 0),
      0u);
  EXPECT_EQ(usage([&] { parse_size_range("0:4G", o); }),
            "--sizes 0:4G: MIN 0 is not a positive number of bytes: must be positive (expected "
            "MIN:MAX[:FACTOR], e.g. 8:4G:2)");
  EXPECT_EQ(usage([&] { parse_size_range("8:4G:2x", o); }),
            "--sizes 8:4G:2x: FACTOR must be a number above 1: unknown unit 'x': give a number "
            "without a unit (expected MIN:MAX[:FACTOR], e.g. 8:4G:2)");
  EXPECT_NE(usage([&] { parse_size_range("8::2", o); }).find("MAX '' is not a positive number"),
            std::string::npos);
  EXPECT_NE(usage([&] { parse_size_range("8:1e30", o); }).find("too large: at most 4.61e18"),
            std::string::npos);
}

TEST(CollectiveOptions, RangeFactorsThatAreNotTwo) {
  CollectiveOptions o;
  parse_size_range("1K:64K:4", o);
  EXPECT_EQ(collective_sizes(o), (std::vector<int64_t>{1024, 4096, 16384, 65536}));
  parse_size_range("8:32:1.5", o);
  EXPECT_EQ(collective_sizes(o), (std::vector<int64_t>{8, 12, 18, 27}));
  // A factor far beyond the range ends the sweep at MIN instead of overflowing.
  parse_size_range("8:16:1e30", o);
  EXPECT_EQ(collective_sizes(o), (std::vector<int64_t>{8}));
  parse_size_range("1G:4611686018427387904:1e300", o);
  EXPECT_EQ(collective_sizes(o), (std::vector<int64_t>{int64_t{1} << 30}));
}

TEST(CollectiveOptions, OpsAcceptNcclTestsSpellings) {
  EXPECT_EQ(parse_ops("allreduce,all_gather,allreduce"),
            (std::vector<std::string>{"all_reduce", "all_gather"}));
  EXPECT_EQ(parse_ops("all").size(), 7u);
  EXPECT_NE(usage([] { parse_ops("all_reduce,gather"); }).find("unknown operation 'gather'"),
            std::string::npos);
  CollectiveOptions o;
  o.ops = {"sendrecv", "all_reduce"};
  EXPECT_EQ(selected_ops(o), (std::vector<std::string>{"all_reduce", "sendrecv"}));
  o.ops.clear();
  EXPECT_EQ(selected_ops(o).size(), 7u);
}

TEST(CollectiveOptions, NcclValuesAreCanonicalised) {
  EXPECT_EQ(parse_nccl_values("ring,TREE", nccl_algos(), "--algos"),
            (std::vector<std::string>{"Ring", "Tree"}));
  EXPECT_EQ(parse_nccl_values("all", nccl_protos(), "--protos").size(), 3u);
  const std::string m = usage([] { parse_nccl_values("Ring,Butterfly", nccl_algos(), "--algos"); });
  EXPECT_NE(m.find("--algos: unknown value 'Butterfly'; NCCL knows: Ring, Tree"),
            std::string::npos);
}

TEST(CollectiveOptions, GraphMode) {
  EXPECT_EQ(parse_graph_mode("AUTO"), GraphMode::kAuto);
  EXPECT_EQ(parse_graph_mode("off"), GraphMode::kOff);
  EXPECT_EQ(parse_graph_mode("on"), GraphMode::kOn);
  EXPECT_NE(usage([] { parse_graph_mode("maybe"); }).find("expected auto, off or on"),
            std::string::npos);
}

}  // namespace
}  // namespace gpuvs::comm
