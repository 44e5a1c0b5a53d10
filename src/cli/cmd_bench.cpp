// `gpuvs bench [NAME...]`: micro-benchmarks by name or group, full measurement rules.
#include <fmt/format.h>

#include "cli/app.h"
#include "cli/session.h"

#if GPUVS_HAVE_CUDA
#include "bench/registry.h"
#endif

namespace gpuvs::cli {

namespace {

struct BenchArgs {
  std::vector<std::string> names;
  std::string gpus;
  bool list = false;
  bool quick = false;
  double time_cap_s = 0;
  double target_noise = 0;
};

}  // namespace

void add_bench_command(CLI::App& app, CliContext& ctx) {
  auto args = std::make_shared<BenchArgs>();
  CLI::App* sub = app.add_subcommand(
      "bench",
      "Micro-benchmarks by name or group (compute, memory, host, peer, collectives, "
      "launch); --list shows them");
  sub->add_option("names", args->names, "Benchmarks or groups to run (default: all)");
  sub->add_option("--gpu", args->gpus, "GPUs to measure, e.g. 0,1 (default: all)");
  sub->add_flag("--list", args->list, "List the benchmarks and exit");
  sub->add_flag("--quick", args->quick, "Short pass, as in `gpuvs run`");
  sub->add_option("--time-cap", args->time_cap_s, "Seconds of sampling per result (default 2)")
      ->check(CLI::PositiveNumber);
  sub->add_option("--noise", args->target_noise,
                  "Stop sampling at this relative noise, e.g. 0.005 (default)")
      ->check(CLI::Range(0.0, 1.0));
  sub->callback([&ctx, args] {
#if GPUVS_HAVE_CUDA
    if (args->list) {
      for (const BenchmarkInfo& b : benchmarks())
        fmt::print("{:<16} {:<12} {}\n", b.name, b.group, b.summary);
      ctx.exit_code = ExitCode::kOk;
      return;
    }
    SessionOptions options;
    options.command = "bench";
    options.gpu_list = args->gpus;
    options.benchmarks = select_benchmarks(args->names);
    options.quick = args->quick;
    options.measure = args->quick ? quick_options() : MeasureOptions{};
    if (args->time_cap_s > 0) options.measure.time_cap_s = args->time_cap_s;
    if (args->target_noise > 0) options.measure.target_noise = args->target_noise;
    ctx.exit_code = run_session(ctx.global, options);
#else
    (void)ctx;
    (void)args;
    throw_built_without_cuda("bench");
#endif
  });
}

}  // namespace gpuvs::cli
