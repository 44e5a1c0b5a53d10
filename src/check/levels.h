// The levels of `gpuvs check` as a table: a level is registered here with its runner,
// and only registered levels run. Level 1 (NVML health, seconds, no load) is the one
// in this build; levels 2 (memory test, GEMM consistency, bandwidth floors) and 3
// (sustained load) join the table when they are built, and until then the CLI says
// so and exits 2.
#pragma once

#include <map>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "check/health.h"
#include "check/nvml_reader.h"
#include "gpu/nvml.h"

namespace gpuvs::check {

// What a level is asked to do (already checked by the CLI).
struct CheckRequest {
  std::vector<int> gpus;      // NVML indices
  double xid_window_s = 1.0;  // level 1: how long Xid events are collected
  // The versions each GPU's cached tune result was measured with, by UUID (the CLI
  // reads the tune cache); a GPU without one gets judge_versions' note.
  std::map<std::string, CachedVersions> cached_versions;
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
};

struct Level {
  int number;
  std::string_view name;     // "health"
  std::string_view summary;  // for --help
  void (*run)(const nvml::Library& library, const CheckRequest& request, CheckReport& report);
};

// The levels this build has, in order.
std::span<const Level> levels();
// nullptr when `number` is not registered in this build.
const Level* find_level(int number);
// The highest level a check may ask for (the design's levels 1 to 3).
inline constexpr int kMaxLevel = 3;

// Runs `level` over the request and fills the report's verdicts, status, exit code
// and wall time.
void run_level(const Level& level, const nvml::Library& library, const CheckRequest& request,
               CheckReport& report);

}  // namespace gpuvs::check
