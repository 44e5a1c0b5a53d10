// Internals shared by the collective renderings (collectives.cpp) and the algorithm
// study (collectives_study.cpp): the results gathered into points keyed by (op, ranks,
// tool, algo, proto, graph, size), and the small formatters both use. Not a public
// interface: include it only from report/collectives*.cpp.
#pragma once

#include <array>
#include <cmath>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

#include "core/run_file.h"
#include "report/collectives.h"
#include "report/html.h"  // escape_html

namespace gpuvs::collectives_detail {

using Json = nlohmann::ordered_json;

constexpr int64_t kMiB = int64_t{1} << 20;
// Operations in the order nccl-tests users know them; others follow alphabetically.
constexpr std::array<std::string_view, 7> kOpOrder = {
    "all_reduce", "all_gather", "reduce_scatter", "broadcast", "reduce", "alltoall", "sendrecv"};

// ---- reading the results --------------------------------------------------------

struct ParsedId {
  std::string op;
  std::string metric;  // "busbw" | "time"
  bool nccl_tests = false;
};

std::optional<ParsedId> parse_id(const std::string& id);

std::string str_param(const Result& r, const std::string& key, std::string fallback = "");
bool bool_param(const Result& r, const std::string& key);
bool is_ok(const Result* r);

struct Key {
  std::string op;
  int64_t ranks = 0;
  bool nccl_tests = false;
  std::string algo, proto;
  bool graph = false;
  int64_t bytes = 0;

  auto tie() const { return std::tie(op, ranks, nccl_tests, algo, proto, graph, bytes); }
  bool operator<(const Key& o) const { return tie() < o.tie(); }
};

struct Point {
  const Result* busbw = nullptr;
  const Result* time = nullptr;
  int64_t bytes = 0;
  std::optional<double> factor;  // busbw / algbw

  // The result that makes the point unusable, worst first; nullptr when none is.
  const Result* bad() const {
    for (Status s : {Status::kInvalid, Status::kError, Status::kUnsupported})
      for (const Result* r : {busbw, time})
        if (r && r->status == s) return r;
    return nullptr;
  }
  std::optional<double> time_s() const {
    if (bad() || !is_ok(time)) return std::nullopt;
    return time->value;
  }
  std::optional<double> p99_s() const {
    if (!time_s() || !time->stats.p99) return std::nullopt;
    return *time->stats.p99;
  }
  std::optional<double> busbw_bps() const {
    if (bad()) return std::nullopt;
    if (is_ok(busbw)) return busbw->value;
    if (is_ok(time) && factor) return static_cast<double>(bytes) / time->value * *factor;
    return std::nullopt;
  }
  std::optional<double> algbw_bps() const {
    if (bad()) return std::nullopt;
    if (is_ok(time)) return static_cast<double>(bytes) / time->value;
    if (is_ok(busbw) && factor && *factor > 0) return busbw->value / *factor;
    return std::nullopt;
  }
  double busbw_noise() const { return busbw ? busbw->stats.noise : time ? time->stats.noise : 0; }
};

// One operation at one rank count: what its tables and charts are about.
struct OpGroup {
  std::string op;
  int64_t ranks = 0;
  std::string dtype, redop;
  std::optional<double> factor;
  std::string nccl_tests_tool;  // "nccl-tests 2.13.11" when nccl-tests ran
  // Results without a size: an op or a variant that was not measured at all ("needs 2
  // or more GPUs", "NCCL refused NCCL_ALGO=..."), one per op and variant.
  std::vector<const Result*> unsized;
};

// Points by key. A run of `gpuvs bench collectives` measures the default twice, in
// `collectives.nccl` (the full sweep) and again in `collectives.algorithms` (under the
// study's own budget, after it in the run file): the tables take the first, the study
// the last, so that it compares variants measured the same way.
struct Collection {
  std::map<Key, Point> points;  // first result per key and metric
  std::map<Key, Point> latest;  // last result per key and metric
  std::vector<OpGroup> groups;  // in kOpOrder, then by name, then by ranks

  const Point* find(const OpGroup& g, bool nt, const std::string& algo, const std::string& proto,
                    bool graph, int64_t bytes) const {
    const auto it = points.find(Key{g.op, g.ranks, nt, algo, proto, graph, bytes});
    return it == points.end() ? nullptr : &it->second;
  }
  // Sizes of the group's points that match `pred`, ascending.
  template <class Pred>
  std::vector<int64_t> sizes(const OpGroup& g, Pred pred) const {
    std::set<int64_t> out;
    for (const auto& [k, p] : points)
      if (k.op == g.op && k.ranks == g.ranks && pred(k)) out.insert(k.bytes);
    return {out.begin(), out.end()};
  }
};

size_t op_rank(const std::string& op);
Collection collect(const RunFile& run);

// ---- formatting
std::string us(double seconds);
std::string gbs(double bytes_per_s);
std::string ratio_text(double r);
std::string ratio_range(const std::optional<double>& lo, const std::optional<double>& hi);
std::string status_word(const Result& r);
std::string status_note(const Result& r);
std::string env_settings(const std::string& algo, const std::string& proto);
std::string keep_default(const RunFile& run);

// ---- the study (collectives_study.cpp)
StudyVerdict verdict_of(const StudyPoint& p);
std::string verdict_text(StudyVerdict v, const std::string& keep);
std::string best_cell(const StudyRange& r);
StudyOp study_op(const RunFile& run, const Collection& c, const OpGroup& g);
bool has_study(const Collection& c, const OpGroup& g);
std::vector<std::string> unsized_notes(const OpGroup& g);
std::vector<std::string> study_notes(const StudyOp& s);
std::vector<std::string> study_row(const StudyRange& r, const std::string& keep);

}  // namespace gpuvs::collectives_detail
