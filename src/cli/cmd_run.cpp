// `gpuvs run`: the main job. Detect, run the standard suite in its quick form,
// write the run file, print the summary. Where nothing can be measured (no GPU, no
// driver, a build without CUDA) it says so, then shows the bundled reference: an
// H200 measured by gpuvs itself, against the A100 datasheet and published figures,
// as a terminal table and an HTML report, each labelled for what it is.
#include <fmt/format.h>

#include <cstdio>
#include <filesystem>
#include <system_error>

#include "cli/app.h"
#include "cli/options.h"
#include "cli/session.h"
#include "comm/launch.h"
#include "core/atomic_file.h"
#include "core/embedded.h"
#include "core/text.h"
#include "report/compare.h"
#include "report/html.h"
#include "report/render.h"
#include "report/table.h"

#if GPUVS_HAVE_CUDA
#include "suite/registry.h"
#endif

namespace gpuvs::cli {

namespace {

constexpr std::string_view kReferenceRun = "data/reference/h200-sxm-run.json";
constexpr std::string_view kReferenceBaseline = "A100-SXM4-80GB";

ExitCode show_reference(const GlobalOptions& global) {
  const std::optional<std::string_view> text = embedded_file(kReferenceRun);
  if (!text) throw Error(fmt::format("this gpuvs was built without {}", kReferenceRun));
  const RunFile run = parse_run_file(*text, fmt::format("bundled {}", kReferenceRun));
  const Catalogue& catalogue = Catalogue::builtin();
  const GpuSpec& baseline = catalogue.get(kReferenceBaseline);

  const std::string day = run.meta.started_at.substr(0, 10);
  std::vector<CompareInput> inputs;
  inputs.push_back({.label = fmt::format("{} (datasheet)", baseline.id), .spec = &baseline});
  for (size_t g = 0; g < run.system.gpus.size(); ++g)
    inputs.push_back(
        {.label = fmt::format("{} (bundled gpuvs run, {})", run.system.gpus[g].name, day),
         .run = &run,
         .gpu_index = static_cast<int>(g)});
  const Comparison comparison =
      build_comparison(inputs, catalogue, Published::builtin(), CompareOptions{});

  const std::string note = fmt::format(
      "No GPU could be measured here. Shown instead: an H200 measured by gpuvs {} on {} "
      "(bundled reference run) against the {} datasheet and published figures.",
      run.meta.tool_version, day, baseline.id);
  const std::filesystem::path dir = global.out_dir.empty() ? "gpuvs-results" : global.out_dir;
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) throw Error(fmt::format("cannot create {}: {}", dir.string(), ec.message()));
  const std::filesystem::path html = dir / "reference-report.html";
  HtmlReportInput report;
  report.title = fmt::format("gpuvs reference: {} vs {}", baseline.id,
                             run.system.gpus.empty() ? "H200" : run.system.gpus[0].name);
  report.comparison = &comparison;
  report.runs = {&run};
  report.note = note;
  write_file_atomically(html, render_html(report));

  if (global.json) {
    print_text(stdout, "{}", render_comparison(comparison, TextFormat::kJson));
  } else {
    print_text(stdout, "{}\n{}\nHTML report: {}\n", fit_text(note, "", ""),
               render_comparison(comparison, TextFormat::kTerminal), html.string());
  }
  std::fflush(stdout);
  return ExitCode::kOk;
}

}  // namespace

void add_run_command(CLI::App& app, CliContext& ctx) {
  auto gpus = std::make_shared<std::string>();
  auto monitor_ms = std::make_shared<int>(100);
  CLI::App* sub = app.add_subcommand(
      "run",
      "Main job: detect, run the standard suite, write a run file (gpuvs.run/1) and "
      "print the summary. Without a GPU: the bundled H200 reference against the A100");
  sub->add_option("--gpu", *gpus, "GPUs to measure, e.g. 0,1 (default: all)");
  add_number_option(sub, "--monitor-interval", *monitor_ms, monitor_interval_rules(),
                    "Milliseconds between utilization samples of the measured GPUs (default "
                    "100; 0: off)");
  auto fleet = std::make_shared<bool>(false);
  sub->add_flag("--fleet-summary", *fleet,
                "Under srun or mpirun, with --out on a shared file system: once every rank "
                "has written its run file, rank 0 prints the outliers of the fleet "
                "(gpuvs compare --fleet) and writes OUT/fleet.json");
  sub->callback([&ctx, gpus, monitor_ms, fleet] {
    check_gpu_list(*gpus);  // a malformed list is a usage error on every machine
    SessionOptions options;
    options.command = "run";
    options.gpu_list = *gpus;
    options.quick = true;
    options.measure = quick_options();
    options.monitor_interval_ms = *monitor_ms;
    options.fleet_summary = *fleet;
#if GPUVS_HAVE_CUDA
    options.benchmarks = run_suite();
#endif
    try {
      ctx.exit_code = run_session(ctx.global, options);
    } catch (const CannotRunError& e) {
      if (!gpus->empty()) throw;  // GPUs were asked for by number: that is the answer
      // One rank of a launcher's (srun, mpirun): a node without a GPU is the answer a
      // fleet's script needs (exit 3), not a demonstration.
      if (comm::detect_ranks({}, comm::process_env()).multi_process()) throw;
      std::fprintf(stderr, "gpuvs: %s\n", e.what());
      ctx.exit_code = show_reference(ctx.global);
    }
  });
}

}  // namespace gpuvs::cli
