// Sampler: a thread that asks a Source for one GpuSample per GPU every `interval`
// (docs/monitor.md) and keeps the whole timeline in memory.
//
// Invariants:
//  - a round samples every GPU of the source, in GPU order, all with the same `t_s`
//    (seconds since start(), steady clock); rounds are appended in time order, so
//    timeline() is sorted by (t_s, gpu);
//  - the first round is taken at once by start(), the next ones on a fixed grid
//    (start + k * interval, no drift; a round that overran skips the grid points it
//    missed), and one last round by stop(), so even a very short run has two rounds;
//  - stop() wakes the thread at once (condition variable) and joins it: it returns
//    after at most one in-flight round, never after a whole interval;
//  - every public member may be called from any thread; the callback runs on the
//    sampler thread (and, for the last round, on the thread calling stop()) with no
//    lock held, so it may call timeline() or latest().
// A GpuSample is ~300 bytes: one GPU at 100 ms for an hour is 36k samples, ~11 MB.
#pragma once

#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "monitor/sample.h"

namespace gpuvs::monitor {

struct SamplerOptions {
  std::chrono::milliseconds interval{100};
  // Called after each round with that round's samples (one per GPU, GPU order). An
  // exception from it is caught and kept (callback_error()); sampling goes on.
  std::function<void(const std::vector<GpuSample>& round)> on_round;
  // Take one last round in stop() (the state when the watched command ended).
  bool final_round_on_stop = true;
};

class Sampler {
 public:
  // `source` must outlive the Sampler; only the sampler's thread calls sample().
  explicit Sampler(Source& source, SamplerOptions options = {});
  ~Sampler();  // stop()s if running
  Sampler(const Sampler&) = delete;
  Sampler& operator=(const Sampler&) = delete;

  // Clears the timeline, takes the first round and starts the thread. Throws
  // gpuvs::Error if already running. The interval must be positive (else Error).
  void start();
  // Wakes and joins the thread, then takes the last round (see options). Does
  // nothing when not running.
  void stop();
  bool running() const;
  // Seconds since start() on the clock of the samples' t_s: marks a window (a
  // benchmark step) on the timeline. Meaningful after start().
  double elapsed_s() const { return now_s(); }

  // Every sample since start(), in time order (then GPU order).
  std::vector<GpuSample> timeline() const;
  // The last sample of each GPU that has one, in GPU order.
  std::vector<GpuSample> latest() const;
  int rounds() const;
  // The first exception message from the callback or from Source::sample, if any.
  std::optional<std::string> callback_error() const;

 private:
  void run();
  void take_round();  // sampler thread, or stop() after the join
  double now_s() const;

  Source& source_;
  SamplerOptions options_;
  std::chrono::steady_clock::time_point start_time_{};

  mutable std::mutex mutex_;  // guards everything below
  std::condition_variable wake_;
  bool stop_requested_ = false;
  bool running_ = false;
  std::vector<GpuSample> timeline_;
  std::vector<GpuSample> latest_;  // index = position in round, GPU order
  int rounds_ = 0;
  std::optional<std::string> error_;

  std::thread thread_;
  std::mutex lifecycle_mutex_;  // serialises start() and stop()
};

}  // namespace gpuvs::monitor
