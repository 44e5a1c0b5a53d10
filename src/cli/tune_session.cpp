// `gpuvs tune`'s measuring path (docs/tune.md): for each selected GPU whose cached
// result does not answer the request, measure what the rules of tune/recommend.h read
// (precisions, the largest batch, a batch ladder, CUDA graph on and off, accumulation
// plans, GEMM shapes, host transfers, with two or more GPUs the NCCL algorithm study),
// write every figure into one run file, decide, cache and print.
#include <cuda_runtime_api.h>
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstdio>

#include "bench/compute/gemm_runner.h"
#include "cli/session.h"
#include "cli/tune_session.h"
#include "core/host.h"
#include "core/text.h"
#include "core/verdict.h"
#include "gpu/probe.h"
#include "models/trainer.h"
#include "report/summary.h"
#include "suite/registry.h"
#include "tune/cache.h"
#include "tune/fingerprint.h"
#include "tune/recommend.h"

namespace gpuvs::cli {

namespace {

using models::Mode;
using models::Precision;

// The batch every precision is compared at: `gpuvs run`'s (ResNet-50 256 images,
// BERT-large 64 sequences of 128), so the figures line up with a run file's.
int common_batch(const std::string& model) {
  return model == "resnet50" ? 256 : 64;
}

// The precisions compared; fp8 only where the model has an FP8 path (BERT-large's
// encoder GEMMs). Quick: the 16-bit formats and fp8 only (tf32 and fp32 are several
// times slower on every tensor-core GPU and are never the fastest).
std::vector<Precision> precisions_for(const std::string& model, bool quick) {
  std::vector<Precision> out;
  if (model == "bert-large") out.push_back(Precision::kFp8);
  out.push_back(Precision::kBf16);
  out.push_back(Precision::kFp16);
  if (!quick) {
    out.push_back(Precision::kTf32);
    out.push_back(Precision::kFp32);
  }
  return out;
}

// Harness options per configuration: `gpuvs run`'s quick ones (at least 5 samples,
// 0.5 s, 1 % noise), since a tune measures some thirty configurations, most of the
// time going into building them; the rules compare figures against their own noise.
MeasureOptions model_options() {
  return quick_options();
}

// A canonical --gemm text, "MxNxK:precision" (the CLI has checked it), as the GEMM
// benchmark takes it; `comparison` is the precision the rules weigh it against.
struct GemmAsk {
  GemmShape shape;
  GemmPrecision precision = GemmPrecision::kBf16;
  std::optional<GemmPrecision> comparison;
};

GemmAsk gemm_ask(const std::string& text) {
  long long m = 0, n = 0, k = 0;
  char name[16] = {};
  if (std::sscanf(text.c_str(), "%lldx%lldx%lld:%15s", &m, &n, &k, name) != 4)
    throw UsageError(fmt::format("--gemm {}: not MxNxK:precision", text));
  std::string p = name;
  if (p == "fp8") p = "fp8_e4m3";
  GemmAsk ask;
  ask.shape = GemmShape{m, n, k};
  bool found = false;
  for (GemmPrecision g : gemm_precisions()) {
    if (gemm_types(g).name == p) {
      ask.precision = g;
      found = true;
    }
  }
  if (!found) throw UsageError(fmt::format("--gemm {}: no GEMM precision {}", text, p));
  switch (ask.precision) {
    case GemmPrecision::kFp32:
      ask.comparison = GemmPrecision::kTf32;
      break;
    case GemmPrecision::kTf32:
      ask.comparison = GemmPrecision::kFp32;
      break;
    case GemmPrecision::kBf16:
    case GemmPrecision::kFp16:
      ask.comparison = GemmPrecision::kFp8E4m3;
      break;
    case GemmPrecision::kFp8E4m3:
    case GemmPrecision::kFp8E5m2:
      ask.comparison = GemmPrecision::kBf16;
      break;
    default:
      break;
  }
  return ask;
}

class TuneSession {
 public:
  TuneSession(const GlobalOptions& global, const TuneOptions& options, RunFile& run,
              std::filesystem::path path, Progress& progress)
      : global_(global),
        options_(options),
        run_(run),
        path_(std::move(path)),
        progress_(progress) {}

