// The largest-batch search on a real GPU, `gpuvs model`'s entry, and the models of
// `gpuvs run`'s quick pass (the registry's "model.end_to_end"). See trainer.h.
#include <cuda_runtime_api.h>
#include <fmt/format.h>

#include <array>

#include "core/error.h"
#include "core/units.h"
#include "gpu/check.h"
#include "models/llama/inference.h"
#include "models/trainer.h"
#include "suite/context.h"

namespace gpuvs::models {

FitProbe try_fit(const ModelConfig& config, int device) {
  DeviceScope scope(device);
  GPUVS_CUDA_CHECK(cudaDeviceSynchronize());
  WallClock& clock = steady_wall_clock();
  const double t0 = clock.now_s();
  const double before = device_used_bytes();
  FitProbe probe;
  try {
    std::unique_ptr<Model> model = build_model(config, device);
    const double t1 = clock.now_s();
    enqueue_step(*model);
    GPUVS_CUDA_CHECK(cudaStreamSynchronize(model->stream()));
    const double t2 = clock.now_s();
    probe = {true, device_used_bytes() - before, "", t1 - t0, t2 - t1, 0};
    model.reset();
  } catch (const OutOfMemoryError& e) {
    cudaGetLastError();  // an allocation failure is not sticky; leave nothing behind
    probe = {false, std::nullopt, e.what(), 0, 0, 0};
  }
  probe.total_s = clock.now_s() - t0;
  return probe;
}

BatchSearchResult find_max_batch(const ModelConfig& config, int device, double headroom,
                                 const std::function<void(const std::string&)>& progress) {
  DeviceScope scope(device);
  GPUVS_CUDA_CHECK(cudaDeviceSynchronize());
  const auto [free_b, total_b] = device_memory_info();
  BatchSearchOptions o;
  o.start = 32;
  o.headroom = headroom;
  o.total_bytes = static_cast<double>(total_b);
  o.baseline_bytes = static_cast<double>(total_b - free_b);
  // Candidates take cuDNN's heuristic algorithms: timing every algorithm at every
  // candidate's batch would take minutes. No graph: it adds a few MB at most, which
  // the headroom covers.
  ModelConfig candidate = config;
  candidate.autotune = false;
  candidate.graph = false;
  // One line per candidate, with the outcome of the one before: a log whose lines are
  // rate-limited still shows the latest outcome (measure/progress.h).
  const std::string head = model_result_id(Family::kModelRate, config) + ": batch search: ";
  std::string last;  // "batch 2048 fits (61.2 GB)", "batch 4096: out of memory"
  BatchSearchResult result = search_max_batch(
      [&](int batch) {
        if (progress)
          progress(head + last + (last.empty() ? "" : "; ") + fmt::format("trying {}", batch));
        candidate.batch = batch;
        FitProbe probe = try_fit(candidate, device);
        const std::string took = fmt::format("{:.1f} s", probe.total_s);
        last =
            !probe.fits ? fmt::format("batch {}: out of memory ({})", batch, took)
            : probe.used_bytes
                ? fmt::format("batch {} fits ({}; built {:.1f} s, step {:.1f} s, {})", batch,
                              format_si(*probe.used_bytes, "B"), probe.build_s, probe.step_s, took)
                : fmt::format("batch {} fits ({})", batch, took);
        return probe;
      },
      o);
  if (progress && result.max_batch > 0)
    progress(
        head + last +
        fmt::format("; largest {}, recommended {}", result.max_batch, result.recommended_batch));
  return result;
}

std::vector<Result> run_configured(const ModelRunOptions& run, BenchContext& ctx) {
  if (run.config.model == "llama") {
    // Training is the model "llama-<size>" on the generic trainer (the CLI names it so).
    if (run.config.mode != Mode::kInfer)
      throw UsageError("llama: the model \"llama\" is inference; training is \"llama-<size>\"");
    return llama::run_inference(run, ctx.device, ctx.quick);
  }
  if (!run.batch_max) return measure_model(run, ctx);
  SearchFacts facts;
  facts.headroom = run.headroom;
  const double t0 = steady_wall_clock().now_s();
  facts.search = find_max_batch(run.config, ctx.device, run.headroom, ctx.progress);
  facts.seconds = steady_wall_clock().now_s() - t0;
  if (facts.search.max_batch == 0) {
    const std::string why =
        facts.search.probes.empty() ? "" : ": " + facts.search.probes.back().probe.detail;
    throw OutOfMemoryError(fmt::format("{} does not fit on GPU {} even at batch 1{}",
                                       model_display_name(run.config.model), ctx.device, why));
  }
  ModelRunOptions at = run;
  at.config.batch = facts.search.recommended_batch;
  return measure_model(at, ctx, &facts);
}

}  // namespace gpuvs::models

