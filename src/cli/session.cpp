#include "cli/session.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdio>

#include "cli/fleet_folder.h"
#include "cli/run_html.h"
#include "core/host.h"
#include "core/text.h"
#include "core/verdict.h"
#include "report/summary.h"

#if GPUVS_HAVE_CUDA
#include "comm/nccl_comm.h"
#include "comm/world.h"
#include "gpu/probe.h"
#include "monitor/nvml_source.h"
#include "suite/registry.h"
#endif

namespace gpuvs::cli {

void throw_built_without_cuda(const std::string& command) {
  throw CannotRunError(fmt::format(
      "this gpuvs was built without CUDA (GPUVS_CUDA=OFF), so `gpuvs {}` cannot measure; "
      "rebuild with the CUDA toolkit on PATH",
      command));
}

#if GPUVS_HAVE_CUDA

namespace {

bool is_collective(const BenchmarkInfo* b) {
  return b->group == "collectives";
}

}  // namespace

ExitCode run_session(const GlobalOptions& global, const SessionOptions& options) {
  // Several processes (mpirun, srun, NCCL_COMM_ID, a rendezvous file): every rank
  // measures its own node's GPUs (the GPU of its local rank when the node has several
  // ranks) and writes its own run file, named with its host and rank; the collectives,
  // when asked, run over all ranks, one GPU each, once the ranks have met. Ranks that
  // have no way to meet run the collectives within their node, as one process would.
  const bool collectives =
      std::any_of(options.benchmarks.begin(), options.benchmarks.end(), is_collective);
  const bool per_node =
      !std::all_of(options.benchmarks.begin(), options.benchmarks.end(), is_collective);
  const comm::Launch ranks = comm::detect_ranks(options.collectives.launch, comm::process_env());
  comm::Launch launch = ranks;
  std::string unmet;  // why the ranks cannot meet, when that does not stop the run
  if (options.fleet_summary) {
    if (!ranks.multi_process())
      throw UsageError(
          "--fleet-summary: for the ranks of a launcher (srun, mpirun, --rank/--ranks); one "
          "process has no fleet to summarise: run `gpuvs compare --fleet DIR` over the files");
    if (global.out_dir.empty())
      throw UsageError(
          "--fleet-summary needs --out DIR on a file system every rank sees: rank 0 reads "
          "the other ranks' run files there");
    // Rank 0 must know when every rank has written its file: the ranks meet.
    launch = comm::detect_launch(options.collectives.launch, comm::process_env(),
                                 comm::built_with_mpi());
  } else if (ranks.multi_process() && collectives) {
    try {
      launch = comm::detect_launch(options.collectives.launch, comm::process_env(),
                                   comm::built_with_mpi());
    } catch (const UsageError& e) {
      if (!per_node) throw;
      unmet = e.what();
    }
  }
  const bool meet = launch.multi_process() && launch.mode != comm::LaunchMode::kSingleProcess;

  RunFile run;
  run.meta = make_meta(options.command, global.argv);
  run.system = probe_system();  // CannotRunError (exit 3) when there is no GPU
  const int visible = static_cast<int>(run.system.gpus.size());
  const std::vector<int> node_devices =
      comm::rank_devices(ranks, visible, parse_gpu_list(options.gpu_list, visible));
  std::unique_ptr<comm::World> world;
  if (meet) world = comm::join_world(launch, options.collectives.timeout_s, visible);
  std::vector<int> devices = node_devices;  // what the monitor watches
  if (world && !per_node) devices = {world->device};
  // Every rank with a node of its own to measure writes a run file; with collectives
  // only, rank 0 writes the one file. Rank 0 (or the only process) talks on stdout.
  const bool writer = !ranks.multi_process() || per_node || ranks.rank == 0;
  const bool talks = ranks.rank == 0;
  GlobalOptions shown = global;
  if (!talks) shown.quiet = true;
  const auto path =
      writer ? run_file_path(global, options.command, run.meta,
                             ranks.multi_process() && per_node ? std::optional<int>(ranks.rank)
                                                               : std::nullopt)
             : std::filesystem::path();
  auto save = [&] {
    if (writer) save_run_file(run, path);
  };
  save();  // the file exists from the start, complete at every step
  if (!unmet.empty() && talks)
    print_text(stderr, "gpuvs: the collectives run within each node: {}\n", unmet);

  // Utilization of the measured GPUs while the session runs (docs/monitor.md). Only
  // the writer samples, its own GPUs: one NVML thread per host, not per rank.
  std::unique_ptr<monitor::RunRecorder> recorder;
  if (writer && options.monitor_interval_ms > 0) {
    recorder = monitor::make_nvml_recorder(run.system, devices,
                                           std::chrono::milliseconds(options.monitor_interval_ms));
    recorder->start();
    for (const std::string& note : recorder->notes())
      if (!global.quiet) print_text(stderr, "gpuvs: monitor: {}\n", note);
  }

  // One step per (benchmark, GPU), or per benchmark for those that need every GPU; the
  // collectives of ranks that met take each rank's one GPU.
  struct Step {
    const BenchmarkInfo* bench;
    int device;  // -1: all of `devices`
    std::vector<int> devices;
  };
  std::vector<Step> steps;
  for (const BenchmarkInfo* bench : options.benchmarks) {
    const std::vector<int> on =
        world && is_collective(bench) ? std::vector<int>{world->device} : node_devices;
    if (bench->scope == BenchScope::kAllDevices) {
      steps.push_back({bench, -1, on});
    } else {
      for (int device : on)
        steps.push_back({bench, device, {device}});
    }
  }

  const std::unique_ptr<Progress> progress = make_progress(shown);
  progress->begin(static_cast<int>(steps.size()));
  bool aborted = false;
  constexpr double kCheckpointS = 2;
  double last_checkpoint_s = 0;
  for (size_t i = 0; i < steps.size() && !aborted; ++i) {
    const Step& s = steps[i];
    const std::string where =
        world != nullptr && is_collective(s.bench) ? fmt::format("{} ranks", world->size())
        : s.device < 0
            ? fmt::format("{} GPU(s)", s.devices.size())
            : fmt::format("GPU {} ({})", s.device, short_gpu_name(run.system.gpus[s.device].name));
    progress->step(fmt::format("{} on {}", s.bench->name, where));
    BenchContext ctx{.system = run.system,
                     .device = s.device < 0 ? s.devices.front() : s.device,
                     .options = options.measure,
                     .quick = options.quick,
                     .clock = steady_wall_clock(),
                     .devices = s.devices,
                     .collectives = &options.collectives,
                     .world = is_collective(s.bench) ? world.get() : nullptr,
                     .comm_record = &run.comm,
                     .progress = [&](const std::string& detail) { progress->detail(detail); },
                     .checkpoint =
                         [&](std::span<const Result> partial) {
                           const double t = steady_wall_clock().now_s();
                           if (!writer || t - last_checkpoint_s < kCheckpointS) return;
                           last_checkpoint_s = t;
                           RunFile copy = run;
                           copy.results.insert(copy.results.end(), partial.begin(), partial.end());
                           copy.meta.finished_at = utc_now_iso8601();
                           save_run_file(copy, path);
                         },
                     .model = options.model ? &*options.model : nullptr};
    const size_t first_result = run.results.size();
    const double step_begin_s = recorder ? recorder->now_s() : 0.0;
    try {
      for (Result& r : s.bench->run(ctx))
        run.results.push_back(std::move(r));
    } catch (comm::CollectiveAbort& e) {
      // The communicator is gone (timeout, dead peer, NCCL error): keep what was
      // measured, say why, and stop: other ranks are stopping too.
      for (Result& r : e.partial)
        run.results.push_back(std::move(r));
      run.errors.push_back({fmt::format("bench {} on {}", s.bench->name, where), e.what()});
      progress->fail(e.what());
      aborted = true;
      if (!talks) print_text(stderr, "gpuvs rank {}: error: {}\n", ranks.rank, e.what());
    } catch (const Error& e) {
      run.errors.push_back({fmt::format("bench {} on {}", s.bench->name, where), e.what()});
      if (!talks) print_text(stderr, "gpuvs rank {}: error: {}\n", ranks.rank, e.what());
      // `gpuvs model` asked for what this GPU or model cannot do (fp8 on ResNet-50):
      // a usage error, exit 2, once the run file records it (main says why, once).
      if (options.model && e.code() == ExitCode::kUsage) {
        save();
        throw;
      }
      progress->fail(e.what());
    }
    if (recorder) {
      recorder->step_done(run.results, first_result, std::string(s.bench->name), step_begin_s,
                          s.devices);
    }
    run.meta.finished_at = utc_now_iso8601();
    save();
  }
  progress->done();
  if (recorder) {
    recorder->finish(run);  // the timeline, and each step's final window
    save();
  }
  bool everyone = false;  // every rank reached the end (rank 0 knows)
  if (world != nullptr && !aborted) {
    const std::vector<int> missing = world->finish();
    for (int r : missing) {
      run.errors.push_back({"collectives: orderly end",
                            fmt::format("{} did not finish", world->control->describe_rank(r))});
    }
    everyone = missing.empty();
    save();
  }
  std::optional<FleetReport> fleet;  // rank 0's, with --fleet-summary
  if (options.fleet_summary && talks) {
    if (!everyone) {
      print_text(stderr,
                 "gpuvs: no fleet summary: not every rank finished (the run file lists them); "
                 "run `gpuvs compare --fleet {}` once they have\n",
                 global.out_dir);
    } else {
      try {
        fleet = judge_fleet_folder(global.out_dir, FleetOptions{}, "gpuvs run",
                                   "--out " + global.out_dir);
      } catch (const Error& e) {
        print_text(stderr, "gpuvs: no fleet summary: {}\n", e.what());
      }
    }
  }

  if (!writer) return exit_code_for(run);
  if (!talks) {
    // Another rank's own run file: saved above; its summary is rank 0's to print.
    return exit_code_for(run);
  }
  // The HTML report beside the run file; the run file stands on its own if it fails.
  std::filesystem::path html = path;
  html.replace_extension(".html");
  std::string headline;
  try {
    const RunReport report(run);
    headline = report.headline();
    report.write_html(html);
  } catch (const Error& e) {
    print_text(stderr, "gpuvs: no HTML report: {}\n", e.what());
    html.clear();
  }
  if (global.json) {
    print_text(stdout, "{}", to_json_text(run));
  } else {
    // The answer first (against the bundled reference GPU), then every result.
    print_text(stdout, "{}{}\nrun file: {}\n", headline, render_summary(run), path.string());
    if (!html.empty()) print_text(stdout, "HTML report: {}\n", html.string());
  }
  std::fflush(stdout);
  if (fleet) {
    // The run's JSON owns stdout under --json: the fleet goes to its file only.
    if (!global.json) print_text(stdout, "\n{}", render_fleet_text(*fleet));
    write_fleet_file(*fleet, global.out_dir, "gpuvs run", global.quiet);
  }
  return exit_code_for(run);
}

#else

ExitCode run_session(const GlobalOptions&, const SessionOptions& options) {
  throw_built_without_cuda(options.command);
}

#endif

}  // namespace gpuvs::cli
