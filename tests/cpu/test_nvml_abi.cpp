// Checks, at compile time, that gpu/nvml_types.h mirrors the real nvml.h: the same
// struct sizes and field offsets, the same constant values. Built only where nvml.h
// is installed (gpuvs itself never includes it). A failure here means a getter would
// read garbage: fix nvml_types.h, never the assertion.
#include <gtest/gtest.h>
#include <nvml.h>

#include <cstddef>

#include "gpu/nvml_types.h"

namespace n = gpuvs::nvml;

// nvmlReturn_t
static_assert(sizeof(nvmlReturn_t) == sizeof(n::Return));
static_assert(n::kSuccess == NVML_SUCCESS);
static_assert(n::kErrorUninitialized == NVML_ERROR_UNINITIALIZED);
static_assert(n::kErrorInvalidArgument == NVML_ERROR_INVALID_ARGUMENT);
static_assert(n::kErrorNotSupported == NVML_ERROR_NOT_SUPPORTED);
static_assert(n::kErrorNoPermission == NVML_ERROR_NO_PERMISSION);
static_assert(n::kErrorNotFound == NVML_ERROR_NOT_FOUND);
static_assert(n::kErrorInsufficientSize == NVML_ERROR_INSUFFICIENT_SIZE);
static_assert(n::kErrorDriverNotLoaded == NVML_ERROR_DRIVER_NOT_LOADED);
static_assert(n::kErrorTimeout == NVML_ERROR_TIMEOUT);
static_assert(n::kErrorLibraryNotFound == NVML_ERROR_LIBRARY_NOT_FOUND);
static_assert(n::kErrorFunctionNotFound == NVML_ERROR_FUNCTION_NOT_FOUND);
static_assert(n::kErrorGpuIsLost == NVML_ERROR_GPU_IS_LOST);
static_assert(n::kErrorUnknown == NVML_ERROR_UNKNOWN);

// nvmlDevice_t
static_assert(sizeof(nvmlDevice_t) == sizeof(n::DeviceHandle));

// Buffer sizes
static_assert(n::kPciBusIdBufferSize == NVML_DEVICE_PCI_BUS_ID_BUFFER_SIZE);
static_assert(n::kPciBusIdLegacyBufferSize == NVML_DEVICE_PCI_BUS_ID_BUFFER_V2_SIZE);
static_assert(n::kDeviceNameBufferSize == NVML_DEVICE_NAME_V2_BUFFER_SIZE);
static_assert(n::kDeviceUuidBufferSize == NVML_DEVICE_UUID_V2_BUFFER_SIZE);
static_assert(n::kVbiosVersionBufferSize == NVML_DEVICE_VBIOS_VERSION_BUFFER_SIZE);
static_assert(n::kDriverVersionBufferSize == NVML_SYSTEM_DRIVER_VERSION_BUFFER_SIZE);

// nvmlPciInfo_t
static_assert(sizeof(nvmlPciInfo_t) == sizeof(n::RawPciInfo));
static_assert(alignof(nvmlPciInfo_t) == alignof(n::RawPciInfo));
static_assert(offsetof(nvmlPciInfo_t, busIdLegacy) == offsetof(n::RawPciInfo, busIdLegacy));
static_assert(offsetof(nvmlPciInfo_t, domain) == offsetof(n::RawPciInfo, domain));
static_assert(offsetof(nvmlPciInfo_t, bus) == offsetof(n::RawPciInfo, bus));
static_assert(offsetof(nvmlPciInfo_t, device) == offsetof(n::RawPciInfo, device));
static_assert(offsetof(nvmlPciInfo_t, pciDeviceId) == offsetof(n::RawPciInfo, pciDeviceId));
static_assert(offsetof(nvmlPciInfo_t, pciSubSystemId) == offsetof(n::RawPciInfo, pciSubSystemId));
static_assert(offsetof(nvmlPciInfo_t, busId) == offsetof(n::RawPciInfo, busId));
static_assert(sizeof(nvmlPciInfo_t::busId) == sizeof(n::RawPciInfo::busId));
static_assert(sizeof(nvmlPciInfo_t::busIdLegacy) == sizeof(n::RawPciInfo::busIdLegacy));

// nvmlClockType_t
static_assert(sizeof(nvmlClockType_t) == sizeof(n::ClockType));
static_assert(n::kClockGraphics == NVML_CLOCK_GRAPHICS);
static_assert(n::kClockSm == NVML_CLOCK_SM);
static_assert(n::kClockMem == NVML_CLOCK_MEM);
static_assert(n::kClockVideo == NVML_CLOCK_VIDEO);

