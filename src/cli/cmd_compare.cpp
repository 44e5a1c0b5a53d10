// `gpuvs compare [FILE|SPEC ...] [--claims FILE]`: a side-by-side table of run files
// (every GPU of a run is a column) and catalogue entries, and the claims check.
// Judging claims wrong is the tool doing its job: exit 0; only --strict turns a
// contradicted claim into exit 1. `gpuvs compare --fleet DIR`: every run file of a
// folder, the GPUs outside the fleet's median (report/fleet.h); finding outliers is
// the tool doing its job too: exit 0. Output goes to stdout and nothing else goes there.
#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <deque>
#include <filesystem>
#include <memory>
#include <optional>

#include <nlohmann/json.hpp>

#include "cli/app.h"
#include "cli/fleet_folder.h"
#include "cli/options.h"
#include "core/atomic_file.h"
#include "core/input_file.h"
#include "core/run_file_json.h"
#include "core/text.h"
#include "report/claims.h"
#include "report/compare.h"
#include "report/fleet.h"
#include "report/html.h"
#include "report/render.h"

namespace gpuvs::cli {

namespace {

struct CompareArgs {
  std::vector<std::string> inputs;
  std::vector<std::string> labels;  // --label, one per input in order
  std::string baseline;
  std::string claims;
  std::string format = "table";
  std::string catalogue;
  double tolerance_pct = 5;
  bool strict = false;
  std::string fleet;  // a folder of run files
  std::optional<double> k;
};

bool same_ci(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) ==
                  std::tolower(static_cast<unsigned char>(y));
         });
}

bool is_run_file_arg(const std::string& arg) {
  std::error_code ec;
  if (std::filesystem::exists(arg, ec)) return true;
  return arg.size() > 5 && same_ci(std::string_view(arg).substr(arg.size() - 5), ".json");
}

// --baseline: a column number (1 = first) or a column's label, GPU or catalogue name.
size_t find_baseline(const std::string& want, const Comparison& c, const Catalogue& catalogue) {
  if (want.empty()) return 0;
  if (std::all_of(want.begin(), want.end(), [](unsigned char ch) { return std::isdigit(ch); })) {
    // Any length of digits: a number too large for any column is no such column.
    const ParsedNumber n = parse_number(want, NumberRules::plain().whole().or_zero());
    if (n.ok() && n.integer >= 1 && static_cast<uint64_t>(n.integer) <= c.columns.size())
      return static_cast<size_t>(n.integer - 1);
  } else {
    const GpuSpec* spec = catalogue.find(want);
    for (size_t i = 0; i < c.columns.size(); ++i) {
      const Column& col = c.columns[i];
      if (same_ci(col.label, want) || same_ci(col.gpu_name, want) ||
          (spec && col.catalogue_id == spec->id))
        return i;
    }
  }
  std::vector<std::string> cols;
  for (size_t i = 0; i < c.columns.size(); ++i)
    cols.push_back(fmt::format("{} = {}", i + 1, c.columns[i].label));
  throw UsageError(
      fmt::format("--baseline {}: no such column (columns: {})", want, fmt::join(cols, ", ")));
}

TextFormat text_format(const std::string& f) {
  if (f == "md") return TextFormat::kMarkdown;
  if (f == "csv") return TextFormat::kCsv;
  if (f == "json") return TextFormat::kJson;
  return TextFormat::kTerminal;
}

void run_fleet(const CompareArgs& args, CliContext& ctx) {
  if (!args.inputs.empty() || !args.claims.empty() || !args.baseline.empty())
    throw UsageError(
        "--fleet DIR compares the run files in DIR: give no other inputs, "
        "--claims or --baseline");
  FleetOptions options;
  if (args.k) options.k = *args.k;
  const FleetReport report =
      judge_fleet_folder(args.fleet, options, "gpuvs compare", "--fleet " + shown_text(args.fleet));
  print_fleet(report, ctx.global.json, ctx.global.out_dir, "gpuvs compare", ctx.global.quiet);
  ctx.exit_code = ExitCode::kOk;
}

