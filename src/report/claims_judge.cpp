// The claims check (claims.h): each claimed figure against the best reference for its
// GPU — a measurement of a run given with the claims, the datasheet, a published
// figure — with one sentence saying which and why. Parsing and name resolution of
// claims are in claims.cpp.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <regex>
#include <set>

#include "report/claims.h"
#include "report/compare.h"
#include "report/summary.h"

namespace gpuvs {

namespace {

// A figure in the claim's own unit, as people write it: 989, 19.5, 4800, 16896.
std::string num(double v) {
  if (std::fabs(v) >= 1000) return fmt::format("{:.0f}", v);
  return fmt::format("{:.3g}", v);
}

// The claim's unit spelled canonically ("TFLOPS" -> "TFLOP/s"), from its scale.
std::string unit_label(double scale, std::string_view base, const std::string& written) {
  if (base == "1") return "";
  static constexpr std::pair<double, const char*> kPrefix[] = {{1e15, "P"}, {1e12, "T"}, {1e9, "G"},
                                                               {1e6, "M"},  {1e3, "k"},  {1, ""}};
  for (auto [p, sym] : kPrefix)
    if (std::fabs(scale / p - 1) < 1e-9) return fmt::format("{}{}", sym, base);
  return written;
}

std::string gpu_display(const GpuSpec& g, bool strip_size) {
  std::string n = short_gpu_name(g.name.empty() ? g.id : g.name);
  if (strip_size) {
    static const std::regex kSize(R"(\s*\b\d+(\.\d+)?\s*GB\b)", std::regex::icase);
    n = std::regex_replace(n, kSize, "");
  }
  return n;
}

std::string lower_alnum(std::string_view s) {
  std::string out;
  for (unsigned char c : s)
    if (std::isalnum(c)) out += static_cast<char>(std::tolower(c));
  return out;
}

std::optional<int64_t> number_after(const std::string& text, const std::regex& re) {
  std::smatch m;
  if (!std::regex_search(text, m, re)) return std::nullopt;
  int64_t v = 0;
  const std::string digits = m[1].str();
  const auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), v);
  if (ec != std::errc() || end != digits.data() + digits.size()) return std::nullopt;
  return v;
}

// "batch 256", "batch size = 256", "bs256".
std::optional<int64_t> batch_of(const std::string& setting) {
  static const std::regex kBatch(R"((?:batch\s*(?:size\s*)?(?:=\s*)?|\bbs\s*=?\s*)(\d+))",
                                 std::regex::icase);
  return number_after(setting, kBatch);
}

// "seq 128", "sequence length 512", "seq_len=384".
std::optional<int64_t> seq_of(const std::string& setting) {
  static const std::regex kSeq(R"(seq(?:uence)?[\s_]*(?:len(?:gth)?)?\s*=?\s*(\d+))",
                               std::regex::icase);
  return number_after(setting, kSeq);
}

// The precisions a claim's precision text can mean, in gpuvs's names: "mixed" and
// "AMP" without a type are FP16 or BF16 mixed precision. Empty: not stated.
std::set<std::string> precisions_of(const std::string& text) {
  const std::string t = lower_alnum(text);
  std::set<std::string> out;
  if (t.empty()) return out;
  for (const char* p : {"fp32", "tf32", "fp16", "bf16", "fp8", "int8"})
    if (t.find(p) != std::string::npos) out.insert(p);
  if (t.find("bfloat16") != std::string::npos) out.insert("bf16");
  if (t.find("half") != std::string::npos) out.insert("fp16");
  if (t.find("single") != std::string::npos) out.insert("fp32");
  if (out.empty() && (t.find("mixed") != std::string::npos || t.find("amp") != std::string::npos))
    out = {"fp16", "bf16"};
  return out;
}

struct Reference {
  double value = 0;  // base unit
  Source source = Source::kDatasheet;
  std::string ref;   // URL or run file
  std::string kind;  // how the why text names it: "datasheet", "measured by gpuvs", ...
};

// Context of one claim being judged.
struct Judging {
  const Claim& claim;
  const MetricDef& metric;
  const GpuSpec& spec;
  double claimed = 0;  // base unit
  double scale = 1;    // base units per claimed unit
  std::string unit;    // claimed unit, canonical spelling
  const ClaimOptions& options;

