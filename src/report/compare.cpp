// Figures compared with references. build_comparison: columns from run-file GPUs and
// catalogue entries, rows from the metric table; a measured figure wins over the
// datasheet, which wins over a published one, and every cell keeps where its figure
// came from. Verdicts against the baseline column are noise-aware: a difference
// inside the measurement noise (or under 1 %) reads "same". judge_claims: each
// claimed figure against the best reference for its GPU, by the same precedence
// (parsing and name resolution of claims are in claims.cpp).
#include "report/compare.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <regex>

#include "core/verdict.h"
#include "report/claims.h"
#include "report/summary.h"

namespace gpuvs {

const char* to_string(Source s) {
  switch (s) {
    case Source::kMeasured:
      return "measured";
    case Source::kDatasheet:
      return "datasheet";
    case Source::kPublished:
      return "published";
    case Source::kDerived:
      return "derived";
  }
  return "unknown";
}

bool is_throughput_unit(std::string_view unit) {
  return unit == "B/s" || unit == "FLOP/s" || unit == "OP/s" || unit == "img/s" || unit == "seq/s";
}

const GpuSpec* spec_for(const CompareInput& input, const Catalogue& catalogue) {
  if (input.spec) return input.spec;
  if (!input.run) return nullptr;
  for (const GpuInfo& g : input.run->system.gpus)
    if (g.index == input.gpu_index) return catalogue.match_driver(g.name, g.pci_device_id);
  return nullptr;
}

namespace {

bool on_gpu(const Result& r, int gpu_index) {
  return std::find(r.devices.begin(), r.devices.end(), gpu_index) != r.devices.end();
}

std::optional<double> datasheet_value(const GpuSpec* spec, std::string_view metric) {
  if (!spec) return std::nullopt;
  auto it = spec->figures.find(std::string(metric));
  if (it == spec->figures.end()) return std::nullopt;
  return it->second.value;
}

std::string run_description(const RunFile& run, const std::string& run_ref) {
  if (!run_ref.empty()) return "run file " + run_ref;
  return fmt::format("run on {} at {}", run.meta.host, run.meta.started_at);
}

}  // namespace

std::optional<Cell> measured_cell(const RunFile& run, int gpu_index, const MetricDef& metric,
                                  const GpuSpec* spec, const std::string& run_ref) {
  const Result* invalid = nullptr;
  for (std::string_view id : metric.result_ids) {
    for (const Result& r : run.results) {
      if (r.id != id || !on_gpu(r, gpu_index) || r.unit != metric.unit) continue;
      if (r.status == Status::kInvalid && !invalid) invalid = &r;
      if (r.status != Status::kOk || !std::isfinite(r.value)) continue;
      Cell c;
      c.value = r.value;
      c.source = Source::kMeasured;
      c.source_ref = fmt::format("{}, result {}", run_description(run, run_ref), r.id);
      c.noise = r.stats.noise;
      c.throttled = throttled(r);
      if (auto ds = datasheet_value(spec, metric.id); ds && *ds > 0) c.of_datasheet = r.value / *ds;
      if (c.throttled) c.note = "measured while the GPU was throttled";
      return c;
    }
  }
  if (!invalid) return std::nullopt;
  Cell c;
  c.source = Source::kMeasured;
  c.invalid = true;
  c.source_ref = fmt::format("{}, result {}", run_description(run, run_ref), invalid->id);
  c.note = invalid->status_reason.empty() ? "invalid: failed validation"
                                          : "invalid: " + invalid->status_reason;
  return c;
}

namespace {

std::string lower_alnum(std::string_view s) {
  std::string out;
  for (unsigned char c : s)
    if (std::isalnum(c)) out += static_cast<char>(std::tolower(c));
  return out;
}

std::optional<int> batch_of(const std::string& setting) {
  static const std::regex kBatch(R"(batch\s*(?:size\s*)?(?:=\s*)?(\d+))", std::regex::icase);
  std::smatch m;
  int batch = 0;
  if (!std::regex_search(setting, m, kBatch)) return std::nullopt;
  const std::string digits = m[1].str();
  const auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), batch);
  if (ec != std::errc()) return std::nullopt;  // absurdly large: no usable batch
  return batch;
}

