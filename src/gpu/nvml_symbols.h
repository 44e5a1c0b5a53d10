// The entry points of libnvidia-ml that gpuvs resolves with dlsym, shared by the files
// that implement gpu/nvml.h (nvml.cpp: loader and device facts; nvml_health.cpp:
// error counters and events). Not part of the interface: include only from those.
#pragma once

#include <dlfcn.h>

#include "gpu/nvml.h"

namespace gpuvs::nvml {

struct Library::Symbols {
  Return (*init_v2)() = nullptr;
  Return (*shutdown)() = nullptr;
  const char* (*error_string)(Return) = nullptr;
  Return (*device_get_count_v2)(unsigned int*) = nullptr;
  Return (*device_get_handle_by_index_v2)(unsigned int, DeviceHandle*) = nullptr;
  Return (*device_get_handle_by_pci_bus_id_v2)(const char*, DeviceHandle*) = nullptr;
  Return (*device_get_name)(DeviceHandle, char*, unsigned int) = nullptr;
  Return (*device_get_uuid)(DeviceHandle, char*, unsigned int) = nullptr;
  Return (*device_get_pci_info_v3)(DeviceHandle, RawPciInfo*) = nullptr;
  Return (*device_get_clock_info)(DeviceHandle, ClockType, unsigned int*) = nullptr;
  Return (*device_get_max_clock_info)(DeviceHandle, ClockType, unsigned int*) = nullptr;
  Return (*device_get_enforced_power_limit)(DeviceHandle, unsigned int*) = nullptr;
  Return (*device_get_power_management_default_limit)(DeviceHandle, unsigned int*) = nullptr;
  Return (*device_get_curr_pcie_link_generation)(DeviceHandle, unsigned int*) = nullptr;
  Return (*device_get_max_pcie_link_generation)(DeviceHandle, unsigned int*) = nullptr;
  Return (*device_get_curr_pcie_link_width)(DeviceHandle, unsigned int*) = nullptr;
  Return (*device_get_max_pcie_link_width)(DeviceHandle, unsigned int*) = nullptr;
  Return (*device_get_ecc_mode)(DeviceHandle, EnableState*, EnableState*) = nullptr;
  Return (*device_get_mig_mode)(DeviceHandle, unsigned int*, unsigned int*) = nullptr;
  Return (*device_get_vbios_version)(DeviceHandle, char*, unsigned int) = nullptr;
  Return (*device_get_nvlink_state)(DeviceHandle, unsigned int, EnableState*) = nullptr;
  Return (*device_get_nvlink_version)(DeviceHandle, unsigned int, unsigned int*) = nullptr;
  Return (*device_get_nvlink_remote_pci_info_v2)(DeviceHandle, unsigned int, RawPciInfo*) = nullptr;
  Return (*device_get_power_usage)(DeviceHandle, unsigned int*) = nullptr;
  Return (*device_get_total_energy_consumption)(DeviceHandle, unsigned long long*) = nullptr;
  Return (*device_get_temperature_v)(DeviceHandle, RawTemperatureV1*) = nullptr;
  Return (*device_get_temperature)(DeviceHandle, TemperatureSensor, unsigned int*) = nullptr;
  Return (*device_get_current_clocks_event_reasons)(DeviceHandle, unsigned long long*) = nullptr;
  Return (*device_get_current_clocks_throttle_reasons)(DeviceHandle, unsigned long long*) = nullptr;
  Return (*device_get_utilization_rates)(DeviceHandle, RawUtilization*) = nullptr;
  Return (*gpm_query_device_support)(DeviceHandle, RawGpmSupport*) = nullptr;
  Return (*gpm_sample_alloc)(GpmSampleHandle*) = nullptr;
  Return (*gpm_sample_free)(GpmSampleHandle) = nullptr;
  Return (*gpm_sample_get)(DeviceHandle, GpmSampleHandle) = nullptr;
  Return (*gpm_metrics_get)(RawGpmMetricsGet*) = nullptr;
  Return (*system_get_driver_version)(char*, unsigned int) = nullptr;
  Return (*system_get_cuda_driver_version_v2)(int*) = nullptr;
  Return (*system_get_cuda_driver_version)(int*) = nullptr;
  // Health counters and events (nvml_health.cpp, resolved by resolve_health_symbols).
  Return (*device_get_total_ecc_errors)(DeviceHandle, MemoryErrorType, EccCounterType,
                                        unsigned long long*) = nullptr;
  Return (*device_get_retired_pages)(DeviceHandle, PageRetirementCause, unsigned int*,
                                     unsigned long long*) = nullptr;
  Return (*device_get_retired_pages_pending_status)(DeviceHandle, EnableState*) = nullptr;
  Return (*device_get_remapped_rows)(DeviceHandle, unsigned int*, unsigned int*, unsigned int*,
                                     unsigned int*) = nullptr;
  Return (*device_get_row_remapper_histogram)(DeviceHandle, RawRowRemapperHistogram*) = nullptr;
  Return (*device_get_pcie_replay_counter)(DeviceHandle, unsigned int*) = nullptr;
  Return (*device_get_nvlink_error_counter)(DeviceHandle, unsigned int, NvLinkErrorCounter,
                                            unsigned long long*) = nullptr;
  Return (*device_get_persistence_mode)(DeviceHandle, EnableState*) = nullptr;
  Return (*device_get_temperature_threshold)(DeviceHandle, TemperatureThreshold,
                                             unsigned int*) = nullptr;
  Return (*event_set_create)(EventSetHandle*) = nullptr;
  Return (*event_set_free)(EventSetHandle) = nullptr;
  Return (*device_register_events)(DeviceHandle, unsigned long long, EventSetHandle) = nullptr;
  Return (*event_set_wait_v2)(EventSetHandle, RawEventData*, unsigned int) = nullptr;
};

template <class F>
void resolve(void* handle, const char* name, F& out) {
  // POSIX guarantees that a dlsym result converts to a function pointer.
  out = reinterpret_cast<F>(dlsym(handle, name));
}

// Calls an entry point that may be missing; true only on NVML_SUCCESS.
template <class F, class... Args>
bool call(F fn, Args... args) {
  return fn != nullptr && fn(args...) == kSuccess;
}

// Resolves the health counters' and events' entry points (nvml_health.cpp).
void resolve_health_symbols(void* handle, Library::Symbols& s);

}  // namespace gpuvs::nvml
