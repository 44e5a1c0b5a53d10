// `gpuvs tune`: the options (docs/tune.md#options), checked on every build before any
// GPU is probed; --show FILE and --cached, which print a stored result without a GPU;
// and the printing every path shares. The measuring path is run_tune
// (cli/tune_session.h).
#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <memory>
#include <string>

#include "cli/app.h"
#include "cli/options.h"
#include "cli/tune_session.h"
#include "core/suggest.h"
#include "core/text.h"
#include "core/units.h"
#include "tune/cache.h"
#include "tune/fingerprint.h"
#include "tune/tune_json.h"

namespace gpuvs::cli {

namespace {

constexpr std::array<std::string_view, 6> kGemmPrecisions = {"fp64", "fp32", "tf32",
                                                             "bf16", "fp16", "fp8"};
constexpr int kMaxGemmDim = 65536;

struct TuneArgs {
  std::string model = "all";
  bool quick = false;
  bool force = false;
  std::string cache;
  double headroom = 0.10;
  std::optional<std::string> global_batch;
  std::vector<std::string> gemm;
  std::optional<std::string> emit;
  std::string show;
  bool cached = false;
  std::string gpus;
};

std::vector<std::string> models_of(const std::string& model) {
  if (model == "all") return {"bert-large", "resnet50"};
  if (model == "resnet50" || model == "bert-large") return {model};
  const std::vector<std::string> known = {"resnet50", "bert-large", "all"};
  throw UsageError(
      fmt::format("--model: unknown model {}{}", shown_text(model),
                  did_you_mean_or_known(suggest(model, known), "resnet50, bert-large, all")));
}

}  // namespace

// "8192x8192x8192:bf16" from "8kx8192x8192" (8k is 8000: counts are decimal) or any
// MxNxK[:precision] with M, N, K from 1 to 65536; UsageError otherwise.
std::string canonical_gemm_shape(const std::string& text) {
  const auto bad = [&](const std::string& why) {
    throw UsageError(fmt::format("--gemm {}: {}", shown_text(text), why));
  };
  std::string dims = text;
  std::string precision = "bf16";
  if (const auto colon = text.find(':'); colon != std::string::npos) {
    dims = text.substr(0, colon);
    precision = text.substr(colon + 1);
    if (std::find(kGemmPrecisions.begin(), kGemmPrecisions.end(), precision) ==
        kGemmPrecisions.end())
      bad(fmt::format("unknown precision {}: one of fp64, fp32, tf32, bf16, fp16, fp8",
                      shown_text(precision)));
  }
  std::vector<std::string> parts;
  std::size_t start = 0;
  for (std::size_t x; (x = dims.find('x', start)) != std::string::npos; start = x + 1)
    parts.push_back(dims.substr(start, x - start));
  parts.push_back(dims.substr(start));
  if (parts.size() != 3) bad("expected MxNxK[:precision] (e.g. 8192x8192x8192:bf16)");
  const NumberRules rules = NumberRules::count().whole().at_most(kMaxGemmDim).eg("8192, 4k");
  std::string out;
  for (std::size_t i = 0; i < 3; ++i) {
    const ParsedNumber n = parse_number(parts[i], rules);
    if (!n.ok()) bad(fmt::format("{} {}: {}", "MNK"[i], shown_text(parts[i]), n.error));
    out += (i ? "x" : "") + std::to_string(n.integer);
  }
  return out + ":" + precision;
}

namespace {

// The checks that need no GPU; every one throws UsageError (exit 2) naming the option.
TuneOptions parse_tune_args(const CLI::App& sub, const TuneArgs& a, bool json) {
  if (a.emit && json)
    throw UsageError("--emit: not with --json (--json prints the gpuvs.tune/1 document)");
  TuneOptions o;
  if (a.emit) {
    const auto emit = tune::emit_format_from_string(*a.emit);
    if (!emit)
      throw UsageError(fmt::format("--emit: {} is not table, env or python", shown_text(*a.emit)));
    o.emit = *emit;
  }
  const bool show = !a.show.empty();
  if (show && a.cached) throw UsageError("--show and --cached: one or the other");
  if (show || a.cached) {
    const char* what = show ? "--show" : "--cached";
    for (const char* opt : {"--model", "--quick", "--force", "--headroom", "--global-batch",
                            "--gemm", "--gpu", "--cache"}) {
      if (a.cached && std::string_view(opt) == "--cache") continue;
      if (sub.count(opt) > 0)
        throw UsageError(
            fmt::format("{}: not with {} (it prints a stored result and measures "
                        "nothing)",
                        opt, what));
    }
  }
  o.request.models = models_of(a.model);
  o.request.quick = a.quick;
  if (a.headroom >= 0.9) throw UsageError("--headroom: must be below 0.9");
  o.request.headroom = a.headroom;
  if (a.global_batch) {
    o.request.global_batch =
        option_number("--global-batch", *a.global_batch,
                      NumberRules::count().whole().at_most(1 << 30).eg("1024, 4k"))
            .integer;
  }
  for (const std::string& g : a.gemm) {
    const std::string shape = canonical_gemm_shape(g);
    if (std::find(o.request.gemm_shapes.begin(), o.request.gemm_shapes.end(), shape) ==
        o.request.gemm_shapes.end())
      o.request.gemm_shapes.push_back(shape);
  }
  o.force = a.force;
  if (!a.cache.empty()) o.cache_dir = a.cache;
  check_gpu_list(a.gpus);
  o.gpu_list = a.gpus;
  return o;
}

}  // namespace

void print_tune(const tune::TuneDocument& doc, tune::EmitFormat emit, bool json,
                const std::vector<std::string>& notes) {
  for (const std::string& note : notes)
    print_text(stderr, "gpuvs tune: {}\n", one_line(note));
  if (json) {
    print_text(stdout, "{}", tune::to_json_text(doc));
    return;
  }
  switch (emit) {
    case tune::EmitFormat::kTable:
      print_text(stdout, "{}", tune::render_tune_table(doc));
      return;
    case tune::EmitFormat::kEnv:
      print_text(stdout, "{}", tune::render_tune_env(doc));
      return;
    case tune::EmitFormat::kPython:
      print_text(stdout, "{}", tune::render_tune_python(doc));
      return;
  }
}

std::string render_tuned_section(const SystemInfo& system,
                                 const std::optional<std::filesystem::path>& cache) {
  std::filesystem::path dir;
  try {
    dir = tune::default_cache_dir(cache, tune::process_environment());
  } catch (const Error& e) {
    return fmt::format("\nTuned settings: {}\n", e.what());
  }
  std::string out = fmt::format("\nTuned settings (cache {}):\n", one_line(dir.string()));
  for (const GpuInfo& g : system.gpus)
    out += tune::render_detect_entry(
        g.index, tune::lookup(dir, tune::fingerprint_of(system, g.index), std::nullopt));
  return out;
}

void add_tune_command(CLI::App& app, CliContext& ctx) {
  auto args = std::make_shared<TuneArgs>();
  CLI::App* sub = app.add_subcommand(
      "tune",
      "Measured settings per GPU (precision, batch, CUDA graph, GEMM algorithms, NCCL, host "
      "transfers), cached by device fingerprint; --show FILE / --cached print a stored result");
  sub->add_option("--model", args->model, "resnet50 | bert-large | all (default)");
  sub->add_flag("--quick", args->quick, "Short measurements (a quick result answers --quick only)");
  sub->add_flag("--force", args->force, "Measure again even when the cache answers");
  add_path_option(sub, "--cache", args->cache,
                  "Cache folder (default $XDG_CACHE_HOME/gpuvs/tune, else ~/.cache/gpuvs/tune)");
  add_number_option(sub, "--headroom", args->headroom,
                    NumberRules::plain().or_zero().at_most(0.9).eg("0.1"),
                    "Fraction of memory the recommended batch leaves free, below 0.9 (default "
                    "0.10)");
  sub->add_option("--global-batch", args->global_batch,
                  "Samples per optimizer step: the micro-batch and accumulation that reach it "
                  "fastest");
  sub->add_option("--gemm", args->gemm,
                  "GEMM shape MxNxK[:precision] to tune (fp64 fp32 tf32 bf16 fp16 fp8, default "
                  "bf16); repeat for more shapes")
      ->allow_extra_args(false);
  sub->add_option("--emit", args->emit, "table (default) | env (export lines) | python (a dict)");
  add_path_option(sub, "--show", args->show, "Print a stored gpuvs.tune/1 file (no GPU needed)");
  sub->add_flag("--cached", args->cached, "Print every valid entry of the cache (no GPU needed)");
  sub->add_option("--gpu", args->gpus, "GPUs to tune, e.g. 0,1 (default: all)");
  sub->callback([&ctx, args, sub] {
    const TuneOptions options = parse_tune_args(*sub, *args, ctx.global.json);
    if (!args->show.empty()) {
      print_tune(tune::load_tune_file(args->show), options.emit, ctx.global.json, {});
      ctx.exit_code = ExitCode::kOk;
      return;
    }
    if (args->cached) {
      const std::filesystem::path dir =
          tune::default_cache_dir(options.cache_dir, tune::process_environment());
      tune::CachedEntries cached = tune::list_cached(dir);
      if (cached.entries.empty())
        cached.warnings.push_back(fmt::format("no tuned result in {}", dir.string()));
      tune::TuneDocument doc;
      doc.devices = std::move(cached.entries);
      print_tune(doc, options.emit, ctx.global.json, cached.warnings);
      ctx.exit_code = ExitCode::kOk;
      return;
    }
    ctx.exit_code = run_tune(ctx.global, options);
  });
}

}  // namespace gpuvs::cli
