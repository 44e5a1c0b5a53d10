// The sustained load. See sustained.h.
#include "check/sustained.h"

#include <fmt/format.h>

#include <atomic>
#include <exception>
#include <mutex>
#include <thread>

#include "bench/compute/gemm_runner.h"
#include "gpu/check.h"
#include "gpu/clock_sampler.h"
#include "gpu/nvml.h"

namespace gpuvs::check {

SustainedLoad run_sustained_load(int device, const SustainedOptions& o) {
  DeviceScope scope(device);
  SustainedLoad out;
  Stream stream;
  LtHandle handle;
  // The shape and precision of compute.gemm's headline: the GPU's highest sustained
  // tensor power draw short of FP8.
  const GemmShape shape{8192, 8192, 8192};
  GemmRunner runner(GemmPrecision::kBf16, shape, handle, stream.get());
  const std::optional<GemmAlgo> algo =
      runner.choose(shape, 4, gemm_search_options(), steady_wall_clock());
  if (!algo) throw Error("sustained load: cuBLASLt has no BF16 algorithm for 8192^3");

  ClockSampler sampler(device, ClockSamplerOptions{o.interval});
  if (!sampler.active()) out.sampler_note = sampler.inactive_reason();

  std::atomic<bool> stop{false};
  std::exception_ptr memtest_error;
  std::mutex memtest_mutex;
  std::thread memtest;
  if (o.memtest) {
    memtest = std::thread([&] {
      try {
        while (!stop.load()) {
          MemtestResult r = run_memtest(device, o.memtest_options);
          std::lock_guard<std::mutex> lock(memtest_mutex);
          const bool first = out.memtest_rounds++ == 0;
          const double least = out.memtest_free_bytes > 0 ? double(out.memtest_tested_bytes) /
                                                                double(out.memtest_free_bytes)
                                                          : 0.0;
          if (first || r.fraction_of_free() < least) {
            out.memtest_tested_bytes = r.tested_bytes;
            out.memtest_free_bytes = r.free_bytes;
          }
          out.memtest_errors += r.errors;
          out.memtest_ranges.insert(out.memtest_ranges.end(), r.ranges.begin(), r.ranges.end());
        }
      } catch (...) {
        memtest_error = std::current_exception();
      }
    });
  }

  sampler.start();
  const auto t0 = std::chrono::steady_clock::now();
  auto elapsed = [&] {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  };
  double next_report = 10;
  try {
    constexpr int kBatch = 16;  // GEMMs between host checks (~0.2 s on an H200)
    while (elapsed() < o.duration_s) {
      for (int i = 0; i < kBatch; ++i)
        runner.enqueue(*algo, stream.get());
      GPUVS_CUDA_CHECK(cudaStreamSynchronize(stream.get()));
      out.gemms += kBatch;
      if (o.progress && elapsed() >= next_report) {
        o.progress(fmt::format("sustained load: {:.0f} of {:.0f} s", elapsed(), o.duration_s));
        next_report += 10;
      }
    }
  } catch (...) {
    stop = true;
    if (memtest.joinable()) memtest.join();
    sampler.stop();
    throw;
  }
  out.seconds = elapsed();
  stop = true;
  if (memtest.joinable()) memtest.join();
  sampler.stop();
  if (memtest_error) std::rethrow_exception(memtest_error);

  out.flops = out.seconds > 0 ? double(out.gemms) * shape.flops() / out.seconds : 0;
  for (const ClockSample& s : sampler.samples()) {
    LoadSample l;
    l.t_s = s.t_s;
    l.power_w = s.power_w;
    l.sm_mhz = s.sm_mhz;
    l.temperature_c = s.temperature_c;
    if (s.throttle_mask) l.reasons = nvml::throttle_reason_names(*s.throttle_mask);
    out.samples.push_back(std::move(l));
  }
  return out;
}

}  // namespace gpuvs::check
