// `gpuvs check [--level N] [--gpu LIST] [--xid-window S] [--prometheus FILE]`: a
// verdict per GPU (pass / warn / fail, with the reason of every test) an admin can
// script: exit 0 every GPU passes, 1 any fails, 4 only warnings, 3 could not run
// (docs/check.md). Level 1 reads NVML alone, never CUDA, so it runs in a build
// without CUDA and beside a job that holds the GPU. Levels are a table
// (check/levels.h): a level not registered in this build says so and exits 2.
#include <fmt/format.h>

#include <filesystem>
#include <memory>
#include <optional>
#include <string>

#include "check/levels.h"
#if GPUVS_HAVE_CUDA
#include "check/gpu_levels.h"
#endif
#include "check/output.h"
#include "cli/app.h"
#include "cli/options.h"
#include "comm/launch.h"
#include "core/atomic_file.h"
#include "core/run_file.h"
#include "core/text.h"
#include "gpu/nvml.h"
#include "tune/cache.h"

namespace gpuvs::cli {

namespace {

namespace fs = std::filesystem;

struct CheckArgs {
  int level = 1;
  std::string gpus;
  double xid_window_s = 1.0;
  std::optional<double> duration_s;  // level 3
  std::string baseline;              // a run file, or a folder of them (levels 2, 3)
  std::string prometheus;
  std::string cache;  // the tune cache folder; empty: the default
};

// --baseline FILE, or DIR: the newest run file in DIR from this host, else the newest
// of all (by its start time); a file that is not a run file is skipped.
RunFile load_baseline(const std::string& where, const std::string& host) {
  const fs::path p = where;
  std::error_code ec;
  if (!fs::is_directory(p, ec)) return load_run_file(p);
  std::optional<RunFile> best, best_here;
  for (auto it = fs::directory_iterator(p, ec); !ec && it != fs::directory_iterator();
       it.increment(ec)) {
    if (it->path().extension() != ".json") continue;
    try {
      RunFile r = load_run_file(it->path());
      if (r.results.empty()) continue;
      auto& slot = r.meta.host == host ? best_here : best;
      if (!slot || slot->meta.started_at < r.meta.started_at) slot = std::move(r);
    } catch (const Error&) {
    }
  }
  if (best_here) return std::move(*best_here);
  if (best) return std::move(*best);
  throw UsageError(
      fmt::format("--baseline {}: no run file with results in this folder", shown_text(where)));
}

// "level 1", "levels 1, 2, 3"
std::string registered_levels() {
  std::string out;
  for (const check::Level& l : check::levels())
    out += (out.empty() ? "" : ", ") + fmt::format("{}", l.number);
  return (check::levels().size() == 1 ? "level " : "levels ") + out;
}

// Everything about the command line, before NVML is touched.
const check::Level& check_args(const CheckArgs& args) {
  check_gpu_list(args.gpus);
  if (!args.prometheus.empty()) {
    const fs::path prom = args.prometheus;
    if (prom.has_parent_path() && !fs::is_directory(prom.parent_path()))
      throw UsageError(
          fmt::format("--prometheus: directory {} does not exist", prom.parent_path().string()));
    if (const std::string p = write_problem(prom); !p.empty())
      throw UsageError(fmt::format("check --prometheus {}: {} (nothing was checked)",
                                   shown_text(args.prometheus), p));
  }
  if (args.duration_s && args.level != 3)
    throw UsageError("--duration: the sustained load of --level 3 only");
  if (!args.baseline.empty() && args.level < 2)
    throw UsageError(
        "--baseline: levels 2 and 3 measure the figures a baseline judges (--level 2 or 3)");
  const check::Level* level = check::find_level(args.level);
  if (level == nullptr)
    throw UsageError(fmt::format(
        "check: level {} is not in this build yet (this build has {}); nothing was checked",
        args.level, registered_levels()));
  return *level;
}

void run_check(const CheckArgs& args, const check::Level& level, CliContext& ctx) {
  const nvml::Library& library = nvml::library();
  if (!library.available())
    throw CannotRunError(
        fmt::format("check: NVML is not available ({}): no NVIDIA driver here, nothing was checked",
                    library.unavailable_reason()));
  const int count = static_cast<int>(library.device_count().value_or(0));
  if (count == 0) throw CannotRunError("check: NVML sees no GPU; nothing was checked");

  // One rank of several on this node (srun --ntasks-per-node=<GPUs>) checks the GPU of
  // its local rank, by NVML index; one rank per node (or one process) checks the list.
  const comm::Launch ranks = comm::detect_ranks({}, comm::process_env());
  check::CheckRequest request;
  request.gpus = comm::rank_devices(ranks, count, parse_gpu_list(args.gpus, count));
  request.xid_window_s = args.xid_window_s;
  // The tune cache's fingerprints: a driver that changed since a GPU was tuned warns.
  // A cache that cannot be read is no reason to fail a health check: nothing to compare.
  try {
    const tune::CachedEntries cached = tune::list_cached(tune::default_cache_dir(
        args.cache.empty() ? std::nullopt : std::optional<std::filesystem::path>(args.cache),
        tune::process_environment()));
    for (const tune::DeviceTune& t : cached.entries)
      request.cached_versions[t.fingerprint.uuid] = {t.fingerprint.driver_version,
                                                     t.fingerprint.cuda_driver_version};
  } catch (const Error&) {
  }

  const Meta meta = make_meta("check", ctx.global.argv);
  std::optional<RunFile> baseline;
  if (!args.baseline.empty()) baseline = load_baseline(args.baseline, meta.host);
  request.baseline = baseline ? &*baseline : nullptr;
  if (args.duration_s) request.duration_s = *args.duration_s;
  // Levels 2 and 3 take minutes: one step, its phases as details.
  const std::unique_ptr<Progress> progress = make_progress(ctx.global);
  if (level.number >= 2) {
    progress->begin(1);
    progress->step(fmt::format("check level {} on {} GPU(s)", level.number, request.gpus.size()));
    request.progress = [&](const std::string& d) { progress->detail(d); };
  }
  check::CheckReport report;
  report.tool_version = version_line();
  report.host = meta.host;
  report.started_at = meta.started_at;
  check::run_level(level, library, request, report);
  if (level.number >= 2) progress->done();

  // NVML's strings (names, UUIDs) are not checked to be UTF-8: replace what is not.
  const std::string json =
      check::to_json(report).dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
  if (ctx.global.json)
    print_text(stdout, "{}", json);
  else
    print_text(stdout, "{}", check::render_text(report));
  const std::optional<int> rank =
      ranks.multi_process() ? std::optional<int>(ranks.rank) : std::nullopt;
  if (!ctx.global.out_dir.empty()) {
    write_file_atomically(run_file_path(ctx.global, "check", meta, rank), json, "the check file");
    // Levels 2 and 3: what they measured, as a run file (a later --baseline).
    if (report.run) {
      report.run->meta.argv = meta.argv;
      report.run->meta.tool_version = meta.tool_version;
      report.run->meta.git_sha = meta.git_sha;
      save_run_file(*report.run, run_file_path(ctx.global, "check-run", meta, rank));
    }
  }
  if (!args.prometheus.empty())
    write_file_atomically(args.prometheus, check::prometheus_text(report), "the Prometheus file");
  ctx.exit_code = report.exit_code;
}

}  // namespace

void add_check_command(CLI::App& app, CliContext& ctx) {
#if GPUVS_HAVE_CUDA
  check::register_gpu_levels();
#endif
  auto args = std::make_shared<CheckArgs>();
  CLI::App* sub = app.add_subcommand(
      "check",
      "Health verdict per GPU (pass / warn / fail, with the reason of every test) for "
      "scripts: level 1 reads NVML in seconds, without load; level 2 adds a memory test, "
      "GEMM consistency and bandwidth floors (about a minute per GPU); level 3 a sustained "
      "load");
  add_number_option(sub, "--level", args->level,
                    NumberRules::count().at_least(1).at_most(check::kMaxLevel).eg("1"),
                    fmt::format("Check level (default 1; this build has {})", registered_levels()));
  sub->add_option("--gpu", args->gpus, "GPUs to check by NVML index, e.g. 0,1 (default: all)");
  add_number_option(sub, "--xid-window", args->xid_window_s,
                    NumberRules::plain().or_zero().at_most(600).eg("1, 0.5"),
                    "Seconds to collect Xid events, between the two readings of the error "
                    "counters (default 1)");
  add_number_option(sub, "--duration", args->duration_s,
                    NumberRules::plain().at_least(10).at_most(86400).eg("120, 300"),
                    "Level 3: seconds of sustained load (default 300)");
  add_path_option(sub, "--baseline", args->baseline,
                  "Levels 2, 3: judge the figures against a run file, or the newest run file "
                  "of this host in a folder (SuperBench's rules: -5 % bandwidths and GEMM, "
                  "+10 % launch latency; docs/compare.md)");
  add_path_option(sub, "--cache", args->cache,
                  "Tune cache whose fingerprints the driver versions are compared with "
                  "(default $XDG_CACHE_HOME/gpuvs/tune, else ~/.cache/gpuvs/tune)");
  add_path_option(sub, "--prometheus", args->prometheus,
                  "Write the verdicts and counters to FILE (Prometheus text format, "
                  "node_exporter textfile collector)");
  sub->footer(
      "Exit code: 0 every GPU passes; 1 a GPU fails; 4 warnings only; 3 could not run (no "
      "driver, no GPU); 2 usage error. --json prints the gpuvs.check/1 document; with the "
      "global --out DIR it is also written to DIR/check-<UTC stamp>-<host>.json "
      "(-<host>-rank<R>.json for each rank under srun or mpirun, which checks the GPU of its "
      "local rank when the node has several ranks).");
  sub->callback([&ctx, args] {
    const check::Level& level = check_args(*args);
    run_check(*args, level, ctx);
  });
}

}  // namespace gpuvs::cli
