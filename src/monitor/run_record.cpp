// The monitor's records in a run file; see run_record.h.
#include "monitor/run_record.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <utility>

namespace gpuvs::monitor {

std::vector<GpuSample> slice_covering(const std::vector<GpuSample>& timeline, double t_begin,
                                      double t_end) {
  // Samples at or before t_begin cover time before the window: skip them at once.
  auto it = std::upper_bound(timeline.begin(), timeline.end(), t_begin,
                             [](double t, const GpuSample& s) { return t < s.t_s; });
  // A zero-length window at a sample's time is covered by that sample.
  if (t_end <= t_begin) {
    it = std::lower_bound(timeline.begin(), timeline.end(), t_begin,
                          [](const GpuSample& s, double t) { return s.t_s < t; });
  }
  std::vector<GpuSample> out;
  std::set<int> done;  // GPUs whose sample at or after t_end is taken
  std::set<int> seen;  // every GPU met, to stop once all are done
  for (; it != timeline.end(); ++it) {
    const GpuSample& s = *it;
    seen.insert(s.gpu);
    if (done.count(s.gpu) != 0) {
      if (done.size() == seen.size()) break;
      continue;
    }
    out.push_back(s);
    if (s.t_s >= t_end) done.insert(s.gpu);
  }
  return out;
}

GpuUtilization to_run_utilization(const GpuSummary& summary, int run_gpu) {
  const auto dist = [](const std::optional<Distribution>& d) -> std::optional<UtilDistribution> {
    if (!d) return std::nullopt;
    return UtilDistribution{d->mean, d->p95};
  };
  GpuUtilization u;
  u.gpu = run_gpu;
  u.samples = summary.samples;
  u.duration_s = summary.duration_s;
  u.sm_util_pct = dist(summary.sm_util_pct);
  u.tensor_util_pct = dist(summary.tensor_util_pct);
  u.dram_bw_util_pct = dist(summary.dram_bw_util_pct);
  u.gpu_util_pct = dist(summary.gpu_util_pct);
  u.power_w_mean = summary.power_w_mean;
  u.power_w_max = summary.power_w_max;
  u.energy_j = summary.energy_j;
  u.throttled_s = summary.throttled_s;
  u.throttle_s_by_reason = summary.throttle_s_by_reason;
  return u;
}

std::optional<Utilization> window_utilization(const std::vector<GpuSample>& timeline,
                                              const std::string& step, double t_begin, double t_end,
                                              const std::vector<int>& run_gpus,
                                              const std::vector<int>& wanted) {
  std::vector<GpuSample> window;
  for (GpuSample& s : slice_covering(timeline, t_begin, t_end)) {
    if (s.gpu < 0 || static_cast<size_t>(s.gpu) >= run_gpus.size()) continue;
    const int run_gpu = run_gpus[static_cast<size_t>(s.gpu)];
    if (std::find(wanted.begin(), wanted.end(), run_gpu) == wanted.end()) continue;
    s.gpu = run_gpu;
    window.push_back(std::move(s));
  }
  if (window.empty()) return std::nullopt;
  std::map<int, GpuUtilization> by_gpu;
  for (const GpuSummary& g : summarize(window))
    by_gpu.emplace(g.gpu, to_run_utilization(g, g.gpu));
  Utilization u;
  u.step = step;
  u.t_begin_s = t_begin;
  u.t_end_s = std::max(t_begin, t_end);
  for (int gpu : wanted)
    if (auto it = by_gpu.find(gpu); it != by_gpu.end()) u.gpus.push_back(std::move(it->second));
  return u;
}

namespace {

// v rounded to 1/scale: dividing the rounded integer by the scale gives the double
// nearest the decimal (12.3, not 12.300000000000001), so the text stays short.
double round_to(double v, double scale) {
  return std::round(v * scale) / scale;
}

std::optional<double> round_opt(const std::optional<double>& v, double scale) {
  if (!v || !std::isfinite(*v)) return std::nullopt;  // NVML gives none; never write NaN
  return round_to(*v, scale);
}

}  // namespace

Timeline to_run_timeline(const std::vector<GpuSample>& timeline, const std::vector<int>& run_gpus,
                         double interval_s, std::vector<std::string> notes) {
  Timeline t;
  t.interval_s = interval_s;
  t.notes = std::move(notes);
  std::map<int, GpuTimeline> by_gpu;
  for (const GpuSample& s : timeline) {
    if (s.gpu < 0 || static_cast<size_t>(s.gpu) >= run_gpus.size()) continue;
    const int run_gpu = run_gpus[static_cast<size_t>(s.gpu)];
    GpuTimeline& g = by_gpu[run_gpu];
    g.gpu = run_gpu;
    // Rounding keeps the order: round_to is monotonic.
    g.t_s.push_back(std::max(0.0, round_to(s.t_s, 1000)));
    g.sm_util_pct.push_back(round_opt(s.sm_util_pct, 10));
    g.tensor_util_pct.push_back(round_opt(s.tensor_util_pct, 10));
    g.dram_bw_util_pct.push_back(round_opt(s.dram_bw_util_pct, 10));
    g.gpu_util_pct.push_back(round_opt(s.gpu_util_pct, 10));
    g.power_w.push_back(round_opt(s.power_w, 10));
    g.sm_mhz.push_back(s.sm_mhz);
  }
  bool all_gpm = !by_gpu.empty();
  for (auto& [gpu, g] : by_gpu) {
    all_gpm = all_gpm && std::any_of(g.sm_util_pct.begin(), g.sm_util_pct.end(),
                                     [](const std::optional<double>& v) { return v.has_value(); });
    t.gpus.push_back(std::move(g));
  }
  t.source = t.gpus.empty() ? "none" : all_gpm ? "nvml+gpm" : "nvml";
  return t;
}

}  // namespace gpuvs::monitor
