// The run's system from the files of an import, and the helpers the readers share
// (import_detail.h).
#include <fmt/format.h>

#include <charconv>
#include <cmath>
#include <filesystem>

#include "core/error.h"
#include "core/run_file_json.h"
#include "core/run_file_reader.h"
#include "core/text.h"
#include "gpu/nvml.h"
#include "import/import_detail.h"

namespace gpuvs::import {

GpuInfo unknown_gpu(int index) {
  GpuInfo g;
  g.index = index;
  g.name = "unknown";
  return g;
}

std::string nvml_bus_id(std::string_view text) {
  return nvml::normalize_pci_bus_id(text).value_or(std::string(text));
}

std::string as_utf8(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size();) {
    const size_t len = utf8_length(text, i);
    if (len == 0) {
      out += "\xEF\xBF\xBD";
      ++i;
    } else {
      out.append(text.substr(i, len));
      i += len;
    }
  }
  return out;
}

std::string file_label(const std::string& name) {
  const std::string base = std::filesystem::path(name).filename().string();
  return run_json::printable(base.empty() ? name : base, 200);
}

namespace {

// Where two files disagree about the machine: they are not of one run.
[[noreturn]] void disagree(const std::string& name, const std::string& what,
                           const std::string& ours, const std::string& theirs,
                           const std::vector<std::string>& earlier) {
  const std::string before =
      earlier.size() == 1 ? file_label(earlier.front()) : std::string("the files before it");
  throw UsageError(
      fmt::format("{}: {} is {}, but {} say{} {}: import the files of one machine at a time",
                  run_json::printable(name, 200), what, run_json::quote(ours), before,
                  earlier.size() == 1 ? "s" : "", run_json::quote(theirs)));
}

void merge_optional(std::optional<std::string>& into, const std::optional<std::string>& from,
                    const char* what, const std::string& name,
                    const std::vector<std::string>& earlier) {
  if (!from) return;
  if (into && *into != *from) disagree(name, what, *from, *into, earlier);
  into = from;
}

void merge_gpu(GpuInfo& into, const GpuInfo& from, const std::string& name,
               const std::vector<std::string>& earlier) {
  const std::string what = fmt::format("GPU {}", from.index);
  if (from.name != "unknown") {
    if (into.name != "unknown" && into.name != from.name)
      disagree(name, what, from.name, into.name, earlier);
    into.name = from.name;
  }
  if (!from.pci_bus_id.empty()) {
    if (!into.pci_bus_id.empty() && into.pci_bus_id != from.pci_bus_id)
      disagree(name, what + "'s bus id", from.pci_bus_id, into.pci_bus_id, earlier);
    into.pci_bus_id = from.pci_bus_id;
  }
  // What only some files tell (nvbench's device details) fills what others left open.
  if (into.compute_capability.empty()) into.compute_capability = from.compute_capability;
  if (into.sm_count == 0) into.sm_count = from.sm_count;
  if (into.memory_total_bytes == 0) into.memory_total_bytes = from.memory_total_bytes;
  if (into.l2_bytes == 0) into.l2_bytes = from.l2_bytes;
  if (!into.memory_bus_width_bits) into.memory_bus_width_bits = from.memory_bus_width_bits;
  if (!into.sm_clock_max_mhz) into.sm_clock_max_mhz = from.sm_clock_max_mhz;
  if (!into.mem_clock_max_mhz) into.mem_clock_max_mhz = from.mem_clock_max_mhz;
  if (!into.ecc_enabled) into.ecc_enabled = from.ecc_enabled;
}

}  // namespace

