// nvbench's JSON (--json FILE of a benchmark built with nvbench) as results
// (docs/import.md). nvbench times kernels that a benchmark's author wrote, so none of
// its figures is one of gpuvs's: each state (a benchmark at one point of its axes, on
// one GPU) gives up to three results of ids nvbench.*, told apart by the parameters
// `benchmark` and `state` (nvbench's own "T=F32 Elements=2^28", without the device):
//  - nvbench.gpu_time: nvbench's "GPU Time", the mean over isolated (cold) launches,
//    each timed with CUDA events, the L2 flushed before it unless the benchmark said
//    otherwise; its min, max, median and noise where the file has them;
//  - nvbench.batch_gpu_time: "Batch GPU", the mean time per launch over launches back
//    to back;
//  - nvbench.bandwidth: "GlobalMem BW", the global memory bytes the benchmark says a
//    launch reads and writes over the mean cold GPU time.
// The devices section gives the GPUs: name, compute capability, SMs, memory, L2, bus
// width, the SM and memory clocks' peaks, ECC.
#include <fmt/format.h>

#include <cmath>
#include <map>

#include "core/error.h"
#include "core/run_file_json.h"
#include "core/units.h"
#include "import/import_detail.h"
#include "suite/produces.h"

namespace gpuvs::import {

namespace {

constexpr int64_t kMaxDevices = 1024;

// A state's summaries: tag -> the value of its "value" datum (a finite number).
std::map<std::string, double> summaries_of(const json& state, const std::string& name,
                                           const std::string& path) {
  std::map<std::string, double> out;
  const json& list = field(state, "summaries");
  if (list.is_null()) return out;
  const std::string spath = at(path, "summaries");
  need_array(list, name, spath);
  for (size_t i = 0; i < list.size(); ++i) {
    const std::string tag = need_string(field(list[i], "tag"), name, at(at(spath, i), "tag"));
    const json& data = field(list[i], "data");
    if (!data.is_array()) continue;
    for (const json& d : data)
      if (field(d, "name") == "value")
        if (const std::optional<double> v = number_of(field(d, "value"))) out[tag] = *v;
  }
  return out;
}

std::optional<double> tag(const std::map<std::string, double>& s, const std::string& t) {
  const auto it = s.find(t);
  return it == s.end() ? std::nullopt : std::optional<double>(it->second);
}

// nvbench's state name without its "Device=N" (the result's devices say it).
std::string state_text(const std::string& state) {
  std::string out;
  size_t pos = 0;
  while (pos < state.size()) {
    size_t end = state.find(' ', pos);
    if (end == std::string::npos) end = state.size();
    const std::string word = state.substr(pos, end - pos);
    if (!word.empty() && word.rfind("Device=", 0) != 0) out += (out.empty() ? "" : " ") + word;
    pos = end + 1;
  }
  return out;
}

void read_device(const json& d, const std::string& name, const std::string& path,
                 FileImport& file) {
  const int index =
      static_cast<int>(need_integer(field(d, "id"), name, at(path, "id"), 0, kMaxDevices - 1));
  GpuInfo g = unknown_gpu(index);
  if (const json* n = member(d, "name")) g.name = need_string(*n, name, at(path, "name"));
  auto integer = [&](const char* key, int64_t max) -> std::optional<int64_t> {
    const json* v = member(d, key);
    if (!v) return std::nullopt;
    return need_integer(*v, name, at(path, key), 0, max);
  };
  constexpr int64_t kIntMax = 2147483647;
  if (auto sm = integer("sm_version", 100000))
    g.compute_capability = fmt::format("{}.{}", *sm / 100, (*sm % 100) / 10);
  if (auto n = integer("number_of_sms", kIntMax)) g.sm_count = static_cast<int>(*n);
  if (auto m = integer("global_memory_size", int64_t{1} << 60)) g.memory_total_bytes = *m;
  if (auto l2 = integer("l2_cache_size", int64_t{1} << 40)) g.l2_bytes = *l2;
  if (auto w = integer("global_memory_bus_width", kIntMax)) g.memory_bus_width_bits = int(*w);
  // Clock rates in Hz: the peak SM clock (CUDA's clockRate) and the memory's.
  if (auto hz = integer("sm_default_clock_rate", int64_t{1} << 50))
    g.sm_clock_max_mhz = static_cast<int>(std::lround(static_cast<double>(*hz) / 1e6));
  if (auto hz = integer("global_memory_bus_peak_clock_rate", int64_t{1} << 50))
    g.mem_clock_max_mhz = static_cast<int>(std::lround(static_cast<double>(*hz) / 1e6));
  if (const json* ecc = member(d, "ecc_state"); ecc && ecc->is_boolean())
    g.ecc_enabled = ecc->get<bool>();
  if (file.gpus.size() <= static_cast<size_t>(index))
    for (int i = static_cast<int>(file.gpus.size()); i <= index; ++i)
      file.gpus.push_back(unknown_gpu(i));
  file.gpus[index] = g;
}

struct Figure {
  const char* value_tag;
  const char* what;  // of the figure value in the family
  const char* label;
};

constexpr Figure kFigures[] = {
    {"nv/cold/time/gpu/mean", "gpu_time", "GPU time per launch (cold)"},
    {"nv/batch/time/gpu/mean", "batch_gpu_time", "GPU time per launch (batch)"},
    {"nv/cold/bw/global/bytes_per_second", "bandwidth", "global memory bandwidth"},
};

Stats stats_of(const Figure& f, double value, const std::map<std::string, double>& s) {
  Stats st;
  st.mean = st.median = st.min = st.max = value;
  const std::string figure = f.what;
  if (figure == "batch_gpu_time") {
    st.samples = static_cast<int>(tag(s, "nv/batch/sample_size").value_or(0));
    return st;
  }
  st.samples = static_cast<int>(tag(s, "nv/cold/sample_size").value_or(0));
  // nvbench writes an infinite noise where it has too few samples to tell one.
  const double noise = tag(s, "nv/cold/time/gpu/stdev/relative").value_or(0);
  st.noise = noise >= 0 ? noise : 0;
  if (figure == "gpu_time") {
    st.median = tag(s, "nv/cold/time/gpu/median").value_or(value);
    st.min = tag(s, "nv/cold/time/gpu/min").value_or(st.median);
    st.max = tag(s, "nv/cold/time/gpu/max").value_or(st.median);
    st.stddev = tag(s, "nv/cold/time/gpu/stdev/absolute").value_or(st.noise * value);
  } else {
    // The bandwidth is bytes over the mean time: it spreads as the time does.
    st.stddev = st.noise * value;
  }
  return st;
}

}  // namespace

FileImport read_nvbench_json(std::string_view text, const std::string& name,
                             const ImportOptions& /*options*/) {
  const json doc = parse_tool_json(text, name);
  const json* meta = member(doc, "meta");
  const json* benches = member(doc, "benchmarks");
  if (!meta || !meta->is_object() || !benches || !member(doc, "devices"))
    not_tool_json(name, doc, "nvbench");
  const std::string shown = run_json::printable(name, 200);
  const json& version = field(*meta, "version");
  if (const json* j = member(field(version, "json"), "major")) {
    const int64_t major = need_integer(*j, name, "meta.version.json.major", 0, 1 << 20);
    if (major != 1)
      throw UsageError(fmt::format("{}: nvbench JSON version {} (this gpuvs reads version 1 files)",
                                   shown, major));
  }
  const json& nvb = field(field(version, "nvbench"), "string");
  const std::string tool = nvb.is_string() ? "nvbench " + nvb.get<std::string>()
                                           : std::string("nvbench (version not written)");

  FileImport file;
  const json& devices = need_array(field(doc, "devices"), name, "devices");
  for (size_t i = 0; i < devices.size(); ++i)
    read_device(devices[i], name, at("devices", i), file);

  static const json kNone = json::array();
  const json& list = benches->is_null() ? kNone : need_array(*benches, name, "benchmarks");
  size_t states = 0;
  for (size_t b = 0; b < list.size(); ++b) {
    const std::string bpath = at("benchmarks", b);
    const std::string bench = need_string(field(list[b], "name"), name, at(bpath, "name"));
    const json& st_list = field(list[b], "states");
    if (st_list.is_null()) continue;
    need_array(st_list, name, at(bpath, "states"));
    for (size_t s = 0; s < st_list.size(); ++s) {
      const json& st = st_list[s];
      const std::string path = at(at(bpath, "states"), s);
      const std::string state = need_string(field(st, "name"), name, at(path, "name"));
      ++states;
      if (field(st, "is_skipped") == true) {
        const json& why = field(st, "skip_reason");
        file.summary.notes.push_back(fmt::format(
            "{} {}: skipped by nvbench{}", bench, state,
            why.is_string() ? " (" + run_json::printable(why.get<std::string>(), 200) + ")" : ""));
        continue;
      }
      const int device = static_cast<int>(
          need_integer(field(st, "device"), name, at(path, "device"), 0, kMaxDevices - 1));
      if (static_cast<size_t>(device) >= file.gpus.size())
        run_json::fail(name, at(path, "device"),
                       fmt::format("device {} is not in the file's devices", device));
      const std::map<std::string, double> summaries = summaries_of(st, name, path);
      const std::string axes = state_text(state);
      bool any = false;
      for (const Figure& f : kFigures) {
        const std::optional<double> value = tag(summaries, f.value_tag);
        if (!value) continue;
        any = true;
        Result r;
        r.id = result_id(Family::kNvbench, {f.what});
        r.name = fmt::format("nvbench {} {}", bench, f.label);
        r.devices = {device};
        r.parameters["benchmark"] = bench;
        if (!axes.empty()) r.parameters["state"] = axes;
        r.parameters["tool"] = tool;
        r.value = *value;
        r.unit = std::string(f.what) == "bandwidth" ? "B/s" : "s";
        r.stats = stats_of(f, *value, summaries);
        r.validation = fmt::format(
            "nvbench times the benchmark's kernels and checks none of their results (imported "
            "from {})",
            file_label(name));
        const std::string where = fmt::format("{} {}", bench, state);
        if (const std::string problem = quantity_problem(r.value, r.unit); !problem.empty())
          throw UsageError(fmt::format("{}: {}: {}: {}", shown, run_json::printable(where, 200),
                                       f.label, problem));
        if (!(r.stats.min <= r.stats.median && r.stats.median <= r.stats.max))
          throw UsageError(fmt::format("{}: {}: {}: min <= median <= max does not hold", shown,
                                       run_json::printable(where, 200), f.label));
        file.results.push_back(std::move(r));
      }
      if (!any)
        file.summary.notes.push_back(
            fmt::format("{} {}: no GPU time (a CPU-only measurement?)", bench, state));
    }
  }
  if (file.results.empty())
    throw UsageError(fmt::format(
        "{}: nvbench's JSON without a GPU time to import ({} benchmarks, {} states{})", shown,
        list.size(), states,
        file.summary.notes.empty() ? ""
                                   : "; " + run_json::printable(file.summary.notes.front(), 200)));
  file.summary.what = fmt::format("{}: {} benchmarks, {} states on {} GPUs", tool, list.size(),
                                  states, file.gpus.size());
  return file;
}

}  // namespace gpuvs::import
