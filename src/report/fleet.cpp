#include "report/fleet.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <nlohmann/json.hpp>
#include <tuple>

#include "core/stats.h"
#include "core/text.h"
#include "core/units.h"
#include "report/figures.h"
#include "report/summary.h"
#include "report/table.h"

namespace gpuvs {

namespace {

// 1 / the normal distribution's third quartile: MAD x 1.4826 estimates sigma.
constexpr double kMadToSigma = 1.4826;

struct FleetGpu {
  const FleetRun* run = nullptr;
  const GpuInfo* gpu = nullptr;
  std::vector<MeasuredFigure> figures;
};

std::string identity(const FleetRun& r, const GpuInfo& g) {
  if (!g.uuid.empty()) return g.uuid;
  return fmt::format("{} GPU {} of {}", r.run->meta.host, g.index, r.file);
}

// One GPU once: the run that started last (ISO 8601 UTC times order as text).
std::vector<FleetGpu> unique_gpus(const std::vector<FleetRun>& runs, FleetReport& report) {
  std::map<std::string, size_t> seen;  // identity -> index into out
  std::vector<FleetGpu> out;
  for (const FleetRun& r : runs) {
    for (const GpuInfo& g : r.run->system.gpus) {
      const std::string id = identity(r, g);
      const auto it = seen.find(id);
      if (it == seen.end()) {
        seen.emplace(id, out.size());
        out.push_back({&r, &g, {}});
        continue;
      }
      FleetGpu& kept = out[it->second];
      const bool newer = r.run->meta.started_at > kept.run->run->meta.started_at;
      const FleetRun& dropped = newer ? *kept.run : r;
      const FleetRun& other = newer ? r : *kept.run;
      report.skipped.push_back(
          {dropped.file,
           fmt::format("GPU {} ({}) is also in {}, {}: counted once", g.index, one_line(id),
                       one_line(other.file), newer ? "a later run" : "the same or a later run")});
      if (newer) kept = {&r, &g, {}};
    }
  }
  return out;
}

std::string side_word(const MetricDef& m, bool below) {
  if (is_speed_metric(m)) return below == m.higher_is_better ? "slower" : "faster";
  return below ? "lower" : "higher";
}

using GroupKey = std::tuple<std::string, std::string, Config>;  // GPU model, metric, config

struct Member {
  const FleetGpu* gpu = nullptr;
  const MeasuredFigure* figure = nullptr;
};

}  // namespace

FleetReport judge_fleet(const std::vector<FleetRun>& runs, const FleetOptions& options) {
  FleetReport report;
  report.options = options;
  report.files = static_cast<int>(runs.size());
  std::vector<FleetGpu> gpus = unique_gpus(runs, report);
  report.gpus = static_cast<int>(gpus.size());

  std::map<std::string, std::vector<FleetGpu*>> by_model;
  for (FleetGpu& g : gpus) {
    g.figures = measured_figures(*g.run->run, g.gpu->index, g.run->file);
    by_model[g.gpu->name].push_back(&g);
  }
  for (auto& [model, members] : by_model) {
    std::vector<std::vector<MeasuredFigure>*> lists;
    for (FleetGpu* g : members)
      lists.push_back(&g->figures);
    keep_common_sizes(lists);
  }

  std::map<GroupKey, std::vector<Member>> groups;
  std::vector<GroupKey> order;  // first seen: the vocabulary's order
  for (const FleetGpu& g : gpus)
    for (const MeasuredFigure& f : g.figures) {
      if (f.cell.invalid || !f.cell.value) continue;
      GroupKey key{g.gpu->name, f.metric->id, f.config};
      auto [it, fresh] = groups.try_emplace(key);
      if (fresh) order.push_back(key);
      it->second.push_back({&g, &f});
    }

  int small = 0;
  for (const GroupKey& key : order) {
    const std::vector<Member>& members = groups.at(key);
    if (members.size() < static_cast<size_t>(kMinFleet)) {
      ++small;
      continue;
    }
    std::vector<double> values;
    for (const Member& m : members)
      values.push_back(*m.figure->cell.value);
    const double med = median(values);
    if (!(med > 0)) continue;
    std::vector<double> spread;
    for (double v : values)
      spread.push_back(std::abs(v - med));
    const double mad = kMadToSigma * median(spread);
    const MeasuredFigure& first = *members.front().figure;
    report.groups.push_back({first.metric->id, figure_label(first),
                             short_gpu_name(std::get<0>(key)), static_cast<int>(members.size()),
                             med, mad});
    for (const Member& m : members) {
      const MeasuredFigure& f = *m.figure;
      const double v = *f.cell.value;
      const double deviation = (v - med) / med;
      const double threshold = std::max(
          {options.k * mad / med, options.k * f.cell.noise.value_or(0), options.min_deviation});
      if (!(std::abs(deviation) > threshold)) continue;
      FleetOutlier o;
      o.host = m.gpu->run->run->meta.host;
      o.gpu = m.gpu->gpu->index;
      o.gpu_name = short_gpu_name(m.gpu->gpu->name);
      o.uuid = m.gpu->gpu->uuid;
      o.file = m.gpu->run->file;
      o.metric = f.metric->id;
      o.name = figure_label(f);
      o.unit = f.metric->unit;
      o.value = v;
      o.median = med;
      o.deviation = deviation;
      o.threshold = threshold;
      const bool below = v < med;
      o.slow = below == f.metric->higher_is_better;
      o.side = side_word(*f.metric, below);
      report.outliers.push_back(std::move(o));
    }
  }
  // Worst first: the slow side before the fast one, then the largest deviation.
  std::stable_sort(report.outliers.begin(), report.outliers.end(),
                   [](const FleetOutlier& a, const FleetOutlier& b) {
                     if (a.slow != b.slow) return a.slow;
                     return std::abs(a.deviation) > std::abs(b.deviation);
                   });

  if (report.gpus < kMinFleet)
    report.notes.push_back(fmt::format(
        "{} GPU{} in the fleet: no outlier can be judged (a median and its spread need at "
        "least {} GPUs of one model)",
        report.gpus, report.gpus == 1 ? "" : "s", kMinFleet));
  else if (small > 0)
    report.notes.push_back(
        fmt::format("{} figure{} measured on fewer than {} GPUs of one model: not judged", small,
                    small == 1 ? "" : "s", kMinFleet));
  for (const auto& [model, members] : by_model)
    if (by_model.size() > 1)
      report.notes.push_back(fmt::format("{}: {} GPU{}, judged among themselves",
                                         one_line(short_gpu_name(model)), members.size(),
                                         members.size() == 1 ? "" : "s"));
  return report;
}

std::string render_fleet_text(const FleetReport& r) {
  std::string out = fmt::format(
      "fleet: {} run file{}, {} GPU{}, {} figure{} judged (median ± max({} x MAD, {} x noise, "
      "{:.0f} %))\n",
      r.files, r.files == 1 ? "" : "s", r.gpus, r.gpus == 1 ? "" : "s", r.groups.size(),
      r.groups.size() == 1 ? "" : "s", r.options.k, r.options.k, r.options.min_deviation * 100);
  if (r.outliers.empty()) {
    out += r.groups.empty() ? "no outlier judged\n" : "no outlier: every GPU within the rule\n";
  } else {
    using A = TextTable::Align;
    TextTable t(
        {"figure", "host", "GPU", "value", "median", "deviation", "side", "file"},
        {A::kLeft, A::kLeft, A::kLeft, A::kRight, A::kRight, A::kRight, A::kLeft, A::kLeft});
    for (const FleetOutlier& o : r.outliers)
      t.add_row({o.name, o.host, fmt::format("{} {} {}", o.gpu, o.gpu_name, o.uuid.substr(0, 12)),
                 format_si(o.value, o.unit), format_si(o.median, o.unit),
                 fmt::format("{:+.1f} %", o.deviation * 100), o.slow ? o.side + " (worse)" : o.side,
                 o.file});
    out += t.render();
  }
  for (const FleetSkip& s : r.skipped)
    out += fmt::format("skipped {}: {}\n", one_line(s.file), one_line(s.reason));
  for (const std::string& n : r.notes)
    out += "note: " + one_line(n) + "\n";
  return out;
}

std::string render_fleet_json(const FleetReport& r) {
  using nlohmann::json;
  json outliers = json::array(), groups = json::array(), skipped = json::array();
  for (const FleetOutlier& o : r.outliers)
    outliers.push_back({{"host", o.host},
                        {"gpu", o.gpu},
                        {"gpu_name", o.gpu_name},
                        {"uuid", o.uuid},
                        {"file", o.file},
                        {"metric", o.metric},
                        {"name", o.name},
                        {"unit", o.unit},
                        {"value", o.value},
                        {"median", o.median},
                        {"deviation", o.deviation},
                        {"threshold", o.threshold},
                        {"slow", o.slow},
                        {"side", o.side}});
  for (const FleetGroup& g : r.groups)
    groups.push_back({{"metric", g.metric},
                      {"name", g.name},
                      {"gpu_name", g.gpu_name},
                      {"gpus", g.gpus},
                      {"median", g.median},
                      {"mad", g.mad}});
  for (const FleetSkip& s : r.skipped)
    skipped.push_back({{"file", s.file}, {"reason", s.reason}});
  const json doc = {
      {"schema", "gpuvs.fleet/1"}, {"k", r.options.k},   {"min_deviation", r.options.min_deviation},
      {"files", r.files},          {"gpus", r.gpus},     {"outliers", outliers},
      {"groups", groups},          {"skipped", skipped}, {"notes", r.notes}};
  // `replace`: a file's name need not be UTF-8.
  return doc.dump(2, ' ', false, json::error_handler_t::replace) + "\n";
}

}  // namespace gpuvs
