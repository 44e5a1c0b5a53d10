// Sampler: the sampling loop of `gpuvs monitor`; see sampler.h for its invariants.
#include "monitor/sampler.h"

#include <exception>
#include <utility>

#include "core/error.h"

namespace gpuvs::monitor {

Sampler::Sampler(Source& source, SamplerOptions options)
    : source_(source), options_(std::move(options)) {}

Sampler::~Sampler() {
  try {
    stop();
  } catch (...) {  // NOLINT(bugprone-empty-catch): a destructor must not throw
  }
}

double Sampler::now_s() const {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_time_).count();
}

void Sampler::start() {
  std::lock_guard<std::mutex> lifecycle(lifecycle_mutex_);
  if (options_.interval.count() <= 0) throw Error("monitor: the sampling interval must be > 0");
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (running_) throw Error("monitor: Sampler::start: already running");
    timeline_.clear();
    latest_.clear();
    rounds_ = 0;
    error_.reset();
    stop_requested_ = false;
    running_ = true;
  }
  start_time_ = std::chrono::steady_clock::now();
  take_round();
  thread_ = std::thread([this] { run(); });
}

void Sampler::run() {
  std::unique_lock<std::mutex> lock(mutex_);
  auto next = start_time_ + options_.interval;
  while (!wake_.wait_until(lock, next, [this] { return stop_requested_; })) {
    // Sampling NVML takes a millisecond or more per GPU: not under the lock.
    lock.unlock();
    take_round();
    lock.lock();
    const auto now = std::chrono::steady_clock::now();
    next += options_.interval;
    // After an overrun, skip the grid points already past rather than firing a burst.
    while (next <= now)
      next += options_.interval;
  }
}

void Sampler::stop() {
  std::lock_guard<std::mutex> lifecycle(lifecycle_mutex_);
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!running_) return;
    stop_requested_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
  if (options_.final_round_on_stop) take_round();
  std::lock_guard<std::mutex> lock(mutex_);
  running_ = false;
}

void Sampler::take_round() {
  const double t = now_s();
  const int n = source_.gpu_count();
  std::vector<GpuSample> round;
  round.reserve(static_cast<size_t>(n > 0 ? n : 0));
  std::optional<std::string> error;
  for (int gpu = 0; gpu < n; ++gpu) {
    try {
      round.push_back(source_.sample(gpu, t));
    } catch (const std::exception& e) {
      // A Source should not throw; keep the round's shape (gpu, t) anyway.
      if (!error) error = std::string("sample: ") + e.what();
      GpuSample empty;
      empty.gpu = gpu;
      empty.t_s = t;
      round.push_back(std::move(empty));
    }
    // The timeline's order relies on these, whatever the Source wrote.
    round.back().gpu = gpu;
    round.back().t_s = t;
  }
  {
    std::lock_guard<std::mutex> lock(mutex_);
    timeline_.insert(timeline_.end(), round.begin(), round.end());
    latest_ = round;
    ++rounds_;
    if (error && !error_) error_ = error;
  }
  if (options_.on_round) {
    try {
      options_.on_round(round);
    } catch (const std::exception& e) {
      std::lock_guard<std::mutex> lock(mutex_);
      if (!error_) error_ = std::string("callback: ") + e.what();
    } catch (...) {
      std::lock_guard<std::mutex> lock(mutex_);
      if (!error_) error_ = "callback: unknown exception";
    }
  }
}

bool Sampler::running() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return running_;
}

std::vector<GpuSample> Sampler::timeline() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return timeline_;
}

std::vector<GpuSample> Sampler::latest() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return latest_;
}

int Sampler::rounds() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return rounds_;
}

std::optional<std::string> Sampler::callback_error() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return error_;
}

}  // namespace gpuvs::monitor
