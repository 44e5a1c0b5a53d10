// A scripted NVML for the CPU tests: a shared library exporting the NVML entry points
// that `gpuvs check --level 1` resolves, answering from a JSON script named by the
// environment variable GPUVS_FAKE_NVML_SCRIPT. The tests run the real gpuvs binary
// with GPUVS_NVML_LIBRARY pointing here (src/gpu/nvml.cpp's override).
//
// Script (every key optional; a missing one answers NVML_ERROR_NOT_SUPPORTED):
//   {"driver_version": "580.95.05", "cuda_driver_version": 13000,
//    "gpus": [{"name", "uuid", "pci_bus_id", "ecc_mode", "mig_mode", "persistence_mode",
//              "power_limit_mw", "power_default_limit_mw", "pcie_gen", "pcie_gen_max",
//              "pcie_width", "pcie_width_max", "pcie_replay", "temperature",
//              "temperature_slowdown", "temperature_gpu_max", "clock_event_reasons",
//              "ecc": {"corrected_volatile", "corrected_aggregate", "uncorrected_volatile",
//                      "uncorrected_aggregate"},
//              "retired_pages": {"sbe", "dbe", "pending"},
//              "remapped_rows": {"corrected", "uncorrected", "pending", "failure"},
//              "histogram": {"max", "high", "partial", "low", "none"},
//              "nvlinks": [{"active", "replay", "recovery", "crc_flit", "crc_data"}],
//              "xids": [79]}]}
// A number may be given as an array: successive reads return its entries in turn, the
// last one repeating (a counter that rises between gpuvs's two readings). The Xids
// are delivered, in order, by nvmlEventSetWait_v2 to a set the GPU is registered in;
// after them a wait sleeps its timeout and answers NVML_ERROR_TIMEOUT.
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <string>
#include <thread>
#include <vector>

namespace {

using json = nlohmann::json;

constexpr int kSuccess = 0;
constexpr int kInvalidArgument = 2;
constexpr int kNotSupported = 3;
constexpr int kDriverNotLoaded = 9;
constexpr int kTimeout = 10;
constexpr int kInsufficientSize = 7;
constexpr unsigned long long kXidEvent = 0x8;

struct Gpu {
  json script;
  std::map<std::string, size_t> reads;  // key -> reads so far
  size_t xids_delivered = 0;
};

struct State {
  json script;
  std::vector<Gpu> gpus;
} g_state;

struct EventSet {
  std::vector<int> gpus;
};

Gpu* gpu_of(void* handle) {
  const auto i = reinterpret_cast<uintptr_t>(handle);
  if (i == 0 || i > g_state.gpus.size()) return nullptr;
  return &g_state.gpus[i - 1];
}

void* handle_of(size_t index) {
  return reinterpret_cast<void*>(static_cast<uintptr_t>(index + 1));
}

// The value at `path` ("ecc.corrected_volatile", "nvlinks.3.replay"); an array gives
// its next entry on each read.
const json* lookup(Gpu& gpu, const std::string& path) {
  const json* at = &gpu.script;
  size_t start = 0;
  while (start <= path.size()) {
    const size_t dot = path.find('.', start);
    const std::string part = path.substr(start, dot == std::string::npos ? dot : dot - start);
    if (at->is_array() && !part.empty() && std::isdigit(static_cast<unsigned char>(part[0]))) {
      const size_t i = std::stoul(part);
      if (i >= at->size()) return nullptr;
      at = &(*at)[i];
    } else {
      if (!at->is_object() || !at->contains(part)) return nullptr;
      at = &(*at)[part];
    }
    if (dot == std::string::npos) break;
    start = dot + 1;
  }
  if (at->is_array()) {
    if (at->empty()) return nullptr;
    size_t& n = gpu.reads[path];
    const json* v = &(*at)[std::min(n, at->size() - 1)];
    ++n;
    return v;
  }
  return at;
}

template <class T>
int answer(void* device, const std::string& path, T* out) {
  Gpu* gpu = gpu_of(device);
  if (gpu == nullptr || out == nullptr) return kInvalidArgument;
  const json* v = lookup(*gpu, path);
  if (v == nullptr) return kNotSupported;
  *out = v->get<T>();
  return kSuccess;
}

int answer_text(void* device, const char* key, char* buffer, unsigned int size) {
  Gpu* gpu = gpu_of(device);
  if (gpu == nullptr || buffer == nullptr) return kInvalidArgument;
  const json* v = lookup(*gpu, key);
  if (v == nullptr) return kNotSupported;
  const std::string s = v->get<std::string>();
  if (s.size() + 1 > size) return kInsufficientSize;
  std::memcpy(buffer, s.c_str(), s.size() + 1);
  return kSuccess;
}

// nvmlPciInfo_t's layout (68 bytes), as src/gpu/nvml_types.h mirrors it.
struct PciInfo {
  char busIdLegacy[16];
  unsigned int domain, bus, device, pciDeviceId, pciSubSystemId;
  char busId[32];
};

struct EventData {
  void* device;
  unsigned long long eventType;
  unsigned long long eventData;
  unsigned int gpuInstanceId;
  unsigned int computeInstanceId;
};

}  // namespace

