// The datasheet catalogue (data/catalogue/gpus.json, embedded in the binary; a file
// may replace it with --catalogue). Every GPU entry has a datasheet URL; a figure
// that comes from elsewhere carries its own source. Values are stored in base SI
// units after loading (the file writes them in readable units: "989 TFLOP/s").
#pragma once

#include <cstdint>
#include <filesystem>
#include <initializer_list>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

namespace gpuvs {

struct MetricDef;

struct Figure {
  double value = 0;    // base SI unit of the metric
  std::string unit;    // that base unit
  std::string source;  // URL; the GPU's datasheet unless the figure names another
  std::string note;    // e.g. "with sparsity", "per direction x2"
};

struct GpuSpec {
  std::string id;                         // "H200-SXM" (stable, what users type)
  std::string name;                       // "NVIDIA H200 SXM 141GB"
  std::vector<std::string> aliases;       // "H200", "H200-SXM-141GB"
  std::vector<std::string> driver_names;  // names the driver reports: "NVIDIA H200"
  std::vector<uint32_t> pci_device_ids;   // device part (high 16 bits of NVML's id): 0x2335
  std::string architecture;               // "Hopper"
  std::string form_factor;                // "SXM5", "PCIe", "NVL", "Superchip"
  std::string memory_type;                // "HBM3e"
  std::optional<int> tensor_core_generation;
  std::optional<int> pcie_generation;
  std::optional<int> nvlink_generation;
  std::string source;                     // datasheet URL
  std::map<std::string, Figure> figures;  // metric id -> figure; sparse as "compute.fp16_sparse"
  // Added with the loader: metric ids the hardware does not have (null in the file,
  // e.g. FP8 on an A100): shown as "none", which is not the same as missing.
  std::vector<std::string> unsupported;
  std::vector<std::string> checked_against;  // public copies the figures were read from
  std::string note;                          // about the entry as a whole
};

class Catalogue {
 public:
  // The catalogue built into the binary.
  static const Catalogue& builtin();
  // Parse and validate; one-line gpuvs::UsageError naming the file and the field.
  static Catalogue parse(std::string_view text, std::string_view name);
  static Catalogue load(const std::filesystem::path& path);

  const std::vector<GpuSpec>& gpus() const { return gpus_; }

  // By id or alias, case-insensitive, '-', '_' and ' ' equivalent; failing those, by a
  // driver name (compared the same way) or a PCI device id ("0x2684") that exactly one
  // entry has. nullptr if none, or if several entries share the name or the id.
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

// Internal to gpuvs_specs: the pieces the catalogue and published-figure loaders
// share. Every failure is a one-line UsageError "<name>: <field path>: <problem>".
namespace specs_detail {

// JSON text -> document: syntax (with the byte offset), nesting deeper than 32
// levels, duplicate keys, then the top level must be an object whose "schema" is
// `schema` (`what` names the kind of file in the messages: "catalogue").
nlohmann::json parse_document(std::string_view text, std::string_view name, std::string_view schema,
                              std::string_view what);
// The whole file (at most 16 MiB, input_file.h), or UsageError "<path>: cannot
// read: ..."; `what` names the kind of file: "catalogue".
std::string read_text_file(const std::filesystem::path& path, std::string_view what);

// Field access on one JSON object at `path`; unknown keys are refused so that a
// misspelt field is reported rather than silently dropped.
class ObjectReader {
 public:
  ObjectReader(const nlohmann::json& value, std::string_view name, std::string path,
               std::initializer_list<std::string_view> allowed);
  const nlohmann::json* find(std::string_view key) const;        // nullptr if absent
  std::string string(std::string_view key) const;                // required, non-empty
  std::string opt_string(std::string_view key) const;            // "" if absent or null
  std::string url(std::string_view key, bool required) const;    // http(s)://, no spaces
  std::vector<std::string> strings(std::string_view key) const;  // optional array
  std::optional<int> opt_int(std::string_view key, int lo, int hi) const;
  std::string path(std::string_view key) const;  // "gpus[3].figures"
  [[noreturn]] void fail(std::string_view key, std::string_view problem) const;

 private:
  const nlohmann::json& value_;
  std::string_view name_;
  std::string path_;
};

// "value" and "unit" of `reader`'s object converted to the base unit of `metric`:
// finite and > 0, and a unit that fits.
double read_value(const ObjectReader& reader, const MetricDef& metric);

// "http://" or "https://" followed by something, no spaces or control characters.
bool is_http_url(std::string_view s);

}  // namespace specs_detail

}  // namespace gpuvs