  std::string in_claim_unit(double base_value) const {
    std::string s = num(base_value / scale);
    return unit.empty() ? s : s + " " + unit;
  }
  std::string subject() const {
    return fmt::format("{} {}", gpu_display(spec, false), metric.name);
  }
};

ClaimVerdict classify(double off, const ClaimOptions& o) {
  const double a = std::fabs(off);
  if (a <= o.tolerance + 1e-9) return ClaimVerdict::kHolds;
  if (a <= std::max(o.contradicted_beyond, o.tolerance) + 1e-9) return ClaimVerdict::kOff;
  return ClaimVerdict::kContradicted;
}

void set_reference(ClaimJudgement& j, const Judging& c, const Reference& r) {
  j.reference = r.value;
  j.reference_source = r.source;
  j.reference_ref = r.ref;
  j.off_pct = r.value != 0 ? (c.claimed / r.value - 1) * 100 : 0;
}

// Another datasheet figure a claim of this metric may be quoting: the 2:4 sparse peak
// of a tensor metric, and FP64's tensor / non-tensor pair.
struct Alternate {
  std::string metric;
  ClaimVerdict verdict;
  std::string word;     // what the alternate is: "sparse"
  std::string primary;  // what the named metric is, against it: "dense"
};

std::vector<Alternate> alternates(std::string_view metric) {
  if (metric == "compute.fp64")
    return {{"compute.fp64_tensor", ClaimVerdict::kHoldsTensor, "tensor", "non-tensor"}};
  if (metric == "compute.fp64_tensor")
    return {{"compute.fp64", ClaimVerdict::kHoldsNonTensor, "non-tensor", "tensor"}};
  return {{std::string(metric) + "_sparse", ClaimVerdict::kHoldsSparse, "sparse", "dense"}};
}

// Judges against one reference; the why text names the figure and where it is from.
void judge_against(ClaimJudgement& j, const Judging& c, const Reference& r) {
  set_reference(j, c, r);
  j.verdict = r.value > 0 ? classify(c.claimed / r.value - 1, c.options)
                          : (c.claimed == 0 ? ClaimVerdict::kHolds : ClaimVerdict::kContradicted);
  const std::string claimed = num(c.claim.value);
  const std::string ref = num(r.value / c.scale);
  std::string extra;
  if (r.source == Source::kMeasured) {
    auto it = c.spec.figures.find(c.metric.id);
    if (it != c.spec.figures.end())
      extra = fmt::format(" (datasheet {})", num(it->second.value / c.scale));
  }
  // A compute claim may quote another figure of the datasheet (sparse, FP64 tensor).
  std::vector<std::pair<Alternate, double>> alts;
  if (c.metric.group == MetricGroup::kCompute)
    for (const Alternate& a : alternates(c.metric.id)) {
      auto it = c.spec.figures.find(a.metric);
      if (it != c.spec.figures.end() && it->second.value > 0)
        alts.emplace_back(a, it->second.value);
    }
  if (j.verdict != ClaimVerdict::kHolds)
    for (const auto& [a, value] : alts) {
      if (classify(c.claimed / value - 1, c.options) != ClaimVerdict::kHolds) continue;
      j.verdict = a.verdict;
      j.reference = value;
      j.reference_source = Source::kDatasheet;
      j.reference_ref = c.spec.source;
      j.off_pct = (c.claimed / value - 1) * 100;
      j.why = fmt::format("{} {} holds as the {} figure ({} {}); {} is {} ({})", c.subject(),
                          c.in_claim_unit(c.claimed), a.word, "datasheet", num(value / c.scale),
                          a.primary, ref, r.kind);
      return;
    }
  switch (j.verdict) {
    case ClaimVerdict::kHolds:
      j.why = fmt::format("{} {} holds ({} {}){}", c.subject(), c.in_claim_unit(c.claimed), r.kind,
                          ref, extra);
      break;
    case ClaimVerdict::kOff:
      j.why = fmt::format("{} is {} ({}){}; {} is off by {:+.0f} %", c.subject(),
                          c.in_claim_unit(r.value), r.kind, extra, claimed, j.off_pct);
      break;
    default: {
      std::vector<std::string> others;
      for (const auto& [a, value] : alts)
        others.push_back(fmt::format("the {} ({})", a.word, num(value / c.scale)));
      // Against a measurement the datasheet's own figure is the other candidate.
      std::string primary =
          fmt::format("the {} ({})", alts.empty() ? "" : alts.front().first.primary, ref);
      if (r.source == Source::kMeasured) {
        auto it = c.spec.figures.find(c.metric.id);
        primary = fmt::format("the measured {}{}", ref,
                              it == c.spec.figures.end()
                                  ? ""
                                  : fmt::format(", the {} datasheet figure ({})",
                                                alts.empty() ? "" : alts.front().first.primary,
                                                num(it->second.value / c.scale)));
      }
      if (!others.empty())
        j.why = fmt::format("{} is {} ({}){}; {} is neither {} nor {} figure", c.subject(),
                            c.in_claim_unit(r.value), r.kind, extra, claimed, primary,
                            fmt::join(others, " nor "));
      else
        j.why = fmt::format("{} is {} ({}){}; {} is {:.0f} % {}", c.subject(),
                            c.in_claim_unit(r.value), r.kind, extra, claimed, std::fabs(j.off_pct),
                            j.off_pct < 0 ? "below" : "above");
    }
  }
}

