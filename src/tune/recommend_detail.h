// Internals shared by the rules' files (recommend*.cpp): reading results, ties, the
// evidence and the figures of the `why` lines. Not a public interface: include it only
// from src/tune/recommend*.cpp.
#pragma once

#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/run_file.h"
#include "suite/produces.h"
#include "tune/recommend.h"

namespace gpuvs::tune::detail {

// The parameters of a result that tell its configuration apart, for its evidence.
using Keys = std::span<const std::string_view>;

// The results of `family` whose id has these placeholder values (empty: any), in run
// order; `accept` filters further. Both ok and not ok: callers keep the not-ok ones
// to say why a rule had no input.
struct Found {
  std::vector<const Result*> ok;
  std::vector<const Result*> not_ok;
};
Found find_results(const RunFile& run, Family family,
                   const std::vector<std::pair<std::string_view, std::string>>& values,
                   const std::function<bool(const Result&)>& accept);

// The family's pattern with these placeholders filled, the others left as "{name}":
// "model.bert-large.train.{precision}", for a why line about results not found.
std::string id_text(Family family,
                    const std::vector<std::pair<std::string_view, std::string>>& values);

bool on_gpu(const Result& r, int gpu);  // devices exactly {gpu}
std::string str_param(const Result& r, const std::string& key, std::string fallback = "");
bool bool_param(const Result& r, const std::string& key, bool fallback);
int64_t int_param(const Result& r, const std::string& key, int64_t fallback);

// The width of a tie between two measured figures: the larger noise, at least kMinNoise.
double tie_margin(const Result& a, const Result& b);
// a / b within noise (|a / b - 1| <= tie_margin).
bool within_noise(const Result& a, const Result& b);

// Evidence of a result: its id, the listed parameters it has, value, unit, measured.
Evidence measured(const Result& r, Keys keys);
// num / den as derived evidence (see recommend.h).
Evidence derived_ratio(const Result& num, const Result& den, Keys keys);
// "model.bert-large.train.bf16 (batch=64, graph=true)": a result for people.
std::string describe(const Result& r, Keys keys);

// "1856 seq/s", "830 TFLOP/s", "54.3 GB/s", "12.1 ms": a figure in a why line.
std::string figure(double value, const std::string& unit);
std::string figure(const Result& r);
// "8MiB", "8MiB-64MiB": a size or a range of sizes in binary units, as a scope.
std::string size_text(int64_t lo, int64_t hi);
std::string ratio_text(double ratio);      // "1.15x"
std::string percent_text(double share);    // "1.0 %"
std::string status_note(const Result& r);  // "invalid: loss not finite"
// "; not used: fp8 at batch 64 (invalid: ...)" for results left out, or "".
std::string not_used_note(const std::vector<const Result*>& rs, Keys keys);

Setting make_setting(std::vector<std::string> scope, std::string key, ParamValue value,
                     std::string why, std::vector<Evidence> rests_on);

}  // namespace gpuvs::tune::detail
