// The gathering of collective results into points, and the shared formatters
// (collectives_detail.h).
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>

#include "core/units.h"
#include "report/collectives_detail.h"
#include "suite/produces.h"

namespace gpuvs::collectives_detail {

std::optional<ParsedId> parse_id(const std::string& id) {
  const auto m = match_result_id(id);
  if (!m) return std::nullopt;
  switch (m->family->family) {
    case Family::kCollectiveBusbw:
      return ParsedId{m->value("op"), "busbw", false};
    case Family::kCollectiveTime:
      return ParsedId{m->value("op"), "time", false};
    case Family::kNcclTestsBusbw:
      return ParsedId{m->value("op"), "busbw", true};
    case Family::kNcclTestsTime:
      return ParsedId{m->value("op"), "time", true};
    default:
      return std::nullopt;
  }
}

std::string str_param(const Result& r, const std::string& key, std::string fallback) {
  const auto it = r.parameters.find(key);
  if (it == r.parameters.end()) return fallback;
  if (const auto* s = std::get_if<std::string>(&it->second)) return s->empty() ? fallback : *s;
  return fallback;
}

bool bool_param(const Result& r, const std::string& key) {
  const auto it = r.parameters.find(key);
  if (it == r.parameters.end()) return false;
  if (const auto* b = std::get_if<bool>(&it->second)) return *b;
  return false;
}

bool is_ok(const Result* r) {
  return r && r->status == Status::kOk && std::isfinite(r->value) && r->value > 0;
}

size_t op_rank(const std::string& op) {
  const auto it = std::find(kOpOrder.begin(), kOpOrder.end(), op);
  return static_cast<size_t>(it - kOpOrder.begin());
}

Collection collect(const RunFile& run) {
  Collection c;
  const int64_t world = run.comm ? run.comm->world_size : 0;
  std::map<std::pair<std::string, int64_t>, OpGroup> groups;
  for (const Result& r : run.results) {
    const auto id = parse_id(r.id);
    if (!id) continue;
    const int64_t ranks = int_parameter(r, "ranks").value_or(world);
    OpGroup& g = groups[{id->op, ranks}];
    g.op = id->op;
    g.ranks = ranks;
    if (g.dtype.empty()) g.dtype = str_param(r, "dtype");
    if (g.redop.empty()) g.redop = str_param(r, "redop");
    const auto bytes = int_parameter(r, "bytes");
    if (!bytes) {
      g.unsized.push_back(&r);
      continue;
    }
    Key k{id->op,
          ranks,
          id->nccl_tests,
          str_param(r, "algo", "default"),
          str_param(r, "proto", "default"),
          bool_param(r, "graph"),
          *bytes};
    const auto factor = number_parameter(r, "busbw_factor");
    auto fill = [&](Point& p, bool keep_first) {
      const Result*& slot = id->metric == "busbw" ? p.busbw : p.time;
      if (slot && keep_first) return;
      slot = &r;
      p.bytes = *bytes;
      if (factor && *factor > 0) p.factor = *factor;
    };
    fill(c.points[k], true);
    fill(c.latest[k], false);
    if (!g.factor && factor && *factor > 0) g.factor = *factor;
    if (id->nccl_tests && g.nccl_tests_tool.empty())
      g.nccl_tests_tool = str_param(r, "tool", "nccl-tests");
  }
  for (auto& [key, g] : groups)
    c.groups.push_back(std::move(g));
  std::stable_sort(c.groups.begin(), c.groups.end(), [](const OpGroup& a, const OpGroup& b) {
    return std::make_tuple(op_rank(a.op), a.op, a.ranks) <
           std::make_tuple(op_rank(b.op), b.op, b.ranks);
  });
  return c;
}

// ---- formatting -----------------------------------------------------------------

std::string us(double seconds) {
  return fmt::format("{:.2f}", seconds * 1e6);
}
std::string gbs(double bytes_per_s) {
  return fmt::format("{:.2f}", bytes_per_s / 1e9);
}
std::string ratio_text(double r) {
  return fmt::format("{:.2f}×", r);
}
std::string ratio_range(const std::optional<double>& lo, const std::optional<double>& hi) {
  if (!lo || !hi) return "-";
  if (fmt::format("{:.2f}", *lo) == fmt::format("{:.2f}", *hi)) return ratio_text(*lo);
  return fmt::format("{:.2f}–{:.2f}×", *lo, *hi);
}

// "invalid", "n/a" (unsupported), "error": what a cell says in place of a number.
std::string status_word(const Result& r) {
  switch (r.status) {
    case Status::kInvalid:
      return "invalid";
    case Status::kUnsupported:
      return "n/a";
    case Status::kError:
      return "error";
    case Status::kOk:
      break;
  }
  return "-";
}

std::string status_note(const Result& r) {
  return r.status_reason.empty() ? status_word(r) : status_word(r) + ": " + r.status_reason;
}

std::string env_settings(const std::string& algo, const std::string& proto) {
  std::vector<std::string> parts;
  if (algo != "default") parts.push_back("NCCL_ALGO=" + algo);
  if (proto != "default") parts.push_back("NCCL_PROTO=" + proto);
  return fmt::format("{}", fmt::join(parts, " "));
}

// What "the default" means for a recommendation: NCCL's choice, or the user's own
// NCCL_ALGO/NCCL_PROTO when the environment set them (the default runs under them).
std::string keep_default(const RunFile& run) {
  std::vector<std::string> set;
  if (run.comm)
    for (const char* v : {"NCCL_ALGO", "NCCL_PROTO"})
      if (const auto it = run.comm->nccl_env.find(v); it != run.comm->nccl_env.end())
        set.push_back(fmt::format("{}={}", v, it->second));
  if (set.empty()) return "leave NCCL_ALGO/NCCL_PROTO unset";
  return fmt::format("keep {} as set", fmt::join(set, " "));
}

}  // namespace gpuvs::collectives_detail
