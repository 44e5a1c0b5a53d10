// The metric vocabulary (metrics.h) and the unit conversion used by every loader of
// figures written by people: the catalogue, published figures and claims.
#include "specs/metrics.h"

#include <array>
#include <cmath>

namespace gpuvs {

namespace {

std::vector<MetricDef> make_metrics() {
  // Display order: memory, compute (dense, then the 2:4 sparse figures apart),
  // links, power, GPU shape, models. Tensor metrics take the best-shape GEMM first
  // (the maximum achievable matmul, what a datasheet peak promises) and the 8192^3
  // figure where no search ran. Sweeps (host link sizes) map to no metric: one
  // point of a sweep is not the link's figure.
  return {
      {"memory.size", "Memory size", "B", true, {}},
      {"memory.bandwidth", "Memory bandwidth", "B/s", true, {"memory.hbm.copy"}},
      {"compute.fp64", "FP64 (non-tensor)", "FLOP/s", true, {"compute.fma.fp64"}},
      {"compute.fp64_tensor",
       "FP64 tensor",
       "FLOP/s",
       true,
       {"compute.gemm.fp64.best", "compute.gemm.fp64"}},
      {"compute.fp32", "FP32 (non-tensor)", "FLOP/s", true, {"compute.fma.fp32"}},
      {"compute.tf32",
       "TF32 tensor (dense)",
       "FLOP/s",
       true,
       {"compute.gemm.tf32.best", "compute.gemm.tf32"}},
      {"compute.fp16",
       "FP16 tensor (dense)",
       "FLOP/s",
       true,
       {"compute.gemm.fp16.best", "compute.gemm.fp16"}},
      {"compute.bf16",
       "BF16 tensor (dense)",
       "FLOP/s",
       true,
       {"compute.gemm.bf16.best", "compute.gemm.bf16"}},
      {"compute.fp8",
       "FP8 tensor (dense)",
       "FLOP/s",
       true,
       {"compute.gemm.fp8_e4m3.best", "compute.gemm.fp8_e4m3"}},
      {"compute.int8",
       "INT8 tensor (dense)",
       "OP/s",
       true,
       {"compute.gemm.int8.best", "compute.gemm.int8"}},
      {"compute.tf32_sparse", "TF32 tensor (2:4 sparse)", "FLOP/s", true, {}},
      {"compute.fp16_sparse", "FP16 tensor (2:4 sparse)", "FLOP/s", true, {}},
      {"compute.bf16_sparse", "BF16 tensor (2:4 sparse)", "FLOP/s", true, {}},
      {"compute.fp8_sparse", "FP8 tensor (2:4 sparse)", "FLOP/s", true, {}},
      {"compute.int8_sparse", "INT8 tensor (2:4 sparse)", "OP/s", true, {}},
      {"link.nvlink", "NVLink (total, both directions)", "B/s", true, {"peer.ce.bidirectional"}},
      {"link.pcie", "PCIe (total, both directions)", "B/s", true, {}},
      {"power.tdp", "Max power (TDP)", "W", false, {}},
      {"gpu.sm_count", "SMs", "1", true, {}},
      {"gpu.cuda_cores", "CUDA cores", "1", true, {}},
      {"clock.boost", "Boost clock", "Hz", true, {}},
      {"model.resnet50.train", "ResNet-50 training", "img/s", true, {}},
      {"model.resnet50.infer", "ResNet-50 inference", "img/s", true, {}},
      {"model.bert_large.train", "BERT-large training", "seq/s", true, {}},
      {"model.bert_large.infer", "BERT-large inference", "seq/s", true, {}},
  };
}

const std::vector<MetricDef>& table() {
  static const std::vector<MetricDef> t = make_metrics();
  return t;
}

struct Prefix {
  std::string_view symbol;
  double scale;
};

constexpr std::array<Prefix, 6> kDecimal = {
    {{"", 1}, {"k", 1e3}, {"M", 1e6}, {"G", 1e9}, {"T", 1e12}, {"P", 1e15}}};
constexpr std::array<Prefix, 4> kBinary = {{{"Ki", 1024.0},
                                            {"Mi", 1024.0 * 1024},
                                            {"Gi", 1024.0 * 1024 * 1024},
                                            {"Ti", 1024.0 * 1024 * 1024 * 1024}}};

// Spellings of each base unit that people write after a prefix. INT8 throughput is
// counted in operations, but articles (and some datasheets) write it in FLOP/s.
struct Stems {
  std::string_view base;
  std::array<std::string_view, 4> stems;  // empty entries unused
  bool prefixed;                          // k M G T P allowed
};

constexpr std::array<Stems, 9> kStems = {{
    {"B", {"B"}, true},
    {"B/s", {"B/s"}, true},
    {"FLOP/s", {"FLOP/s", "FLOPS"}, true},
    {"OP/s", {"OP/s", "OPS", "FLOP/s", "FLOPS"}, true},
    {"W", {"W"}, true},
    {"Hz", {"Hz"}, true},
    {"img/s", {"img/s", "images/s"}, false},
    {"seq/s", {"seq/s", "sequences/s", "samples/s"}, false},
    {"1", {"1"}, false},
}};

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t'))
    s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t'))
    s.remove_suffix(1);
  return s;
}

bool ends_with(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

}  // namespace

std::span<const MetricDef> metrics() {
  return table();
}

const MetricDef* find_metric(std::string_view id) {
  for (const MetricDef& m : table())
    if (m.id == id) return &m;
  return nullptr;
}

const MetricDef* metric_for_result(std::string_view result_id) {
  for (const MetricDef& m : table())
    for (std::string_view r : m.result_ids)
      if (r == result_id) return &m;
  return nullptr;
}

std::optional<double> to_base_unit(double value, std::string_view unit,
                                   std::string_view base_unit) {
  unit = trim(unit);
  const Stems* stems = nullptr;
  for (const Stems& s : kStems)
    if (s.base == base_unit) stems = &s;
  if (stems == nullptr) return std::nullopt;
  if (base_unit == "1" && unit.empty()) return value;
  for (std::string_view stem : stems->stems) {
    if (stem.empty() || !ends_with(unit, stem)) continue;
    const std::string_view prefix = unit.substr(0, unit.size() - stem.size());
    if (prefix.empty()) return value;
    if (!stems->prefixed) continue;
    for (const Prefix& p : kDecimal)
      if (p.symbol == prefix) return value * p.scale;
    // Binary prefixes only for sizes (GiB); rates are decimal by definition.
    if (base_unit == "B")
      for (const Prefix& p : kBinary)
        if (p.symbol == prefix) return value * p.scale;
  }
  return std::nullopt;
}

}  // namespace gpuvs