// "NVIDIA DeepLearningExamples: TF32, batch 256, 2021-04-20" (the full setting
// stays in the data file, next to the source).
std::string published_desc(const PublishedFigure& f) {
  std::vector<std::string> parts;
  if (!f.precision.empty()) parts.push_back(f.precision);
  if (auto b = batch_of(f.setting)) parts.push_back(fmt::format("batch {}", *b));
  if (!f.date.empty()) parts.push_back(f.date);
  return fmt::format("{}{}", f.publisher.empty() ? "published" : f.publisher,
                     parts.empty() ? "" : fmt::format(": {}", fmt::join(parts, ", ")));
}

// The published figure of a GPU for a metric: the one in `precision` when there is
// one (so that a row compares like with like), else the first.
const PublishedFigure* pick_published(const MetricDef& metric, const GpuSpec& spec,
                                      const Published& published, const std::string& precision) {
  const PublishedFigure* first = nullptr;
  for (const PublishedFigure* f : published.for_gpu(spec.id)) {
    if (f->metric != metric.id || f->unit != metric.unit) continue;
    if (!precision.empty() && lower_alnum(f->precision) == lower_alnum(precision)) return f;
    if (!first) first = f;
  }
  return first;
}

// A column without a measurement: its datasheet figure ("none" when the datasheet
// says the GPU lacks the feature), else for model metrics a published figure.
Cell datasheet_or_published(const MetricDef& metric, const GpuSpec* spec,
                            const Published& published, const CompareOptions& options,
                            const std::string& prefer_precision, const PublishedFigure** used) {
  Cell c;
  if (!spec) return c;
  if (options.include_datasheet_rows) {
    auto it = spec->figures.find(std::string(metric.id));
    if (it != spec->figures.end()) {
      c.value = it->second.value;
      c.source = Source::kDatasheet;
      c.source_ref = it->second.source.empty() ? spec->source : it->second.source;
      c.note = it->second.note;
      return c;
    }
    if (std::find(spec->unsupported.begin(), spec->unsupported.end(), metric.id) !=
        spec->unsupported.end()) {
      c.unsupported = true;
      c.source = Source::kDatasheet;
      c.source_ref = spec->source;
      c.note = "not supported by this GPU (datasheet)";
      return c;
    }
  }
  if (options.include_published && metric.id.rfind("model.", 0) == 0) {
    if (const PublishedFigure* f = pick_published(metric, *spec, published, prefer_precision)) {
      c.value = f->value;
      c.source = Source::kPublished;
      c.source_ref = f->source;
      c.note = published_desc(*f);
      *used = f;
    }
  }
  return c;
}

std::string unique_label(std::string label, const std::vector<Column>& columns) {
  auto taken = [&](const std::string& l) {
    return std::any_of(columns.begin(), columns.end(),
                       [&](const Column& c) { return c.label == l; });
  };
  if (!taken(label)) return label;
  for (int n = 2;; ++n) {
    std::string candidate = fmt::format("{} ({})", label, n);
    if (!taken(candidate)) return candidate;
  }
}

Column make_column(const CompareInput& in, const GpuSpec* spec, const std::vector<Column>& done) {
  Column col;
  col.catalogue_id = spec ? spec->id : "";
  std::string derived;
  if (in.run) {
    col.measured = true;
    const GpuInfo* gpu = nullptr;
    for (const GpuInfo& g : in.run->system.gpus)
      if (g.index == in.gpu_index) gpu = &g;
    col.gpu_name = gpu ? gpu->name : fmt::format("GPU {}", in.gpu_index);
    derived = short_gpu_name(col.gpu_name);
    if (in.run->system.gpus.size() > 1) derived += fmt::format(" #{}", in.gpu_index);
  } else if (spec) {
    col.gpu_name = spec->name;
    derived = spec->id;
  }
  col.label = unique_label(in.label.empty() ? derived : in.label, done);
  return col;
}

