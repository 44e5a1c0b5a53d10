// Claims check: figures someone claimed (an article, a vendor slide) judged against
// what gpuvs knows: a measurement, the datasheet, or a published figure.
// Claims files are CSV (always) or TOML (when built with toml++):
//   CSV header: gpu,metric,value,unit[,source]
//   TOML: [[claim]] gpu = "...", metric = "...", value = 1.0, unit = "...", source = "..."
#pragma once

#include <filesystem>
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
  int line = 0;        // where it was in the file
};

enum class ClaimVerdict { kHolds, kOff, kContradicted, kUnverifiable };
const char* to_string(ClaimVerdict v);  // "holds", "off", "contradicted", "unverifiable"

struct ClaimJudgement {
  Claim claim;
  ClaimVerdict verdict = ClaimVerdict::kUnverifiable;
  double off_pct = 0;          // (claimed / reference - 1) * 100
  std::optional<double> reference;  // base unit of the metric
  std::string reference_unit;
  Source reference_source = Source::kDatasheet;
  std::string reference_ref;   // URL or run file
  std::string why;             // one sentence: "H200 has 141 GB (datasheet); no 96 GB H200 exists"
};

std::vector<Claim> parse_claims(std::string_view text, std::string_view name);  // by extension/content
std::vector<Claim> load_claims(const std::filesystem::path& path);

std::vector<ClaimJudgement> judge_claims(const std::vector<Claim>& claims,
                                         const std::vector<CompareInput>& measured,
                                         const Catalogue& catalogue, const Published& published);

}  // namespace gpuvs
