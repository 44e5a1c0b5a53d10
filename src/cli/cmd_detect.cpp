// `gpuvs detect`: the environment fingerprint (GPUs, driver, libraries, host).
#include <fmt/format.h>

#include "cli/app.h"
#include "cli/session.h"
#include "core/text.h"
#include "report/summary.h"

#if GPUVS_HAVE_CUDA
#include "gpu/probe.h"
#endif

namespace gpuvs::cli {

void add_detect_command(CLI::App& app, CliContext& ctx) {
  CLI::App* sub = app.add_subcommand(
      "detect",
      "Environment fingerprint: every GPU, its clocks, links and limits, the driver "
      "and the CUDA libraries (--json: as a run file with no results)");
  sub->callback([&ctx] {
#if GPUVS_HAVE_CUDA
    RunFile run;
    run.meta = make_meta("detect", ctx.global.argv);
    run.system = probe_system();
    run.meta.finished_at = run.meta.started_at;
    if (ctx.global.json)
      print_text(stdout, "{}", to_json_text(run));
    else
      print_text(stdout, "{}", render_system(run.system));
    if (!ctx.global.out_dir.empty())
      save_run_file(run, run_file_path(ctx.global, "detect", run.meta));
    ctx.exit_code = ExitCode::kOk;
#else
    (void)ctx;
    throw_built_without_cuda("detect");
#endif
  });
}

}  // namespace gpuvs::cli
