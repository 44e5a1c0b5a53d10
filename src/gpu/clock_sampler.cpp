// ClockSampler: NVML polled on a std::thread that sleeps on a condition variable, so
// stop() wakes it at once instead of waiting out the interval.
#include "gpu/clock_sampler.h"

#include <cuda_runtime_api.h>
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <utility>

#include "core/error.h"

namespace gpuvs {

namespace {

template <class T>
std::vector<T> collect(const std::vector<ClockSample>& samples,
                       std::optional<T> ClockSample::*field) {
  std::vector<T> values;
  for (const ClockSample& s : samples)
    if (s.*field) values.push_back(*(s.*field));
  std::sort(values.begin(), values.end());
  return values;
}

std::optional<int> median_of_sorted(const std::vector<int>& v) {
  if (v.empty()) return std::nullopt;
  const size_t mid = v.size() / 2;
  if (v.size() % 2 == 1) return v[mid];
  return static_cast<int>(std::lround((v[mid - 1] + static_cast<double>(v[mid])) / 2.0));
}

}  // namespace

ClockRecord summarize_clock_samples(const std::vector<ClockSample>& all_samples) {
  // The sample taken at start() usually precedes the work on the GPU (idle clocks,
  // the gpu_idle reason). When the GPU was busy in any sample, the idle ones say
  // nothing about the work and are left out; when all are idle, all are kept.
  std::vector<ClockSample> busy;
  for (const ClockSample& s : all_samples)
    if (!(s.throttle_mask && (*s.throttle_mask & nvml::kClocksEventGpuIdle))) busy.push_back(s);
  const std::vector<ClockSample>& samples = busy.empty() ? all_samples : busy;
  ClockRecord record;
  record.samples = static_cast<int>(samples.size());

  const std::vector<int> sm = collect(samples, &ClockSample::sm_mhz);
  if (!sm.empty()) {
    record.sm_mhz_min = sm.front();
    record.sm_mhz_median = median_of_sorted(sm);
    record.sm_mhz_max = sm.back();
  }
  record.mem_mhz_median = median_of_sorted(collect(samples, &ClockSample::mem_mhz));
  if (const std::vector<double> power = collect(samples, &ClockSample::power_w); !power.empty())
    record.power_w_max = power.back();
  if (const std::vector<int> temp = collect(samples, &ClockSample::temperature_c); !temp.empty())
    record.temperature_c_max = temp.back();

  unsigned long long reasons = 0;
  for (const ClockSample& s : samples)
    reasons |= s.throttle_mask.value_or(0);
  record.throttle_reasons = nvml::throttle_reason_names(reasons);
  return record;
}

ClockSampler::ClockSampler(int cuda_device, ClockSamplerOptions options)
    : interval_(options.interval) {
  const nvml::Library& lib = options.library != nullptr ? *options.library : nvml::library();
  if (!lib.available()) {
    inactive_reason_ = "NVML unavailable: " + lib.unavailable_reason();
    return;
  }
  // 13 bytes hold "0000:19:00.0"; NVML's buffer size leaves room for longer domains.
  char bus_id[nvml::kPciBusIdBufferSize] = {};
  if (cudaError_t e = cudaDeviceGetPCIBusId(bus_id, sizeof bus_id, cuda_device); e != cudaSuccess) {
    cudaGetLastError();  // not sticky, but do not leave it for the next launch check
    inactive_reason_ =
        fmt::format("CUDA device {} has no PCI bus id: {}", cuda_device, cudaGetErrorString(e));
    return;
  }
  device_ = lib.device_by_pci_bus_id(bus_id);
  if (!device_.valid())
    inactive_reason_ =
        fmt::format("NVML does not see the GPU at {} (CUDA device {})", bus_id, cuda_device);
}

ClockSampler::~ClockSampler() {
  if (thread_.joinable()) stop();
}

ClockSample ClockSampler::take_sample() const {
  ClockSample s;
  s.t_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - started_).count();
  s.sm_mhz = device_.clock_mhz(nvml::kClockSm);
  s.mem_mhz = device_.clock_mhz(nvml::kClockMem);
  if (std::optional<unsigned int> mw = device_.power_usage_mw()) s.power_w = *mw / 1000.0;
  s.temperature_c = device_.temperature_c();
  s.throttle_mask = device_.clock_event_reasons();
  return s;
}

void ClockSampler::start() {
  if (thread_.joinable()) throw Error("ClockSampler::start: already running");
  samples_.clear();
  if (!active()) return;
  started_ = std::chrono::steady_clock::now();
  samples_.push_back(take_sample());
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_requested_ = false;
  }
  thread_ = std::thread([this] { run(); });
}

void ClockSampler::run() {
  std::unique_lock<std::mutex> lock(mutex_);
  while (!wake_.wait_for(lock, interval_, [this] { return stop_requested_; })) {
    // NVML calls can take a millisecond or more: do not hold the lock across them.
    lock.unlock();
    samples_.push_back(take_sample());
    lock.lock();
  }
}

ClockRecord ClockSampler::stop() {
  if (!thread_.joinable()) {
    samples_.clear();
    return summarize_clock_samples(samples_);
  }
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_requested_ = true;
  }
  wake_.notify_one();
  thread_.join();
  samples_.push_back(take_sample());
  return summarize_clock_samples(samples_);  // samples_ stay readable until start()
}

}  // namespace gpuvs
