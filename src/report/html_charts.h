// The charts of the HTML report (html.h): their specifications for web/report.js
// (docs/report.md) and the sections that hold their containers. Bars only ever stand
// side by side when their figures are of one basis and one setting; every compared
// column keeps one colour (its index in the island's "columns").
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/run_file.h"
#include "report/compare.h"

namespace gpuvs {

struct Charts {
  nlohmann::ordered_json specs = nlohmann::ordered_json::array();
  std::string html;  // sections with their containers

  // A section with one container per chart; nothing when there is no chart.
  void section(std::string_view id, std::string_view title, std::string_view intro,
               std::vector<nlohmann::ordered_json> charts);
  // Registers the chart and returns its container, for sections placed elsewhere.
  std::string container(nlohmann::ordered_json spec);
};

// Per row of the comparison, one bar chart per basis that two or more columns have
// (measured; datasheet, with measured columns' own datasheet figures; published of
// the row's one setting); and the measured figures as a share of their datasheet.
void metric_charts(Charts& ch, const Comparison& c);

// Size sweeps and the roofline of the runs; a series of one GPU that is a column of
// `c` (when given) carries that column's index, so it keeps the column's colour.
void sweep_charts(Charts& ch, const std::vector<const RunFile*>& runs, const Comparison* c);
void roofline_chart(Charts& ch, const std::vector<const RunFile*>& runs, const Comparison* c);

// "H200", "H200 #1" (a run with several GPUs), "H200 ×2" (a result of two GPUs).
std::string gpu_label(const RunFile& run, const std::vector<int>& devices);

}  // namespace gpuvs
