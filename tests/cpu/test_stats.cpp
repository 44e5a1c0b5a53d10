// Statistics over samples: median of odd and even counts, sample stddev, noise, and
// the nearest-rank 99th percentile.
#include <gtest/gtest.h>

#include <algorithm>
#include <random>
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

TEST(Stats, P99OfOneSampleIsThatSample) {
  const Stats s = compute_stats(std::vector<double>{3.5});
  ASSERT_TRUE(s.p99.has_value());
  EXPECT_EQ(*s.p99, 3.5);
}

TEST(Stats, P99IsNulloptWithoutSamples) {
  EXPECT_FALSE(compute_stats(std::vector<double>{}).p99.has_value());
  EXPECT_FALSE(percentile_nearest_rank(std::vector<double>{}, 99).has_value());
}

TEST(Stats, P99OfTenSamplesIsTheMax) {
  // rank ceil(0.99 * 10) = 10: the largest value.
  const std::vector<double> v = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10};
  const Stats s = compute_stats(v);
  ASSERT_TRUE(s.p99.has_value());
  EXPECT_EQ(*s.p99, 10);
  EXPECT_EQ(*s.p99, s.max);
}

TEST(Stats, P99EqualsMaxBelowOneHundredSamples) {
  for (int n = 1; n < 100; ++n) {
    std::vector<double> v(static_cast<std::size_t>(n));
    for (int i = 0; i < n; ++i)
      v[std::size_t(i)] = i + 1;
    EXPECT_EQ(compute_stats(v).p99, double(n)) << "n = " << n;
  }
  // n = 100: rank 99, the first count whose p99 is not the max.
  std::vector<double> hundred(100);
  for (int i = 0; i < 100; ++i)
    hundred[std::size_t(i)] = i + 1;
  EXPECT_EQ(compute_stats(hundred).p99, 99.0);
}

TEST(Stats, P99OfTwoHundredSamples) {
  // 1, 2, ..., 200: rank ceil(0.99 * 200) = 198, so p99 = 198 (not 199 or 200).
  std::vector<double> v(200);
  for (int i = 0; i < 200; ++i)
    v[std::size_t(i)] = 1.0 + i;
  const Stats s = compute_stats(v);
  ASSERT_TRUE(s.p99.has_value());
  EXPECT_EQ(*s.p99, 198.0);
  EXPECT_EQ(s.max, 200.0);

  // Latencies: 196 fast ones and a tail of four slow ones; p99 (rank 198) is the
  // second-slowest, the max the slowest.
  std::vector<double> lat(196, 1e-5);
  for (double t : {2e-5, 3e-5, 5e-5, 9e-5})
    lat.push_back(t);
  EXPECT_EQ(compute_stats(lat).p99, 3e-5);
}

TEST(Stats, P99OfUnsortedInput) {
  std::vector<double> v(200);
  for (int i = 0; i < 200; ++i)
    v[std::size_t(i)] = 1.0 + i;
  std::mt19937 rng(12345);
  std::shuffle(v.begin(), v.end(), rng);
  const std::vector<double> shuffled = v;
  EXPECT_EQ(compute_stats(v).p99, 198.0);
  EXPECT_EQ(v, shuffled) << "the input is left as it was";
  EXPECT_EQ(compute_stats(std::vector<double>{7, 1, 9, 3}).p99, 9.0);
  // Duplicates and negatives.
  EXPECT_EQ(compute_stats(std::vector<double>{-1, -5, -1, -3}).p99, -1.0);
}

TEST(Stats, OtherPercentiles) {
  const std::vector<double> v = {40, 10, 30, 20};
  EXPECT_EQ(percentile_nearest_rank(v, 50), 20.0);  // rank ceil(2) = 2
  EXPECT_EQ(percentile_nearest_rank(v, 51), 30.0);  // rank ceil(2.04) = 3
  EXPECT_EQ(percentile_nearest_rank(v, 1), 10.0);
  EXPECT_EQ(percentile_nearest_rank(v, 100), 40.0);
  EXPECT_FALSE(percentile_nearest_rank(v, 0).has_value());
  EXPECT_FALSE(percentile_nearest_rank(v, 101).has_value());
}

}  // namespace
}  // namespace gpuvs
