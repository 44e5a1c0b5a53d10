// The largest-batch search over a fake GPU: memory use is fixed + per_item * batch,
// a candidate fits when that stays within the device's memory. Checks the answer,
// the bracket, how many candidates it needs, out-of-memory recovery (a failure is
// never the end), and the recommended batch with headroom.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <set>

#include "core/error.h"
#include "models/batch_search.h"

namespace gpuvs::models {
namespace {

constexpr double kGB = 1e9;

// A GPU of `total` bytes with `baseline` already in use; a model of `fixed` bytes
// plus `per_item` per image. `noise` adds that fraction of the per-item use to odd
// batches (allocator rounding), so the line is not exact.
struct FakeGpu {
  double total = 141 * kGB;
  double baseline = 0.5 * kGB;
  double fixed = 2 * kGB;
  double per_item = 80e6;
  double noise = 0;
  std::vector<int> tried;

  double used(int b) const { return fixed + per_item * b + ((b % 2) != 0 ? noise * per_item : 0); }
  int true_max() const {
    int b = 0;
    while (baseline + used(b + 1) <= total)
      ++b;
    return b;
  }
  FitProbe operator()(int b) {
    tried.push_back(b);
    if (baseline + used(b) > total) return {false, std::nullopt, "out of memory"};
    return {true, used(b), ""};
  }
};

// The same GPU with no memory figure reported: the search can only bisect.
std::function<FitProbe(int)> blind(FakeGpu& gpu) {
  return [&gpu](int b) {
    FitProbe p = gpu(b);
    p.used_bytes.reset();
    return p;
  };
}

BatchSearchOptions options_for(const FakeGpu& gpu) {
  BatchSearchOptions o;
  o.total_bytes = gpu.total;
  o.baseline_bytes = gpu.baseline;
  o.relative_width = 0;  // close to the granularity: the tests check convergence to 8
  return o;
}

TEST(BatchSearch, FindsTheLargestFitWithinTheGranularity) {
  FakeGpu gpu;
  const auto o = options_for(gpu);
  const BatchSearchResult r = search_max_batch(std::ref(gpu), o);
  const int truth = gpu.true_max();  // (141 - 0.5 - 2) GB / 80 MB = 1731
  EXPECT_EQ(truth, 1731);
  EXPECT_LE(r.max_batch, truth);
  EXPECT_GT(r.max_batch, truth - o.granularity);
  EXPECT_GT(r.first_failure, truth);
  EXPECT_LE(r.first_failure - r.max_batch, o.granularity);
  // 64, the proportional guess (1256), the exact line's 1728 and 1736 above it.
  EXPECT_EQ(gpu.tried, (std::vector<int>{64, 1256, 1728, 1736}));
  // No batch is tried twice, and every one is within [1, limit].
  std::set<int> unique(gpu.tried.begin(), gpu.tried.end());
  EXPECT_EQ(unique.size(), gpu.tried.size());
  for (int b : gpu.tried) {
    EXPECT_GE(b, 1);
    EXPECT_LE(b, o.limit);
  }
}

TEST(BatchSearch, RecoversFromFailuresWithoutAMemoryLine) {
  // No memory figures at all: plain bisection still converges.
  FakeGpu gpu;
  const auto o = options_for(gpu);
  const BatchSearchResult r = search_max_batch(blind(gpu), o);
  const int truth = gpu.true_max();
  EXPECT_LE(r.max_batch, truth);
  EXPECT_GT(r.max_batch, truth - o.granularity);
  EXPECT_FALSE(r.memory.has_value());
  // Several failures happened and the search went on after each.
  const auto failures = std::count_if(r.probes.begin(), r.probes.end(),
                                      [](const BatchProbe& p) { return !p.probe.fits; });
  EXPECT_GE(failures, 2);
  EXPECT_EQ(r.recommended_batch, static_cast<int>(r.max_batch * 0.9) / 8 * 8);
}

TEST(BatchSearch, NoisyMemoryStillConverges) {
  FakeGpu gpu;
  gpu.noise = 0.7;
  const auto o = options_for(gpu);
  const BatchSearchResult r = search_max_batch(std::ref(gpu), o);
  const int truth = gpu.true_max();
  EXPECT_LE(r.max_batch, truth);
  EXPECT_GT(r.max_batch, truth - o.granularity);
  EXPECT_LE(r.probes.size(), static_cast<size_t>(o.max_probes));
}

TEST(BatchSearch, StartTooLargeHalvesDown) {
  FakeGpu gpu;
  gpu.total = 8 * kGB;  // (8 - 0.5 - 2) GB / 80 MB = 68
  BatchSearchOptions o = options_for(gpu);
  o.start = 512;
  const BatchSearchResult r = search_max_batch(std::ref(gpu), o);
  EXPECT_EQ(gpu.tried[0], 512);
  EXPECT_EQ(gpu.tried[1], 256);
  EXPECT_LE(r.max_batch, 68);
  EXPECT_GT(r.max_batch, 68 - o.granularity);
}

// Memory that grows faster than the line at large batches (activations spilling into
// a second workspace): the line over-predicts, the search brackets and still converges.
TEST(BatchSearch, OverPredictingLineStillConverges) {
  FakeGpu gpu;
  auto curved = [&](int b) {
    gpu.tried.push_back(b);
    const double used = gpu.fixed + gpu.per_item * b + 2e4 * double(b) * b;
    if (gpu.baseline + used > gpu.total) return FitProbe{false, std::nullopt, "out of memory"};
    return FitProbe{true, used, ""};
  };
  int truth = 0;
  while (gpu.baseline + gpu.fixed + gpu.per_item * (truth + 1) +
             2e4 * double(truth + 1) * (truth + 1) <=
         gpu.total)
    ++truth;
  const auto o = options_for(gpu);
  const BatchSearchResult r = search_max_batch(curved, o);
  EXPECT_LE(r.max_batch, truth);
  EXPECT_GT(r.max_batch, truth - o.granularity);
  EXPECT_LE(r.probes.size(), 12u);
  EXPECT_GE(std::count_if(r.probes.begin(), r.probes.end(),
                          [](const BatchProbe& p) { return !p.probe.fits; }),
            1);
}

// The default relative stop: with no memory figure to predict from, the search
// bisects, and stops once the bracket is at most 2 % of the largest fit, in fewer
// candidates than closing it to 8.
TEST(BatchSearch, RelativeWidthClosesEarlier) {
  FakeGpu gpu;
  const BatchSearchOptions exact = options_for(gpu);
  const BatchSearchResult narrow = search_max_batch(blind(gpu), exact);
  BatchSearchOptions o = exact;
  o.relative_width = 0.02;
  const BatchSearchResult r = search_max_batch(blind(gpu), o);
  ASSERT_GT(r.max_batch, 0);
  ASSERT_GT(r.first_failure, r.max_batch);
  EXPECT_LE(r.first_failure - r.max_batch, std::max(8, static_cast<int>(0.02 * r.max_batch)));
  EXPECT_GT(r.first_failure - r.max_batch, 8);  // it did stop early here
  EXPECT_LT(r.probes.size(), narrow.probes.size());
  EXPECT_LE(r.max_batch, narrow.max_batch);
  EXPECT_GE(r.max_batch, narrow.max_batch * 0.98);
}

// Memory that grows slower than the line (a fixed pool taken at the first step): the
// line under-predicts, the search gallops above the largest fit.
TEST(BatchSearch, UnderPredictingLineGallops) {
  FakeGpu gpu;
  auto concave = [&](int b) {
    gpu.tried.push_back(b);
    const double used = gpu.fixed + gpu.per_item * b * (b < 600 ? 1.0 : 0.8) +
                        (b < 600 ? 0 : gpu.per_item * 600 * 0.2);
    if (gpu.baseline + used > gpu.total) return FitProbe{false, std::nullopt, "out of memory"};
    return FitProbe{true, used, ""};
  };
  int truth = 0;
  while (true) {
    const int b = truth + 1;
    const double used = gpu.fixed + gpu.per_item * b * (b < 600 ? 1.0 : 0.8) +
                        (b < 600 ? 0 : gpu.per_item * 600 * 0.2);
    if (gpu.baseline + used > gpu.total) break;
    truth = b;
  }
  const auto o = options_for(gpu);
  const BatchSearchResult r = search_max_batch(concave, o);
  EXPECT_LE(r.max_batch, truth);
  EXPECT_GT(r.max_batch, truth - o.granularity);
  EXPECT_LE(r.probes.size(), 14u);
  std::set<int> unique(gpu.tried.begin(), gpu.tried.end());
  EXPECT_EQ(unique.size(), gpu.tried.size());
}

TEST(BatchSearch, NothingFits) {
  FakeGpu gpu;
  gpu.total = 2.1 * kGB;  // the fixed part alone does not fit
  BatchSearchOptions o = options_for(gpu);
  o.start = 16;
  const BatchSearchResult r = search_max_batch(std::ref(gpu), o);
  EXPECT_EQ(r.max_batch, 0);
  EXPECT_EQ(r.recommended_batch, 0);
  EXPECT_EQ(r.first_failure, 1);
  EXPECT_EQ(gpu.tried, (std::vector<int>{16, 8, 4, 2, 1}));
  EXPECT_NE(r.recommendation.find("not even batch 1"), std::string::npos);
}

TEST(BatchSearch, LimitReachedWithoutFailure) {
  FakeGpu gpu;
  gpu.per_item = 1e3;  // everything fits
  BatchSearchOptions o = options_for(gpu);
  o.limit = 1000;
  const BatchSearchResult r = search_max_batch(std::ref(gpu), o);
  EXPECT_EQ(r.max_batch, 1000);
  EXPECT_EQ(r.first_failure, 0);
  EXPECT_EQ(gpu.tried.back(), 1000);
}

TEST(BatchSearch, MaxProbesBoundsTheWork) {
  FakeGpu gpu;
  BatchSearchOptions o = options_for(gpu);
  o.total_bytes = 0;  // no device total: no prediction, the search can only double
  o.max_probes = 5;
  o.start = 1;
  const BatchSearchResult r = search_max_batch(std::ref(gpu), o);
  EXPECT_EQ(r.probes.size(), 5u);
  EXPECT_EQ(r.max_batch, 16);  // 1, 2, 4, 8, 16: still fitting when the budget ended
}

TEST(BatchSearch, RecommendedBatchLeavesHeadroom) {
  FakeGpu gpu;
  BatchSearchOptions o = options_for(gpu);
  o.headroom = 0.10;
  const BatchSearchResult r = search_max_batch(std::ref(gpu), o);
  ASSERT_TRUE(r.memory.has_value());
  EXPECT_NEAR(r.memory->per_item_bytes, gpu.per_item, 1);
  EXPECT_NEAR(r.memory->fixed_bytes, gpu.fixed, 1e3);
  // (0.9 * 141 - 0.5 - 2) GB / 80 MB = 1555.0 -> 1552 (multiple of 8).
  EXPECT_EQ(r.recommended_batch, 1552);
  EXPECT_LE(gpu.baseline + gpu.used(r.recommended_batch), 0.9 * gpu.total);
  EXPECT_NE(r.recommendation.find("90 %"), std::string::npos);

  o.headroom = 0.5;
  EXPECT_EQ(recommend_batch(r.memory, r.max_batch, o), 848);  // (70.5 - 2.5) GB / 80 MB = 850
}

TEST(BatchSearch, RecommendationNeverExceedsTheMaximum) {
  BatchSearchOptions o;
  o.total_bytes = 100 * kGB;
  o.headroom = 0;
  const MemoryLine line{0, 1e6};  // predicts 100000
  EXPECT_EQ(recommend_batch(line, 300, o), 296);
  EXPECT_EQ(recommend_batch(line, 5, o), 5);  // below 8: not rounded
  EXPECT_EQ(recommend_batch(std::nullopt, 5, o), 5);
  EXPECT_EQ(recommend_batch(line, 0, o), 0);
}

TEST(BatchSearch, MemoryLineFromProbes) {
  std::vector<BatchProbe> probes = {{64, {true, 2e9 + 64 * 1e8, ""}},
                                    {128, {true, 2e9 + 128 * 1e8, ""}},
                                    {256, {false, std::nullopt, "oom"}}};
  auto line = memory_line(probes);
  ASSERT_TRUE(line);
  EXPECT_NEAR(line->per_item_bytes, 1e8, 1e-3);
  EXPECT_NEAR(line->fixed_bytes, 2e9, 1);
  // One fit only: proportional, no fixed part.
  line = memory_line({probes[0]});
  ASSERT_TRUE(line);
  EXPECT_EQ(line->fixed_bytes, 0);
  EXPECT_NEAR(line->per_item_bytes, (2e9 + 64 * 1e8) / 64, 1e-3);
  // A line that shrinks with the batch: proportional from the largest.
  line = memory_line({{64, {true, 9e9, ""}}, {128, {true, 8e9, ""}}});
  ASSERT_TRUE(line);
  EXPECT_EQ(line->fixed_bytes, 0);
  EXPECT_NEAR(line->per_item_bytes, 8e9 / 128, 1e-3);
  EXPECT_FALSE(memory_line({}).has_value());
}

TEST(BatchSearch, RejectsBadOptions) {
  FakeGpu gpu;
  BatchSearchOptions o;
  o.start = 0;
  EXPECT_THROW(search_max_batch(std::ref(gpu), o), UsageError);
  o = BatchSearchOptions{};
  o.headroom = 1;
  EXPECT_THROW(search_max_batch(std::ref(gpu), o), UsageError);
  EXPECT_TRUE(gpu.tried.empty());
}

}  // namespace
}  // namespace gpuvs::models
