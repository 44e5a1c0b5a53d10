// The device probe and the clock sampler against a real GPU. Without a GPU the probe
// tests skip; the library-version and no-GPU-error tests run everywhere, since they
// need only the CUDA libraries this binary links.
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <regex>
#include <string>
#include <thread>

#include "core/error.h"
#include "gpu/clock_sampler.h"
#include "gpu/nvml.h"
#include "gpu/probe.h"

namespace gpuvs {
namespace {

// The number of visible GPUs, or 0 with the reason in `why`.
int visible_gpus(std::string& why) {
  int count = 0;
  if (cudaError_t e = cudaGetDeviceCount(&count); e != cudaSuccess) {
    cudaGetLastError();
    why = std::string("no GPU: cudaGetDeviceCount: ") + cudaGetErrorString(e);
    return 0;
  }
  if (count == 0) why = "no GPU: cudaGetDeviceCount reports 0 devices";
  return count;
}

#define SKIP_WITHOUT_GPU()                             \
  do {                                                 \
    std::string why_;                                  \
    if (visible_gpus(why_) == 0) GTEST_SKIP() << why_; \
  } while (0)

bool matches(const std::string& text, const char* pattern) {
  return std::regex_match(text, std::regex(pattern));
}

TEST(CudaDeviceCount, MatchesRuntimeOrThrowsOneClearLine) {
  std::string why;
  const int expected = visible_gpus(why);
  if (expected > 0) {
    EXPECT_EQ(cuda_device_count(), expected);
    return;
  }
  try {
    cuda_device_count();
    FAIL() << "expected CannotRunError";
  } catch (const CannotRunError& e) {
    const std::string msg = e.what();
    EXPECT_EQ(e.code(), ExitCode::kCannotRun);
    EXPECT_EQ(msg.rfind("no NVIDIA GPU found: CUDA reports ", 0), 0u) << msg;
    EXPECT_NE(msg.find("CUDA_VISIBLE_DEVICES"), std::string::npos) << msg;
    EXPECT_EQ(msg.find('\n'), std::string::npos) << msg;
  }
}

TEST(ProbeLibraries, VersionsReadWithoutAGpu) {
  const SystemInfo sys = probe_host_and_libraries();
  EXPECT_FALSE(sys.os.empty());
  EXPECT_TRUE(sys.gpus.empty());
  ASSERT_TRUE(sys.cuda_runtime_version.has_value());
  EXPECT_TRUE(matches(*sys.cuda_runtime_version, R"(\d+\.\d+)")) << *sys.cuda_runtime_version;
  for (const auto* v : {&sys.cublas_version, &sys.cudnn_version, &sys.nccl_version}) {
    ASSERT_TRUE(v->has_value());
    EXPECT_TRUE(matches(**v, R"(\d+\.\d+\.\d+)")) << **v;
  }
  if (sys.cuda_driver_version) {
    EXPECT_TRUE(matches(*sys.cuda_driver_version, R"(\d+\.\d+)")) << *sys.cuda_driver_version;
  }
  // NVML's driver version is there exactly when NVML is.
  EXPECT_EQ(sys.driver_version.has_value(), nvml::available()) << nvml::unavailable_reason();
}

TEST(ProbeSystem, EveryGpuHasItsIdentity) {
  SKIP_WITHOUT_GPU();
  const SystemInfo sys = probe_system();
  ASSERT_FALSE(sys.gpus.empty());
  ASSERT_EQ(static_cast<int>(sys.gpus.size()), cuda_device_count());
  for (const GpuInfo& g : sys.gpus) {
    SCOPED_TRACE("GPU " + std::to_string(g.index));
    cudaDeviceProp prop{};
    ASSERT_EQ(cudaGetDeviceProperties(&prop, g.index), cudaSuccess);
    EXPECT_FALSE(g.name.empty());
    EXPECT_EQ(g.name, prop.name);
    EXPECT_EQ(g.compute_capability, std::to_string(prop.major) + "." + std::to_string(prop.minor));
    EXPECT_TRUE(matches(g.uuid, "GPU-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"))
        << g.uuid;
    EXPECT_TRUE(matches(g.pci_bus_id, "[0-9A-F]{8}:[0-9A-F]{2}:[0-9A-F]{2}\\.[0-7]"))
        << g.pci_bus_id;
    EXPECT_GT(g.memory_total_bytes, 0);
    EXPECT_GT(g.l2_bytes, 0);
    EXPECT_GT(g.sm_count, 0);
    EXPECT_EQ(g.sm_count, prop.multiProcessorCount);
    ASSERT_TRUE(g.memory_bus_width_bits.has_value());
    EXPECT_GT(*g.memory_bus_width_bits, 0);
  }
}

TEST(ProbeSystem, NvmlFactsWhereNvmlIsAvailable) {
  SKIP_WITHOUT_GPU();
  if (!nvml::available()) GTEST_SKIP() << nvml::unavailable_reason();
  const SystemInfo sys = probe_system();
  ASSERT_TRUE(sys.driver_version.has_value());
  EXPECT_TRUE(matches(*sys.driver_version, R"(\d+\.\d+(\.\d+)?)")) << *sys.driver_version;
  for (const GpuInfo& g : sys.gpus) {
    SCOPED_TRACE("GPU " + std::to_string(g.index) + " at " + g.pci_bus_id);
    // CUDA and NVML must agree on which board this is.
    const nvml::Device d = nvml::library().device_by_pci_bus_id(g.pci_bus_id);
    ASSERT_TRUE(d.valid());
    if (!g.mig_enabled.value_or(false)) {
      EXPECT_EQ(d.uuid(), g.uuid);
    }
    ASSERT_TRUE(g.pci_device_id.has_value());
    EXPECT_EQ(*g.pci_device_id & 0xffffu, 0x10deu);  // NVIDIA's PCI vendor id
    ASSERT_TRUE(g.sm_clock_mhz && g.sm_clock_max_mhz);
    EXPECT_GE(*g.sm_clock_max_mhz, *g.sm_clock_mhz);
    ASSERT_TRUE(g.mem_clock_mhz && g.mem_clock_max_mhz);
    EXPECT_GE(*g.mem_clock_max_mhz, *g.mem_clock_mhz);
    ASSERT_TRUE(g.pcie_gen_current && g.pcie_gen_max && g.pcie_width_current && g.pcie_width_max);
    EXPECT_GE(*g.pcie_gen_max, *g.pcie_gen_current);
    EXPECT_GE(*g.pcie_width_max, *g.pcie_width_current);
    EXPECT_GT(*g.pcie_width_current, 0);
    if (g.power_limit_w) {
      EXPECT_GT(*g.power_limit_w, 0.0);
    }
    for (size_t i = 0; i < g.nvlinks.size(); ++i) {
      EXPECT_EQ(g.nvlinks[i].link, static_cast<int>(i));
    }
    // Printed so that a person can compare with nvidia-smi -q.
    std::printf(
        "[probe] %s %s cc %s, SM %d/%d MHz, mem %d/%d MHz, PCIe gen %d/%d x%d/%d, "
        "power limit %.0f W, %zu NVLinks\n",
        g.name.c_str(), g.pci_bus_id.c_str(), g.compute_capability.c_str(), *g.sm_clock_mhz,
        *g.sm_clock_max_mhz, *g.mem_clock_mhz, *g.mem_clock_max_mhz, *g.pcie_gen_current,
        *g.pcie_gen_max, *g.pcie_width_current, *g.pcie_width_max, g.power_limit_w.value_or(0.0),
        g.nvlinks.size());
    std::printf("[probe]   ECC %s, MIG %s, VBIOS %s, default power limit %.0f W\n",
                g.ecc_enabled ? (*g.ecc_enabled ? "on" : "off") : "?",
                g.mig_enabled ? (*g.mig_enabled ? "on" : "off") : "?",
                g.vbios_version.value_or("?").c_str(), g.power_default_limit_w.value_or(0.0));
    for (const nvml::NvLink& l : d.nvlinks())
      std::printf("[probe]   NVLink %u active %d raw version %u remote %s\n", l.link, l.active,
                  l.version_raw.value_or(0), l.remote_pci_bus_id.value_or("-").c_str());
  }
}

TEST(ClockSampler, SamplesWhileTheMeasurementRuns) {
  SKIP_WITHOUT_GPU();
  ClockSampler sampler(0, {.interval = std::chrono::milliseconds(10)});
  if (!nvml::available()) {
    EXPECT_FALSE(sampler.active());
    sampler.start();
    EXPECT_EQ(sampler.stop().samples, 0);
    GTEST_SKIP() << nvml::unavailable_reason();
  }
  ASSERT_TRUE(sampler.active()) << sampler.inactive_reason();
  sampler.start();
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  const ClockRecord r = sampler.stop();
  EXPECT_GT(r.samples, 1);
  ASSERT_TRUE(r.sm_mhz_min && r.sm_mhz_median && r.sm_mhz_max);
  EXPECT_LE(*r.sm_mhz_min, *r.sm_mhz_median);
  EXPECT_LE(*r.sm_mhz_median, *r.sm_mhz_max);
  EXPECT_GT(*r.sm_mhz_min, 0);
  EXPECT_TRUE(r.mem_mhz_median.has_value());
  EXPECT_TRUE(r.temperature_c_max.has_value());
  std::printf(
      "[probe] sampler: %d samples, SM %d..%d MHz, power max %.1f W, temp max %d C, "
      "reasons:",
      r.samples, *r.sm_mhz_min, *r.sm_mhz_max, r.power_w_max.value_or(-1),
      r.temperature_c_max.value_or(-1));
  for (const std::string& name : r.throttle_reasons)
    std::printf(" %s", name.c_str());
  std::printf("\n");
}

TEST(ClockSampler, ShortMeasurementStillGetsARecordAndRestarts) {
  SKIP_WITHOUT_GPU();
  if (!nvml::available()) GTEST_SKIP() << nvml::unavailable_reason();
  ClockSampler sampler(0, {.interval = std::chrono::milliseconds(1000)});
  sampler.start();
  EXPECT_THROW(sampler.start(), Error);
  EXPECT_GE(sampler.stop().samples, 2);  // the one at start() and the one at stop()
  sampler.start();                       // restart after stop; the destructor stops this run
}

}  // namespace
}  // namespace gpuvs