// nvmlEnableState_t
static_assert(sizeof(nvmlEnableState_t) == sizeof(n::EnableState));
static_assert(n::kFeatureDisabled == NVML_FEATURE_DISABLED);
static_assert(n::kFeatureEnabled == NVML_FEATURE_ENABLED);

// nvmlTemperatureSensors_t
static_assert(sizeof(nvmlTemperatureSensors_t) == sizeof(n::TemperatureSensor));
static_assert(n::kTemperatureGpu == NVML_TEMPERATURE_GPU);

// nvmlTemperature_v1_t (nvmlDeviceGetTemperatureV), where the header has it.
#ifdef nvmlTemperature_v1
#define GPUVS_ABI_CHECKED_TEMPERATURE_V 1
static_assert(sizeof(nvmlTemperature_v1_t) == sizeof(n::RawTemperatureV1));
static_assert(offsetof(nvmlTemperature_v1_t, version) == offsetof(n::RawTemperatureV1, version));
static_assert(offsetof(nvmlTemperature_v1_t, sensorType) ==
              offsetof(n::RawTemperatureV1, sensorType));
static_assert(offsetof(nvmlTemperature_v1_t, temperature) ==
              offsetof(n::RawTemperatureV1, temperature));
static_assert(n::kTemperatureV1Version == nvmlTemperature_v1);
#else
#define GPUVS_ABI_CHECKED_TEMPERATURE_V 0
#endif

// MIG mode
static_assert(n::kMigDisable == NVML_DEVICE_MIG_DISABLE);
static_assert(n::kMigEnable == NVML_DEVICE_MIG_ENABLE);

// Clock-event reasons. NVML 12.2 renamed most "throttle" bits "event" bits but kept
// the hardware slowdown ones under the old names; the old names exist in every header.
#define GPUVS_REASON(name) static_cast<unsigned long long>(nvmlClocksThrottleReason##name)
static_assert(n::kClocksEventGpuIdle == GPUVS_REASON(GpuIdle));
static_assert(n::kClocksEventApplicationsClocksSetting == GPUVS_REASON(ApplicationsClocksSetting));
static_assert(n::kClocksEventSwPowerCap == GPUVS_REASON(SwPowerCap));
static_assert(n::kClocksEventHwSlowdown == GPUVS_REASON(HwSlowdown));
static_assert(n::kClocksEventSyncBoost == GPUVS_REASON(SyncBoost));
static_assert(n::kClocksEventSwThermalSlowdown == GPUVS_REASON(SwThermalSlowdown));
static_assert(n::kClocksEventHwThermalSlowdown == GPUVS_REASON(HwThermalSlowdown));
static_assert(n::kClocksEventHwPowerBrakeSlowdown == GPUVS_REASON(HwPowerBrakeSlowdown));
static_assert(n::kClocksEventDisplayClockSetting == GPUVS_REASON(DisplayClockSetting));
#undef GPUVS_REASON

// nvmlNvlinkVersion_t is an enum (not a macro) that older headers lack; NVLink
// bandwidth modes arrived after it, so their macro marks a header that has it.
#ifdef NVML_NVLINK_TOTAL_SUPPORTED_BW_MODES
#define GPUVS_ABI_CHECKED_NVLINK_VERSIONS 1
static_assert(n::kNvLinkVersionInvalid == NVML_NVLINK_VERSION_INVALID);
static_assert(n::kNvLinkVersion1_0 == NVML_NVLINK_VERSION_1_0);
static_assert(n::kNvLinkVersion2_0 == NVML_NVLINK_VERSION_2_0);
static_assert(n::kNvLinkVersion2_2 == NVML_NVLINK_VERSION_2_2);
static_assert(n::kNvLinkVersion3_0 == NVML_NVLINK_VERSION_3_0);
static_assert(n::kNvLinkVersion3_1 == NVML_NVLINK_VERSION_3_1);
static_assert(n::kNvLinkVersion4_0 == NVML_NVLINK_VERSION_4_0);
static_assert(n::kNvLinkVersion5_0 == NVML_NVLINK_VERSION_5_0);
#else
#define GPUVS_ABI_CHECKED_NVLINK_VERSIONS 0
#endif

// nvmlUtilization_t
static_assert(sizeof(nvmlUtilization_t) == sizeof(n::RawUtilization));
static_assert(offsetof(nvmlUtilization_t, gpu) == offsetof(n::RawUtilization, gpu));
static_assert(offsetof(nvmlUtilization_t, memory) == offsetof(n::RawUtilization, memory));