// Beyond this factor outside every published figure a model throughput claim is
// contradicted whatever its settings: precision alone moves one GPU's throughput 2.6x
// (A100 ResNet-50 training, TF32 vs mixed, NVIDIA DeepLearningExamples).
constexpr double kModelRange = 4;

// A configuration of a model measured here.
struct MeasuredConfig {
  double value = 0;
  std::string text;  // "bf16, batch 256"
  std::string ref;
  std::string precision;
  std::optional<int64_t> batch, seq;
};

std::optional<int64_t> config_int(const Config& c, const std::string& name) {
  for (const auto& [k, v] : c)
    if (k == name) {
      int64_t x = 0;
      const auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), x);
      if (ec == std::errc() && end == v.data() + v.size()) return x;
    }
  return std::nullopt;
}

std::string config_value(const Config& c, const std::string& name) {
  for (const auto& [k, v] : c)
    if (k == name) return v;
  return "";
}

std::string listing(const Judging& c, const MeasuredConfig& m) {
  return fmt::format("{}: {}", m.text, c.in_claim_unit(m.value));
}

// Model throughput against the configurations measured here (a claim with settings:
// those that match them; without: where it falls among all of them).
// A claim above every configuration measured here is left to the published figures
// where there are some (`published`): the fastest settings may not have been measured.
bool judge_on_measured(ClaimJudgement& j, const Judging& c, std::vector<MeasuredConfig> all,
                       bool published) {
  if (all.empty()) return false;
  const std::set<std::string> want = precisions_of(c.claim.precision);
  const std::optional<int64_t> want_batch = batch_of(c.claim.setting);
  const std::optional<int64_t> want_seq = seq_of(c.claim.setting);
  const bool settings = !want.empty() || want_batch || want_seq;
  std::sort(all.begin(), all.end(), [](const auto& a, const auto& b) { return a.value < b.value; });
  auto ref_of = [&](const MeasuredConfig& m) {
    return Reference{m.value, Source::kMeasured, m.ref,
                     fmt::format("measured by gpuvs: {}", m.text)};
  };
  auto closest = [&](const std::vector<MeasuredConfig>& v) {
    return *std::min_element(v.begin(), v.end(), [&](const auto& a, const auto& b) {
      return std::fabs(std::log(c.claimed / a.value)) < std::fabs(std::log(c.claimed / b.value));
    });
  };
  if (settings) {
    std::vector<MeasuredConfig> matching;
    for (const MeasuredConfig& m : all)
      if ((want.empty() || want.count(m.precision)) && (!want_batch || m.batch == want_batch) &&
          (!want_seq || m.seq == want_seq))
        matching.push_back(m);
    if (matching.empty()) return false;  // published figures of those settings may judge it
    judge_against(j, c, ref_of(closest(matching)));
    return true;
  }
  const MeasuredConfig& near = closest(all);
  if (classify(c.claimed / near.value - 1, c.options) == ClaimVerdict::kHolds) {
    judge_against(j, c, ref_of(near));
    j.why += "; the claim states no settings";
    return true;
  }
  const MeasuredConfig& lo = all.front();
  const MeasuredConfig& hi = all.back();
  if (c.claimed < lo.value) {
    set_reference(j, c, ref_of(lo));
    j.verdict = classify(c.claimed / lo.value - 1, c.options);
    j.why = fmt::format(
        "{} {} is below every configuration measured here (lowest: {}){}", c.subject(),
        c.in_claim_unit(c.claimed), listing(c, lo),
        j.verdict == ClaimVerdict::kOff ? fmt::format(", by {:.0f} %", std::fabs(j.off_pct)) : "");
    return true;
  }
  if (c.claimed > hi.value) {
    if (published) return false;
    set_reference(j, c, ref_of(hi));
    j.verdict = ClaimVerdict::kUnverifiable;
    j.why = fmt::format(
        "{} {} is above every configuration measured here (highest: {}); the claim states no "
        "settings, and others (a lower precision, a larger batch) may reach it",
        c.subject(), c.in_claim_unit(c.claimed), listing(c, hi));
    return true;
  }
  const auto above =
      std::find_if(all.begin(), all.end(), [&](const auto& m) { return m.value > c.claimed; });
  const MeasuredConfig& below = *std::prev(above);
  set_reference(j, c, ref_of(closest(all)));
  j.verdict = ClaimVerdict::kUnverifiable;
  j.why = fmt::format(
      "{} {} lies between {} and {} measured here; the claim states no precision or batch",
      c.subject(), c.in_claim_unit(c.claimed), listing(c, below), listing(c, *above));
  return true;
}

