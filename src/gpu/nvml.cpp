// NVML through dlopen/dlsym: the loader and the typed getters (the names made of
// NVML's raw answers are in nvml_names.cpp).
// Each entry point is resolved on its own: a symbol an old driver lacks turns only
// the getters that need it into std::nullopt.
#include "gpu/nvml.h"
#include "gpu/nvml_symbols.h"

#include <dlfcn.h>
#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <cstring>
#include <utility>

namespace gpuvs::nvml {

namespace {

std::string from_buffer(const char* buffer, size_t size) {
  return std::string(buffer, strnlen(buffer, size));
}

std::string last_dl_error() {
  const char* e = dlerror();
  return e != nullptr ? std::string(e) : std::string("unknown dlopen error");
}

}  // namespace

// ---- Library -------------------------------------------------------------------------

Library::Library(std::vector<std::string> candidates) : sym_(std::make_unique<Symbols>()) {
  if (candidates.empty()) {
    reason_ = "no NVML library name given";
    return;
  }
  std::string first_error;
  std::string loaded_name;
  for (const std::string& name : candidates) {
    handle_ = dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (handle_ != nullptr) {
      loaded_name = name;
      break;
    }
    // The first name is the one that matters to a user (the runtime soname); the
    // development link is only a second chance.
    if (first_error.empty()) first_error = last_dl_error();
  }
  if (handle_ == nullptr) {
    reason_ = fmt::format("{} not found: {}", candidates.front(), first_error);
    return;
  }

  Symbols& s = *sym_;
  resolve(handle_, "nvmlInit_v2", s.init_v2);
  resolve(handle_, "nvmlShutdown", s.shutdown);
  resolve(handle_, "nvmlErrorString", s.error_string);
  if (s.init_v2 == nullptr) {
    reason_ = fmt::format("nvmlInit_v2 not found in {}: {}", loaded_name, last_dl_error());
    return;
  }
  Return rc = s.init_v2();
  if (rc != kSuccess) {
    reason_ = fmt::format("nvmlInit_v2 failed: {}", error_string(rc));
    return;
  }
  initialized_ = true;

  resolve(handle_, "nvmlDeviceGetCount_v2", s.device_get_count_v2);
  resolve(handle_, "nvmlDeviceGetHandleByIndex_v2", s.device_get_handle_by_index_v2);
  resolve(handle_, "nvmlDeviceGetHandleByPciBusId_v2", s.device_get_handle_by_pci_bus_id_v2);
  resolve(handle_, "nvmlDeviceGetName", s.device_get_name);
  resolve(handle_, "nvmlDeviceGetUUID", s.device_get_uuid);
  resolve(handle_, "nvmlDeviceGetPciInfo_v3", s.device_get_pci_info_v3);
  resolve(handle_, "nvmlDeviceGetClockInfo", s.device_get_clock_info);
  resolve(handle_, "nvmlDeviceGetMaxClockInfo", s.device_get_max_clock_info);
  resolve(handle_, "nvmlDeviceGetEnforcedPowerLimit", s.device_get_enforced_power_limit);
  resolve(handle_, "nvmlDeviceGetPowerManagementDefaultLimit",
          s.device_get_power_management_default_limit);
  resolve(handle_, "nvmlDeviceGetCurrPcieLinkGeneration", s.device_get_curr_pcie_link_generation);
  resolve(handle_, "nvmlDeviceGetMaxPcieLinkGeneration", s.device_get_max_pcie_link_generation);
  resolve(handle_, "nvmlDeviceGetCurrPcieLinkWidth", s.device_get_curr_pcie_link_width);
  resolve(handle_, "nvmlDeviceGetMaxPcieLinkWidth", s.device_get_max_pcie_link_width);
  resolve(handle_, "nvmlDeviceGetEccMode", s.device_get_ecc_mode);
  resolve(handle_, "nvmlDeviceGetMigMode", s.device_get_mig_mode);
  resolve(handle_, "nvmlDeviceGetVbiosVersion", s.device_get_vbios_version);
  resolve(handle_, "nvmlDeviceGetNvLinkState", s.device_get_nvlink_state);
  resolve(handle_, "nvmlDeviceGetNvLinkVersion", s.device_get_nvlink_version);
  resolve(handle_, "nvmlDeviceGetNvLinkRemotePciInfo_v2", s.device_get_nvlink_remote_pci_info_v2);
  resolve(handle_, "nvmlDeviceGetPowerUsage", s.device_get_power_usage);
  resolve(handle_, "nvmlDeviceGetTotalEnergyConsumption", s.device_get_total_energy_consumption);
  resolve(handle_, "nvmlDeviceGetTemperatureV", s.device_get_temperature_v);
  resolve(handle_, "nvmlDeviceGetTemperature", s.device_get_temperature);
  resolve(handle_, "nvmlDeviceGetCurrentClocksEventReasons",
          s.device_get_current_clocks_event_reasons);
  resolve(handle_, "nvmlDeviceGetCurrentClocksThrottleReasons",
          s.device_get_current_clocks_throttle_reasons);
  resolve(handle_, "nvmlDeviceGetUtilizationRates", s.device_get_utilization_rates);
  resolve(handle_, "nvmlGpmQueryDeviceSupport", s.gpm_query_device_support);
  resolve(handle_, "nvmlGpmSampleAlloc", s.gpm_sample_alloc);
  resolve(handle_, "nvmlGpmSampleFree", s.gpm_sample_free);
  resolve(handle_, "nvmlGpmSampleGet", s.gpm_sample_get);
  resolve(handle_, "nvmlGpmMetricsGet", s.gpm_metrics_get);
  resolve(handle_, "nvmlSystemGetDriverVersion", s.system_get_driver_version);
  resolve(handle_, "nvmlSystemGetCudaDriverVersion_v2", s.system_get_cuda_driver_version_v2);
  resolve(handle_, "nvmlSystemGetCudaDriverVersion", s.system_get_cuda_driver_version);
  resolve_health_symbols(handle_, s);
}

Library::~Library() {
  if (initialized_ && sym_->shutdown != nullptr) sym_->shutdown();
  if (handle_ != nullptr) dlclose(handle_);
}

std::string Library::error_string(Return code) const {
  if (sym_->error_string != nullptr) {
    if (const char* s = sym_->error_string(code); s != nullptr) return s;
  }
  return fmt::format("NVML error {}", code);
}

std::optional<unsigned int> Library::device_count() const {
  unsigned int n = 0;
  if (!initialized_ || !call(sym_->device_get_count_v2, &n)) return std::nullopt;
  return n;
}

Device Library::device_by_index(unsigned int index) const {
  DeviceHandle h = nullptr;
  if (!initialized_ || !call(sym_->device_get_handle_by_index_v2, index, &h)) return {};
  return Device(this, h);
}

Device Library::device_by_pci_bus_id(std::string_view bus_id) const {
  if (!initialized_) return {};
  std::optional<std::string> wanted = normalize_pci_bus_id(bus_id);
  if (!wanted) return {};
  DeviceHandle h = nullptr;
  if (call(sym_->device_get_handle_by_pci_bus_id_v2, wanted->c_str(), &h) && h != nullptr)
    return Device(this, h);
  // Second chance: walk the devices NVML can see and compare their bus ids. This
  // helps where the direct lookup is refused but enumeration works.
  std::optional<unsigned int> n = device_count();
  for (unsigned int i = 0; n && i < *n; ++i) {
    Device d = device_by_index(i);
    if (std::optional<PciInfo> pci = d.pci_info(); pci && same_pci_bus_id(pci->bus_id, *wanted))
      return d;
  }
  return {};
}

std::optional<std::string> Library::driver_version() const {
  char buffer[kDriverVersionBufferSize] = {};
  if (!initialized_ || !call(sym_->system_get_driver_version, buffer, kDriverVersionBufferSize))
    return std::nullopt;
  return from_buffer(buffer, sizeof buffer);
}

std::optional<std::string> Library::cuda_driver_version() const {
  if (!initialized_) return std::nullopt;
  int v = 0;
  if (!call(sym_->system_get_cuda_driver_version_v2, &v) &&
      !call(sym_->system_get_cuda_driver_version, &v))
    return std::nullopt;
  // NVML encodes 13.0 as 13000 (NVML_CUDA_DRIVER_VERSION_MAJOR/MINOR).
  return fmt::format("{}.{}", v / 1000, (v % 1000) / 10);
}

// ---- Device --------------------------------------------------------------------------

std::optional<std::string> Device::name() const {
  char buffer[kDeviceNameBufferSize] = {};
  if (!valid() || !call(library_->sym_->device_get_name, handle_, buffer, kDeviceNameBufferSize))
    return std::nullopt;
  return from_buffer(buffer, sizeof buffer);
}

std::optional<std::string> Device::uuid() const {
  char buffer[kDeviceUuidBufferSize] = {};
  if (!valid() || !call(library_->sym_->device_get_uuid, handle_, buffer, kDeviceUuidBufferSize))
    return std::nullopt;
  return from_buffer(buffer, sizeof buffer);
}

std::optional<PciInfo> Device::pci_info() const {
  RawPciInfo raw{};
  if (!valid() || !call(library_->sym_->device_get_pci_info_v3, handle_, &raw)) return std::nullopt;
  PciInfo info;
  info.bus_id = from_buffer(raw.busId, sizeof raw.busId);
  info.pci_device_id = raw.pciDeviceId;
  info.pci_subsystem_id = raw.pciSubSystemId;
  info.domain = raw.domain;
  info.bus = raw.bus;
  info.device = raw.device;
  return info;
}

namespace {

// The common shape of NVML's "one unsigned int out" device getters.
std::optional<unsigned int> get_uint(Return (*fn)(DeviceHandle, unsigned int*),
                                     DeviceHandle handle) {
  unsigned int v = 0;
  if (!call(fn, handle, &v)) return std::nullopt;
  return v;
}

std::optional<int> as_int(std::optional<unsigned int> v) {
  if (!v) return std::nullopt;
  return static_cast<int>(*v);
}

}  // namespace

std::optional<int> Device::clock_mhz(ClockType type) const {
  unsigned int v = 0;
  if (!valid() || !call(library_->sym_->device_get_clock_info, handle_, type, &v))
    return std::nullopt;
  return static_cast<int>(v);
}

std::optional<int> Device::max_clock_mhz(ClockType type) const {
  unsigned int v = 0;
  if (!valid() || !call(library_->sym_->device_get_max_clock_info, handle_, type, &v))
    return std::nullopt;
  return static_cast<int>(v);
}

std::optional<double> Device::power_limit_w() const {
  if (!valid()) return std::nullopt;
  std::optional<unsigned int> mw =
      get_uint(library_->sym_->device_get_enforced_power_limit, handle_);
  if (!mw) return std::nullopt;
  return *mw / 1000.0;
}

std::optional<double> Device::power_default_limit_w() const {
  if (!valid()) return std::nullopt;
  std::optional<unsigned int> mw =
      get_uint(library_->sym_->device_get_power_management_default_limit, handle_);
  if (!mw) return std::nullopt;
  return *mw / 1000.0;
}

std::optional<int> Device::pcie_gen_current() const {
  if (!valid()) return std::nullopt;
  return as_int(get_uint(library_->sym_->device_get_curr_pcie_link_generation, handle_));
}

std::optional<int> Device::pcie_gen_max() const {
  if (!valid()) return std::nullopt;
  return as_int(get_uint(library_->sym_->device_get_max_pcie_link_generation, handle_));
}

std::optional<int> Device::pcie_width_current() const {
  if (!valid()) return std::nullopt;
  return as_int(get_uint(library_->sym_->device_get_curr_pcie_link_width, handle_));
}

std::optional<int> Device::pcie_width_max() const {
  if (!valid()) return std::nullopt;
  return as_int(get_uint(library_->sym_->device_get_max_pcie_link_width, handle_));
}

std::optional<bool> Device::ecc_enabled() const {
  EnableState current = kFeatureDisabled;
  EnableState pending = kFeatureDisabled;
  if (!valid() || !call(library_->sym_->device_get_ecc_mode, handle_, &current, &pending))
    return std::nullopt;
  return current == kFeatureEnabled;
}

std::optional<bool> Device::mig_enabled() const {
  unsigned int current = kMigDisable;
  unsigned int pending = kMigDisable;
  if (!valid() || !call(library_->sym_->device_get_mig_mode, handle_, &current, &pending))
    return std::nullopt;
  return current == kMigEnable;
}

std::optional<std::string> Device::vbios_version() const {
  char buffer[kVbiosVersionBufferSize] = {};
  if (!valid() ||
      !call(library_->sym_->device_get_vbios_version, handle_, buffer, kVbiosVersionBufferSize))
    return std::nullopt;
  return from_buffer(buffer, sizeof buffer);
}

std::vector<NvLink> Device::nvlinks() const {
  std::vector<NvLink> links;
  if (!valid() || library_->sym_->device_get_nvlink_state == nullptr) return links;
  const Library::Symbols& s = *library_->sym_;
  for (unsigned int link = 0; link < kNvLinkScanLimit; ++link) {
    EnableState state = kFeatureDisabled;
    // INVALID_ARGUMENT: past the last link; NOT_SUPPORTED: no NVLink at all. Any other
    // failure also ends the list, so that what is listed is contiguous from link 0.
    if (s.device_get_nvlink_state(handle_, link, &state) != kSuccess) break;
    NvLink info;
    info.link = link;
    info.active = state == kFeatureEnabled;
    unsigned int version = 0;
    if (call(s.device_get_nvlink_version, handle_, link, &version)) info.version_raw = version;
    RawPciInfo remote{};
    if (info.active && call(s.device_get_nvlink_remote_pci_info_v2, handle_, link, &remote)) {
      std::string id = from_buffer(remote.busId, sizeof remote.busId);
      if (!id.empty()) info.remote_pci_bus_id = normalize_pci_bus_id(id).value_or(id);
    }
    links.push_back(std::move(info));
  }
  return links;
}

std::optional<unsigned int> Device::power_usage_mw() const {
  if (!valid()) return std::nullopt;
  return get_uint(library_->sym_->device_get_power_usage, handle_);
}

std::optional<unsigned long long> Device::total_energy_mj() const {
  unsigned long long v = 0;
  if (!valid() || !call(library_->sym_->device_get_total_energy_consumption, handle_, &v))
    return std::nullopt;
  return v;
}

std::optional<int> Device::temperature_c() const {
  if (!valid()) return std::nullopt;
  // NVML 13 deprecates nvmlDeviceGetTemperature for the versioned call; drivers
  // before 12.x have only the old one.
  RawTemperatureV1 t{};
  t.version = kTemperatureV1Version;
  t.sensorType = kTemperatureGpu;
  if (call(library_->sym_->device_get_temperature_v, handle_, &t)) return t.temperature;
  unsigned int v = 0;
  if (call(library_->sym_->device_get_temperature, handle_, kTemperatureGpu, &v))
    return static_cast<int>(v);
  return std::nullopt;
}

std::optional<unsigned long long> Device::clock_event_reasons() const {
  if (!valid()) return std::nullopt;
  unsigned long long mask = 0;
  // "Throttle" was renamed "event" in NVML 12.2; drivers keep the old name, old
  // drivers have only it.
  if (call(library_->sym_->device_get_current_clocks_event_reasons, handle_, &mask) ||
      call(library_->sym_->device_get_current_clocks_throttle_reasons, handle_, &mask))
    return mask;
  return std::nullopt;
}

std::optional<Utilization> Device::utilization() const {
  RawUtilization raw{};
  if (!valid() || !call(library_->sym_->device_get_utilization_rates, handle_, &raw))
    return std::nullopt;
  return Utilization{static_cast<double>(raw.gpu), static_cast<double>(raw.memory)};
}

namespace {

void set_status(Return* status, Return code) {
  if (status != nullptr) *status = code;
}

}  // namespace

std::optional<bool> Device::gpm_supported(Return* status) const {
  if (!valid()) {
    set_status(status, kErrorUninitialized);
    return std::nullopt;
  }
  if (library_->sym_->gpm_query_device_support == nullptr) {
    set_status(status, kErrorFunctionNotFound);
    return std::nullopt;
  }
  RawGpmSupport support{};
  support.version = kGpmSupportVersion;
  const Return rc = library_->sym_->gpm_query_device_support(handle_, &support);
  set_status(status, rc);
  if (rc != kSuccess) return std::nullopt;
  return support.isSupportedDevice != 0;
}

Return Device::gpm_sample_get(GpmSample& sample) const {
  if (!valid() || !sample.valid()) return kErrorUninitialized;
  if (library_->sym_->gpm_sample_get == nullptr) return kErrorFunctionNotFound;
  return library_->sym_->gpm_sample_get(handle_, sample.handle());
}

GpmSample Library::gpm_sample_alloc(Return* status) const {
  if (!initialized_) {
    set_status(status, kErrorUninitialized);
    return {};
  }
  // Without Free, an allocated buffer would leak: ask for both.
  if (sym_->gpm_sample_alloc == nullptr || sym_->gpm_sample_free == nullptr) {
    set_status(status, kErrorFunctionNotFound);
    return {};
  }
  GpmSampleHandle h = nullptr;
  const Return rc = sym_->gpm_sample_alloc(&h);
  set_status(status, rc);
  if (rc != kSuccess || h == nullptr) return {};
  return GpmSample(this, h);
}

std::optional<std::vector<GpmMetricValue>> Library::gpm_metrics(const GpmSample& earlier,
                                                                const GpmSample& later,
                                                                const std::vector<GpmMetricId>& ids,
                                                                Return* status) const {
  if (!initialized_ || !earlier.valid() || !later.valid()) {
    set_status(status, kErrorUninitialized);
    return std::nullopt;
  }
  if (sym_->gpm_metrics_get == nullptr) {
    set_status(status, kErrorFunctionNotFound);
    return std::nullopt;
  }
  if (ids.empty() || ids.size() > kGpmMetricCapacity) {
    set_status(status, kErrorInvalidArgument);
    return std::nullopt;
  }
  // ~13 KB: on the heap, so that a sampler thread's stack stays small.
  auto request = std::make_unique<RawGpmMetricsGet>();
  *request = RawGpmMetricsGet{};
  request->version = kGpmMetricsGetVersion;
  request->numMetrics = static_cast<unsigned int>(ids.size());
  request->sample1 = earlier.handle();
  request->sample2 = later.handle();
  for (size_t i = 0; i < ids.size(); ++i)
    request->metrics[i].metricId = ids[i];
  const Return rc = sym_->gpm_metrics_get(request.get());
  set_status(status, rc);
  if (rc != kSuccess) return std::nullopt;
  std::vector<GpmMetricValue> values;
  values.reserve(ids.size());
  for (size_t i = 0; i < ids.size(); ++i) {
    const RawGpmMetric& m = request->metrics[i];
    GpmMetricValue v;
    v.id = ids[i];
    v.status = m.nvmlReturn;
    if (m.nvmlReturn == kSuccess) v.value = m.value;
    values.push_back(v);
  }
  return values;
}

void free_gpm_sample(const Library* library, GpmSampleHandle handle) {
  if (library->sym_->gpm_sample_free != nullptr) library->sym_->gpm_sample_free(handle);
}

// ---- process-wide library ------------------------------------------------------------

std::vector<std::string> default_library_candidates() {
  return {"libnvidia-ml.so.1", "libnvidia-ml.so"};
}

const Library& library() {
  // Never destroyed: a sampler thread may still be running while static objects are
  // torn down at exit, and the driver cleans up after the process anyway.
  static const Library* const instance = [] {
    const char* override_name = std::getenv("GPUVS_NVML_LIBRARY");
    if (override_name != nullptr && *override_name != '\0')
      return new Library({std::string(override_name)});
    return new Library(default_library_candidates());
  }();
  return *instance;
}

bool available() {
  return library().available();
}

std::string unavailable_reason() {
  return library().unavailable_reason();
}

}  // namespace gpuvs::nvml
