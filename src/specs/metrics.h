// The metric vocabulary shared by the catalogue, published figures, claims, run
// files, compare and the report. A metric id names *what* is compared ("compute.bf16",
// "model.resnet50.train"); run-file result ids name *how* it was measured
// ("memory.hbm.copy"), and come from the table of what gpuvs produces
// (suite/produces.h). Each metric says which results answer it and, where a figure
// depends on settings (a model's precision and batch, a collective's GPU count and
// size), which parameters tell its configurations apart.
#pragma once

#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace gpuvs {

// Display groups, in order.
enum class MetricGroup {
  kMemory,
  kCompute,
  kLinks,
  kCollectives,
  kLaunch,
  kPower,
  kShape,
  kModels,
  kKernels,  // nvbench's benchmarks (imported): kernels someone else wrote
};
std::string_view to_string(MetricGroup g);  // "Memory", "Compute", ...

// Of several qualifying results of one GPU (the pairs of a peer link, the sizes of a
// sweep), the one that gives the figure.
enum class Pick {
  kFirst,     // the first present, by result_ids order (best evidence first)
  kBest,      // the best value (highest, or lowest where lower is better)
  kLargest,   // at the largest size_parameter that every compared GPU measured
  kSmallest,  // at the smallest size_parameter that every compared GPU measured
};

struct MetricDef {
  std::string id;    // "compute.bf16"
  std::string name;  // "BF16 tensor (dense)"
  std::string unit;  // base SI unit: "FLOP/s", "B/s", "B", "W", "Hz", "1", "img/s", "s"
  bool higher_is_better = true;
  MetricGroup group = MetricGroup::kMemory;
  // Result ids that measure it, best evidence first (from suite/produces.h).
  std::vector<std::string> result_ids;
  // The same figures measured by another tool by the same definition (nccl-tests,
  // nvbandwidth: suite/produces.h's twins of result_ids): a run's figure where it has
  // none of result_ids for that GPU and configuration, valid or not.
  std::vector<std::string> tool_result_ids;
  // Parameters a result must have, with these values (the family's fallback where a
  // result lacks one): the default NCCL algorithm for a collective's figure.
  std::vector<std::pair<std::string, std::string>> where;
  // Parameters that tell configurations apart: one row per configuration. Empty: one
  // figure per GPU.
  std::vector<std::string> config;
  Pick pick = Pick::kFirst;
  std::string size_parameter;  // with kLargest / kSmallest: "bytes"
  bool catalogue = false;      // the catalogue has datasheet figures for it
  bool headline = false;       // one of the few figures that decide a purchase
};

// Every metric gpuvs knows, in display order (memory, compute, links, collectives,
// launch, power, GPU shape, models, kernels).
std::span<const MetricDef> metrics();
// "; did you mean: compute.bf16?" for a metric id close to `typed`, "" for none.
std::string metric_suggestion(std::string_view typed);

// nullptr when unknown. Also finds ids written with other punctuation
// ("model.bert_large.train", as files written before the table spelled it).
const MetricDef* find_metric(std::string_view id);

// The metric a run-file result id answers (as one of its result_ids or of its
// tool_result_ids), if any.
const MetricDef* metric_for_result(std::string_view result_id);

// True for units whose larger values mean "faster": B/s, FLOP/s, OP/s, img/s, seq/s,
// tokens/s, launch/s.
bool is_throughput_unit(std::string_view unit);

// True where a metric's figure is a speed: a throughput, or a time where lower is
// better (latency, step time). Verdicts read "faster"/"slower" for these.
bool is_speed_metric(const MetricDef& m);

// Convert "989 TFLOP/s", "4.8 TB/s", "141 GB", "700 W", "1980 MHz" style (value,
// unit) to the metric's base unit. Decimal prefixes k M G T P; binary KiB MiB GiB TiB
// for bytes only; "TFLOPS", "TOPS" and "GB/s" style spellings accepted. Where the
// base unit is OP/s (INT8), FLOP/s spellings are accepted too, since articles write
// them; the reverse is not. img/s also as "images/s"; seq/s also as "sequences/s" and
// "samples/s"; counts as "1" or ""; seconds with m, µ/u and n prefixes. Units are
// case-sensitive (Gb is not GB). nullopt when the unit does not fit the metric.
std::optional<double> to_base_unit(double value, std::string_view unit, std::string_view base_unit);

}  // namespace gpuvs
