// The algorithm study over collective results (collectives.h: study_winners): per
// operation and size, the variant with the best busbw against the default, merged
// into ranges, and an honest recommendation.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>

#include "core/units.h"
#include "report/collectives_detail.h"

namespace gpuvs {
namespace collectives_detail {

// ---- the study ------------------------------------------------------------------

StudyVerdict verdict_of(const StudyPoint& p) {
  if (!p.gain) return StudyVerdict::kNoDefault;
  if (*p.gain <= 1 + kTieGain) return StudyVerdict::kDefault;
  return p.clear ? StudyVerdict::kClear : StudyVerdict::kUnclear;
}

std::string verdict_text(StudyVerdict v, const std::string& keep) {
  switch (v) {
    case StudyVerdict::kDefault:
      return "default is within 3 %: " + keep;
    case StudyVerdict::kClear:
      return "beats the default by > 5 %, beyond noise";
    case StudyVerdict::kUnclear:
      return "ahead, but by ≤ 5 % or within noise: not significant";
    case StudyVerdict::kNoDefault:
      return "no valid default result to compare with";
  }
  return "";
}

std::string best_cell(const StudyRange& r) {
  if (r.verdict != StudyVerdict::kDefault) return variant_label(r.algo, r.proto);
  if (r.best.size() == 1 && r.best[0] == "default") return "default";
  std::vector<std::string> others;
  for (const std::string& b : r.best)
    if (b != "default") others.push_back(b);
  return fmt::format("default ≈ {}", fmt::join(others, ", "));
}

StudyOp study_op(const RunFile& run, const Collection& c, const OpGroup& g) {
  StudyOp s;
  s.op = g.op;
  s.ranks = g.ranks;
  // The sizes the study measured (a variant other than the default has a result there,
  // whatever its status): a size of the main sweep only is no point of the study, and a
  // size where nothing is ok breaks a range instead of being silently bridged.
  const auto sizes = c.sizes(g, [](const Key& k) {
    return !k.nccl_tests && !k.graph && (k.algo != "default" || k.proto != "default");
  });
  std::set<std::pair<std::string, std::string>> variants;
  for (const Result* r : g.unsized) {
    const std::string algo = str_param(*r, "algo", "default"),
                      proto = str_param(*r, "proto", "default");
    if (algo == "default" && proto == "default") continue;
    variants.insert({algo, proto});
    if (r->status == Status::kOk) continue;
    auto& list = s.unsupported[status_note(*r)];
    list.push_back(variant_label(algo, proto));
  }
  std::vector<size_t> index;  // of each point in `sizes`
  for (size_t i = 0; i < sizes.size(); ++i) {
    StudyPoint p;
    p.bytes = sizes[i];
    bool have = false;
    for (const auto& [k, pt] : c.latest) {
      if (k.op != g.op || k.ranks != g.ranks || k.nccl_tests || k.graph || k.bytes != sizes[i])
        continue;
      variants.insert({k.algo, k.proto});
      const std::string label = variant_label(k.algo, k.proto);
      if (const Result* b = pt.bad()) {
        if (b->status == Status::kUnsupported) {
          auto& list = s.unsupported[status_note(*b)];
          if (std::find(list.begin(), list.end(), label) == list.end()) list.push_back(label);
        } else {
          s.invalid.push_back(
              fmt::format("{} at {}: {}", label, format_bytes_binary(k.bytes), status_note(*b)));
        }
        continue;
      }
      const auto bw = pt.busbw_bps();
      if (!bw) continue;
      ++p.variants_ok;
      const bool is_default = k.algo == "default" && k.proto == "default";
      if (is_default) {
        p.default_busbw = *bw;
        p.default_noise = pt.busbw_noise();
      }
      // A variant must be strictly better to win: on a tie the default keeps the place.
      if (!have || *bw > p.best_busbw || (*bw == p.best_busbw && is_default)) {
        p.algo = k.algo;
        p.proto = k.proto;
        p.best_busbw = *bw;
        p.best_noise = pt.busbw_noise();
        have = true;
      }
    }
    if (!have) continue;
    if (p.default_busbw) {
      p.gain = p.best_busbw / *p.default_busbw;
      const double gap = *p.gain - 1;
      p.clear = gap > kRecommendGain && p.best_noise < gap && p.default_noise < gap;
    }
    s.points.push_back(p);
    index.push_back(i);
  }
  s.variants = static_cast<int>(variants.size());
  for (size_t i = 0; i < s.points.size(); ++i) {
    const StudyPoint& p = s.points[i];
    const StudyVerdict v = verdict_of(p);
    const bool is_default_verdict = v == StudyVerdict::kDefault;
    const std::string algo = is_default_verdict ? "default" : p.algo;
    const std::string proto = is_default_verdict ? "default" : p.proto;
    StudyRange* last = s.ranges.empty() ? nullptr : &s.ranges.back();
    const bool joins = last && i > 0 && index[i] == index[i - 1] + 1 && last->verdict == v &&
                       last->algo == algo && last->proto == proto;
    if (!joins) {
      StudyRange r;
      r.min_bytes = p.bytes;
      r.verdict = v;
      r.algo = algo;
      r.proto = proto;
      s.ranges.push_back(r);
      last = &s.ranges.back();
    }
    last->max_bytes = p.bytes;
    const std::string best = variant_label(p.algo, p.proto);
    if (std::find(last->best.begin(), last->best.end(), best) == last->best.end())
      last->best.push_back(best);
    if (p.gain) {
      last->min_gain = last->min_gain ? std::min(*last->min_gain, *p.gain) : *p.gain;
      last->max_gain = last->max_gain ? std::max(*last->max_gain, *p.gain) : *p.gain;
    }
  }
  const std::string keep = keep_default(run);
  std::vector<std::string> recs;
  for (const StudyRange& r : s.ranges)
    if (r.verdict == StudyVerdict::kClear)
      recs.push_back(fmt::format(
          "{} for {} messages of {} ({} the default's busbw)", env_settings(r.algo, r.proto), g.op,
          size_range_label(r.min_bytes, r.max_bytes), ratio_range(r.min_gain, r.max_gain)));
  const bool any_default = std::any_of(s.points.begin(), s.points.end(),
                                       [](const StudyPoint& p) { return p.default_busbw; });
  if (!recs.empty())
    s.recommendation = fmt::format("{}; at other sizes {}", fmt::join(recs, "; "), keep);
  else if (!any_default)
    s.recommendation = "none: the default has no valid result to compare with";
  else
    s.recommendation = keep + ": no variant beats the default by more than 5 % beyond noise";
  return s;
}

bool has_study(const Collection& c, const OpGroup& g) {
  for (const auto& [k, p] : c.points)
    if (k.op == g.op && k.ranks == g.ranks && !k.nccl_tests && !k.graph &&
        (k.algo != "default" || k.proto != "default"))
      return true;
  return std::any_of(g.unsized.begin(), g.unsized.end(), [](const Result* r) {
    return str_param(*r, "algo", "default") != "default" ||
           str_param(*r, "proto", "default") != "default";
  });
}

// Results of the op that were not measured at any size, other than the study's
// variants (those are in its notes): "n/a: collectives need 2 or more GPUs ...".
std::vector<std::string> unsized_notes(const OpGroup& g) {
  std::vector<std::string> out;
  for (const Result* r : g.unsized)
    if (r->status != Status::kOk && str_param(*r, "algo", "default") == "default" &&
        str_param(*r, "proto", "default") == "default" &&
        std::find(out.begin(), out.end(), status_note(*r)) == out.end())
      out.push_back(status_note(*r));
  return out;
}

std::vector<std::string> study_notes(const StudyOp& s) {
  std::vector<std::string> out;
  for (const auto& [reason, vs] : s.unsupported)
    out.push_back(fmt::format("not measured: {} ({})", fmt::join(vs, ", "), reason));
  out.insert(out.end(), s.invalid.begin(), s.invalid.end());
  return out;
}

std::vector<std::string> study_row(const StudyRange& r, const std::string& keep) {
  return {size_range_label(r.min_bytes, r.max_bytes), best_cell(r),
          ratio_range(r.min_gain, r.max_gain), verdict_text(r.verdict, keep)};
}

}  // namespace collectives_detail

using namespace collectives_detail;

std::vector<StudyOp> study_winners(const RunFile& run) {
  const Collection c = collect(run);
  std::vector<StudyOp> out;
  for (const OpGroup& g : c.groups)
    if (has_study(c, g)) out.push_back(study_op(run, c, g));
  return out;
}

}  // namespace gpuvs
