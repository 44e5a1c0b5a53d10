#include "bench/registry.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>

#include "core/error.h"

namespace gpuvs {

namespace {

const std::array<BenchmarkInfo, 1> kBenchmarks = {{
    {"memory.hbm", "memory", "HBM copy bandwidth (vectorised 16-byte copy, read + write bytes)",
     true, run_hbm_copy},
}};

}  // namespace

std::span<const BenchmarkInfo> benchmarks() {
  return kBenchmarks;
}

std::vector<const BenchmarkInfo*> select_benchmarks(std::span<const std::string> names) {
  std::vector<const BenchmarkInfo*> out;
  auto add = [&](const BenchmarkInfo& b) {
    if (std::find(out.begin(), out.end(), &b) == out.end()) out.push_back(&b);
  };
  if (names.empty()) {
    for (const auto& b : kBenchmarks)
      add(b);
    return out;
  }
  for (const std::string& name : names) {
    bool matched = false;
    for (const auto& b : kBenchmarks) {
      if (b.name == name || b.group == name) {
        add(b);
        matched = true;
      }
    }
    if (!matched) {
      std::string known;
      for (const auto& b : kBenchmarks)
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
  for (const auto& b : kBenchmarks)
    if (b.in_run) out.push_back(&b);
  return out;
}

}  // namespace gpuvs
