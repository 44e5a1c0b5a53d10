#include "advise/advisor.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <tuple>
#include <utility>

#include "advise/request.h"
#include "core/error.h"
#include "core/units.h"

namespace gpuvs::advise {

namespace {

std::vector<int> candidate_counts(int max) {
  std::vector<int> out;
  for (int n : {1, 2, 4, 8})
    if (n <= max) out.push_back(n);
  for (int n = 16; n <= max; n += 8)
    out.push_back(n);
  return out;
}

std::string money(double v, const std::string& currency) {
  if (v >= 1e6) return fmt::format("{:.3g}M {}", v / 1e6, currency);
  if (v >= 1e4) return fmt::format("{:.0f}k {}", v / 1e3, currency);
  if (v >= 100) return fmt::format("{:.0f} {}", v, currency);
  return fmt::format("{:.2f} {}", v, currency);
}

double figure(const GpuSpec& g, const char* metric) {
  const auto it = g.figures.find(metric);
  return it == g.figures.end() ? 0 : it->second.value;
}

struct Fit {
  std::vector<Layout> fitting;  // every tensor-parallel degree that holds the model
  Layout closest;               // the smallest footprint when none does
  double closest_total = std::numeric_limits<double>::infinity();
  std::vector<std::string> tried;  // each layout and what became of it, for --explain
  bool ok() const { return !fitting.empty(); }
};

std::string gpus_text(int n) {
  return fmt::format("{} GPU{}", n, n == 1 ? "" : "s");
}

Fit fit_training(const Request& r, int n, const std::vector<int>& tps, double capacity,
                 int64_t max_dp) {
  Fit f;
  for (int tp : tps) {
    if (n % tp != 0) {
      f.tried.push_back(
          fmt::format("{}, tp {}: rejected, {} is not a multiple of {}", gpus_text(n), tp, n, tp));
      continue;
    }
    const Layout layout{tp, n / tp};
    if (layout.dp > max_dp) {
      f.tried.push_back(fmt::format(
          "{}, tp {} × dp {}: rejected, batch: the global batch of {} at micro-batch {} "
          "gives at most {} data-parallel ranks",
          gpus_text(n), tp, layout.dp, *r.global_batch, r.train.micro_batch, max_dp));
      continue;
    }
    const double total = training_memory(r.model, r.train, layout, false).total();
    f.tried.push_back(fmt::format("{}, tp {} × dp {}: {} per GPU of {}{}", gpus_text(n), tp,
                                  layout.dp, format_gb(total), format_gb(capacity),
                                  total <= capacity ? ": fits" : ": rejected, memory"));
    if (total <= capacity) f.fitting.push_back(layout);
    if (total < f.closest_total) {
      f.closest = layout;
      f.closest_total = total;
    }
  }
  return f;
}

// Of the layouts that fit, the fastest: a larger tensor-parallel degree costs
// all-reduces inside the node but divides the data-parallel traffic between nodes.
// `tried` gets each one's time split.
std::pair<TrainingTime, Layout> fastest(const Request& r, const Fit& fit, const TrainingJob& job,
                                        const ComputeRate& rate, const Bandwidth& link,
                                        std::vector<std::string>* tried = nullptr) {
  std::pair<TrainingTime, Layout> best;
  best.first.total_s = std::numeric_limits<double>::infinity();
  for (const Layout& layout : fit.fitting) {
    TrainingTime t = training_time(r.model, r.train, layout, job, rate, link, r.assumptions);
    if (tried)
      tried->push_back(fmt::format(
          "{}, tp {} × dp {}: compute {} + exposed data-parallel {} + tensor-parallel {} = {}",
          gpus_text(layout.count()), layout.tp, layout.dp, format_duration(t.compute_s),
          format_duration(t.dp_exposed_s), format_duration(t.tp_comm_s),
          format_duration(t.total_s)));
    if (t.total_s < best.first.total_s) best = {std::move(t), layout};
  }
  return best;
}

std::string basis_short(const ComputeRate& rate, double mfu) {
  if (rate.samples_per_s) return fmt::format("{} {:.0f} img/s", rate.basis, *rate.samples_per_s);
  if (rate.basis == "measured")
    return fmt::format("measured GEMM × {:.2f}", std::min(1.0, mfu / kMamfReference));
  return fmt::format("datasheet × {:.2f}", mfu);
}

void evaluate_training(const Request& r, const GpuSpec& g, const MeasuredGpu* measured,
                       Candidate& c) {
  std::string why_not;
  if (r.model.name == "resnet50") c.rate = resnet50_rate(g, r.train.precision, measured);
  if (!c.rate) c.rate = compute_rate(g, r.train.precision, measured, r.assumptions.mfu, why_not);
  if (!c.rate) {
    c.why = why_not;
    return;
  }
  c.usable = true;
  c.basis = basis_short(*c.rate, r.assumptions.mfu);
  c.link = node_bandwidth(g, measured);
  std::vector<int> tps;
  if (r.tp) {
    tps = {*r.tp};
  } else if (r.model.kind == ModelKind::kCnn) {
    tps = {1};
  } else {
    for (int tp : {1, 2, 4, 8})
      if (tp <= r.assumptions.gpus_per_node && r.model.shape.heads % tp == 0) tps.push_back(tp);
  }
  const int64_t max_dp = std::max<int64_t>(1, *r.global_batch / r.train.micro_batch);
  const std::vector<int> counts = r.gpus ? std::vector<int>{*r.gpus} : candidate_counts(r.max_gpus);
  Fit fit;
  size_t first = 0;
  Fit closest;
  std::vector<std::string> search;  // every layout tried, for --explain
  const auto explain_search = [&](const std::string& head) {
    // The counts tried can run to thousands of layouts: the first and the last dozen.
    constexpr size_t kEnds = 12;
    c.explain.push_back(head);
    for (size_t i = 0; i < search.size(); ++i) {
      if (search.size() > 2 * kEnds && i == kEnds) {
        c.explain.push_back(fmt::format("  ... {} more layouts ...", search.size() - 2 * kEnds));
        i = search.size() - kEnds;
      }
      c.explain.push_back("  " + search[i]);
    }
  };
  for (; first < counts.size(); ++first) {
    fit = fit_training(r, counts[first], tps, c.capacity, max_dp);
    search.insert(search.end(), fit.tried.begin(), fit.tried.end());
    if (fit.ok()) break;
    if (fit.closest_total < closest.closest_total) closest = fit;
  }
  if (!fit.ok()) {
    explain_search("layout search (none fits):");
    c.layout = closest.closest;
    if (std::isinf(closest.closest_total)) {
      c.why = fmt::format("no layout: the global batch of {} allows at most {} data-parallel GPUs",
                          *r.global_batch, max_dp);
    } else {
      c.memory = training_memory(r.model, r.train, closest.closest);
      c.why = fmt::format(
          "does not fit {}: at best {} per GPU (tp {} × dp {}) of {}{}",
          r.gpus ? fmt::format("on {} GPUs", *r.gpus) : fmt::format("on up to {} GPUs", r.max_gpus),
          format_gb(closest.closest_total), closest.closest.tp, closest.closest.dp,
          format_gb(c.capacity),
          r.train.sharding != Sharding::kZero3
              ? "; --parallel zero3 also shards weights and gradients"
              : "");
    }
    return;
  }
  c.fits = true;
  const bool cnn = r.model.kind == ModelKind::kCnn;
  const TrainingJob job{training_flops(r.model, cnn ? *r.samples : *r.tokens),
                        cnn ? *r.samples : *r.tokens / static_cast<double>(r.model.shape.seq),
                        *r.global_batch};
  std::tie(c.time, c.layout) = fastest(r, fit, job, *c.rate, c.link, &search);
  std::string count_why = r.gpus ? "the count given" : "fewest that hold it";
  if (r.max_days && !r.gpus) {
    const double deadline = *r.max_days * 86400;
    c.meets_deadline = c.time.total_s <= deadline;
    for (size_t i = first + 1; i < counts.size() && !c.meets_deadline; ++i) {
      const Fit f = fit_training(r, counts[i], tps, c.capacity, max_dp);
      search.insert(search.end(), f.tried.begin(), f.tried.end());
      if (std::isinf(f.closest_total)) break;  // no more data-parallel room
      if (!f.ok()) continue;
      auto [t, layout] = fastest(r, f, job, *c.rate, c.link, &search);
      c.meets_deadline = t.total_s <= deadline;
      if (t.total_s < c.time.total_s) {
        c.time = std::move(t);
        c.layout = layout;
      }
    }
    count_why = c.meets_deadline
                    ? fmt::format("fewest that finish in {:g} days", *r.max_days)
                    : fmt::format("misses {:g} days even at its fastest count", *r.max_days);
  }
  c.memory = training_memory(r.model, r.train, c.layout);
  const double comm = c.time.dp_exposed_s + c.time.tp_comm_s;
  // Each rank runs whole micro-batches: a global batch that dp × micro-batch does not
  // divide becomes the next multiple of it, and the advice says so.
  const int64_t per_pass = r.train.micro_batch * c.layout.dp;
  const int64_t runs = (*r.global_batch + per_pass - 1) / per_pass * per_pass;
  const std::string forced =
      runs == *r.global_batch
          ? ""
          : fmt::format("; the batch becomes {} (dp {} × micro-batch {} × {}), not {}", runs,
                        c.layout.dp, r.train.micro_batch, runs / per_pass, *r.global_batch);
  c.why = fmt::format("tp {} × dp {}{}; {}{}", c.layout.tp, c.layout.dp,
                      comm > 0.05 * c.time.compute_s
                          ? fmt::format(", communication +{:.0f} %", 100 * comm / c.time.compute_s)
                          : "",
                      count_why, forced);
  c.explain.push_back(fmt::format("rate: {}", c.rate->text));
  c.explain.push_back(fmt::format("link inside a node: {}", c.link.text));
  explain_search(fmt::format("layout search (chosen: {}, tp {} × dp {}):",
                             gpus_text(c.layout.count()), c.layout.tp, c.layout.dp));
  c.explain.push_back(
      fmt::format("memory at tp {} × dp {} ({} GPUs; {} available per GPU):", c.layout.tp,
                  c.layout.dp, c.layout.count(), format_gb(c.capacity)));
  for (const std::string& s : c.memory.steps)
    c.explain.push_back("  " + s);
  for (const std::string& s : c.time.lines)
    c.explain.push_back(s);
}

void evaluate_inference(const Request& r, const GpuSpec& g, const MeasuredGpu* measured,
                        Candidate& c) {
  std::string why_not;
  c.rate = compute_rate(g, r.infer.precision, measured, r.assumptions.mfu, why_not);
  if (c.rate) c.memory_bw = memory_bandwidth(g, measured, r.assumptions.bw_util, why_not);
  if (!c.rate || !c.memory_bw) {
    c.why = why_not;
    return;
  }
  c.usable = true;
  c.basis = fmt::format("{} bandwidth × {:.2f}", c.memory_bw->basis, c.memory_bw->factor);
  const std::vector<int> counts = r.gpus ? std::vector<int>{*r.gpus} : candidate_counts(r.max_gpus);
  int n = 0;
  double closest = std::numeric_limits<double>::infinity();
  for (int count : counts) {
    const double total = inference_memory(r.model, r.infer, count, false).total();
    if (total <= c.capacity) {
      n = count;
      break;
    }
    closest = std::min(closest, total);
  }
  if (n == 0) {
    c.why = fmt::format(
        "does not fit {}: at best {} per GPU of {}",
        r.gpus ? fmt::format("on {} GPUs", *r.gpus) : fmt::format("on up to {} GPUs", r.max_gpus),
        format_gb(closest), format_gb(c.capacity));
    return;
  }
  c.fits = true;
  c.layout = Layout{std::min(n, r.assumptions.gpus_per_node),
                    std::max(1, n / r.assumptions.gpus_per_node)};
  c.memory = inference_memory(r.model, r.infer, n);
  c.speed = inference_speed(r.model, r.infer, n, *c.rate, *c.memory_bw);
  c.why = fmt::format("{}-bound decode; {}", c.speed.memory_bound ? "memory" : "compute",
                      r.gpus ? "the count given" : "fewest that hold it");
  c.explain.push_back(fmt::format("bandwidth: {}", c.memory_bw->text));
  c.explain.push_back(fmt::format("rate: {}", c.rate->text));
  c.explain.push_back(
      fmt::format("memory on {} GPUs ({} available per GPU):", n, format_gb(c.capacity)));
  for (const std::string& s : c.memory.steps)
    c.explain.push_back("  " + s);
  for (const std::string& s : c.speed.lines)
    c.explain.push_back(s);
}

// What the run files gave for a GPU, and whether this estimate uses it.
std::string measured_note(const MeasuredGpu& m, const Candidate& c, const Request& r) {
  const Mode mode = r.mode;
  std::vector<std::string> found;
  const std::string key = gemm_key(mode == Mode::kTrain ? r.train.precision : r.infer.precision);
  if (const auto g = m.gemm.find(key); g != m.gemm.end())
    found.push_back(fmt::format("GEMM {} {} ({})", key, format_si(g->second, "FLOP/s", 3),
                                m.gemm_from.at(key)));
  if (m.copy_bandwidth)
    found.push_back(
        fmt::format("copy {} ({})", format_si(*m.copy_bandwidth, "B/s", 3), m.copy_from));
  if (m.all_reduce_busbw) found.push_back("all-reduce " + format_si(*m.all_reduce_busbw, "B/s", 3));
  if (m.resnet50_train) found.push_back(fmt::format("ResNet-50 {:.0f} img/s", *m.resnet50_train));
  bool used = false;
  if (c.usable && mode == Mode::kTrain)
    used = c.rate->basis == "measured" || c.link.basis == "measured";
  if (c.usable && mode == Mode::kInfer)
    used = c.rate->basis == "measured" || c.memory_bw->basis == "measured";
  if (found.empty()) found.push_back("nothing that applies");
  return fmt::format("{}: {} measured; {}", m.gpu_id, fmt::join(found, ", "),
                     used ? "used in this estimate" : "not used in this estimate");
}

int group(const Candidate& c) {
  if (!c.usable) return 3;
  if (!c.fits) return 2;
  return c.meets_deadline ? 0 : 1;
}

double primary(const Candidate& c, Mode mode, RankBy by) {
  switch (by) {
    case RankBy::kCost:
      return c.cost.value_or(std::numeric_limits<double>::infinity());
    case RankBy::kTime:
      return mode == Mode::kTrain ? c.time.total_s : c.speed.decode_step_s;
    default:
      return c.gpu_hours(mode);
  }
}

std::string metric_text(const Candidate& c, Mode mode, RankBy by, const std::string& currency) {
  switch (by) {
    case RankBy::kCost:
      return c.cost ? money(*c.cost, currency) + (mode == Mode::kInfer ? " per 1M tokens" : "")
                    : "no price";
    case RankBy::kTime:
      return mode == Mode::kTrain ? format_duration(c.time.total_s)
                                  : fmt::format("{:.3g} ms per token", c.speed.decode_step_s * 1e3);
    default:
      return fmt::format("{} GPU-hours{}", format_count(c.gpu_hours(mode)),
                         mode == Mode::kInfer ? " per 1M tokens" : "");
  }
}

void naive_rule(const Request& r, const Prices* prices, Advice& a) {
  const std::string rule = "Naive rule (\"more than 10B parameters → H200, else budget decides\")";
  std::string reason;
  if (r.model.params > kNaiveThresholdParams) {
    a.naive_pick = kNaivePick;
    reason = fmt::format("{} > 10B parameters → {}", format_count(r.model.params), kNaivePick);
  } else if (prices) {
    const Price* cheapest = nullptr;
    for (const Candidate& c : a.ranked) {
      const Price* p = prices->find(c.gpu->id);
      if (p && (!cheapest || p->per_gpu_hour < cheapest->per_gpu_hour)) cheapest = p;
    }
    if (cheapest) {
      a.naive_pick = cheapest->gpu_id;
      reason = fmt::format("{} ≤ 10B → the budget decides: the cheapest GPU-hour is {} ({})",
                           format_count(r.model.params), cheapest->gpu_id,
                           money(cheapest->per_gpu_hour, prices->currency()));
    }
  }
  if (a.naive_pick.empty()) {
    a.naive_line =
        fmt::format("{}: {} ≤ 10B → the budget decides; without --prices the rule names no GPU.",
                    rule, format_count(r.model.params));
    return;
  }
  const auto it = std::find_if(a.ranked.begin(), a.ranked.end(),
                               [&](const Candidate& c) { return c.gpu->id == a.naive_pick; });
  if (it == a.ranked.end()) {
    a.naive_line = fmt::format("{}: {}; it is not among the candidates.", rule, reason);
    return;
  }
  const size_t k = static_cast<size_t>(it - a.ranked.begin());
  const Candidate& top = a.ranked.front();
  std::string verdict;
  if (k == 0) {
    verdict = "this calculation agrees: it ranks first";
  } else if (!it->usable || !it->fits) {
    verdict = fmt::format("here it ranks #{} of {}: {}", k + 1, a.ranked.size(), it->why);
  } else {
    const double mine = primary(*it, r.mode, a.ranked_by);
    const double best = primary(top, r.mode, a.ranked_by);
    verdict = fmt::format(
        "here it ranks #{} of {}: {} against {} for {}{}", k + 1, a.ranked.size(),
        metric_text(*it, r.mode, a.ranked_by, a.currency),
        metric_text(top, r.mode, a.ranked_by, a.currency), top.gpu->id,
        (best > 0 && std::isfinite(mine)) ? fmt::format(" ({:.2f}× the first)", mine / best) : "");
  }
  a.naive_line = fmt::format("{}: {}; {}.", rule, reason, verdict);
}

}  // namespace

double Candidate::gpu_hours(Mode mode) const {
  if (!fits) return std::numeric_limits<double>::infinity();
  if (mode == Mode::kTrain) return time.total_s / 3600 * layout.count();
  return layout.count() / (speed.tokens_per_s * 3600) * 1e6;
}

Advice advise(Request request, const Catalogue& catalogue, const Measurements& measured,
              const Prices* prices) {
  Advice a;
  fill_defaults(request, a);
  describe_model(request, a);
  list_assumptions(request, a);
  const Request& r = request;

  std::vector<const GpuSpec*> gpus;
  if (r.candidates.empty()) {
    for (const GpuSpec& g : catalogue.gpus())
      gpus.push_back(&g);
  } else {
    for (const std::string& name : r.candidates) {
      const GpuSpec* g = nullptr;
      try {
        g = &catalogue.get(name);
      } catch (const UsageError& e) {
        throw UsageError(std::string("--candidates: ") + e.what());
      }
      if (std::find(gpus.begin(), gpus.end(), g) == gpus.end()) gpus.push_back(g);
    }
  }
  if (prices) {
    a.currency = prices->currency();
    a.prices_name = prices->name();
    a.prices_description = prices->description();
  }
  for (const std::string& note : measured.notes())
    a.notes.push_back(note);

  for (const GpuSpec* g : gpus) {
    Candidate c;
    c.gpu = g;
    c.capacity = figure(*g, "memory.size");
    const MeasuredGpu* m = measured.find(g->id);
    if (c.capacity <= 0) {
      c.why = "the catalogue has no memory size";
    } else if (r.mode == Mode::kTrain) {
      evaluate_training(r, *g, m, c);
    } else {
      evaluate_inference(r, *g, m, c);
    }
    if (m) a.notes.push_back(measured_note(*m, c, r));
    if (const Price* p = prices ? prices->find(g->id) : nullptr) {
      c.price = p->per_gpu_hour;
      if (c.fits) {
        c.cost = p->per_gpu_hour * c.gpu_hours(r.mode);
        c.explain.push_back(fmt::format(
            "cost: {} GPU-hours{} × {} per GPU-hour ({}) = {}", format_count(c.gpu_hours(r.mode)),
            r.mode == Mode::kInfer ? " per 1M tokens" : "",
            money(p->per_gpu_hour, prices->currency()),
            p->source.empty() ? prices->name() : p->source, money(*c.cost, prices->currency())));
      }
    }
    a.ranked.push_back(std::move(c));
  }

  a.ranked_by = r.rank_by;
  if (a.ranked_by == RankBy::kAuto) a.ranked_by = prices ? RankBy::kCost : RankBy::kGpuHours;
  if (a.ranked_by == RankBy::kCost && !prices)
    throw UsageError("--rank cost needs --prices FILE (or --prices example)");
  const Mode mode = r.mode;
  const RankBy by = a.ranked_by;
  std::stable_sort(a.ranked.begin(), a.ranked.end(), [&](const Candidate& x, const Candidate& y) {
    const int gx = group(x);
    const int gy = group(y);
    if (gx != gy) return gx < gy;
    if (gx >= 2) return false;
    const double px = primary(x, mode, by);
    const double py = primary(y, mode, by);
    if (px != py) return px < py;
    return x.gpu_hours(mode) < y.gpu_hours(mode);
  });
  if (!a.ranked.empty() && group(a.ranked.front()) == 0) {
    const char* best = by == RankBy::kCost   ? "cheapest"
                       : by == RankBy::kTime ? (mode == Mode::kTrain ? "fastest" : "lowest latency")
                                             : "fewest GPU-hours";
    a.ranked.front().why = fmt::format("{}; {}", best, a.ranked.front().why);
  }
  naive_rule(r, prices, a);
  a.request = std::move(request);
  return a;
}

}  // namespace gpuvs::advise
