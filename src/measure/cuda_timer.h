// CUDA implementations of the harness's interfaces: a Timed that enqueues work on
// a stream between two CUDA events, an L2 flusher for cold measurements, and a
// ClockWatch over NVML sampling.
#pragma once

#include <chrono>
#include <functional>
#include <memory>

#include "gpu/device.h"
#include "measure/harness.h"

namespace gpuvs {

class ClockSampler;

// Evicts L2 by writing a buffer twice the L2 size (60 MB on H100/H200) on a stream.
class L2Flusher {
 public:
  explicit L2Flusher(size_t l2_bytes);
  void flush(cudaStream_t stream) const;

 private:
  DeviceBuffer scratch_;
};

// run(k): event, k calls of `enqueue(stream)`, event; synchronise; elapsed seconds.
// The enqueue callable must only enqueue asynchronous work on the stream it gets.
class EventTimed final : public Timed {
 public:
  EventTimed(cudaStream_t stream, std::function<void(cudaStream_t)> enqueue,
             const L2Flusher* flusher = nullptr);
  double run(int64_t iterations) override;
  void flush() override;

 private:
  cudaStream_t stream_;
  std::function<void(cudaStream_t)> enqueue_;
  const L2Flusher* flusher_;
  Event start_, stop_;
};

// NVML clock sampling of one CUDA device while a result is measured.
class NvmlClockWatch final : public ClockWatch {
 public:
  // `interval`: how often NVML is polled. NVML calls take the driver's time; host-bound
  // work such as small NCCL collectives is measured with a sparse watch (200 ms).
  explicit NvmlClockWatch(int cuda_device,
                          std::chrono::milliseconds interval = std::chrono::milliseconds(10));
  ~NvmlClockWatch() override;
  void start() override;
  ClockRecord stop() override;

 private:
  std::unique_ptr<ClockSampler> sampler_;
};

}  // namespace gpuvs
