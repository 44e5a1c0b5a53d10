// Our own declarations of the few NVML types and constants gpuvs uses, so that the
// build needs neither nvml.h nor libnvidia-ml (NVML is loaded with dlopen at run time).
// Invariants: every struct here has exactly the size and field offsets of its NVML
// counterpart, and every constant its value; tests/cpu/test_nvml_abi.cpp checks this
// against the real nvml.h wherever one is installed. Names differ from NVML's on
// purpose: nvml.h defines many of its names as macros, and the ABI test includes both.
#pragma once

#include <cstdint>

namespace gpuvs::nvml {

// nvmlReturn_t: a C enum, passed and returned as int.
using Return = int;
inline constexpr Return kSuccess = 0;
inline constexpr Return kErrorUninitialized = 1;
inline constexpr Return kErrorInvalidArgument = 2;
inline constexpr Return kErrorNotSupported = 3;
inline constexpr Return kErrorNoPermission = 4;
inline constexpr Return kErrorNotFound = 6;
inline constexpr Return kErrorInsufficientSize = 7;
inline constexpr Return kErrorDriverNotLoaded = 9;
inline constexpr Return kErrorTimeout = 10;  // nvmlEventSetWait_v2: no event in the time
inline constexpr Return kErrorLibraryNotFound = 12;
inline constexpr Return kErrorFunctionNotFound = 13;
inline constexpr Return kErrorGpuIsLost = 15;
inline constexpr Return kErrorUnknown = 999;

// nvmlDevice_t: an opaque pointer owned by NVML (never freed by the caller).
struct DeviceOpaque;
using DeviceHandle = DeviceOpaque*;

// Buffer sizes NVML documents for its string getters (NVML_*_BUFFER_SIZE).
inline constexpr unsigned kPciBusIdBufferSize = 32;        // ..._PCI_BUS_ID_BUFFER_SIZE
inline constexpr unsigned kPciBusIdLegacyBufferSize = 16;  // ..._PCI_BUS_ID_BUFFER_V2_SIZE
inline constexpr unsigned kDeviceNameBufferSize = 96;      // ..._DEVICE_NAME_V2_BUFFER_SIZE
inline constexpr unsigned kDeviceUuidBufferSize = 96;      // ..._DEVICE_UUID_V2_BUFFER_SIZE
inline constexpr unsigned kVbiosVersionBufferSize = 32;    // ..._VBIOS_VERSION_BUFFER_SIZE
inline constexpr unsigned kDriverVersionBufferSize = 80;   // ..._SYSTEM_DRIVER_VERSION_...

// nvmlPciInfo_t as filled by nvmlDeviceGetPciInfo_v3 and
// nvmlDeviceGetNvLinkRemotePciInfo_v2 (68 bytes, no padding).
struct RawPciInfo {
  char busIdLegacy[kPciBusIdLegacyBufferSize];  // "0000:19:00.0"
  unsigned int domain;
  unsigned int bus;
  unsigned int device;
  unsigned int pciDeviceId;  // (device id << 16) | vendor id
  unsigned int pciSubSystemId;
  char busId[kPciBusIdBufferSize];  // "00000000:19:00.0"
};

// nvmlClockType_t (passed by value: a 4-byte C enum).
using ClockType = unsigned int;
inline constexpr ClockType kClockGraphics = 0;
inline constexpr ClockType kClockSm = 1;
inline constexpr ClockType kClockMem = 2;
inline constexpr ClockType kClockVideo = 3;

// nvmlEnableState_t (written through a pointer: 4 bytes).
using EnableState = unsigned int;
inline constexpr EnableState kFeatureDisabled = 0;
inline constexpr EnableState kFeatureEnabled = 1;

// nvmlTemperatureSensors_t.
using TemperatureSensor = unsigned int;
inline constexpr TemperatureSensor kTemperatureGpu = 0;

// nvmlTemperature_v1_t, for nvmlDeviceGetTemperatureV (NVML 13 deprecates
// nvmlDeviceGetTemperature). `version` must hold kTemperatureV1Version.
struct RawTemperatureV1 {
  unsigned int version;
  TemperatureSensor sensorType;
  int temperature;
};
// NVML_STRUCT_VERSION(Temperature, 1): the struct size with the version in bits 24+.
inline constexpr unsigned int kTemperatureV1Version =
    static_cast<unsigned int>(sizeof(RawTemperatureV1)) | (1U << 24U);

// NVML_DEVICE_MIG_DISABLE / NVML_DEVICE_MIG_ENABLE, as nvmlDeviceGetMigMode reports.
inline constexpr unsigned int kMigDisable = 0;
inline constexpr unsigned int kMigEnable = 1;

// nvmlClocksEventReason* (formerly nvmlClocksThrottleReason*) bits of the mask that
// nvmlDeviceGetCurrentClocksEventReasons returns.
inline constexpr unsigned long long kClocksEventGpuIdle = 0x1ULL;
inline constexpr unsigned long long kClocksEventApplicationsClocksSetting = 0x2ULL;
inline constexpr unsigned long long kClocksEventSwPowerCap = 0x4ULL;
inline constexpr unsigned long long kClocksEventHwSlowdown = 0x8ULL;
inline constexpr unsigned long long kClocksEventSyncBoost = 0x10ULL;
inline constexpr unsigned long long kClocksEventSwThermalSlowdown = 0x20ULL;
inline constexpr unsigned long long kClocksEventHwThermalSlowdown = 0x40ULL;
inline constexpr unsigned long long kClocksEventHwPowerBrakeSlowdown = 0x80ULL;
inline constexpr unsigned long long kClocksEventDisplayClockSetting = 0x100ULL;

// nvmlNvlinkVersion_t: what nvmlDeviceGetNvLinkVersion writes. It is an enum, not the
// generation number (A100's NVLink 3 reads 5 = "3.1").
inline constexpr unsigned int kNvLinkVersionInvalid = 0;
inline constexpr unsigned int kNvLinkVersion1_0 = 1;
inline constexpr unsigned int kNvLinkVersion2_0 = 2;
inline constexpr unsigned int kNvLinkVersion2_2 = 3;
inline constexpr unsigned int kNvLinkVersion3_0 = 4;
inline constexpr unsigned int kNvLinkVersion3_1 = 5;
inline constexpr unsigned int kNvLinkVersion4_0 = 6;
inline constexpr unsigned int kNvLinkVersion5_0 = 7;

// How far the per-link NVLink queries look. NVML 12 headers say 18 links, NVML 13
// says 36; links past a GPU's own count answer INVALID_ARGUMENT, which ends the scan.
inline constexpr unsigned int kNvLinkScanLimit = 36;

// nvmlUtilization_t, filled by nvmlDeviceGetUtilizationRates: percent of the last
// sample period (1/6 s to 1 s, per product) in which a kernel ran / device memory
// was read or written.
struct RawUtilization {
  unsigned int gpu;
  unsigned int memory;
};

// ---- Health counters (gpuvs check) -----------------------------------------------------
// Values from NVIDIA's NVML API reference, docs.nvidia.com/deploy/nvml-api/ ("Device
// Enums", "Event Types", "NvLink Methods", "Device Structs"), and the enums of
// nvidia.github.io/cuda-python cuda.bindings.nvml (MemoryErrorType, EccCounterType,
// PageRetirementCause, NvLinkErrorCounter, EventType, Return).

// nvmlMemoryErrorType_t, for nvmlDeviceGetTotalEccErrors.
using MemoryErrorType = unsigned int;
inline constexpr MemoryErrorType kMemoryErrorCorrected = 0;    // single bit
inline constexpr MemoryErrorType kMemoryErrorUncorrected = 1;  // double bit

// nvmlEccCounterType_t: volatile counts since the driver loaded, aggregate over the
// GPU's life (kept in the InfoROM).
using EccCounterType = unsigned int;
inline constexpr EccCounterType kVolatileEcc = 0;
inline constexpr EccCounterType kAggregateEcc = 1;

// nvmlPageRetirementCause_t, for nvmlDeviceGetRetiredPages.
using PageRetirementCause = unsigned int;
inline constexpr PageRetirementCause kRetiredMultipleSingleBit = 0;
inline constexpr PageRetirementCause kRetiredDoubleBit = 1;

// nvmlNvLinkErrorCounter_t, for nvmlDeviceGetNvLinkErrorCounter.
using NvLinkErrorCounter = unsigned int;
inline constexpr NvLinkErrorCounter kNvLinkErrorDlReplay = 0;
inline constexpr NvLinkErrorCounter kNvLinkErrorDlRecovery = 1;
inline constexpr NvLinkErrorCounter kNvLinkErrorDlCrcFlit = 2;
inline constexpr NvLinkErrorCounter kNvLinkErrorDlCrcData = 3;

// nvmlTemperatureThresholds_t, for nvmlDeviceGetTemperatureThreshold.
using TemperatureThreshold = unsigned int;
inline constexpr TemperatureThreshold kTemperatureThresholdShutdown = 0;
inline constexpr TemperatureThreshold kTemperatureThresholdSlowdown = 1;
inline constexpr TemperatureThreshold kTemperatureThresholdMemMax = 2;
inline constexpr TemperatureThreshold kTemperatureThresholdGpuMax = 3;

// nvmlRowRemapperHistogramValues_t: banks by how many spare rows they have left.
struct RawRowRemapperHistogram {
  unsigned int max;  // every spare row still available
  unsigned int high;
  unsigned int partial;
  unsigned int low;
  unsigned int none;  // no spare row left
};

// nvmlEventSet_t: an opaque pointer from nvmlEventSetCreate, freed with
// nvmlEventSetFree (nvml::EventSet owns one).
struct EventSetOpaque;
using EventSetHandle = EventSetOpaque*;

// nvmlEventType bits (unsigned long long masks).
inline constexpr unsigned long long kEventTypeXidCriticalError = 0x8ULL;

// nvmlEventData_t, filled by nvmlEventSetWait_v2 (32 bytes on LP64).
struct RawEventData {
  DeviceHandle device;
  unsigned long long eventType;
  unsigned long long eventData;  // the Xid for kEventTypeXidCriticalError
  unsigned int gpuInstanceId;
  unsigned int computeInstanceId;
};

// ---- GPM (GPU Performance Monitoring, Hopper and newer) ------------------------------
// Layouts, versions and metric ids from nvml.h of CUDA 13.3 as vendored by
// github.com/NVIDIA/go-nvml, gen/nvml/nvml.h at commit
// 2f9e261fe40a7a1c54783d66805e8920564763b4 ("nvmlGpmEnums", "nvmlGpmStructs").

// nvmlGpmSample_t: an opaque pointer from nvmlGpmSampleAlloc, freed with
// nvmlGpmSampleFree (nvml::GpmSample owns one).
struct GpmSampleOpaque;
using GpmSampleHandle = GpmSampleOpaque*;

// nvmlGpmSupport_t, for nvmlGpmQueryDeviceSupport. `version` must hold
// kGpmSupportVersion (NVML_GPM_SUPPORT_VERSION).
struct RawGpmSupport {
  unsigned int version;
  unsigned int isSupportedDevice;
};
inline constexpr unsigned int kGpmSupportVersion = 1;

// nvmlGpmMetricId_t values gpuvs asks for. The utilizations are percent (0..100);
// the PCIe and NVLink rates are in MiB/s per the header's comments ("PCIe traffic
// from this GPU in MiB/sec", "NvLink read bandwidth for all links in MiB/sec").
using GpmMetricId = unsigned int;
inline constexpr GpmMetricId kGpmMetricGraphicsUtil = 1;
inline constexpr GpmMetricId kGpmMetricSmUtil = 2;
inline constexpr GpmMetricId kGpmMetricSmOccupancy = 3;
inline constexpr GpmMetricId kGpmMetricAnyTensorUtil = 5;
inline constexpr GpmMetricId kGpmMetricDramBwUtil = 10;
inline constexpr GpmMetricId kGpmMetricFp64Util = 11;
inline constexpr GpmMetricId kGpmMetricFp32Util = 12;
inline constexpr GpmMetricId kGpmMetricFp16Util = 13;
inline constexpr GpmMetricId kGpmMetricPcieTxPerSec = 20;         // MiB/s, from this GPU
inline constexpr GpmMetricId kGpmMetricPcieRxPerSec = 21;         // MiB/s, to this GPU
inline constexpr GpmMetricId kGpmMetricNvlinkTotalRxPerSec = 60;  // MiB/s, all links
inline constexpr GpmMetricId kGpmMetricNvlinkTotalTxPerSec = 61;  // MiB/s, all links
// One MiB/s in bytes/s: NVML's GPM rates are binary megabytes, gpuvs reports bytes/s.
inline constexpr double kGpmMibPerSecToBytesPerSec = 1024.0 * 1024.0;

// nvmlGpmMetric_t (40 bytes on LP64: 4 + 4 + 8 + 3 pointers).
struct RawGpmMetric {
  unsigned int metricId;  // in
  Return nvmlReturn;      // out: value is valid only when this is kSuccess
  double value;           // out
  struct {
    char* shortName;
    char* longName;
    char* unit;
  } metricInfo;  // out; each may be null
};

// nvmlGpmMetricsGet_t. Its array length is NVML_GPM_METRIC_MAX, which grows with
// NVML (98 in NVML 12.0, 333 in 13.3); NVML reads and writes only the first
// numMetrics entries and the version does not encode the size, so any capacity at
// least numMetrics is correct. We keep the largest length we know.
inline constexpr unsigned int kGpmMetricsGetVersion = 1;  // NVML_GPM_METRICS_GET_VERSION
inline constexpr unsigned int kGpmMetricCapacity = 333;   // NVML_GPM_METRIC_MAX in 13.3
struct RawGpmMetricsGet {
  unsigned int version;     // kGpmMetricsGetVersion
  unsigned int numMetrics;  // entries of metrics[] to compute
  GpmSampleHandle sample1;  // the earlier sample
  GpmSampleHandle sample2;  // the later sample
  RawGpmMetric metrics[kGpmMetricCapacity];
};

}  // namespace gpuvs::nvml