// Model throughput against published figures: those of the claim's settings judge it;
// otherwise only a value far outside every published figure is contradicted.
void judge_on_published(ClaimJudgement& j, const Judging& c,
                        const std::vector<const PublishedFigure*>& figs) {
  const std::set<std::string> want = precisions_of(c.claim.precision);
  const std::optional<int64_t> want_batch = batch_of(c.claim.setting);
  const std::optional<int64_t> want_seq = seq_of(c.claim.setting);
  auto closest = [&](const std::vector<const PublishedFigure*>& v) {
    return *std::min_element(v.begin(), v.end(), [&](auto* a, auto* b) {
      return std::fabs(std::log(c.claimed / a->value)) < std::fabs(std::log(c.claimed / b->value));
    });
  };
  std::vector<const PublishedFigure*> matching;
  for (const PublishedFigure* f : figs) {
    const std::set<std::string> have = f->precision_key.empty()
                                           ? precisions_of(f->precision)
                                           : std::set<std::string>{f->precision_key};
    const bool prec = !want.empty() && std::any_of(want.begin(), want.end(),
                                                   [&](const auto& p) { return have.count(p); });
    if (prec && (!want_batch || !f->batch || *want_batch == *f->batch) &&
        (!want_seq || !f->seq || *want_seq == *f->seq))
      matching.push_back(f);
  }
  if (!matching.empty()) {
    const PublishedFigure* f = closest(matching);
    judge_against(j, c, {f->value, Source::kPublished, f->source, describe(*f)});
    return;
  }
  const PublishedFigure* f = closest(figs);
  set_reference(j, c, {f->value, Source::kPublished, f->source, describe(*f)});
  double lo = f->value, hi = f->value;
  std::vector<std::string> listed;
  for (const PublishedFigure* g : figs) {
    lo = std::min(lo, g->value);
    hi = std::max(hi, g->value);
    if (listed.size() < 3)
      listed.push_back(fmt::format("{} ({})", c.in_claim_unit(g->value), describe(*g)));
  }
  const std::string about =
      want.empty() ? "the claim states no precision or batch"
                   : fmt::format("no published figure is for {}{}", c.claim.precision,
                                 c.claim.setting.empty() ? "" : ", " + c.claim.setting);
  if (c.claimed < lo / kModelRange || c.claimed > hi * kModelRange) {
    j.verdict = ClaimVerdict::kContradicted;
    j.why = fmt::format(
        "{} {} is more than {:.0f}x outside every published figure ({} to {}), whatever the "
        "settings: {}",
        c.subject(), c.in_claim_unit(c.claimed), kModelRange, num(lo / c.scale),
        c.in_claim_unit(hi), fmt::join(listed, "; "));
  } else if (want.empty() &&
             classify(c.claimed / f->value - 1, c.options) == ClaimVerdict::kHolds) {
    j.verdict = ClaimVerdict::kHolds;
    j.why = fmt::format("{} {} holds against {} ({}), though {}", c.subject(),
                        c.in_claim_unit(c.claimed), c.in_claim_unit(f->value), describe(*f), about);
  } else {
    j.verdict = ClaimVerdict::kUnverifiable;
    j.why = fmt::format("not comparable: {}; published for the {}: {}", about,
                        gpu_display(c.spec, false), fmt::join(listed, "; "));
  }
}

