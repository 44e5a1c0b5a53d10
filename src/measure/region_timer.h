// GPU time per named region of a model's steps, from CUDA events: the region log of
// measure/region_log.h (marks, scopes, per-name totals over steps) with a CUDA event as
// each stamp. Events are reused from step to step. For Model::layer_times() and the
// profile the trainer prints (`gpuvs model --profile`).
#pragma once

#include <cuda_runtime_api.h>

#include <memory>

#include "gpu/device.h"
#include "measure/region_log.h"

namespace gpuvs {

struct CudaEventClock {
  using Queue = cudaStream_t;
  using Stamp = std::unique_ptr<Event>;
  Stamp make();
  void record(Stamp& s, cudaStream_t q);
  double seconds(Stamp& from, Stamp& to);
};

using RegionTimer = BasicRegionTimer<CudaEventClock>;

}  // namespace gpuvs
