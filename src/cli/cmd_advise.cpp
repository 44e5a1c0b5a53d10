// `gpuvs advise [train|infer] --model M ...`: which GPU, how many, how long, what
// cost. Reads the catalogue, the user's run files and prices file only (advise/,
// DESIGN.md); prints a ranked table, the arithmetic with --explain, or JSON. Every
// malformed value is one line and exit 2. Numbers are taken as text and checked
// here, so that "-7B", "0" and "7X" all get the same kind of message.
#include <fmt/format.h>

#include <cmath>
#include <cstring>
#include <memory>
#include <optional>

#include "advise/advisor.h"
#include "advise/output.h"
#include "cli/app.h"
#include "core/units.h"
#include "report/table.h"
#include "specs/metrics.h"

namespace gpuvs::cli {

namespace {

using namespace gpuvs::advise;

struct AdviseArgs {
  std::string mode = "train";
  std::string model;
  std::string kind, params, layers, hidden, heads, kv_heads, seq, vocab;
  std::string flops_per_sample, activation_bytes;
  std::string tokens, samples;
  std::string precision = "bf16", optimizer = "adam", parallel = "zero1", recompute = "none";
  bool flash_attention = true;
  std::string micro_batch, global_batch;
  std::string mfu, bw_util, network, overhead, fragmentation;
  std::string gpus, tp, max_days, rank;
  std::string candidates;  // comma-separated
  std::string prices, catalogue;
  std::vector<std::string> runs;
  std::string context, batch, kv_precision;
  bool explain = false;
};

std::optional<int64_t> opt_int(const std::string& text, const char* what, int64_t max) {
  if (text.empty()) return std::nullopt;
  return parse_positive_int(text, what, max);
}

std::optional<double> opt_count(const std::string& text, const char* what) {
  if (text.empty()) return std::nullopt;
  return parse_count(text, what);
}

double fraction(const std::string& text, const char* what, bool allow_zero) {
  if (allow_zero && (text == "0" || text == "0.0")) return 0;
  const double v = parse_positive_number(text, what);
  if (v > 1)
    throw UsageError(fmt::format("{}: {} is a fraction and must be at most 1", what, text));
  return v;
}

// "50GB/s", "400 Gb/s" is refused (bits): the catalogue's unit rules.
double bandwidth(const std::string& text, const char* what) {
  char* end = nullptr;
  const double v = std::strtod(text.c_str(), &end);
  std::string unit(end ? end : "");
  while (!unit.empty() && unit.front() == ' ')
    unit.erase(0, 1);
  if (end == text.c_str() || unit.empty())
    throw UsageError(fmt::format("{}: '{}' is not a bandwidth (e.g. 50GB/s)", what, text));
  const std::optional<double> bps = to_base_unit(v, unit, "B/s");
  if (!bps) throw UsageError(fmt::format("{}: unknown unit '{}' (B/s, GB/s, TB/s)", what, unit));
  if (!std::isfinite(*bps) || *bps <= 0)
    throw UsageError(fmt::format("{}: must be positive, got '{}'", what, text));
  return *bps;
}

Request build_request(const AdviseArgs& a) {
  Request r;
  if (a.mode == "train")
    r.mode = Mode::kTrain;
  else if (a.mode == "infer")
    r.mode = Mode::kInfer;
  else
    throw UsageError(fmt::format("advise: unknown mode '{}' (train or infer)", a.mode));
  const bool train = r.mode == Mode::kTrain;

  ModelOverrides o;
  if (!a.kind.empty()) {
    if (a.kind == "transformer")
      o.kind = ModelKind::kTransformer;
    else if (a.kind == "cnn")
      o.kind = ModelKind::kCnn;
    else
      throw UsageError(fmt::format("--kind: unknown kind '{}' (transformer, cnn)", a.kind));
  }
  o.params = opt_count(a.params, "--params");
  if (auto v = opt_int(a.layers, "--layers", 100000)) o.layers = static_cast<int>(*v);
  if (auto v = opt_int(a.hidden, "--hidden", 1 << 24)) o.hidden = *v;
  if (auto v = opt_int(a.heads, "--heads", 1 << 16)) o.heads = static_cast<int>(*v);
  if (auto v = opt_int(a.kv_heads, "--kv-heads", 1 << 16)) o.kv_heads = static_cast<int>(*v);
  if (auto v = opt_int(a.seq, "--seq", int64_t{1} << 30)) o.seq = *v;
  if (auto v = opt_int(a.vocab, "--vocab", int64_t{1} << 30)) o.vocab = *v;
  if (!a.flops_per_sample.empty()) {
    std::string f = a.flops_per_sample;
    for (const char* unit : {"FLOPs", "FLOP"})
      if (f.size() > std::string(unit).size() && f.substr(f.size() - std::strlen(unit)) == unit) {
        f.resize(f.size() - std::strlen(unit));
        break;
      }
    o.forward_flops = parse_count(f, "--flops-per-sample");
  }
  if (!a.activation_bytes.empty()) {
    const int64_t b = parse_size(a.activation_bytes);
    if (b <= 0)
      throw UsageError(fmt::format("--activation-bytes: '{}' is not a positive size (e.g. 45MB)",
                                   a.activation_bytes));
    o.activation_bytes = static_cast<double>(b);
  }
  r.model = resolve_model(a.model, o);

  r.tokens = opt_count(a.tokens, "--tokens");
  r.samples = opt_count(a.samples, "--samples");
  if (train) {
    r.train.precision = parse_precision(a.precision, true);
    r.train.optimizer = parse_optimizer(a.optimizer);
    r.train.sharding = parse_sharding(a.parallel);
    r.train.recompute = parse_recompute(a.recompute);
    r.train.flash_attention = a.flash_attention;
  } else {
    r.infer.precision = parse_precision(a.precision, false);
    r.infer.kv_precision =
        a.kv_precision.empty() ? Precision::kBf16 : parse_precision(a.kv_precision, false);
    r.infer.batch = opt_int(a.batch, "--batch", int64_t{1} << 24).value_or(1);
    r.context = opt_int(a.context, "--context", int64_t{1} << 30);
  }
  if (!train && (!a.micro_batch.empty() || !a.global_batch.empty()))
    throw UsageError("--micro-batch/--global-batch apply to training; inference takes --batch");
  if (train && (!a.batch.empty() || !a.kv_precision.empty()))
    throw UsageError("--batch/--kv-precision apply to inference (advise infer)");
  r.micro_batch = opt_int(a.micro_batch, "--micro-batch", int64_t{1} << 24);
  r.global_batch = opt_int(a.global_batch, "--global-batch", int64_t{1} << 40);
  if (!a.mfu.empty()) r.mfu = fraction(a.mfu, "--mfu", false);
  if (!a.bw_util.empty()) r.assumptions.bw_util = fraction(a.bw_util, "--bw-util", false);
  if (!a.network.empty()) r.assumptions.network_bandwidth = bandwidth(a.network, "--network");
  Overhead overhead;
  if (!a.overhead.empty()) {
    const int64_t b = parse_size(a.overhead);
    if (b < 0)
      throw UsageError(fmt::format("--overhead: '{}' is not a size (e.g. 2GB)", a.overhead));
    overhead.fixed_bytes = static_cast<double>(b);
  }
  if (!a.fragmentation.empty())
    overhead.fraction = fraction(a.fragmentation, "--fragmentation", true);
  r.train.overhead = overhead;
  r.infer.overhead = overhead;
  if (auto v = opt_int(a.gpus, "--gpus", r.max_gpus)) r.gpus = static_cast<int>(*v);
  if (auto v = opt_int(a.tp, "--tp", 64)) r.tp = static_cast<int>(*v);
  if (!a.max_days.empty()) r.max_days = parse_positive_number(a.max_days, "--max-days");
  if (!a.rank.empty()) {
    if (a.rank == "cost")
      r.rank_by = RankBy::kCost;
    else if (a.rank == "time")
      r.rank_by = RankBy::kTime;
    else if (a.rank == "gpu-hours")
      r.rank_by = RankBy::kGpuHours;
    else
      throw UsageError(fmt::format("--rank: unknown order '{}' (cost, time, gpu-hours)", a.rank));
  }
  std::string name;
  for (size_t i = 0; i <= a.candidates.size(); ++i) {
    if (i == a.candidates.size() || a.candidates[i] == ',') {
      if (!name.empty()) r.candidates.push_back(name);
      name.clear();
    } else {
      name += a.candidates[i];
    }
  }
  return r;
}

void run_advise(const AdviseArgs& args, CliContext& ctx) {
  std::unique_ptr<Catalogue> loaded;
  if (!args.catalogue.empty())
    loaded = std::make_unique<Catalogue>(Catalogue::load(args.catalogue));
  const Catalogue& catalogue = loaded ? *loaded : Catalogue::builtin();
  if (args.model.empty()) {
    std::vector<std::string> ids;
    for (const auto& [id, text] : model_presets())
      ids.push_back(id);
    throw UsageError(fmt::format("advise: --model is required (a preset: {}; or a size: 7B, 70B)",
                                 fmt::join(ids, ", ")));
  }
  const Request request = build_request(args);
  Measurements measured;
  for (const std::string& path : args.runs)
    measured.add_run(load_run_file(path), path, catalogue);
  std::optional<Prices> prices;
  if (args.prices == "example")
    prices = Prices::example(catalogue);
  else if (!args.prices.empty())
    prices = Prices::load(args.prices, catalogue);
  const Advice advice =
      gpuvs::advise::advise(request, catalogue, measured, prices ? &*prices : nullptr);

  if (ctx.global.json) {
    fmt::print("{}", render_json(advice));
    return;
  }
  const TableView view = ranking_table(advice);
  std::vector<TextTable::Align> align;
  for (bool right : view.right_aligned)
    align.push_back(right ? TextTable::Align::kRight : TextTable::Align::kLeft);
  TextTable table(view.header, align);
  for (const auto& row : view.rows)
    table.add_row(row);
  fmt::print("{}\n{}{}", render_title(advice), table.render(),
             render_below_table(advice, args.explain));
}

}  // namespace

void add_advise_command(CLI::App& app, CliContext& ctx) {
  auto args = std::make_shared<AdviseArgs>();
  CLI::App* sub = app.add_subcommand(
      "advise",
      "Which GPU, how many, how long, what cost: memory, time and cost per catalogue GPU for "
      "training or serving a model");
  sub->add_option("mode", args->mode, "train (default) or infer");
  sub->add_option("--model", args->model,
                  "Preset (llama-2-7b, llama-2-13b, llama-2-70b, gpt3-175b, resnet50) or a size "
                  "(7B, 70B, 25.6M)");
  sub->add_option("--kind", args->kind, "transformer (default) or cnn, for a model given by size");
  sub->add_option("--params", args->params, "Parameter count, replacing a preset's (e.g. 7B)");
  sub->add_option("--layers", args->layers, "Transformer layers L");
  sub->add_option("--hidden", args->hidden, "Transformer hidden size h");
  sub->add_option("--heads", args->heads, "Attention heads a");
  sub->add_option("--kv-heads", args->kv_heads, "Key/value heads (grouped-query attention)");
  sub->add_option("--seq", args->seq, "Training sequence length s (default context)");
  sub->add_option("--vocab", args->vocab, "Vocabulary size V");
  sub->add_option("--flops-per-sample", args->flops_per_sample,
                  "CNN: forward FLOPs of one sample (e.g. 8.2G)");
  sub->add_option("--activation-bytes", args->activation_bytes,
                  "CNN: activation bytes kept per sample, 16-bit (e.g. 45MB)");
  sub->add_option("--tokens", args->tokens, "Training tokens (e.g. 2T; default 20 × parameters)");
  sub->add_option("--samples", args->samples, "CNN training samples (e.g. 115M)");
  sub->add_option("--precision", args->precision,
                  "train: fp32, tf32, fp16, bf16 (default), fp8; infer: also int8, int4");
  sub->add_option("--optimizer", args->optimizer, "adam (default, also adamw) or sgd (momentum)");
  sub->add_option("--parallel", args->parallel,
                  "dp, zero1 (default), zero2, zero3 or fsdp (= zero3)");
  sub->add_option("--recompute", args->recompute,
                  "Activation recomputation: none, selective, full");
  sub->add_flag("--flash-attention,!--no-flash-attention", args->flash_attention,
                "Attention keeps no s×s scores (default); --no-flash-attention stores them");
  sub->add_option("--micro-batch", args->micro_batch,
                  "Sequences or samples per GPU per pass (default 1; CNN 256)");
  sub->add_option("--global-batch", args->global_batch,
                  "Sequences or samples per optimizer step (default 4M tokens; CNN 8192)");
  sub->add_option("--mfu", args->mfu,
                  "Share of the datasheet peak delivered (default 0.40; CNN 0.20)");
  sub->add_option("--bw-util", args->bw_util,
                  "Inference: share of the datasheet memory bandwidth decode reaches (0.80)");
  sub->add_option("--network", args->network, "Bandwidth per GPU between nodes (50GB/s)");
  sub->add_option("--overhead", args->overhead, "Fixed framework memory per GPU (2GB)");
  sub->add_option("--fragmentation", args->fragmentation,
                  "Extra memory as a share of the computed total (0.10)");
  sub->add_option("--gpus", args->gpus, "Use this many GPUs instead of the fewest that fit");
  sub->add_option("--tp", args->tp, "Tensor-parallel degree (default: the smallest that fits)");
  sub->add_option("--max-days", args->max_days,
                  "Training: the fewest GPUs that finish within this many days");
  sub->add_option("--candidates", args->candidates,
                  "GPUs to consider, comma-separated (default: the whole catalogue)");
  sub->add_option("--rank", args->rank,
                  "Order: cost (default with --prices), gpu-hours (default without), time");
  sub->add_option("--prices", args->prices,
                  "CSV of prices per GPU-hour (docs/advise.md), or 'example' for the bundled, "
                  "dated example");
  sub->add_option("--run", args->runs,
                  "Run file whose measured GEMM, copy bandwidth, all-reduce and model "
                  "throughput replace datasheet figures (repeatable)")
      ->allow_extra_args(false);
  sub->add_option("--catalogue", args->catalogue, "Catalogue file instead of the built-in one");
  sub->add_option("--context", args->context,
                  "Inference: tokens per sequence, prompt + output (default the model's)");
  sub->add_option("--batch", args->batch, "Inference: sequences served at once (default 1)");
  sub->add_option("--kv-precision", args->kv_precision, "Inference: KV cache values (bf16)");
  sub->add_flag("--explain", args->explain, "Show the arithmetic behind every figure");
  sub->footer(
      "Examples:\n"
      "  gpuvs advise --model llama-2-7b --tokens 2T --max-days 30 --prices example\n"
      "  gpuvs advise --model 70B --tokens 2T --parallel zero3 --explain\n"
      "  gpuvs advise infer --model llama-2-70b --batch 16 --context 4096\n"
      "docs/advise.md gives every formula, default and source.");
  sub->callback([&ctx, args] { run_advise(*args, ctx); });
}

}  // namespace gpuvs::cli
