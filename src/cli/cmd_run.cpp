// `gpuvs run`: the main job. Detect, run the standard suite in its quick form,
// write the run file, print the summary.
#include "cli/app.h"
#include "cli/session.h"

#if GPUVS_HAVE_CUDA
#include "bench/registry.h"
#endif

namespace gpuvs::cli {

void add_run_command(CLI::App& app, CliContext& ctx) {
  auto gpus = std::make_shared<std::string>();
  CLI::App* sub = app.add_subcommand(
      "run",
      "Main job: detect, run the standard suite, write a run file (gpuvs.run/1) and "
      "print the summary");
  sub->add_option("--gpu", *gpus, "GPUs to measure, e.g. 0,1 (default: all)");
  sub->callback([&ctx, gpus] {
    SessionOptions options;
    options.command = "run";
    options.gpu_list = *gpus;
    options.quick = true;
    options.measure = quick_options();
#if GPUVS_HAVE_CUDA
    options.benchmarks = run_suite();
#endif
    ctx.exit_code = run_session(ctx.global, options);
  });
}

}  // namespace gpuvs::cli