// Every configuration of `metric` measured on GPUs of `spec` in the runs given.
std::vector<MeasuredConfig> measured_configs(const MetricDef& metric, const GpuSpec& spec,
                                             const std::vector<CompareInput>& measured,
                                             const Catalogue& catalogue) {
  std::vector<MeasuredConfig> out;
  for (const CompareInput& in : measured) {
    const GpuSpec* s = spec_for(in, catalogue);
    if (!in.run || !s || s->id != spec.id) continue;
    for (const auto& [config, cell] :
         measured_cells(*in.run, in.gpu_index, metric, s, in.run_ref)) {
      if (!cell.value || cell.invalid) continue;
      MeasuredConfig m;
      m.value = *cell.value;
      m.text = config_text(metric, config);
      m.ref = cell.source_ref;
      m.precision = config_value(config, "precision");
      m.batch = config_int(config, "batch");
      m.seq = config_int(config, "seq");
      const bool seen = std::any_of(out.begin(), out.end(), [&](const MeasuredConfig& o) {
        return o.text == m.text && o.value == m.value;
      });
      if (!seen) out.push_back(std::move(m));
    }
  }
  return out;
}

ClaimJudgement judge_one(const Claim& claim, const std::vector<CompareInput>& measured,
                         const Catalogue& catalogue, const Published& published,
                         const ClaimOptions& options) {
  ClaimJudgement j;
  j.claim = claim;
  const MetricDef* m = resolve_claim_metric(claim.metric);
  if (!m) {
    j.why = fmt::format("unknown metric '{}'", claim.metric);
    return j;
  }
  j.reference_unit = m->unit;
  const ClaimedGpu gpu = resolve_claimed_gpu(claim.gpu, catalogue);
  if (!gpu.spec) {
    const std::vector<std::string> near = catalogue.suggest(gpu.family);
    j.why = fmt::format("the catalogue has no GPU '{}'{}", claim.gpu,
                        near.empty() ? "" : fmt::format(" (closest: {})", fmt::join(near, ", ")));
    return j;
  }
  const std::optional<double> claimed = claim_to_base_unit(claim.value, claim.unit, m->unit);
  if (!claimed) {
    j.why = fmt::format("unit '{}' does not fit {} ({})", claim.unit, m->name, m->unit);
    return j;
  }
  // The unit's own factor, not claimed / value: that ratio loses precision, or is
  // infinite, for a value near the ends of the double range.
  const double scale = claim_to_base_unit(1, claim.unit, m->unit).value();
  const Judging c{claim,  *m, *gpu.spec, *claimed, scale, unit_label(scale, m->unit, claim.unit),
                  options};
  const bool model = m->group == MetricGroup::kModels;

  std::optional<Reference> ref;
  if (!model)
    for (const CompareInput& in : measured) {
      const GpuSpec* s = spec_for(in, catalogue);
      if (!in.run || !s || s->id != gpu.spec->id) continue;
      std::optional<Cell> cell = measured_cell(*in.run, in.gpu_index, *m, s, in.run_ref);
      if (cell && cell->value && !cell->invalid) {
        ref = Reference{*cell->value, Source::kMeasured, cell->source_ref,
                        "measured by " +
                            (cell->measured_by.empty() ? std::string("gpuvs") : cell->measured_by)};
        break;
      }
    }
  if (!ref && !model) {
    auto it = gpu.spec->figures.find(m->id);
    if (it != gpu.spec->figures.end())
      ref =
          Reference{it->second.value, Source::kDatasheet,
                    it->second.source.empty() ? gpu.spec->source : it->second.source, "datasheet"};
  }
  const bool unsupported = std::find(gpu.spec->unsupported.begin(), gpu.spec->unsupported.end(),
                                     m->id) != gpu.spec->unsupported.end();
  std::vector<const PublishedFigure*> figs;
  for (const PublishedFigure* f : published.for_gpu(gpu.spec->id))
    if (f->metric == m->id && f->unit == m->unit && f->value > 0) figs.push_back(f);

  if (!ref && unsupported) {
    j.reference = 0;
    j.reference_source = Source::kDatasheet;
    j.reference_ref = gpu.spec->source;
    j.verdict = claim.value == 0 ? ClaimVerdict::kHolds : ClaimVerdict::kContradicted;
    j.why = fmt::format("the {} has no {} (datasheet)", gpu_display(*gpu.spec, false), m->name);
  } else if (ref) {
    judge_against(j, c, *ref);
  } else if (model && judge_on_measured(j, c, measured_configs(*m, *gpu.spec, measured, catalogue),
                                        !figs.empty())) {
    // judged on what was measured here
  } else if (!figs.empty()) {
    if (model)
      judge_on_published(j, c, figs);
    else
      judge_against(
          j, c,
          {figs.front()->value, Source::kPublished, figs.front()->source, describe(*figs.front())});
  } else {
    const std::vector<MeasuredConfig> any =
        model ? measured_configs(*m, *gpu.spec, measured, catalogue)
              : std::vector<MeasuredConfig>{};
    if (!any.empty()) {
      std::vector<std::string> listed;
      for (const MeasuredConfig& x : any)
        listed.push_back(listing(c, x));
      j.why = fmt::format(
          "not comparable: no configuration measured here or published is for {}{}; measured "
          "here: {}",
          claim.precision.empty() ? "those settings" : claim.precision,
          claim.setting.empty() ? "" : ", " + claim.setting, fmt::join(listed, "; "));
    } else {
      j.why = fmt::format("gpuvs has no measurement, datasheet or published figure for the {}",
                          c.subject());
    }
  }

  if (gpu.memory_mismatch) {
    const std::string size = num(*gpu.named_memory_bytes / 1e9);
    auto it = gpu.spec->figures.find("memory.size");
    const std::string real =
        it != gpu.spec->figures.end() ? num(it->second.value / 1e9) + " GB" : "another size";
    std::string no_such = fmt::format("no {} has {} GB; the {} has {} (datasheet)", gpu.family,
                                      size, gpu_display(*gpu.spec, true), real);
    if (gpu.other_with_size)
      no_such += fmt::format("; the {} has {} GB", gpu.other_with_size->id, size);
    if (m->id == "memory.size" && !holds(j.verdict))
      j.why = no_such;
    else
      j.why += fmt::format(" [{}; judged against the {}]", no_such, gpu_display(*gpu.spec, false));
  }
  return j;
}

}  // namespace

std::vector<ClaimJudgement> judge_claims(const std::vector<Claim>& claims,
                                         const std::vector<CompareInput>& measured,
                                         const Catalogue& catalogue, const Published& published,
                                         const ClaimOptions& options) {
  std::vector<ClaimJudgement> out;
  for (const Claim& c : claims)
    out.push_back(judge_one(c, measured, catalogue, published, options));
  return out;
}

std::vector<ClaimJudgement> judge_claims(const std::vector<Claim>& claims,
                                         const std::vector<CompareInput>& measured,
                                         const Catalogue& catalogue, const Published& published) {
  return judge_claims(claims, measured, catalogue, published, ClaimOptions{});
}

}  // namespace gpuvs
