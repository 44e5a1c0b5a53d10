// NVML's health counters and events, for `gpuvs check`: ECC counts, retired pages,
// row remapping, PCIe replays, NVLink error counters, persistence mode, temperature
// thresholds, and the event set that delivers Xid errors. Each entry point is resolved
// on its own, so a driver that lacks one turns only its getter into std::nullopt.
#include <string>

#include "gpu/nvml.h"
#include "gpu/nvml_symbols.h"

namespace gpuvs::nvml {

void resolve_health_symbols(void* handle, Library::Symbols& s) {
  resolve(handle, "nvmlDeviceGetTotalEccErrors", s.device_get_total_ecc_errors);
  resolve(handle, "nvmlDeviceGetRetiredPages", s.device_get_retired_pages);
  resolve(handle, "nvmlDeviceGetRetiredPagesPendingStatus",
          s.device_get_retired_pages_pending_status);
  resolve(handle, "nvmlDeviceGetRemappedRows", s.device_get_remapped_rows);
  resolve(handle, "nvmlDeviceGetRowRemapperHistogram", s.device_get_row_remapper_histogram);
  resolve(handle, "nvmlDeviceGetPcieReplayCounter", s.device_get_pcie_replay_counter);
  resolve(handle, "nvmlDeviceGetNvLinkErrorCounter", s.device_get_nvlink_error_counter);
  resolve(handle, "nvmlDeviceGetPersistenceMode", s.device_get_persistence_mode);
  resolve(handle, "nvmlDeviceGetTemperatureThreshold", s.device_get_temperature_threshold);
  resolve(handle, "nvmlEventSetCreate", s.event_set_create);
  resolve(handle, "nvmlEventSetFree", s.event_set_free);
  resolve(handle, "nvmlDeviceRegisterEvents", s.device_register_events);
  resolve(handle, "nvmlEventSetWait_v2", s.event_set_wait_v2);
}

std::optional<unsigned long long> Device::ecc_errors(MemoryErrorType type,
                                                     EccCounterType counter) const {
  unsigned long long v = 0;
  if (!valid() || !call(library_->sym_->device_get_total_ecc_errors, handle_, type, counter, &v))
    return std::nullopt;
  return v;
}

std::optional<unsigned int> Device::retired_pages(PageRetirementCause cause) const {
  // A count of 0 asks for the number alone (no address buffer), as the reference says.
  unsigned int count = 0;
  if (!valid() || library_->sym_->device_get_retired_pages == nullptr) return std::nullopt;
  const Return rc = library_->sym_->device_get_retired_pages(handle_, cause, &count, nullptr);
  // INSUFFICIENT_SIZE: there are pages, and `count` says how many.
  if (rc != kSuccess && rc != kErrorInsufficientSize) return std::nullopt;
  return count;
}

std::optional<bool> Device::retired_pages_pending() const {
  EnableState pending = kFeatureDisabled;
  if (!valid() || !call(library_->sym_->device_get_retired_pages_pending_status, handle_, &pending))
    return std::nullopt;
  return pending == kFeatureEnabled;
}

std::optional<RemappedRows> Device::remapped_rows() const {
  unsigned int corrected = 0, uncorrected = 0, pending = 0, failure = 0;
  if (!valid() || !call(library_->sym_->device_get_remapped_rows, handle_, &corrected, &uncorrected,
                        &pending, &failure))
    return std::nullopt;
  return RemappedRows{corrected, uncorrected, pending != 0, failure != 0};
}

std::optional<RowRemapHistogram> Device::row_remap_histogram() const {
  RawRowRemapperHistogram raw{};
  if (!valid() || !call(library_->sym_->device_get_row_remapper_histogram, handle_, &raw))
    return std::nullopt;
  return RowRemapHistogram{raw.max, raw.high, raw.partial, raw.low, raw.none};
}

std::optional<unsigned int> Device::pcie_replay_count() const {
  unsigned int v = 0;
  if (!valid() || !call(library_->sym_->device_get_pcie_replay_counter, handle_, &v))
    return std::nullopt;
  return v;
}

std::optional<unsigned long long> Device::nvlink_errors(unsigned int link,
                                                        NvLinkErrorCounter counter) const {
  unsigned long long v = 0;
  if (!valid() ||
      !call(library_->sym_->device_get_nvlink_error_counter, handle_, link, counter, &v))
    return std::nullopt;
  return v;
}

std::optional<bool> Device::persistence_mode() const {
  EnableState mode = kFeatureDisabled;
  if (!valid() || !call(library_->sym_->device_get_persistence_mode, handle_, &mode))
    return std::nullopt;
  return mode == kFeatureEnabled;
}

std::optional<int> Device::temperature_threshold_c(TemperatureThreshold threshold) const {
  unsigned int v = 0;
  if (!valid() || !call(library_->sym_->device_get_temperature_threshold, handle_, threshold, &v))
    return std::nullopt;
  return static_cast<int>(v);
}

// ---- events --------------------------------------------------------------------------

EventSet Library::event_set(Return* status) const {
  auto set_status = [status](Return code) {
    if (status != nullptr) *status = code;
  };
  if (!initialized_) {
    set_status(kErrorUninitialized);
    return {};
  }
  // Without Free a created set would leak; without Wait it is of no use.
  if (sym_->event_set_create == nullptr || sym_->event_set_free == nullptr ||
      sym_->event_set_wait_v2 == nullptr || sym_->device_register_events == nullptr) {
    set_status(kErrorFunctionNotFound);
    return {};
  }
  EventSetHandle h = nullptr;
  const Return rc = sym_->event_set_create(&h);
  set_status(rc);
  if (rc != kSuccess || h == nullptr) return {};
  return EventSet(this, h);
}

Return EventSet::add(const Device& device, unsigned long long types) {
  if (!valid() || !device.valid()) return kErrorUninitialized;
  return library()->sym_->device_register_events(device.handle_, types, handle());
}

Return EventSet::wait(unsigned int timeout_ms, Event& event) {
  if (!valid()) return kErrorUninitialized;
  RawEventData raw{};
  const Return rc = library()->sym_->event_set_wait_v2(handle(), &raw, timeout_ms);
  if (rc != kSuccess) return rc;
  event.device = Device(library(), raw.device);
  event.type = raw.eventType;
  event.data = raw.eventData;
  return kSuccess;
}

void free_event_set(const Library* library, EventSetHandle handle) {
  library->sym_->event_set_free(handle);
}

}  // namespace gpuvs::nvml
