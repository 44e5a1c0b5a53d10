#include "measure/cuda_timer.h"

#include "gpu/check.h"
#include "gpu/clock_sampler.h"

namespace gpuvs {

L2Flusher::L2Flusher(size_t l2_bytes) : scratch_(2 * l2_bytes) {}

void L2Flusher::flush(cudaStream_t stream) const {
  // A write of twice the cache's size leaves none of the benchmark's lines in it.
  GPUVS_CUDA_CHECK(cudaMemsetAsync(scratch_.get(), 0, scratch_.bytes(), stream));
  GPUVS_CUDA_CHECK(cudaStreamSynchronize(stream));
}

EventTimed::EventTimed(cudaStream_t stream, std::function<void(cudaStream_t)> enqueue,
                       const L2Flusher* flusher)
    : stream_(stream), enqueue_(std::move(enqueue)), flusher_(flusher) {}

double EventTimed::run(int64_t iterations) {
  start_.record(stream_);
  for (int64_t i = 0; i < iterations; ++i)
    enqueue_(stream_);
  GPUVS_CUDA_CHECK_LAUNCH();
  stop_.record(stream_);
  stop_.synchronize();
  return stop_.seconds_since(start_);
}

void EventTimed::flush() {
  if (flusher_) flusher_->flush(stream_);
}

NvmlClockWatch::NvmlClockWatch(int cuda_device, std::chrono::milliseconds interval)
    : sampler_(
          std::make_unique<ClockSampler>(cuda_device, ClockSamplerOptions{.interval = interval})) {}

NvmlClockWatch::~NvmlClockWatch() = default;

void NvmlClockWatch::start() {
  sampler_->start();
}

ClockRecord NvmlClockWatch::stop() {
  return sampler_->stop();
}

}  // namespace gpuvs
