// nvbandwidth's JSON (-j) as results (docs/import.md). Its tests report a matrix each:
// one row of a value per GPU for the host tests, a GPU x GPU matrix for the peer tests
// (row: the GPU whose context issues the copy or the loads; column: the other), in
// GB/s, or ns for the latency tests. Where a test's definition is one of gpuvs's
// benchmarks' (the pinned host copies, the peer copies written by the source GPU, the
// peer load latency), its figures get gpuvs's id with ".nvbandwidth"; every other test
// of a single node imports as nvbandwidth.<test>.
//
// Two things nvbandwidth's JSON leaves out: the buffer size (-b; its default is
// taken, 512 MiB from 0.7 and 64 MiB before, unless --buffer-size says otherwise), and
// whether the data was verified (-s skips it). Its bidirectional peer tests append
// three matrices into one since 0.6 (each direction, then their total): the last is
// taken, the total, which is gpuvs's both-ways figure; the single matrix of earlier
// versions is not, and imports under the test's own name.
#include <fmt/format.h>

#include <cstdio>
#include <map>

#include "core/error.h"
#include "core/run_file_json.h"
#include "core/stats.h"
#include "core/units.h"
#include "import/import_detail.h"
#include "suite/produces.h"

namespace gpuvs::import {

namespace {

constexpr int64_t kMiB = int64_t{1} << 20;
constexpr int64_t kLatencyBufferBytes = 2 * kMiB;  // nvbandwidth's latency tests, fixed

// The tests whose figures are gpuvs's own, by definition (docs/import.md).
struct Twin {
  std::string_view test;
  Family family;
  std::vector<std::string> values;
  bool total = false;  // the three-matrix form only (nvbandwidth 0.6 and later)
};

const std::vector<Twin>& twins() {
  static const std::vector<Twin> t = {
      {"host_to_device_memcpy_ce", Family::kNvbwHostCopy, {"h2d", "pinned"}},
      {"device_to_host_memcpy_ce", Family::kNvbwHostCopy, {"d2h", "pinned"}},
      {"device_to_device_memcpy_write_ce", Family::kNvbwPeerCopy, {"ce", "unidirectional"}},
      {"device_to_device_memcpy_write_sm", Family::kNvbwPeerCopy, {"sm", "unidirectional"}},
      {"device_to_device_bidirectional_memcpy_write_ce",
       Family::kNvbwPeerCopy,
       {"ce", "bidirectional"},
       true},
      {"device_to_device_bidirectional_memcpy_write_sm",
       Family::kNvbwPeerCopy,
       {"sm", "bidirectional"},
       true},
      {"device_to_device_latency_sm", Family::kNvbwPeerLatency, {}},
  };
  return t;
}

const Twin* twin_of(std::string_view test, bool three_matrices) {
  for (const Twin& t : twins())
    if (t.test == test && (!t.total || three_matrices)) return &t;
  return nullptr;
}

bool own_family_test(std::string_view test) {
  for (const Placeholder& p : family_def(Family::kNvbandwidth).placeholders)
    for (const PlaceholderValue& v : p.values)
      if (v.text == test) return true;
  return false;
}

// "v0.8" -> 0.8 as {0, 8}; nullopt when it is not of that form.
std::optional<std::pair<int, int>> version_of(const std::string& v) {
  int a = 0, b = 0;
  if (std::sscanf(v.c_str(), "v%d.%d", &a, &b) != 2) return std::nullopt;
  return std::pair{a, b};
}

// "0: NVIDIA H200 (00000000:19:00): (hgx-h200-03)", nvbandwidth 0.8's device list.
struct ListedGpu {
  int index = -1;
  std::string name, bus_id, host;
};

std::optional<ListedGpu> listed_gpu(const std::string& entry) {
  ListedGpu g;
  const size_t colon = entry.find(": ");
  if (colon == std::string::npos || colon == 0 || entry.find_first_not_of("0123456789") != colon ||
      colon > 4)
    return std::nullopt;
  g.index = std::stoi(entry.substr(0, colon));
  std::string rest = entry.substr(colon + 2);
  if (const size_t h = rest.rfind("): ("); h != std::string::npos && rest.back() == ')') {
    g.host = rest.substr(h + 4, rest.size() - h - 5);
    rest.resize(h + 1);
  }
  if (const size_t open = rest.rfind(" ("); open != std::string::npos && rest.back() == ')') {
    g.bus_id = rest.substr(open + 2, rest.size() - open - 3);
    rest.resize(open);
  }
  g.name = rest;
  return g;
}

struct Reading {
  const std::string& name;
  FileImport& file;
  int64_t buffer_bytes = 0;
  std::string tool;
  int gpus = 0;  // GPUs the file lists; 0 when it lists none
  std::map<std::string, int> tests_imported;
};

Result make_result(const Reading& in, std::string id, const std::string& test, double value,
                   bool latency) {
  Result r;
  r.id = std::move(id);
  r.name = fmt::format("nvbandwidth {}", test);
  r.value = value;
  r.unit = latency ? "s" : "B/s";
  r.samples = {value};
  r.stats = compute_stats(r.samples);
  r.parameters["tool"] = in.tool;
  r.validation =
      latency
          ? fmt::format("a pointer chase, nothing to check (imported from {})", file_label(in.name))
          : fmt::format(
                "nvbandwidth checks the copied data unless run with -s, which its JSON "
                "does not record (imported from {})",
                file_label(in.name));
  return r;
}

// One matrix cell as a result, or none for a cell that holds no figure.
void add_cell(Reading& in, const std::string& test, const Twin* twin, bool pairs, int row, int col,
              double raw) {
  const bool latency = test.find("latency") != std::string::npos;
  const double value = latency ? raw * 1e-9 : raw * 1e9;
  const int gpu = pairs ? row : col;
  Result r;
  if (twin) {
    r = make_result(in, result_id(twin->family, twin->values), test, value, latency);
    if (twin->family == Family::kNvbwHostCopy) {
      r.devices = {col};
      r.parameters["bytes"] = in.buffer_bytes;
      r.parameters["memory"] = std::string("pinned");
      r.bytes_per_iteration = static_cast<double>(in.buffer_bytes);
    } else {
      r.devices = {row, col};
      r.parameters["src"] = int64_t{row};
      r.parameters["dst"] = int64_t{col};
      if (latency) {
        r.parameters["working_set_bytes"] = kLatencyBufferBytes;
      } else {
        r.parameters["bytes_per_copy"] = in.buffer_bytes;
        r.bytes_per_iteration =
            static_cast<double>(in.buffer_bytes) * (twin->values[1] == "bidirectional" ? 2 : 1);
      }
    }
  } else {
    r = make_result(in, result_id(Family::kNvbandwidth, {test}), test, value, latency);
    if (pairs) {
      r.devices = {row, col};
      r.parameters["row"] = int64_t{row};
      r.parameters["column"] = int64_t{col};
    } else {
      r.devices = {gpu};
      r.parameters["gpu"] = int64_t{gpu};
    }
    if (latency)
      r.parameters["working_set_bytes"] = kLatencyBufferBytes;
    else
      r.parameters["bytes"] = in.buffer_bytes;
  }
  if (const std::string problem = quantity_problem(r.value, r.unit); !problem.empty())
    throw UsageError(fmt::format("{}: {} of GPU {}{}: {}", run_json::printable(in.name, 200), test,
                                 pairs ? row : gpu, pairs ? fmt::format(" and {}", col) : "",
                                 problem));
  in.file.results.push_back(std::move(r));
}

void read_test(Reading& in, const json& tc, const std::string& path) {
  const std::string test = need_string(field(tc, "name"), in.name, at(path, "name"));
  const json* status = member(tc, "status");
  const std::string state = status && status->is_string() ? status->get<std::string>() : "";
  const std::string context = fmt::format("nvbandwidth {} ({})", test, file_label(in.name));
  if (state == "Waived") {
    in.file.summary.notes.push_back(fmt::format(
        "{}: waived by nvbandwidth (it cannot run here: no peer access, one GPU, ...)", test));
    return;
  }
  if (state != "Passed") {
    const json* error = member(tc, "error");
    in.file.errors.push_back(
        {context, error && error->is_string()
                      ? error->get<std::string>()
                      : fmt::format("status {}", run_json::quote(state.empty() ? "none" : state))});
    return;
  }
  if (test.rfind("multinode", 0) == 0) {
    in.file.summary.notes.push_back(
        fmt::format("{}: a test across nodes, which gpuvs import does not read", test));
    return;
  }
  const json* matrix_json = member(tc, "bandwidth_matrix");
  if (!matrix_json) {
    in.file.summary.notes.push_back(fmt::format("{}: passed, but wrote no matrix", test));
    return;
  }
  const std::string mpath = at(path, "bandwidth_matrix");
  const json& matrix = need_array(*matrix_json, in.name, mpath);
  const size_t rows = matrix.size();
  size_t cols = 0;
  for (size_t i = 0; i < rows; ++i) {
    const json& row = need_array(matrix[i], in.name, at(mpath, i));
    if (i == 0) cols = row.size();
    if (row.size() != cols)
      run_json::fail(in.name, at(mpath, i),
                     fmt::format("has {} entries, the first row {}", row.size(), cols));
  }
  const bool pairs = test.rfind("device_to_device_", 0) == 0;
  const bool three = pairs && cols > 0 && rows == 3 * cols;
  if (cols == 0 || (pairs ? rows != cols && !three : rows != 1))
    run_json::fail(in.name, mpath,
                   fmt::format("{} rows of {} columns, which {} does not write", rows, cols,
                               pairs ? "a test between GPUs (one or three GPU x GPU matrices)"
                                     : "a test of each GPU (one row)"));
  if (in.gpus > 0 && cols > static_cast<size_t>(in.gpus))
    run_json::fail(in.name, mpath,
                   fmt::format("{} columns, but the file lists {} GPUs", cols, in.gpus));
  const Twin* twin = twin_of(test, three);
  if (!twin && !own_family_test(test)) {
    in.file.summary.notes.push_back(
        fmt::format("{}: not a test this gpuvs knows (a newer nvbandwidth?)", test));
    return;
  }
  if (pairs && !twin && !three && test.find("bidirectional") != std::string::npos)
    in.file.summary.notes.push_back(fmt::format(
        "{}: one matrix (nvbandwidth before 0.6, a direction measured while the other runs): "
        "imported as nvbandwidth.{}, not as gpuvs's both-ways figure",
        test, test));
  const size_t first_row = three ? 2 * cols : 0;
  const size_t before = in.file.results.size();
  for (size_t i = first_row; i < rows; ++i) {
    const int row = static_cast<int>(i - first_row);
    for (size_t j = 0; j < cols; ++j) {
      const int col = static_cast<int>(j);
      if (pairs && row == col) continue;  // no copy to itself ("N/A", 0 before 0.8)
      // gpuvs measures both ways once per pair, the lower GPU first.
      if (twin && twin->total && row > col) continue;
      const json& cell = matrix[i][j];
      if (cell.is_string() && cell.get_ref<const std::string&>() == "N/A") continue;
      const std::optional<double> v = number_of(cell);
      if (!v)
        run_json::fail(in.name, at(at(mpath, i), j),
                       fmt::format("expected a figure or \"N/A\", got {}", cell.dump()));
      add_cell(in, test, twin, pairs, row, col, *v);
    }
  }
  in.tests_imported[test] = static_cast<int>(in.file.results.size() - before);
  if (in.gpus == 0) in.file.gpus.resize(std::max(in.file.gpus.size(), cols), unknown_gpu(0));
}

}  // namespace

FileImport read_nvbandwidth_json(std::string_view text, const std::string& name,
                                 const ImportOptions& options) {
  const json doc = parse_tool_json(text, name);
  const json* root = member(doc, "nvbandwidth");
  if (!root || !root->is_object()) not_tool_json(name, doc, "nvbandwidth");
  const std::string shown = run_json::printable(name, 200);
  FileImport file;
  Reading in{name, file, 0, {}, 0, {}};

  const json* version = member(*root, "version");
  const std::string v = version && version->is_string() ? version->get<std::string>() : "";
  in.tool = v.empty() ? "nvbandwidth (version not written)" : "nvbandwidth " + v;
  const json* warning = member(*root, "warning");
  const bool smaller = warning && warning->is_string() &&
                       warning->get_ref<const std::string&>().find(
                           "smaller than the default buffer size") != std::string::npos;
  if (options.buffer_bytes) {
    in.buffer_bytes = *options.buffer_bytes;
  } else if (smaller) {
    throw UsageError(fmt::format(
        "{}: nvbandwidth ran with a buffer smaller than its default (its warning says so), and "
        "its JSON does not say how large: give --buffer-size (its -b, e.g. --buffer-size 64MiB)",
        shown));
  } else if (const auto ver = version_of(v)) {
    in.buffer_bytes = (*ver >= std::pair{0, 7} ? 512 : 64) * kMiB;
  } else {
    throw UsageError(fmt::format(
        "{}: no nvbandwidth version is written, so its default buffer size is not known: give "
        "--buffer-size (its -b, e.g. --buffer-size 512MiB)",
        shown));
  }

  if (const json* d = member(*root, "Driver Version"); d && d->is_string())
    file.driver_version = d->get<std::string>();
  // nvbandwidth writes cuDriverGetVersion's figure under this key: the CUDA version
  // the driver supports.
  if (const json* c = member(*root, "CUDA Runtime Version"); c && c->is_number_integer()) {
    const int64_t code = c->get<int64_t>();
    if (code > 0 && code < 1000000)
      file.cuda_driver_version = fmt::format("{}.{}", code / 1000, (code % 1000) / 10);
  }
  if (const json* list = member(*root, "GPU Device list")) {
    const json& entries = need_array(*list, name, "nvbandwidth[\"GPU Device list\"]");
    for (size_t i = 0; i < entries.size(); ++i) {
      const std::string path = at("nvbandwidth[\"GPU Device list\"]", i);
      const std::optional<ListedGpu> g = listed_gpu(need_string(entries[i], name, path));
      if (!g || g->index != static_cast<int>(i))
        run_json::fail(name, path, fmt::format("expected \"{}: <name> (<bus id>): (<host>)\"", i));
      GpuInfo gpu = unknown_gpu(g->index);
      if (!g->name.empty()) gpu.name = g->name;
      gpu.pci_bus_id = nvml_bus_id(g->bus_id);
      file.gpus.push_back(gpu);
      if (!g->host.empty()) {
        if (!file.host.empty() && file.host != g->host)
          run_json::fail(name, path,
                         fmt::format("host {} differs from GPU 0's {}", run_json::quote(g->host),
                                     run_json::quote(file.host)));
        file.host = g->host;
      }
    }
    in.gpus = static_cast<int>(file.gpus.size());
  }
  if (const json* error = member(*root, "error"); error && error->is_string())
    file.errors.push_back(
        {fmt::format("nvbandwidth ({})", file_label(name)), error->get<std::string>()});

  const json* tests = member(*root, "testcases");
  if (!tests || (tests->is_array() && tests->empty()))
    throw UsageError(fmt::format(
        "{}: nvbandwidth wrote no test{}", shown,
        file.errors.empty() ? std::string()
                            : ": " + run_json::printable(file.errors.front().message, 300)));
  const json& list = need_array(*tests, name, "nvbandwidth.testcases");
  for (size_t i = 0; i < list.size(); ++i)
    read_test(in, list[i], at("nvbandwidth.testcases", i));
  for (size_t i = 0; i < file.gpus.size(); ++i)
    file.gpus[i].index = static_cast<int>(i);
  if (file.results.empty() && file.errors.empty())
    throw UsageError(fmt::format("{}: nvbandwidth wrote no figure gpuvs can import ({})", shown,
                                 file.summary.notes.empty()
                                     ? "no test passed"
                                     : run_json::printable(file.summary.notes.front(), 200)));
  file.summary.what = fmt::format("{}: {} of {} tests on {} GPUs", in.tool,
                                  in.tests_imported.size(), list.size(), file.gpus.size());
  return file;
}

}  // namespace gpuvs::import
