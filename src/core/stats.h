// Summary statistics over measurement samples (median, min, max, mean, stddev and
// relative noise = stddev / median). Pure functions; an empty input gives zeros.
#pragma once

#include <span>

#include "core/run_file.h"

namespace gpuvs {

// Median of the values (mean of the two middle ones for an even count).
double median(std::span<const double> values);

// Sample standard deviation (n - 1 in the denominator); 0 for fewer than two values.
double stddev(std::span<const double> values);

Stats compute_stats(std::span<const double> values);

}  // namespace gpuvs
