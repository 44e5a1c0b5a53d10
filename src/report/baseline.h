// Baseline rules: a run's figures judged against a baseline run of the same kind of
// GPU, metric by metric, the way SuperBench's data diagnosis labels a defective node
// (a "variance" rule: (value - baseline) / baseline beyond a limit). docs/compare.md
// ("Baselines") lists the default rules, their source and the rule file format.
//
// Like with like: a figure meets only the baseline's figure of the same metric id and
// the same configuration (report/figures.h, compare's configurations), measured with
// measured; a sweep at the one size both measured. A rule names metric ids (a `*`
// matches any characters) and a limit, a signed fraction: -0.05 fails a figure more
// than 5 % below the baseline's, +0.10 one more than 10 % above it.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/run_file.h"

namespace gpuvs {

struct BaselineRule {
  std::string pattern;          // metric ids: "memory.bandwidth", "model.*.train"
  std::optional<double> limit;  // signed fraction; nullopt: the metric is not judged
  std::string what;             // for people: "HBM bandwidth"
};

struct BaselineRules {
  // First match wins: a rule file's lines come before the defaults.
  std::vector<BaselineRule> rules;

  // SuperBench's production rules: -5 % for HBM bandwidth, GEMM TFLOP/s, the host
  // link, all_reduce bus bandwidth and model throughput; +10 % for launch latency.
  static BaselineRules defaults();
  // The rule that judges `metric_id`, nullptr when none (or nullopt limit: off).
  const BaselineRule* rule_for(std::string_view metric_id) const;
};

// A rule file (docs/compare.md): one rule a line, `PATTERN LIMIT` with LIMIT a signed
// percentage (`-5`, `+10`, `-2.5%`) or `off`; `#` starts a comment. Its rules come
// before the defaults. Throws UsageError, one line naming the file and line.
BaselineRules parse_baseline_rules(std::string_view text, std::string_view name);
BaselineRules load_baseline_rules(const std::filesystem::path& path);

// `*` matches any run of characters (dots too); everything else itself.
bool metric_pattern_matches(std::string_view pattern, std::string_view metric_id);

enum class BaselineVerdict { kPass, kFail, kNotMeasured };
std::string_view to_string(BaselineVerdict v);  // "pass", "fail", "not measured"

struct BaselineJudgement {
  int gpu = 0;           // GPU index in the judged run
  int baseline_gpu = 0;  // GPU index in the baseline run
  std::string metric;    // metric id
  std::string name;      // "Memory bandwidth (2 GPUs, 8 GiB)"
  std::string config;    // config_text, "" when none
  std::string unit;
  std::optional<double> value;  // nullopt: invalid or not measured
  double baseline = 0;
  std::optional<double> ratio;  // value / baseline
  double limit = 0;             // the rule's signed fraction
  BaselineVerdict verdict = BaselineVerdict::kPass;
  std::string reason;  // one line: "4.10 TB/s is 6.2 % below the baseline's 4.37 TB/s ..."
};

// Every figure of the baseline that a rule judges, for each GPU of `now` against the
// baseline GPU of the same index (GPU 0 where the baseline has fewer GPUs). A figure
// the run did not measure is kNotMeasured (a check may run a subset), an invalid one
// fails. In the vocabulary's order, GPU by GPU.
std::vector<BaselineJudgement> judge_against_baseline(const RunFile& now, const RunFile& baseline,
                                                      const BaselineRules& rules);

}  // namespace gpuvs
