// How a benchmark file registers its entry point under its name in the table of
// benchmarks (suite/produces.cpp): after the function, at namespace gpuvs scope,
//
//   std::vector<Result> run_hbm(BenchContext& ctx) { ... }
//   GPUVS_BENCHMARK(run_hbm, "memory.hbm");
//
// on one line (cmake/bench_index.cmake reads these lines at build time). A benchmark
// returns Results built by the harness, never raw timings. The rules tying
// registrations to the table (each row registered once, in the folder of its group)
// are in suite/bench_index.h, checked by tests/cpu/test_produces.cpp.
#pragma once

#include <span>
#include <string_view>
#include <vector>

#include "core/run_file.h"
#include "suite/context.h"

namespace gpuvs {

using BenchmarkRun = std::vector<Result> (*)(BenchContext&);

struct BenchmarkEntry {
  std::string_view name;  // the table's name, "memory.hbm"
  BenchmarkRun run;
  std::string_view source;  // the registering file, as the compiler names it
};

// Declares `function` (so that the file needs no header for it) and defines its entry,
// a constant with external linkage that bench_entries() refers to by name: constant
// initialisation, so no order of static initialisation matters, and referenced, so the
// linker keeps it from a static library.
#define GPUVS_BENCHMARK(function, table_name)             \
  std::vector<Result> function(BenchContext&);            \
  extern const BenchmarkEntry benchmark_entry_##function; \
  const BenchmarkEntry benchmark_entry_##function {       \
    table_name, &function, __FILE__                       \
  }

// Every registration under bench/, in the order of their files (generated at build
// time). suite/registry.cpp adds the models' and joins them with the table.
std::span<const BenchmarkEntry* const> bench_entries();

// The entry of bench/ registered as `name` ("memory.hbm"); throws std::logic_error
// naming the registered ones when there is none.
const BenchmarkEntry& bench_entry(std::string_view name);

}  // namespace gpuvs
