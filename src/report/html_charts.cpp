// The charts of the HTML report (html_charts.h). C++ decides what is drawn and with
// which labels; web/report.js only draws what the specifications say.
#include "report/html_charts.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <variant>

#include "report/collectives.h"
#include "report/html.h"
#include "report/summary.h"
#include "suite/produces.h"

namespace gpuvs {

namespace {

using Json = nlohmann::ordered_json;

bool positive(double v) {
  return std::isfinite(v) && v > 0;
}

bool of_family(const Result& r, std::initializer_list<Family> families) {
  const auto m = match_result_id(r.id);
  return m && std::find(families.begin(), families.end(), m->family->family) != families.end();
}

// The column of `c` that is GPU `gpu` of `run` (by UUID and start time), if any.
std::optional<size_t> column_of(const Comparison* c, const RunFile& run, int gpu) {
  if (!c) return std::nullopt;
  const GpuInfo* g = nullptr;
  for (const GpuInfo& x : run.system.gpus)
    if (x.index == gpu) g = &x;
  if (!g) return std::nullopt;
  for (size_t i = 0; i < c->columns.size(); ++i) {
    const Column& col = c->columns[i];
    if (col.measured && col.gpu_index == gpu && col.uuid == g->uuid &&
        col.started_at == run.meta.started_at && col.host == run.meta.host)
      return i;
  }
  return std::nullopt;
}

}  // namespace

void Charts::section(std::string_view id, std::string_view title, std::string_view intro,
                     std::vector<Json> charts) {
  if (charts.empty()) return;
  html += fmt::format("<section id=\"{}\">\n<h2>{}</h2>\n<p>{}</p>\n<div class=\"charts\">\n", id,
                      title, intro);
  for (Json& spec : charts)
    html += container(std::move(spec));
  html += "</div>\n</section>\n";
}

std::string Charts::container(Json spec) {
  std::string out = fmt::format(
      "<figure class=\"chart\"><figcaption>{0}</figcaption><div class=\"chart-box\">"
      "<canvas id=\"chart-{1}\" data-chart=\"{1}\" role=\"img\" aria-label=\"{0}\"></canvas>"
      "</div></figure>\n",
      escape_html(spec["title"].get<std::string>()), specs.size());
  specs.push_back(std::move(spec));
  return out;
}

namespace {

// The bars of one basis in a row: every column whose figure is of that basis; for the
// datasheet, a measured column's own datasheet figure too (labelled so).
Json bars_of_basis(const Comparison& c, const Row& row, const std::string& basis) {
  Json bars = Json::array();
  for (size_t i = 0; i < row.cells.size() && i < c.columns.size(); ++i) {
    const Cell& cell = row.cells[i];
    std::optional<double> value;
    std::string sublabel = basis;
    if (basis_of(cell) == basis) {
      value = cell.value;
      if (cell.fallback) sublabel = "datasheet (not measured)";
    } else if (basis == "datasheet" && cell.datasheet && basis_of(cell) == "measured") {
      value = cell.datasheet;
      sublabel = "its datasheet";
    }
    if (!value) continue;
    bars.push_back({{"label", c.columns[i].label},
                    {"column", i},
                    {"sublabel", sublabel},
                    {"source", basis},
                    {"value", *value}});
  }
  return bars;
}

}  // namespace

void metric_charts(Charts& ch, const Comparison& c) {
  std::vector<Json> charts;
  Json pct = Json::array();
  for (const Row& row : c.rows) {
    const std::string title =
        row.config_text.empty() ? row.name : fmt::format("{} · {}", row.name, row.config_text);
    for (const char* basis : {"measured", "datasheet", "published"}) {
      Json bars = bars_of_basis(c, row, basis);
      if (bars.size() < 2) continue;  // one bar compares nothing
      charts.push_back({{"kind", "bar"},
                        {"title", fmt::format("{} ({}, {})", title, row.metric, basis)},
                        {"basis", basis},
                        {"unit", row.unit},
                        {"higher_is_better", row.higher_is_better},
                        {"bars", std::move(bars)}});
    }
    for (size_t i = 0; i < row.cells.size() && i < c.columns.size(); ++i) {
      const Cell& cell = row.cells[i];
      if (cell.value && !cell.invalid && cell.source == Source::kMeasured && cell.of_datasheet)
        pct.push_back({{"label", c.columns[i].label},
                       {"column", i},
                       {"sublabel", row.name},
                       {"source", "measured"},
                       {"value", *cell.of_datasheet * 100}});
    }
  }
  ch.section("metric-charts", "Per metric",
             "Bars stand side by side only when their figures are of one basis: measured with "
             "measured, datasheet with datasheet (a measured GPU's own datasheet figure included), "
             "published with published of one setting.",
             std::move(charts));
  std::vector<Json> share;
  if (!pct.empty())
    share.push_back({{"kind", "bar"},
                     {"title", "Measured, % of datasheet"},
                     {"basis", "measured"},
                     {"unit", "%"},
                     {"reference", 100},
                     {"bars", std::move(pct)}});
  ch.section("datasheet-chart", "Share of the datasheet",
             "Measured figures as a percentage of the same GPU's datasheet figure.",
             std::move(share));
}

std::string gpu_label(const RunFile& run, const std::vector<int>& devices) {
  std::vector<std::string> names;
  for (int d : devices)
    names.push_back(d >= 0 && static_cast<size_t>(d) < run.system.gpus.size()
                        ? short_gpu_name(run.system.gpus[d].name)
                        : fmt::format("GPU {}", d));
  if (names.empty()) return "host";
  if (std::all_of(names.begin(), names.end(), [&](const auto& n) { return n == names[0]; })) {
    if (names.size() > 1) return fmt::format("{} ×{}", names[0], names.size());
    // Two GPUs of one name in a run are told apart by their index.
    return run.system.gpus.size() > 1 ? fmt::format("{} #{}", names[0], devices[0]) : names[0];
  }
  return fmt::format("{}", fmt::join(names, "+"));
}

namespace {

struct Series {
  std::string base;                          // GPU (and run) label
  std::map<std::string, std::string> extra;  // parameters other than x
  std::string role = "measured";
  std::vector<std::pair<double, double>> points;
  std::optional<double> peak, peak_bandwidth;  // roofline roofs
  std::optional<size_t> column;                // the comparison column it is, if one
};

struct LineChart {
  std::string title, x_unit, y_unit;
  bool y_log = false;
  std::vector<Series> series;
  std::map<std::string, size_t> index;

