#include "report/baseline.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "core/error.h"
#include "core/input_file.h"
#include "core/text.h"
#include "core/units.h"
#include "report/figures.h"

namespace gpuvs {

namespace {

// SuperBench's data diagnosis documents its rules as "variance" criteria, (raw -
// baseline) / baseline, with -5 % for bandwidths, NCCL bus bandwidth and model
// throughput: https://microsoft.github.io/superbenchmark/docs/user-tutorial/data-diagnosis
// Its example labels kernel launch overhead beyond +5 %; gpuvs allows +10 % since a
// launch's few microseconds move with the host's CPU and its load more than a GPU's
// bandwidth does.
constexpr double kDrop = -0.05;
constexpr double kLaunchRise = 0.10;

std::string trim(std::string_view s) {
  const auto b = s.find_first_not_of(" \t\r");
  if (b == std::string_view::npos) return "";
  const auto e = s.find_last_not_of(" \t\r");
  return std::string(s.substr(b, e - b + 1));
}

std::optional<double> parse_limit(std::string_view text, std::string& error) {
  if (text == "off") return std::nullopt;
  if (!text.empty() && text.back() == '%') text.remove_suffix(1);
  double sign = 0;
  if (!text.empty() && (text.front() == '-' || text.front() == '+')) {
    sign = text.front() == '-' ? -1 : 1;
    text.remove_prefix(1);
  }
  if (sign == 0) {
    error = "give the limit with its sign: -5 (fail below -5 %), +10 (fail above +10 %), or off";
    return std::nullopt;
  }
  const ParsedNumber n = parse_number(text, NumberRules::plain().at_most(1000).eg("-5, +10"));
  if (!n.ok()) {
    error = n.error;
    return std::nullopt;
  }
  if (sign < 0 && n.value >= 100) {
    error = "a drop of 100 % or more can never happen: give less than 100";
    return std::nullopt;
  }
  return sign * n.value / 100;
}

std::string percent(double fraction) {
  return fmt::format("{:.1f} %", std::abs(fraction) * 100);
}

}  // namespace

BaselineRules BaselineRules::defaults() {
  BaselineRules r;
  r.rules = {
      {"memory.bandwidth", kDrop, "HBM bandwidth"},
      {"compute.fp64_tensor", kDrop, "GEMM"},
      {"compute.tf32", kDrop, "GEMM"},
      {"compute.fp16", kDrop, "GEMM"},
      {"compute.bf16", kDrop, "GEMM"},
      {"compute.fp8", kDrop, "GEMM"},
      {"compute.int8", kDrop, "GEMM"},
      {"link.pcie", kDrop, "host link"},
      {"link.host_h2d", kDrop, "host link"},
      {"link.host_d2h", kDrop, "host link"},
      {"collective.all_reduce_busbw", kDrop, "all_reduce bus bandwidth"},
      {"model.*.train", kDrop, "model throughput"},
      {"model.*.infer", kDrop, "model throughput"},
      {"launch.latency", kLaunchRise, "launch latency"},
  };
  return r;
}

const BaselineRule* BaselineRules::rule_for(std::string_view metric_id) const {
  for (const BaselineRule& rule : rules)
    if (metric_pattern_matches(rule.pattern, metric_id)) return rule.limit ? &rule : nullptr;
  return nullptr;
}

bool metric_pattern_matches(std::string_view pattern, std::string_view id) {
  // Iterative glob with one backtrack point: linear in practice, no recursion depth.
  size_t p = 0, s = 0, star = std::string_view::npos, resume = 0;
  while (s < id.size()) {
    if (p < pattern.size() && pattern[p] == '*') {
      star = p++;
      resume = s;
    } else if (p < pattern.size() && pattern[p] == id[s]) {
      ++p;
      ++s;
    } else if (star != std::string_view::npos) {
      p = star + 1;
      s = ++resume;
    } else {
      return false;
    }
  }
  while (p < pattern.size() && pattern[p] == '*')
    ++p;
  return p == pattern.size();
}

BaselineRules parse_baseline_rules(std::string_view text, std::string_view name) {
  if (const auto problem = find_text_problem(text, "rule file"))
    throw UsageError(fmt::format("{}:{}: {}", one_line(name), problem->line, problem->problem));
  BaselineRules out;
  int line_no = 0;
  size_t at = 0;
  while (at <= text.size()) {
    const size_t end = std::min(text.find('\n', at), text.size());
    std::string_view raw = text.substr(at, end - at);
    at = end + 1;
    ++line_no;
    if (const auto hash = raw.find('#'); hash != std::string_view::npos) raw = raw.substr(0, hash);
    const std::string line = trim(raw);
    if (line.empty()) continue;
    const auto space = line.find_first_of(" \t");
    const std::string pattern = line.substr(0, space);
    const std::string limit = space == std::string::npos ? "" : trim(line.substr(space));
    const auto fail = [&](const std::string& why) {
      throw UsageError(fmt::format("{}:{}: {}", one_line(name), line_no, why));
    };
    if (limit.empty() || limit.find_first_of(" \t") != std::string::npos)
      fail(fmt::format("{}: expected `METRIC LIMIT` (e.g. `memory.bandwidth -5`)",
                       shown_text(line)));
    std::string error;
    const std::optional<double> value = parse_limit(limit, error);
    if (!error.empty()) fail(fmt::format("limit {}: {}", shown_text(limit), error));
    out.rules.push_back({pattern, value, pattern});
  }
  for (BaselineRule& r : BaselineRules::defaults().rules)
    out.rules.push_back(std::move(r));
  return out;
}

BaselineRules load_baseline_rules(const std::filesystem::path& path) {
  const std::string name = path.string();
  return parse_baseline_rules(read_input_file(path, name, "rule file", kMaxClaimsBytes), name);
}

std::string_view to_string(BaselineVerdict v) {
  switch (v) {
    case BaselineVerdict::kPass:
      return "pass";
    case BaselineVerdict::kFail:
      return "fail";
    case BaselineVerdict::kNotMeasured:
      return "not measured";
  }
  return "";
}

std::vector<BaselineJudgement> judge_against_baseline(const RunFile& now, const RunFile& baseline,
                                                      const BaselineRules& rules) {
  std::vector<BaselineJudgement> out;
  if (baseline.system.gpus.empty()) return out;
  for (const GpuInfo& gpu : now.system.gpus) {
    const int base_gpu = static_cast<size_t>(gpu.index) < baseline.system.gpus.size()
                             ? baseline.system.gpus[gpu.index].index
                             : baseline.system.gpus.front().index;
    std::vector<MeasuredFigure> mine = measured_figures(now, gpu.index, "");
    std::vector<MeasuredFigure> theirs = measured_figures(baseline, base_gpu, "");
    keep_common_sizes({&mine, &theirs});
    for (const MeasuredFigure& b : theirs) {
      const BaselineRule* rule = rules.rule_for(b.metric->id);
      if (!rule || b.cell.invalid || !b.cell.value || !(*b.cell.value > 0)) continue;
      BaselineJudgement j;
      j.gpu = gpu.index;
      j.baseline_gpu = base_gpu;
      j.metric = b.metric->id;
      j.name = figure_label(b);
      j.config = config_text(*b.metric, b.config);
      j.unit = b.metric->unit;
      j.baseline = *b.cell.value;
      j.limit = *rule->limit;
      const auto it = std::find_if(mine.begin(), mine.end(), [&](const MeasuredFigure& f) {
        return f.metric == b.metric && f.config == b.config;
      });
      const std::string base_text = format_si(j.baseline, j.unit);
      const std::string limit_text =
          fmt::format("limit {}{}", j.limit < 0 ? "-" : "+", percent(j.limit));
      if (it == mine.end()) {
        j.verdict = BaselineVerdict::kNotMeasured;
        j.reason = fmt::format("not measured in this run (baseline {})", base_text);
      } else if (it->cell.invalid || !it->cell.value) {
        j.verdict = BaselineVerdict::kFail;
        j.reason = it->cell.note.empty() ? "invalid" : it->cell.note;
      } else {
        j.value = *it->cell.value;
        j.ratio = *j.value / j.baseline;
        const double change = *j.ratio - 1;
        const bool fails = j.limit < 0 ? change < j.limit : change > j.limit;
        j.verdict = fails ? BaselineVerdict::kFail : BaselineVerdict::kPass;
        j.reason =
            fmt::format("{} is {} {} the baseline's {} ({})", format_si(*j.value, j.unit),
                        percent(change), change < 0 ? "below" : "above", base_text, limit_text);
      }
      out.push_back(std::move(j));
    }
  }
  return out;
}

}  // namespace gpuvs
