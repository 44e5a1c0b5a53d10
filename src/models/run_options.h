// What `gpuvs model` asks of a run beyond the model's own configuration: the batch
// search, the step count, the per-layer profile. Plain C++ (no CUDA): the CLI fills
// it on every build, the session carries it to the trainer (docs/models.md).
#pragma once

#include <optional>

#include "models/config.h"

namespace gpuvs::models {

struct ModelRunOptions {
  ModelConfig config;
  // --batch max: find the largest batch that fits, then measure at the recommended
  // batch, the largest whose memory leaves `headroom` of the GPU's memory free.
  bool batch_max = false;
  double headroom = 0.10;
  // --steps N: the headline is N single-step samples (no stopping rule) and the
  // step-time figures come from N steps; nullopt: the harness decides.
  std::optional<int> steps;
  // --profile: per-layer times, where the model can measure them.
  bool profile = false;
};

}  // namespace gpuvs::models