// Relative tolerance under which two figures read "same": the measured cells'
// combined noise times `sigmas`, never under 1 %.
double same_tolerance(const Cell& a, const Cell& b, double sigmas) {
  double var = 0;
  for (const Cell* c : {&a, &b})
    if (c->source == Source::kMeasured && c->noise) var += *c->noise * *c->noise;
  return std::max(0.01, sigmas * std::sqrt(var));
}

void fill_verdict(Cell& cell, const Cell& base, const Row& row, double sigmas) {
  if (!cell.value || !base.value || *base.value == 0) return;
  cell.ratio = *cell.value / *base.value;
  cell.diff_pct = (*cell.ratio - 1) * 100;
  if (std::fabs(*cell.ratio - 1) <= same_tolerance(cell, base, sigmas)) {
    cell.verdict = "same";
    return;
  }
  const bool higher = *cell.value > *base.value;
  if (is_throughput_unit(row.unit))
    cell.verdict = higher == row.higher_is_better ? "faster" : "slower";
  else
    cell.verdict = higher ? "higher" : "lower";
}

}  // namespace

Comparison build_comparison(const std::vector<CompareInput>& inputs, const Catalogue& catalogue,
                            const Published& published, const CompareOptions& options) {
  Comparison out;
  std::vector<const GpuSpec*> specs;
  for (const CompareInput& in : inputs) {
    specs.push_back(spec_for(in, catalogue));
    out.columns.push_back(make_column(in, specs.back(), out.columns));
  }
  out.baseline = options.baseline < out.columns.size() ? options.baseline : 0;

  for (const MetricDef& metric : metrics()) {
    Row row;
    row.metric = metric.id;
    row.name = metric.name;
    row.unit = metric.unit;
    row.higher_is_better = metric.higher_is_better;
    // The baseline first: the other columns' published figures follow its precision.
    std::vector<std::optional<Cell>> cells(inputs.size());
    std::vector<const PublishedFigure*> pubs(inputs.size(), nullptr);
    std::vector<size_t> order{out.baseline};
    for (size_t i = 0; i < inputs.size(); ++i)
      if (i != out.baseline) order.push_back(i);
    for (size_t i : order) {
      const CompareInput& in = inputs[i];
      if (in.run) cells[i] = measured_cell(*in.run, in.gpu_index, metric, specs[i], in.run_ref);
      if (!cells[i]) {
        const std::string prefer = pubs[out.baseline] ? pubs[out.baseline]->precision : "";
        cells[i] = datasheet_or_published(metric, specs[i], published, options, prefer, &pubs[i]);
      }
    }
    bool any = false;
    for (std::optional<Cell>& cell : cells) {
      any = any || cell->value || cell->invalid || cell->unsupported;
      row.cells.push_back(std::move(*cell));
    }
    if (!any) continue;
    if (!row.cells.empty()) {
      Cell& base = row.cells[out.baseline];
      if (base.value) {
        base.verdict = "baseline";
        base.ratio = 1;
        base.diff_pct = 0;
      }
      for (size_t i = 0; i < row.cells.size(); ++i) {
        if (i == out.baseline) continue;
        // Two published figures taken in different precisions do not compare.
        const PublishedFigure* a = pubs[i];
        const PublishedFigure* b = pubs[out.baseline];
        if (a && b && lower_alnum(a->precision) != lower_alnum(b->precision)) {
          row.cells[i].note += "; not comparable with the baseline (different precision)";
          continue;
        }
        fill_verdict(row.cells[i], base, row, options.same_sigmas);
      }
    }
    out.rows.push_back(std::move(row));
  }
  return out;
}

