#include "advise/output.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>

#include <nlohmann/json.hpp>

#include "core/text.h"
#include "core/units.h"

namespace gpuvs::advise {

namespace {

using ojson = nlohmann::ordered_json;

std::string money(double v, const std::string& currency) {
  if (v >= 1e6) return fmt::format("{:.3g}M {}", v / 1e6, currency);
  if (v >= 1e4) return fmt::format("{:.0f}k {}", v / 1e3, currency);
  if (v >= 100) return fmt::format("{:.0f} {}", v, currency);
  return fmt::format("{:.2f} {}", v, currency);
}

std::string fits_cell(const Candidate& c) {
  if (!c.usable) return "n/a";
  if (!c.fits) return "no";
  return c.meets_deadline ? "yes" : "late";
}

std::string ranked_by_text(const Advice& a) {
  const bool train = a.request.mode == Mode::kTrain;
  switch (a.ranked_by) {
    case RankBy::kCost:
      return train ? "cost of the run" : "cost per million output tokens";
    case RankBy::kTime:
      return train ? "time to train" : "time per output token";
    default:
      return train ? "GPU-hours of the run (no --prices given)"
                   : "GPU-hours per million output tokens (no --prices given)";
  }
}

ojson opt(const std::optional<double>& v) {
  return v ? ojson(*v) : ojson(nullptr);
}

ojson number_or_null(double v) {
  return std::isfinite(v) ? ojson(v) : ojson(nullptr);
}

}  // namespace

std::string render_title(const Advice& a) {
  const Request& r = a.request;
  const Model& m = r.model;
  if (r.mode == Mode::kInfer)
    return fmt::format(
        "gpuvs advise infer: {} ({} parameters), batch {} × context {}, weights {}, KV cache {}\n",
        m.name, format_count(m.params), r.infer.batch, r.infer.context,
        to_string(r.infer.precision), to_string(r.infer.kv_precision));
  const std::string amount = m.kind == ModelKind::kCnn
                                 ? format_count(r.samples.value_or(0)) + " samples"
                                 : format_count(r.tokens.value_or(0)) + " tokens";
  return fmt::format("gpuvs advise train: {} ({} parameters), {}, {} {}, {}{}, micro-batch {}{}\n",
                     m.name, format_count(m.params), amount, to_string(r.train.precision),
                     to_string(r.train.optimizer), to_string(r.train.sharding),
                     m.kind == ModelKind::kTransformer
                         ? fmt::format(", recompute {}", to_string(r.train.recompute))
                         : "",
                     r.train.micro_batch,
                     r.max_days ? fmt::format(", finish within {:g} days", *r.max_days) : "");
}

TableView ranking_table(const Advice& a) {
  const bool train = a.request.mode == Mode::kTrain;
  const bool priced = !a.currency.empty();
  TableView t;
  if (train) {
    t.header = {"#", "GPU", "GPUs", "fits", "memory/GPU", "time", "GPU-hours"};
  } else {
    t.header = {"#",        "GPU",      "GPUs",    "fits",        "memory/GPU",
                "tokens/s", "ms/token", "prefill", "GPU-h/1M tok"};
  }
  if (priced) t.header.push_back(train ? "cost" : "cost/1M tok");
  t.header.push_back("basis");
  t.header.push_back("why");
  t.right_aligned.assign(t.header.size(), true);
  t.right_aligned[1] = false;
  t.right_aligned[3] = false;
  t.right_aligned[t.header.size() - 2] = false;
  t.right_aligned[t.header.size() - 1] = false;
  size_t rank = 0;
  for (const Candidate& c : a.ranked) {
    ++rank;
    std::vector<std::string> row = {std::to_string(rank), c.gpu->id};
    const bool shown = c.usable && c.fits;
    row.push_back(shown ? std::to_string(c.layout.count()) : "-");
    row.push_back(fits_cell(c));
    row.push_back(
        shown ? fmt::format("{:.1f} / {:.0f} GB", c.memory.total() / 1e9, c.capacity / 1e9) : "-");
    if (train) {
      row.push_back(shown ? format_duration(c.time.total_s) : "-");
      row.push_back(shown ? format_count(c.gpu_hours(Mode::kTrain)) : "-");
    } else {
      row.push_back(shown ? fmt::format("{:.0f}", c.speed.tokens_per_s) : "-");
      row.push_back(shown ? fmt::format("{:.3g}", c.speed.decode_step_s * 1e3) : "-");
      row.push_back(shown ? format_duration(c.speed.prefill_s) : "-");
      row.push_back(shown ? fmt::format("{:.3g}", c.gpu_hours(Mode::kInfer)) : "-");
    }
    if (priced) {
      if (!c.price)
        row.push_back("no price");
      else
        row.push_back(c.cost ? money(*c.cost, a.currency) : "-");
    }
    row.push_back(c.usable ? c.basis : "-");
    row.push_back(c.why);
    t.rows.push_back(std::move(row));
  }
  return t;
}

namespace {

// What a candidate's figure rests on: "measured" (an end-to-end measurement),
// "measured peak × MFU" (an estimate from a measured GEMM), "published", "datasheet ×
// MFU" (an estimate from the datasheet); "" when unusable.
std::string basis_class(const Candidate& c, bool train) {
  if (!c.usable) return "";
  const std::string& kind = train ? c.rate->basis : c.memory_bw->basis;
  const bool estimate = c.basis.find("×") != std::string::npos;
  if (kind == "measured") return estimate ? "measured peak × MFU" : "measured";
  if (kind == "published") return "published";
  return train ? "datasheet × MFU" : "datasheet";
}

}  // namespace

std::string bases_line(const Advice& a) {
  const bool train = a.request.mode == Mode::kTrain;
  std::vector<std::pair<std::string, std::vector<std::string>>> by;  // class -> GPUs
  for (const Candidate& c : a.ranked) {
    const std::string k = basis_class(c, train);
    if (k.empty() || !c.fits) continue;
    auto it = std::find_if(by.begin(), by.end(), [&](const auto& e) { return e.first == k; });
    if (it == by.end()) it = by.insert(by.end(), {k, {}});
    it->second.push_back(c.gpu->id);
  }
  if (by.size() < 2) return "";
  std::vector<std::string> parts;
  for (const auto& [k, gpus] : by)
    parts.push_back(gpus.size() <= 3 ? fmt::format("{} ({})", k, fmt::join(gpus, ", "))
                                     : fmt::format("{} ({} GPUs)", k, gpus.size()));
  return fmt::format(
      "The ranking mixes bases: {}. A measurement and an estimate are not like with like; "
      "their order is indicative only (measure each with `gpuvs run` to rank on one basis).",
      fmt::join(parts, "; "));
}

std::string render_below_table(const Advice& a, bool explain) {
  std::string out;
  out += fmt::format(
      "\nRanked by {}; GPUs that do not fit follow, then those the catalogue "
      "cannot judge.\n",
      ranked_by_text(a));
  if (const std::string mixed = bases_line(a); !mixed.empty()) out += mixed + "\n";
  out += a.naive_line + "\n";
  if (!a.currency.empty()) {
    out += fmt::format("\nPrices: {}", one_line(a.prices_name));
    if (!a.prices_description.empty()) out += " — " + one_line(a.prices_description.front());
    out += "\n";
  }
  out += "\nAssumptions:\n";
  for (const std::string& s : a.assumptions)
    out += "  - " + s + "\n";
  if (!a.notes.empty()) {
    out += "Run files:\n";
    for (const std::string& s : a.notes)
      out += "  - " + one_line(s) + "\n";
  }
  if (explain) {
    out += "\nWorkload:\n";
    for (const std::string& s : a.model_lines)
      out += "  " + s + "\n";
    size_t rank = 0;
    for (const Candidate& c : a.ranked) {
      ++rank;
      out += fmt::format("\n#{} {} ({}): {}\n", rank, one_line(c.gpu->id), one_line(c.gpu->name),
                         one_line(c.why));
      for (const std::string& s : c.explain)
        out += "  " + s + "\n";
    }
  }
  const bool train = a.request.mode == Mode::kTrain;
  out += fmt::format(
      "\nGPUs: {}; --gpus N fixes the count{}. --explain shows the arithmetic; "
      "docs/advise.md the formulas and their sources.\n",
      a.request.gpus       ? "the count given"
      : a.request.max_days ? "the fewest that finish in time"
                           : "the fewest that hold the model",
      train ? ", --max-days D finds the count that finishes in D days" : "");
  return out;
}

std::string render_json(const Advice& a) {
  const Request& r = a.request;
  const Model& m = r.model;
  const bool train = r.mode == Mode::kTrain;
  ojson j;
  j["schema"] = "gpuvs.advise/1";
  j["mode"] = train ? "train" : "infer";
  ojson model{{"name", m.name},
              {"kind", std::string(to_string(m.kind))},
              {"params", m.params},
              {"shape_note", m.shape_note},
              {"source", m.source}};
  if (m.kind == ModelKind::kTransformer) {
    model["layers"] = m.shape.layers;
    model["hidden"] = m.shape.hidden;
    model["heads"] = m.shape.heads;
    model["kv_heads"] = m.shape.kv_heads;
    model["seq"] = m.shape.seq;
    model["vocab"] = m.shape.vocab;
  } else {
    model["forward_flops_per_sample"] = m.cnn.forward_flops;
    model["activation_bytes_per_sample"] = m.cnn.activation_bytes;
  }
  j["model"] = std::move(model);
  ojson req;
  if (train) {
    req["precision"] = std::string(to_string(r.train.precision));
    req["optimizer"] = std::string(to_string(r.train.optimizer));
    req["parallel"] = std::string(to_string(r.train.sharding));
    req["recompute"] = std::string(to_string(r.train.recompute));
    req["flash_attention"] = r.train.flash_attention;
    req["micro_batch"] = r.train.micro_batch;
    req["global_batch"] = r.global_batch ? ojson(*r.global_batch) : ojson(nullptr);
    req["tokens"] = opt(r.tokens);
    req["samples"] = opt(r.samples);
    req["max_days"] = opt(r.max_days);
  } else {
    req["precision"] = std::string(to_string(r.infer.precision));
    req["kv_precision"] = std::string(to_string(r.infer.kv_precision));
    req["context"] = r.infer.context;
    req["batch"] = r.infer.batch;
  }
  req["gpus"] = r.gpus ? ojson(*r.gpus) : ojson(nullptr);
  req["tp"] = r.tp ? ojson(*r.tp) : ojson(nullptr);
  j["request"] = std::move(req);
  j["assumptions"] = ojson{{"mfu", r.assumptions.mfu},
                           {"bandwidth_utilization", r.assumptions.bw_util},
                           {"network_bandwidth", r.assumptions.network_bandwidth},
                           {"gpus_per_node", r.assumptions.gpus_per_node},
                           {"overhead_fixed_bytes", r.train.overhead.fixed_bytes},
                           {"overhead_fraction", r.train.overhead.fraction},
                           {"mamf_reference", kMamfReference},
                           {"copy_reference", kCopyReference},
                           {"lines", a.assumptions}};
  j["workload"] = a.model_lines;
  j["ranked_by"] = a.ranked_by == RankBy::kCost   ? "cost"
                   : a.ranked_by == RankBy::kTime ? "time"
                                                  : "gpu_hours";
  j["currency"] = a.currency.empty() ? ojson(nullptr) : ojson(a.currency);
  j["prices"] = a.currency.empty()
                    ? ojson(nullptr)
                    : ojson{{"file", a.prices_name}, {"description", a.prices_description}};
  ojson list = ojson::array();
  size_t rank = 0;
  for (const Candidate& c : a.ranked) {
    ++rank;
    const bool shown = c.usable && c.fits;
    ojson e{{"rank", rank},
            {"gpu", c.gpu->id},
            {"name", c.gpu->name},
            {"usable", c.usable},
            {"fits", c.fits},
            {"meets_deadline", c.meets_deadline},
            {"count", shown ? ojson(c.layout.count()) : ojson(nullptr)},
            {"tp", shown ? ojson(c.layout.tp) : ojson(nullptr)},
            {"dp", shown ? ojson(c.layout.dp) : ojson(nullptr)},
            {"capacity_bytes", c.capacity > 0 ? ojson(c.capacity) : ojson(nullptr)}};
    if (shown) {
      e["memory"] = ojson{{"weights", c.memory.weights},     {"gradients", c.memory.gradients},
                          {"optimizer", c.memory.optimizer}, {"activations", c.memory.activations},
                          {"buffers", c.memory.buffers},     {"overhead", c.memory.overhead},
                          {"total", c.memory.total()}};
    } else {
      e["memory"] = nullptr;
    }
    std::string kind;
    if (c.usable) kind = train ? c.rate->basis : c.memory_bw->basis;
    e["basis"] = c.usable ? ojson(kind) : ojson(nullptr);  // measured | published | datasheet
    e["basis_text"] = c.usable ? ojson(c.basis) : ojson(nullptr);
    e["basis_class"] = c.usable ? ojson(basis_class(c, train)) : ojson(nullptr);
    e["rate_flops"] = c.rate && !c.rate->samples_per_s ? ojson(c.rate->rate()) : ojson(nullptr);
    e["rate_samples_per_s"] = c.rate ? opt(c.rate->samples_per_s) : ojson(nullptr);
    if (train) {
      e["time"] = shown ? ojson{{"total_s", c.time.total_s},
                                {"compute_s", c.time.compute_s},
                                {"dp_comm_s", c.time.dp_comm_s},
                                {"dp_exposed_s", c.time.dp_exposed_s},
                                {"tp_comm_s", c.time.tp_comm_s},
                                {"steps", c.time.steps},
                                {"executed_flops", c.time.executed_flops}}
                        : ojson(nullptr);
    } else {
      e["inference"] = shown ? ojson{{"tokens_per_s", c.speed.tokens_per_s},
                                     {"decode_step_s", c.speed.decode_step_s},
                                     {"prefill_s", c.speed.prefill_s},
                                     {"memory_bound", c.speed.memory_bound}}
                             : ojson(nullptr);
    }
    e["gpu_hours"] = shown ? number_or_null(c.gpu_hours(r.mode)) : ojson(nullptr);
    e["price_per_gpu_hour"] = opt(c.price);
    e["cost"] = opt(c.cost);
    e["why"] = c.why;
    e["explain"] = c.explain;
    list.push_back(std::move(e));
  }
  j["candidates"] = std::move(list);
  j["naive_rule"] = ojson{{"rule", "more than 10B parameters → H200, else budget decides"},
                          {"pick", a.naive_pick.empty() ? ojson(nullptr) : ojson(a.naive_pick)},
                          {"line", a.naive_line}};
  j["notes"] = a.notes;
  const std::string mixed = bases_line(a);
  j["bases_mixed"] = !mixed.empty();
  j["bases_note"] = mixed.empty() ? ojson(nullptr) : ojson(mixed);
  return j.dump(2, ' ', false, ojson::error_handler_t::replace) + "\n";
}

}  // namespace gpuvs::advise