void run_compare(const CompareArgs& args, CliContext& ctx) {
  if (!args.fleet.empty()) return run_fleet(args, ctx);
  if (args.k) throw UsageError("--k goes with --fleet DIR");
  std::unique_ptr<Catalogue> own_catalogue;
  if (!args.catalogue.empty())
    own_catalogue = std::make_unique<Catalogue>(Catalogue::load(args.catalogue));
  const Catalogue& catalogue = own_catalogue ? *own_catalogue : Catalogue::builtin();
  // Published figures name catalogue ids; with another catalogue they apply where
  // its ids are the built-in ones.
  const Published& published = Published::builtin();

  if (args.labels.size() > args.inputs.size())
    throw UsageError(fmt::format("{} --label for {} input{}: give one label per input, in order",
                                 args.labels.size(), args.inputs.size(),
                                 args.inputs.size() == 1 ? "" : "s"));
  std::deque<RunFile> runs;  // stable addresses for the inputs
  std::vector<CompareInput> inputs;
  for (size_t k = 0; k < args.inputs.size(); ++k) {
    const std::string& arg = args.inputs[k];
    const std::string label = k < args.labels.size() ? args.labels[k] : "";
    // Labels reach the JSON outputs, which carry UTF-8 only: refused before any output.
    if (const auto bad = invalid_utf8_offset(label))
      throw UsageError(
          fmt::format("--label {}: byte {} is not UTF-8", run_json::quote(label), *bad));
    if (is_run_file_arg(arg)) {
      runs.push_back(load_run_file(arg));
      const RunFile& run = runs.back();
      if (run.system.gpus.empty())
        throw UsageError(fmt::format("{}: the run file has no GPU to compare", arg));
      for (const GpuInfo& g : run.system.gpus) {
        CompareInput in;
        in.run = &run;
        in.gpu_index = g.index;
        in.run_ref = arg;
        // One label for a run of several GPUs: each GPU is "LABEL #index".
        if (!label.empty())
          in.label = run.system.gpus.size() > 1 ? fmt::format("{} #{}", label, g.index) : label;
        inputs.push_back(in);
      }
    } else {
      CompareInput in;
      in.spec = &catalogue.get(arg);
      in.label = label;
      inputs.push_back(in);
    }
  }
  if (inputs.empty() && args.claims.empty())
    throw UsageError(
        "compare: name run files or catalogue GPUs (e.g. `gpuvs compare H200-SXM "
        "A100-SXM4-80GB`), or give --claims FILE");

  const TextFormat format = ctx.global.json ? TextFormat::kJson : text_format(args.format);
  std::optional<Comparison> comparison;
  if (!inputs.empty()) {
    CompareOptions options;
    comparison = build_comparison(inputs, catalogue, published, options);
    options.baseline = find_baseline(args.baseline, *comparison, catalogue);
    if (options.baseline != 0) comparison = build_comparison(inputs, catalogue, published, options);
  } else if (!args.baseline.empty()) {
    throw UsageError("--baseline needs run files or catalogue GPUs to compare");
  }
  std::optional<std::vector<ClaimJudgement>> judged;
  if (!args.claims.empty()) {
    ClaimOptions options;
    options.tolerance = args.tolerance_pct / 100;
    judged = judge_claims(load_claims(args.claims), inputs, catalogue, published, options);
  }

  if (format == TextFormat::kJson) {
    nlohmann::json doc;
    if (comparison && judged)
      doc = {{"comparison", nlohmann::json::parse(render_comparison(*comparison, format))},
             {"claims", nlohmann::json::parse(render_claims(*judged, format))}};
    else
      doc = nlohmann::json::parse(comparison ? render_comparison(*comparison, format)
                                             : render_claims(*judged, format));
    print_text(stdout, "{}\n", doc.dump(2, ' ', false, nlohmann::json::error_handler_t::replace));
  } else if (format == TextFormat::kCsv && comparison && judged) {
    // One CSV table per stream (a reader such as pandas would take two as one frame):
    // the claims' verdicts here, the comparison in --out's compare.csv.
    print_text(stdout, "{}", render_claims(*judged, format));
    if (ctx.global.out_dir.empty())
      print_text(stderr,
                 "gpuvs compare: --format csv prints one table, the claims; --out DIR also "
                 "writes the comparison as DIR/compare.csv\n");
  } else {
    if (comparison) print_text(stdout, "{}", render_comparison(*comparison, format));
    if (comparison && judged) print_text(stdout, "\n");
    if (judged) print_text(stdout, "{}", render_claims(*judged, format));
  }
  std::fflush(stdout);

  if (!ctx.global.out_dir.empty()) {
    const std::filesystem::path dir = ctx.global.out_dir;
    std::error_code ec;
    std::filesystem::create_directories(dir, ec);
    if (ec) throw Error(fmt::format("cannot create {}: {}", dir.string(), ec.message()));
    const std::pair<const char*, TextFormat> kinds[] = {
        {"md", TextFormat::kMarkdown}, {"csv", TextFormat::kCsv}, {"json", TextFormat::kJson}};
    for (const auto& [ext, f] : kinds) {
      if (comparison)
        write_file_atomically(dir / fmt::format("compare.{}", ext),
                              render_comparison(*comparison, f));
      if (judged)
        write_file_atomically(dir / fmt::format("claims.{}", ext), render_claims(*judged, f));
    }
    // The same comparison as an HTML report (charts per metric, the runs' sweeps and
    // utilization timelines, the claims).
    HtmlReportInput report;
    report.title = "gpuvs compare";
    if (comparison) report.comparison = &*comparison;
    for (const RunFile& r : runs)
      report.runs.push_back(&r);
    if (judged) report.claims = &*judged;
    write_file_atomically(dir / "compare.html", render_html(report));
    if (!ctx.global.quiet)
      print_text(stderr, "gpuvs compare: wrote {}{} (.md, .csv, .json, compare.html) to {}\n",
                 comparison ? "compare" : "",
                 comparison && judged ? " and claims"
                 : judged             ? "claims"
                                      : "",
                 dir.string());
  }

  ctx.exit_code = ExitCode::kOk;
  if (judged && args.strict) {
    const auto n = std::count_if(judged->begin(), judged->end(), [](const ClaimJudgement& j) {
      return j.verdict == ClaimVerdict::kContradicted;
    });
    if (n > 0) {
      print_text(stderr, "gpuvs compare: {} claim{} contradicted (--strict)\n", n,
                 n == 1 ? "" : "s");
      ctx.exit_code = ExitCode::kFailure;
    }
  }
}

}  // namespace

