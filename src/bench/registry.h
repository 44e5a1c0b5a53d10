// The table of benchmarks. Each benchmark lives in its own file and appears here
// once; `gpuvs bench NAME` selects by full name ("memory.hbm") or by group
// ("memory"). A benchmark returns Results built by the harness, never raw timings.
#pragma once

#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/run_file.h"
#include "measure/harness.h"

namespace gpuvs {

struct BenchContext {
  const SystemInfo& system;
  int device = 0;  // CUDA ordinal, index into system.gpus
  MeasureOptions options;
  bool quick = false;  // `gpuvs run`'s short pass: smaller sweeps, same kernels
  WallClock& clock;
};

struct BenchmarkInfo {
  std::string_view name;                                  // "memory.hbm"
  std::string_view group;                                 // "memory"
  std::string_view summary;                               // one line for `gpuvs bench --list`
  bool in_run;                                            // part of `gpuvs run`'s standard suite
  std::function<std::vector<Result>(BenchContext&)> run;  // one GPU per call
};

std::span<const BenchmarkInfo> benchmarks();

// Resolve names (full names or groups) to benchmarks in table order; an unknown
// name throws UsageError listing what exists. Empty `names` selects everything.
std::vector<const BenchmarkInfo*> select_benchmarks(std::span<const std::string> names);

// Benchmarks of `gpuvs run`'s standard suite.
std::vector<const BenchmarkInfo*> run_suite();

// Entry points of the benchmark files.
std::vector<Result> run_hbm_copy(BenchContext& ctx);

}  // namespace gpuvs
