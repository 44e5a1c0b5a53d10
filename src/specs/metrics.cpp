// The metric vocabulary (metrics.h) and the unit conversion used by every loader of
// figures written by people: the catalogue, published figures and claims.
#include "specs/metrics.h"

#include <fmt/format.h>

#include <array>
#include <cctype>
#include <cmath>

#include "core/suggest.h"
#include "suite/produces.h"

namespace gpuvs {

namespace {

std::vector<std::string> gemm_ids(std::string_view precision) {
  return {result_id(Family::kGemmBest, {precision}), result_id(Family::kGemm, {precision})};
}

// A metric with one figure per GPU (no configurations).
MetricDef plain(std::string id, std::string name, std::string unit, MetricGroup group,
                std::vector<std::string> ids, bool catalogue, bool headline = false,
                bool higher_is_better = true) {
  MetricDef m;
  m.id = std::move(id);
  m.name = std::move(name);
  m.unit = std::move(unit);
  m.higher_is_better = higher_is_better;
  m.group = group;
  m.result_ids = std::move(ids);
  m.catalogue = catalogue;
  m.headline = headline;
  return m;
}

// A sweep's figure at one size: the largest (bandwidth) or smallest (latency) size
// that every compared GPU measured, so that two columns compare at the same size.
MetricDef at_size(MetricDef m, Pick pick, std::vector<std::string> config = {}) {
  m.pick = pick;
  m.size_parameter = "bytes";
  m.config = std::move(config);
  return m;
}

std::vector<std::string> config_names(Family f) {
  std::vector<std::string> out;
  for (const ConfigParameter& c : family_def(f).config)
    out.emplace_back(c.name);
  return out;
}

// Per model and mode: throughput, tokens, step time, memory, energy, largest batch;
// one row per configuration (precision, batch, sequence, ...).
void add_model_metrics(std::vector<MetricDef>& out) {
  struct Figure {
    Family family;
    std::string suffix;  // of the metric id
    std::string what;    // of its name
    std::string unit;    // "{item}" is the model's item, "{batch}" what its batch counts
    bool higher_is_better;
    bool headline;
  };
  const std::vector<Figure> figures = {
      {Family::kModelRate, "", "", "{item}/s", true, true},
      {Family::kModelTokens, ".tokens", ", tokens", "tokens/s", true, false},
      {Family::kModelStepTime, ".step_time", ", step time", "s", false, false},
      {Family::kModelPeakMemory, ".peak_memory", ", device memory", "B", false, false},
      {Family::kModelEnergy, ".energy_per_item", ", energy per item", "J/{item}", false, false},
      {Family::kModelMaxBatch, ".max_batch", ", largest batch", "{batch}", true, false},
      {Family::kModelPrefill, ".prefill", ", prefill", "tokens/s", true, false},
      {Family::kModelDecode, ".decode", ", decode", "tokens/s", true, false},
      {Family::kModelTtft, ".ttft", ", time to first token", "s", false, false},
      {Family::kModelItl, ".itl", ", inter-token latency", "s", false, false},
      {Family::kModelDecodeShare, ".decode.bandwidth_share", ", decode bandwidth share", "1", true,
       false},
      {Family::kModelMfu, ".mfu", ", MFU", "1", true, false},
      {Family::kModelMfuGemm, ".mfu.gemm", ", MFU of the measured GEMM", "1", true, false},
  };
  auto decoder_only = [](Family f) {
    return f == Family::kModelPrefill || f == Family::kModelDecode || f == Family::kModelTtft ||
           f == Family::kModelItl || f == Family::kModelDecodeShare;
  };
  for (const ModelDef& model : model_defs()) {
    for (const char* mode : {"train", "infer"}) {
      for (const Figure& f : figures) {
        if (f.family == Family::kModelTokens && !model.has_tokens) continue;
        if (decoder_only(f.family) && (!model.decoder || std::string_view(mode) == "train"))
          continue;
        // MFU: decoder training only (the figure LLM training is compared by).
        if ((f.family == Family::kModelMfu || f.family == Family::kModelMfuGemm) &&
            (!model.decoder || std::string_view(mode) != "train"))
          continue;
        MetricDef m;
        m.id = fmt::format("model.{}.{}{}", model.id, mode, f.suffix);
        m.name = fmt::format("{} {}{}", model.display,
                             std::string_view(mode) == "train" ? "training" : "inference", f.what);
        m.unit = f.unit;
        if (const size_t at = m.unit.find("{item}"); at != std::string::npos)
          m.unit.replace(at, 6, model.item);
        if (const size_t at = m.unit.find("{batch}"); at != std::string::npos)
          m.unit.replace(at, 7, model.batch_unit());
        m.higher_is_better = f.higher_is_better;
        m.group = MetricGroup::kModels;
        for (const Placeholder& p : family_def(f.family).placeholders)
          if (p.name == "precision")
            for (const PlaceholderValue& v : p.values)
              m.result_ids.push_back(result_id(f.family, {model.id, mode, v.text}));
        m.config = config_names(f.family);
        m.headline = f.headline;
        out.push_back(std::move(m));
      }
    }
  }
}

// Figures of other tools that no gpuvs result shares a definition with (imported,
// docs/import.md): rows of their own, so that two imports of one tool meet like with
// like. nvbandwidth's tests, with the links: the best GPU pair (or the GPU's own
// figure) per buffer size.
void add_nvbandwidth_metrics(std::vector<MetricDef>& out) {
  for (const Placeholder& p : family_def(Family::kNvbandwidth).placeholders)
    for (const PlaceholderValue& t : p.values) {
      const bool latency = t.unit == "s";
      MetricDef m =
          plain(fmt::format("nvbandwidth.{}", t.text), fmt::format("nvbandwidth {}", t.text),
                latency ? "s" : "B/s", MetricGroup::kLinks,
                {result_id(Family::kNvbandwidth, {t.text})}, false, false, !latency);
      m.pick = Pick::kBest;
      m.config = {"bytes"};
      out.push_back(std::move(m));
    }
}

// nvbench's figures, last: one row per benchmark and state.
void add_nvbench_metrics(std::vector<MetricDef>& out) {
  struct Figure {
    std::string_view figure, name, unit;
  };
  for (const Figure f : {Figure{"gpu_time", "nvbench GPU time per launch (cold)", "s"},
                         Figure{"batch_gpu_time", "nvbench GPU time per launch (batch)", "s"},
                         Figure{"bandwidth", "nvbench global memory bandwidth", "B/s"}}) {
    MetricDef m = plain(fmt::format("nvbench.{}", f.figure), std::string(f.name),
                        std::string(f.unit), MetricGroup::kKernels,
                        {result_id(Family::kNvbench, {f.figure})}, false, false, f.unit != "s");
    m.config = config_names(Family::kNvbench);
    out.push_back(std::move(m));
  }
}

std::vector<MetricDef> make_metrics() {
  using G = MetricGroup;
  using F = Family;
  // Display order: memory, compute (dense, then the 2:4 sparse figures apart), links,
  // collectives, launch, power, GPU shape, models. Tensor metrics take the best-shape
  // GEMM first (the maximum achievable matmul, what a datasheet peak promises) and the
  // 8192^3 figure where no search ran. Sweeps give the figure at one size only.
  const std::vector<std::pair<std::string, std::string>> default_nccl = {
      {"algo", "default"}, {"proto", "default"}, {"graph", "false"}, {"dtype", "float32"}};
  std::vector<MetricDef> v = {
      plain("memory.size", "Memory size", "B", G::kMemory, {}, true, true),
      plain("memory.bandwidth", "Memory bandwidth", "B/s", G::kMemory,
            {result_id(F::kHbmStream, {"copy"})}, true, true),
      plain("compute.fp64", "FP64 (non-tensor)", "FLOP/s", G::kCompute,
            {result_id(F::kFma, {"fp64"})}, true, true),
      plain("compute.fp64_tensor", "FP64 tensor", "FLOP/s", G::kCompute, gemm_ids("fp64"), true,
            true),
      plain("compute.fp32", "FP32 (non-tensor)", "FLOP/s", G::kCompute,
            {result_id(F::kFma, {"fp32"})}, true),
      plain("compute.tf32", "TF32 tensor (dense)", "FLOP/s", G::kCompute, gemm_ids("tf32"), true),
      plain("compute.fp16", "FP16 tensor (dense)", "FLOP/s", G::kCompute, gemm_ids("fp16"), true),
      plain("compute.bf16", "BF16 tensor (dense)", "FLOP/s", G::kCompute, gemm_ids("bf16"), true,
            true),
      plain("compute.fp8", "FP8 tensor (dense)", "FLOP/s", G::kCompute, gemm_ids("fp8_e4m3"), true,
            true),
      plain("compute.int8", "INT8 tensor (dense)", "OP/s", G::kCompute, gemm_ids("int8"), true),
      plain("compute.tf32_sparse", "TF32 tensor (2:4 sparse)", "FLOP/s", G::kCompute, {}, true),
      plain("compute.fp16_sparse", "FP16 tensor (2:4 sparse)", "FLOP/s", G::kCompute, {}, true),
      plain("compute.bf16_sparse", "BF16 tensor (2:4 sparse)", "FLOP/s", G::kCompute, {}, true),
      plain("compute.fp8_sparse", "FP8 tensor (2:4 sparse)", "FLOP/s", G::kCompute, {}, true),
      plain("compute.int8_sparse", "INT8 tensor (2:4 sparse)", "OP/s", G::kCompute, {}, true),
  };
  // NVLink: the best GPU pair of the copy engines both ways (a GPU has a pair per peer).
  MetricDef nvlink = plain("link.nvlink", "NVLink (total, both directions)", "B/s", G::kLinks,
                           {result_id(F::kPeerCopy, {"ce", "bidirectional"})}, true, true);
  nvlink.pick = Pick::kBest;
  v.push_back(std::move(nvlink));
  MetricDef peer_latency = plain("link.peer_latency", "Peer load latency", "s", G::kLinks,
                                 {result_id(F::kPeerLatency)}, false, false, false);
  peer_latency.pick = Pick::kBest;
  v.push_back(std::move(peer_latency));
  // The host link's copies at their largest common size (pinned memory).
  v.push_back(
      at_size(plain("link.pcie", "Host link, pinned, both ways (PCIe total)", "B/s", G::kLinks,
                    {result_id(F::kHostCopy, {"bidirectional", "pinned"})}, true),
              Pick::kLargest));
  v.push_back(at_size(plain("link.host_h2d", "Host to device, pinned", "B/s", G::kLinks,
                            {result_id(F::kHostCopy, {"h2d", "pinned"})}, false),
                      Pick::kLargest));
  v.push_back(at_size(plain("link.host_d2h", "Device to host, pinned", "B/s", G::kLinks,
                            {result_id(F::kHostCopy, {"d2h", "pinned"})}, false),
                      Pick::kLargest));
  add_nvbandwidth_metrics(v);
  // all_reduce with NCCL's own choices, per GPU count: bus bandwidth at the largest
  // size, latency at the smallest (8 bytes in a default sweep).
  MetricDef busbw =
      at_size(plain("collective.all_reduce_busbw", "all_reduce bus bandwidth", "B/s",
                    G::kCollectives, {result_id(F::kCollectiveBusbw, {"all_reduce"})}, false),
              Pick::kLargest, {"ranks"});
  busbw.where = default_nccl;
  v.push_back(std::move(busbw));
  MetricDef ar_time =
      at_size(plain("collective.all_reduce_latency", "all_reduce latency", "s", G::kCollectives,
                    {result_id(F::kCollectiveTime, {"all_reduce"})}, false, false, false),
              Pick::kSmallest, {"ranks"});
  ar_time.where = default_nccl;
  v.push_back(std::move(ar_time));
  for (MetricDef m : {
           plain("launch.latency", "Kernel launch and wait", "s", G::kLaunch,
                 {result_id(F::kLaunchLatency)}, false, false, false),
           plain("launch.rate", "Kernel launches back to back", "launch/s", G::kLaunch,
                 {result_id(F::kLaunchRate)}, false),
           plain("launch.graph_node", "CUDA graph replay, per node", "s", G::kLaunch,
                 {result_id(F::kGraphNode)}, false, false, false),
           plain("launch.chain_stream", "16 small kernels from a stream", "s", G::kLaunch,
                 {result_id(F::kLaunchChain, {"stream"})}, false, false, false),
           plain("launch.chain_graph", "16 small kernels as one CUDA graph", "s", G::kLaunch,
                 {result_id(F::kLaunchChain, {"graph"})}, false, false, false),
       })
    v.push_back(std::move(m));
  for (MetricDef m : {
           plain("power.tdp", "Max power (TDP)", "W", G::kPower, {}, true, false, false),
           plain("gpu.sm_count", "SMs", "1", G::kShape, {}, true),
           plain("gpu.cuda_cores", "CUDA cores", "1", G::kShape, {}, true),
           plain("clock.boost", "Boost clock", "Hz", G::kShape, {}, true),
       })
    v.push_back(std::move(m));
  add_model_metrics(v);
  add_nvbench_metrics(v);
  // Other tools' figures of gpuvs's definitions stand in where a run has none of its own.
  for (MetricDef& m : v)
    for (const std::string& id : m.result_ids)
      for (std::string& twin : tool_twin_ids(id))
        m.tool_result_ids.push_back(std::move(twin));
  return v;
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
// Times are written in ms, µs ("us" too) and ns.
constexpr std::array<Prefix, 5> kSubunit = {
    {{"m", 1e-3}, {"µ", 1e-6}, {"u", 1e-6}, {"n", 1e-9}, {"", 1}}};

// Spellings of each base unit that people write after a prefix. INT8 throughput is
// counted in operations, but articles (and some datasheets) write it in FLOP/s.
struct Stems {
  std::string_view base;
  std::array<std::string_view, 4> stems;  // empty entries unused
  bool prefixed;                          // k M G T P allowed (m µ n for seconds)
};

constexpr std::array<Stems, 16> kStems = {{
    {"B", {"B"}, true},
    {"B/s", {"B/s"}, true},
    {"FLOP/s", {"FLOP/s", "FLOPS"}, true},
    {"OP/s", {"OP/s", "OPS", "FLOP/s", "FLOPS"}, true},
    {"W", {"W"}, true},
    {"Hz", {"Hz"}, true},
    {"s", {"s"}, true},
    {"img/s", {"img/s", "images/s"}, false},
    {"seq/s", {"seq/s", "sequences/s", "samples/s"}, false},
    {"tokens/s", {"tokens/s", "tok/s"}, false},
    {"launch/s", {"launch/s", "launches/s"}, false},
    {"J/img", {"J/img", "J/image"}, false},
    {"J/seq", {"J/seq", "J/sequence", "J/sample"}, false},
    {"img", {"img", "images"}, false},
    {"seq", {"seq", "sequences", "samples"}, false},
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

std::string alnum_lower(std::string_view s) {
  std::string out;
  for (unsigned char c : s)
    if (std::isalnum(c)) out += static_cast<char>(std::tolower(c));
  return out;
}

}  // namespace

std::string_view to_string(MetricGroup g) {
  switch (g) {
    case MetricGroup::kMemory:
      return "Memory";
    case MetricGroup::kCompute:
      return "Compute";
    case MetricGroup::kLinks:
      return "Links";
    case MetricGroup::kCollectives:
      return "Collectives";
    case MetricGroup::kLaunch:
      return "Launch";
    case MetricGroup::kPower:
      return "Power";
    case MetricGroup::kShape:
      return "GPU";
    case MetricGroup::kModels:
      return "Models";
    case MetricGroup::kKernels:
      return "Kernels (nvbench)";
  }
  return "Other";
}

std::span<const MetricDef> metrics() {
  return table();
}

const MetricDef* find_metric(std::string_view id) {
  for (const MetricDef& m : table())
    if (m.id == id) return &m;
  // "model.bert_large.train": the same id with other punctuation.
  const std::string key = alnum_lower(id);
  if (key.empty()) return nullptr;
  for (const MetricDef& m : table())
    if (alnum_lower(m.id) == key) return &m;
  return nullptr;
}

const MetricDef* metric_for_result(std::string_view result_id) {
  for (const MetricDef& m : table()) {
    for (const std::string& r : m.result_ids)
      if (r == result_id) return &m;
    for (const std::string& r : m.tool_result_ids)
      if (r == result_id) return &m;
  }
  return nullptr;
}

bool is_throughput_unit(std::string_view unit) {
  return unit == "B/s" || unit == "FLOP/s" || unit == "OP/s" || unit == "img/s" ||
         unit == "seq/s" || unit == "tokens/s" || unit == "launch/s";
}

bool is_speed_metric(const MetricDef& m) {
  return is_throughput_unit(m.unit) || (m.unit == "s" && !m.higher_is_better);
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
    if (base_unit == "s") {
      for (const Prefix& p : kSubunit)
        if (p.symbol == prefix) return value * p.scale;
      continue;
    }
    for (const Prefix& p : kDecimal)
      if (p.symbol == prefix) return value * p.scale;
    // Binary prefixes only for sizes (GiB); rates are decimal by definition.
    if (base_unit == "B")
      for (const Prefix& p : kBinary)
        if (p.symbol == prefix) return value * p.scale;
  }
  return std::nullopt;
}

std::string metric_suggestion(std::string_view typed) {
  std::vector<std::string> ids;
  for (const MetricDef& m : metrics())
    ids.push_back(m.id);
  return did_you_mean(suggest(typed, ids));
}

}  // namespace gpuvs