// GPM (NVML 12.0 and newer headers; NVML_GPM_SUPPORT_VERSION marks them).
#ifdef NVML_GPM_SUPPORT_VERSION
#define GPUVS_ABI_CHECKED_GPM 1
static_assert(sizeof(nvmlGpmSample_t) == sizeof(n::GpmSampleHandle));
static_assert(sizeof(nvmlGpmSupport_t) == sizeof(n::RawGpmSupport));
static_assert(offsetof(nvmlGpmSupport_t, version) == offsetof(n::RawGpmSupport, version));
static_assert(offsetof(nvmlGpmSupport_t, isSupportedDevice) ==
              offsetof(n::RawGpmSupport, isSupportedDevice));
static_assert(n::kGpmSupportVersion == NVML_GPM_SUPPORT_VERSION);
static_assert(n::kGpmMetricsGetVersion == NVML_GPM_METRICS_GET_VERSION);
static_assert(n::kGpmMetricGraphicsUtil == NVML_GPM_METRIC_GRAPHICS_UTIL);
static_assert(n::kGpmMetricSmUtil == NVML_GPM_METRIC_SM_UTIL);
static_assert(n::kGpmMetricSmOccupancy == NVML_GPM_METRIC_SM_OCCUPANCY);
static_assert(n::kGpmMetricAnyTensorUtil == NVML_GPM_METRIC_ANY_TENSOR_UTIL);
static_assert(n::kGpmMetricDramBwUtil == NVML_GPM_METRIC_DRAM_BW_UTIL);
static_assert(n::kGpmMetricFp64Util == NVML_GPM_METRIC_FP64_UTIL);
static_assert(n::kGpmMetricFp32Util == NVML_GPM_METRIC_FP32_UTIL);
static_assert(n::kGpmMetricFp16Util == NVML_GPM_METRIC_FP16_UTIL);
static_assert(n::kGpmMetricPcieTxPerSec == NVML_GPM_METRIC_PCIE_TX_PER_SEC);
static_assert(n::kGpmMetricPcieRxPerSec == NVML_GPM_METRIC_PCIE_RX_PER_SEC);
static_assert(n::kGpmMetricNvlinkTotalRxPerSec == NVML_GPM_METRIC_NVLINK_TOTAL_RX_PER_SEC);
static_assert(n::kGpmMetricNvlinkTotalTxPerSec == NVML_GPM_METRIC_NVLINK_TOTAL_TX_PER_SEC);
// nvmlGpmMetric_t
static_assert(sizeof(nvmlGpmMetric_t) == sizeof(n::RawGpmMetric));
static_assert(alignof(nvmlGpmMetric_t) == alignof(n::RawGpmMetric));
static_assert(offsetof(nvmlGpmMetric_t, metricId) == offsetof(n::RawGpmMetric, metricId));
static_assert(offsetof(nvmlGpmMetric_t, nvmlReturn) == offsetof(n::RawGpmMetric, nvmlReturn));
static_assert(offsetof(nvmlGpmMetric_t, value) == offsetof(n::RawGpmMetric, value));
static_assert(offsetof(nvmlGpmMetric_t, metricInfo) == offsetof(n::RawGpmMetric, metricInfo));
static_assert(sizeof(nvmlGpmMetric_t::metricInfo) == sizeof(n::RawGpmMetric::metricInfo));
// nvmlGpmMetricsGet_t: the same head; our array at least as long as this header's
// (NVML touches only numMetrics entries, so a longer array is harmless).
static_assert(offsetof(nvmlGpmMetricsGet_t, version) == offsetof(n::RawGpmMetricsGet, version));
static_assert(offsetof(nvmlGpmMetricsGet_t, numMetrics) ==
              offsetof(n::RawGpmMetricsGet, numMetrics));
static_assert(offsetof(nvmlGpmMetricsGet_t, sample1) == offsetof(n::RawGpmMetricsGet, sample1));
static_assert(offsetof(nvmlGpmMetricsGet_t, sample2) == offsetof(n::RawGpmMetricsGet, sample2));
static_assert(offsetof(nvmlGpmMetricsGet_t, metrics) == offsetof(n::RawGpmMetricsGet, metrics));
static_assert(n::kGpmMetricCapacity >= NVML_GPM_METRIC_MAX);
#else
#define GPUVS_ABI_CHECKED_GPM 0
#endif

// Health counters and events (gpuvs check). The remapper histogram and the MIG
// fields of nvmlEventData_t arrived with NVML 11 (CUDA 11) headers.
static_assert(sizeof(nvmlMemoryErrorType_t) == sizeof(n::MemoryErrorType));
static_assert(n::kMemoryErrorCorrected == NVML_MEMORY_ERROR_TYPE_CORRECTED);
static_assert(n::kMemoryErrorUncorrected == NVML_MEMORY_ERROR_TYPE_UNCORRECTED);
static_assert(sizeof(nvmlEccCounterType_t) == sizeof(n::EccCounterType));
static_assert(n::kVolatileEcc == NVML_VOLATILE_ECC);
static_assert(n::kAggregateEcc == NVML_AGGREGATE_ECC);
static_assert(sizeof(nvmlPageRetirementCause_t) == sizeof(n::PageRetirementCause));
static_assert(n::kRetiredMultipleSingleBit ==
              NVML_PAGE_RETIREMENT_CAUSE_MULTIPLE_SINGLE_BIT_ECC_ERRORS);
