// Steps, CUDA graph, timing and results of one model configuration. See trainer.h;
// the result ids and what each figure includes are documented in docs/models.md.
#include "models/trainer.h"

#include <cuda_runtime_api.h>
#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "bench/compute/gemm_runner.h"
#include "core/error.h"
#include "core/stats.h"
#include "core/units.h"
#include "gpu/check.h"
#include "gpu/nvml.h"
#include "measure/cuda_timer.h"
#include "specs/catalogue.h"
#include "suite/context.h"

namespace gpuvs::models {

void enqueue_step(Model& model) {
  const ModelConfig& c = model.config();
  if (c.mode == Mode::kInfer) {
    model.forward();
    return;
  }
  const int k = std::max(1, c.accumulate);
  for (int i = 0; i < k; ++i)
    model.forward_backward(/*accumulate=*/i > 0);
  model.optimizer_step(k);
}

StepRunner::StepRunner(Model& model, bool graph) : model_(model) {
  if (graph)
    graph_ =
        std::make_unique<GraphExec>(model.stream(), [&](cudaStream_t) { enqueue_step(model); });
}

void StepRunner::launch() const {
  if (graph_) {
    graph_->launch(model_.stream());
  } else {
    enqueue_step(model_);
  }
}

std::unique_ptr<Model> build_model(const ModelConfig& config, int device) {
  try {
    return make_model(config, device);
  } catch (const CannotRunError& e) {
    throw UsageError(e.what());
  }
}

double device_used_bytes() {
  const auto [free_b, total_b] = device_memory_info();
  return static_cast<double>(total_b - free_b);
}

std::string model_display_name(const std::string& model) {
  const ModelDef* def = find_model_def(model);
  return def ? std::string(def->display) : model;
}

std::string model_result_id(Family family, const ModelConfig& c, std::string_view layer) {
  std::vector<std::string> values = {c.model, std::string(to_string(c.mode)),
                                     std::string(to_string(c.precision))};
  if (!layer.empty()) values.emplace_back(layer);
  return result_id(family, values);
}

namespace {

int micro_steps(const ModelConfig& c) {
  return c.mode == Mode::kTrain ? std::max(1, c.accumulate) : 1;
}

// "img/s" -> "img": what one item is called, for per-item units.
std::string item_name(const std::string& items_unit) {
  const auto slash = items_unit.rfind("/s");
  return slash == std::string::npos ? items_unit : items_unit.substr(0, slash);
}

std::map<std::string, ParamValue> run_parameters(const Model& m, const SearchFacts* s,
                                                 bool graphed) {
  const ModelConfig& c = m.config();
  std::map<std::string, ParamValue> p;
  p["model"] = c.model;
  p["mode"] = std::string(to_string(c.mode));
  p["precision"] = std::string(to_string(c.precision));
  p["batch"] = int64_t{c.batch};
  p["accumulate"] = int64_t{micro_steps(c)};
  p["global_batch"] = int64_t{c.batch} * micro_steps(c);
  p["graph"] = graphed;
  if (c.model == "bert-large") {
    p["seq"] = int64_t{c.seq};
    p["attention"] = std::string(to_string(c.attention));
  }
  if (c.model.rfind("llama-", 0) == 0) {
    p["seq"] = int64_t{c.seq};
    p["attention"] = std::string("fused causal");
    // Absent where nothing is recomputed, as in the run files written before the option.
    if (c.recompute != Recompute::kNone) p["recompute"] = std::string(to_string(c.recompute));
  }
  if (c.deterministic) p["deterministic"] = true;
  if (std::string how = m.algorithm_search(); !how.empty()) p["algorithm_search"] = how;
  if (std::string which = m.attention_kernel(); !which.empty()) p["attention_kernel"] = which;
  p["parameter_count"] = m.parameter_count();
  p["batch_mode"] = std::string(s ? "max" : "fixed");
  if (s) {
    p["max_batch"] = int64_t{s->search.max_batch};
    p["recommended_batch"] = int64_t{s->search.recommended_batch};
    p["headroom"] = s->headroom;
  }
  return p;
}

// The output check after the timed steps: a training loss that is a finite,
// non-negative number; inference logits that are all finite.
Validation validate_output(Model& m) {
  try {
    if (m.config().mode == Mode::kTrain) {
      const double loss = m.loss();
      if (std::isfinite(loss) && loss >= 0)
        return {true, fmt::format("training loss after the timed steps {:.4f}, finite", loss)};
      return {false, fmt::format("training loss after the timed steps is {}", loss)};
    }
    int64_t values = 0, bad = 0;
    if (const auto counted = m.count_nonfinite_logits()) {
      values = counted->values;
      bad = counted->nonfinite;
    } else {
      const HostTensor logits = m.get_tensor("logits");
      values = static_cast<int64_t>(logits.data.size());
      bad = std::count_if(logits.data.begin(), logits.data.end(),
                          [](float v) { return !std::isfinite(v); });
    }
    if (values == 0) return {false, "the model returned no logits"};
    if (bad == 0) return {true, fmt::format("all {} logits after the timed steps finite", values)};
    return {false, fmt::format("{} of {} logits not finite", bad, values)};
  } catch (const Error& e) {
    return {false, fmt::format("could not read the output back: {}", e.what())};
  }
}

// A figure derived from the run rather than timed by the harness: one sample.
Result quantity(const std::string& id, const std::string& name, const Result& headline,
                double value, const std::string& unit) {
  Result r;
  r.id = id;
  r.name = name;
  r.devices = headline.devices;
  r.parameters = headline.parameters;
  r.value = value;
  r.unit = unit;
  r.samples = {value};
  r.stats = compute_stats(r.samples);
  return r;
}

// The headline's samples (items/s) times `per_item`: another rate of the same steps
// (FLOP/s, tokens/s), with the headline's status.
Result per_item_rate(const Result& headline, const std::string& id, const std::string& name,
                     const std::string& unit, double per_item) {
  Result r = headline;
  r.id = id;
  r.name = name;
  r.unit = unit;
  for (double& v : r.samples)
    v *= per_item;
  r.stats = compute_stats(r.samples);
  r.value = r.stats.median;
  return r;
}

// MFU against what this GPU's GEMMs reach: the model's FLOP/s over an 8192^3 GEMM
// (TN, cuBLASLt's fastest of its first heuristic algorithms) at the run's precision
// (fp8: E4M3), timed right after the model's steps, in a burst as compute.gemm times
// it; the GEMM's sustained rate after a second of back-to-back products (the clock
// the model's steps ran at, under the power cap) goes into the parameters, with the
// MFU against it. Unsupported with the reason where the GEMM cannot run.
Result mfu_gemm_result(const Result& headline, const ModelConfig& cfg, BenchContext& ctx,
                       double flops_per_item, const std::string& name) {
  Result r = per_item_rate(headline, model_result_id(Family::kModelMfuGemm, cfg),
                           name + ", MFU of the measured GEMM", "1", flops_per_item);
  const auto unsupported = [&](const std::string& why) {
    r.samples.clear();
    r.stats = Stats{};
    r.value = 0;
    r.status = Status::kUnsupported;
    r.status_reason = why;
    return r;
  };
  GemmBenchOptions g;
  g.precisions = {cfg.precision == Precision::kFp8 ? GemmPrecision::kFp8E4m3
                                                   : GemmPrecision::kBf16};
  g.search_best = false;
  g.max_algos = 4;
  g.sustained = !ctx.quick;  // the quick pass keeps the burst only (its time budget)
  g.preload_s = 1.0;
  std::vector<Result> gemm;
  try {
    gemm = run_gemm_bench(ctx, g);
  } catch (const Error& e) {
    return unsupported(fmt::format("the GEMM failed: {}", e.what()));
  }
  const Result* burst = nullptr;
  const Result* sustained = nullptr;
  for (const Result& x : gemm) {
    if (x.status != Status::kOk || !(x.value > 0)) continue;
    const auto m = match_result_id(x.id);
    if (m && m->family && m->family->family == Family::kGemm) burst = &x;
    if (m && m->family && m->family->family == Family::kGemmSustained) sustained = &x;
  }
  if (!burst)
    return unsupported(gemm.empty() || gemm.front().status_reason.empty()
                           ? std::string("no GEMM result at this precision")
                           : gemm.front().status_reason);
  const double peak = burst->value;
  if (sustained) {
    r.parameters["gemm_sustained_flops"] = sustained->value;
    r.parameters["mfu_vs_sustained_gemm"] = r.stats.median / sustained->value;
  }
  for (double& v : r.samples)
    v /= peak;
  r.stats = compute_stats(r.samples);
  r.value = r.stats.median;
  r.peak = Peak{peak, "FLOP/s", "measured",
                fmt::format("{} ({}) measured in this run right after the model's steps", burst->id,
                            burst->name)};
  return r;
}

// Model FLOPs utilisation: the model's FLOP/s over the datasheet's dense peak of this
// GPU at the run's precision ("compute.bf16"), from the catalogue entry the driver's name
// matches; unsupported, with the reason, where there is none.
Result mfu_result(const Result& headline, const ModelConfig& cfg, const GpuInfo& gpu,
                  double flops_per_item, const std::string& name) {
  Result r = per_item_rate(headline, model_result_id(Family::kModelMfu, cfg), name + ", MFU", "1",
                           flops_per_item);
  const std::string key = fmt::format("compute.{}", to_string(cfg.precision));
  const GpuSpec* spec = Catalogue::builtin().match_driver(gpu.name, std::nullopt);
  const Figure* fig = nullptr;
  if (spec)
    if (const auto it = spec->figures.find(key); it != spec->figures.end()) fig = &it->second;
  if (!fig || !(fig->value > 0)) {
    r.samples.clear();
    r.stats = Stats{};
    r.value = 0;
    r.status = Status::kUnsupported;
    r.status_reason = spec ? fmt::format("the {} datasheet gives no {}", spec->id, key)
                           : fmt::format("{} is not in the catalogue: no datasheet peak", gpu.name);
    return r;
  }
  const double peak = fig->value;
  for (double& v : r.samples)
    v /= peak;
  r.stats = compute_stats(r.samples);
  r.value = r.stats.median;
  r.peak = Peak{peak, "FLOP/s", "datasheet", fig->source.empty() ? spec->source : fig->source};
  r.parameters["datasheet_peak_flops"] = peak;
  r.parameters["flops_per_token"] = flops_per_item;
  r.validation = fmt::format(
      "model FLOPs (6 N per token plus 12 L h s, causal mask not discounted) times the "
      "throughput, over the {} datasheet's dense {} peak {}; {}",
      spec->id, to_string(cfg.precision), format_si(peak, "FLOP/s"), headline.validation);
  return r;
}

// What an invalid headline makes of the figures taken with the same model.
void inherit_status(Result& r, const Result& headline) {
  if (headline.status == Status::kOk || r.status != Status::kOk) return;
  r.status = headline.status;
  r.status_reason = headline.status_reason;
}

struct StepTimes {
  std::vector<double> seconds;  // one per step
  std::optional<double> energy_j;
  std::string energy_note;  // why there is no energy figure
  double window_s = 0;
  ClockRecord clocks;
};

// Steps one by one between CUDA events, back to back (the GPU's queue stays full,
// so no host gap enters a step), and the NVML energy counter around the window.
StepTimes time_single_steps(const StepRunner& runner, cudaStream_t stream, int steps,
                            const GpuInfo& gpu, int device) {
  StepTimes out;
  std::vector<Event> events(static_cast<size_t>(steps) + 1);
  const nvml::Library& lib = nvml::library();
  const nvml::Device nv =
      lib.available() ? lib.device_by_pci_bus_id(gpu.pci_bus_id) : nvml::Device{};
  NvmlClockWatch watch(device);
  GPUVS_CUDA_CHECK(cudaStreamSynchronize(stream));
  watch.start();
  const double t0 = steady_wall_clock().now_s();
  const auto e0 = nv.total_energy_mj();
  events[0].record(stream);
  for (int i = 0; i < steps; ++i) {
    runner.launch();
    events[i + 1].record(stream);
  }
  GPUVS_CUDA_CHECK_LAUNCH();
  events.back().synchronize();
  const auto e1 = nv.total_energy_mj();
  out.window_s = steady_wall_clock().now_s() - t0;
  out.clocks = watch.stop();
  for (int i = 0; i < steps; ++i)
    out.seconds.push_back(events[i + 1].seconds_since(events[i]));
  if (!lib.available()) {
    out.energy_note = "NVML unavailable: " + lib.unavailable_reason();
  } else if (!e0 || !e1) {
    out.energy_note = "NVML gives no total energy counter for this GPU";
  } else if (*e1 <= *e0) {
    out.energy_note = fmt::format("the energy counter did not advance over {:.2f} s", out.window_s);
  } else {
    out.energy_j = static_cast<double>(*e1 - *e0) / 1000.0;
  }
  return out;
}

// Steps of the step-time window: about `target_s` of work, 20 to 200 steps (50 at
// least outside the quick pass), or exactly --steps. Long steps (large batches) stop
// at 4 x target_s of work, 3 steps at least: at batch 2584 a ResNet-50 training step
// takes 0.35 s on an H200, and 50 of them would take 17 s for a step-time median.
int step_window(const ModelRunOptions& run, bool quick, double step_s) {
  if (run.steps) return *run.steps;
  const double target_s = quick ? 0.5 : 2.0;
  const int lo = quick ? 20 : 50;
  if (!(step_s > 0)) return lo;
  const int n = std::clamp(static_cast<int>(std::ceil(target_s / step_s)), lo, 200);
  return std::min(n, std::max(3, static_cast<int>(4 * target_s / step_s)));
}

void add_layer_profile(Model& m, const Result& headline, int steps, std::vector<Result>& out) {
  m.enable_layer_timing(true);
  for (int i = 0; i < steps; ++i)
    enqueue_step(m);
  GPUVS_CUDA_CHECK(cudaStreamSynchronize(m.stream()));
  const auto times = m.layer_times();
  m.enable_layer_timing(false);
  for (const auto& [layer, seconds] : times) {
    // "fwd layer1.0.conv1" -> "...layer.fwd.layer1.0.conv1": ids are dotted, no spaces.
    std::string key = layer;
    std::replace(key.begin(), key.end(), ' ', '.');
    Result r = quantity(model_result_id(Family::kModelLayer, m.config(), key), "layer " + layer,
                        headline, seconds / steps, "s");
    r.parameters["profile_steps"] = int64_t{steps};
    r.validation = fmt::format("CUDA events around the layer, mean of {} eager steps", steps);
    inherit_status(r, headline);
    out.push_back(std::move(r));
  }
}

}  // namespace

std::vector<Result> measure_model(const ModelRunOptions& run, BenchContext& ctx,
                                  const SearchFacts* search) {
  const ModelConfig& cfg = run.config;
  DeviceScope scope(ctx.device);
  const GpuInfo& gpu = ctx.system.gpus.at(ctx.device);
  auto progress = [&](const std::string& what) {
    if (ctx.progress)
      ctx.progress(fmt::format("{} batch {}: {}", model_result_id(Family::kModelRate, cfg),
                               cfg.batch, what));
  };
  GPUVS_CUDA_CHECK(cudaDeviceSynchronize());
  const auto [free_before, total] = device_memory_info();
  const double used_before = static_cast<double>(total - free_before);

  progress("building");
  std::unique_ptr<Model> model;
  try {
    model = build_model(cfg, ctx.device);
  } catch (const OutOfMemoryError& e) {
    throw OutOfMemoryError(fmt::format(
        "{} batch {} does not fit on GPU {} ({}: {} total, {} free before the model); use a "
        "smaller --batch or --batch max. {}",
        model_display_name(cfg.model), cfg.batch, ctx.device, gpu.name, format_si(total, "B"),
        format_si(free_before, "B"), e.what()));
  }
  model->generate_input(cfg.seed);
  const cudaStream_t stream = model->stream();

  // The first step runs eagerly (cuDNN and cuBLASLt set up lazily on first use);
  // then the graph is captured and launched once. Neither is timed.
  progress("first step");
  enqueue_step(*model);
  GPUVS_CUDA_CHECK(cudaStreamSynchronize(stream));
  StepRunner runner(*model, cfg.graph);
  runner.launch();
  GPUVS_CUDA_CHECK(cudaStreamSynchronize(stream));
  const double used_bytes = device_used_bytes() - used_before;

  const int k = micro_steps(cfg);
  const double items = static_cast<double>(model->items_per_micro_step()) * k;
  const double flops = model->flops_per_micro_step() * k;
  const std::string item = item_name(model->items_unit());

  ResultSpec spec;
  spec.id = model_result_id(Family::kModelRate, cfg);
  spec.name = fmt::format("{} {} {}{}, batch {}{}", model_display_name(cfg.model),
                          to_string(cfg.mode), to_string(cfg.precision),
                          cfg.model == "bert-large" || cfg.model.rfind("llama-", 0) == 0
                              ? fmt::format(" seq {}", cfg.seq)
                              : "",
                          cfg.batch, k > 1 ? fmt::format(" x {}", k) : "");
  if (cfg.recompute != Recompute::kNone)
    spec.name += fmt::format(", recompute {}", to_string(cfg.recompute));
  spec.devices = {ctx.device};
  spec.parameters = run_parameters(*model, search, runner.graphed());
  spec.headline = Headline::kItems;
  spec.items_per_iteration = items;
  spec.items_unit = model->items_unit();
  spec.flops_per_iteration = flops;

  MeasureOptions options = ctx.options;
  if (run.steps) {
    // Exactly N samples of one step each, whatever their noise.
    options.min_samples = options.max_samples = *run.steps;
    options.max_iterations_per_sample = 1;
    options.target_noise = 0;
    options.time_cap_s = 1e9;
  }
  progress("timing steps");
  EventTimed timed(stream, [&](cudaStream_t) { runner.launch(); });
  NvmlClockWatch clocks(ctx.device);
  std::vector<Result> out;
  out.push_back(measure_result(spec, timed, ctx.clock, options, &clocks,
                               [&] { return validate_output(*model); }));
  const Result headline = out.front();  // a copy: `out` grows below

  out.push_back(per_item_rate(headline, model_result_id(Family::kModelFlops, cfg),
                              spec.name + ", model FLOPs", "FLOP/s", flops / items));
  if (const int64_t tokens = model->tokens_per_item(); tokens > 0)
    out.push_back(per_item_rate(headline, model_result_id(Family::kModelTokens, cfg),
                                spec.name + ", tokens", "tokens/s", double(tokens)));

  if (const ModelDef* def = find_model_def(cfg.model);
      def && def->decoder && cfg.mode == Mode::kTrain)
    out.push_back(mfu_result(headline, cfg, gpu, flops / items, spec.name));

  progress("single steps and energy");
  const double step_s = headline.value > 0 ? items / headline.value : 0;
  const int steps = step_window(run, ctx.quick, step_s);
  const StepTimes st = time_single_steps(runner, stream, steps, gpu, ctx.device);
  {
    Result r = quantity(model_result_id(Family::kModelStepTime, cfg), spec.name + ", step time",
                        headline, 0, "s");
    r.samples = st.seconds;
    r.stats = compute_stats(r.samples);
    r.value = r.stats.median;
    r.flops_per_iteration = flops;
    r.timing = Timing{.iterations_per_sample = 1,
                      .warmup_batches = 0,
                      .cold = false,
                      .stopped_by = "max_samples",
                      .seconds_total = st.window_s};
    r.clocks = st.clocks;
    r.validation =
        fmt::format("{} steps back to back between CUDA events; {}", steps, headline.validation);
    inherit_status(r, headline);
    out.push_back(std::move(r));
  }
  {
    Result r = quantity(model_result_id(Family::kModelPeakMemory, cfg),
                        spec.name + ", device memory", headline, used_bytes, "B");
    r.parameters["used_before_bytes"] = used_before;
    r.peak =
        Peak{static_cast<double>(total), "B", "derived", "device memory as cudaMemGetInfo reports"};
    r.efficiency = used_bytes / static_cast<double>(total);
    r.validation =
        "cudaMemGetInfo used after construction, one eager step and the first graph launch, "
        "minus used before construction";
    inherit_status(r, headline);
    out.push_back(std::move(r));
  }
  {
    const std::string id = model_result_id(Family::kModelEnergy, cfg);
    const std::string name = spec.name + ", energy per " + item;
    if (st.energy_j) {
      Result r = quantity(id, name, headline, *st.energy_j / (steps * items), "J/" + item);
      r.parameters["energy_j"] = *st.energy_j;
      r.parameters["window_s"] = st.window_s;
      r.parameters["steps"] = int64_t{steps};
      r.clocks = st.clocks;
      r.validation =
          fmt::format("NVML total energy counter over {} steps ({:.2f} s): {:.1f} J, mean {:.0f} W",
                      steps, st.window_s, *st.energy_j, *st.energy_j / st.window_s);
      inherit_status(r, headline);
      out.push_back(std::move(r));
    } else {
      Result r = quantity(id, name, headline, 0, "J/" + item);
      r.samples.clear();
      r.stats = Stats{};
      r.status = Status::kUnsupported;
      r.status_reason = st.energy_note;
      out.push_back(std::move(r));
    }
  }
  if (const ModelDef* def = find_model_def(cfg.model);
      def && def->decoder && cfg.mode == Mode::kTrain) {
    progress("the GEMM the MFU is also measured against");
    out.push_back(mfu_gemm_result(headline, cfg, ctx, flops / items, spec.name));
  }
  if (search) {
    const ModelDef* def = find_model_def(cfg.model);
    const BatchSearchResult& s = search->search;
    Result r = quantity(
        model_result_id(Family::kModelMaxBatch, cfg),
        model_display_name(cfg.model) + " " + std::string(to_string(cfg.mode)) + " " +
            std::string(to_string(cfg.precision)) + ", largest batch that fits",
        headline, s.max_batch, std::string(def ? def->batch_unit() : std::string_view(item)));
    r.parameters["first_failure"] = int64_t{s.first_failure};
    r.parameters["candidates"] = static_cast<int64_t>(s.probes.size());
    r.parameters["search_s"] = search->seconds;
    std::string tried;
    for (const BatchProbe& p : s.probes)
      tried += fmt::format(
          "{}{} {}", tried.empty() ? "" : ", ", p.batch,
          p.probe.fits ? (p.probe.used_bytes ? "fits (" + format_si(*p.probe.used_bytes, "B") + ")"
                                             : std::string("fits"))
                       : std::string("out of memory"));
    r.validation = fmt::format("candidates built and stepped once: {}; recommended {}: {}", tried,
                               s.recommended_batch, s.recommendation);
    out.push_back(std::move(r));
  }
  if (run.profile) {
    progress("per-layer profile");
    const size_t before = out.size();
    add_layer_profile(*model, headline, ctx.quick ? 3 : 10, out);
    if (out.size() == before)
      out.push_back([&] {
        Result r = quantity(model_result_id(Family::kModelLayers, cfg),
                            spec.name + ", per-layer times", headline, 0, "s");
        r.samples.clear();
        r.stats = Stats{};
        r.status = Status::kUnsupported;
        r.status_reason = model_display_name(cfg.model) + " does not time its layers";
        return r;
      }());
  }
  return out;
}

}  // namespace gpuvs::models