// ---------------------------------------------------------------------------------
// The claims check

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
  const ClaimedGpu& gpu;
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

// Judges against one reference; the why text names the figure and where it is from.
void judge_against(ClaimJudgement& j, const Judging& c, const Reference& r) {
  set_reference(j, c, r);
  j.verdict = r.value > 0 ? classify(c.claimed / r.value - 1, c.options)
                          : (c.claimed == 0 ? ClaimVerdict::kHolds : ClaimVerdict::kContradicted);
  const std::string claimed = num(c.claim.value);
  const std::string ref = num(r.value / c.scale);
  std::string extra;
  if (r.source == Source::kMeasured) {
    auto it = c.spec.figures.find(std::string(c.metric.id));
    if (it != c.spec.figures.end())
      extra = fmt::format(" (datasheet {})", num(it->second.value / c.scale));
  }
  // Compute figures: a claim may quote the sparse figure of the datasheet.
  std::optional<double> sparse;
  if (r.source == Source::kDatasheet) {
    auto it = c.spec.figures.find(std::string(c.metric.id) + "_sparse");
    if (it != c.spec.figures.end() && it->second.value > 0) sparse = it->second.value;
  }
  if (j.verdict != ClaimVerdict::kHolds && sparse &&
      classify(c.claimed / *sparse - 1, c.options) == ClaimVerdict::kHolds) {
    j.verdict = ClaimVerdict::kHolds;
    j.reference = *sparse;
    j.off_pct = (c.claimed / *sparse - 1) * 100;
    j.why = fmt::format("{} {} holds as the sparse figure ({} {}); dense is {}", c.subject(),
                        c.in_claim_unit(c.claimed), r.kind, num(*sparse / c.scale), ref);
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
    default:
      if (sparse)
        j.why = fmt::format(
            "{} is {} ({}); {} is neither the dense ({}) nor the sparse ({}) figure", c.subject(),
            c.in_claim_unit(r.value), r.kind, claimed, ref, num(*sparse / c.scale));
      else
        j.why = fmt::format("{} is {} ({}){}; {} is {:.0f} % {}", c.subject(),
                            c.in_claim_unit(r.value), r.kind, extra, claimed, std::fabs(j.off_pct),
                            j.off_pct < 0 ? "below" : "above");
  }
}

// Beyond this factor outside every published figure a model throughput claim is
// contradicted whatever its settings: precision alone moves one GPU's throughput
// 2.6x (A100 ResNet-50 training, TF32 vs mixed, NVIDIA DeepLearningExamples).
constexpr double kModelRange = 4;

