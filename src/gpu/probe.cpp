// The device probe. Compiled by the host compiler against the CUDA, cuBLAS, cuDNN and
// NCCL headers; NVML comes through gpu/nvml.h (dlopen), never nvml.h.
#include "gpu/probe.h"

#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <cudnn.h>
#include <fmt/format.h>
#include <nccl.h>

#include <cstdlib>
#include <cstring>

#include "core/error.h"
#include "core/host.h"
#include "gpu/check.h"
#include "gpu/nvml.h"

namespace gpuvs {

namespace {

std::string visible_devices_note() {
  const char* v = std::getenv("CUDA_VISIBLE_DEVICES");
  if (v == nullptr) return "CUDA_VISIBLE_DEVICES is not set";
  return fmt::format("CUDA_VISIBLE_DEVICES=\"{}\"", v);
}

[[noreturn]] void throw_no_gpu(const std::string& what) {
  throw CannotRunError(
      fmt::format("no NVIDIA GPU found: CUDA reports {} (is the NVIDIA driver installed and a GPU "
                  "visible? {})",
                  what, visible_devices_note()));
}

std::optional<std::string> cublas_version() {
  int major = 0;
  int minor = 0;
  int patch = 0;
  if (cublasGetProperty(MAJOR_VERSION, &major) != CUBLAS_STATUS_SUCCESS ||
      cublasGetProperty(MINOR_VERSION, &minor) != CUBLAS_STATUS_SUCCESS ||
      cublasGetProperty(PATCH_LEVEL, &patch) != CUBLAS_STATUS_SUCCESS)
    return std::nullopt;
  return fmt::format("{}.{}.{}", major, minor, patch);
}

// Fills the GpuInfo fields that only NVML knows; leaves them nullopt where it is silent.
void add_nvml_facts(const nvml::Device& d, GpuInfo& gpu) {
  if (std::optional<nvml::PciInfo> pci = d.pci_info()) gpu.pci_device_id = pci->pci_device_id;
  gpu.sm_clock_mhz = d.clock_mhz(nvml::kClockSm);
  gpu.sm_clock_max_mhz = d.max_clock_mhz(nvml::kClockSm);
  gpu.mem_clock_mhz = d.clock_mhz(nvml::kClockMem);
  gpu.mem_clock_max_mhz = d.max_clock_mhz(nvml::kClockMem);
  gpu.power_limit_w = d.power_limit_w();
  gpu.power_default_limit_w = d.power_default_limit_w();
  gpu.pcie_gen_current = d.pcie_gen_current();
  gpu.pcie_gen_max = d.pcie_gen_max();
  gpu.pcie_width_current = d.pcie_width_current();
  gpu.pcie_width_max = d.pcie_width_max();
  gpu.ecc_enabled = d.ecc_enabled();
  gpu.mig_enabled = d.mig_enabled();
  gpu.vbios_version = d.vbios_version();
  for (const nvml::NvLink& link : d.nvlinks()) {
    NvLinkInfo info;
    info.link = static_cast<int>(link.link);
    info.active = link.active;
    if (link.version_raw) info.version = nvml::nvlink_generation(*link.version_raw);
    info.remote_pci_bus_id = link.remote_pci_bus_id;
    gpu.nvlinks.push_back(std::move(info));
  }
}

}  // namespace

std::string cuda_version_string(int version) {
  return fmt::format("{}.{}", version / 1000, (version % 1000) / 10);
}

std::string cudnn_version_string(long long version) {
  // cuDNN 9 changed the encoding from major*1000 to major*10000.
  if (version >= 90000)
    return fmt::format("{}.{}.{}", version / 10000, (version % 10000) / 100, version % 100);
  return fmt::format("{}.{}.{}", version / 1000, (version % 1000) / 100, version % 100);
}

std::string nccl_version_string(int version) {
  // NCCL 2.9 changed the encoding from major*1000 to major*10000.
  if (version >= 10000)
    return fmt::format("{}.{}.{}", version / 10000, (version % 10000) / 100, version % 100);
  return fmt::format("{}.{}.{}", version / 1000, (version % 1000) / 100, version % 100);
}

std::string format_gpu_uuid(const std::array<unsigned char, 16>& b) {
  return fmt::format(
      "GPU-{:02x}{:02x}{:02x}{:02x}-{:02x}{:02x}-{:02x}{:02x}-{:02x}{:02x}-"
      "{:02x}{:02x}{:02x}{:02x}{:02x}{:02x}",
      b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13], b[14],
      b[15]);
}

int cuda_device_count() {
  int count = 0;
  if (cudaError_t e = cudaGetDeviceCount(&count); e != cudaSuccess) {
    cudaGetLastError();  // leave no stale error for a later launch check
    throw_no_gpu(cudaGetErrorString(e));
  }
  if (count <= 0) throw_no_gpu("0 devices");
  return count;
}

GpuInfo probe_gpu(int cuda_device) {
  cudaDeviceProp prop{};
  GPUVS_CUDA_CHECK(cudaGetDeviceProperties(&prop, cuda_device));
  char bus_id[nvml::kPciBusIdBufferSize] = {};
  GPUVS_CUDA_CHECK(cudaDeviceGetPCIBusId(bus_id, sizeof bus_id, cuda_device));

  GpuInfo gpu;
  gpu.index = cuda_device;
  gpu.name = std::string(prop.name, strnlen(prop.name, sizeof prop.name));
  std::array<unsigned char, 16> uuid{};
  static_assert(sizeof prop.uuid.bytes == 16);
  std::memcpy(uuid.data(), prop.uuid.bytes, uuid.size());
  gpu.uuid = format_gpu_uuid(uuid);
  // Stored as NVML prints it so that run files from either source compare equal.
  gpu.pci_bus_id = nvml::normalize_pci_bus_id(bus_id).value_or(bus_id);
  gpu.compute_capability = fmt::format("{}.{}", prop.major, prop.minor);
  gpu.sm_count = prop.multiProcessorCount;
  gpu.memory_total_bytes = static_cast<int64_t>(prop.totalGlobalMem);
  gpu.l2_bytes = prop.l2CacheSize;
  if (prop.memoryBusWidth > 0) gpu.memory_bus_width_bits = prop.memoryBusWidth;

  const nvml::Library& lib = nvml::library();
  if (lib.available()) add_nvml_facts(lib.device_by_pci_bus_id(bus_id), gpu);
  return gpu;
}

SystemInfo probe_host_and_libraries() {
  SystemInfo sys;
  sys.os = host_os();
  sys.cpu = host_cpu();
  sys.driver_version = nvml::library().driver_version();

  // Both answer without a GPU; the driver one answers 0 when there is no driver.
  if (int v = 0; cudaDriverGetVersion(&v) == cudaSuccess && v > 0)
    sys.cuda_driver_version = cuda_version_string(v);
  if (int v = 0; cudaRuntimeGetVersion(&v) == cudaSuccess && v > 0)
    sys.cuda_runtime_version = cuda_version_string(v);
  cudaGetLastError();

  sys.cublas_version = cublas_version();
  if (size_t v = cudnnGetVersion(); v > 0)
    sys.cudnn_version = cudnn_version_string(static_cast<long long>(v));
  if (int v = 0; ncclGetVersion(&v) == ncclSuccess && v > 0)
    sys.nccl_version = nccl_version_string(v);
  return sys;
}

SystemInfo probe_system() {
  const int count = cuda_device_count();
  SystemInfo sys = probe_host_and_libraries();
  for (int i = 0; i < count; ++i)
    sys.gpus.push_back(probe_gpu(i));
  return sys;
}

}  // namespace gpuvs
