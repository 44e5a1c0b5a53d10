#include "report/figures.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <map>
#include <optional>
#include <set>

namespace gpuvs {

namespace {

// The size of a sweep point (its configuration's last entry, as config_of puts it);
// nullopt when it is not a finite number, which measured_cells never keeps.
std::optional<double> size_of(const MeasuredFigure& f) {
  if (f.metric->size_parameter.empty() || f.config.empty()) return std::nullopt;
  const std::string& text = f.config.back().second;
  double v = 0;
  const auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || ptr != text.data() + text.size() || !std::isfinite(v))
    return std::nullopt;
  return v;
}

using SweepKey = std::pair<std::string, Config>;  // metric id, configuration without size

SweepKey sweep_key(const MeasuredFigure& f) {
  Config c = f.config;
  c.pop_back();
  return {f.metric->id, std::move(c)};
}

}  // namespace

std::vector<MeasuredFigure> measured_figures(const RunFile& run, int gpu_index,
                                             const std::string& run_ref) {
  std::vector<MeasuredFigure> out;
  for (const MetricDef& m : metrics()) {
    if (m.result_ids.empty()) continue;
    for (auto& [config, cell] : measured_cells(run, gpu_index, m, nullptr, run_ref))
      out.push_back({&m, std::move(config), std::move(cell)});
  }
  return out;
}

void keep_common_sizes(std::vector<std::vector<MeasuredFigure>*> per_gpu) {
  // Per sweep and configuration: the sizes of each GPU that has it, intersected.
  std::map<SweepKey, std::set<double>> common;
  for (const std::vector<MeasuredFigure>* figures : per_gpu) {
    std::map<SweepKey, std::set<double>> mine;
    for (const MeasuredFigure& f : *figures)
      if (const auto size = size_of(f)) mine[sweep_key(f)].insert(*size);
    for (auto& [key, sizes] : mine) {
      auto [it, fresh] = common.emplace(key, sizes);
      if (fresh) continue;
      std::set<double> both;
      std::set_intersection(it->second.begin(), it->second.end(), sizes.begin(), sizes.end(),
                            std::inserter(both, both.end()));
      it->second = std::move(both);
    }
  }
  for (std::vector<MeasuredFigure>* figures : per_gpu) {
    std::erase_if(*figures, [&](const MeasuredFigure& f) {
      const auto size = size_of(f);
      if (!size) return false;  // not a sweep
      const std::set<double>& sizes = common.at(sweep_key(f));
      if (sizes.empty()) return true;
      const double pick = f.metric->pick == Pick::kSmallest ? *sizes.begin() : *sizes.rbegin();
      return *size != pick;
    });
  }
}

std::string figure_label(const MeasuredFigure& f) {
  const std::string config = config_text(*f.metric, f.config);
  return config.empty() ? f.metric->name : fmt::format("{} ({})", f.metric->name, config);
}

}  // namespace gpuvs
