// Records what one GPU's clocks, power, temperature and clock-event (throttle) reasons
// did while a measurement ran, by polling NVML on a background thread.
//
// Invariants:
//  - construction never fails: with no NVML, no CUDA device or no matching NVML
//    device the sampler is inert (active() false, reason in inactive_reason()) and
//    stop() returns a record with samples == 0 and every value std::nullopt, so that a
//    missing NVML degrades a run file instead of aborting it;
//  - when active, start() takes one sample before it returns and stop() one more after
//    the thread has joined, so even a measurement shorter than the interval gets >= 2;
//  - clocks are only read, never locked or reset (docs/design.md, "Measuring").
#pragma once

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "core/run_file.h"
#include "gpu/nvml.h"

namespace gpuvs {

// One poll of the device; a field NVML did not answer is std::nullopt.
struct ClockSample {
  double t_s = 0;  // since start()
  std::optional<int> sm_mhz;
  std::optional<int> mem_mhz;
  std::optional<double> power_w;
  std::optional<int> temperature_c;
  std::optional<unsigned long long> throttle_mask;  // nvml::kClocksEvent* bits
};

// The summary that goes into a Result: min/median/max SM clock, median memory clock,
// peak power and temperature, the union of throttle reasons (in bit order). Medians
// of an even count are the mean of the two middle values, rounded.
ClockRecord summarize_clock_samples(const std::vector<ClockSample>& samples);

struct ClockSamplerOptions {
  std::chrono::milliseconds interval{10};
  const nvml::Library* library = nullptr;  // nullptr: nvml::library(), the process-wide one
};

class ClockSampler {
 public:
  // `cuda_device` is a CUDA ordinal in this process; it is mapped to NVML by PCI bus id
  // (CUDA_VISIBLE_DEVICES renumbers CUDA devices, NVML never does).
  explicit ClockSampler(int cuda_device, ClockSamplerOptions options = {});
  ~ClockSampler();  // stops and joins the thread if it is running
  ClockSampler(const ClockSampler&) = delete;
  ClockSampler& operator=(const ClockSampler&) = delete;

  bool active() const { return device_.valid(); }
  const std::string& inactive_reason() const { return inactive_reason_; }

  // Discards earlier samples, samples once, and starts polling. Throws gpuvs::Error if
  // already running.
  void start();
  // Samples once more, stops polling and summarises everything since start(). Without
  // a running start() it returns an empty record.
  ClockRecord stop();
  // Every sample of the last start()..stop(), in order (empty while running).
  const std::vector<ClockSample>& samples() const { return samples_; }

 private:
  ClockSample take_sample() const;
  void run();

  nvml::Device device_;
  std::string inactive_reason_;
  std::chrono::milliseconds interval_;
  std::chrono::steady_clock::time_point started_;
  std::vector<ClockSample> samples_;  // written by the thread between start and join only

  std::thread thread_;
  std::mutex mutex_;
  std::condition_variable wake_;
  bool stop_requested_ = false;  // guarded by mutex_
};

}  // namespace gpuvs
