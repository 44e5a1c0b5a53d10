// `gpuvs model resnet50|bert-large`: end-to-end throughput of one configuration
// (train or infer, precision, batch or the largest that fits, accumulation, CUDA
// graph), through the shared session: run file, summary, exit codes. The options
// are checked here, on every build, before anything touches a GPU (docs/models.md).
#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <optional>
#include <string>

#include "cli/app.h"
#include "cli/options.h"
#include "cli/session.h"
#include "core/suggest.h"
#include "core/units.h"
#include "models/llama/shapes.h"
#include "models/run_options.h"

#if GPUVS_HAVE_CUDA
#include "suite/registry.h"
#endif

namespace gpuvs::cli {

namespace {

constexpr std::array<std::string_view, 3> kModels = {"resnet50", "bert-large", "llama"};

struct ModelArgs {
  std::string model;
  std::string mode = "train";
  std::string precision = "bf16";
  std::string batch = "256";
  std::optional<std::string> accumulate;
  std::string graph = "on";
  bool deterministic = false;
  std::optional<std::string> attention;
  std::optional<double> headroom;
  std::optional<std::string> seq;
  std::optional<std::string> size;
  std::optional<std::string> prompt;
  std::optional<std::string> generate;
  std::optional<std::string> recompute;
  std::optional<std::string> kv_cache;
  std::optional<std::string> steps;
  std::optional<double> time_cap_s;
  bool profile = false;
  bool quick = false;
  std::string gpus;
};

template <size_t N>
std::string joined(const std::array<std::string_view, N>& names) {
  std::string out;
  for (std::string_view n : names)
    out += (out.empty() ? "" : ", ") + std::string(n);
  return out;
}

// A count given to an option: a whole number read as every count is (core/units: 1k =
// 1000), 0 allowed here so that the caller says what the least is.
std::optional<int64_t> count(const std::optional<std::string>& text, const char* option,
                             int64_t max, std::string_view examples) {
  if (!text) return std::nullopt;
  return option_number(
             option, *text,
             NumberRules::count().whole().or_zero().at_most(static_cast<double>(max)).eg(examples))
      .integer;
}

// The checks that need no GPU: every one throws UsageError (exit 2) naming the flag.
models::ModelRunOptions parse_model_args(const ModelArgs& a) {
  models::ModelRunOptions run;
  models::ModelConfig& c = run.config;
  if (std::find(kModels.begin(), kModels.end(), a.model) == kModels.end())
    throw UsageError(
        fmt::format("unknown model '{}'{}", a.model,
                    did_you_mean_or_known(
                        suggest(a.model, std::vector<std::string>(kModels.begin(), kModels.end())),
                        joined(kModels))));
  c.model = a.model;
  const auto mode = models::mode_from_string(a.mode);
  if (!mode) throw UsageError(fmt::format("--mode: '{}' is not train or infer", a.mode));
  c.mode = *mode;
  const auto precision = models::precision_from_string(a.precision);
  if (!precision)
    throw UsageError(
        fmt::format("--precision: '{}' is not one of fp32, tf32, fp16, bf16, fp8", a.precision));
  c.precision = *precision;

  if (a.batch == "max") {
    run.batch_max = true;
  } else {
    const NumberRules batch = NumberRules::count().whole().at_most(1 << 24).eg("256, 1k, or max");
    c.batch = static_cast<int>(option_number("--batch", a.batch, batch).integer);
  }
  const int accumulate =
      static_cast<int>(count(a.accumulate, "--accumulate", 1 << 20, "4").value_or(1));
  if (accumulate < 1) throw UsageError("--accumulate: must be 1 or more");
  if (accumulate > 1 && c.mode != models::Mode::kTrain)
    throw UsageError("--accumulate: gradient accumulation is for --mode train only");
  c.accumulate = accumulate;
  if (a.graph != "on" && a.graph != "off")
    throw UsageError(fmt::format("--graph: '{}' is not on or off", a.graph));
  c.graph = a.graph == "on";
  c.deterministic = a.deterministic;
  if (a.attention && c.model == "llama") {
    if (c.mode != models::Mode::kTrain)
      throw UsageError(
          "--attention: for llama only in --mode train (the decoder's inference "
          "has its own attention kernels)");
    const auto kind = models::attention_kernel_from_string(*a.attention);
    if (!kind)
      throw UsageError(
          fmt::format("--attention: '{}' is not auto, cudnn or gpuvs (llama)", *a.attention));
    if (*kind == models::AttentionKernel::kCudnn && c.deterministic)
      throw UsageError(
          "--attention cudnn with --deterministic: cuDNN's attention backward adds through "
          "atomics; --attention gpuvs is deterministic");
    c.attention_kernel = *kind;
  } else if (a.attention) {
    if (c.model != "bert-large") throw UsageError("--attention: only for bert-large and llama");
    const auto kind = models::attention_from_string(*a.attention);
    if (!kind)
      throw UsageError(fmt::format("--attention: '{}' is not unfused or fused", *a.attention));
    c.attention = *kind;
  }
  if (a.headroom) {
    if (!run.batch_max) throw UsageError("--headroom: only with --batch max");
    run.headroom = *a.headroom;  // a fraction in [0, 0.9]: read so by add_number_option
  }
  const auto seq = count(a.seq, "--seq", 1 << 20, "128, 2k");
  if (seq) {
    if (c.model != "bert-large" && !(c.model == "llama" && c.mode == models::Mode::kTrain))
      throw UsageError("--seq: only for bert-large and llama --mode train");
    if (c.model == "bert-large" && *seq != 128 && *seq != 512)
      throw UsageError(fmt::format("--seq: {} is not 128 or 512", *seq));
    c.seq = static_cast<int>(*seq);
  }
  if (const auto steps = count(a.steps, "--steps", 1 << 30, "20, 1k")) {
    if (*steps < 1) throw UsageError("--steps: must be 1 or more");
    run.steps = static_cast<int>(*steps);
  }
  run.profile = a.profile;
  const bool llama = c.model == "llama";
  if (!llama && (a.size || a.prompt || a.generate || a.recompute || a.kv_cache))
    throw UsageError(fmt::format("{}: only for llama", a.size       ? "--size"
                                                       : a.prompt   ? "--prompt"
                                                       : a.generate ? "--generate"
                                                       : a.kv_cache ? "--kv-cache"
                                                                    : "--recompute"));
  if (llama) {
    const std::string size = a.size.value_or("1b");
    const std::optional<models::llama::Shape> shape = models::llama::find_shape(size);
    if (!shape)
      throw UsageError(
          fmt::format("--size: '{}' is not one of {}", size, models::llama::size_list()));
    c.llama_size = size;
    if (c.mode == models::Mode::kTrain) {
      // Trained through the generic trainer as "llama-<size>" (models/llama/training.h).
      if (a.prompt || a.generate || a.kv_cache)
        throw UsageError(fmt::format("{}: only for llama --mode infer", a.prompt ? "--prompt"
                                                                        : a.generate
                                                                            ? "--generate"
                                                                            : "--kv-cache"));
      if (c.precision != models::Precision::kBf16 && c.precision != models::Precision::kFp8)
        throw UsageError(fmt::format(
            "llama --mode train: --precision {} is not built; bf16 and fp8 are (the attention "
            "kernels are 16-bit)",
            models::to_string(c.precision)));
      c.seq = seq ? c.seq : 2048;
      if (c.seq < 64 || c.seq % 64 != 0 || c.seq > shape->max_context)
        throw UsageError(fmt::format("--seq: {} is not a multiple of 64 up to {}'s context of {}",
                                     c.seq, shape->name, shape->max_context));
      if (a.recompute) {
        const auto r = models::recompute_from_string(*a.recompute);
        if (!r)
          throw UsageError(
              fmt::format("--recompute: '{}' is not none, selective or full", *a.recompute));
        c.recompute = *r;
      }
      if (a.batch == "256") c.batch = 8;  // the default of the others; 8 x 2048 tokens
      c.model = "llama-" + size;
    } else {
      if (c.precision == models::Precision::kTf32)
        throw UsageError(
            "llama --mode infer: --precision tf32 is not built; bf16, fp16, fp32 or fp8 (E4M3 "
            "weights, bf16 activations)");
      if (a.recompute) throw UsageError("--recompute: only for llama --mode train");
      if (a.kv_cache) {
        // The cache is in the activations' type (bf16 with fp8 weights) or in E4M3.
        const std::string own = c.precision == models::Precision::kFp8
                                    ? "bf16"
                                    : std::string(models::to_string(c.precision));
        if (*a.kv_cache == "fp8") {
          if (own != "bf16")
            throw UsageError(fmt::format(
                "--kv-cache fp8: the FP8 cache is for bf16 activations (--precision bf16 or "
                "fp8), not {}",
                own));
          c.kv_cache_fp8 = true;
        } else if (*a.kv_cache != own) {
          throw UsageError(fmt::format("--kv-cache: '{}' is not {} (this run's activations) or fp8",
                                       *a.kv_cache, own));
        }
      }
      if (a.batch == "256") c.batch = 1;  // the default of the others; a decoder starts at 1
      const auto prompt = count(a.prompt, "--prompt", shape->max_context, "128, 2k");
      const auto generate = count(a.generate, "--generate", shape->max_context, "128");
      c.prompt = static_cast<int>(prompt.value_or(128));
      c.generate = static_cast<int>(generate.value_or(128));
      if (c.prompt < 1) throw UsageError("--prompt: must be 1 or more");
      if (c.generate < 2) throw UsageError("--generate: must be 2 or more");
      if (c.prompt + c.generate > shape->max_context)
        throw UsageError(fmt::format("--prompt {} + --generate {} is beyond {}'s context of {}",
                                     c.prompt, c.generate, shape->name, shape->max_context));
    }
  }
  // Known without a GPU: ResNet-50 has no FP8 path on any GPU (models/factory.cpp
  // says the same when asked directly).
  if (c.model == "resnet50" && c.precision == models::Precision::kFp8)
    throw UsageError(
        "--precision fp8 is for BERT-large and Llama: ResNet-50 runs fp32, tf32, fp16 or "
        "bf16");
  check_gpu_list(a.gpus);
  return run;
}

}  // namespace

void add_model_command(CLI::App& app, CliContext& ctx) {
  auto args = std::make_shared<ModelArgs>();
  CLI::App* sub = app.add_subcommand(
      "model",
      "End-to-end ResNet-50 / BERT-large / Llama training throughput, ResNet-50 / BERT-large "
      "inference: precision, batch (or the largest that fits), CUDA graph; Llama inference: "
      "prefill, decode, time to first token, inter-token latency; writes a run file");
  sub->add_option("model", args->model, "resnet50 | bert-large | llama")->required();
  sub->add_option("--mode", args->mode, "train (default) | infer");
  sub->add_option("--precision", args->precision,
                  "fp32 | tf32 | fp16 | bf16 (default) | fp8 (bert-large; llama: training, and "
                  "E4M3 weights in inference)");
  sub->add_option("--batch", args->batch,
                  "Images or sequences per micro-step (default 256; llama 8 in training, 1 in "
                  "inference), or max: the largest that fits, then measured at the recommended "
                  "batch");
  sub->add_option("--accumulate", args->accumulate,
                  "Micro-steps per optimizer step (train): global batch = K x batch (default 1)");
  sub->add_option("--graph", args->graph, "Replay each step as one CUDA graph: on (default) | off");
  sub->add_flag("--deterministic", args->deterministic,
                "The same bits on every run: untimed, deterministic cuDNN algorithms only "
                "(slower where the fastest is not deterministic)");
  sub->add_option("--attention", args->attention,
                  "bert-large attention: unfused (default; probabilities in memory) | fused "
                  "(flash-style kernels); llama --mode train: auto (default: cuDNN's where it "
                  "runs, gpuvs's with --deterministic) | cudnn | gpuvs");
  add_number_option(sub, "--headroom", args->headroom,
                    NumberRules::plain().or_zero().at_most(0.9).eg("0.1"),
                    "With --batch max: fraction of memory the recommended batch leaves free "
                    "(default 0.10)");
  sub->add_option("--seq", args->seq,
                  "bert-large sequence length: 128 (default) | 512; llama --mode train: a "
                  "multiple of 64 up to the model's context (default 2048)");
  sub->add_option("--size", args->size,
                  "llama: 1b (Llama 3.2 1B, default) | 3b | 8b (Llama 3.1 8B)");
  sub->add_option("--recompute", args->recompute,
                  "llama --mode train: what the backward recomputes: none (default) | "
                  "selective (the norms' and SwiGLU's outputs) | full (each layer from its "
                  "input)");
  sub->add_option("--prompt", args->prompt, "llama: prompt tokens per sequence (default 128)");
  sub->add_option("--kv-cache", args->kv_cache,
                  "llama --mode infer: the KV cache's type: the activations' (default) | fp8 "
                  "(E4M3, with bf16 activations)");
  sub->add_option("--generate", args->generate,
                  "llama: tokens generated after the prompt, the first by the prefill (default "
                  "128)");
  auto* steps = sub->add_option("--steps", args->steps,
                                "Exactly N timed steps, one sample each (default: until the "
                                "noise target or the time cap)");
  auto* cap = add_number_option(sub, "--time-cap", args->time_cap_s,
                                NumberRules::plain().at_most(24 * 3600).eg("2, 0.5"),
                                "Seconds of sampling for the throughput (default 2; 0.5 with "
                                "--quick)");
  steps->excludes(cap);
  sub->add_flag("--profile", args->profile,
                "Per-layer time breakdown, where the model can time its layers");
  sub->add_option("--gpu", args->gpus, "GPU to measure, e.g. 0 (default: all, one after another)");
  sub->add_flag("--quick", args->quick, "Short pass, as in `gpuvs run`");
  sub->callback([&ctx, args] {
    SessionOptions options;
    options.command = "model";
    options.gpu_list = args->gpus;
    options.model = parse_model_args(*args);
    options.quick = args->quick;
    options.measure = args->quick ? quick_options() : MeasureOptions{};
    if (args->time_cap_s) options.measure.time_cap_s = *args->time_cap_s;
#if GPUVS_HAVE_CUDA
    const std::vector<std::string> names = {"model"};
    options.benchmarks = select_benchmarks(names);
    ctx.exit_code = run_session(ctx.global, options);
#else
    (void)ctx;
    throw_built_without_cuda("model");
#endif
  });
}

}  // namespace gpuvs::cli
