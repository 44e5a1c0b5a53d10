// What the monitor records (docs/monitor.md): one GpuSample per GPU per
// interval. Fields a GPU or a permission does not give are std::nullopt, never 0.
// GPM figures (Hopper and newer, NVML GPM) are averages over the interval that ends
// at `t_s`; the others are instantaneous readings at `t_s`.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace gpuvs::monitor {

struct GpuSample {
  int gpu = 0;     // NVML index
  double t_s = 0;  // seconds since the monitor started
  // NVML, every GPU: nvmlDeviceGetUtilizationRates ("GPU util": some kernel ran).
  std::optional<double> gpu_util_pct;
  std::optional<double> mem_util_pct;
  std::optional<double> power_w;
  std::optional<double> energy_j;  // since the monitor started
  std::optional<int> sm_mhz;
  std::optional<int> mem_mhz;
  std::optional<int> temperature_c;
  std::vector<std::string> throttle_reasons;  // "sw_power_cap", "hw_slowdown", ...
  // NVML GPM (Hopper+): how busy the SMs and pipes really were.
  std::optional<double> sm_util_pct;       // SMs with a warp resident
  std::optional<double> sm_occupancy_pct;  // warps resident / max warps
  std::optional<double> tensor_util_pct;   // any tensor pipe active
  std::optional<double> dram_bw_util_pct;  // DRAM bandwidth used / peak
  std::optional<double> fp64_util_pct;
  std::optional<double> fp32_util_pct;
  std::optional<double> fp16_util_pct;
  std::optional<double> pcie_rx_bytes_per_s;
  std::optional<double> pcie_tx_bytes_per_s;
  std::optional<double> nvlink_rx_bytes_per_s;
  std::optional<double> nvlink_tx_bytes_per_s;

  bool operator==(const GpuSample&) const = default;
};

// Which GPU a source's index is, as a fleet's logs name it ("" where unknown).
struct GpuIdentity {
  std::string name;
  std::string uuid;        // NVML's "GPU-xxxxxxxx-..."
  std::string pci_bus_id;  // NVML's "00000000:19:00.0"
  bool operator==(const GpuIdentity&) const = default;
};

// Where samples come from: NVML on a real machine (monitor/nvml_source.h), a fake in
// tests. sample() is called from the sampler thread only.
class Source {
 public:
  virtual ~Source() = default;
  virtual int gpu_count() const = 0;
  virtual std::string gpu_name(int gpu) const = 0;
  // The name, UUID and PCI bus id of GPU `gpu`; a source that knows only the name
  // answers that.
  virtual GpuIdentity identity(int gpu) const { return {gpu_name(gpu), "", ""}; }
  virtual GpuSample sample(int gpu, double t_s) = 0;
  // Things to say once (e.g. "GPM not supported on GPU 1 (NVIDIA A100): SM and tensor
  // activity unavailable, NVML utilization only"); the caller prints each once.
  virtual std::vector<std::string> notes() const = 0;
};

}  // namespace gpuvs::monitor
