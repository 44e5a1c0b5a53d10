// The monitor's records in a run file (docs/monitor.md, docs/results.md):
// a result's utilization over its window and the run's timeline, made from a
// Sampler's timeline. Plain C++ (core structs in, core structs out); the summaries
// themselves come from monitor/summary.h, the one place that computes them.
//
// GPU numbers: a sample's `gpu` is its position in the Source; `run_gpus[position]`
// is that GPU's index in the run's system.gpus (the session samples only the GPUs it
// measures, in the order it was given them). A sample whose position has no entry in
// run_gpus is ignored.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "core/run_file.h"
#include "monitor/sample.h"
#include "monitor/summary.h"

namespace gpuvs::monitor {

// The samples whose interval (t_prev, t] overlaps [t_begin, t_end], per GPU: from the
// first sample after t_begin up to and including the first sample at or after t_end.
// So a window shorter than the sampling interval still gets the one sample whose
// (GPM) averages cover it. `timeline` must be sorted by time (Sampler::timeline is).
std::vector<GpuSample> slice_covering(const std::vector<GpuSample>& timeline, double t_begin,
                                      double t_end);

// The run-file form of a summary, for the run's GPU `run_gpu`.
GpuUtilization to_run_utilization(const GpuSummary& summary, int run_gpu);

// The utilization of the run GPUs `wanted` over [t_begin, t_end] (slice_covering,
// then summarize), labelled with `step`; GPUs in the order of `wanted`, those without
// a sample left out. nullopt when none of them has a sample in the window.
std::optional<Utilization> window_utilization(const std::vector<GpuSample>& timeline,
                                              const std::string& step, double t_begin, double t_end,
                                              const std::vector<int>& run_gpus,
                                              const std::vector<int>& wanted);

// The run file's timeline: one GpuTimeline per position of run_gpus that has samples
// (sorted by run GPU index), values rounded for size (t_s to 1 ms, percentages and
// watts to 0.1). source: "nvml+gpm" when every GPU has a GPM figure (SM activity)
// somewhere, "nvml" when there are samples, else "none" (the notes say why).
Timeline to_run_timeline(const std::vector<GpuSample>& timeline, const std::vector<int>& run_gpus,
                         double interval_s, std::vector<std::string> notes);

}  // namespace gpuvs::monitor
