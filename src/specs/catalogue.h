// The datasheet catalogue (data/catalogue/gpus.json, embedded in the binary; a file
// may replace it with --catalogue). Every GPU entry has a datasheet URL; a figure
// that comes from elsewhere carries its own source. Values are stored in base SI
// units after loading (the file writes them in readable units: "989 TFLOP/s").
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace gpuvs {

struct Figure {
  double value = 0;      // base SI unit of the metric
  std::string unit;      // that base unit
  std::string source;    // URL; the GPU's datasheet unless the figure names another
  std::string note;      // e.g. "with sparsity", "per direction x2"
};

struct GpuSpec {
  std::string id;                        // "H200-SXM" (stable, what users type)
  std::string name;                      // "NVIDIA H200 SXM 141GB"
  std::vector<std::string> aliases;      // "H200", "H200-SXM-141GB"
  std::vector<std::string> driver_names;  // names the driver reports: "NVIDIA H200"
  std::vector<uint32_t> pci_device_ids;  // device part (high 16 bits of NVML's id): 0x2335
  std::string architecture;              // "Hopper"
  std::string form_factor;               // "SXM5", "PCIe", "NVL", "Superchip"
  std::string memory_type;               // "HBM3e"
  std::optional<int> tensor_core_generation;
  std::optional<int> pcie_generation;
  std::optional<int> nvlink_generation;
  std::string source;                    // datasheet URL
  std::map<std::string, Figure> figures;  // metric id -> figure; sparse as "compute.fp16.sparse"
};

class Catalogue {
 public:
  // The catalogue built into the binary.
  static const Catalogue& builtin();
  // Parse and validate; one-line gpuvs::UsageError naming the file and the field.
  static Catalogue parse(std::string_view text, std::string_view name);
  static Catalogue load(const std::filesystem::path& path);

  const std::vector<GpuSpec>& gpus() const { return gpus_; }

  // By id or alias, case-insensitive, '-', '_' and ' ' equivalent. nullptr if none.
  const GpuSpec* find(std::string_view name) const;
  // Like find(), but an unknown name throws UsageError: "unknown GPU 'H300'; did you
  // mean: H200-SXM, H100-SXM?" (closest by edit distance, at most 3).
  const GpuSpec& get(std::string_view name) const;
  std::vector<std::string> suggest(std::string_view name, size_t max = 3) const;

  // The entry for what the driver reports: PCI device id first (when several
  // entries share it, the name decides), then the exact driver name. nullptr if none.
  const GpuSpec* match_driver(std::string_view driver_name,
                              std::optional<uint32_t> nvml_pci_device_id) const;

 private:
  std::vector<GpuSpec> gpus_;
};

}  // namespace gpuvs
