// The model rules (recommend.h, rules 1-4): precision, batch and knee, CUDA graph,
// micro-batch and accumulation for a global batch.
#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <map>

#include "tune/recommend.h"
#include "tune/recommend_detail.h"

namespace gpuvs::tune {

using namespace detail;

namespace {

// What tells model configurations apart in evidence (the trainer's run parameters).
constexpr std::array<std::string_view, 7> kModelKeys = {
    "precision", "batch", "accumulate", "global_batch", "graph", "seq", "attention"};
constexpr std::array<std::string_view, 6> kMaxBatchKeys = {
    "precision", "batch", "max_batch", "recommended_batch", "headroom", "first_failure"};

// Model precisions from the most accurate to the least (mantissa bits of what the math
// reads: fp32 23, tf32 10 at the GEMM inputs, fp16 10, bf16 7, fp8 3); the model checks
// measure the same order (docs/model-checks.md: BERT-large logits rel_l2 2.6e-6, 1.2e-3,
// 1.7e-3, 1.3e-2, 1.5e-1).
constexpr std::array<std::string_view, 5> kByAccuracy = {"fp32", "tf32", "fp16", "bf16", "fp8"};

size_t accuracy_rank(const std::string& p) {
  const auto it = std::find(kByAccuracy.begin(), kByAccuracy.end(), p);
  return static_cast<size_t>(it - kByAccuracy.begin());
}

constexpr std::string_view kFp8Caveat =
    "fp8 accuracy: gpuvs's BERT-large checks allow fp8 logits rel_l2 up to 0.2 against "
    "PyTorch fp32 (bf16: 0.05), the loss within 3 %, and after 200 training steps a loss "
    "within 10 % of bf16's drop (docs/model-checks.md); check your own model's convergence";
constexpr std::string_view kTf32Caveat =
    "tf32 is a reduced-precision math mode, not fp32: GEMM and convolution inputs are rounded "
    "to 10 mantissa bits (fp32 keeps 23); gpuvs's BERT-large checks allow tf32 logits rel_l2 "
    "up to 0.01 against fp32 (docs/model-checks.md)";

std::string precision_of(const Result& r) {
  if (const auto m = match_result_id(r.id)) return m->value("precision");
  return str_param(r, "precision");
}

// One seq and attention per model and mode: the most common among its ok results (a
// throughput at seq 512 is never compared with one at seq 128).
struct Config {
  int64_t seq = -1;  // -1: the model has none
  std::string attention;
  bool operator<(const Config& o) const {
    return std::tie(seq, attention) < std::tie(o.seq, o.attention);
  }
};

Config config_of(const Result& r) {
  return {int_param(r, "seq", -1), str_param(r, "attention", "unfused")};
}

bool deterministic(const Result& r) {
  return bool_param(r, "deterministic", false);
}

struct ModelQuery {
  int gpu = 0;
  std::string model, mode, precision;  // precision "": any
};

Found model_results(const RunFile& run, Family family, const ModelQuery& q,
                    const std::function<bool(const Result&)>& accept) {
  std::vector<std::pair<std::string_view, std::string>> values = {{"model", q.model},
                                                                  {"mode", q.mode}};
  if (!q.precision.empty()) values.emplace_back("precision", q.precision);
  const auto mine = [&](const Result& r) { return on_gpu(r, q.gpu) && !deterministic(r); };
  // The configuration: the most common among the ok rates of the model and mode.
  const Found rates =
      find_results(run, Family::kModelRate, {{"model", q.model}, {"mode", q.mode}}, mine);
  std::map<Config, int> counts;
  for (const Result* r : rates.ok.empty() ? rates.not_ok : rates.ok)
    ++counts[config_of(*r)];
  Config base;
  int most = 0;
  for (const auto& [c, n] : counts)
    if (n > most) {
      base = c;
      most = n;
    }
  return find_results(run, family, values, [&](const Result& r) {
    const bool same = counts.empty() || (!(config_of(r) < base) && !(base < config_of(r)));
    return mine(r) && same && (!accept || accept(r));
  });
}

// The latest result per batch (a configuration measured twice counts once, the last).
std::map<int64_t, const Result*> by_batch(const std::vector<const Result*>& rs) {
  std::map<int64_t, const Result*> out;
  for (const Result* r : rs)
    out[int_param(*r, "batch", 0)] = r;
  return out;
}

bool graphed(const Result& r) {
  return bool_param(r, "graph", true);
}
bool single_step(const Result& r) {
  return int_param(r, "accumulate", 1) == 1;
}

// "model.bert-large.train.bf16", or with "{precision}" where the query has none.
std::string rate_id(const ModelQuery& q) {
  std::vector<std::pair<std::string_view, std::string>> values = {{"model", q.model},
                                                                  {"mode", q.mode}};
  if (!q.precision.empty()) values.emplace_back("precision", q.precision);
  return id_text(Family::kModelRate, values);
}

std::string ladder_text(const std::map<int64_t, const Result*>& ladder) {
  std::string out;
  for (const auto& [b, r] : ladder)
    out += fmt::format("{}{}: {}", out.empty() ? "" : ", ", b, figure(r->value, ""));
  return out + " " + ladder.begin()->second->unit;
}

}  // namespace

Recommendations recommend_precision(const RunFile& run, int gpu, std::string_view model,
                                    std::string_view mode) {
  const ModelQuery q{gpu, std::string(model), std::string(mode), ""};
  const std::vector<std::string> scope = {q.model, q.mode};
  const std::string section = q.model + " " + q.mode;
  Recommendations out;
  const Found f = model_results(run, Family::kModelRate, q,
                                [](const Result& r) { return graphed(r) && single_step(r); });
  if (f.ok.empty()) {
    out.absent.push_back({section, fmt::format("precision: no ok {} result with the CUDA graph{}",
                                               rate_id(q), not_used_note(f.not_ok, kModelKeys))});
    return out;
  }
  // The common batch: measured for the most precisions (the smallest of equals).
  std::map<int64_t, std::map<std::string, const Result*>> at_batch;
  for (const Result* r : f.ok)
    at_batch[int_param(*r, "batch", 0)][precision_of(*r)] = r;
  int64_t batch = 0;
  size_t most = 0;
  for (const auto& [b, ps] : at_batch)
    if (ps.size() > most) {
      batch = b;
      most = ps.size();
    }
  const std::map<std::string, const Result*>& cands = at_batch[batch];
  std::vector<const Result*> skipped;
  for (const Result* r : f.not_ok)
    if (int_param(*r, "batch", 0) == batch && !cands.contains(precision_of(*r)))
      skipped.push_back(r);

  std::vector<const Result*> ordered;  // most accurate first
  for (const auto& [p, r] : cands)
    ordered.push_back(r);
  std::sort(ordered.begin(), ordered.end(), [](const Result* a, const Result* b) {
    return accuracy_rank(precision_of(*a)) < accuracy_rank(precision_of(*b));
  });
  std::string list;
  for (const Result* r : ordered)
    list +=
        fmt::format("{}{} {}", list.empty() ? "" : ", ", precision_of(*r), figure(r->value, ""));
  list = fmt::format("batch {}, graph on: {} {}{}", batch, list, ordered.front()->unit,
                     not_used_note(skipped, kModelKeys));

  std::vector<Evidence> evidence;
  for (const Result* r : ordered)
    evidence.push_back(measured(*r, kModelKeys));
  const Result* fp8 = cands.contains("fp8") ? cands.at("fp8") : nullptr;
  const Result* fastest = nullptr;  // the fastest other than fp8
  for (const Result* r : ordered)
    if (r != fp8 && (!fastest || r->value > fastest->value)) fastest = r;
  if (!fastest) {
    out.absent.push_back(
        {section, "precision: only fp8 measured (" + list + "): nothing to compare its gain with"});
    return out;
  }
  // Within noise of the fastest, the most accurate format is kept.
  const Result* chosen = fastest;
  for (const Result* r : ordered)
    if (r != fp8 && within_noise(*fastest, *r)) {
      chosen = r;
      break;
    }
  std::string why;
  std::string caveat;
  const Result* winner = chosen;
  std::string fp8_note;
  if (fp8) {
    const double gain = fp8->value / fastest->value;
    const bool beyond = gain - 1 > tie_margin(*fp8, *fastest);
    evidence.push_back(derived_ratio(*fp8, *fastest, kModelKeys));
    if (gain >= 1 + kFp8MinGain && beyond) {
      winner = fp8;
      caveat = kFp8Caveat;
      why = fmt::format("fp8: {}, {} {}'s {} (fp8 must gain >= 5 %)", figure(*fp8),
                        ratio_text(gain), precision_of(*fastest), figure(fastest->value, ""));
    } else {
      fp8_note = fmt::format(
          "; fp8 {} is {} {}: {}", figure(fp8->value, ""), ratio_text(gain), precision_of(*fastest),
          gain >= 1 + kFp8MinGain ? fmt::format("within noise ({}), did not pay",
                                                percent_text(tie_margin(*fp8, *fastest)))
                                  : "under the 5 % fp8 must gain, did not pay");
    }
  }
  if (winner != fp8) {
    if (chosen != fastest) {
      evidence.push_back(derived_ratio(*fastest, *chosen, kModelKeys));
      why = fmt::format(
          "{}: {}, within noise ({}) of the fastest, {} at {} ({}): the wider format "
          "is kept",
          precision_of(*chosen), figure(*chosen), percent_text(tie_margin(*fastest, *chosen)),
          precision_of(*fastest), figure(fastest->value, ""),
          ratio_text(fastest->value / chosen->value));
    } else {
      const Result* second = nullptr;
      for (const Result* r : ordered)
        if (r != fp8 && r != chosen && (!second || r->value > second->value)) second = r;
      why = fmt::format("{}: {}, {}", precision_of(*chosen),
                        second ? "the fastest"
                        : fp8  ? "the only precision measured besides fp8"
                               : "the only precision measured",
                        figure(*chosen));
      if (second) {
        evidence.push_back(derived_ratio(*chosen, *second, kModelKeys));
        why += fmt::format(", {} {}", ratio_text(chosen->value / second->value),
                           precision_of(*second));
      }
    }
    why += fp8_note;
    if (precision_of(*chosen) == "tf32") caveat = kTf32Caveat;
  }
  Setting s = make_setting(scope, "precision", precision_of(*winner), why + "; " + list,
                           std::move(evidence));
  s.caveat = caveat;
  out.settings.push_back(std::move(s));
  return out;
}

Recommendations recommend_batch(const RunFile& run, int gpu, std::string_view model,
                                std::string_view mode, std::string_view precision,
                                double headroom) {
  const ModelQuery q{gpu, std::string(model), std::string(mode), std::string(precision)};
  const std::vector<std::string> scope = {q.model, q.mode};
  const std::string section = q.model + " " + q.mode;
  Recommendations out;
  const Found ladder_found = model_results(
      run, Family::kModelRate, q, [](const Result& r) { return graphed(r) && single_step(r); });
  const std::map<int64_t, const Result*> ladder = by_batch(ladder_found.ok);

  const Found mb = model_results(run, Family::kModelMaxBatch, q, nullptr);
  const std::string mb_id = id_text(
      Family::kModelMaxBatch, {{"model", q.model}, {"mode", q.mode}, {"precision", q.precision}});
  if (mb.ok.empty()) {
    out.absent.push_back(
        {section, fmt::format("batch: no ok {} (a --batch max search) in the run{}", mb_id,
                              not_used_note(mb.not_ok, kMaxBatchKeys))});
  } else {
    const Result& r = *mb.ok.back();
    const int64_t rec = int_param(r, "recommended_batch", 0);
    const std::optional<double> hr = number_parameter(r, "headroom");
    if (rec <= 0) {
      out.absent.push_back({section, fmt::format("batch: {} has no recommended_batch", mb_id)});
    } else if (!hr || std::fabs(*hr - headroom) > 1e-9) {
      out.absent.push_back(
          {section, fmt::format("batch: the search kept {} free, the request asks {}",
                                hr ? percent_text(*hr) : std::string("an unknown share"),
                                percent_text(headroom))});
    } else {
      std::vector<Evidence> evidence = {measured(r, kMaxBatchKeys)};
      std::string why = fmt::format(
          "{}: the largest batch that leaves {} of memory free; {} is the largest that fits{}", rec,
          percent_text(headroom), static_cast<int64_t>(r.value),
          int_param(r, "first_failure", 0) > 0
              ? fmt::format(" ({} did not)", int_param(r, "first_failure", 0))
              : std::string());
      if (const auto it = ladder.find(rec); it != ladder.end()) {
        evidence.push_back(measured(*it->second, kModelKeys));
        why += fmt::format("; {} at {}", figure(*it->second), rec);
        // Against the smallest batch measured: what the larger batch buys.
        const Result& low = *ladder.begin()->second;
        if (ladder.begin()->first < rec) {
          evidence.push_back(measured(low, kModelKeys));
          evidence.push_back(derived_ratio(*it->second, low, kModelKeys));
          why += fmt::format(", {} batch {}'s {}", ratio_text(it->second->value / low.value),
                             ladder.begin()->first, figure(low.value, ""));
        }
      }
      out.settings.push_back(make_setting(scope, "batch", rec, why, std::move(evidence)));
    }
  }

  if (ladder.size() < 2) {
    out.absent.push_back(
        {section, fmt::format("batch_knee: {} batch{} of {} measured with the graph; a knee needs "
                              "two or more{}",
                              ladder.size(), ladder.size() == 1 ? "" : "es", rate_id(q),
                              not_used_note(ladder_found.not_ok, kModelKeys))});
    return out;
  }
  const Result* best = nullptr;
  for (const auto& [b, r] : ladder)
    if (!best || r->value > best->value) best = r;
  const Result* knee = nullptr;
  for (const auto& [b, r] : ladder)
    if (r->value >= (1 - kKneeShare) * best->value) {
      knee = r;
      break;
    }
  std::vector<Evidence> evidence;
  for (const auto& [b, r] : ladder)
    evidence.push_back(measured(*r, kModelKeys));
  evidence.push_back(derived_ratio(*knee, *best, kModelKeys));
  const int64_t knee_batch = int_param(*knee, "batch", 0);
  const std::string why =
      knee == best
          ? fmt::format("{}: the best measured, {}; no smaller batch within 3 % of it; batch {}",
                        knee_batch, figure(*best), ladder_text(ladder))
          : fmt::format(
                "{}: {}, {} the best measured ({} at batch {}): the smallest batch within "
                "3 %; batch {}",
                knee_batch, figure(*knee), ratio_text(knee->value / best->value),
                figure(best->value, ""), int_param(*best, "batch", 0), ladder_text(ladder));
  out.settings.push_back(make_setting(scope, "batch_knee", knee_batch, why, std::move(evidence)));
  return out;
}

Recommendations recommend_cuda_graph(const RunFile& run, int gpu, std::string_view model,
                                     std::string_view mode, std::string_view precision,
                                     const std::vector<int64_t>& preferred) {
  const ModelQuery q{gpu, std::string(model), std::string(mode), std::string(precision)};
  const std::string section = q.model + " " + q.mode;
  Recommendations out;
  const Found on_found = model_results(
      run, Family::kModelRate, q, [](const Result& r) { return graphed(r) && single_step(r); });
  const Found off_found = model_results(
      run, Family::kModelRate, q, [](const Result& r) { return !graphed(r) && single_step(r); });
  const auto on = by_batch(on_found.ok), off = by_batch(off_found.ok);
  std::vector<int64_t> both;
  for (const auto& [b, r] : off)
    if (on.contains(b)) both.push_back(b);
  if (both.empty()) {
    out.absent.push_back(
        {section, fmt::format("cuda_graph: no batch of {} measured both with and without the "
                              "graph{}",
                              rate_id(q), not_used_note(off_found.not_ok, kModelKeys))});
    return out;
  }
  int64_t batch = both.back();
  for (int64_t p : preferred)
    if (std::find(both.begin(), both.end(), p) != both.end()) {
      batch = p;
      break;
    }
  const Result& g = *on.at(batch);
  const Result& e = *off.at(batch);
  const double gain = g.value / e.value;
  const double margin = tie_margin(g, e);
  const std::string figures =
      fmt::format("graph {} against eager {} at batch {}", figure(g), figure(e.value, ""), batch);
  bool value = false;
  std::string why;
  if (gain - 1 > margin) {
    value = true;
    why = fmt::format("on: {} eager, beyond noise ({}); {}", ratio_text(gain), percent_text(margin),
                      figures);
  } else if (1 - gain > margin) {
    why = fmt::format("off: the graph ran at {} eager, slower beyond noise ({}); {}",
                      ratio_text(gain), percent_text(margin), figures);
  } else {
    why = fmt::format(
        "either: within noise, {} eager (noise {}); left off, nothing measured to "
        "gain; {}",
        ratio_text(gain), percent_text(margin), figures);
  }
  out.settings.push_back(make_setting(
      {q.model, q.mode}, "cuda_graph", value, why,
      {measured(g, kModelKeys), measured(e, kModelKeys), derived_ratio(g, e, kModelKeys)}));
  return out;
}

Recommendations recommend_global_batch(const RunFile& run, int gpu, std::string_view model,
                                       std::string_view precision, int64_t global_batch) {
  const ModelQuery q{gpu, std::string(model), "train", std::string(precision)};
  const std::string section = q.model + " train";
  Recommendations out;
  const Found f = model_results(run, Family::kModelRate, q, [global_batch](const Result& r) {
    return graphed(r) && int_param(r, "global_batch", 0) == global_batch;
  });
  std::map<std::pair<int64_t, int64_t>, const Result*> cands;
  for (const Result* r : f.ok)
    cands[{int_param(*r, "batch", 0), int_param(*r, "accumulate", 1)}] = r;
  if (cands.empty()) {
    out.absent.push_back({section, fmt::format("global batch {}: no ok {} result with "
                                               "global_batch {}{}",
                                               global_batch, rate_id(q), global_batch,
                                               not_used_note(f.not_ok, kModelKeys))});
    return out;
  }
  std::vector<const Result*> ranked;
  for (const auto& [k, r] : cands)
    ranked.push_back(r);
  std::stable_sort(ranked.begin(), ranked.end(),
                   [](const Result* a, const Result* b) { return a->value > b->value; });
  const Result& best = *ranked.front();
  const auto way = [](const Result& r) {
    return fmt::format("{} x {}", int_param(r, "batch", 0), int_param(r, "accumulate", 1));
  };
  std::string others;
  for (size_t i = 1; i < ranked.size(); ++i)
    others +=
        fmt::format("{}{}: {}", i == 1 ? "" : ", ", way(*ranked[i]), figure(ranked[i]->value, ""));
  std::string why = fmt::format(
      "{} (micro-batch x accumulation): {}, the fastest of {} measured "
      "ways to {}",
      way(best), figure(best), ranked.size(), global_batch);
  if (!others.empty()) why += fmt::format(" ({} {})", others, best.unit);
  std::vector<Evidence> evidence;
  for (const Result* r : ranked)
    evidence.push_back(measured(*r, kModelKeys));
  if (ranked.size() > 1) {
    evidence.push_back(derived_ratio(best, *ranked[1], kModelKeys));
    if (within_noise(best, *ranked[1]))
      why += fmt::format("; {} is within noise ({})", way(*ranked[1]),
                         percent_text(tie_margin(best, *ranked[1])));
  }
  const std::vector<std::string> scope = {q.model, "train",
                                          fmt::format("global batch {}", global_batch)};
  out.settings.push_back(
      make_setting(scope, "micro_batch", int_param(best, "batch", 0), why, evidence));
  out.settings.push_back(make_setting(scope, "accumulation", int_param(best, "accumulate", 1), why,
                                      std::move(evidence)));
  return out;
}

}  // namespace gpuvs::tune
