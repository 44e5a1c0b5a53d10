// Statistics over samples: median of odd and even counts, sample stddev, noise.
#include <gtest/gtest.h>

#include <vector>

#include "core/stats.h"

namespace gpuvs {
namespace {

TEST(Stats, MedianOddAndEven) {
  const std::vector<double> odd = {5, 1, 3};
  const std::vector<double> even = {4, 1, 3, 2};
  EXPECT_DOUBLE_EQ(median(odd), 3);
  EXPECT_DOUBLE_EQ(median(even), 2.5);
  EXPECT_DOUBLE_EQ(median(std::vector<double>{}), 0);
}

TEST(Stats, SampleStddevAndNoise) {
  const std::vector<double> v = {2, 4, 4, 4, 5, 5, 7, 9};  // mean 5, sample sd sqrt(32/7)
  const Stats s = compute_stats(v);
  EXPECT_EQ(s.samples, 8);
  EXPECT_DOUBLE_EQ(s.mean, 5);
  EXPECT_DOUBLE_EQ(s.min, 2);
  EXPECT_DOUBLE_EQ(s.max, 9);
  EXPECT_DOUBLE_EQ(s.median, 4.5);
  EXPECT_NEAR(s.stddev, 2.138089935, 1e-9);
  EXPECT_NEAR(s.noise, 2.138089935 / 4.5, 1e-9);
}

TEST(Stats, SingleAndEmpty) {
  const Stats one = compute_stats(std::vector<double>{3.5});
  EXPECT_EQ(one.samples, 1);
  EXPECT_DOUBLE_EQ(one.median, 3.5);
  EXPECT_DOUBLE_EQ(one.stddev, 0);
  EXPECT_DOUBLE_EQ(one.noise, 0);
  const Stats none = compute_stats(std::vector<double>{});
  EXPECT_EQ(none.samples, 0);
  EXPECT_DOUBLE_EQ(none.median, 0);
}

}  // namespace
}  // namespace gpuvs
