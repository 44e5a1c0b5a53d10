// NVML loader, names and summaries on any machine: no GPU or libnvidia-ml needed. The
// missing-library tests construct their own nvml::Library with a file that does not
// exist, so they behave the same where a real NVML is installed.
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "gpu/clock_sampler.h"
#include "gpu/nvml.h"
#include "gpu/probe.h"

namespace gpuvs {
namespace {

using Names = std::vector<std::string>;

constexpr const char* kMissingLibrary = "/nonexistent/gpuvs-test/libnvidia-ml.so.1";

TEST(ThrottleReasonNames, EmptyMaskHasNoNames) {
  EXPECT_EQ(nvml::throttle_reason_names(0), Names{});
}

TEST(ThrottleReasonNames, EachKnownBit) {
  const std::vector<std::pair<unsigned long long, std::string>> expected = {
      {0x1, "gpu_idle"},
      {0x2, "applications_clocks_setting"},
      {0x4, "sw_power_cap"},
      {0x8, "hw_slowdown"},
      {0x10, "sync_boost"},
      {0x20, "sw_thermal_slowdown"},
      {0x40, "hw_thermal_slowdown"},
      {0x80, "hw_power_brake_slowdown"},
      {0x100, "display_clock_setting"},
  };
  for (const auto& [bit, name] : expected)
    EXPECT_EQ(nvml::throttle_reason_names(bit), Names{name}) << "bit 0x" << std::hex << bit;
}

TEST(ThrottleReasonNames, CombinedMaskInBitOrder) {
  EXPECT_EQ(nvml::throttle_reason_names(0x4 | 0x40 | 0x1),
            (Names{"gpu_idle", "sw_power_cap", "hw_thermal_slowdown"}));
  EXPECT_EQ(nvml::throttle_reason_names(0x1ff).size(), 9u);
}

TEST(ThrottleReasonNames, UnknownBitsAreNamedByValue) {
  EXPECT_EQ(nvml::throttle_reason_names(0x200), Names{"unknown_0x200"});
  EXPECT_EQ(nvml::throttle_reason_names(0x8000000000000000ULL),
            Names{"unknown_0x8000000000000000"});
  EXPECT_EQ(nvml::throttle_reason_names(0x4 | 0x400), (Names{"sw_power_cap", "unknown_0x400"}));
}

TEST(NvLinkGeneration, MapsNvmlEnumToGeneration) {
  EXPECT_EQ(nvml::nvlink_generation(nvml::kNvLinkVersion1_0), 1);
  EXPECT_EQ(nvml::nvlink_generation(nvml::kNvLinkVersion2_2), 2);
  EXPECT_EQ(nvml::nvlink_generation(nvml::kNvLinkVersion3_1), 3);  // A100 reads 5
  EXPECT_EQ(nvml::nvlink_generation(nvml::kNvLinkVersion4_0), 4);
  EXPECT_EQ(nvml::nvlink_generation(nvml::kNvLinkVersion5_0), 5);
  EXPECT_EQ(nvml::nvlink_generation(nvml::kNvLinkVersionInvalid), std::nullopt);
  EXPECT_EQ(nvml::nvlink_generation(100), std::nullopt);
}

TEST(PciBusId, CudaAndNvmlFormsNormaliseToNvmlForm) {
  EXPECT_EQ(nvml::normalize_pci_bus_id("0000:19:00.0"), "00000000:19:00.0");
  EXPECT_EQ(nvml::normalize_pci_bus_id("00000000:19:00.0"), "00000000:19:00.0");
  EXPECT_EQ(nvml::normalize_pci_bus_id("0000:1b:00.0"), "00000000:1B:00.0");
  EXPECT_EQ(nvml::normalize_pci_bus_id("0001:c1:1f.7"), "00000001:C1:1F.7");
  EXPECT_EQ(nvml::normalize_pci_bus_id("19:00.0"), "00000000:19:00.0");     // bus:dev.fn
  EXPECT_EQ(nvml::normalize_pci_bus_id("0000:19:00"), "00000000:19:00.0");  // no function
  EXPECT_EQ(nvml::normalize_pci_bus_id(" 0000:19:00.0\n"), "00000000:19:00.0");
  EXPECT_EQ(nvml::normalize_pci_bus_id(std::string("0000:19:00.0\0\0", 14)), "00000000:19:00.0");
  EXPECT_EQ(nvml::normalize_pci_bus_id("ABCD1234:ff:1f.7"), "ABCD1234:FF:1F.7");
}

TEST(PciBusId, RejectsWhatIsNotABusId) {
  for (const char* bad :
       {"", "gpu0", "19:00", "0000:1g:00.0", "0000:19:20.0", "0000:19:00.8", "123456789:19:00.0",
        "0000:100:00.0", ":19:00.0", "0000:19:00.", "0:0000:19:00.0", "0000:19:00.0.1"}) {
    EXPECT_EQ(nvml::normalize_pci_bus_id(bad), std::nullopt) << '"' << bad << '"';
  }
}

TEST(PciBusId, SameComparesAcrossFormsAndCase) {
  EXPECT_TRUE(nvml::same_pci_bus_id("0000:1b:00.0", "00000000:1B:00.0"));
  EXPECT_FALSE(nvml::same_pci_bus_id("0000:1b:00.0", "0000:1c:00.0"));
  EXPECT_FALSE(nvml::same_pci_bus_id("0001:1b:00.0", "0000:1b:00.0"));
  EXPECT_FALSE(nvml::same_pci_bus_id("garbage", "garbage"));
}

// Every getter of an invalid Device answers nullopt (and does not crash).
void expect_device_silent(const nvml::Device& d) {
  EXPECT_FALSE(d.valid());
  EXPECT_EQ(d.name(), std::nullopt);
  EXPECT_EQ(d.uuid(), std::nullopt);
  EXPECT_FALSE(d.pci_info().has_value());
  EXPECT_EQ(d.clock_mhz(nvml::kClockSm), std::nullopt);
  EXPECT_EQ(d.clock_mhz(nvml::kClockMem), std::nullopt);
  EXPECT_EQ(d.max_clock_mhz(nvml::kClockSm), std::nullopt);
  EXPECT_EQ(d.max_clock_mhz(nvml::kClockMem), std::nullopt);
  EXPECT_EQ(d.power_limit_w(), std::nullopt);
  EXPECT_EQ(d.power_default_limit_w(), std::nullopt);
  EXPECT_EQ(d.pcie_gen_current(), std::nullopt);
  EXPECT_EQ(d.pcie_gen_max(), std::nullopt);
  EXPECT_EQ(d.pcie_width_current(), std::nullopt);
  EXPECT_EQ(d.pcie_width_max(), std::nullopt);
  EXPECT_EQ(d.ecc_enabled(), std::nullopt);
  EXPECT_EQ(d.mig_enabled(), std::nullopt);
  EXPECT_EQ(d.vbios_version(), std::nullopt);
  EXPECT_TRUE(d.nvlinks().empty());
  EXPECT_EQ(d.power_usage_mw(), std::nullopt);
  EXPECT_EQ(d.total_energy_mj(), std::nullopt);
  EXPECT_EQ(d.temperature_c(), std::nullopt);
  EXPECT_EQ(d.clock_event_reasons(), std::nullopt);
}

TEST(NvmlLibrary, MissingFileIsUnavailableWithReason) {
  nvml::Library lib({kMissingLibrary});
  EXPECT_FALSE(lib.available());
  EXPECT_NE(lib.unavailable_reason().find(kMissingLibrary), std::string::npos)
      << lib.unavailable_reason();
  EXPECT_NE(lib.unavailable_reason().find("not found"), std::string::npos);
  EXPECT_EQ(lib.unavailable_reason().find('\n'), std::string::npos);
  EXPECT_EQ(lib.device_count(), std::nullopt);
  EXPECT_EQ(lib.driver_version(), std::nullopt);
  EXPECT_EQ(lib.cuda_driver_version(), std::nullopt);
  expect_device_silent(lib.device_by_index(0));
  expect_device_silent(lib.device_by_pci_bus_id("0000:19:00.0"));
}

TEST(NvmlLibrary, ReasonNamesTheFirstCandidate) {
  nvml::Library lib({kMissingLibrary, "/nonexistent/gpuvs-test/libnvidia-ml.so"});
  EXPECT_FALSE(lib.available());
  EXPECT_EQ(lib.unavailable_reason().rfind(std::string(kMissingLibrary) + " not found: ", 0), 0u)
      << lib.unavailable_reason();
}

TEST(NvmlLibrary, LibraryWithoutNvmlSymbolsIsUnavailable) {
  // libc loads fine but has no nvmlInit_v2: the loader must say so, not crash.
  nvml::Library lib({"libc.so.6"});
  EXPECT_FALSE(lib.available());
  EXPECT_NE(lib.unavailable_reason().find("nvmlInit_v2 not found in libc.so.6"), std::string::npos)
      << lib.unavailable_reason();
  expect_device_silent(lib.device_by_index(0));
}

TEST(NvmlLibrary, NoCandidatesIsUnavailable) {
  nvml::Library lib(std::vector<std::string>{});
  EXPECT_FALSE(lib.available());
  EXPECT_FALSE(lib.unavailable_reason().empty());
}

TEST(NvmlLibrary, DefaultCandidatesStartWithTheRuntimeSoname) {
  const std::vector<std::string> names = nvml::default_library_candidates();
  ASSERT_FALSE(names.empty());
  EXPECT_EQ(names.front(), "libnvidia-ml.so.1");
}

TEST(NvmlDevice, DefaultDeviceAnswersNothing) {
  expect_device_silent(nvml::Device{});
}

// The only test in this binary that touches the process-wide library: it is loaded
// once, so the override must be in the environment before the first use.
TEST(NvmlLibrary, ProcessWideHonoursEnvironmentOverride) {
  ASSERT_EQ(setenv("GPUVS_NVML_LIBRARY", kMissingLibrary, 1), 0);
  EXPECT_FALSE(nvml::available());
  EXPECT_NE(nvml::unavailable_reason().find(kMissingLibrary), std::string::npos)
      << nvml::unavailable_reason();
  EXPECT_EQ(nvml::library().driver_version(), std::nullopt);
  // Read once: a later change of the variable does not reload.
  ASSERT_EQ(setenv("GPUVS_NVML_LIBRARY", "libc.so.6", 1), 0);
  EXPECT_NE(nvml::unavailable_reason().find(kMissingLibrary), std::string::npos);
}

TEST(ClockSampler, WithoutNvmlRecordsNothing) {
  nvml::Library missing({kMissingLibrary});
  ClockSampler sampler(0, {.interval = std::chrono::milliseconds(1), .library = &missing});
  EXPECT_FALSE(sampler.active());
  EXPECT_NE(sampler.inactive_reason().find("NVML unavailable"), std::string::npos)
      << sampler.inactive_reason();
  sampler.start();
  const ClockRecord r = sampler.stop();
  EXPECT_EQ(r.samples, 0);
  EXPECT_EQ(r.sm_mhz_min, std::nullopt);
  EXPECT_EQ(r.sm_mhz_median, std::nullopt);
  EXPECT_EQ(r.sm_mhz_max, std::nullopt);
  EXPECT_EQ(r.mem_mhz_median, std::nullopt);
  EXPECT_EQ(r.power_w_max, std::nullopt);
  EXPECT_EQ(r.temperature_c_max, std::nullopt);
  EXPECT_TRUE(r.throttle_reasons.empty());
}

TEST(ClockSampler, StopWithoutStartIsEmpty) {
  nvml::Library missing({kMissingLibrary});
  ClockSampler sampler(0, {.library = &missing});
  EXPECT_EQ(sampler.stop().samples, 0);
  // A sampler may be destroyed without ever being started, or started again.
  sampler.start();
  sampler.start();
}

TEST(SummarizeClockSamples, EmptyGivesEmptyRecord) {
  const ClockRecord r = summarize_clock_samples({});
  EXPECT_EQ(r.samples, 0);
  EXPECT_EQ(r.sm_mhz_median, std::nullopt);
  EXPECT_TRUE(r.throttle_reasons.empty());
}

TEST(SummarizeClockSamples, MinMedianMaxAndUnion) {
  std::vector<ClockSample> s(3);
  s[0] = {
      .sm_mhz = 1980, .mem_mhz = 3201, .power_w = 120.5, .temperature_c = 40, .throttle_mask = 0x1};
  s[1] = {.sm_mhz = 1755,
          .mem_mhz = 3201,
          .power_w = 690.25,
          .temperature_c = 61,
          .throttle_mask = 0x4};
  s[2] = {.sm_mhz = 1830,
          .mem_mhz = 2619,
          .power_w = 700.0,
          .temperature_c = 58,
          .throttle_mask = 0x4 | 0x40};
  s[0].throttle_mask = 0x0;  // busy, unthrottled
  const ClockRecord r = summarize_clock_samples(s);
  EXPECT_EQ(r.samples, 3);
  EXPECT_EQ(r.sm_mhz_min, 1755);
  EXPECT_EQ(r.sm_mhz_median, 1830);
  EXPECT_EQ(r.sm_mhz_max, 1980);
  EXPECT_EQ(r.mem_mhz_median, 3201);
  EXPECT_DOUBLE_EQ(r.power_w_max.value(), 700.0);
  EXPECT_EQ(r.temperature_c_max, 61);
  EXPECT_EQ(r.throttle_reasons, (Names{"sw_power_cap", "hw_thermal_slowdown"}));
}

TEST(SummarizeClockSamples, IdleSamplesAreDroppedWhenTheGpuWasBusy) {
  std::vector<ClockSample> s(3);
  const auto sample = [](int mhz, double watts, unsigned long long mask) {
    ClockSample c;
    c.sm_mhz = mhz;
    c.power_w = watts;
    c.throttle_mask = mask;
    return c;
  };
  s[0] = sample(345, 75.0, 0x1);  // before the work began
  s[1] = sample(1980, 400.0, 0x0);
  s[2] = sample(1965, 410.0, 0x0);
  const ClockRecord r = summarize_clock_samples(s);
  EXPECT_EQ(r.samples, 2);
  EXPECT_EQ(r.sm_mhz_min, 1965);
  EXPECT_TRUE(r.throttle_reasons.empty());

  // All idle: nothing to drop, the record says so.
  const std::vector<ClockSample> idle = {s[0], s[0]};
  const ClockRecord ri = summarize_clock_samples(idle);
  EXPECT_EQ(ri.samples, 2);
  EXPECT_EQ(ri.sm_mhz_min, 345);
  EXPECT_EQ(ri.throttle_reasons, (Names{"gpu_idle"}));
}

TEST(SummarizeClockSamples, EvenCountMedianIsRoundedMeanAndGapsAreSkipped) {
  std::vector<ClockSample> s(5);
  s[0].sm_mhz = 1000;
  s[1].sm_mhz = 1001;
  s[2].sm_mhz = 1500;
  s[3].sm_mhz = 1600;
  s[4].power_w = 10.0;  // a poll where only power answered
  const ClockRecord r = summarize_clock_samples(s);
  EXPECT_EQ(r.samples, 5);
  EXPECT_EQ(r.sm_mhz_median, 1251);  // (1001 + 1500) / 2 = 1250.5, rounded away from zero
  EXPECT_EQ(r.mem_mhz_median, std::nullopt);
  EXPECT_EQ(r.temperature_c_max, std::nullopt);
  EXPECT_DOUBLE_EQ(r.power_w_max.value(), 10.0);
  EXPECT_TRUE(r.throttle_reasons.empty());
}

TEST(VersionStrings, CudaCudnnNccl) {
  EXPECT_EQ(cuda_version_string(13000), "13.0");
  EXPECT_EQ(cuda_version_string(12080), "12.8");
  EXPECT_EQ(cudnn_version_string(91400), "9.14.0");
  EXPECT_EQ(cudnn_version_string(90001), "9.0.1");
  EXPECT_EQ(cudnn_version_string(8907), "8.9.7");
  EXPECT_EQ(nccl_version_string(22803), "2.28.3");
  EXPECT_EQ(nccl_version_string(21805), "2.18.5");
  EXPECT_EQ(nccl_version_string(2708), "2.7.8");
}

TEST(GpuUuid, FormatsLikeNvidiaSmi) {
  const std::array<unsigned char, 16> bytes = {0x8f, 0x3a, 0x00, 0x01, 0xab, 0xcd, 0x12, 0x34,
                                               0x56, 0x78, 0x9a, 0xbc, 0xde, 0xf0, 0xff, 0x0e};
  EXPECT_EQ(format_gpu_uuid(bytes), "GPU-8f3a0001-abcd-1234-5678-9abcdef0ff0e");
}

}  // namespace
}  // namespace gpuvs