// Model throughput depends on precision and batch: a published figure judges a claim
// only when the claim's settings match it; otherwise only a value out of every
// published figure's range by more than kModelRange is contradicted.
void judge_model(ClaimJudgement& j, const Judging& c,
                 const std::vector<const PublishedFigure*>& figs) {
  const std::string want = lower_alnum(c.claim.precision);
  const std::optional<int> want_batch = batch_of(c.claim.setting);
  auto closest = [&](const std::vector<const PublishedFigure*>& v) {
    return *std::min_element(v.begin(), v.end(), [&](auto* a, auto* b) {
      return std::fabs(std::log(c.claimed / a->value)) < std::fabs(std::log(c.claimed / b->value));
    });
  };
  std::vector<const PublishedFigure*> matching;
  for (const PublishedFigure* f : figs) {
    const std::string p = lower_alnum(f->precision);
    const bool prec = !want.empty() && (p.find(want) != std::string::npos ||
                                        (!p.empty() && want.find(p) != std::string::npos));
    const std::optional<int> b = batch_of(f->setting);
    if (prec && (!want_batch || !b || *want_batch == *b)) matching.push_back(f);
  }
  if (!matching.empty()) {
    const PublishedFigure* f = closest(matching);
    judge_against(j, c, {f->value, Source::kPublished, f->source, published_desc(*f)});
    return;
  }
  const PublishedFigure* f = closest(figs);
  set_reference(j, c, {f->value, Source::kPublished, f->source, published_desc(*f)});
  double lo = f->value, hi = f->value;
  std::vector<std::string> listed;
  for (const PublishedFigure* g : figs) {
    lo = std::min(lo, g->value);
    hi = std::max(hi, g->value);
    if (listed.size() < 3)
      listed.push_back(fmt::format("{} ({})", c.in_claim_unit(g->value), published_desc(*g)));
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
                        c.in_claim_unit(c.claimed), c.in_claim_unit(f->value), published_desc(*f),
                        about);
  } else {
    j.verdict = ClaimVerdict::kUnverifiable;
    j.why = fmt::format("not comparable: {}; published for the {}: {}", about,
                        gpu_display(c.spec, false), fmt::join(listed, "; "));
  }
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
  j.reference_unit = std::string(m->unit);
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
  const double scale = claim.value != 0 ? *claimed / claim.value
                                        : claim_to_base_unit(1, claim.unit, m->unit).value();
  const Judging c{
      claim, *m, *gpu.spec, gpu, *claimed, scale, unit_label(scale, m->unit, claim.unit), options};

  std::optional<Reference> ref;
  for (const CompareInput& in : measured) {
    const GpuSpec* s = spec_for(in, catalogue);
    if (!in.run || !s || s->id != gpu.spec->id) continue;
    std::optional<Cell> cell = measured_cell(*in.run, in.gpu_index, *m, s, in.run_ref);
    if (cell && cell->value) {
      ref = Reference{*cell->value, Source::kMeasured, cell->source_ref, "measured by gpuvs"};
      break;
    }
  }
  const bool model = m->id.rfind("model.", 0) == 0;
  if (!ref && !model) {
    auto it = gpu.spec->figures.find(std::string(m->id));
    if (it != gpu.spec->figures.end())
      ref =
          Reference{it->second.value, Source::kDatasheet,
                    it->second.source.empty() ? gpu.spec->source : it->second.source, "datasheet"};
  }
  const bool unsupported = std::find(gpu.spec->unsupported.begin(), gpu.spec->unsupported.end(),
                                     m->id) != gpu.spec->unsupported.end();
  if (!ref && unsupported) {
    j.reference = 0;
    j.reference_source = Source::kDatasheet;
    j.reference_ref = gpu.spec->source;
    j.verdict = claim.value == 0 ? ClaimVerdict::kHolds : ClaimVerdict::kContradicted;
    j.why = fmt::format("the {} has no {} (datasheet)", gpu_display(*gpu.spec, false), m->name);
    return j;
  }
  std::vector<const PublishedFigure*> figs;
  for (const PublishedFigure* f : published.for_gpu(gpu.spec->id))
    if (f->metric == m->id && f->unit == m->unit && f->value > 0) figs.push_back(f);
  if (!ref && !model && !figs.empty())
    ref = Reference{figs.front()->value, Source::kPublished, figs.front()->source,
                    published_desc(*figs.front())};

  if (ref)
    judge_against(j, c, *ref);
  else if (model && !figs.empty())
    judge_model(j, c, figs);
  else
    j.why = fmt::format("gpuvs has no measurement, datasheet or published figure for the {}",
                        c.subject());

  if (gpu.memory_mismatch) {
    const std::string size = num(*gpu.named_memory_bytes / 1e9);
    auto it = gpu.spec->figures.find("memory.size");
    const std::string real =
        it != gpu.spec->figures.end() ? num(it->second.value / 1e9) + " GB" : "another size";
    std::string no_such = fmt::format("no {} has {} GB; the {} has {} (datasheet)", gpu.family,
                                      size, gpu_display(*gpu.spec, true), real);
    if (gpu.other_with_size)
      no_such += fmt::format("; the {} has {} GB", gpu.other_with_size->id, size);
    if (m->id == "memory.size" && j.verdict != ClaimVerdict::kHolds)
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
