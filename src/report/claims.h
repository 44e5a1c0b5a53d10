// Claims check: figures someone claimed (an article, a vendor slide) judged against
// what gpuvs knows: a measurement, the datasheet, or a published figure.
// Claims files are CSV (always) or TOML (when built with toml++):
//   CSV header: gpu,metric,value,unit[,source][,precision][,setting] (any order;
//   lines starting with '#' are comments; RFC 4180 quoting; BOM and CRLF accepted)
//   TOML: [[claim]] gpu = "...", metric = "...", value = 1.0, unit = "...", source = "..."
//   (precision, setting optional; a top-level `source` is the default source)
// Verdicts (docs/compare.md): holds within the tolerance (5 %), off within 25 %,
// contradicted beyond; unverifiable when gpuvs has no reference figure, or only
// figures taken in settings the claim does not match (model throughput). A claim that
// quotes another figure of the datasheet than the one it names holds as that figure,
// and says so: "holds (sparse)" (the 2:4 sparse peak), "holds (tensor)" (FP64 tensor
// cores for an FP64 claim), "holds (non-tensor)" (the reverse). Model throughput is
// judged on the configurations measured here first (the claim's settings, or where a
// claim without settings falls among them), then on published figures of the same
// settings.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "report/compare.h"

namespace gpuvs {

struct Claim {
  std::string gpu;     // as written ("H200 96GB"): resolved through the catalogue
  std::string metric;  // metric id, or a common alias ("fp16", "memory bandwidth")
  double value = 0;    // as written, in `unit`
  std::string unit;
  std::string source;
  std::string precision{};  // model throughput: "mixed fp16", "tf32"; empty: not stated
  std::string setting{};    // model throughput: "batch 256"; empty: not stated
  int line = 0;             // where it was in the file
};

enum class ClaimVerdict {
  kHolds,
  kHoldsSparse,     // the claim is the datasheet's 2:4 sparse figure
  kHoldsTensor,     // an FP64 claim that is the FP64 tensor-core figure
  kHoldsNonTensor,  // an FP64 tensor claim that is the non-tensor figure
  kOff,
  kContradicted,
  kUnverifiable,
};
// "holds", "holds (sparse)", "holds (tensor)", "holds (non-tensor)", "off",
// "contradicted", "unverifiable"
const char* to_string(ClaimVerdict v);
// True for kHolds and the "holds (...)" verdicts.
bool holds(ClaimVerdict v);

struct ClaimJudgement {
  Claim claim;
  ClaimVerdict verdict = ClaimVerdict::kUnverifiable;
  double off_pct = 0;               // (claimed / reference - 1) * 100
  std::optional<double> reference;  // base unit of the metric
  std::string reference_unit;
  Source reference_source = Source::kDatasheet;
  std::string reference_ref;  // URL or run file
  std::string why;            // one sentence: "H200 has 141 GB (datasheet); no 96 GB H200 exists"
};

std::vector<Claim> parse_claims(std::string_view text,
                                std::string_view name);  // by extension/content
std::vector<Claim> load_claims(const std::filesystem::path& path);

std::vector<ClaimJudgement> judge_claims(const std::vector<Claim>& claims,
                                         const std::vector<CompareInput>& measured,
                                         const Catalogue& catalogue, const Published& published);

struct ClaimOptions {
  double tolerance = 0.05;            // |claimed / reference - 1| within this: holds
  double contradicted_beyond = 0.25;  // beyond this (or the tolerance): contradicted
};

std::vector<ClaimJudgement> judge_claims(const std::vector<Claim>& claims,
                                         const std::vector<CompareInput>& measured,
                                         const Catalogue& catalogue, const Published& published,
                                         const ClaimOptions& options);

// The metric a claim names: a metric id, or an alias ("fp16", "memory bandwidth",
// "cuda cores", "resnet-50 training"), case and punctuation ignored. nullptr if none.
const MetricDef* resolve_claim_metric(std::string_view name);

// The catalogue entry a claimed GPU name means. "H200 96GB" names a memory size that
// no H200 entry has: it resolves to the family's entry with memory_mismatch set.
struct ClaimedGpu {
  const GpuSpec* spec = nullptr;
  std::string family;                        // the name without its memory size: "H200"
  std::optional<double> named_memory_bytes;  // "96GB" -> 96e9
  bool memory_mismatch = false;              // no entry of the family has that size
  const GpuSpec* other_with_size = nullptr;  // with a mismatch: another GPU whose name
                                             // holds the family's and has that size
                                             // ("H200 96GB": the GH200-96GB)
};
ClaimedGpu resolve_claimed_gpu(std::string_view name, const Catalogue& catalogue);

// A claimed (value, unit) in the metric's base unit: to_base_unit, plus the spellings
// claims use ("TFLOPS", "cores", "images/s", "samples/s"). nullopt when it does not fit.
std::optional<double> claim_to_base_unit(double value, std::string_view unit,
                                         std::string_view base_unit);

}  // namespace gpuvs
