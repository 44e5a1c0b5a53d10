// `gpuvs detect`: the environment fingerprint (GPUs, driver, libraries, host), then
// each GPU's tuned settings from the tune cache, or why there are none. --json stays
// the run-file document (gpuvs.run/1 with no results): the tuned section is text only.
#include <fmt/format.h>

#include <memory>

#include "cli/app.h"
#include "cli/options.h"
#include "cli/session.h"
#include "cli/tune_session.h"
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
  auto cache = std::make_shared<std::string>();
  add_path_option(sub, "--cache", *cache,
                  "Tune cache folder to read (default $XDG_CACHE_HOME/gpuvs/tune, else "
                  "~/.cache/gpuvs/tune)");
  sub->callback([&ctx, cache] {
#if GPUVS_HAVE_CUDA
    RunFile run;
    run.meta = make_meta("detect", ctx.global.argv);
    run.system = probe_system();
    run.meta.finished_at = run.meta.started_at;
    if (ctx.global.json)
      print_text(stdout, "{}", to_json_text(run));
    else
      print_text(stdout, "{}{}", render_system(run.system),
                 render_tuned_section(
                     run.system,
                     cache->empty() ? std::nullopt : std::optional<std::filesystem::path>(*cache)));
    if (!ctx.global.out_dir.empty())
      save_run_file(run, run_file_path(ctx.global, "detect", run.meta));
    ctx.exit_code = ExitCode::kOk;
#else
    (void)ctx;
    (void)cache;
    throw_built_without_cuda("detect");
#endif
  });
}

}  // namespace gpuvs::cli
