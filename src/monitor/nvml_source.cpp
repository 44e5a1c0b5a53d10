// NvmlSource: NVML readings and GPM metrics for the monitor; see nvml_source.h.
#include "monitor/nvml_source.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <utility>

namespace gpuvs::monitor {

namespace {

// The GPM metrics we ask for, in this order (gpm_metrics answers in the same order).
const std::vector<nvml::GpmMetricId> kGpmIds = {
    nvml::kGpmMetricSmUtil,
    nvml::kGpmMetricSmOccupancy,
    nvml::kGpmMetricAnyTensorUtil,
    nvml::kGpmMetricDramBwUtil,
    nvml::kGpmMetricFp64Util,
    nvml::kGpmMetricFp32Util,
    nvml::kGpmMetricFp16Util,
    nvml::kGpmMetricPcieRxPerSec,
    nvml::kGpmMetricPcieTxPerSec,
    nvml::kGpmMetricNvlinkTotalRxPerSec,
    nvml::kGpmMetricNvlinkTotalTxPerSec,
};

std::optional<double> GpuSample::*gpm_field(nvml::GpmMetricId id) {
  switch (id) {
    case nvml::kGpmMetricSmUtil:
      return &GpuSample::sm_util_pct;
    case nvml::kGpmMetricSmOccupancy:
      return &GpuSample::sm_occupancy_pct;
    case nvml::kGpmMetricAnyTensorUtil:
      return &GpuSample::tensor_util_pct;
    case nvml::kGpmMetricDramBwUtil:
      return &GpuSample::dram_bw_util_pct;
    case nvml::kGpmMetricFp64Util:
      return &GpuSample::fp64_util_pct;
    case nvml::kGpmMetricFp32Util:
      return &GpuSample::fp32_util_pct;
    case nvml::kGpmMetricFp16Util:
      return &GpuSample::fp16_util_pct;
    case nvml::kGpmMetricPcieRxPerSec:
      return &GpuSample::pcie_rx_bytes_per_s;
    case nvml::kGpmMetricPcieTxPerSec:
      return &GpuSample::pcie_tx_bytes_per_s;
    case nvml::kGpmMetricNvlinkTotalRxPerSec:
      return &GpuSample::nvlink_rx_bytes_per_s;
    case nvml::kGpmMetricNvlinkTotalTxPerSec:
      return &GpuSample::nvlink_tx_bytes_per_s;
    default:
      return nullptr;
  }
}

bool is_rate(nvml::GpmMetricId id) {
  return id == nvml::kGpmMetricPcieRxPerSec || id == nvml::kGpmMetricPcieTxPerSec ||
         id == nvml::kGpmMetricNvlinkTotalRxPerSec || id == nvml::kGpmMetricNvlinkTotalTxPerSec;
}

const char* const kGpmMissing = "SM, tensor and DRAM activity unavailable, NVML utilization only";

}  // namespace

NvmlSource::NvmlSource(const nvml::Library& library) : library_(&library) {
  if (!library.available()) {
    note("NVML unavailable: " + library.unavailable_reason() + "; no GPU can be monitored");
    return;
  }
  const std::optional<unsigned int> n = library.device_count();
  if (!n) {
    note("NVML answers no device count; no GPU can be monitored");
    return;
  }
  for (unsigned int i = 0; i < *n; ++i)
    add_gpu(library.device_by_index(i), static_cast<int>(i));
}

NvmlSource::NvmlSource(const nvml::Library& library, const std::vector<std::string>& pci_bus_ids,
                       const std::vector<int>& labels)
    : library_(&library) {
  if (!library.available()) {
    note("NVML unavailable: " + library.unavailable_reason() + "; no GPU can be monitored");
    return;
  }
  for (size_t i = 0; i < pci_bus_ids.size(); ++i)
    add_gpu(library.device_by_pci_bus_id(pci_bus_ids[i]),
            i < labels.size() ? labels[i] : static_cast<int>(i));
}

void NvmlSource::add_gpu(nvml::Device device, int label) {
  const nvml::Library& library = *library_;
  const int gpu = static_cast<int>(gpus_.size());
  Gpu g;
  g.device = std::move(device);
  g.label = label;
  g.name = g.device.name().value_or(fmt::format("GPU {}", label));
  gpus_.push_back(std::move(g));
  Gpu& added = gpus_.back();
  const int i = label;
  if (!added.device.valid()) {
    note(fmt::format("NVML gives no handle for GPU {}: nothing measured on it", i));
    return;
  }
  nvml::Return status = nvml::kSuccess;
  const std::optional<bool> supported = added.device.gpm_supported(&status);
  if (!supported) {
    note(fmt::format("GPM query failed on GPU {} ({}): {}; {}", i, added.name,
                     library.error_text(status), kGpmMissing));
    return;
  }
  if (!*supported) {
    note(fmt::format("GPM not supported on GPU {} ({}): {}", i, added.name, kGpmMissing));
    return;
  }
  nvml::Return s1 = nvml::kSuccess;
  nvml::Return s2 = nvml::kSuccess;
  added.previous = library.gpm_sample_alloc(&s1);
  added.current = library.gpm_sample_alloc(&s2);
  if (!added.previous.valid() || !added.current.valid()) {
    disable_gpm(
        gpu, "cannot allocate a GPM sample: " + library.error_text(s1 != nvml::kSuccess ? s1 : s2));
    return;
  }
  added.gpm = true;
}

std::string NvmlSource::gpu_name(int gpu) const {
  if (gpu < 0 || gpu >= gpu_count()) return {};
  return gpus_[static_cast<size_t>(gpu)].name;
}

GpuIdentity NvmlSource::identity(int gpu) const {
  if (gpu < 0 || gpu >= gpu_count()) return {};
  const Gpu& g = gpus_[static_cast<size_t>(gpu)];
  GpuIdentity id{g.name, g.device.uuid().value_or(""), ""};
  if (const auto pci = g.device.pci_info()) id.pci_bus_id = pci->bus_id;
  return id;
}

bool NvmlSource::gpm_active(int gpu) const {
  return gpu >= 0 && gpu < gpu_count() && gpus_[static_cast<size_t>(gpu)].gpm;
}

void NvmlSource::note(std::string text) {
  std::lock_guard<std::mutex> lock(notes_mutex_);
  if (std::find(notes_.begin(), notes_.end(), text) == notes_.end())
    notes_.push_back(std::move(text));
}

std::vector<std::string> NvmlSource::notes() const {
  std::lock_guard<std::mutex> lock(notes_mutex_);
  return notes_;
}

void NvmlSource::disable_gpm(int gpu, const std::string& why) {
  Gpu& g = gpus_[static_cast<size_t>(gpu)];
  g.gpm = false;
  g.have_previous = false;
  g.previous.reset();
  g.current.reset();
  note(fmt::format("GPM {} on GPU {} ({}): {}", why, g.label, g.name, kGpmMissing));
}

void NvmlSource::sample_gpm(int gpu, GpuSample& out) {
  Gpu& g = gpus_[static_cast<size_t>(gpu)];
  const nvml::Return rc = g.device.gpm_sample_get(g.current);
  if (rc != nvml::kSuccess) {
    if (rc == nvml::kErrorNoPermission)
      disable_gpm(gpu, "not permitted (" + library_->error_text(rc) + ")");
    else if (rc == nvml::kErrorNotSupported || rc == nvml::kErrorFunctionNotFound)
      disable_gpm(gpu, "not supported (" + library_->error_text(rc) + ")");
    else
      // Transient failures (e.g. a GPU reset) cost this interval only.
      note(
          fmt::format("GPM sample failed on GPU {} ({}): {}; those intervals have no GPM "
                      "figures",
                      g.label, g.name, library_->error_text(rc)));
    g.have_previous = false;
    return;
  }
  if (g.have_previous) {
    nvml::Return status = nvml::kSuccess;
    if (auto values = library_->gpm_metrics(g.previous, g.current, kGpmIds, &status)) {
      for (const nvml::GpmMetricValue& v : *values) {
        std::optional<double> GpuSample::*field = gpm_field(v.id);
        // A round right after the previous one (stop()'s last round) can give 0/0:
        // NaN is no measurement, so the interval has no figure for that metric.
        if (field == nullptr || !v.value || !std::isfinite(*v.value)) continue;
        // GPM rates are MiB/s (nvml_types.h); the sample holds bytes/s.
        out.*field = is_rate(v.id) ? *v.value * nvml::kGpmMibPerSecToBytesPerSec : *v.value;
      }
    } else if (status == nvml::kErrorNoPermission) {
      disable_gpm(gpu, "not permitted (" + library_->error_text(status) + ")");
      return;
    } else {
      note(
          fmt::format("GPM metrics failed on GPU {} ({}): {}; those intervals have no GPM "
                      "figures",
                      g.label, g.name, library_->error_text(status)));
    }
  }
  std::swap(g.previous, g.current);
  g.have_previous = true;
}

GpuSample NvmlSource::sample(int gpu, double t_s) {
  GpuSample out;
  out.gpu = gpu;
  out.t_s = t_s;
  if (gpu < 0 || gpu >= gpu_count()) return out;
  Gpu& g = gpus_[static_cast<size_t>(gpu)];
  const nvml::Device& d = g.device;
  if (!d.valid()) return out;
  // GPM first: its interval then ends as close as possible to t_s.
  if (g.gpm) sample_gpm(gpu, out);
  if (std::optional<nvml::Utilization> u = d.utilization()) {
    out.gpu_util_pct = u->gpu_pct;
    out.mem_util_pct = u->memory_pct;
  }
  if (std::optional<unsigned int> mw = d.power_usage_mw()) out.power_w = *mw / 1000.0;
  if (std::optional<unsigned long long> mj = d.total_energy_mj()) {
    if (!g.energy_start_mj) g.energy_start_mj = *mj;
    // The counter is monotonic; guard anyway against a driver reload resetting it.
    out.energy_j =
        *mj >= *g.energy_start_mj ? static_cast<double>(*mj - *g.energy_start_mj) / 1000.0 : 0.0;
  }
  out.sm_mhz = d.clock_mhz(nvml::kClockSm);
  out.mem_mhz = d.clock_mhz(nvml::kClockMem);
  out.temperature_c = d.temperature_c();
  if (std::optional<unsigned long long> mask = d.clock_event_reasons())
    out.throttle_reasons = nvml::throttle_reason_names(*mask);
  return out;
}

std::unique_ptr<Source> make_nvml_source() {
  return std::make_unique<NvmlSource>(nvml::library());
}

std::unique_ptr<NvmlSource> make_nvml_source(const std::vector<std::string>& pci_bus_ids,
                                             const std::vector<int>& labels) {
  return std::make_unique<NvmlSource>(nvml::library(), pci_bus_ids, labels);
}

std::unique_ptr<RunRecorder> make_nvml_recorder(const SystemInfo& system,
                                                const std::vector<int>& gpus,
                                                std::chrono::milliseconds interval) {
  std::vector<std::string> bus_ids;
  for (int gpu : gpus) {
    const bool known = gpu >= 0 && static_cast<size_t>(gpu) < system.gpus.size();
    bus_ids.push_back(known ? system.gpus[static_cast<size_t>(gpu)].pci_bus_id : std::string());
  }
  return std::make_unique<RunRecorder>(make_nvml_source(bus_ids, gpus), interval, gpus);
}

}  // namespace gpuvs::monitor
