// The HTML report's "Utilization" section: the run's monitor timeline
// (RunFile::timeline) as one chart per GPU, each benchmark step's window marked, and
// a table of each step's utilization. Nothing when the run has no timeline.
#pragma once

#include <string>

#include <nlohmann/json.hpp>
#include "core/run_file.h"

#include "report/collectives.h"  // AddChart

namespace gpuvs {

// Charts have at most this many points per series: longer timelines are averaged
// over equal runs of samples (a gap stays a gap only where a whole run has none).
inline constexpr size_t kTimelineChartPoints = 1200;

// One <section> with id `id` and heading `title`: the timeline's source and notes,
// the charts through `add_chart` (none when it is empty: a report without charts),
// and the step table. Empty when the run has no timeline.
std::string render_utilization_html(const RunFile& run, const std::string& id,
                                    const std::string& title, const AddChart& add_chart);

// The chart specification (kind "timeline", docs/report.md) of one GPU's timeline,
// with the windows of the steps that ran on it.
nlohmann::ordered_json timeline_chart_spec(const RunFile& run, const GpuTimeline& gpu);

}  // namespace gpuvs
