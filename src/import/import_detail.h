// Internal to gpuvs_import: what one file gives before the files of an import are
// merged into one run (import_system.cpp), the readers of each tool, and the helpers
// they share for the fields of other tools' JSON.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/run_file.h"
#include "import/import.h"

namespace gpuvs::import {

using json = nlohmann::json;

// One file's contribution: its GPUs by the index the file gives them, the results
// naming those indexes, and the system facts it states.
struct FileImport {
  std::string host;           // "" where the file names none
  std::vector<GpuInfo> gpus;  // gpus[i].index == i
  std::optional<std::string> driver_version;
  std::optional<std::string> cuda_driver_version;
  std::optional<std::string> nccl_version;
  std::vector<Result> results;
  std::vector<RunError> errors;
  FileSummary summary;
};

// What `text`, the file `name`, gives to an import of one tool. UsageError when it is
// not that tool's output or holds nothing to import.
FileImport read_nccl_tests_log(std::string_view text, const std::string& name,
                               const ImportOptions& options);
FileImport read_nvbench_json(std::string_view text, const std::string& name,
                             const ImportOptions& options);
FileImport read_nvbandwidth_json(std::string_view text, const std::string& name,
                                 const ImportOptions& options);

// Adds `file` to `run`: its GPUs (the same index must be the same GPU in every file:
// name and bus id, where both files give them), host and versions (where two files
// give one, the same), results and errors. UsageError naming `name` and the file it
// disagrees with otherwise.
void merge_into(RunFile& run, FileImport file, const std::string& name,
                const std::vector<std::string>& earlier);

// A GPU the file names nothing of but its index: the format's "unknown" values.
GpuInfo unknown_gpu(int index);

// "0000:19:00" or "00000000:19:00" (domain:bus:device, as nccl-tests and nvbandwidth
// print it) in NVML's form "00000000:19:00.0" (nvml::normalize_pci_bus_id); anything
// that is no bus id as given.
std::string nvml_bus_id(std::string_view text);

// `text` with each byte that does not start a well-formed UTF-8 character replaced by
// U+FFFD, as the run-file writer would: what a log says reaches the run as written.
std::string as_utf8(std::string_view text);

// "the file's name without its folders", for the results' validation texts.
std::string file_label(const std::string& name);

// ---- other tools' JSON

// The text of a JSON file as a document (run_json::parse_json_document's limits).
json parse_tool_json(std::string_view text, const std::string& name);

// Refuses a document that is not `tool`'s, naming what it is where that can be told:
// another tool's JSON (and the command that imports it), a gpuvs file, or neither.
[[noreturn]] void not_tool_json(const std::string& name, const json& doc, std::string_view tool);

// A member of an object, or nullptr (also when `v` is not an object).
const json* member(const json& v, std::string_view key);
// The same, or null when there is none.
const json& field(const json& v, std::string_view key);

// Typed reads of a field at `path`; UsageError "<name>: <path>: <problem>" otherwise.
const std::string& need_string(const json& v, const std::string& name, const std::string& path);
int64_t need_integer(const json& v, const std::string& name, const std::string& path, int64_t min,
                     int64_t max);
const json& need_array(const json& v, const std::string& name, const std::string& path);

// A number written as a JSON number or as text ("0.0012", as nvbench and nvbandwidth
// write theirs); nullopt for anything else, and for text that is not a finite number
// ("inf", "N/A").
std::optional<double> number_of(const json& v);

// "<path>.<key>", "<path>[i]".
std::string at(const std::string& path, std::string_view key);
std::string at(const std::string& path, size_t index);

}  // namespace gpuvs::import
