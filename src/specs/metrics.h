// The metric vocabulary shared by the catalogue, published figures, claims, run
// files and the report. A metric id names *what* is compared ("compute.bf16",
// "memory.bandwidth"); run-file result ids name *how* it was measured
// ("memory.hbm.copy"). This table maps one to the other.
#pragma once

#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace gpuvs {

struct MetricDef {
  std::string_view id;    // "compute.bf16"
  std::string_view name;  // "BF16 tensor (dense)"
  std::string_view unit;  // base SI unit of values: "FLOP/s", "B/s", "B", "W", "Hz", "1", "img/s"
  bool higher_is_better = true;
  // Run-file result ids that measure this metric, best evidence first. The first
  // one present (status ok) in a run gives the measured value.
  std::vector<std::string_view> result_ids;
};

// Every metric gpuvs knows, in display order (memory, compute, links, power, models).
std::span<const MetricDef> metrics();

// nullptr when unknown.
const MetricDef* find_metric(std::string_view id);

// The metric a run-file result id measures, if any.
const MetricDef* metric_for_result(std::string_view result_id);

// Convert "989 TFLOP/s", "4.8 TB/s", "141 GB", "700 W", "1980 MHz" style (value,
// unit) to the metric's base unit. Decimal prefixes k M G T P; binary KiB MiB GiB TiB
// for bytes only; "TFLOPS", "TOPS" and "GB/s" style spellings accepted. Where the
// base unit is OP/s (INT8), FLOP/s spellings are accepted too, since articles write
// them; the reverse is not. img/s also as "images/s"; seq/s also as "sequences/s" and
// "samples/s"; counts as "1" or "". Units are case-sensitive (Gb is not GB).
// nullopt when the unit does not fit the metric.
std::optional<double> to_base_unit(double value, std::string_view unit, std::string_view base_unit);

}  // namespace gpuvs
