// A measuring session shared by `gpuvs run` and `gpuvs bench`: probe, run the chosen
// benchmarks on the chosen GPUs, save the run file after every benchmark (a crash
// or Ctrl-C loses at most the benchmark in flight), print the summary.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "cli/app.h"
#include "comm/collective_options.h"
#include "measure/harness.h"
#include "models/run_options.h"

namespace gpuvs {
struct BenchmarkInfo;
}

namespace gpuvs::cli {

struct SessionOptions {
  std::string command;   // "run" | "bench" | "model": names the file and meta.command
  std::string gpu_list;  // "--gpu" text; empty: every GPU
  std::vector<const BenchmarkInfo*> benchmarks;
  MeasureOptions measure;
  bool quick = false;
  comm::CollectiveOptions collectives;  // also says how ranks were launched
  // `gpuvs model`: the configuration the model benchmark runs (BenchContext::model).
  std::optional<models::ModelRunOptions> model;
  // Milliseconds between utilization samples (NVML, GPM) of the measured GPUs while
  // the session runs (docs/monitor.md); 0: no monitor, no timeline in the run file.
  int monitor_interval_ms = 100;
  // Ranks of a launcher: once every rank has written its run file into --out, rank 0
  // judges the folder as `gpuvs compare --fleet` does and prints the outliers.
  bool fleet_summary = false;
};

// Runs the session; returns the exit code for the run (exit_code_for).
ExitCode run_session(const GlobalOptions& global, const SessionOptions& options);

// No CUDA in this build, or no GPU: CannotRunError with one clear line.
[[noreturn]] void throw_built_without_cuda(const std::string& command);

}  // namespace gpuvs::cli
