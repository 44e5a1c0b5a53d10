// NVML (the NVIDIA Management Library), loaded at run time with dlopen so that gpuvs
// builds without nvml.h and runs, with fewer facts, where libnvidia-ml is missing.
//
// Invariants:
//  - nothing here throws for a missing library, symbol, device or permission: every
//    getter answers std::nullopt, so callers have one code path;
//  - a Library is immutable once constructed (dlopen + nvmlInit_v2 in the
//    constructor), so it may be used from several threads at once; NVML itself is
//    thread-safe;
//  - a Device is a plain handle into a Library and must not outlive it. The
//    process-wide library() lives until the process ends.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "gpu/nvml_types.h"

namespace gpuvs::nvml {

class Library;
class GpmSample;
class EventSet;

struct PciInfo {
  std::string bus_id;          // as NVML reports it, "00000000:19:00.0"
  uint32_t pci_device_id = 0;  // (device id << 16) | vendor id
  uint32_t pci_subsystem_id = 0;
  uint32_t domain = 0;
  uint32_t bus = 0;
  uint32_t device = 0;
};

struct NvLink {
  unsigned int link = 0;
  bool active = false;
  std::optional<unsigned int> version_raw;  // nvmlNvlinkVersion_t, see nvlink_generation()
  std::optional<std::string> remote_pci_bus_id;
};

// nvmlDeviceGetUtilizationRates: percent of NVML's last sample period (1/6 s to 1 s)
// in which some kernel ran ("GPU util": says nothing of how many SMs were busy) and
// in which device memory was read or written.
struct Utilization {
  double gpu_pct = 0;
  double memory_pct = 0;
};

// One GPM metric computed between two samples: `value` is set only when NVML gave
// one (`status` kSuccess).
struct GpmMetricValue {
  GpmMetricId id = 0;
  Return status = kErrorUnknown;
  std::optional<double> value;
};

// nvmlDeviceGetRemappedRows: rows remapped (recorded in the InfoROM) by cause, whether
// a remapping waits for the next GPU reset, and whether one ever failed.
struct RemappedRows {
  unsigned int corrected = 0;    // rows remapped for correctable errors
  unsigned int uncorrected = 0;  // rows remapped for uncorrectable errors
  bool pending = false;
  bool failure = false;
};

// nvmlDeviceGetRowRemapperHistogram: how many memory banks have all, many, some, few
// or none of their spare rows left.
struct RowRemapHistogram {
  unsigned int max = 0;
  unsigned int high = 0;
  unsigned int partial = 0;
  unsigned int low = 0;
  unsigned int none = 0;
};

// One GPU as NVML knows it. An invalid Device (library unavailable, no such GPU, no
// permission) answers std::nullopt to every getter.
class Device {
 public:
  Device() = default;

  bool valid() const { return library_ != nullptr && handle_ != nullptr; }

  std::optional<std::string> name() const;
  std::optional<std::string> uuid() const;  // "GPU-xxxxxxxx-xxxx-..."
  std::optional<PciInfo> pci_info() const;
  std::optional<int> clock_mhz(ClockType type) const;      // current
  std::optional<int> max_clock_mhz(ClockType type) const;  // highest the board allows
  std::optional<double> power_limit_w() const;             // enforced
  std::optional<double> power_default_limit_w() const;
  std::optional<int> pcie_gen_current() const;
  std::optional<int> pcie_gen_max() const;
  std::optional<int> pcie_width_current() const;
  std::optional<int> pcie_width_max() const;
  std::optional<bool> ecc_enabled() const;  // current mode, not the pending one
  std::optional<bool> mig_enabled() const;  // current mode, not the pending one
  std::optional<std::string> vbios_version() const;
  // Links 0, 1, ... until the first that NVML does not answer (INVALID_ARGUMENT past
  // the GPU's last link; NOT_SUPPORTED on a GPU without NVLink: then empty).
  std::vector<NvLink> nvlinks() const;
  std::optional<unsigned int> power_usage_mw() const;
  std::optional<unsigned long long> total_energy_mj() const;  // since the driver loaded
  std::optional<int> temperature_c() const;                   // GPU core sensor
  // Clock-event (throttle) reasons now, as a bitmask of kClocksEvent* bits.
  std::optional<unsigned long long> clock_event_reasons() const;
  std::optional<Utilization> utilization() const;

