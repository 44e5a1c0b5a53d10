// A fleet: many run files (one per node or GPU), each GPU's figures against the
// fleet's median of the same figure, to find the slow one. docs/compare.md ("Fleets")
// states the rule.
//
// Like with like: a group is one metric, one configuration (report/figures.h: a sweep
// at the size every GPU of the group measured) and one GPU model (an H100 is never
// judged against H200s). Per group of at least kMinFleet GPUs: the median m and the
// median absolute deviation, scaled by 1.4826 so that it estimates a normal
// distribution's sigma (MAD). A GPU is an outlier when |value - m| exceeds the
// largest of
//   - k x MAD (k = 3 by default: a healthy GPU crosses it about 3 times in 1000),
//   - k x the figure's own noise (stats.noise x m): a spread inside what one run
//     measures is no difference, however tight the others agree,
//   - min_deviation x m (2 % by default): run-to-run differences of one healthy
//     GPU are about that large (docs/design.md, Measuring).
// Both sides are flagged; `slow` says which side is the worse one for the metric
// (lower bandwidth or throughput, higher latency or time). Outliers worst first.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "core/run_file.h"

namespace gpuvs {

inline constexpr int kMinFleet = 3;

struct FleetOptions {
  double k = 3.0;
  double min_deviation = 0.02;
};

struct FleetRun {
  std::string file;  // as named, for the report
  const RunFile* run = nullptr;
};

struct FleetOutlier {
  std::string host;
  int gpu = 0;  // index in its run file
  std::string gpu_name;
  std::string uuid;
  std::string file;
  std::string metric;  // metric id
  std::string name;    // "Memory bandwidth", with its configuration
  std::string unit;
  double value = 0;
  double median = 0;
  double deviation = 0;  // (value - median) / median
  double threshold = 0;  // the relative deviation it exceeded
  bool slow = false;     // on the worse side of the median
  std::string side;      // "slower", "faster" (speeds); "lower", "higher" (others)
};

struct FleetGroup {
  std::string metric;
  std::string name;
  std::string gpu_name;
  int gpus = 0;
  double median = 0;
  double mad = 0;  // scaled by 1.4826
};

struct FleetSkip {
  std::string file;
  std::string reason;
};

struct FleetReport {
  FleetOptions options;
  int files = 0;                       // run files read
  int gpus = 0;                        // GPUs judged (one each, duplicates left out)
  std::vector<FleetGroup> groups;      // judged groups (kMinFleet GPUs or more)
  std::vector<FleetOutlier> outliers;  // worst first
  std::vector<FleetSkip> skipped;      // files and GPUs left out, with the reason
  std::vector<std::string> notes;      // why nothing could be judged, groups too small
};

// `runs` in the order given (the caller sorts them: the report follows). A GPU (by
// UUID; host and index where a file has none) seen in several files counts once: the
// run that started last; the others are skipped with the reason.
FleetReport judge_fleet(const std::vector<FleetRun>& runs, const FleetOptions& options);

// The terminal table (worst first) and its notes; the `gpuvs.fleet/1` JSON document.
std::string render_fleet_text(const FleetReport& report);
std::string render_fleet_json(const FleetReport& report);

}  // namespace gpuvs
