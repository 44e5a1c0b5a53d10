#include "cli/session.h"

#include <fmt/format.h>

#include <cstdio>

#include "core/host.h"
#include "core/verdict.h"
#include "report/summary.h"

#if GPUVS_HAVE_CUDA
#include "bench/registry.h"
#include "gpu/probe.h"
#endif

namespace gpuvs::cli {

void throw_built_without_cuda(const std::string& command) {
  throw CannotRunError(fmt::format(
      "this gpuvs was built without CUDA (GPUVS_CUDA=OFF), so `gpuvs {}` cannot measure; "
      "rebuild with the CUDA toolkit on PATH",
      command));
}

#if GPUVS_HAVE_CUDA

ExitCode run_session(const GlobalOptions& global, const SessionOptions& options) {
  RunFile run;
  run.meta = make_meta(options.command, global.argv);
  run.system = probe_system();  // CannotRunError (exit 3) when there is no GPU
  const std::vector<int> devices =
      parse_gpu_list(options.gpu_list, static_cast<int>(run.system.gpus.size()));
  const auto path = run_file_path(global, options.command, run.meta);
  save_run_file(run, path);  // the file exists from the start, complete at every step

  // One step per (benchmark, GPU), or per benchmark for those that need every GPU.
  struct Step {
    const BenchmarkInfo* bench;
    int device;  // -1: all selected GPUs
  };
  std::vector<Step> steps;
  for (const BenchmarkInfo* bench : options.benchmarks) {
    if (bench->scope == BenchScope::kAllDevices) {
      steps.push_back({bench, -1});
    } else {
      for (int device : devices)
        steps.push_back({bench, device});
    }
  }

  Progress progress(global);
  for (size_t i = 0; i < steps.size(); ++i) {
    const Step& s = steps[i];
    const std::string where =
        s.device < 0
            ? fmt::format("{} GPU(s)", devices.size())
            : fmt::format("GPU {} ({})", s.device, short_gpu_name(run.system.gpus[s.device].name));
    progress.step(fmt::format("[{}/{}] {} on {}", i + 1, steps.size(), s.bench->name, where));
    BenchContext ctx{run.system,          s.device < 0 ? devices.front() : s.device,
                     options.measure,     options.quick,
                     steady_wall_clock(), devices};
    try {
      for (Result& r : s.bench->run(ctx))
        run.results.push_back(std::move(r));
    } catch (const Error& e) {
      run.errors.push_back({fmt::format("bench {} on {}", s.bench->name, where), e.what()});
    }
    run.meta.finished_at = utc_now_iso8601();
    save_run_file(run, path);
  }
  progress.done();

  if (global.json) {
    fmt::print("{}", to_json_text(run));
  } else {
    fmt::print("{}\nrun file: {}\n", render_summary(run), path.string());
  }
  std::fflush(stdout);
  return exit_code_for(run);
}

#else

ExitCode run_session(const GlobalOptions&, const SessionOptions& options) {
  throw_built_without_cuda(options.command);
}

#endif

}  // namespace gpuvs::cli