  void measure_gpu(int device);
  void measure_links(const std::vector<int>& devices);

 private:
  // One model configuration: its results into the run file; the headline rate, or
  // nullopt when it failed (the reason is in the run file's errors).
  std::optional<double> model(int device, const models::ModelRunOptions& run,
                              const std::string& label);
  void measure_model(int device, const std::string& model, Mode mode);
  void measure_gemms(int device);
  void run_benchmark(std::string_view name, int device, const std::vector<int>& devices);
  void save() { save_run_file(run_, path_); }
  void detail(const std::string& text) { progress_.detail(text); }

  const GlobalOptions& global_;
  const TuneOptions& options_;
  RunFile& run_;
  std::filesystem::path path_;
  Progress& progress_;
};

std::optional<double> TuneSession::model(int device, const models::ModelRunOptions& run,
                                         const std::string& label) {
  detail(label);
  BenchContext ctx{
      .system = run_.system,
      .device = device,
      .options = model_options(),
      .quick = true,  // the step-time window of the quick pass too
      .clock = steady_wall_clock(),
      .devices = {device},
      .progress = [&](const std::string& detail) { this->detail(label + ": " + detail); }};
  try {
    std::vector<Result> results = models::run_configured(run, ctx);
    std::optional<double> rate;
    const std::string rate_id = models::model_result_id(Family::kModelRate, run.config);
    for (Result& r : results) {
      if (r.id == rate_id && r.status == Status::kOk && !rate) rate = r.value;
      run_.results.push_back(std::move(r));
    }
    save();
    return rate;
  } catch (const Error& e) {
    run_.errors.push_back({fmt::format("tune {} on GPU {}", label, device), e.what()});
    detail(label + ": failed: " + e.what());
    save();
    // A lost GPU (a sticky CUDA error: the context is gone) fails everything after it:
    // stop here, keep what was measured. Out of memory is not sticky.
    if (cudaSetDevice(device) != cudaSuccess || cudaDeviceSynchronize() != cudaSuccess) throw;
    return std::nullopt;
  }
}

void TuneSession::measure_model(int device, const std::string& name, Mode mode) {
  const bool quick = options_.request.quick;
  const int b0 = common_batch(name);
  models::ModelRunOptions base;
  base.config.model = name;
  base.config.mode = mode;
  base.config.batch = b0;
  const std::string what =
      fmt::format("{} {}", models::model_display_name(name), models::to_string(mode));
  progress_.step(fmt::format("{} on GPU {} ({})", what, device,
                             short_gpu_name(run_.system.gpus.at(device).name)));

  // 1. Every precision at the common batch.
  for (Precision p : precisions_for(name, quick)) {
    models::ModelRunOptions run = base;
    run.config.precision = p;
    model(device, run, fmt::format("{} {}, batch {}", what, models::to_string(p), b0));
  }
  // The rules' choice so far (tune/recommend.h); bf16 where they have none.
  const std::string mode_name(models::to_string(mode));
  Precision chosen = Precision::kBf16;
  const tune::Recommendations precision = tune::recommend_precision(run_, device, name, mode_name);
  if (const ParamValue* v = precision.value_of("precision"))
    if (const auto* text = std::get_if<std::string>(v))
      if (const auto p = models::precision_from_string(*text)) chosen = *p;
  base.config.precision = chosen;
  const std::string at = fmt::format("{} {}", what, models::to_string(chosen));

  // 2. The largest batch, and the rate at the batch that leaves the headroom.
  models::ModelRunOptions search = base;
  search.batch_max = true;
  search.headroom = options_.request.headroom;
  model(device, search, fmt::format("{}, --batch max", at));
  int recommended = 0;
  // The search's result carries the batch it was measured at: the recommended one.
  for (const Result& r : run_.results) {
    if (r.id == models::model_result_id(Family::kModelMaxBatch, base.config) &&
        r.status == Status::kOk && !r.devices.empty() && r.devices[0] == device) {
      if (auto it = r.parameters.find("batch"); it != r.parameters.end())
        if (const auto* b = std::get_if<int64_t>(&it->second)) recommended = static_cast<int>(*b);
    }
  }

  // 3. The ladder, graph on: a quarter and half of the common batch (where the knee
  // usually is), then fourfold steps up to the recommended batch (measured in 2.);
  // quick: a quarter and the fourfold steps.
  if (recommended > 0) {
    std::vector<int> ladder;
    for (int b = std::max(8, b0 / 4); b < b0; b *= 2) {
      ladder.push_back(b);
      if (quick) break;
    }
    for (int b = b0 * 4; b < recommended; b *= 4)
      ladder.push_back(b);
    for (int b : ladder) {
      models::ModelRunOptions run = base;
      run.config.batch = b;
      model(device, run, fmt::format("{}, batch {}", at, b));
    }
  }

  // 4. CUDA graph off at the knee (the smallest batch within 3 % of the best).
  int knee = b0;
  const tune::Recommendations batch = tune::recommend_batch(
      run_, device, name, mode_name, models::to_string(chosen), options_.request.headroom);
  if (const ParamValue* v = batch.value_of("batch_knee"))
    if (const auto* b = std::get_if<int64_t>(v)) knee = static_cast<int>(*b);
  {
    models::ModelRunOptions run = base;
    run.config.batch = knee;
    run.config.graph = false;
    model(device, run, fmt::format("{}, batch {}, no CUDA graph", at, knee));
  }

  // 5. Training to a global batch N: the micro-batches that divide N and fit, largest
  // first (fewest accumulation steps), three at most.
  if (mode == Mode::kTrain && options_.request.global_batch) {
    const int64_t n = *options_.request.global_batch;
    const int fits = recommended > 0 ? recommended : b0;
    int tried = 0;
    for (int64_t acc = 1; acc <= n && tried < 3; ++acc) {
      if (n % acc != 0 || n / acc > fits) continue;
      models::ModelRunOptions run = base;
      run.config.batch = static_cast<int>(n / acc);
      run.config.accumulate = static_cast<int>(acc);
      model(device, run,
            fmt::format("{}, global batch {} = {} x {}", at, n, run.config.batch, acc));
      ++tried;
    }
  }
}

void TuneSession::measure_gemms(int device) {
  for (const std::string& text : options_.request.gemm_shapes) {
    const GemmAsk g = gemm_ask(text);
    progress_.step(fmt::format("GEMM {} on GPU {}", text, device));
    GemmBenchOptions o;
    o.standard = g.shape;
    o.search_best = false;
    o.precisions = {g.precision};
    if (g.comparison) o.precisions.push_back(*g.comparison);
    BenchContext ctx{.system = run_.system,
                     .device = device,
                     .options = gemm_search_options(),
                     .quick = options_.request.quick,
                     .clock = steady_wall_clock(),
                     .devices = {device}};
    try {
      for (Result& r : run_gemm_bench(ctx, o))
        run_.results.push_back(std::move(r));
    } catch (const Error& e) {
      run_.errors.push_back({fmt::format("tune GEMM {} on GPU {}", text, device), e.what()});
    }
    save();
  }
}

void TuneSession::run_benchmark(std::string_view name, int device,
                                const std::vector<int>& devices) {
  const std::vector<std::string> names = {std::string(name)};
  const BenchmarkInfo* bench = select_benchmarks(names).front();
  progress_.step(fmt::format(
      "{} on {}", name,
      devices.size() > 1 ? fmt::format("{} GPUs", devices.size()) : fmt::format("GPU {}", device)));
  comm::CollectiveOptions collectives;
  BenchContext ctx{.system = run_.system,
                   .device = device,
                   .options = quick_options(),
                   .quick = true,
                   .clock = steady_wall_clock(),
                   .devices = devices,
                   .collectives = &collectives,
                   .comm_record = &run_.comm,
                   .progress = [&](const std::string& d) { detail(d); }};
  try {
    for (Result& r : bench->run(ctx))
      run_.results.push_back(std::move(r));
  } catch (const Error& e) {
    run_.errors.push_back({fmt::format("tune {} on GPU {}", name, device), e.what()});
  }
  save();
}

void TuneSession::measure_gpu(int device) {
  for (const std::string& m : options_.request.models)
    for (Mode mode : {Mode::kTrain, Mode::kInfer})
      measure_model(device, m, mode);
  measure_gemms(device);
  run_benchmark("host.link", device, {device});
}

void TuneSession::measure_links(const std::vector<int>& devices) {
  if (devices.size() >= 2) run_benchmark("collectives.algorithms", devices.front(), devices);
}

}  // namespace

ExitCode run_tune(const GlobalOptions& global, const TuneOptions& options) {
  const auto t0 = std::chrono::steady_clock::now();
  const std::filesystem::path cache_dir =
      tune::default_cache_dir(options.cache_dir, tune::process_environment());
  SystemInfo system = probe_system();  // CannotRunError (exit 3) without a GPU
  const std::vector<int> devices =
      parse_gpu_list(options.gpu_list, static_cast<int>(system.gpus.size()));

  std::vector<std::string> notes;
  tune::TuneDocument doc;
  std::vector<int> to_measure;
  for (int d : devices) {
    const tune::Fingerprint fp = tune::fingerprint_of(system, d);
    if (options.force) {
      notes.push_back(fmt::format("GPU {}: --force: measuring again", d));
      to_measure.push_back(d);
      continue;
    }
    const tune::Lookup found = tune::lookup(cache_dir, fp, options.request);
    if (found.kind == tune::Lookup::Kind::kHit) {
      notes.push_back(fmt::format("GPU {}: answered from the cache {} (measured {})", d,
                                  found.file.string(), found.entry->created_at));
      doc.devices.push_back(*found.entry);
    } else {
      notes.push_back(fmt::format("GPU {}: {}: measuring", d, tune::describe(found)));
      to_measure.push_back(d);
    }
  }

  ExitCode code = ExitCode::kOk;
  if (!to_measure.empty()) {
    RunFile run;
    run.meta = make_meta("tune", global.argv);
    run.system = system;
    const std::filesystem::path path = run_file_path(global, "tune", run.meta);
    save_run_file(run, path);
    // One step per model and mode, GEMM shape, host link and (two GPUs or more) the
    // NCCL study on each GPU; each configuration measured is a detail.
    const int per_gpu = static_cast<int>(options.request.models.size()) * 2 +
                        static_cast<int>(options.request.gemm_shapes.size()) + 1;
    const std::unique_ptr<Progress> progress = make_progress(global);
    progress->begin(per_gpu * static_cast<int>(to_measure.size()) +
                    (to_measure.size() > 1 ? 1 : 0));
    TuneSession session(global, options, run, path, *progress);
    bool lost = false;
    for (int d : to_measure) {
      try {
        session.measure_gpu(d);
      } catch (const Error&) {
        lost = true;  // recorded in the run file's errors by the session
        break;
      }
    }
    if (!lost) {
      try {
        session.measure_links(to_measure);
      } catch (const Error&) {
        lost = true;
      }
    }
    run.meta.finished_at = utc_now_iso8601();
    save_run_file(run, path);
    progress->done();
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    for (int d : to_measure) {
      tune::DeviceTune t = tune::recommend(run, d, options.request);
      t.fingerprint = tune::fingerprint_of(system, d);
      t.gpu_index = d;
      t.request = options.request;
      t.created_at = run.meta.started_at;
      t.tool_version = run.meta.tool_version;
      t.git_sha = run.meta.git_sha;
      t.run_file = std::filesystem::absolute(path).string();
      t.measure_seconds = seconds;
      // A result with failures is shown, never cached: the next call measures again.
      if (run.errors.empty()) {
        if (auto warning = tune::save(cache_dir, t)) notes.push_back(*warning);
      } else {
        notes.push_back(
            fmt::format("GPU {}: not cached: {} step(s) failed (the run file lists them)", d,
                        run.errors.size()));
      }
      doc.devices.push_back(std::move(t));
    }
    notes.push_back(fmt::format("run file: {}", path.string()));
    code = lost || !run.errors.empty() ? ExitCode::kFailure : exit_code_for(run);
  }
  std::sort(doc.devices.begin(), doc.devices.end(),
            [](const tune::DeviceTune& a, const tune::DeviceTune& b) {
              return a.gpu_index < b.gpu_index;
            });
  print_tune(doc, options.emit, global.json, notes);
  return code;
}

}  // namespace gpuvs::cli
