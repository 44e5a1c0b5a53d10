// The levels of `gpuvs check` as a table: a level is registered here with its runner,
// and only registered levels run. Level 1 (NVML health, seconds, no load) is always
// there; levels 2 (memory test, GEMM consistency, bandwidth floors) and 3 (sustained
// load) need CUDA and are registered by check/gpu_levels.h in a CUDA build; a build
// without them says so and exits 2. Each level runs the tests of the ones below it.
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "check/health.h"
#include "check/nvml_reader.h"
#include "core/run_file.h"
#include "gpu/nvml.h"

namespace gpuvs::check {

// What a level is asked to do (already checked by the CLI).
struct CheckRequest {
  std::vector<int> gpus;      // NVML indices
  double xid_window_s = 1.0;  // level 1: how long Xid events are collected
  // The versions each GPU's cached tune result was measured with, by UUID (the CLI
  // reads the tune cache); a GPU without one gets judge_versions' note.
  std::map<std::string, CachedVersions> cached_versions;
  double duration_s = 300;            // level 3: the sustained load
  const RunFile* baseline = nullptr;  // levels 2, 3: judge the figures against it
  // One line per phase of a long level ("GPU 0: memory test, walking ones").
  std::function<void(const std::string&)> progress;
};

struct GpuCheck {
  GpuReadings readings;
  GpuVerdict verdict;
};

// One check run: what gpuvs.check/1 holds (check/output.h).
struct CheckReport {
  int level = 1;
  std::string tool_version;  // "gpuvs 0.1.0 (git ...)"
  std::string host;
  std::string started_at;  // ISO 8601 UTC
  double seconds = 0;      // wall time of the level
  SystemReadings system;
  double xid_window_s = 0;
  std::vector<GpuCheck> gpus;
  Status status = Status::kPass;  // the worst GPU's
  ExitCode exit_code = ExitCode::kOk;
  // Levels 2 and 3: the figures they measured (bandwidths, GEMM rates), as a run file
  // beside the check file, so that a later check can take them as its baseline.
  std::optional<RunFile> run;
};

struct Level {
  int number;
  std::string_view name;     // "health"
  std::string_view summary;  // for --help
  void (*run)(const nvml::Library& library, const CheckRequest& request, CheckReport& report);
};

// The levels this build has, in order.
std::span<const Level> levels();
// Adds (or replaces) a level of the table; check/gpu_levels.h registers levels 2, 3.
void register_level(const Level& level);

// One GPU's readings over a whole check: the counters of `start` (read before any
// load) as the first reading, everything else from `end`, and the Xid events of all
// three (a watch window during the load in `during`, when there was one), so that
// judge_level1 judges what moved during the whole check.
GpuReadings combine_readings(const GpuReadings& start, const GpuReadings* during,
                             const GpuReadings& end);
// nullptr when `number` is not registered in this build.
const Level* find_level(int number);
// The highest level a check may ask for (the design's levels 1 to 3).
inline constexpr int kMaxLevel = 3;

// Runs `level` over the request and fills the report's verdicts, status, exit code
// and wall time.
void run_level(const Level& level, const nvml::Library& library, const CheckRequest& request,
               CheckReport& report);

}  // namespace gpuvs::check