void merge_into(RunFile& run, FileImport file, const std::string& name,
                const std::vector<std::string>& earlier) {
  if (!file.host.empty()) {
    if (!run.meta.host.empty() && run.meta.host != file.host)
      disagree(name, "the host", file.host, run.meta.host, earlier);
    run.meta.host = file.host;
  }
  SystemInfo& sys = run.system;
  merge_optional(sys.driver_version, file.driver_version, "the driver", name, earlier);
  merge_optional(sys.cuda_driver_version, file.cuda_driver_version, "the driver's CUDA", name,
                 earlier);
  merge_optional(sys.nccl_version, file.nccl_version, "NCCL", name, earlier);
  for (const GpuInfo& g : file.gpus) {
    while (sys.gpus.size() <= static_cast<size_t>(g.index))
      sys.gpus.push_back(unknown_gpu(static_cast<int>(sys.gpus.size())));
    merge_gpu(sys.gpus[g.index], g, name, earlier);
  }
  for (Result& r : file.results)
    run.results.push_back(std::move(r));
  for (RunError& e : file.errors)
    run.errors.push_back(std::move(e));
}

// ---- other tools' JSON

json parse_tool_json(std::string_view text, const std::string& name) {
  return run_json::parse_json_document(text, name);
}

void not_tool_json(const std::string& name, const json& doc, std::string_view tool) {
  std::string is;
  if (const json* schema = member(doc, "schema"); schema && schema->is_string()) {
    const std::string& s = schema->get_ref<const std::string&>();
    is = s.rfind("gpuvs.run/", 0) == 0
             ? "it is a gpuvs run file (give it to gpuvs compare as it is)"
             : fmt::format("it is a document of schema {}", run_json::quote(s));
  } else if (const json* nvb = member(doc, "nvbandwidth"); nvb && nvb->is_object()) {
    is = "it is nvbandwidth's (gpuvs import nvbandwidth reads it)";
  } else if (member(doc, "benchmarks") && member(doc, "devices")) {
    is = "it is nvbench's (gpuvs import nvbench reads it)";
  } else if (!doc.is_object()) {
    is = "the top level is not an object";
  } else {
    is = tool == "nvbench" ? "no \"meta\", \"devices\" and \"benchmarks\" of nvbench"
                           : "no top-level \"nvbandwidth\" object";
  }
  throw UsageError(fmt::format("{}: not {}'s JSON: {}", run_json::printable(name, 200), tool, is));
}

const json* member(const json& v, std::string_view key) {
  if (!v.is_object()) return nullptr;
  const auto it = v.find(key);
  return it == v.end() ? nullptr : &*it;
}

const json& field(const json& v, std::string_view key) {
  static const json null_value;
  const json* m = member(v, key);
  return m ? *m : null_value;
}

const std::string& need_string(const json& v, const std::string& name, const std::string& path) {
  if (!v.is_string()) run_json::fail(name, path, run_json::expected("a string", v));
  return v.get_ref<const std::string&>();
}

int64_t need_integer(const json& v, const std::string& name, const std::string& path, int64_t min,
                     int64_t max) {
  int64_t n = 0;
  if (v.is_string()) {
    // nvbench writes its int64 values as text.
    const std::string& s = v.get_ref<const std::string&>();
    const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), n);
    if (s.empty() || ec != std::errc() || end != s.data() + s.size())
      run_json::fail(name, path, fmt::format("expected an integer, got {}", run_json::quote(s)));
  } else if (const std::string problem = run_json::convert(v, n); !problem.empty()) {
    run_json::fail(name, path, problem);
  }
  if (n < min || n > max)
    run_json::fail(name, path, fmt::format("integer {} is out of range [{}, {}]", n, min, max));
  return n;
}

const json& need_array(const json& v, const std::string& name, const std::string& path) {
  if (!v.is_array()) run_json::fail(name, path, run_json::expected("an array", v));
  return v;
}

std::optional<double> number_of(const json& v) {
  double d = 0;
  if (v.is_number()) {
    d = v.get<double>();
  } else if (v.is_string()) {
    const std::string& s = v.get_ref<const std::string&>();
    const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), d);
    if (s.empty() || ec != std::errc() || end != s.data() + s.size()) return std::nullopt;
  } else {
    return std::nullopt;
  }
  if (!std::isfinite(d)) return std::nullopt;
  return d;
}

std::string at(const std::string& path, std::string_view key) {
  std::string p = path;
  run_json::append_key(p, key);
  return p;
}

std::string at(const std::string& path, size_t index) {
  return fmt::format("{}[{}]", path, index);
}

}  // namespace gpuvs::import
