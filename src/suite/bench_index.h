// The entry points of the table of benchmarks (suite/produces.h) as their sources
// register them (GPUVS_BENCHMARK, bench/benchmarks.h), and the rules that tie the two
// together. CUDA-free: the CPU build checks the table against the registrations found
// in the sources by cmake/bench_index.cmake without compiling bench/, and the CUDA
// build checks the registrations it linked (suite/registry.cpp) by the same rules.
#pragma once

#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "suite/produces.h"

namespace gpuvs {

// A registration, wherever it comes from; `source` is relative to src/
// ("bench/memory/hbm.cpp").
struct EntryPoint {
  std::string_view name;  // the table's name, "memory.hbm"
  std::string_view source;
};

// Every GPUVS_BENCHMARK line of bench/ and suite/registry.cpp, in file order
// (generated at build time).
struct ScannedEntry {
  std::string_view name;
  std::string_view function;  // "run_hbm"
  std::string_view source;
};
std::span<const ScannedEntry> scanned_entries();
std::vector<EntryPoint> entry_points_of(std::span<const ScannedEntry> scanned);

// A file as the compiler names it (__FILE__, absolute in a CMake build) relative to
// src/: "bench/memory/hbm.cpp".
std::string_view source_relative_to_src(std::string_view file);

// What is wrong between the table and the entry points, one sentence each naming the
// benchmark and the files; empty when they agree. Wrong: a name registered twice; a
// row without an entry point; an entry point without a row; an entry point under
// bench/<folder>/ whose row's group is not <folder>; one outside bench/ that is not a
// model (models are run through suite/registry.cpp, the one file that sees models/).
std::vector<std::string> entry_point_problems(std::span<const BenchmarkDef> table,
                                              std::span<const EntryPoint> entries);

}  // namespace gpuvs