  // Health counters (nvml_health.cpp). nullopt where the GPU or driver does not
  // report them (page retirement is replaced by row remapping from Ampere on).
  std::optional<unsigned long long> ecc_errors(MemoryErrorType type, EccCounterType counter) const;
  std::optional<unsigned int> retired_pages(PageRetirementCause cause) const;
  std::optional<bool> retired_pages_pending() const;
  std::optional<RemappedRows> remapped_rows() const;
  std::optional<RowRemapHistogram> row_remap_histogram() const;
  std::optional<unsigned int> pcie_replay_count() const;
  std::optional<unsigned long long> nvlink_errors(unsigned int link,
                                                  NvLinkErrorCounter counter) const;
  std::optional<bool> persistence_mode() const;
  std::optional<int> temperature_threshold_c(TemperatureThreshold threshold) const;

  // The same GPU (NVML hands out one handle per GPU).
  bool operator==(const Device& other) const { return handle_ == other.handle_; }

  // GPM (Hopper and newer). nullopt when the question cannot be asked (no device,
  // a driver without nvmlGpmQueryDeviceSupport, the query failed: see `status`).
  std::optional<bool> gpm_supported(Return* status = nullptr) const;
  // Reads the GPM counters into `sample` (nvmlGpmSampleGet). Returns NVML's code:
  // kSuccess; kErrorNoPermission where GPM is not permitted; kErrorNotSupported;
  // kErrorFunctionNotFound for a driver without GPM; kErrorUninitialized for an
  // invalid Device or sample.
  Return gpm_sample_get(GpmSample& sample) const;

 private:
  friend class Library;
  friend class EventSet;
  Device(const Library* library, DeviceHandle handle) : library_(library), handle_(handle) {}

  const Library* library_ = nullptr;
  DeviceHandle handle_ = nullptr;
};

// One loaded copy of libnvidia-ml. Production code uses the process-wide library();
// tests construct their own with a chosen file name.
class Library {
 public:
  // Tries each candidate with dlopen in turn, then calls nvmlInit_v2. Never throws
  // for a missing library; see available() and unavailable_reason().
  explicit Library(std::vector<std::string> candidates);
  ~Library();  // nvmlShutdown (NVML counts its inits) and dlclose
  Library(const Library&) = delete;
  Library& operator=(const Library&) = delete;

  bool available() const { return initialized_; }
  // Empty when available; else one line, e.g. "libnvidia-ml.so.1 not found: <dlerror>"
  // or "nvmlInit_v2 failed: <nvmlErrorString>".
  const std::string& unavailable_reason() const { return reason_; }

  std::optional<unsigned int> device_count() const;
  Device device_by_index(unsigned int index) const;
  // Accepts any form NVML or CUDA prints ("0000:19:00.0", "00000000:19:00.0").
  Device device_by_pci_bus_id(std::string_view bus_id) const;

  std::optional<std::string> driver_version() const;       // "580.95.05"
  std::optional<std::string> cuda_driver_version() const;  // "13.0"

  // nvmlErrorString, or "NVML error N" without it. Never throws.
  std::string error_text(Return code) const { return error_string(code); }

  // An event set (nvmlEventSetCreate); invalid where the driver has no events, with
  // the code in `status` when given.
  EventSet event_set(Return* status = nullptr) const;

  // The resolved entry points (nvml_symbols.h); null where a symbol is missing.
  struct Symbols;

  // A GPM sample buffer (nvmlGpmSampleAlloc); invalid when allocation failed or the
  // driver has no GPM, with the code in `status` when given.
  GpmSample gpm_sample_alloc(Return* status = nullptr) const;
  // nvmlGpmMetricsGet between `earlier` and `later` (taken from the same GPU, the
  // later at least ~100 ms after the earlier, NVML's refresh period). One entry per
  // id, in order; nullopt when the call as a whole failed (code in `status`). At most
  // kGpmMetricCapacity ids.
  std::optional<std::vector<GpmMetricValue>> gpm_metrics(const GpmSample& earlier,
                                                         const GpmSample& later,
                                                         const std::vector<GpmMetricId>& ids,
                                                         Return* status = nullptr) const;

 private:
  friend class Device;
  friend class EventSet;
  friend void free_gpm_sample(const Library* library, GpmSampleHandle handle);
  friend void free_event_set(const Library* library, EventSetHandle handle);
  std::string error_string(Return code) const;

