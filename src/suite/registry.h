// The runner side of the table of benchmarks (suite/produces.h): each row joined with
// the entry point registered under its name (GPUVS_BENCHMARK, bench/benchmarks.h). The
// only file that sees both bench/ and models/; `gpuvs bench NAME` selects by full name
// ("memory.hbm") or by group ("memory").
#pragma once

#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/run_file.h"
#include "suite/context.h"
#include "suite/produces.h"

namespace gpuvs {

struct BenchmarkInfo {
  std::string_view name;  // the table's BenchmarkDef, for short
  std::string_view group;
  std::string_view summary;
  bool in_run = false;
  BenchScope scope = BenchScope::kPerDevice;
  std::function<std::vector<Result>(BenchContext&)> run;
};

// Every benchmark of the table, in its order, with its entry point. Throws
// std::logic_error listing every disagreement between the table and the registrations
// (suite/bench_index.h): tests/cpu/test_produces.cpp checks the same rules.
std::span<const BenchmarkInfo> benchmarks();

// Resolve names (full names or groups) to benchmarks in table order; an unknown
// name throws UsageError listing what exists. Empty `names` selects everything but
// the models (group "model": minutes of work, `gpuvs model` or named explicitly).
std::vector<const BenchmarkInfo*> select_benchmarks(std::span<const std::string> names);

// Benchmarks of `gpuvs run`'s standard suite.
std::vector<const BenchmarkInfo*> run_suite();

}  // namespace gpuvs
