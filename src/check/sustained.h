// `gpuvs check --level 3`'s sustained load (docs/check.md): BF16 GEMMs back to back at
// the GPU's full tensor rate for a duration, the memory test repeating beside them on
// its own stream, and the GPU's power, clocks, temperature and clock-event reasons
// polled throughout (judged by check/sustained_judge.h).
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "check/memtest.h"
#include "check/sustained_judge.h"

namespace gpuvs::check {

struct SustainedOptions {
  double duration_s = 300;
  std::chrono::milliseconds interval{100};
  bool memtest = true;  // repeat the memory test under the load
  MemtestOptions memtest_options;
  std::function<void(const std::string&)> progress;  // about every 10 s
};

struct SustainedLoad {
  double seconds = 0;
  std::vector<LoadSample> samples;
  int64_t gemms = 0;
  double flops = 0;        // mean rate of the GEMM stream, FLOP/s
  int memtest_rounds = 0;  // whole rounds: the load waits for the last one to end
  // The smallest coverage of a round: what it tested of the memory free at its start
  // (the GEMMs' buffers are not free).
  size_t memtest_tested_bytes = 0;
  size_t memtest_free_bytes = 0;
  uint64_t memtest_errors = 0;
  std::vector<MemErrorRange> memtest_ranges;
  std::string sampler_note;  // why there are no samples (no NVML), empty otherwise
};

// Throws gpuvs::Error on a CUDA error (a GPU lost under load).
SustainedLoad run_sustained_load(int device, const SustainedOptions& options);

}  // namespace gpuvs::check
