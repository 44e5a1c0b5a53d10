// `gpuvs import nccl-tests LOG... | nvbench JSON... | nvbandwidth JSON... [--out FILE]`:
// other tools' results as one run file (import/import.h, docs/import.md), which
// `gpuvs compare` reads like any other. No GPU is touched: it works in every build.
// Every file is read and checked first; the run file is then written at once,
// atomically, so a refusal leaves nothing behind. --json: one gpuvs.import/1 document
// on stdout saying what was read and written.
#include <fmt/format.h>

#include <memory>

#include <nlohmann/json.hpp>

#include "cli/app.h"
#include "cli/options.h"
#include "core/text.h"
#include "core/units.h"
#include "import/import.h"

namespace gpuvs::cli {

namespace {

struct ImportArgs {
  std::string tool;
  std::vector<std::string> files;
  std::string out;
  std::string op;
  std::optional<double> buffer_bytes;
};

void print_summary(const import::ImportOutcome& outcome, const std::string& tool,
                   const std::string& path, bool json) {
  const RunFile& run = outcome.run;
  if (json) {
    nlohmann::ordered_json files = nlohmann::ordered_json::array();
    for (const import::FileSummary& f : outcome.files)
      files.push_back({{"path", f.path},
                       {"what", f.what},
                       {"results", f.results},
                       {"errors", f.errors},
                       {"notes", f.notes}});
    const nlohmann::ordered_json doc = {{"schema", "gpuvs.import/1"},
                                        {"tool", tool},
                                        {"out", path},
                                        {"host", run.meta.host},
                                        {"gpus", run.system.gpus.size()},
                                        {"results", run.results.size()},
                                        {"errors", run.errors.size()},
                                        {"files", std::move(files)}};
    print_text(stdout, "{}\n",
               doc.dump(2, ' ', false, nlohmann::ordered_json::error_handler_t::replace));
    return;
  }
  print_text(stdout, "gpuvs import: {} result{} from {} {} file{} into {}\n", run.results.size(),
             run.results.size() == 1 ? "" : "s", outcome.files.size(), tool,
             outcome.files.size() == 1 ? "" : "s", path);
  for (const import::FileSummary& f : outcome.files) {
    print_text(stdout, "  {}: {}, {} result{}\n", one_line(f.path), one_line(f.what), f.results,
               f.results == 1 ? "" : "s");
    for (const std::string& s : f.notes)
      print_text(stdout, "    note: {}\n", one_line(s));
  }
  for (const RunError& e : run.errors)
    print_text(stdout, "  reported failure: {}: {}\n", one_line(e.context), one_line(e.message));
}

void run_import(const ImportArgs& args, CliContext& ctx) {
  import::ImportOptions options;
  options.tool = args.tool;
  options.files = args.files;
  options.op = args.op;
  if (args.buffer_bytes) options.buffer_bytes = static_cast<int64_t>(*args.buffer_bytes);
  import::check_import_options(options);
  const import::ImportOutcome outcome =
      import::import_files(options, make_meta("import", ctx.global.argv));
  // The default place is that of every run file (--out DIR, else gpuvs-results/),
  // made only now that every file has been read.
  const std::filesystem::path path = args.out.empty()
                                         ? run_file_path(ctx.global, "import", outcome.run.meta)
                                         : std::filesystem::path(args.out);
  save_run_file(outcome.run, path);
  print_summary(outcome, args.tool, path.string(), ctx.global.json);
  ctx.exit_code = ExitCode::kOk;
}

}  // namespace

void add_import_command(CLI::App& app, CliContext& ctx) {
  auto args = std::make_shared<ImportArgs>();
  CLI::App* sub = app.add_subcommand(
      "import",
      "Other tools' results as a run file: nccl-tests logs, nvbench JSON, nvbandwidth JSON; "
      "gpuvs compare puts them beside gpuvs's own figures (docs/import.md)");
  sub->add_option("tool", args->tool,
                  "The tool that wrote the files: nccl-tests, nvbench, nvbandwidth")
      ->required()
      ->type_name("TOOL");
  sub->add_option("files", args->files,
                  "Its output: nccl-tests' stdout (*_perf), nvbench's --json file, nvbandwidth's "
                  "-j stdout")
      ->required()
      ->type_name("FILE");
  add_path_option(sub, "--out", args->out,
                  "The run file to write (default: import-<time>-<host>.json in the global "
                  "--out DIR, else gpuvs-results/)");
  sub->add_option("--op", args->op,
                  "nccl-tests: the collective of a log that does not name its binary (older "
                  "versions), e.g. all_reduce")
      ->type_name("OP");
  add_number_option(sub, "--buffer-size", args->buffer_bytes,
                    NumberRules::bytes()
                        .bare_binary()
                        .whole()
                        .at_least(double(int64_t{1} << 20))
                        .at_most(double(int64_t{1} << 40))
                        .eg("512M, 64MiB"),
                    "nvbandwidth: its -b, which its JSON does not record, e.g. 512M (default: "
                    "its own, 512 MiB since 0.7, 64 MiB before)")
      ->type_name("SIZE");
  sub->footer(
      "Ids: nccl-tests: collective.<op>.busbw.nccl_tests and .time.nccl_tests; nvbandwidth: "
      "host.h2d|d2h.pinned.nvbandwidth, peer.ce|sm.unidirectional|bidirectional.nvbandwidth, "
      "peer.latency.nvbandwidth where its test is gpuvs's, nvbandwidth.<test> otherwise; "
      "nvbench: nvbench.gpu_time, .batch_gpu_time, .bandwidth. Every result names its tool "
      "(parameters.tool). docs/import.md has the definitions.");
  sub->callback([&ctx, args] { run_import(*args, ctx); });
}

}  // namespace gpuvs::cli
