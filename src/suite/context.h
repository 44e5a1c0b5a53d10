// What a benchmark (or a model run) is given by the session that calls it: the system,
// the GPU, the measuring options and the callbacks for progress and checkpoints.
// CUDA-free: benchmarks, models and the session's registry all read it.
#pragma once

#include <functional>
#include <optional>
#include <span>
#include <string>
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

}  // namespace gpuvs
