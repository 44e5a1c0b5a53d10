// `gpuvs import` (import.h): the table of readers, the checks before any file is read,
// and the run the files make together.
#include "import/import.h"

#include <fmt/format.h>

#include <algorithm>
#include <functional>

#include "comm/nccl_tests.h"
#include "core/error.h"
#include "core/input_file.h"
#include "core/run_file_json.h"
#include "core/suggest.h"
#include "import/import_detail.h"
#include "suite/produces.h"

namespace gpuvs::import {

namespace {

// The largest file an import reads: nccl-tests logs with NCCL_DEBUG=INFO run to tens of
// megabytes on many GPUs; nvbench's JSON of a large sweep to a few.
constexpr size_t kMaxToolFileBytes = size_t{64} << 20;

using Reader =
    std::function<FileImport(std::string_view, const std::string&, const ImportOptions&)>;

struct ReaderRow {
  std::string_view tool;  // as in the table of suite/produces
  std::string_view kind;  // the kind of file, for messages: "nccl-tests log"
  Reader read;
};

const std::vector<ReaderRow>& readers() {
  static const std::vector<ReaderRow> t = {
      {"nccl-tests", "nccl-tests log", read_nccl_tests_log},
      {"nvbench", "nvbench JSON file", read_nvbench_json},
      {"nvbandwidth", "nvbandwidth JSON file", read_nvbandwidth_json},
  };
  return t;
}

const ReaderRow* find_reader(std::string_view tool) {
  for (const ReaderRow& r : readers())
    if (r.tool == tool) return &r;
  return nullptr;
}

}  // namespace

std::vector<std::string> import_tools() {
  std::vector<std::string> out;
  for (const ImporterDef& d : importer_defs())
    out.emplace_back(d.tool);
  return out;
}

void check_import_options(const ImportOptions& options) {
  if (!find_importer_def(options.tool) || !find_reader(options.tool)) {
    const std::vector<std::string> tools = import_tools();
    std::string known;
    for (const std::string& t : tools)
      known += (known.empty() ? "" : ", ") + t;
    throw UsageError(fmt::format("import: unknown tool {}{}", run_json::quote(options.tool),
                                 did_you_mean_or_known(suggest(options.tool, tools), known)));
  }
  if (!options.op.empty() && options.tool != "nccl-tests")
    throw UsageError("import: --op goes with nccl-tests (the collective of a log)");
  if (options.buffer_bytes && options.tool != "nvbandwidth")
    throw UsageError("import: --buffer-size goes with nvbandwidth (its -b)");
  if (!options.op.empty()) {
    const auto& ops = comm::nccl_tests_ops();
    if (std::find(ops.begin(), ops.end(), options.op) == ops.end()) {
      std::string known;
      for (const std::string& o : ops)
        known += (known.empty() ? "" : ", ") + o;
      throw UsageError(fmt::format("import: --op {}: not a collective gpuvs compares{}",
                                   run_json::quote(options.op),
                                   did_you_mean_or_known(suggest(options.op, ops), known)));
    }
  }
  if (options.files.empty())
    throw UsageError(fmt::format("import {}: give the files to import (e.g. gpuvs import {} {})",
                                 options.tool, options.tool,
                                 options.tool == "nccl-tests" ? "all_reduce.log" : "out.json"));
}

ImportOutcome import_files(const ImportOptions& options, Meta meta) {
  check_import_options(options);
  const ReaderRow& reader = *find_reader(options.tool);
  std::vector<NamedText> texts;
  for (const std::string& path : options.files)
    texts.push_back({path, read_input_file(path, path, reader.kind, kMaxToolFileBytes)});
  return import_texts(options, texts, std::move(meta));
}

ImportOutcome import_texts(const ImportOptions& options, const std::vector<NamedText>& texts,
                           Meta meta) {
  ImportOptions checked = options;
  if (checked.files.empty())
    for (const NamedText& t : texts)
      checked.files.push_back(t.name);
  check_import_options(checked);
  const ReaderRow& reader = *find_reader(options.tool);
  ImportOutcome outcome;
  RunFile& run = outcome.run;
  run.system.os = "unknown";
  run.system.cpu.model = "unknown";
  meta.host.clear();
  meta.finished_at = meta.started_at;
  run.meta = std::move(meta);
  std::vector<std::string> done;
  for (const NamedText& t : texts) {
    FileImport file = reader.read(t.text, t.name, options);
    file.summary.path = t.name;
    file.summary.results = file.results.size();
    file.summary.errors = file.errors.size();
    outcome.files.push_back(file.summary);
    merge_into(run, std::move(file), t.name, done);
    done.push_back(t.name);
  }
  if (run.meta.host.empty()) run.meta.host = "unknown";
  return outcome;
}

}  // namespace gpuvs::import
