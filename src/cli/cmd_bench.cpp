// `gpuvs bench [NAME...]`: micro-benchmarks by name or group, full measurement rules.
#include <fmt/format.h>

#include <algorithm>

#include <limits>
#include <optional>
#include <utility>

#include <nlohmann/json.hpp>

#include "cli/app.h"
#include "cli/options.h"
#include "cli/session.h"
#include "comm/launch.h"
#include "comm/nccl_tests.h"
#include "core/suggest.h"
#include "core/text.h"
#include "core/units.h"
#include "suite/produces.h"

#if GPUVS_HAVE_CUDA
#include "comm/world.h"
#include "suite/registry.h"
#endif

namespace gpuvs::cli {

namespace {

constexpr double kDayS = 24 * 3600;

struct BenchArgs {
  std::vector<std::string> names;
  std::string gpus;
  bool list = false;
  bool quick = false;
  double time_cap_s = 0;
  double target_noise = 0;
  int monitor_interval_ms = 100;
  // collectives
  std::string ops, sizes, graph, algos, protos, rendezvous, nccl_tests, buffers;
  double timeout_s = 60;
  std::optional<std::string> rank, ranks;
};

// A rank or a number of ranks: a whole number, read as every count is (core/units).
std::optional<int> rank_number(const std::optional<std::string>& text, const char* option,
                               bool zero_ok) {
  if (!text) return std::nullopt;
  NumberRules rules =
      NumberRules::count().whole().at_most(std::numeric_limits<int>::max()).eg("0, 1, 8");
  if (zero_ok) rules = rules.or_zero();
  return static_cast<int>(option_number(option, *text, rules).integer);
}

// Read on every build, before anything touches a GPU: a malformed value is a usage
// error (exit 2), also where the build has no CUDA.
comm::CollectiveOptions collective_options(const BenchArgs& a) {
  comm::CollectiveOptions o;
  if (!a.ops.empty()) o.ops = comm::parse_ops(a.ops);
  if (!a.sizes.empty()) comm::parse_size_range(a.sizes, o);
  if (!a.graph.empty()) o.graph = comm::parse_graph_mode(a.graph);
  if (!a.algos.empty()) o.algos = comm::parse_nccl_values(a.algos, comm::nccl_algos(), "--algos");
  if (!a.protos.empty())
    o.protos = comm::parse_nccl_values(a.protos, comm::nccl_protos(), "--protos");
  o.timeout_s = a.timeout_s;
  o.nccl_tests_dir = a.nccl_tests;
  o.nccl_mem_alloc = a.buffers == "ncclMemAlloc";
  o.launch.rank = rank_number(a.rank, "--rank", true);
  o.launch.ranks = rank_number(a.ranks, "--ranks", false);
  o.launch.rendezvous = a.rendezvous;
  return o;
}

// What can be checked without a GPU, on every build: a mistake is exit 2 here, not
// hidden behind "no GPU" (exit 3) or found after other benchmarks have run.
void check_before_measuring(const BenchArgs& a, const comm::CollectiveOptions& o) {
  for (const std::string& name : a.names) {
    const auto defs = benchmark_defs();
    if (std::none_of(defs.begin(), defs.end(),
                     [&](const BenchmarkDef& b) { return b.name == name || b.group == name; })) {
      std::string known;
      std::vector<std::string> names_and_groups;
      for (const BenchmarkDef& b : defs) {
        known += fmt::format(" {} ({})", b.name, b.group);
        names_and_groups.push_back(std::string(b.name));
        names_and_groups.push_back(std::string(b.group));
      }
      throw UsageError(
          fmt::format("unknown benchmark '{}'{}", name,
                      did_you_mean_or_known(suggest(name, names_and_groups), known.substr(1))));
    }
  }
  check_gpu_list(a.gpus);
  const comm::LaunchRequest& request = o.launch;
  const bool ranks_asked = request.rank || request.ranks || !request.rendezvous.empty();
  if (ranks_asked) {
    // Contradictions now, before any GPU; how the ranks meet is the session's to
    // decide (only the collectives need it).
    const comm::Launch launch = comm::detect_ranks(request, comm::process_env());
    if (launch.multi_process() && !o.nccl_tests_dir.empty())
      throw UsageError(
          "--nccl-tests runs beside a single-process run only (it drives every GPU from one "
          "process with -g)");
  }
  if (!o.nccl_tests_dir.empty()) {
    for (const std::string& op : comm::selected_ops(o)) {
      comm::NcclTestsRun run;
      run.dir = o.nccl_tests_dir;
      run.op = op;
      try {
        comm::check_nccl_tests_binary(run);
      } catch (const UsageError& e) {
        throw UsageError(fmt::format("--nccl-tests: {}", e.what()));
      }
    }
  }
}

// What families write, as --list --json gives them: each pattern with every id.
nlohmann::json families_json(const std::vector<Family>& writes) {
  nlohmann::json results = nlohmann::json::array();
  for (Family f : writes) {
    const FamilyDef& d = family_def(f);
    nlohmann::json config = nlohmann::json::array();
    for (const ConfigParameter& c : d.config)
      config.push_back(std::string(c.name));
    results.push_back({{"id", std::string(d.pattern)},
                       {"unit", std::string(d.unit)},
                       {"what", std::string(d.what)},
                       {"ids", expand_family(d)},
                       {"config", std::move(config)}});
  }
  return results;
}

void print_families(const std::vector<Family>& writes) {
  for (Family f : writes) {
    const FamilyDef& d = family_def(f);
    print_text(stdout, "  {:<48} {:<9} {}\n", d.pattern, d.unit.empty() ? "-" : d.unit, d.what);
  }
}

// The table of benchmarks (suite/produces.h) and what each writes, then what `gpuvs
// import` writes of other tools' output; a build without CUDA lists them too, so a
// reader of run files can look an id up anywhere.
void print_list(bool json) {
  if (json) {
    nlohmann::json list = nlohmann::json::array();
    for (const BenchmarkDef& b : benchmark_defs())
      list.push_back({{"name", std::string(b.name)},
                      {"group", std::string(b.group)},
                      {"summary", std::string(b.summary)},
                      {"in_run", b.in_run},
                      {"scope", b.scope == BenchScope::kAllDevices ? "all_devices" : "per_device"},
                      {"results", families_json(b.writes)}});
    nlohmann::json importers = nlohmann::json::array();
    for (const ImporterDef& i : importer_defs())
      importers.push_back({{"tool", std::string(i.tool)},
                           {"reads", std::string(i.reads)},
                           {"results", families_json(i.writes)}});
    print_text(stdout, "{}\n",
               nlohmann::json{{"schema", "gpuvs.benchmarks/1"},
                              {"benchmarks", std::move(list)},
                              {"importers", std::move(importers)}}
                   .dump(2));
    return;
  }
  for (const BenchmarkDef& b : benchmark_defs()) {
    print_text(stdout, "{:<22} {:<12} {}{}\n", b.name, b.group, b.summary,
               b.in_run ? "" : " (not in `gpuvs run`)");
    print_families(b.writes);
  }
  for (const ImporterDef& i : importer_defs()) {
    print_text(stdout, "gpuvs import {:<11} {}\n", i.tool, i.reads);
    print_families(i.writes);
  }
}

}  // namespace

void add_bench_command(CLI::App& app, CliContext& ctx) {
  auto args = std::make_shared<BenchArgs>();
  CLI::App* sub = app.add_subcommand(
      "bench",
      "Micro-benchmarks by name or group (compute, memory, host, peer, collectives, "
      "launch); --list shows them");
  sub->add_option("names", args->names, "Benchmarks or groups to run (default: all)");
  sub->add_option("--gpu", args->gpus, "GPUs to measure, e.g. 0,1 (default: all)");
  sub->add_flag("--list", args->list,
                "List the benchmarks and the result ids each writes, and exit (--json: as JSON)");
  sub->add_flag("--quick", args->quick, "Short pass, as in `gpuvs run`");
  add_number_option(sub, "--monitor-interval", args->monitor_interval_ms, monitor_interval_rules(),
                    "Milliseconds between utilization samples of the measured GPUs (default "
                    "100; 0: off)");
  add_number_option(sub, "--time-cap", args->time_cap_s,
                    NumberRules::plain().at_most(kDayS).eg("2, 0.5"),
                    "Seconds of sampling per result (default 2)");
  add_number_option(sub, "--noise", args->target_noise, NumberRules::plain().at_most(1).eg("0.005"),
                    "Stop sampling at this relative noise, e.g. 0.005 (default)");
  const std::string coll = "Collectives";
  sub->add_option("--ops", args->ops,
                  "Collectives to measure: all_reduce,all_gather,broadcast,reduce_scatter,reduce,"
                  "alltoall,sendrecv (default: all)")
      ->group(coll);
  sub->add_option("--sizes", args->sizes,
                  "Message sizes MIN:MAX[:FACTOR], e.g. 8:4G:2 (default); K, M, G, T are KiB, "
                  "MiB, GiB, TiB as in nccl-tests, KB, MB, GB decimal")
      ->group(coll);
  sub->add_option("--graph", args->graph,
                  "Also measure as CUDA graphs: auto (up to 1 MiB, default), off, on")
      ->group(coll);
  sub->add_option("--algos", args->algos,
                  "Algorithm study: NCCL_ALGO values to try, e.g. Ring,Tree (default: all)")
      ->group(coll);
  sub->add_option("--protos", args->protos,
                  "Algorithm study: NCCL_PROTO values to try, e.g. LL,Simple (default: all)")
      ->group(coll);
  add_number_option(sub, "--timeout", args->timeout_s, NumberRules::plain().at_most(kDayS).eg("60"),
                    "Seconds before a collective that does not finish aborts the run (default 60)")
      ->group(coll);
  sub->add_option("--rendezvous", args->rendezvous,
                  "Ranks without MPI meet through file:PATH (a path every rank sees)")
      ->group(coll);
  sub->add_option("--rank", args->rank, "This process's rank (with --ranks; no launcher)")
      ->group(coll);
  sub->add_option("--ranks", args->ranks, "Number of ranks (with --rank; no launcher)")
      ->group(coll);
  sub->add_option("--buffers", args->buffers,
                  "Send/receive buffers from cudaMalloc (default) or ncclMemAlloc (as nccl-tests)")
      ->check(CLI::IsMember({"cudaMalloc", "ncclMemAlloc"}))
      ->group(coll);
  add_path_option(sub, "--nccl-tests", args->nccl_tests,
                  "Directory of NVIDIA nccl-tests binaries to run beside gpuvs, same sizes")
      ->group(coll);
  sub->callback([&ctx, args] {
    if (args->list) {
      print_list(ctx.global.json);
      ctx.exit_code = ExitCode::kOk;
      return;
    }
    comm::CollectiveOptions collectives = collective_options(*args);
    check_before_measuring(*args, collectives);
#if GPUVS_HAVE_CUDA
    SessionOptions options;
    options.command = "bench";
    options.gpu_list = args->gpus;
    options.benchmarks = select_benchmarks(args->names);
    options.quick = args->quick;
    options.measure = args->quick ? quick_options() : MeasureOptions{};
    if (args->time_cap_s > 0) options.measure.time_cap_s = args->time_cap_s;
    if (args->target_noise > 0) options.measure.target_noise = args->target_noise;
    options.collectives = std::move(collectives);
    options.monitor_interval_ms = args->monitor_interval_ms;
    ctx.exit_code = run_session(ctx.global, options);
#else
    (void)ctx;
    (void)collectives;
    throw_built_without_cuda("bench");
#endif
  });
}

}  // namespace gpuvs::cli
