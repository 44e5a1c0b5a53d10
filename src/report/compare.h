// The comparison model behind `gpuvs compare`, the claims check and the HTML report:
// columns are GPUs (a GPU of a run file, or a catalogue entry), rows are metrics.
// Each cell says where its figure comes from (measured, datasheet, published,
// derived) and, for measured values, its noise and share of the datasheet. A
// missing figure is a missing cell, never a zero. Built from run files and the
// catalogue only (DESIGN.md: the report never reads live objects).
#pragma once

#include <optional>
#include <string>
#include <string_view>
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

struct Cell {
  std::optional<double> value;  // nullopt: missing (shown as missing)
  Source source = Source::kMeasured;
  std::string source_ref;              // URL or "run file X, result id"
  std::optional<double> noise;         // measured: stddev / median
  std::optional<double> of_datasheet;  // measured / datasheet figure of the same GPU
  std::optional<double> ratio;         // value / baseline value
  std::optional<double> diff_pct;      // (value / baseline - 1) * 100
  std::string verdict;                 // vs baseline: "same", "faster", "slower"
                                       // (throughput units), "higher", "lower"
                                       // (others), "baseline", "" (no comparison)
  bool invalid = false;                // measured but invalid: shown as such, no number
  bool throttled = false;              // measured while throttled
  bool unsupported = false;            // the datasheet says the GPU lacks it: "none",
                                       // which is not the same as missing
  std::string note;
};

struct Row {
  std::string metric;  // metric id
  std::string name;
  std::string unit;
  bool higher_is_better = true;
  std::vector<Cell> cells;  // one per column
};

struct Column {
  std::string label;
  std::string gpu_name;      // driver name or catalogue name
  std::string catalogue_id;  // "" when no entry matched
  bool measured = false;
};

struct Comparison {
  std::vector<Column> columns;
  size_t baseline = 0;
  std::vector<Row> rows;  // metric display order; rows where every cell is missing dropped
                          // (an invalid or unsupported cell is not missing)
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

// Helpers shared with the claims check.

// The catalogue entry of an input: its spec, else the run GPU matched by driver name
// and PCI device id. nullptr when none.
const GpuSpec* spec_for(const CompareInput& input, const Catalogue& catalogue);

// The measured cell of `metric` for GPU `gpu_index` of `run`: the first of the
// metric's result ids present for that GPU with status ok (unit equal to the
// metric's); failing that, an invalid cell when such a result exists but is invalid;
// nullopt when the run did not measure it. of_datasheet is filled from `spec`.
std::optional<Cell> measured_cell(const RunFile& run, int gpu_index, const MetricDef& metric,
                                  const GpuSpec* spec, const std::string& run_ref);

// True for units whose larger values mean "faster": B/s, FLOP/s, OP/s, img/s, seq/s.
bool is_throughput_unit(std::string_view unit);

}  // namespace gpuvs
