// nccl-tests' rows as results (nccl_tests_results.h).
#include "comm/nccl_tests_results.h"

#include <fmt/format.h>

#include <cmath>

#include "comm/collective_params.h"
#include "core/stats.h"
#include "core/units.h"
#include "suite/produces.h"

namespace gpuvs::comm {

std::string nccl_tests_tool(const NcclTestsOutput& output) {
  return fmt::format("nccl-tests {}",
                     output.version.empty() ? "(version not printed)" : output.version);
}

std::string nccl_tests_dtype(std::string_view type) {
  if (type == "float") return "float32";
  if (type == "half") return "float16";
  if (type == "double") return "float64";
  return std::string(type);
}

namespace {

std::string validation_of(const NcclTestsRow& row, const std::string& provenance) {
  if (row.oop_wrong)
    return fmt::format("nccl-tests checked the data: {} wrong ({})", *row.oop_wrong, provenance);
  if (row.oop_max_error)
    return fmt::format("nccl-tests checked the data: largest error {:g} ({})", *row.oop_max_error,
                       provenance);
  return fmt::format("nccl-tests did not check the data ({})", provenance);
}

}  // namespace

std::vector<Result> nccl_tests_results(const NcclTestsOutput& output,
                                       const NcclTestsResultOptions& options) {
  const std::string tool = nccl_tests_tool(output);
  std::vector<Result> out;
  for (const NcclTestsRow& row : output.rows) {
    if (!row.oop_time_us || !row.oop_busbw_gbs) continue;
    if (!std::isfinite(*row.oop_time_us) || !std::isfinite(*row.oop_busbw_gbs)) continue;
    if (row.count <= 0 || row.size_bytes <= 0) continue;  // nothing moved at this size
    CollectiveLabels labels;
    labels.dtype = nccl_tests_dtype(row.type);
    labels.graph = options.graph;
    labels.buffers = options.buffers;
    labels.redop = row.redop.empty() ? options.default_redop : std::optional(row.redop);
    labels.root = row.root >= 0 ? std::optional<int64_t>(row.root) : options.default_root;
    auto params = collective_parameters(options.op, row.size_bytes, options.ranks, labels);
    params["tool"] = tool;
    auto make = [&](std::string id, std::string name, double value, std::string unit) {
      Result r;
      r.id = std::move(id);
      r.name = std::move(name);
      r.devices = options.devices;
      r.parameters = params;
      r.value = value;
      r.unit = std::move(unit);
      r.bytes_per_iteration = static_cast<double>(row.size_bytes);
      r.samples = {value};
      r.stats = compute_stats(r.samples);
      r.validation = validation_of(row, options.provenance);
      if (row.oop_wrong.value_or(0) != 0) {
        r.status = Status::kInvalid;
        r.status_reason = fmt::format("nccl-tests reported {} wrong elements", *row.oop_wrong);
      } else if (const std::string problem = quantity_problem(value, r.unit); !problem.empty()) {
        // A figure no collective can have (a time of 0.00 us): not shown as a number.
        r.status = Status::kInvalid;
        r.status_reason = "nccl-tests printed " + problem;
      }
      out.push_back(std::move(r));
    };
    make(result_id(Family::kNcclTestsBusbw, {options.op}),
         fmt::format("{} bus bandwidth (nccl-tests)", options.op), *row.oop_busbw_gbs * 1e9, "B/s");
    make(result_id(Family::kNcclTestsTime, {options.op}),
         fmt::format("{} time per operation (nccl-tests)", options.op), *row.oop_time_us * 1e-6,
         "s");
  }
  return out;
}

}  // namespace gpuvs::comm
