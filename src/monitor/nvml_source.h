// NvmlSource: the monitor's Source on a real machine (docs/monitor.md). One
// GPU per NVML device (NVML index order, unaffected by CUDA_VISIBLE_DEVICES).
//
// Per sample: NVML utilization rates, power, energy since the source's first sample
// of that GPU (the total-energy counter, which counts since the driver loaded), SM
// and memory clocks, temperature and clock-event reasons (nvml::throttle_reason_names)
// at the moment of the call; and, where NVML GPM works (Hopper and newer), GPM
// metrics over the interval since the previous sample of that GPU (the first sample
// has none). PCIe and NVLink rates come from NVML in MiB/s and are given in bytes/s.
//
// Nothing here throws. Missing NVML, GPM unsupported, GPM not permitted, GPM failing
// are each said once in notes() (per GPU where it is per GPU), and the samples carry
// whatever else NVML gave. sample() is for one thread (the sampler's); notes() may be
// called from any thread at the same time.
#pragma once

#include <chrono>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "core/run_file.h"
#include "gpu/nvml.h"
#include "monitor/run_recorder.h"
#include "monitor/sample.h"

namespace gpuvs::monitor {

class NvmlSource : public Source {
 public:
  // `library` must outlive the source.
  explicit NvmlSource(const nvml::Library& library);
  // Only the GPUs at these PCI bus ids (any form CUDA or NVML prints), in this order:
  // source GPU i is pci_bus_ids[i], and notes call it "GPU labels[i]" (e.g. its CUDA
  // ordinal; labels has one entry per bus id). A bus id NVML does not know gives a GPU
  // with no readings and a note.
  NvmlSource(const nvml::Library& library, const std::vector<std::string>& pci_bus_ids,
             const std::vector<int>& labels);

  int gpu_count() const override { return static_cast<int>(gpus_.size()); }
  std::string gpu_name(int gpu) const override;
  GpuIdentity identity(int gpu) const override;
  GpuSample sample(int gpu, double t_s) override;
  std::vector<std::string> notes() const override;

  // True when GPU `gpu` is (still) sampled through GPM.
  bool gpm_active(int gpu) const;

 private:
  struct Gpu {
    nvml::Device device;
    std::string name;
    std::optional<unsigned long long> energy_start_mj;
    bool gpm = false;          // GPM in use for this GPU
    nvml::GpmSample previous;  // the counters at the previous sample
    nvml::GpmSample current;   // the buffer for this sample (swapped with previous)
    bool have_previous = false;
    int label = 0;  // the number notes give it
  };

  void add_gpu(nvml::Device device, int label);

  void note(std::string text);  // adds once
  void disable_gpm(int gpu, const std::string& why);
  void sample_gpm(int gpu, GpuSample& out);

  const nvml::Library* library_;
  std::vector<Gpu> gpus_;
  mutable std::mutex notes_mutex_;
  std::vector<std::string> notes_;
};

// A source over every GPU of the process-wide NVML (nvml::library()). Never throws;
// without NVML it has 0 GPUs and a note saying why.
std::unique_ptr<Source> make_nvml_source();

// A source over the GPUs at `pci_bus_ids` of the process-wide NVML (see the
// constructor above). Never throws; without NVML it has 0 GPUs and a note.
std::unique_ptr<NvmlSource> make_nvml_source(const std::vector<std::string>& pci_bus_ids,
                                             const std::vector<int>& labels);

// A session's recorder over `gpus` (indices into system.gpus, found in NVML by their
// PCI bus id, so CUDA_VISIBLE_DEVICES and CUDA's device order do not matter), not yet
// started. Never throws for a missing NVML (the recorder then samples nothing).
std::unique_ptr<RunRecorder> make_nvml_recorder(const SystemInfo& system,
                                                const std::vector<int>& gpus,
                                                std::chrono::milliseconds interval);

}  // namespace gpuvs::monitor
