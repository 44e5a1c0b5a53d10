// Summary statistics over measurement samples (median, min, max, mean, stddev,
// relative noise = stddev / median, and the nearest-rank 99th percentile). Pure
// functions; an empty input gives zeros (and no p99).
#pragma once

#include <optional>
#include <span>

#include "core/run_file.h"

namespace gpuvs {

// Median of the values (mean of the two middle ones for an even count).
double median(std::span<const double> values);

// Sample standard deviation (n - 1 in the denominator); 0 for fewer than two values.
double stddev(std::span<const double> values);

// Nearest-rank percentile: the value of 1-based rank ceil(q / 100 * n) among the
// sorted values, q in [1, 100] (nullopt otherwise, and for an empty input). The rank
// is computed in integers, so no rounding of q / 100 * n can move it across an integer.
// Always one of the values: min <= p99 <= max, and p99 == max below 100 values.
std::optional<double> percentile_nearest_rank(std::span<const double> values, int q);

Stats compute_stats(std::span<const double> values);

}  // namespace gpuvs
