// Load latency by dependent pointer chasing (chase_kernels.h), shared by the memory
// latency sweep (memory/latency.cpp) and the peer-link latency (peer/link.cpp).
#pragma once

#include <cstdint>

#include "gpu/device.h"
#include "measure/harness.h"

namespace gpuvs {

// One harness iteration is one step of the chase: run(k) is a single launch of k
// dependent loads between two events, so a sample's time per iteration is the
// latency of one load (plus one launch spread over the >= 1 ms sample: choose
// min_sample_s large enough, see latency_options()). Steps accumulate, so the chain
// is followed on, not restarted, from one batch to the next.
class ChaseTimed final : public Timed {
 public:
  // `buffer` holds a chain of `nodes` nodes (init_chase) on the device that owns it;
  // the chase runs on `stream`'s device, which must be able to address the buffer.
  ChaseTimed(cudaStream_t stream, const void* buffer, uint64_t nodes, bool bypass);
  double run(int64_t iterations) override;

  // Checks that the chase ended exactly where the chain's closed form says after
  // every step taken so far (synchronises the stream).
  Validation check() const;

 private:
  cudaStream_t stream_;
  const void* buffer_;
  uint64_t nodes_;
  bool bypass_;
  DeviceBuffer state_;
  Event start_, stop_;
  uint64_t steps_ = 0;
};

// Options for a chase: samples of at least 10 ms, so that the one launch per sample
// costs under 0.1 % of it.
MeasureOptions latency_options(MeasureOptions options);

}  // namespace gpuvs