  void* handle_ = nullptr;  // from dlopen
  bool initialized_ = false;
  std::string reason_;
  std::unique_ptr<Symbols> sym_;
};

void free_gpm_sample(const Library* library, GpmSampleHandle handle);  // nvmlGpmSampleFree
void free_event_set(const Library* library, EventSetHandle handle);    // nvmlEventSetFree

// A handle NVML allocated for one Library, released with `Release` on destruction
// (RAII). Movable, not copyable; must not outlive its Library.
template <class Handle, void (*Release)(const Library*, Handle)>
class LibraryResource {
 public:
  LibraryResource() = default;
  ~LibraryResource() { reset(); }
  LibraryResource(const LibraryResource&) = delete;
  LibraryResource& operator=(const LibraryResource&) = delete;
  LibraryResource(LibraryResource&& other) noexcept
      : library_(std::exchange(other.library_, nullptr)),
        handle_(std::exchange(other.handle_, nullptr)) {}
  LibraryResource& operator=(LibraryResource&& other) noexcept {
    if (this != &other) {
      reset();
      library_ = std::exchange(other.library_, nullptr);
      handle_ = std::exchange(other.handle_, nullptr);
    }
    return *this;
  }

  bool valid() const { return library_ != nullptr && handle_ != nullptr; }
  Handle handle() const { return handle_; }
  // Releases the handle; the resource becomes invalid.
  void reset() {
    if (valid()) Release(library_, handle_);
    library_ = nullptr;
    handle_ = nullptr;
  }

 protected:
  LibraryResource(const Library* library, Handle handle) : library_(library), handle_(handle) {}
  const Library* library() const { return library_; }

 private:
  const Library* library_ = nullptr;
  Handle handle_ = nullptr;
};

// Owns one nvmlGpmSample_t (nvmlGpmSampleFree on destruction).
class GpmSample : public LibraryResource<GpmSampleHandle, free_gpm_sample> {
 public:
  GpmSample() = default;

 private:
  friend class Library;
  GpmSample(const Library* library, GpmSampleHandle handle) : LibraryResource(library, handle) {}
};

// One event that nvmlEventSetWait_v2 delivered.
struct Event {
  Device device;
  unsigned long long type = 0;  // kEventType* bit
  unsigned long long data = 0;  // the Xid for kEventTypeXidCriticalError
};

// Owns one nvmlEventSet_t (nvmlEventSetFree on destruction).
class EventSet : public LibraryResource<EventSetHandle, free_event_set> {
 public:
  EventSet() = default;

  // nvmlDeviceRegisterEvents: NVML's code (kErrorNotSupported where the GPU cannot
  // deliver those events, kErrorFunctionNotFound for a driver without them).
  Return add(const Device& device, unsigned long long types);
  // nvmlEventSetWait_v2: kSuccess with `event` filled, kErrorTimeout when nothing came
  // within `timeout_ms` (or a signal ended the wait early), another code on failure.
  Return wait(unsigned int timeout_ms, Event& event);

 private:
  friend class Library;
  EventSet(const Library* library, EventSetHandle handle) : LibraryResource(library, handle) {}
};

// The names tried by default, in order: the runtime soname, then the development link.
std::vector<std::string> default_library_candidates();

// The process-wide library, loaded on first use (thread-safe). The environment
// variable GPUVS_NVML_LIBRARY, read once at that moment, replaces the default names
// with one file (tests point it at a missing file to exercise the fallback).
const Library& library();
bool available();
std::string unavailable_reason();

// Stable snake_case names of the bits set in a clock-event mask, in bit order:
// 0x4 -> "sw_power_cap"; bits gpuvs does not know -> "unknown_0x200".
std::vector<std::string> throttle_reason_names(unsigned long long mask);

// NVLink generation (1..5) for an nvmlNvlinkVersion_t value; nullopt for 0 and
// values this build does not know.
std::optional<int> nvlink_generation(unsigned int version_raw);

// Canonical PCI bus id "DDDDDDDD:BB:DD.F" (upper-case hex, 8-digit domain, as NVML
// prints it) from any of "D:B:D.F", "B:D.F", "D:B:D" with hex fields of any case and
// width. CUDA prints "0000:19:00.0", NVML "00000000:19:00.0": both give the latter.
// nullopt when the text is not a bus id.
std::optional<std::string> normalize_pci_bus_id(std::string_view bus_id);

// True when both parse and name the same PCI function.
bool same_pci_bus_id(std::string_view a, std::string_view b);

}  // namespace gpuvs::nvml
