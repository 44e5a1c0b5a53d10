// NVML -> GpuReadings for level 1. Every getter may answer nothing (an old driver, a
// GPU without the feature, no permission): the reading stays std::nullopt and the
// rule that needs it reports kSkip.
#include "check/nvml_reader.h"

#include <algorithm>
#include <chrono>
#include <cmath>

namespace gpuvs::check {

namespace {

Counters read_counters(const nvml::Device& d, const std::vector<LinkState>& links) {
  Counters c;
  c.ecc_corrected_volatile = d.ecc_errors(nvml::kMemoryErrorCorrected, nvml::kVolatileEcc);
  c.ecc_corrected_aggregate = d.ecc_errors(nvml::kMemoryErrorCorrected, nvml::kAggregateEcc);
  c.ecc_uncorrected_volatile = d.ecc_errors(nvml::kMemoryErrorUncorrected, nvml::kVolatileEcc);
  c.ecc_uncorrected_aggregate = d.ecc_errors(nvml::kMemoryErrorUncorrected, nvml::kAggregateEcc);
  c.pcie_replay = d.pcie_replay_count();
  for (const LinkState& l : links) {
    NvLinkCounters n;
    n.link = l.link;
    n.replay = d.nvlink_errors(l.link, nvml::kNvLinkErrorDlReplay);
    n.recovery = d.nvlink_errors(l.link, nvml::kNvLinkErrorDlRecovery);
    n.crc_flit = d.nvlink_errors(l.link, nvml::kNvLinkErrorDlCrcFlit);
    n.crc_data = d.nvlink_errors(l.link, nvml::kNvLinkErrorDlCrcData);
    c.nvlinks.push_back(n);
  }
  return c;
}

void read_state(const nvml::Device& d, GpuReadings& g) {
  g.name = d.name().value_or("");
  g.uuid = d.uuid().value_or("");
  if (std::optional<nvml::PciInfo> pci = d.pci_info()) g.pci_bus_id = pci->bus_id;
  g.ecc_enabled = d.ecc_enabled();
  g.retired_pages_sbe = d.retired_pages(nvml::kRetiredMultipleSingleBit);
  g.retired_pages_dbe = d.retired_pages(nvml::kRetiredDoubleBit);
  g.retired_pages_pending = d.retired_pages_pending();
  g.remap = d.remapped_rows();
  g.remap_histogram = d.row_remap_histogram();
  g.pcie_gen = d.pcie_gen_current();
  g.pcie_gen_max = d.pcie_gen_max();
  g.pcie_width = d.pcie_width_current();
  g.pcie_width_max = d.pcie_width_max();
  for (const nvml::NvLink& l : d.nvlinks())
    g.nvlinks.push_back(LinkState{l.link, l.active});
  g.clock_event_reasons = d.clock_event_reasons();
  g.persistence_mode = d.persistence_mode();
  g.power_limit_w = d.power_limit_w();
  g.power_default_limit_w = d.power_default_limit_w();
  g.mig_enabled = d.mig_enabled();
  g.temperature_c = d.temperature_c();
  g.temperature_slowdown_c = d.temperature_threshold_c(nvml::kTemperatureThresholdSlowdown);
  g.temperature_max_operating_c = d.temperature_threshold_c(nvml::kTemperatureThresholdGpuMax);
}

// Collects Xid critical errors of every watched GPU until `window_s` has passed.
void watch_xids(const nvml::Library& library, const std::vector<nvml::Device>& devices,
                std::vector<GpuReadings>& out, double window_s) {
  nvml::Return rc = nvml::kSuccess;
  nvml::EventSet set = library.event_set(&rc);
  for (size_t i = 0; i < devices.size(); ++i) {
    out[i].window_s = window_s;
    if (!set.valid()) {
      out[i].xid_unwatched_reason = "no event set: " + library.error_text(rc);
      continue;
    }
    const nvml::Return added = set.add(devices[i], nvml::kEventTypeXidCriticalError);
    out[i].xid_watched = added == nvml::kSuccess;
    if (!out[i].xid_watched) out[i].xid_unwatched_reason = library.error_text(added);
  }
  if (!set.valid()) return;
  using Clock = std::chrono::steady_clock;
  const Clock::time_point deadline =
      Clock::now() + std::chrono::duration_cast<Clock::duration>(
                         std::chrono::duration<double>(std::max(0.0, window_s)));
  for (;;) {
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
    if (left <= 0) break;
    nvml::Event event;
    const nvml::Return got = set.wait(static_cast<unsigned int>(left), event);
    // A timeout may also be a signal ending the wait early: the loop waits the rest.
    if (got == nvml::kErrorTimeout) continue;
    if (got != nvml::kSuccess) {
      for (GpuReadings& g : out)
        if (g.xid_watched) {
          g.xid_watched = false;
          g.xid_unwatched_reason = "waiting for events failed: " + library.error_text(got);
        }
      return;
    }
    if (event.type != nvml::kEventTypeXidCriticalError) continue;
    for (size_t i = 0; i < devices.size(); ++i)
      if (devices[i] == event.device) out[i].xids.push_back(event.data);
  }
}

}  // namespace

SystemReadings read_system(const nvml::Library& library) {
  return SystemReadings{library.driver_version(), library.cuda_driver_version()};
}

std::vector<GpuReadings> read_level1(const nvml::Library& library, const std::vector<int>& gpus,
                                     double window_s) {
  std::vector<nvml::Device> devices;
  std::vector<GpuReadings> out;
  for (int index : gpus) {
    devices.push_back(library.device_by_index(static_cast<unsigned int>(index)));
    GpuReadings g;
    g.index = index;
    read_state(devices.back(), g);
    g.first = read_counters(devices.back(), g.nvlinks);
    out.push_back(std::move(g));
  }
  watch_xids(library, devices, out, window_s);
  for (size_t i = 0; i < devices.size(); ++i)
    out[i].last = read_counters(devices[i], out[i].nvlinks);
  return out;
}

}  // namespace gpuvs::check