namespace gpuvs {

namespace {

struct QuickModel {
  const char* model;
  models::Mode mode;
  models::Precision precision;
  int batch;
  int seq = 128;  // sequence models: tokens per sequence (llama inference: the prompt)
};

// `gpuvs run`'s models: ResNet-50 bf16 training and inference at batch 256 (about 15 s
// together on an H200 with construction and cuDNN autotuning), BERT-large bf16
// training and inference at sequence 128, batch 64 (all four take about 15 s on an
// H200), and the Llama 3.2 1B decoder: bf16 training at sequence 1024, batch 4, and
// decode at batch 1 after a prompt of 128 tokens.
constexpr std::array<QuickModel, 6> kQuickModels = {{
    {"resnet50", models::Mode::kTrain, models::Precision::kBf16, 256},
    {"resnet50", models::Mode::kInfer, models::Precision::kBf16, 256},
    {"bert-large", models::Mode::kTrain, models::Precision::kBf16, 64},
    {"bert-large", models::Mode::kInfer, models::Precision::kBf16, 64},
    {"llama-1b", models::Mode::kTrain, models::Precision::kBf16, 4, 1024},
    {"llama", models::Mode::kInfer, models::Precision::kBf16, 1, 128},
}};

}  // namespace

std::vector<Result> run_model(BenchContext& ctx) {
  if (ctx.model != nullptr) return models::run_configured(*ctx.model, ctx);
  std::vector<Result> out;
  for (const QuickModel& q : kQuickModels) {
    models::ModelRunOptions run;
    run.config.model = q.model;
    run.config.mode = q.mode;
    run.config.precision = q.precision;
    run.config.batch = q.batch;
    run.config.seq = q.seq;
    if (std::string_view(q.model) == "llama") {
      run.config.llama_size = "1b";
      run.config.prompt = q.seq;
      run.config.generate = 128;
    }
    try {
      for (Result& r : models::run_configured(run, ctx))
        out.push_back(std::move(r));
    } catch (const Error& e) {
      // One configuration failing (out of memory on a small GPU) leaves the others.
      // The decoder's inference reports under "llama-<size>", its decode figure first.
      const bool decoder = std::string_view(q.model) == "llama";
      models::ModelConfig named = run.config;
      if (decoder) named.model = "llama-" + run.config.llama_size;
      Result r;
      r.id = models::model_result_id(decoder ? Family::kModelDecode : Family::kModelRate, named);
      r.name = fmt::format("{} {} {}, batch {}", models::model_display_name(named.model),
                           models::to_string(q.mode), models::to_string(q.precision), q.batch);
      r.devices = {ctx.device};
      r.parameters = {{"model", named.model},
                      {"mode", std::string(models::to_string(q.mode))},
                      {"precision", std::string(models::to_string(q.precision))},
                      {"batch", int64_t{q.batch}}};
      r.status = Status::kError;
      r.status_reason = e.what();
      out.push_back(std::move(r));
    }
    if (ctx.checkpoint) ctx.checkpoint(out);
  }
  return out;
}

}  // namespace gpuvs
