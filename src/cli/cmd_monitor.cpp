// `gpuvs monitor [options] -- CMD ARGS...`: samples every GPU while CMD runs (SM,
// tensor and memory activity, power, clocks: how busy a job keeps the GPU), then
// prints a summary, writes the timeline and exits with CMD's exit code
// (docs/monitor.md). CMD owns stdout: gpuvs writes to stderr; with --json stdout is
// gpuvs's summary JSON alone, written after CMD has finished, and CMD's stdout goes to
// stderr. The timeline and the Prometheus
// file are written with write_file_atomically (core/atomic_file.h): node_exporter's
// textfile collector never reads half a file.
#include <fmt/format.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <memory>
#include <nlohmann/json.hpp>

#include "cli/app.h"
#include "cli/options.h"
#include "cli/session.h"
#include "core/atomic_file.h"
#include "core/host.h"
#include "core/text.h"
#include "monitor/child.h"
#include "monitor/sampler.h"
#include "monitor/summary.h"

#if GPUVS_HAVE_CUDA
#include "monitor/nvml_source.h"
#endif

namespace gpuvs::cli {

namespace {

namespace fs = std::filesystem;

struct MonitorArgs {
  int interval_ms = 100;
  std::string out_file;
  bool csv = false;
  std::string prometheus;
  std::vector<std::string> command;
};

#if GPUVS_HAVE_CUDA

void say(const std::string& line) {
  print_text(stderr, "gpuvs monitor: {}\n", line);
  std::fflush(stderr);
}

std::string utc_stamp() {
  const std::time_t now = std::time(nullptr);
  std::tm tm{};
  ::gmtime_r(&now, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y%m%dT%H%M%SZ", &tm);
  return buf;
}

// Where the timeline goes; the directory is made now so that a path that cannot be
// written fails before CMD runs, not after an hour of it.
fs::path timeline_path(const GlobalOptions& global, const MonitorArgs& args) {
  fs::path path = args.out_file;
  if (path.empty()) {
    const fs::path dir = global.out_dir.empty() ? "gpuvs-results" : global.out_dir;
    const std::string stamp = utc_stamp();
    const char* ext = args.csv ? "csv" : "json";
    path = dir / fmt::format("monitor-{}.{}", stamp, ext);
    // Two runs in the same second do not overwrite each other.
    for (int n = 2; fs::exists(path); ++n)
      path = dir / fmt::format("monitor-{}-{}.{}", stamp, n, ext);
  }
  if (path.has_parent_path()) {
    std::error_code ec;
    fs::create_directories(path.parent_path(), ec);
    if (ec)
      throw Error(
          fmt::format("cannot create directory {}: {}", path.parent_path().string(), ec.message()));
  }
  return path;
}

std::string signal_name(int sig) {
  switch (sig) {
    case SIGINT:
      return "SIGINT";
    case SIGTERM:
      return "SIGTERM";
    case SIGHUP:
      return "SIGHUP";
    case SIGQUIT:
      return "SIGQUIT";
    case SIGKILL:
      return "SIGKILL";
    case SIGUSR1:
      return "SIGUSR1";
    case SIGUSR2:
      return "SIGUSR2";
    case SIGALRM:
      return "SIGALRM";
    case SIGPIPE:
      return "SIGPIPE";
    default:
      return fmt::format("signal {}", sig);
  }
}

struct MonitorRun {
  std::vector<std::string> names;   // per GPU index
  monitor::MonitorContext context;  // host, start, the GPUs' UUIDs and bus ids
  std::vector<std::string> notes;
  std::vector<monitor::GpuSample> timeline;
  monitor::ChildResult child;
  std::optional<std::string> sampler_error;
};

nlohmann::ordered_json timeline_document(const MonitorArgs& args, const MonitorRun& run,
                                         const std::vector<monitor::GpuSummary>& summaries) {
  nlohmann::ordered_json doc;
  doc["schema"] = "gpuvs.monitor/1";
  doc["version"] = version_line();
  doc["command"] = args.command;
  doc["exit_code"] = run.child.exit_code;
  if (run.child.signal) doc["signal"] = *run.child.signal;
  doc["interval_ms"] = args.interval_ms;
  doc["host"] = run.context.host;
  doc["started_at"] = monitor::iso8601_utc(run.context.start_unix_s);
  doc["start_unix_s"] = run.context.start_unix_s;
  nlohmann::ordered_json gpus = nlohmann::ordered_json::array();
  for (size_t i = 0; i < run.context.gpus.size(); ++i) {
    const monitor::GpuIdentity& id = run.context.gpus[i];
    gpus.push_back({{"gpu", static_cast<int>(i)},
                    {"name", id.name},
                    {"uuid", id.uuid},
                    {"pci_bus_id", id.pci_bus_id}});
  }
  doc["gpus"] = gpus;
  doc["notes"] = run.notes;
  doc["summary"] = monitor::summary_json(summaries);
  doc["samples"] = monitor::timeline_json(run.timeline);
  return doc;
}

void run_monitor(const GlobalOptions& global, const MonitorArgs& args, CliContext& ctx) {
  const fs::path out_path = timeline_path(global, args);
  const fs::path prom_path = args.prometheus;

  std::unique_ptr<monitor::Source> source = monitor::make_nvml_source();
  MonitorRun run;
  for (int i = 0; i < source->gpu_count(); ++i) {
    run.names.push_back(source->gpu_name(i));
    run.context.gpus.push_back(source->identity(i));
  }
  run.context.host = host_name();
  run.notes = source->notes();

  monitor::SamplerOptions options;
  options.interval = std::chrono::milliseconds(args.interval_ms);
  if (!prom_path.empty())
    options.on_round = [&](const std::vector<monitor::GpuSample>& round) {
      // Rewritten every round: atomic for the collector, not fsynced each time.
      write_file_atomically(prom_path, monitor::prometheus_text(round, run.context), {},
                            Sync::kAtomicOnly);
    };
  monitor::Sampler sampler(*source, options);

  monitor::ChildOptions child_options;
  // Said once CMD has started, so that a CMD that is not found costs one line only.
  child_options.on_started = [&](pid_t) {
    for (const std::string& note : run.notes)
      say(note);
    if (run.names.empty())
      say("nothing can be sampled; CMD runs unwatched and the timeline will be empty");
  };
  // With --json stdout is gpuvs's document alone: CMD writes to stderr instead.
  child_options.stdout_to_stderr = global.json;
  run.context.start_unix_s =
      std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
  sampler.start();
  run.child = monitor::run_child(args.command, child_options);
  sampler.stop();
  run.timeline = sampler.timeline();
  run.sampler_error = sampler.callback_error();

  if (!run.child.started) {
    say(run.child.error);
    ctx.exit_code = static_cast<ExitCode>(run.child.exit_code);
    return;
  }
  for (int sig : run.child.forwarded)
    say(fmt::format("passed {} on to {}", signal_name(sig), args.command[0]));
  if (run.sampler_error) say(fmt::format("sampling: {}", *run.sampler_error));

  const std::vector<monitor::GpuSummary> summaries = monitor::summarize(run.timeline, run.names);
  const nlohmann::ordered_json doc = timeline_document(args, run, summaries);
  write_file_atomically(
      out_path, args.csv ? monitor::timeline_csv(run.timeline, &run.context) : doc.dump(1) + "\n");
  if (!prom_path.empty() && run.names.empty()) write_file_atomically(prom_path, "");

  if (global.json) {
    nlohmann::ordered_json out;
    out["schema"] = "gpuvs.monitor-summary/1";
    out["command"] = args.command;
    out["exit_code"] = run.child.exit_code;
    if (run.child.signal) out["signal"] = *run.child.signal;
    out["timeline"] = out_path.string();
    out["host"] = doc["host"];
    out["started_at"] = doc["started_at"];
    if (!prom_path.empty()) out["prometheus"] = prom_path.string();
    out["gpus"] = doc["gpus"];
    out["notes"] = run.notes;
    out["summary"] = doc["summary"];
    print_text(stdout, "{}\n", out.dump(1));
  } else if (!global.quiet) {
    if (!run.names.empty()) print_text(stderr, "{}", monitor::render_summary_text(summaries));
    say(fmt::format("{} exited with {}{}; timeline: {}", args.command[0], run.child.exit_code,
                    run.child.signal ? " (" + signal_name(*run.child.signal) + ")" : "",
                    out_path.string()));
  }
  std::fflush(stdout);
  ctx.exit_code = static_cast<ExitCode>(run.child.exit_code);
}

#endif

// Everything that can go wrong before CMD runs is found before it runs, on every
// build: a mistake is exit 2 and CMD is not started, rather than CMD running for an
// hour and its exit code lost to an output that cannot be written.
void check_monitor_args(const GlobalOptions& global, const MonitorArgs& args) {
  if (args.command.empty())
    throw UsageError("monitor: no command to run; usage: gpuvs monitor [options] -- CMD ARGS...");
  if (args.command[0].empty()) throw UsageError("monitor: the command to run is empty ('')");
  const auto refuse = [](const std::string& what, const std::string& problem) {
    throw UsageError(fmt::format("monitor {}: {} (nothing was run)", what, problem));
  };
  if (!args.out_file.empty()) {
    if (const std::string p = write_problem(args.out_file, true); !p.empty())
      refuse(fmt::format("--out {}", args.out_file), p);
  } else {
    const fs::path dir = global.out_dir.empty() ? "gpuvs-results" : global.out_dir;
    if (const std::string p = folder_write_problem(dir, true); !p.empty())
      refuse(fmt::format("timeline folder {}", dir.string()), p);
  }
  if (args.prometheus.empty()) return;
  const fs::path prom = args.prometheus;
  if (prom.has_parent_path() && !fs::is_directory(prom.parent_path()))
    throw UsageError(
        fmt::format("--prometheus: directory {} does not exist", prom.parent_path().string()));
  if (const std::string p = write_problem(prom); !p.empty())
    refuse(fmt::format("--prometheus {}", args.prometheus), p);
  std::error_code ec;
  if (!args.out_file.empty() &&
      fs::weakly_canonical(args.out_file, ec) == fs::weakly_canonical(prom, ec))
    throw UsageError(
        fmt::format("monitor: --out and --prometheus name the same file {}", args.prometheus));
}

}  // namespace

void add_monitor_command(CLI::App& app, CliContext& ctx) {
  auto args = std::make_shared<MonitorArgs>();
  CLI::App* sub = app.add_subcommand(
      "monitor",
      "SM utilization, tensor activity, memory bandwidth, power and clocks of every GPU "
      "while CMD runs: gpuvs monitor [options] -- CMD ARGS...");
  add_number_option(sub, "--interval", args->interval_ms,
                    NumberRules::count().at_least(10).at_most(3600 * 1000).eg("100, 1k"),
                    "Milliseconds between samples (default 100)");
  add_path_option(sub, "--out", args->out_file,
                  "Timeline file (default: <global --out dir>/monitor-<UTC stamp>.json)");
  sub->add_flag("--csv", args->csv, "Timeline as CSV instead of JSON");
  add_path_option(sub, "--prometheus", args->prometheus,
                  "Rewrite FILE after every sample (Prometheus text format, node_exporter "
                  "textfile collector)");
  sub->add_option("command", args->command, "The command to run and watch, after --")->expected(-1);
  sub->footer(
      "Exit code: CMD's own; 128+N when signal N killed it; 127 CMD not found; 126 CMD "
      "cannot be run; 2 usage error, also an output that cannot be written (checked before "
      "CMD starts). SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2, SIGALRM and SIGPIPE "
      "are passed on to CMD and the timeline is still written.");
  sub->callback([&ctx, args] {
    check_monitor_args(ctx.global, *args);
#if GPUVS_HAVE_CUDA
    run_monitor(ctx.global, *args, ctx);
#else
    (void)ctx;
    throw_built_without_cuda("monitor");
#endif
  });
}

}  // namespace gpuvs::cli
