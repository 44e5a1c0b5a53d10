// What `gpuvs monitor` makes of a timeline (docs/monitor.md): per-GPU
// summaries, a compact text table, the Prometheus text exposition of the latest
// samples, and the timeline as CSV or JSON. Pure functions of their inputs.
//
// Summary conventions:
//  - a sample stands for the interval that ends at it, (t_prev, t] of the same GPU
//    (as GPM figures do, sample.h); the first sample of a GPU stands for no time.
//    Throttle seconds are the sum of those intervals whose sample names a reason;
//  - means are plain means over the samples that have the field (the sampler's grid
//    is regular, so this equals the time-weighted mean up to one interval); p95 is
//    the nearest-rank 95th percentile (core/stats.h); nullopt where no sample had it;
//  - energy is the last energy reading minus the first (the counter is monotonic);
//  - "throttled" means a reason other than gpu_idle (an idle GPU lowers its clocks by
//    design); the per-reason seconds include every reason, gpu_idle too.
//
// Prometheus metrics (text exposition format 0.0.4, gauges but for the energy counter,
// one line per GPU, labels gpu="<NVML index>", name="<product name>", uuid, pci_bus_id
// and host; a GPU without the value has no line, and a metric no GPU has is left out
// with its HELP and TYPE):
//   gpuvs_gpu_utilization_percent                NVML GPU utilization: share of time some kernel
//   ran gpuvs_gpu_memory_utilization_percent         NVML memory utilization: share of time device
//   memory was read or written gpuvs_gpu_sm_utilization_percent             GPM: share of SMs busy
//   (a warp resident), over the last interval gpuvs_gpu_sm_occupancy_percent               GPM:
//   resident warps / maximum warps, over the last interval gpuvs_gpu_tensor_utilization_percent
//   GPM: share of time any tensor pipe was active gpuvs_gpu_dram_bandwidth_utilization_percent GPM:
//   DRAM bandwidth used / peak gpuvs_gpu_fp64_utilization_percent           GPM: non-tensor FP64
//   pipe activity gpuvs_gpu_fp32_utilization_percent           GPM: non-tensor FP32 pipe activity
//   gpuvs_gpu_fp16_utilization_percent           GPM: non-tensor FP16 pipe activity
//   gpuvs_gpu_pcie_rx_bytes_per_second           GPM: PCIe traffic to the GPU
//   gpuvs_gpu_pcie_tx_bytes_per_second           GPM: PCIe traffic from the GPU
//   gpuvs_gpu_nvlink_rx_bytes_per_second         GPM: NVLink traffic received, all links
//   gpuvs_gpu_nvlink_tx_bytes_per_second         GPM: NVLink traffic sent, all links
//   gpuvs_gpu_power_watts                        board power draw
//   gpuvs_gpu_energy_joules_total                energy used since the monitor started (counter)
//   gpuvs_gpu_sm_clock_hertz                     SM clock
//   gpuvs_gpu_memory_clock_hertz                 memory clock
//   gpuvs_gpu_temperature_celsius                GPU core temperature
//   gpuvs_gpu_clock_event_reason{reason="..."}   1 for each clock-event (throttle) reason active
//   now gpuvs_monitor_sample_time_seconds            when the sample was taken, seconds since the
//   monitor started
//
// CSV columns (timeline_csv), in this order; an absent value is an empty cell,
// throttle reasons are joined with ';':
//   gpu,t_s,gpu_util_pct,mem_util_pct,sm_util_pct,sm_occupancy_pct,tensor_util_pct,
//   dram_bw_util_pct,fp64_util_pct,fp32_util_pct,fp16_util_pct,pcie_rx_bytes_per_s,
//   pcie_tx_bytes_per_s,nvlink_rx_bytes_per_s,nvlink_tx_bytes_per_s,power_w,energy_j,
//   sm_mhz,mem_mhz,temperature_c,throttle_reasons
// JSON (timeline_json): an array of objects with the same keys, absent and non-finite
// values left out, throttle_reasons an array of strings (always present).
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "monitor/sample.h"

namespace gpuvs::monitor {

struct Distribution {
  double mean = 0;
  double p95 = 0;
  bool operator==(const Distribution&) const = default;
};

struct GpuSummary {
  int gpu = 0;
  std::string name;  // empty when not given
  int samples = 0;
  double duration_s = 0;  // last t - first t
  std::optional<Distribution> sm_util_pct;
  std::optional<Distribution> tensor_util_pct;
  std::optional<Distribution> dram_bw_util_pct;
  std::optional<Distribution> gpu_util_pct;  // NVML "GPU util"
  std::optional<double> power_w_mean;
  std::optional<double> power_w_max;
  std::optional<double> energy_j;
  double throttled_s = 0;                              // a reason other than gpu_idle
  std::map<std::string, double> throttle_s_by_reason;  // every reason, gpu_idle too
  bool operator==(const GpuSummary&) const = default;
};

// One summary per GPU present in `timeline`, in GPU order. `names[gpu]` (when there
// is one) becomes GpuSummary::name. The timeline need not be sorted.
std::vector<GpuSummary> summarize(const std::vector<GpuSample>& timeline,
                                  const std::vector<std::string>& names = {});

// The samples with t_begin <= t_s <= t_end (a run's window of a longer timeline).
std::vector<GpuSample> slice(const std::vector<GpuSample>& timeline, double t_begin, double t_end);

// A compact table, one row per GPU, then one line per GPU that was throttled.
// "-" for absent values. Ends with a newline; empty input gives "no samples\n".
std::string render_summary_text(const std::vector<GpuSummary>& summaries);

// Where a timeline was taken, for joining it with other logs of a fleet: the host, the
// wall-clock start (seconds since the Unix epoch; sample times t_s are relative to
// it), and per GPU index its name, NVML UUID and PCI bus id ("" where unknown).
struct MonitorContext {
  std::string host;
  double start_unix_s = 0;
  std::vector<GpuIdentity> gpus;
};

// The Prometheus text exposition of `latest` (one sample per GPU), each line labelled
// gpu, name, uuid, pci_bus_id and host (from `context`, "" when missing), then
// gpuvs_monitor_start_time_seconds when the start is known. Ends with a newline unless
// empty.
std::string prometheus_text(const std::vector<GpuSample>& latest, const MonitorContext& context);

// Escapes a Prometheus label value: backslash, double quote and newline.
std::string prometheus_escape_label(const std::string& value);

// With a context, four more columns after throttle_reasons: host, uuid, pci_bus_id and
// time_utc (the sample's wall-clock time, ISO 8601 with milliseconds).
std::string timeline_csv(const std::vector<GpuSample>& timeline,
                         const MonitorContext* context = nullptr);
// "2026-12-02T14:55:01.123Z" for seconds since the Unix epoch.
std::string iso8601_utc(double unix_s);
nlohmann::ordered_json timeline_json(const std::vector<GpuSample>& timeline);
nlohmann::ordered_json summary_json(const std::vector<GpuSummary>& summaries);

}  // namespace gpuvs::monitor
