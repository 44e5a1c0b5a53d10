// `gpuvs advise [train|infer] --model M ...`: which GPU, how many, how long, what
// cost. Reads the catalogue, the user's run files and prices file only, never a live
// GPU (the advisor is a CUDA-free layer, so this works in a CPU-only build); prints a
// ranked table, the arithmetic with --explain, or JSON. Every malformed value is one
// line and exit 2. Numbers are taken as text and read by core/units' parse_number
// under the rules stated at each option below (docs/advise.md, "Numbers"), so that
// every option takes the same forms and "-7B", "0" and "7X" get the same kind of
// message.
#include <fmt/format.h>

#include <cctype>
#include <cmath>
#include <cstring>
#include <memory>
#include <optional>
#include <string>

#include "advise/advisor.h"
#include "advise/output.h"
#include "cli/app.h"
#include "core/text.h"
#include "core/units.h"
#include "report/table.h"

namespace gpuvs::cli {

namespace {

using namespace gpuvs::advise;

// Unset options stay std::nullopt: an empty value given on the command line
// (--context "") is an error, not the default.
using Text = std::optional<std::string>;

struct AdviseArgs {
  std::string mode = "train";
  std::string model;
  std::string kind;
  Text params, layers, hidden, heads, kv_heads, seq, vocab;
  Text flops_per_sample, activation_bytes;
  Text tokens, samples;
  std::string precision = "bf16", optimizer = "adam", parallel = "zero1", recompute = "none";
  bool flash_attention = true;
  Text micro_batch, global_batch;
  Text mfu, bw_util, network, overhead, fragmentation;
  Text gpus, tp, max_days;
  std::string rank;
  std::string candidates;  // comma-separated
  std::string prices, catalogue;
  std::vector<std::string> runs;
  Text context, batch;
  std::string kv_precision;
  bool explain = false;
};

// What each number is. Counts of things take decimal suffixes (4k = 4000); those of
// parameters, tokens, samples and FLOPs also B for 10^9 (7B); sizes in bytes spell
// their unit (2GB = 2·10^9, 2GiB = 2^31); fractions and days are plain numbers.
NumberRules whole_count(double max, std::string_view examples) {
  return NumberRules::count().whole().at_most(max).eg(examples);
}
NumberRules fraction(std::string_view examples) {
  return NumberRules::plain().at_most(1).eg(examples);
}
// A share of a peak that is delivered: below 1 % no GPU is worth advising on.
NumberRules share(std::string_view examples) {
  return fraction(examples).at_least(0.01);
}

// Options that one mode uses and the other does not. Given in the other mode they are
// refused, one line naming the option and the mode, rather than silently ignored
// (their values would not even be checked).
struct ModeOption {
  std::string_view name;   // as registered
  std::string_view shown;  // as the message names it
  Mode mode;
};
constexpr ModeOption kModeOptions[] = {
    {"--optimizer", "--optimizer", Mode::kTrain},
    {"--parallel", "--parallel", Mode::kTrain},
    {"--recompute", "--recompute", Mode::kTrain},
    {"--flash-attention", "--flash-attention/--no-flash-attention", Mode::kTrain},
    {"--micro-batch", "--micro-batch", Mode::kTrain},
    {"--global-batch", "--global-batch", Mode::kTrain},
    {"--tokens", "--tokens", Mode::kTrain},
    {"--samples", "--samples", Mode::kTrain},
    {"--max-days", "--max-days", Mode::kTrain},
    {"--network", "--network", Mode::kTrain},
    {"--context", "--context", Mode::kInfer},
    {"--batch", "--batch", Mode::kInfer},
    {"--kv-precision", "--kv-precision", Mode::kInfer},
    {"--bw-util", "--bw-util", Mode::kInfer},
};

Mode parse_mode(const std::string& text) {
  if (text == "train") return Mode::kTrain;
  if (text == "infer") return Mode::kInfer;
  throw UsageError(fmt::format("advise: unknown mode {} (train or infer)", shown_text(text)));
}

void refuse_other_mode_options(const CLI::App& sub, Mode mode) {
  for (const ModeOption& o : kModeOptions) {
    if (o.mode == mode || sub.get_option(std::string(o.name))->count() == 0) continue;
    const bool train = o.mode == Mode::kTrain;
    throw UsageError(fmt::format("advise {}: {} applies to {} (advise {}), not to {}",
                                 train ? "infer" : "train", o.shown,
                                 train ? "training" : "inference", train ? "train" : "infer",
                                 train ? "inference" : "training"));
  }
}

std::optional<double> number(const Text& text, const char* option, const NumberRules& rules) {
  if (!text) return std::nullopt;
  return option_number(option, *text, rules).value;
}

std::optional<int64_t> whole(const Text& text, const char* option, const NumberRules& rules) {
  if (!text) return std::nullopt;
  return option_number(option, *text, rules.whole()).integer;
}

// --global-batch's text: the count and whether its unit word says tokens (sequences and
// samples are what a bare count is).
struct GlobalBatchText {
  Text count;
  bool tokens = false;
};

GlobalBatchText split_global_batch(const std::string& text) {
  std::string s = text;
  while (!s.empty() && s.back() == ' ')
    s.pop_back();
  const auto lower = [](std::string v) {
    for (char& c : v)
      c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return v;
  };
  const std::string low = lower(s);
  struct Word {
    const char* word;
    bool tokens;
  };
  for (const Word w : {Word{"tokens", true}, Word{"token", true}, Word{"tok", true},
                       Word{"sequences", false}, Word{"sequence", false}, Word{"seqs", false},
                       Word{"seq", false}, Word{"samples", false}, Word{"sample", false}}) {
    const size_t n = std::strlen(w.word);
    if (low.size() > n && low.compare(low.size() - n, n, w.word) == 0) {
      std::string count = s.substr(0, s.size() - n);
      while (!count.empty() && count.back() == ' ')
        count.pop_back();
      return {count, w.tokens};
    }
  }
  return {s, false};
}

Request build_request(const AdviseArgs& a) {
  Request r;
  r.mode = parse_mode(a.mode);
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
  o.params = number(a.params, "--params", model_size_rules().eg("7B, 6.74B"));
  if (auto v = whole(a.layers, "--layers", whole_count(100000, "32, 80")))
    o.layers = static_cast<int>(*v);
  if (auto v = whole(a.hidden, "--hidden", whole_count(1 << 24, "4096, 8192"))) o.hidden = *v;
  if (auto v = whole(a.heads, "--heads", whole_count(1 << 16, "32, 64")))
    o.heads = static_cast<int>(*v);
  if (auto v = whole(a.kv_heads, "--kv-heads", whole_count(1 << 16, "8")))
    o.kv_heads = static_cast<int>(*v);
  o.seq = whole(a.seq, "--seq", whole_count(1 << 30, "2048, 4096"));
  o.vocab = whole(a.vocab, "--vocab", whole_count(1 << 30, "32000, 50257"));
  o.forward_flops = number(a.flops_per_sample, "--flops-per-sample",
                           model_count_rules().at_least(1).unit("FLOP").eg("8.2G, 8.2GFLOP"));
  o.activation_bytes =
      number(a.activation_bytes, "--activation-bytes", NumberRules::bytes().whole().eg("45MB"));
  r.model = resolve_model(a.model, o);

  r.tokens = number(a.tokens, "--tokens", model_count_rules().at_least(1).eg("2T, 300B"));
  r.samples = number(a.samples, "--samples", model_count_rules().at_least(1).eg("115M"));
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
    r.infer.batch = whole(a.batch, "--batch", whole_count(1 << 24, "1, 16")).value_or(1);
  }
  r.context = whole(a.context, "--context", whole_count(1 << 30, "4k, 128k"));
  r.micro_batch = whole(a.micro_batch, "--micro-batch", whole_count(1 << 24, "1, 256"));
  if (a.global_batch) {
    // A count of sequences (CNN: samples), or of tokens with the word: "2048", "2048seq",
    // "16M tokens".
    const GlobalBatchText g = split_global_batch(*a.global_batch);
    const auto at_most = [](int bits) {
      return whole_count(static_cast<double>(int64_t{1} << bits), "1024, 2048seq, 16M tokens");
    };
    if (!g.tokens)
      r.global_batch = whole(g.count, "--global-batch", at_most(40));
    else if (const auto tokens = whole(g.count, "--global-batch", at_most(50)))
      r.global_batch_tokens = static_cast<double>(*tokens);
  }
  r.mfu = number(a.mfu, "--mfu", share("0.4"));
  if (auto v = number(a.bw_util, "--bw-util", share("0.8"))) r.assumptions.bw_util = *v;
  if (auto v = number(a.network, "--network", NumberRules::rate().at_most(1e15).eg("50GB/s")))
    r.assumptions.network_bandwidth = *v;
  Overhead overhead;
  if (auto v = number(a.overhead, "--overhead",
                      NumberRules::bytes().whole().or_zero().at_most(1e15).eg("2GB")))
    overhead.fixed_bytes = *v;
  if (auto v = number(a.fragmentation, "--fragmentation", fraction("0.1").or_zero()))
    overhead.fraction = *v;
  r.train.overhead = overhead;
  r.infer.overhead = overhead;
  if (auto v = whole(a.gpus, "--gpus", whole_count(r.max_gpus, "8, 64")))
    r.gpus = static_cast<int>(*v);
  if (auto v = whole(a.tp, "--tp", whole_count(64, "1, 8"))) r.tp = static_cast<int>(*v);
  r.max_days = number(a.max_days, "--max-days", NumberRules::plain().at_most(36500).eg("30"));
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

void run_advise(const AdviseArgs& args, const CLI::App& sub, CliContext& ctx) {
  refuse_other_mode_options(sub, parse_mode(args.mode));
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
    print_text(stdout, "{}", render_json(advice));
    return;
  }
  const TableView view = ranking_table(advice);
  std::vector<TextTable::Align> align;
  for (bool right : view.right_aligned)
    align.push_back(right ? TextTable::Align::kRight : TextTable::Align::kLeft);
  TextTable table(view.header, align);
  table.notes_when_narrow(view.header.size() - 1);  // the "why" column: prose
  for (const auto& row : view.rows)
    table.add_row(row);
  print_text(stdout, "{}\n{}{}", fit_lines(render_title(advice)), table.render(),
             fit_lines(render_below_table(advice, args.explain)));
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
  sub->add_option(
      "--global-batch", args->global_batch,
      "Sequences (CNN: samples) per optimizer step, e.g. 1024 or 2048seq, or tokens: "
      "16M tokens, whole sequences of the model's length (default: 4M tokens' worth, 1024 "
      "sequences of 4096; CNN 8192)");
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
  sub->add_option(
      "--context", args->context,
      "Inference: tokens per sequence, prompt + output, e.g. 4096 or 4k (= 4000; default "
      "the model's)");
  sub->add_option("--batch", args->batch, "Inference: sequences served at once (default 1)");
  sub->add_option("--kv-precision", args->kv_precision, "Inference: KV cache values (bf16)");
  sub->add_flag("--explain", args->explain, "Show the arithmetic behind every figure");
  sub->footer(
      "Numbers: counts take the decimal suffixes k, M, G, T, P (4k = 4000); parameters,\n"
      "tokens, samples and FLOPs also B (7B = 7·10^9); byte sizes spell their unit (2GB =\n"
      "2·10^9, 2GiB = 2^31 bytes); bandwidths are bytes per second (50GB/s).\n"
      "Examples:\n"
      "  gpuvs advise --model llama-2-7b --tokens 2T --max-days 30 --prices example\n"
      "  gpuvs advise --model 70B --tokens 2T --parallel zero3 --explain\n"
      "  gpuvs advise infer --model llama-2-70b --batch 16 --context 4096\n"
      "docs/advise.md gives every formula, default and source.");
  sub->callback([&ctx, args, sub] { run_advise(*args, *sub, ctx); });
}

}  // namespace gpuvs::cli
