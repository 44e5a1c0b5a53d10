#include "suite/registry.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <stdexcept>

#include "bench/benchmarks.h"
#include "core/error.h"
#include "core/suggest.h"
#include "models/trainer.h"
#include "suite/bench_index.h"

namespace gpuvs {

// The models are run from models/, which only this layer sees: their registration is
// here, beside the rest of the runner.
GPUVS_BENCHMARK(run_model, "model.end_to_end");

namespace {

const std::vector<BenchmarkInfo>& table() {
  static const std::vector<BenchmarkInfo> t = [] {
    std::vector<const BenchmarkEntry*> entries(bench_entries().begin(), bench_entries().end());
    entries.push_back(&benchmark_entry_run_model);
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
