#include "bench/common/mem_util.h"

#include <fmt/format.h>

#include <chrono>

#include "core/stats.h"
#include "core/units.h"

namespace gpuvs {

HostClockTimed::HostClockTimed(std::function<void()> body, std::function<void()> finish)
    : body_(std::move(body)), finish_(std::move(finish)) {}

double HostClockTimed::run(int64_t iterations) {
  using Clock = std::chrono::steady_clock;
  finish_();
  const auto t0 = Clock::now();
  for (int64_t i = 0; i < iterations; ++i)
    body_();
  finish_();
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

MeasureOptions per_item_options(MeasureOptions options, double items) {
  options.min_sample_s /= items;
  return options;
}

MeasureOptions tuning_options(bool quick) {
  MeasureOptions o;
  o.min_samples = 3;
  o.max_samples = 20;
  o.target_noise = 0.01;
  o.time_cap_s = quick ? 0.03 : 0.1;
  o.warmup_cap_s = quick ? 0.03 : 0.1;
  o.max_warmup_batches = 4;
  return o;
}

Result unsupported_result(std::string id, std::string name, std::vector<int> devices,
                          std::string reason) {
  Result r;
  r.id = std::move(id);
  r.name = std::move(name);
  r.devices = std::move(devices);
  r.status = Status::kUnsupported;
  r.status_reason = std::move(reason);
  r.validation = "not measured";
  return r;
}

Result quantity_result(std::string id, std::string name, std::vector<int> devices, double value,
                       std::string unit, std::optional<Peak> peak, const Validation& validation) {
  Result r;
  r.id = std::move(id);
  r.name = std::move(name);
  r.devices = std::move(devices);
  r.value = value;
  r.unit = std::move(unit);
  r.samples = {value};
  r.stats = compute_stats(r.samples);
  if (peak && peak->unit == r.unit && peak->value > 0) r.efficiency = value / peak->value;
  r.peak = std::move(peak);
  r.validation = validation.detail;
  if (!validation.passed) {
    r.status = Status::kInvalid;
    r.status_reason = "validation failed: " + validation.detail;
  }
  return r;
}

void reject_above_peak(Result& result, double tolerance) {
  if (result.status != Status::kOk || !result.peak || !result.efficiency ||
      *result.efficiency <= tolerance)
    return;
  result.status = Status::kInvalid;
  result.status_reason = fmt::format(
      "{} is {:.0f} % of the peak {} ({}): faster than the hardware can go, so the "
      "measurement is wrong",
      short_figure(result.value, result.unit), 100.0 * *result.efficiency,
      short_figure(result.peak->value, result.peak->unit), result.peak->source);
}

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

std::optional<Peak> pcie_peak(const GpuInfo& gpu, int directions) {
  if (!gpu.pcie_gen_max || !gpu.pcie_width_max || *gpu.pcie_width_max <= 0) return std::nullopt;
  const int gen = *gpu.pcie_gen_max;
  // GT/s per lane and line-code efficiency by generation (PCI-SIG): 8b/10b up to
  // Gen2, 128b/130b from Gen3 (Gen6's FLIT mode is close to 1; taken as 242/256).
  double gt = 0, efficiency = 128.0 / 130.0;
  switch (gen) {
    case 1:
      gt = 2.5;
      efficiency = 0.8;
      break;
    case 2:
      gt = 5.0;
      efficiency = 0.8;
      break;
    case 3:
      gt = 8.0;
      break;
    case 4:
      gt = 16.0;
      break;
    case 5:
      gt = 32.0;
      break;
    case 6:
      gt = 64.0;
      efficiency = 242.0 / 256.0;
      break;
    default:
      return std::nullopt;
  }
  const int lanes = *gpu.pcie_width_max;
  const double one_way = lanes * gt * 1e9 * efficiency / 8.0;
  return Peak{
      one_way * directions, "B/s", "derived",
      fmt::format("PCIe Gen{} x{}: {} GT/s per lane x {} lanes x line-code efficiency / 8{}", gen,
                  lanes, gt, lanes, directions == 2 ? ", both directions" : "")};
}

std::string short_figure(double value, const std::string& unit) {
  return format_si(value, unit, 3);
}

}  // namespace gpuvs