  Series& series_for(std::pair<std::string, Series> keyed) {
    auto [it, fresh] = index.try_emplace(keyed.first, series.size());
    if (fresh) series.push_back(std::move(keyed.second));
    return series[it->second];
  }
  Json spec() const {
    // Only parameters that differ between series go into their labels.
    std::set<std::string> varying;
    for (const Series& a : series)
      for (const Series& b : series)
        for (const auto& [k, v] : a.extra) {
          const auto it = b.extra.find(k);
          if (it == b.extra.end() || it->second != v) varying.insert(k);
        }
    Json js = Json::array();
    for (Series s : series) {
      std::sort(s.points.begin(), s.points.end());
      std::vector<std::string> parts;
      for (const auto& [k, v] : s.extra)
        if (varying.count(k)) parts.push_back(k + "=" + v);
      std::string label = s.base;
      if (!parts.empty()) label += fmt::format(" ({})", fmt::join(parts, ", "));
      Json pts = Json::array();
      for (auto [x, y] : s.points)
        pts.push_back({x, y});
      js.push_back({{"label", label},
                    {"role", s.role},
                    {"column", s.column ? Json(*s.column) : Json(nullptr)},
                    {"points", std::move(pts)}});
    }
    return {{"kind", "line"}, {"title", title}, {"x_unit", x_unit},       {"y_unit", y_unit},
            {"x_log", true},  {"y_log", y_log}, {"series", std::move(js)}};
  }
};

std::string run_prefix(const std::vector<const RunFile*>& runs, size_t ri, const Result& r) {
  const std::string gpu = gpu_label(*runs[ri], r.devices);
  return runs.size() > 1 ? fmt::format("{} · run {}", gpu, ri + 1) : gpu;
}

// The series a result belongs to: one per run, devices and label base and, with
// `variants`, per value of each string or boolean parameter ("pattern": "random").
// Numeric parameters (grid, bytes_per_array) change with the x value: they never split.
std::pair<std::string, Series> series_proto(const std::vector<const RunFile*>& runs, size_t ri,
                                            const Result& r, std::string base, bool variants,
                                            const Comparison* c) {
  Series s;
  s.base = std::move(base);
  if (r.devices.size() == 1) s.column = column_of(c, *runs[ri], r.devices.front());
  std::string key = fmt::format("{}|{}|{}", ri, fmt::join(r.devices, ","), s.base);
  for (const auto& [k, v] : r.parameters)
    if (variants && (std::holds_alternative<std::string>(v) || std::holds_alternative<bool>(v)))
      key += "|" + k + "=" + (s.extra[k] = param_text(v));
  return {key, std::move(s)};
}

// The measured roof of a roofline point of `kind`: the ridge result of the same run and
// devices, with parameters peak_flops (FLOP/s) and bandwidth (B/s).
const Result* ridge_of(const RunFile& run, const Result& point, const std::string& kind) {
  const std::string id = result_id(Family::kRooflineRidge, {kind});
  for (const Result& r : run.results)
    if (r.status == Status::kOk && r.id == id && r.devices == point.devices) return &r;
  return nullptr;
}

// Sweeps (docs/report.md): ok results whose parameters hold a size ("bytes" or
// "size_bytes"), grouped by id (less a trailing ".<digits...>" segment) and unit;
// one series per run, devices and other parameters.
}  // namespace

void sweep_charts(Charts& ch, const std::vector<const RunFile*>& runs, const Comparison* c) {
  std::vector<LineChart> charts;
  std::map<std::pair<std::string, std::string>, size_t> by_key;
  for (size_t ri = 0; ri < runs.size(); ++ri) {
    for (const Result& r : runs[ri]->results) {
      if (r.status != Status::kOk || !positive(r.value) ||
          of_family(r, {Family::kRoofline, Family::kRooflineRidge}) ||
          is_collective_result(r))  // charted by operation in their own section
        continue;
      const std::string size_key = r.parameters.count("bytes") ? "bytes" : "size_bytes";
      const auto size = number_parameter(r, size_key);
      if (!size || !positive(*size)) continue;
      std::string stem = r.id;
      const size_t dot = stem.rfind('.');
      if (dot != std::string::npos && dot + 1 < stem.size() &&
          std::isdigit(static_cast<unsigned char>(stem[dot + 1])))
        stem.resize(dot);
      auto [it, fresh] = by_key.try_emplace({stem, r.unit}, charts.size());
      if (fresh) {
        LineChart c;
        const std::string what = r.unit == "B/s" ? "Bandwidth" : r.unit == "s" ? "Latency" : r.unit;
        c.title = fmt::format("{} vs size: {}", what, stem);
        c.x_unit = "B";
        c.y_unit = r.unit;
        c.y_log = r.unit == "s";
        charts.push_back(std::move(c));
      }
      charts[it->second]
          .series_for(series_proto(runs, ri, r, run_prefix(runs, ri, r), true, c))
          .points.emplace_back(*size, r.value);
    }
  }
  std::vector<Json> specs;
  for (const LineChart& c : charts)  // a single size is no sweep
    if (std::any_of(c.series.begin(), c.series.end(),
                    [](const Series& s) { return s.points.size() >= 2; }))
      specs.push_back(c.spec());
  ch.section("sweeps", "Size sweeps", "Figures against buffer size (log scale).", std::move(specs));
}

// Roofline (docs/report.md): ok results of roofline.{kind} with parameters.intensity
// (FLOP/B) and a value in FLOP/s, one line per id; the roof from the ridge result
// where there is one, else from result.peak (FLOP/s) and parameters.peak_bandwidth.
void roofline_chart(Charts& ch, const std::vector<const RunFile*>& runs, const Comparison* cmp) {
  LineChart c{"Roofline", "FLOP/B", "FLOP/s", true, {}, {}};
  constexpr double kInf = std::numeric_limits<double>::infinity();
  double xmin = kInf, xmax = 0;
  for (size_t ri = 0; ri < runs.size(); ++ri) {
    for (const Result& r : runs[ri]->results) {
      const auto match = match_result_id(r.id);
      if (r.status != Status::kOk || !match || match->family->family != Family::kRoofline ||
          !positive(r.value))
        continue;
      const auto intensity = number_parameter(r, "intensity");
      if (!intensity || !positive(*intensity)) continue;
      const std::string kind = match->value("kind");
      Series& s = c.series_for(series_proto(
          runs, ri, r, fmt::format("{} {}", run_prefix(runs, ri, r), kind), false, cmp));
      s.points.emplace_back(*intensity, r.value);
      std::optional<double> peak, bandwidth = number_parameter(r, "peak_bandwidth");
      if (r.peak && r.peak->unit == "FLOP/s") peak = r.peak->value;
      if (const Result* ridge = ridge_of(*runs[ri], r, kind)) {
        peak = number_parameter(*ridge, "peak_flops");
        bandwidth = number_parameter(*ridge, "bandwidth");
      }
      if (peak && positive(*peak)) s.peak = peak;
      if (bandwidth && positive(*bandwidth)) s.peak_bandwidth = bandwidth;
      xmin = std::min(xmin, *intensity);
      xmax = std::max(xmax, *intensity);
    }
  }
  if (c.series.empty()) return;
  const size_t measured = c.series.size();
  for (size_t i = 0; i < measured; ++i) {
    const Series& s = c.series[i];
    if (!s.peak && !s.peak_bandwidth) continue;
    Series roof;
    roof.base = "roof: " + s.base;
    roof.extra = s.extra;
    roof.role = "roof";
    roof.column = s.column;
    const double p = s.peak.value_or(kInf), b = s.peak_bandwidth.value_or(kInf);
    std::vector<double> xs = {xmin / 2, xmax * 2};
    if (s.peak && s.peak_bandwidth && p / b > xs[0] && p / b < xs[1])
      xs.insert(xs.begin() + 1, p / b);
    for (double x : xs)
      roof.points.emplace_back(x, std::min(p, x * b));
    c.series.push_back(std::move(roof));
  }
  ch.section("roofline", "Roofline",
             "Attained FLOP/s against arithmetic intensity (FLOP per byte), log-log; dashed: "
             "the roof, min(peak FLOP/s, intensity × bandwidth).",
             {c.spec()});
}

}  // namespace gpuvs