void add_compare_command(CLI::App& app, CliContext& ctx) {
  auto args = std::make_shared<CompareArgs>();
  CLI::App* sub = app.add_subcommand(
      "compare",
      "Side-by-side table of run files (every GPU a column) and catalogue GPUs; --claims "
      "FILE judges claimed figures");
  sub->add_option("inputs", args->inputs,
                  "Run files (*.json) and catalogue GPU names (`gpuvs specs list`)");
  sub->add_option("--label", args->labels,
                  "Column label of an input, once per input in their order (a run of several "
                  "GPUs: LABEL #0, LABEL #1 ...); default: GPU, host, UUID and file")
      // One value per --label, so that `--label A run.json` keeps run.json an input.
      ->expected(1)
      ->allow_extra_args(false)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  sub->add_option("--baseline", args->baseline,
                  "Column the others are compared with: number (1 = first) or name "
                  "(default: the first)");
  sub->add_option("--claims", args->claims,
                  "Claims file (CSV, or TOML) to judge against measurements, datasheets and "
                  "published figures");
  sub->add_option("--format", args->format, "Output: table (default), md, csv or json")
      ->check(CLI::IsMember({"table", "md", "csv", "json"}));
  sub->add_option("--catalogue", args->catalogue,
                  "Catalogue file to use instead of the built-in one");
  add_number_option(sub, "--tolerance", args->tolerance_pct,
                    NumberRules::plain().or_zero().at_most(100).eg("5, 2.5"),
                    "Claims: within this many percent a claim holds (default 5; beyond 25 it "
                    "is contradicted)");
  sub->add_flag("--strict", args->strict, "Exit 1 when any claim is contradicted");
  add_path_option(sub, "--fleet", args->fleet,
                  "Folder of run files (one per node or GPU): the GPUs outside the fleet's "
                  "median, per figure, worst first (docs/compare.md, Fleets)");
  add_number_option(sub, "--k", args->k, NumberRules::plain().at_most(100).eg("3, 5"),
                    "--fleet: an outlier lies more than K scaled MADs from the median "
                    "(default 3)");
  sub->footer(
      "Output opens with a headline per column against the baseline. Ratios and verdicts only "
      "between figures of one basis (measured/measured, datasheet/datasheet, published/published "
      "of one setting); across bases: 'different basis'. Missing figures show as '-', never 0; "
      "invalid measurements as 'invalid'. docs/compare.md explains the verdicts and the claims "
      "file format.");
  sub->callback([&ctx, args] { run_compare(*args, ctx); });
}

}  // namespace gpuvs::cli