extern "C" {

int nvmlInit_v2() {
  const char* path = std::getenv("GPUVS_FAKE_NVML_SCRIPT");
  if (path == nullptr) return kDriverNotLoaded;
  std::ifstream in(path);
  if (!in) return kDriverNotLoaded;
  g_state = State{};
  g_state.script = json::parse(in, nullptr, false);
  if (g_state.script.is_discarded()) return kDriverNotLoaded;
  if (g_state.script.contains("gpus"))
    for (const json& g : g_state.script["gpus"])
      g_state.gpus.push_back(Gpu{g, {}, 0});
  return kSuccess;
}

int nvmlShutdown() {
  return kSuccess;
}

const char* nvmlErrorString(int code) {
  switch (code) {
    case kSuccess:
      return "Success";
    case kNotSupported:
      return "Not Supported";
    case kTimeout:
      return "Timeout";
    case kDriverNotLoaded:
      return "Driver Not Loaded";
    default:
      return "Unknown Error";
  }
}

int nvmlSystemGetDriverVersion(char* buffer, unsigned int size) {
  if (!g_state.script.contains("driver_version")) return kNotSupported;
  const std::string s = g_state.script["driver_version"].get<std::string>();
  if (s.size() + 1 > size) return kInsufficientSize;
  std::memcpy(buffer, s.c_str(), s.size() + 1);
  return kSuccess;
}

int nvmlSystemGetCudaDriverVersion_v2(int* version) {
  if (!g_state.script.contains("cuda_driver_version")) return kNotSupported;
  *version = g_state.script["cuda_driver_version"].get<int>();
  return kSuccess;
}

int nvmlDeviceGetCount_v2(unsigned int* count) {
  *count = static_cast<unsigned int>(g_state.gpus.size());
  return kSuccess;
}

int nvmlDeviceGetHandleByIndex_v2(unsigned int index, void** device) {
  if (index >= g_state.gpus.size()) return kInvalidArgument;
  *device = handle_of(index);
  return kSuccess;
}

int nvmlDeviceGetName(void* d, char* b, unsigned int n) {
  return answer_text(d, "name", b, n);
}
int nvmlDeviceGetUUID(void* d, char* b, unsigned int n) {
  return answer_text(d, "uuid", b, n);
}

int nvmlDeviceGetPciInfo_v3(void* d, PciInfo* pci) {
  Gpu* gpu = gpu_of(d);
  if (gpu == nullptr || pci == nullptr) return kInvalidArgument;
  const json* v = lookup(*gpu, "pci_bus_id");
  if (v == nullptr) return kNotSupported;
  *pci = PciInfo{};
  const std::string s = v->get<std::string>();
  std::strncpy(pci->busId, s.c_str(), sizeof pci->busId - 1);
  return kSuccess;
}

#define GPUVS_FAKE_UINT(fn, key)     \
  int fn(void* d, unsigned int* v) { \
    return answer(d, key, v);        \
  }
GPUVS_FAKE_UINT(nvmlDeviceGetEnforcedPowerLimit, "power_limit_mw")
GPUVS_FAKE_UINT(nvmlDeviceGetPowerManagementDefaultLimit, "power_default_limit_mw")
GPUVS_FAKE_UINT(nvmlDeviceGetCurrPcieLinkGeneration, "pcie_gen")
GPUVS_FAKE_UINT(nvmlDeviceGetMaxPcieLinkGeneration, "pcie_gen_max")
GPUVS_FAKE_UINT(nvmlDeviceGetCurrPcieLinkWidth, "pcie_width")
GPUVS_FAKE_UINT(nvmlDeviceGetMaxPcieLinkWidth, "pcie_width_max")
GPUVS_FAKE_UINT(nvmlDeviceGetPcieReplayCounter, "pcie_replay")
GPUVS_FAKE_UINT(nvmlDeviceGetPersistenceMode, "persistence_mode")
#undef GPUVS_FAKE_UINT

int nvmlDeviceGetEccMode(void* d, unsigned int* current, unsigned int* pending) {
  const int rc = answer(d, "ecc_mode", current);
  if (rc == kSuccess) *pending = *current;
  return rc;
}

int nvmlDeviceGetMigMode(void* d, unsigned int* current, unsigned int* pending) {
  const int rc = answer(d, "mig_mode", current);
  if (rc == kSuccess) *pending = *current;
  return rc;
}

int nvmlDeviceGetTemperature(void* d, unsigned int /*sensor*/, unsigned int* t) {
  return answer(d, "temperature", t);
}

int nvmlDeviceGetTemperatureThreshold(void* d, unsigned int which, unsigned int* t) {
  // NVML_TEMPERATURE_THRESHOLD_SLOWDOWN = 1, _GPU_MAX = 3.
  if (which == 1) return answer(d, "temperature_slowdown", t);
  if (which == 3) return answer(d, "temperature_gpu_max", t);
  return kNotSupported;
}

int nvmlDeviceGetCurrentClocksEventReasons(void* d, unsigned long long* mask) {
  return answer(d, "clock_event_reasons", mask);
}

int nvmlDeviceGetTotalEccErrors(void* d, unsigned int type, unsigned int counter,
                                unsigned long long* count) {
  const std::string key = std::string("ecc.") + (type == 0 ? "corrected_" : "uncorrected_") +
                          (counter == 0 ? "volatile" : "aggregate");
  return answer(d, key, count);
}

int nvmlDeviceGetRetiredPages(void* d, unsigned int cause, unsigned int* count,
                              unsigned long long* /*addresses*/) {
  return answer(d, cause == 0 ? "retired_pages.sbe" : "retired_pages.dbe", count);
}

int nvmlDeviceGetRetiredPagesPendingStatus(void* d, unsigned int* pending) {
  return answer(d, "retired_pages.pending", pending);
}

int nvmlDeviceGetRemappedRows(void* d, unsigned int* corrected, unsigned int* uncorrected,
                              unsigned int* pending, unsigned int* failure) {
  if (int rc = answer(d, "remapped_rows.corrected", corrected); rc != kSuccess) return rc;
  if (int rc = answer(d, "remapped_rows.uncorrected", uncorrected); rc != kSuccess) return rc;
  if (int rc = answer(d, "remapped_rows.pending", pending); rc != kSuccess) return rc;
  return answer(d, "remapped_rows.failure", failure);
}

int nvmlDeviceGetRowRemapperHistogram(void* d, unsigned int* values) {
  const char* keys[] = {"max", "high", "partial", "low", "none"};
  for (int i = 0; i < 5; ++i)
    if (int rc = answer(d, std::string("histogram.") + keys[i], &values[i]); rc != kSuccess)
      return rc;
  return kSuccess;
}

int nvmlDeviceGetNvLinkState(void* d, unsigned int link, unsigned int* active) {
  Gpu* gpu = gpu_of(d);
  if (gpu == nullptr) return kInvalidArgument;
  if (!gpu->script.contains("nvlinks")) return kNotSupported;
  if (link >= gpu->script["nvlinks"].size()) return kInvalidArgument;
  return answer(d, "nvlinks." + std::to_string(link) + ".active", active);
}

int nvmlDeviceGetNvLinkErrorCounter(void* d, unsigned int link, unsigned int counter,
                                    unsigned long long* value) {
  const char* names[] = {"replay", "recovery", "crc_flit", "crc_data"};
  if (counter > 3) return kNotSupported;
  return answer(d, "nvlinks." + std::to_string(link) + "." + names[counter], value);
}

int nvmlEventSetCreate(EventSet** set) {
  *set = new EventSet;
  return kSuccess;
}

int nvmlEventSetFree(EventSet* set) {
  delete set;
  return kSuccess;
}

int nvmlDeviceRegisterEvents(void* d, unsigned long long types, EventSet* set) {
  const uintptr_t i = reinterpret_cast<uintptr_t>(d);
  if (gpu_of(d) == nullptr || set == nullptr) return kInvalidArgument;
  if ((types & kXidEvent) == 0) return kNotSupported;
  set->gpus.push_back(static_cast<int>(i - 1));
  return kSuccess;
}

int nvmlEventSetWait_v2(EventSet* set, EventData* data, unsigned int timeout_ms) {
  for (int i : set->gpus) {
    Gpu& gpu = g_state.gpus[static_cast<size_t>(i)];
    if (!gpu.script.contains("xids") || gpu.xids_delivered >= gpu.script["xids"].size()) continue;
    *data = EventData{handle_of(static_cast<size_t>(i)), kXidEvent,
                      gpu.script["xids"][gpu.xids_delivered++].get<unsigned long long>(), 0, 0};
    return kSuccess;
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(timeout_ms));
  return kTimeout;
}

}  // extern "C"
