#include "core/stats.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <vector>

namespace gpuvs {

double median(std::span<const double> values) {
  if (values.empty()) return 0;
  std::vector<double> v(values.begin(), values.end());
  const size_t mid = v.size() / 2;
  std::nth_element(v.begin(), v.begin() + mid, v.end());
  if (v.size() % 2 == 1) return v[mid];
  const double upper = v[mid];
  const double lower = *std::max_element(v.begin(), v.begin() + mid);
  return (lower + upper) / 2;
}

double stddev(std::span<const double> values) {
  if (values.size() < 2) return 0;
  const double mean = std::accumulate(values.begin(), values.end(), 0.0) / values.size();
  double sq = 0;
  for (double x : values)
    sq += (x - mean) * (x - mean);
  return std::sqrt(sq / (values.size() - 1));
}

std::optional<double> percentile_nearest_rank(std::span<const double> values, int q) {
  if (values.empty() || q <= 0 || q > 100) return std::nullopt;
  const size_t n = values.size();
  const size_t rank = (size_t(q) * n + 99) / 100;  // ceil(q n / 100), in [1, n]
  std::vector<double> v(values.begin(), values.end());
  std::nth_element(v.begin(), v.begin() + (rank - 1), v.end());
  return v[rank - 1];
}

Stats compute_stats(std::span<const double> values) {
  Stats s;
  s.samples = static_cast<int>(values.size());
  if (values.empty()) return s;
  const auto [lo, hi] = std::minmax_element(values.begin(), values.end());
  s.min = *lo;
  s.max = *hi;
  s.median = median(values);
  s.mean = std::accumulate(values.begin(), values.end(), 0.0) / values.size();
  s.stddev = stddev(values);
  s.noise = s.median != 0 ? s.stddev / std::fabs(s.median) : 0;
  s.p99 = percentile_nearest_rank(values, 99);
  return s;
}

}  // namespace gpuvs
