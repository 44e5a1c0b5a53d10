// The comparison model behind `gpuvs compare`, `gpuvs run`'s report, the claims check
// and the HTML report: columns are GPUs (a GPU of a run file, or a catalogue entry),
// rows are metrics, one row per configuration where a figure depends on its settings
// (a model's precision, batch and sequence; a collective's GPU count and size). Each
// cell says where its figure comes from (measured, datasheet, published, derived).
//
// Like with like: a ratio and a verdict only between two figures of one basis
// (measured with measured, noise-aware; datasheet with datasheet; published with
// published of the same settings, which is what puts them in one row). Across bases a
// cell reads "different basis": both figures are shown, the measured one's share of
// its datasheet, and the ratio of the two GPUs' datasheet figures where both exist —
// never a speed verdict. A measured column without a measurement of a datasheet
// metric shows that datasheet figure, marked as a fallback; it counts as datasheet.
//
// A missing figure is a missing cell, never a zero. Built from run files and the
// catalogue only (the report never reads live objects).
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/run_file.h"
#include "specs/catalogue.h"
#include "specs/metrics.h"
#include "specs/published.h"

namespace gpuvs {

// One thing to compare: a GPU of a run file, or a catalogue entry alone.
struct CompareInput {
  std::string label;             // shown as the column header; empty: derived
  const RunFile* run = nullptr;  // with gpu_index: measured column
  int gpu_index = 0;
  const GpuSpec* spec = nullptr;  // datasheet (matched from the run, or given)
  std::string run_ref{};          // where the run came from (its path), for source_ref
};

enum class Source { kMeasured, kDatasheet, kPublished, kDerived };
const char* to_string(Source s);  // "measured", "datasheet", "published", "derived"

// Verdict words (Cell::verdict).
inline constexpr std::string_view kBaseline = "baseline";
inline constexpr std::string_view kDifferentBasis = "different basis";

struct Cell {
  std::optional<double> value;  // nullopt: missing (shown as missing)
  Source source = Source::kMeasured;
  std::string source_ref;              // URL or "run file X, result id"
  std::optional<double> noise;         // measured: stddev / median
  std::optional<double> datasheet;     // the same GPU's datasheet figure of the metric
  std::optional<double> of_datasheet;  // measured / datasheet figure of the same GPU
  // A measured column's datasheet figure, shown because its run did not measure the
  // metric: labelled, and a datasheet figure for every verdict.
  bool fallback = false;
  // Against the baseline cell, only when both are of one basis:
  std::optional<double> ratio;     // value / baseline value
  std::optional<double> diff_pct;  // (value / baseline - 1) * 100
  std::string verdict;             // "same", "faster"/"slower" (speeds: throughput, latency),
                                   // "higher"/"lower" (others), "baseline", "different basis",
                                   // "" (no comparison: a side is missing)
  std::string basis;               // of the ratio and verdict: "measured", "datasheet",
                                   // "published"; "" when there is none
  // Across bases: this GPU's datasheet figure over the baseline GPU's (both from the
  // catalogue), the like-with-like ratio that does exist.
  std::optional<double> datasheet_ratio;
  bool invalid = false;       // measured but invalid: shown as such, no number
  bool throttled = false;     // measured during a thermal or hardware slowdown
  bool power_capped = false;  // measured at the power limit (normal under full load)
  bool unsupported = false;   // the datasheet says the GPU lacks it: "none",
                              // which is not the same as missing
  std::string note;
  // A measured figure: the tool that measured it, "gpuvs" or its result's
  // parameters.tool ("nvbandwidth v0.8", imported or measured beside gpuvs).
  std::string measured_by;
};

// The basis of a cell's figure: "measured", "datasheet" (fallbacks included),
// "published", "derived"; "" when it has none.
std::string basis_of(const Cell& c);

struct Row {
  std::string metric;  // metric id
  std::string name;
  std::string unit;
  bool higher_is_better = true;
  bool speed = false;     // verdicts read faster/slower
  bool headline = false;  // one of the figures that decide a purchase
  MetricGroup group = MetricGroup::kMemory;
  // The configuration of this row (the metric's config parameters and, for a sweep,
  // its size); empty for a metric with one figure per GPU. A published row also names
  // the benchmark suite its figures come from.
  std::vector<std::pair<std::string, std::string>> config;
  std::string config_text;  // "bf16, batch 256"; "2 GPUs, 2 GiB"; "" when none
  bool published = false;   // a row of published figures (one suite and setting)
  std::vector<Cell> cells;  // one per column
};

struct Column {
  std::string label;
  std::string gpu_name;      // driver name or catalogue name
  std::string catalogue_id;  // "" when no entry matched
  bool measured = false;
  // A measured column: which file, host and GPU it is.
  std::string file;  // as given ("" for a run given without a path)
  std::string host;
  std::optional<int> gpu_index;
  std::string uuid;
  std::string started_at;
  // Who measured a measured column's figures: "gpuvs", or for a run of `gpuvs import`
  // the tools its results name ("nccl-tests 2.17.6 (imported)").
  std::string measured_by;
};

struct Comparison {
  std::vector<Column> columns;
  size_t baseline = 0;
  std::vector<Row> rows;  // metric display order; within a metric measured
                          // configurations, then published ones. Rows where every
                          // cell is missing are dropped (an invalid or unsupported
                          // cell is not missing)
};

struct CompareOptions {
  size_t baseline = 0;
  bool include_datasheet_rows = true;  // datasheet figures for columns without a measurement
  bool include_published = true;
  // Differences within this many combined noise sigmas (and never under 1 %) read
  // "same": a measured difference inside the noise is not a difference.
  double same_sigmas = 2.0;
};

Comparison build_comparison(const std::vector<CompareInput>& inputs, const Catalogue& catalogue,
                            const Published& published, const CompareOptions& options);

// "H200 #0 vm 3f2a91c0 h200x2-run": the derived label of a run's GPU (GPU index only
// when the run has several GPUs; host, the UUID's first 8 hex digits and the file's
// name without .json where known).
std::string measured_column_label(const RunFile& run, int gpu_index, const std::string& run_ref);

// Helpers shared with the claims check.

// The catalogue entry of an input: its spec, else the run GPU matched by driver name
// and PCI device id. nullptr when none.
const GpuSpec* spec_for(const CompareInput& input, const Catalogue& catalogue);

// The measured cells of `metric` for GPU `gpu_index` of `run`, by configuration (the
// metric's config parameters and, for a sweep, the size): the qualifying results with
// status ok (an invalid cell where the only such result is invalid). For a metric
// without configurations at most one entry, with an empty configuration. The size
// of a sweep is every size measured; pick_sizes() chooses among them.
using Config = std::vector<std::pair<std::string, std::string>>;
std::vector<std::pair<Config, Cell>> measured_cells(const RunFile& run, int gpu_index,
                                                    const MetricDef& metric, const GpuSpec* spec,
                                                    const std::string& run_ref);

// The one measured cell of a metric without configurations (nullopt: not measured).
std::optional<Cell> measured_cell(const RunFile& run, int gpu_index, const MetricDef& metric,
                                  const GpuSpec* spec, const std::string& run_ref);

// "bf16, batch 256, seq 128"; "2 GPUs, 2 GiB": a configuration for people, leaving
// out parameters at their family's default.
std::string config_text(const MetricDef& metric, const Config& config);

}  // namespace gpuvs
