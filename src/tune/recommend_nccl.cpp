// The NCCL rule (recommend.h, rule 6): from the algorithm study, NCCL_ALGO and
// NCCL_PROTO per collective and message-size range, "leave unset" where NCCL's own
// choice is within noise of the best, and one export only for a variant that never
// loses.
#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <map>
#include <set>

#include "tune/recommend.h"
#include "tune/recommend_detail.h"

namespace gpuvs::tune {

using namespace detail;

namespace {

constexpr std::array<std::string_view, 6> kCollectiveKeys = {"bytes", "ranks", "algo",
                                                             "proto", "graph", "dtype"};

using Variant = std::pair<std::string, std::string>;  // NCCL_ALGO, NCCL_PROTO
const Variant kDefault = {"default", "default"};

Variant variant_of(const Result& r) {
  return {str_param(r, "algo", "default"), str_param(r, "proto", "default")};
}

std::string label(const Variant& v) {
  return v == kDefault ? std::string("NCCL's own choice") : v.first + "/" + v.second;
}

// One size of one op: NCCL's own choice against the best variant.
struct SizePoint {
  int64_t bytes = 0;
  std::map<Variant, const Result*> by_variant;  // ok results, the latest per variant
  const Result* best = nullptr;
  const Result* def = nullptr;
  // The answer: kDefault when NCCL's own choice is within noise of the best (or is
  // it), the winning variant otherwise; no_default when the default has no ok result.
  Variant answer = kDefault;
  bool no_default = false;
};

struct OpStudy {
  std::string op;
  std::vector<SizePoint> points;  // ascending size
};

bool ties_best(const SizePoint& p, const Result* r) {
  return r != nullptr && (r == p.best || within_noise(*p.best, *r));
}

std::vector<OpStudy> study(const std::vector<const Result*>& ok) {
  std::vector<OpStudy> out;
  for (const PlaceholderValue& opv : family_def(Family::kCollectiveBusbw).placeholders[0].values) {
    const std::string op(opv.text);
    std::vector<const Result*> mine;
    int64_t ranks = 0;
    for (const Result* r : ok)
      if (match_result_id(r->id)->value("op") == op && r->parameters.contains("bytes")) {
        mine.push_back(r);
        ranks = std::max(ranks, int_param(*r, "ranks", 0));
      }
    std::map<int64_t, SizePoint> sizes;
    for (const Result* r : mine)
      if (int_param(*r, "ranks", 0) == ranks)
        sizes[int_param(*r, "bytes", 0)].by_variant[variant_of(*r)] = r;
    OpStudy s{op, {}};
    for (auto& [bytes, p] : sizes) {
      // A size where only NCCL's own choice ran is no point of the study.
      if (p.by_variant.size() == 1 && p.by_variant.contains(kDefault)) continue;
      p.bytes = bytes;
      for (const auto& [v, r] : p.by_variant)
        if (!p.best || r->value > p.best->value || (r->value == p.best->value && v == kDefault))
          p.best = r;
      p.def = p.by_variant.contains(kDefault) ? p.by_variant.at(kDefault) : nullptr;
      p.no_default = p.def == nullptr;
      if (!p.no_default && !ties_best(p, p.def)) p.answer = variant_of(*p.best);
      s.points.push_back(p);
    }
    if (!s.points.empty()) out.push_back(std::move(s));
  }
  return out;
}

struct Range {
  size_t first = 0, last = 0;  // indices into the op's points
};

std::vector<Range> ranges_of(const OpStudy& s) {
  std::vector<Range> out;
  for (size_t i = 0; i < s.points.size(); ++i) {
    const SizePoint& p = s.points[i];
    if (!out.empty()) {
      const SizePoint& q = s.points[out.back().last];
      if (q.no_default == p.no_default && q.answer == p.answer) {
        out.back().last = i;
        continue;
      }
    }
    out.push_back({i, i});
  }
  return out;
}

void add_unique(std::vector<Evidence>& out, const Result* r) {
  if (r == nullptr) return;
  Evidence e = measured(*r, kCollectiveKeys);
  if (std::find(out.begin(), out.end(), e) == out.end()) out.push_back(std::move(e));
}

std::string gain_range(double lo, double hi) {
  return std::fabs(hi - lo) < 0.005 ? ratio_text(lo) : ratio_text(lo) + "-" + ratio_text(hi);
}

// The two settings of one answer (NCCL_PROTO stays unset where the variant left it).
void add_pair(Recommendations& out, const std::vector<std::string>& scope, const Variant& v,
              bool export_it, const std::string& why, const std::vector<Evidence>& evidence) {
  const std::array<std::pair<const char*, std::string>, 2> vars = {
      {{"NCCL_ALGO", v.first}, {"NCCL_PROTO", v.second}}};
  for (const auto& [name, value] : vars) {
    const bool set = value != "default";
    Setting s = make_setting(scope, name, set ? value : std::string("unset"), why, evidence);
    if (set && export_it) s.env = name;
    out.settings.push_back(std::move(s));
  }
}

void range_settings(const OpStudy& s, const Range& rg, const std::string& env_note,
                    Recommendations& out) {
  const SizePoint &lo = s.points[rg.first], &hi = s.points[rg.last];
  const std::string sizes = size_text(lo.bytes, hi.bytes);
  std::vector<Evidence> evidence;
  double gmin = 1e300, gmax = 0;
  for (size_t i = rg.first; i <= rg.last; ++i) {
    const SizePoint& p = s.points[i];
    add_unique(evidence, p.def);
    add_unique(evidence, p.best);
    if (p.def) {
      gmin = std::min(gmin, p.best->value / p.def->value);
      gmax = std::max(gmax, p.best->value / p.def->value);
    }
  }
  if (lo.no_default) {
    out.absent.push_back({"nccl", fmt::format("{} {}: NCCL's own choice has no ok result there; "
                                              "nothing to compare the variants with",
                                              s.op, sizes)});
    return;
  }
  const SizePoint& top = hi;
  const std::string at_top =
      top.best == top.def
          ? fmt::format("at {}: NCCL's own choice {} is the best", size_text(top.bytes, top.bytes),
                        figure(*top.def))
          : fmt::format("at {}: {} {} against NCCL's own choice {}",
                        size_text(top.bytes, top.bytes), label(variant_of(*top.best)),
                        figure(*top.best), figure(*top.def));
  std::string why;
  if (lo.answer == kDefault) {
    why = fmt::format(
        "leave unset: NCCL's own choice is within noise of the best variant (best "
        "{} its busbw); {}{}",
        gain_range(gmin, gmax), at_top, env_note);
  } else {
    why = fmt::format(
        "{}: {} NCCL's own choice's busbw, beyond noise; {}; an environment variable "
        "applies to every size: for a job whose {} messages are {}{}",
        label(lo.answer), gain_range(gmin, gmax), at_top, s.op, sizes, env_note);
  }
  add_pair(out, {"nccl", s.op, sizes}, lo.answer, false, why, evidence);
}

// One variant for every size of every op, or the reason there is none.
void overall_settings(const std::vector<OpStudy>& ops, const std::string& env_note,
                      Recommendations& out) {
  std::set<Variant> variants;
  for (const OpStudy& s : ops)
    for (const SizePoint& p : s.points)
      for (const auto& [v, r] : p.by_variant)
        if (v != kDefault) variants.insert(v);
  std::optional<Variant> chosen;
  double chosen_gain = 0;
  for (const Variant& v : variants) {
    bool never_loses = true;
    double gain = 0;  // the most it beats NCCL's own choice by, beyond noise
    for (const OpStudy& s : ops)
      for (const SizePoint& p : s.points) {
        const auto it = p.by_variant.find(v);
        const Result* r = it == p.by_variant.end() ? nullptr : it->second;
        if (!ties_best(p, r)) never_loses = false;
        if (r && p.def && r->value / p.def->value - 1 > tie_margin(*r, *p.def))
          gain = std::max(gain, r->value / p.def->value);
      }
    if (never_loses && gain > chosen_gain) {
      chosen = v;
      chosen_gain = gain;
    }
  }
  std::vector<Evidence> evidence;
  std::string op_list;
  for (const OpStudy& s : ops) {
    op_list += fmt::format("{}{} {}", op_list.empty() ? "" : ", ", s.op,
                           size_text(s.points.front().bytes, s.points.back().bytes));
    for (const SizePoint& p : s.points) {
      add_unique(evidence, p.def);
      add_unique(evidence, p.best);
      if (chosen && p.by_variant.contains(*chosen)) add_unique(evidence, p.by_variant.at(*chosen));
    }
  }
  if (chosen) {
    add_pair(out, {"nccl", "all sizes"}, *chosen, true,
             fmt::format("{} wins or ties (within noise) at every measured size ({}) and beats "
                         "NCCL's own choice by up to {}{}",
                         label(*chosen), op_list, ratio_text(chosen_gain), env_note),
             evidence);
    return;
  }
  std::string winners;
  for (const OpStudy& s : ops)
    for (const Range& rg : ranges_of(s)) {
      const SizePoint& p = s.points[rg.first];
      if (p.no_default || p.answer == kDefault) continue;
      winners += fmt::format("{}{} for {} {}", winners.empty() ? "" : "; ", label(p.answer), s.op,
                             size_text(p.bytes, s.points[rg.last].bytes));
    }
  const std::string why =
      winners.empty() ? fmt::format(
                            "leave unset: NCCL's own choice is within noise of the best variant at "
                            "every measured size ({}){}",
                            op_list, env_note)
                      : fmt::format(
                            "per range only ({}): no variant wins or ties at every measured size "
                            "({}), and an exported variable applies to all sizes; leave it unset{}",
                            winners, op_list, env_note);
  add_pair(out, {"nccl", "all sizes"}, kDefault, false, why, evidence);
}

}  // namespace

Recommendations recommend_nccl(const RunFile& run, int gpu) {
  Recommendations out;
  if (run.system.gpus.size() < 2) {
    out.absent.push_back({"nccl", "one GPU: the collectives need two or more; nothing to tune"});
    return out;
  }
  const Found f = find_results(run, Family::kCollectiveBusbw, {}, [gpu](const Result& r) {
    const bool mine =
        r.devices.empty() || std::find(r.devices.begin(), r.devices.end(), gpu) != r.devices.end();
    return mine && !bool_param(r, "graph", false);
  });
  const auto is_study = [](const Result* r) { return variant_of(*r) != kDefault; };
  const bool ran = std::any_of(f.ok.begin(), f.ok.end(), is_study) ||
                   std::any_of(f.not_ok.begin(), f.not_ok.end(), is_study);
  if (!ran) {
    out.absent.push_back({"nccl",
                          "the algorithm study (collectives.algorithms) was not run: "
                          "nothing to compare NCCL's own choice with" +
                              not_used_note(f.not_ok, kCollectiveKeys)});
    return out;
  }
  const std::vector<OpStudy> ops = study(f.ok);
  if (ops.empty()) {
    std::set<std::string> reasons;
    for (const Result* r : f.not_ok)
      if (reasons.size() < 3) reasons.insert(status_note(*r));
    std::string text;
    for (const std::string& r : reasons)
      text += (text.empty() ? "" : "; ") + r;
    out.absent.push_back({"nccl", "the algorithm study has no ok result: " + text});
    return out;
  }
  std::string env_note;
  if (run.comm)
    for (const char* name : {"NCCL_ALGO", "NCCL_PROTO"})
      if (const auto it = run.comm->nccl_env.find(name); it != run.comm->nccl_env.end())
        env_note += fmt::format(" (NCCL's own choice ran with {}={} from the environment)", name,
                                it->second);
  for (const OpStudy& s : ops)
    for (const Range& rg : ranges_of(s))
      range_settings(s, rg, env_note, out);
  overall_settings(ops, env_note, out);
  return out;
}

}  // namespace gpuvs::tune
