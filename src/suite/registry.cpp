#include "suite/registry.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <stdexcept>

#include "bench/benchmarks.h"
#include "core/error.h"
#include "core/stats.h"
#include "core/suggest.h"
#include "models/trainer.h"
#include "suite/bench_index.h"
#include "suite/produces.h"

namespace gpuvs {

namespace {

// A decoder's decode results carry the bytes a step must read per second; their share
// of this GPU's HBM copy bandwidth takes the copy measured in the same run (memory.hbm,
// whose results join the run as the evidence).
void add_decode_shares(std::vector<Result>& out, BenchContext& ctx) {
  std::vector<size_t> decodes;
  for (size_t i = 0; i < out.size(); ++i)
    if (const auto m = match_result_id(out[i].id);
        out[i].status == Status::kOk && m && m->family->family == Family::kModelDecode)
      decodes.push_back(i);
  if (decodes.empty()) return;
  const std::vector<std::string> names = {"memory.hbm"};
  std::vector<Result> hbm = select_benchmarks(names).front()->run(ctx);
  const Result* copy = nullptr;
  for (const Result& r : hbm) {
    if (r.id != result_id(Family::kHbmStream, {"copy"}) || r.status != Status::kOk) continue;
    const auto bytes = [](const Result& x) { return number_parameter(x, "bytes").value_or(0); };
    if (!copy || bytes(r) > bytes(*copy)) copy = &r;
  }
  std::vector<Result> shares;
  for (size_t i : decodes) {
    const Result& d = out[i];
    auto text = [&](const char* key) { return std::get<std::string>(d.parameters.at(key)); };
    Result s;
    s.id = result_id(Family::kModelDecodeShare, {text("model"), text("mode"), text("precision")});
    s.name = d.name + ", share of the measured HBM copy";
    s.devices = d.devices;
    s.parameters = d.parameters;
    s.unit = "1";
    if (!copy || !(copy->value > 0)) {
      s.status = Status::kError;
      s.status_reason = "memory.hbm.copy was not measured: no share to give";
    } else {
      s.value = *number_parameter(d, "achieved_bytes_per_s") / copy->value;
      s.parameters["copy_bytes_per_s"] = copy->value;
      // Per step: the decode's samples are tokens/s over the batch, batch / step time.
      const double per_token = number_parameter(d, "bytes_per_step").value_or(0) /
                               number_parameter(d, "batch").value_or(1);
      for (double rate : d.samples)
        s.samples.push_back(rate * per_token / copy->value);
      s.stats = compute_stats(s.samples);
    }
    shares.push_back(std::move(s));
  }
  for (Result& r : hbm)
    out.push_back(std::move(r));
  for (Result& r : shares)
    out.push_back(std::move(r));
}

}  // namespace

// The models are run from models/, which only this layer sees: their registration is
// here, beside the rest of the runner, which also gives a decoder's decode its share of
// the measured copy bandwidth.
std::vector<Result> run_models(BenchContext& ctx) {
  std::vector<Result> out = run_model(ctx);
  add_decode_shares(out, ctx);
  return out;
}
GPUVS_BENCHMARK(run_models, "model.end_to_end");

namespace {

const std::vector<BenchmarkInfo>& table() {
  static const std::vector<BenchmarkInfo> t = [] {
    std::vector<const BenchmarkEntry*> entries(bench_entries().begin(), bench_entries().end());
    entries.push_back(&benchmark_entry_run_models);
    std::vector<EntryPoint> points;
    for (const BenchmarkEntry* e : entries)
      points.push_back({e->name, source_relative_to_src(e->source)});
    // tests/cpu/test_produces.cpp applies the same rules to the sources, so a
    // disagreement fails a test before it can reach a user's run.
    if (const std::vector<std::string> problems = entry_point_problems(benchmark_defs(), points);
        !problems.empty())
      throw std::logic_error(
          fmt::format("the table of benchmarks and their entry points disagree: {}",
                      fmt::join(problems, "; ")));
    std::vector<BenchmarkInfo> v;
    for (const BenchmarkDef& d : benchmark_defs()) {
      const auto it = std::find_if(entries.begin(), entries.end(),
                                   [&](const BenchmarkEntry* e) { return e->name == d.name; });
      v.push_back({d.name, d.group, d.summary, d.in_run, d.scope, (*it)->run});
    }
    return v;
  }();
  return t;
}

}  // namespace

std::span<const BenchmarkInfo> benchmarks() {
  return table();
}

std::vector<const BenchmarkInfo*> select_benchmarks(std::span<const std::string> names) {
  const std::vector<BenchmarkInfo>& all = table();
  std::vector<const BenchmarkInfo*> out;
  auto add = [&](const BenchmarkInfo& b) {
    if (std::find(out.begin(), out.end(), &b) == out.end()) out.push_back(&b);
  };
  if (names.empty()) {
    for (const auto& b : all)
      if (b.group != "model") add(b);
    return out;
  }
  for (const std::string& name : names) {
    bool matched = false;
    for (const auto& b : all) {
      if (b.name == name || b.group == name) {
        add(b);
        matched = true;
      }
    }
    if (!matched) {
      std::string known;
      std::vector<std::string> names_and_groups;
      for (const auto& b : all) {
        known += fmt::format(" {} ({})", b.name, b.group);
        names_and_groups.push_back(std::string(b.name));
        names_and_groups.push_back(std::string(b.group));
      }
      throw UsageError(
          fmt::format("unknown benchmark '{}'{}", name,
                      did_you_mean_or_known(suggest(name, names_and_groups), known.substr(1))));
    }
  }
  // Keep table order whatever order the names came in.
  std::sort(out.begin(), out.end());
  return out;
}

std::vector<const BenchmarkInfo*> run_suite() {
  std::vector<const BenchmarkInfo*> out;
  for (const auto& b : table())
    if (b.in_run) out.push_back(&b);
  return out;
}

}  // namespace gpuvs
