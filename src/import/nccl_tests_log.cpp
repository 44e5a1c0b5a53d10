// A saved nccl-tests log (its stdout) as results: the parser gpuvs runs nccl-tests
// with (comm/nccl_tests.h), the results `gpuvs bench collectives --nccl-tests` writes
// (comm/nccl_tests_results.h), and the GPUs of its "# Using devices" lines.
#include <fmt/format.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <set>

#include "comm/nccl_tests.h"
#include "comm/nccl_tests_results.h"
#include "core/error.h"
#include "core/run_file_json.h"
#include "core/units.h"
#include "import/import_detail.h"

namespace gpuvs::import {

namespace {

std::string ops_text() {
  std::string out;
  for (const std::string& op : comm::nccl_tests_ops())
    out += (out.empty() ? "" : ", ") + op;
  return out;
}

bool known_op(std::string_view op) {
  const auto& ops = comm::nccl_tests_ops();
  return std::find(ops.begin(), ops.end(), op) != ops.end();
}

// "all_reduce_perf", "all_reduce_perf_mpi", "./build/all_reduce_perf": the op.
std::string op_of_program(std::string_view program) {
  std::string base = std::filesystem::path(std::string(program)).filename().string();
  if (const size_t at = base.find("_perf"); at != std::string::npos) base.resize(at);
  return base;
}

// The longest op the file's name starts with, as a word ("all_reduce.log",
// "broadcast_4gpu.txt"); "" when none.
std::string op_of_file_name(const std::string& name) {
  const std::string base = std::filesystem::path(name).filename().string();
  std::string best;
  for (const std::string& op : comm::nccl_tests_ops()) {
    if (base.rfind(op, 0) != 0 || op.size() <= best.size()) continue;
    const char next = base.size() > op.size() ? base[op.size()] : '.';
    if (next == '_' || next == '-' || next == '.') best = op;
  }
  return best;
}

std::string which_op(const comm::NcclTestsOutput& out, const std::string& name,
                     const ImportOptions& options) {
  const std::string shown = run_json::printable(name, 200);
  if (!out.program.empty()) {
    const std::string op = op_of_program(out.program);
    if (!known_op(op))
      throw UsageError(fmt::format("{}: {} measures {}, which gpuvs does not compare ({})", shown,
                                   run_json::quote(out.program), run_json::quote(op), ops_text()));
    if (!options.op.empty() && options.op != op)
      throw UsageError(fmt::format("{}: the log is of {}, not --op {}", shown,
                                   run_json::quote(out.program), options.op));
    return op;
  }
  if (!options.op.empty()) return options.op;
  if (std::string op = op_of_file_name(name); !op.empty()) return op;
  throw UsageError(fmt::format(
      "{}: the log does not say which collective it measured (no \"# Collective test "
      "starting\" line, which nccl-tests printed from late 2023): give --op ({}) or name "
      "the file after it (all_reduce.log)",
      shown, ops_text()));
}

// "2.27.7" is at least 2.19; a version that does not start with two numbers is not.
bool nccl_at_least(const std::string& version, int major, int minor) {
  int a = 0, b = 0;
  if (std::sscanf(version.c_str(), "%d.%d", &a, &b) != 2) return false;
  return a > major || (a == major && b >= minor);
}

// Why a text with no result row is not something to import.
[[noreturn]] void nothing_to_import(std::string_view text, const comm::NcclTestsOutput& out,
                                    const std::string& name) {
  const std::string shown = run_json::printable(name, 200);
  if (text.find_first_not_of(" \t\r\n") == std::string_view::npos)
    throw UsageError(
        fmt::format("{}: the file is empty (give the text a *_perf binary printed)", shown));
  const size_t first = text.find_first_not_of(" \t\r\n");
  if (text[first] == '{' || text[first] == '[')
    throw UsageError(fmt::format(
        "{}: not a nccl-tests log: it is JSON (gpuvs import nccl-tests reads the text the *_perf "
        "binaries print; nvbench and nvbandwidth JSON import as `gpuvs import nvbench` and "
        "`gpuvs import nvbandwidth`)",
        shown));
  const bool nccl_tests = !out.version.empty() || !out.program.empty() || !out.devices.empty() ||
                          out.config.threads.has_value();
  if (!nccl_tests)
    throw UsageError(fmt::format(
        "{}: not a nccl-tests log: no result row, and none of the lines nccl-tests prints "
        "before them (\"# nThread ...\", \"# Using devices\")",
        shown));
  const std::string why = comm::nccl_tests_error_summary(out);
  throw UsageError(fmt::format("{}: a nccl-tests log without a result row{}", shown,
                               why.empty() ? " (it ends before the first size)"
                                           : ": it failed: " + run_json::printable(why, 300)));
}

}  // namespace

FileImport read_nccl_tests_log(std::string_view raw, const std::string& name,
                               const ImportOptions& options) {
  const std::string text = as_utf8(raw);
  const comm::NcclTestsOutput out = comm::parse_nccl_tests_output(text);
  if (out.rows.empty()) nothing_to_import(text, out, name);
  const std::string op = which_op(out, name, options);
  if (out.devices.empty())
    throw UsageError(fmt::format(
        "{}: the log lists no devices (its \"# Using devices\" lines): how many ranks ran is "
        "not known",
        run_json::printable(name, 200)));

  FileImport file;
  const comm::NcclTestsDevice& first = out.devices.front();
  file.host = first.host;
  std::set<std::pair<std::string, int64_t>> processes;
  for (const comm::NcclTestsDevice& d : out.devices)
    processes.insert({d.host, d.pid});
  std::vector<int> devices;
  if (processes.size() == 1) {
    // One process drove every GPU: its device ordinals are the run's GPU indexes.
    for (const comm::NcclTestsDevice& d : out.devices) {
      if (d.device < 0 || d.device > 4096) continue;
      GpuInfo g = unknown_gpu(d.device);
      if (!d.name.empty()) g.name = d.name;
      g.pci_bus_id = nvml_bus_id(d.bus_id);
      file.gpus.push_back(g);
      if (std::find(devices.begin(), devices.end(), d.device) == devices.end())
        devices.push_back(d.device);
    }
    std::sort(devices.begin(), devices.end());
  } else {
    // Several processes: the GPUs of rank 0's host, in rank order; the results name
    // none of them, as gpuvs's own collectives across processes do.
    std::set<std::string> seen;
    for (const comm::NcclTestsDevice& d : out.devices) {
      if (d.host != first.host || !seen.insert(d.bus_id).second) continue;
      GpuInfo g = unknown_gpu(static_cast<int>(file.gpus.size()));
      if (!d.name.empty()) g.name = d.name;
      g.pci_bus_id = nvml_bus_id(d.bus_id);
      file.gpus.push_back(g);
    }
    file.summary.notes.push_back(fmt::format(
        "{} processes ran the ranks: the results name no GPU of the run's system (as gpuvs's "
        "own collectives across processes)",
        processes.size()));
  }
  if (!out.nccl_version.empty()) file.nccl_version = out.nccl_version;

  comm::NcclTestsResultOptions ro;
  ro.op = op;
  ro.ranks = static_cast<int>(out.devices.size());
  ro.devices = devices;
  ro.graph = out.config.graph.value_or(0) > 0;
  // nccl-tests takes its buffers from ncclMemAlloc where it was built against NCCL 2.19
  // or later (since early 2024); a log without its version line is older than that
  // line, which does not tell which.
  if (out.version.empty() || out.nccl_version.empty())
    ro.buffers = "unknown";
  else
    ro.buffers = nccl_at_least(out.nccl_version, 2, 19) ? "ncclMemAlloc" : "cudaMalloc";
  ro.provenance = "imported from " + file_label(name);
  file.results = comm::nccl_tests_results(out, ro);
  // A file a user hands gpuvs holds possible figures, or is refused.
  for (const Result& r : file.results)
    if (const std::string problem = quantity_problem(r.value, r.unit); !problem.empty())
      throw UsageError(fmt::format("{}: the row of size {}: {}", run_json::printable(name, 200),
                                   int_parameter(r, "bytes").value_or(0), problem));

  const size_t rows = out.rows.size();
  const size_t used = file.results.size() / 2;
  if (used < rows)
    file.summary.notes.push_back(fmt::format(
        "{} of {} rows without out-of-place time and bus bandwidth (cut short, or nothing moved)",
        rows - used, rows));
  const std::string context =
      fmt::format("nccl-tests {} ({})", out.program.empty() ? op : out.program, file_label(name));
  if (const std::string why = comm::nccl_tests_error_summary(out); !out.errors.empty())
    file.errors.push_back({context, why});
  else if (!out.avg_busbw_gbs)
    file.errors.push_back({context,
                           "the log ends before nccl-tests' closing \"# Avg bus bandwidth\" line: "
                           "the run did not finish, or the log was cut"});
  if (out.reduced_max_bytes)
    file.summary.notes.push_back(
        fmt::format("nccl-tests reduced its largest size to {} bytes for lack of memory",
                    *out.reduced_max_bytes));
  file.summary.what =
      fmt::format("{} ({}): {} sizes on {} GPUs", out.program.empty() ? op + "_perf" : out.program,
                  out.version.empty() ? "nccl-tests, no version line" : comm::nccl_tests_tool(out),
                  used, out.devices.size());
  return file;
}

}  // namespace gpuvs::import