static_assert(n::kRetiredDoubleBit == NVML_PAGE_RETIREMENT_CAUSE_DOUBLE_BIT_ECC_ERROR);
static_assert(sizeof(nvmlNvLinkErrorCounter_t) == sizeof(n::NvLinkErrorCounter));
static_assert(n::kNvLinkErrorDlReplay == NVML_NVLINK_ERROR_DL_REPLAY);
static_assert(n::kNvLinkErrorDlRecovery == NVML_NVLINK_ERROR_DL_RECOVERY);
static_assert(n::kNvLinkErrorDlCrcFlit == NVML_NVLINK_ERROR_DL_CRC_FLIT);
static_assert(n::kNvLinkErrorDlCrcData == NVML_NVLINK_ERROR_DL_CRC_DATA);
static_assert(sizeof(nvmlTemperatureThresholds_t) == sizeof(n::TemperatureThreshold));
static_assert(n::kTemperatureThresholdShutdown == NVML_TEMPERATURE_THRESHOLD_SHUTDOWN);
static_assert(n::kTemperatureThresholdSlowdown == NVML_TEMPERATURE_THRESHOLD_SLOWDOWN);
static_assert(n::kTemperatureThresholdMemMax == NVML_TEMPERATURE_THRESHOLD_MEM_MAX);
static_assert(n::kTemperatureThresholdGpuMax == NVML_TEMPERATURE_THRESHOLD_GPU_MAX);
static_assert(sizeof(nvmlEventSet_t) == sizeof(n::EventSetHandle));
static_assert(n::kEventTypeXidCriticalError ==
              static_cast<unsigned long long>(nvmlEventTypeXidCriticalError));
#if NVML_API_VERSION >= 11
#define GPUVS_ABI_CHECKED_HEALTH 1
static_assert(sizeof(nvmlRowRemapperHistogramValues_t) == sizeof(n::RawRowRemapperHistogram));
static_assert(offsetof(nvmlRowRemapperHistogramValues_t, max) ==
              offsetof(n::RawRowRemapperHistogram, max));
static_assert(offsetof(nvmlRowRemapperHistogramValues_t, high) ==
              offsetof(n::RawRowRemapperHistogram, high));
static_assert(offsetof(nvmlRowRemapperHistogramValues_t, partial) ==
              offsetof(n::RawRowRemapperHistogram, partial));
static_assert(offsetof(nvmlRowRemapperHistogramValues_t, low) ==
              offsetof(n::RawRowRemapperHistogram, low));
static_assert(offsetof(nvmlRowRemapperHistogramValues_t, none) ==
              offsetof(n::RawRowRemapperHistogram, none));
static_assert(sizeof(nvmlEventData_t) == sizeof(n::RawEventData));
static_assert(offsetof(nvmlEventData_t, device) == offsetof(n::RawEventData, device));
static_assert(offsetof(nvmlEventData_t, eventType) == offsetof(n::RawEventData, eventType));
static_assert(offsetof(nvmlEventData_t, eventData) == offsetof(n::RawEventData, eventData));
static_assert(offsetof(nvmlEventData_t, gpuInstanceId) == offsetof(n::RawEventData, gpuInstanceId));
static_assert(offsetof(nvmlEventData_t, computeInstanceId) ==
              offsetof(n::RawEventData, computeInstanceId));
#else
#define GPUVS_ABI_CHECKED_HEALTH 0
#endif

// Our scan must reach every link the header knows of.
static_assert(n::kNvLinkScanLimit >= NVML_NVLINK_MAX_LINKS);

TEST(NvmlAbi, MirrorsMatchNvmlHeader) {
  // The static_asserts above are the test; this records which header was checked.
  RecordProperty("nvml_api_version", NVML_API_VERSION);
  RecordProperty("nvlink_versions_checked", GPUVS_ABI_CHECKED_NVLINK_VERSIONS);
  RecordProperty("temperature_v_checked", GPUVS_ABI_CHECKED_TEMPERATURE_V);
  RecordProperty("gpm_checked", GPUVS_ABI_CHECKED_GPM);
  RecordProperty("health_checked", GPUVS_ABI_CHECKED_HEALTH);
  EXPECT_EQ(sizeof(nvmlPciInfo_t), 68u);
}
