// A GPU's measured figures, every metric of the vocabulary (specs/metrics.h) with
// every configuration, as compare builds them (measured_cells: one figure per metric
// and configuration, best evidence first). What the baseline rules and the fleet
// judge: like with like is one metric id and one configuration, measured only.
//
// A sweep (a host link's sizes, a collective's message sizes) is judged at one size,
// as compare shows it: keep_common_sizes() keeps, per metric and configuration, the
// figure at the largest (or smallest, per the metric's pick) size that every GPU
// holding that configuration measured; where they share no size, none.
#pragma once

#include <string>
#include <vector>

#include "report/compare.h"
#include "specs/metrics.h"

namespace gpuvs {

struct MeasuredFigure {
  const MetricDef* metric = nullptr;
  Config config;  // the metric's configuration parameters and, for a sweep, its size
  Cell cell;      // measured: a value, or invalid
};

// Every measured figure of GPU `gpu_index` of `run`, in the vocabulary's order.
// `run_ref` (the file) goes into each cell's source_ref.
std::vector<MeasuredFigure> measured_figures(const RunFile& run, int gpu_index,
                                             const std::string& run_ref);

// Per metric with a size parameter and configuration (the size left out): only the
// figure at the size the metric picks among those every GPU of `per_gpu` that holds
// the configuration has; the other sizes are removed.
void keep_common_sizes(std::vector<std::vector<MeasuredFigure>*> per_gpu);

// "Memory bandwidth", "all_reduce bus bandwidth (8 GPUs, 8 GiB)": a figure for people.
std::string figure_label(const MeasuredFigure& f);

}  // namespace gpuvs
