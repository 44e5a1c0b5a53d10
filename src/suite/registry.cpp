#include "suite/registry.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <stdexcept>

#include "bench/benchmarks.h"
#include "core/error.h"
#include "models/trainer.h"

namespace gpuvs {

namespace {

using Run = std::vector<Result> (*)(BenchContext&);

// Entry points by the table's benchmark names; a name of the table without one here
// (or one here the table lacks) is a programming error, caught at first use.
const std::map<std::string_view, Run>& entry_points() {
  static const std::map<std::string_view, Run> m = {
      {"memory.hbm", run_hbm},
      {"memory.cache", run_cache},
      {"memory.latency", run_latency},
      {"memory.capacity", run_capacity},
      {"compute.fma", run_compute_fma},
      {"compute.gemm", run_compute_gemm},
      {"compute.roofline", run_compute_roofline},
      {"host.link", run_host_link},
      {"peer.link", run_peer},
      {"collectives.nccl", run_collectives},
      {"collectives.algorithms", run_collective_study},
      {"launch.overhead", run_launch},
      {"model.end_to_end", run_model},
  };
  return m;
}

const std::vector<BenchmarkInfo>& table() {
  static const std::vector<BenchmarkInfo> t = [] {
    const auto& runs = entry_points();
    std::vector<BenchmarkInfo> v;
    for (const BenchmarkDef& d : benchmark_defs()) {
      const auto it = runs.find(d.name);
      if (it == runs.end())
        throw std::logic_error(fmt::format("benchmark {} has no entry point", d.name));
      v.push_back({d.name, d.group, d.summary, d.in_run, d.scope, it->second});
    }
    if (v.size() != runs.size())
      throw std::logic_error("an entry point names no benchmark of the table");
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
      for (const auto& b : all)
        known += fmt::format(" {} ({})", b.name, b.group);
      throw UsageError(fmt::format("unknown benchmark '{}'; known:{}", name, known));
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
