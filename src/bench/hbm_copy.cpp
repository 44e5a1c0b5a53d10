// HBM copy bandwidth: b[i] = a[i] over arrays many times the L2, 16-byte accesses.
// Bytes counted per iteration: read + write = 2 x array bytes (BabelStream's rule).
// H200: ~4.27 TB/s at 4 GiB per array (dev/hbm_copy ladder, 2026-11-30; PyTorch's
// copy 4.27, BabelStream copy 4.04 on the same machines). The ladder found one
// 16-byte element per thread with 256-thread blocks fastest: grid-stride loops and
// deeper unrolling lost 3-8 % on Hopper, so that is the shape used here.
#include <cuda_runtime_api.h>
#include <fmt/format.h>

#include <algorithm>

#include "bench/pattern.h"
#include "bench/registry.h"
#include "bench/stream_kernels.h"
#include "gpu/check.h"
#include "gpu/device.h"
#include "measure/cuda_timer.h"

namespace gpuvs {

namespace {

// Datasheet peaks come from the catalogue; until a GPU has an entry there, the peak
// shown is the one the driver's figures imply, labelled as derived.
std::optional<Peak> derived_memory_peak(int device) {
  int mem_khz = 0, bus_bits = 0;
  if (cudaDeviceGetAttribute(&mem_khz, cudaDevAttrMemoryClockRate, device) != cudaSuccess ||
      cudaDeviceGetAttribute(&bus_bits, cudaDevAttrGlobalMemoryBusWidth, device) != cudaSuccess ||
      mem_khz <= 0 || bus_bits <= 0) {
    cudaGetLastError();
    return std::nullopt;
  }
  const double bytes_per_s = 2.0 * mem_khz * 1e3 * bus_bits / 8.0;  // double data rate
  return Peak{bytes_per_s, "B/s", "derived",
              fmt::format("2 x memory clock {} MHz x bus width {} bit / 8, as the driver reports",
                          mem_khz / 1000, bus_bits)};
}

// Bytes per array: 4 GiB (the ladder's fastest size, ~70x the H200's L2), less on
// cards with less free memory, never under 8x the L2.
size_t array_bytes(const GpuInfo& gpu) {
  const auto [free_b, total_b] = device_memory_info();
  (void)total_b;
  size_t bytes = size_t{4} << 30;
  bytes = std::min(bytes, free_b / 4);
  bytes &= ~size_t{(1 << 20) - 1};  // whole MiB
  const size_t floor = 8 * static_cast<size_t>(std::max<int64_t>(gpu.l2_bytes, 1 << 20));
  if (bytes < floor)
    throw Error(fmt::format("HBM copy needs two arrays of {} MiB (8x L2); only {} MiB free",
                            floor >> 20, free_b >> 20));
  return bytes;
}

}  // namespace

std::vector<Result> run_hbm_copy(BenchContext& ctx) {
  DeviceScope scope(ctx.device);
  const GpuInfo& gpu = ctx.system.gpus.at(ctx.device);
  const size_t bytes = array_bytes(gpu);
  const size_t n = bytes / 16;

  DeviceBuffer a(bytes), b(bytes);
  Stream stream;
  fill_pattern(a.get(), bytes, /*poison=*/false, stream.get());
  fill_pattern(b.get(), bytes, /*poison=*/true, stream.get());
  stream.synchronize();

  EventTimed timed(stream.get(), [&](cudaStream_t s) { launch_copy(a.get(), b.get(), n, s); });

  auto validate = [&]() -> Validation {
    const PatternCheck c = check_pattern(b.get(), bytes, stream.get());
    if (c.mismatches == 0)
      return {true, fmt::format("all {} words of the destination equal the source pattern "
                                "(destination poisoned before timing)",
                                c.words)};
    return {false, fmt::format("{} of {} words differ from the source, first at word {}",
                               c.mismatches, c.words, c.first_bad)};
  };

  ResultSpec spec;
  spec.id = "memory.hbm.copy";
  spec.name = "HBM copy";
  spec.devices = {ctx.device};
  spec.parameters = {{"bytes_per_array", static_cast<int64_t>(bytes)},
                     {"block", int64_t{kCopyBlock}},
                     {"grid", static_cast<int64_t>(copy_grid(n))},
                     {"access_bytes", int64_t{16}}};
  spec.headline = Headline::kBandwidth;
  spec.bytes_per_iteration = 2.0 * static_cast<double>(bytes);
  spec.peak = derived_memory_peak(ctx.device);

  NvmlClockWatch clocks(ctx.device);
  return {measure_result(spec, timed, ctx.clock, ctx.options, &clocks, validate)};
}

}  // namespace gpuvs
