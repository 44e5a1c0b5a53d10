// The table of benchmarks. Each benchmark lives in its own file and appears here
// once; `gpuvs bench NAME` selects by full name ("memory.hbm") or by group
// ("memory"). A benchmark returns Results built by the harness, never raw timings.
#pragma once

#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "comm/collective_options.h"
#include "core/run_file.h"
#include "measure/harness.h"

namespace gpuvs::comm {
struct World;
}

namespace gpuvs::models {
struct ModelRunOptions;
}

namespace gpuvs {

struct BenchContext {
  const SystemInfo& system;
  int device = 0;  // CUDA ordinal, index into system.gpus (the first of `devices`)
  MeasureOptions options;
  bool quick = false;  // `gpuvs run`'s short pass: smaller sweeps, same kernels
  WallClock& clock;
  std::vector<int> devices;  // every GPU selected for the session (peer, collectives)
  // Collectives: what to measure; the other ranks when each is its own process
  // (nullptr: this process drives every selected GPU); where to record how the
  // communicator was formed (the run file's comm section).
  const comm::CollectiveOptions* collectives = nullptr;
  comm::World* world = nullptr;
  std::optional<CommInfo>* comm_record = nullptr;
  // A line about where a long benchmark is (the session shows it on the terminal).
  std::function<void(const std::string&)> progress = nullptr;
  // Long benchmarks hand over the results so far; the session saves them (at most
  // every few seconds), so a kill loses only the last moments.
  std::function<void(std::span<const Result>)> checkpoint = nullptr;
  // `gpuvs model`: the one configuration to run (nullptr: the quick table of
  // `gpuvs run`).
  const models::ModelRunOptions* model = nullptr;
};

// How often the session calls a benchmark: once per selected GPU, or once for the
// whole selection (peer links, collectives: they need every GPU at once).
enum class BenchScope { kPerDevice, kAllDevices };

struct BenchmarkInfo {
  std::string_view name;     // "memory.hbm"
  std::string_view group;    // "memory"
  std::string_view summary;  // one line for `gpuvs bench --list`
  bool in_run;               // part of `gpuvs run`'s standard suite
  std::function<std::vector<Result>(BenchContext&)> run;
  BenchScope scope = BenchScope::kPerDevice;
};

std::span<const BenchmarkInfo> benchmarks();

// Resolve names (full names or groups) to benchmarks in table order; an unknown
// name throws UsageError listing what exists. Empty `names` selects everything but
// the models (group "model": minutes of work, `gpuvs model` or named explicitly).
std::vector<const BenchmarkInfo*> select_benchmarks(std::span<const std::string> names);

// Benchmarks of `gpuvs run`'s standard suite.
std::vector<const BenchmarkInfo*> run_suite();

// Entry points of the benchmark files.
std::vector<Result> run_hbm(BenchContext& ctx);               // hbm_stream.cpp
std::vector<Result> run_cache(BenchContext& ctx);             // cache.cpp
std::vector<Result> run_latency(BenchContext& ctx);           // latency.cpp
std::vector<Result> run_capacity(BenchContext& ctx);          // capacity.cpp
std::vector<Result> run_host_link(BenchContext& ctx);         // host_link.cpp
std::vector<Result> run_peer(BenchContext& ctx);              // peer.cpp (every selected GPU)
std::vector<Result> run_launch(BenchContext& ctx);            // launch.cpp
std::vector<Result> run_compute_fma(BenchContext& ctx);       // compute_fma.cpp
std::vector<Result> run_compute_gemm(BenchContext& ctx);      // compute_gemm.cpp
std::vector<Result> run_compute_roofline(BenchContext& ctx);  // roofline.cpp
std::vector<Result> run_collectives(BenchContext& ctx);       // collectives.cpp (all GPUs)
std::vector<Result> run_collective_study(BenchContext& ctx);  // collective_study.cpp
std::vector<Result> run_model(BenchContext& ctx);             // models/trainer_run.cpp

}  // namespace gpuvs
