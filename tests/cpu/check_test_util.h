// A healthy H200's level-1 readings, for the tests of check/health.h and
// check/output.h to break one fact at a time.
#pragma once

#include "check/health.h"
#include "gpu/nvml_types.h"

namespace gpuvs_test {

inline gpuvs::check::GpuReadings healthy_h200(int index = 0) {
  using namespace gpuvs::check;
  GpuReadings r;
  r.index = index;
  r.name = "NVIDIA H200";
  r.uuid = "GPU-00000000-1111-2222-3333-44444444444" + std::to_string(index);
  r.pci_bus_id = "00000000:19:00.0";
  r.ecc_enabled = true;
  Counters c;
  c.ecc_corrected_volatile = 0;
  c.ecc_corrected_aggregate = 0;
  c.ecc_uncorrected_volatile = 0;
  c.ecc_uncorrected_aggregate = 0;
  c.pcie_replay = 0;
  for (unsigned int l = 0; l < 18; ++l) {
    c.nvlinks.push_back(NvLinkCounters{l, 0, 0, 0, 0});
    r.nvlinks.push_back(LinkState{l, true});
  }
  r.first = c;
  r.last = c;
  r.remap = RemapReading{};
  r.remap_histogram = RemapHistogram{8192, 0, 0, 0, 0};
  r.xid_watched = true;
  r.window_s = 1.0;
  r.pcie_gen = 5;
  r.pcie_gen_max = 5;
  r.pcie_width = 16;
  r.pcie_width_max = 16;
  r.clock_event_reasons = gpuvs::nvml::kClocksEventGpuIdle;
  r.persistence_mode = true;
  r.power_limit_w = 700;
  r.power_default_limit_w = 700;
  r.mig_enabled = false;
  r.temperature_c = 31;
  r.temperature_slowdown_c = 87;
  r.temperature_max_operating_c = 85;
  return r;
}

}  // namespace gpuvs_test
