// The run file's monitor records (schema gpuvs.run/1, docs/results.md): a result's
// `utilization` and the run's `timeline`. Both are optional: files written before
// they existed, or by runs without the monitor, have null or no key and stay valid.
//
// Reading follows run_file_json.cpp: the first offending field is named. Rules:
//  - GPU indices fall in system.gpus; a GPU appears at most once per list;
//  - times, durations, percentages, powers and energies are >= 0 (GPM percentages
//    are not capped at 100: NVML does not promise it);
//  - utilization: t_begin_s <= t_end_s;
//  - timeline: source is "nvml+gpm", "nvml" or "none"; interval_s > 0; every column
//    has as many entries as t_s (null where absent); t_s is non-decreasing.
#include <algorithm>
#include <iterator>
#include <set>

#include "core/run_file_reader.h"

namespace gpuvs::run_json {

namespace {

ojson opt_dist(const std::optional<UtilDistribution>& d) {
  if (!d) return nullptr;
  return ojson{{"mean", d->mean}, {"p95", d->p95}};
}

template <class T>
ojson column(const std::vector<std::optional<T>>& values) {
  ojson out = ojson::array();
  for (const std::optional<T>& v : values)
    out.push_back(opt(v));
  return out;
}

}  // namespace

ojson utilization_to_json(const Utilization& u) {
  ojson gpus = ojson::array();
  for (const GpuUtilization& g : u.gpus) {
    ojson reasons = ojson::object();  // std::map: written sorted by key
    for (const auto& [reason, seconds] : g.throttle_s_by_reason)
      reasons[reason] = seconds;
    gpus.push_back(ojson{{"gpu", g.gpu},
                         {"samples", g.samples},
                         {"duration_s", g.duration_s},
                         {"sm_util_pct", opt_dist(g.sm_util_pct)},
                         {"tensor_util_pct", opt_dist(g.tensor_util_pct)},
                         {"dram_bw_util_pct", opt_dist(g.dram_bw_util_pct)},
                         {"gpu_util_pct", opt_dist(g.gpu_util_pct)},
                         {"power_w_mean", opt(g.power_w_mean)},
                         {"power_w_max", opt(g.power_w_max)},
                         {"energy_j", opt(g.energy_j)},
                         {"throttled_s", g.throttled_s},
                         {"throttle_s_by_reason", std::move(reasons)}});
  }
  return ojson{{"step", u.step},
               {"t_begin_s", u.t_begin_s},
               {"t_end_s", u.t_end_s},
               {"gpus", std::move(gpus)}};
}

ojson timeline_to_json(const Timeline& t) {
  ojson gpus = ojson::array();
  for (const GpuTimeline& g : t.gpus) {
    gpus.push_back(ojson{{"gpu", g.gpu},
                         {"t_s", g.t_s},
                         {"sm_util_pct", column(g.sm_util_pct)},
                         {"tensor_util_pct", column(g.tensor_util_pct)},
                         {"dram_bw_util_pct", column(g.dram_bw_util_pct)},
                         {"gpu_util_pct", column(g.gpu_util_pct)},
                         {"power_w", column(g.power_w)},
                         {"sm_mhz", column(g.sm_mhz)}});
  }
  return ojson{{"source", t.source},
               {"interval_s", t.interval_s},
               {"notes", t.notes},
               {"gpus", std::move(gpus)}};
}

namespace {

constexpr std::string_view kTimelineSources[] = {"nvml+gpm", "nvml", "none"};

int read_gpu_index(const Obj& o, std::size_t gpu_count, std::set<int>& seen) {
  const int gpu = o.req<int>("gpu");
  if (gpu < 0 || std::size_t(gpu) >= gpu_count) {
    o.fail_at("gpu", fmt::format("GPU index {} is out of range (system.gpus has {} entries)", gpu,
                                 gpu_count));
  }
  if (!seen.insert(gpu).second) o.fail_at("gpu", fmt::format("GPU {} appears twice", gpu));
  return gpu;
}

std::optional<double> non_negative(const Obj& o, const char* key) {
  const std::optional<double> v = o.opt<double>(key);
  if (v) require_at_least(o, key, *v, 0.0);
  return v;
}

std::optional<UtilDistribution> read_dist(const Obj& o, const char* key) {
  const std::optional<Obj> d = o.opt_obj(key);
  if (!d) return std::nullopt;
  UtilDistribution out;
  out.mean = d->req<double>("mean");
  require_at_least(*d, "mean", out.mean, 0.0);
  out.p95 = d->req<double>("p95");
  require_at_least(*d, "p95", out.p95, 0.0);
  return out;
}

GpuUtilization read_gpu_utilization(const Obj& o, std::size_t gpu_count, std::set<int>& seen) {
  GpuUtilization g;
  g.gpu = read_gpu_index(o, gpu_count, seen);
  g.samples = o.req<int>("samples");
  require_at_least(o, "samples", g.samples, 0);
  g.duration_s = o.req<double>("duration_s");
  require_at_least(o, "duration_s", g.duration_s, 0.0);
  g.sm_util_pct = read_dist(o, "sm_util_pct");
  g.tensor_util_pct = read_dist(o, "tensor_util_pct");
  g.dram_bw_util_pct = read_dist(o, "dram_bw_util_pct");
  g.gpu_util_pct = read_dist(o, "gpu_util_pct");
  g.power_w_mean = non_negative(o, "power_w_mean");
  g.power_w_max = non_negative(o, "power_w_max");
  g.energy_j = non_negative(o, "energy_j");
  g.throttled_s = o.req<double>("throttled_s");
  require_at_least(o, "throttled_s", g.throttled_s, 0.0);
  const Obj reasons = o.obj("throttle_s_by_reason");
  for (const auto& [reason, value] : reasons.json_value().items()) {
    double seconds = 0;
    const std::string problem = convert(value, seconds);
    if (!problem.empty()) reasons.fail_at(reason, problem);
    if (seconds < 0) reasons.fail_at(reason, fmt::format("must be >= 0, got {}", seconds));
    g.throttle_s_by_reason.emplace(reason, seconds);
  }
  return g;
}

// A column of the timeline: `size` entries, each null or a value of type T that
// passes `valid` (which returns the problem, or "").
template <class T, class Valid>
std::vector<std::optional<T>> read_column(const Obj& o, const char* key, std::size_t size,
                                          Valid valid) {
  if (o.array_size(key) != size) {
    o.fail_at(key, fmt::format("has {} entries, t_s has {}", o.array_size(key), size));
  }
  const json& a = o.json_value().at(key);
  std::vector<std::optional<T>> out(size);
  for (std::size_t i = 0; i < size; ++i) {
    if (a[i].is_null()) continue;
    T v{};
    std::string problem = convert(a[i], v);
    if (problem.empty()) problem = valid(v);
    if (!problem.empty()) fail(o.name(), o.path(key) + "[" + std::to_string(i) + "]", problem);
    out[i] = v;
  }
  return out;
}

template <class T>
std::string at_least_zero(T v) {
  return v < T{0} ? fmt::format("must be >= 0, got {}", v) : std::string();
}

GpuTimeline read_gpu_timeline(const Obj& o, std::size_t gpu_count, std::set<int>& seen) {
  GpuTimeline g;
  g.gpu = read_gpu_index(o, gpu_count, seen);
  g.t_s = o.vec<double>("t_s");
  for (std::size_t i = 0; i < g.t_s.size(); ++i) {
    const bool bad = g.t_s[i] < 0 || (i > 0 && g.t_s[i] < g.t_s[i - 1]);
    if (bad) {
      fail(o.name(), o.path("t_s") + "[" + std::to_string(i) + "]",
           fmt::format("must be >= 0 and >= the entry before, got {}", g.t_s[i]));
    }
  }
  const std::size_t n = g.t_s.size();
  const auto pct = [](double v) { return at_least_zero(v); };
  g.sm_util_pct = read_column<double>(o, "sm_util_pct", n, pct);
  g.tensor_util_pct = read_column<double>(o, "tensor_util_pct", n, pct);
  g.dram_bw_util_pct = read_column<double>(o, "dram_bw_util_pct", n, pct);
  g.gpu_util_pct = read_column<double>(o, "gpu_util_pct", n, pct);
  g.power_w = read_column<double>(o, "power_w", n, pct);
  g.sm_mhz = read_column<int>(o, "sm_mhz", n, [](int v) { return at_least_zero(v); });
  return g;
}

}  // namespace

Utilization read_utilization(const Obj& o, std::size_t gpu_count) {
  Utilization u;
  u.step = o.req<std::string>("step");
  u.t_begin_s = o.req<double>("t_begin_s");
  require_at_least(o, "t_begin_s", u.t_begin_s, 0.0);
  u.t_end_s = o.req<double>("t_end_s");
  require_at_least(o, "t_end_s", u.t_end_s, u.t_begin_s);
  std::set<int> seen;
  u.gpus = o.objects<GpuUtilization>(
      "gpus", [&](const Obj& g) { return read_gpu_utilization(g, gpu_count, seen); });
  return u;
}

Timeline read_timeline(const Obj& o, std::size_t gpu_count) {
  Timeline t;
  t.source = o.req<std::string>("source");
  if (std::find(std::begin(kTimelineSources), std::end(kTimelineSources), t.source) ==
      std::end(kTimelineSources)) {
    o.fail_at("source", "unknown source " + quote(t.source) + " (expected nvml+gpm, nvml or none)");
  }
  t.interval_s = o.req<double>("interval_s");
  require_greater(o, "interval_s", t.interval_s, 0.0);
  t.notes = o.vec<std::string>("notes");
  std::set<int> seen;
  t.gpus = o.objects<GpuTimeline>(
      "gpus", [&](const Obj& g) { return read_gpu_timeline(g, gpu_count, seen); });
  return t;
}

}  // namespace gpuvs::run_json
