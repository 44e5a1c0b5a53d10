// The HTML report's "Utilization" section; see html_timeline.h.
// Every string from the run file is HTML-escaped; chart specs go through add_chart
// into the JSON island, which html.cpp makes safe for <script>.
#include "report/html_timeline.h"

#include <fmt/format.h>

#include <algorithm>
#include <optional>
#include <set>
#include <tuple>
#include <utility>
#include <vector>

#include "core/units.h"
#include "report/html.h"
#include "report/summary.h"

namespace gpuvs {
namespace {

using Json = nlohmann::ordered_json;

std::string gpu_name(const RunFile& run, int gpu) {
  if (gpu >= 0 && static_cast<size_t>(gpu) < run.system.gpus.size())
    return fmt::format("GPU {} ({})", gpu, short_gpu_name(run.system.gpus[gpu].name));
  return fmt::format("GPU {}", gpu);
}

// [t, value] pairs, averaged over runs of `stride` samples; null where a run has no value.
template <class T>
Json series_points(const std::vector<double>& t, const std::vector<std::optional<T>>& v) {
  const size_t n = std::min(t.size(), v.size());
  const size_t stride = std::max<size_t>(1, (n + kTimelineChartPoints - 1) / kTimelineChartPoints);
  Json points = Json::array();
  for (size_t i = 0; i < n; i += stride) {
    const size_t end = std::min(n, i + stride);
    double t_sum = 0, v_sum = 0;
    int v_count = 0;
    for (size_t k = i; k < end; ++k) {
      t_sum += t[k];
      if (v[k]) {
        v_sum += static_cast<double>(*v[k]);
        ++v_count;
      }
    }
    const double tm = t_sum / static_cast<double>(end - i);
    points.push_back(Json::array({tm, v_count ? Json(v_sum / v_count) : Json(nullptr)}));
  }
  return points;
}

template <class T>
bool any_value(const std::vector<std::optional<T>>& v) {
  return std::any_of(v.begin(), v.end(), [](const std::optional<T>& x) { return x.has_value(); });
}

// Each step's window once (its results share it), in time order.
struct StepWindow {
  std::string step;
  double t_begin = 0, t_end = 0;
  const Utilization* utilization = nullptr;
  auto key() const { return std::tie(t_begin, t_end, step); }
};

std::vector<StepWindow> step_windows(const RunFile& run) {
  std::vector<StepWindow> out;
  std::set<std::tuple<double, double, std::string>> seen;
  for (const Result& r : run.results) {
    if (!r.utilization) continue;
    const Utilization& u = *r.utilization;
    if (seen.emplace(u.t_begin_s, u.t_end_s, u.step).second)
      out.push_back({u.step, u.t_begin_s, u.t_end_s, &u});
  }
  std::sort(out.begin(), out.end(),
            [](const StepWindow& a, const StepWindow& b) { return a.key() < b.key(); });
  return out;
}

std::string pct(const std::optional<UtilDistribution>& d) {
  if (!d) return "n/a";
  return fmt::format("{:.1f} % <span class=\"sub\">p95 {:.1f} %</span>", d->mean, d->p95);
}

std::string watts(const std::optional<double>& mean, const std::optional<double>& max) {
  if (!mean) return "n/a";
  return fmt::format("{:.0f} W{}", *mean,
                     max ? fmt::format(" <span class=\"sub\">max {:.0f} W</span>", *max) : "");
}

void step_table(std::string& out, const RunFile& run, const std::vector<StepWindow>& windows) {
  if (windows.empty()) return;
  out +=
      "<div class=\"table-wrap\"><table class=\"utilization\">\n<thead><tr><th>step</th>"
      "<th>GPU</th><th>window (s)</th><th>samples</th><th>SM active</th><th>tensor</th>"
      "<th>DRAM bandwidth</th><th>GPU util (NVML)</th><th>power</th><th>energy</th>"
      "<th>throttled</th></tr></thead>\n<tbody>\n";
  for (const StepWindow& w : windows) {
    for (const GpuUtilization& g : w.utilization->gpus) {
      std::string throttled = g.throttled_s > 0 ? fmt::format("{:.1f} s", g.throttled_s) : "no";
      for (const auto& [reason, s] : g.throttle_s_by_reason)
        if (reason != "gpu_idle" && s > 0)
          throttled +=
              fmt::format("<span class=\"sub\">{}: {:.1f} s</span>", escape_html(reason), s);
      out += fmt::format(
          "<tr><td>{}</td><td>{}</td><td class=\"num\">{:.1f} – {:.1f}</td><td class=\"num\">{}"
          "</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td>"
          "<td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td>{}</td>"
          "</tr>\n",
          escape_html(w.step), escape_html(gpu_name(run, g.gpu)), w.t_begin, w.t_end, g.samples,
          pct(g.sm_util_pct), pct(g.tensor_util_pct), pct(g.dram_bw_util_pct), pct(g.gpu_util_pct),
          watts(g.power_w_mean, g.power_w_max),
          g.energy_j ? escape_html(format_si(*g.energy_j, "J")) : "n/a", throttled);
    }
  }
  out += "</tbody></table></div>\n";
}

}  // namespace

Json timeline_chart_spec(const RunFile& run, const GpuTimeline& g) {
  Json series = Json::array();
  const auto add = [&](const char* label, const char* unit, const char* axis, const auto& column) {
    if (any_value(column))
      series.push_back({{"label", label},
                        {"unit", unit},
                        {"axis", axis},
                        {"points", series_points(g.t_s, column)}});
  };
  add("SM active", "%", "y", g.sm_util_pct);
  add("tensor active", "%", "y", g.tensor_util_pct);
  add("DRAM bandwidth", "%", "y", g.dram_bw_util_pct);
  add("GPU util (NVML)", "%", "y", g.gpu_util_pct);
  add("power", "W", "y2", g.power_w);
  add("SM clock", "MHz", "y3", g.sm_mhz);
  Json windows = Json::array();
  for (const StepWindow& w : step_windows(run)) {
    const auto& gpus = w.utilization->gpus;
    if (std::any_of(gpus.begin(), gpus.end(),
                    [&](const GpuUtilization& u) { return u.gpu == g.gpu; }))
      windows.push_back({{"label", w.step}, {"t_begin", w.t_begin}, {"t_end", w.t_end}});
  }
  return {{"kind", "timeline"},
          {"title", gpu_name(run, g.gpu) + ": utilization"},
          {"x_unit", "s"},
          {"series", std::move(series)},
          {"windows", std::move(windows)}};
}

std::string render_utilization_html(const RunFile& run, const std::string& id,
                                    const std::string& title, const AddChart& add_chart) {
  if (!run.timeline) return {};
  const Timeline& t = *run.timeline;
  std::string out = fmt::format("<section class=\"utilization\" id=\"{}\">\n<h2>{}</h2>\n",
                                escape_html(id), escape_html(title));
  out += fmt::format(
      "<p>Sampled every {:.0f} ms from {} while the benchmarks ran (time in seconds since "
      "sampling began); shaded bands are the benchmark steps. SM active, tensor and DRAM "
      "come from NVML GPM (Hopper and newer); GPU util is NVML's coarse \"some kernel "
      "ran\".</p>\n",
      t.interval_s * 1000, escape_html(t.source == "none" ? "nothing (see below)" : t.source));
  for (const std::string& note : t.notes)
    out += fmt::format("<p class=\"note-line\">{}</p>\n", escape_html(note));
  if (add_chart && !t.gpus.empty()) {
    out += "<div class=\"charts timelines\">\n";
    for (const GpuTimeline& g : t.gpus)
      if (!g.t_s.empty()) out += add_chart(timeline_chart_spec(run, g));
    out += "</div>\n";
  }
  step_table(out, run, step_windows(run));
  out += "</section>\n";
  return out;
}

}  // namespace gpuvs
