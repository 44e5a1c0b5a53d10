#include "models/llama/inference.h"

#include <cuda_runtime_api.h>
#include <fmt/format.h>

#include <algorithm>
#include <functional>
#include <numeric>
#include <optional>
#include <string>
#include <utility>
#include <variant>

#include "core/error.h"
#include "core/stats.h"
#include "core/units.h"
#include "gpu/check.h"
#include "gpu/device.h"
#include "models/llama/decoder.h"
#include "suite/produces.h"

namespace gpuvs::models::llama {

namespace {

// A CUDA graph of one decode step, destroyed with it.
class StepGraph {
 public:
  explicit StepGraph(Decoder& d) {
    GPUVS_CUDA_CHECK(cudaStreamBeginCapture(d.stream(), cudaStreamCaptureModeThreadLocal));
    d.decode_step();
    GPUVS_CUDA_CHECK(cudaStreamEndCapture(d.stream(), &graph_));
    GPUVS_CUDA_CHECK(cudaGraphInstantiate(&exec_, graph_, 0));
  }
  ~StepGraph() {
    if (exec_) cudaGraphExecDestroy(exec_);
    if (graph_) cudaGraphDestroy(graph_);
  }
  StepGraph(const StepGraph&) = delete;
  StepGraph& operator=(const StepGraph&) = delete;
  void launch(cudaStream_t s) { GPUVS_CUDA_CHECK(cudaGraphLaunch(exec_, s)); }

 private:
  cudaGraph_t graph_ = nullptr;
  cudaGraphExec_t exec_ = nullptr;
};

// The activations' type: fp8 is E4M3 weights with bf16 activations.
DType dtype_of(Precision p) {
  switch (p) {
    case Precision::kFp32:
      return DType::kF32;
    case Precision::kFp16:
      return DType::kF16;
    case Precision::kBf16:
    case Precision::kFp8:
      return DType::kBF16;
    default:
      break;
  }
  throw UsageError(fmt::format(
      "llama --mode infer: --precision {} is not built; fp32, fp16, bf16 or fp8", to_string(p)));
}

// Memory a decoder may take beyond Decoder::memory_bytes(): cuBLASLt's handle and
// kernels, the CUDA graph of a step.
constexpr size_t kDecoderSlackBytes = size_t(512) << 20;

// The largest batch in [1, limit] for which `fits` holds (fits is monotonic), 0: none.
int largest_batch(int limit, const std::function<bool(int)>& fits) {
  if (!fits(1)) return 0;
  int lo = 1, hi = limit;
  while (lo < hi) {
    const int mid = lo + (hi - lo + 1) / 2;
    if (fits(mid))
      lo = mid;
    else
      hi = mid - 1;
  }
  return lo;
}

// Seconds between consecutive events of `events` (n + 1 recorded events: n spans).
std::vector<double> spans(std::vector<Event>& events) {
  GPUVS_CUDA_CHECK(cudaEventSynchronize(events.back().get()));
  std::vector<double> out;
  for (size_t i = 1; i < events.size(); ++i) {
    float ms = 0;
    GPUVS_CUDA_CHECK(cudaEventElapsedTime(&ms, events[i - 1].get(), events[i].get()));
    out.push_back(double(ms) * 1e-3);
  }
  return out;
}

// The context a decode step sees on average over `steps` steps after the prompt.
int mean_context_of(const ModelConfig& c, int steps) {
  return c.prompt + steps / 2;
}

// Bytes a decode step's region reads at least: its weights once (every layer), or for
// attention the keys and values of the mean context.
double region_bytes(const std::string& region, const Shape& s, const DecoderConfig& dc,
                    int context) {
  const double head_es = double(dtype_size(dc.dtype));
  const double es = dc.fp8_weights ? 1.0 : head_es;  // the projections' weights
  const double cache_es = dc.fp8_cache ? 1.0 : head_es;
  const double c = s.hidden, qd = double(s.heads) * s.head_dim(), kv = s.kv_dim();
  const double layers = s.layers;
  if (region == "qkv") return layers * (qd + 2 * kv) * c * es;
  if (region == "attention output") return layers * c * qd * es;
  if (region == "gate and up") return layers * 2.0 * s.intermediate * c * es;
  if (region == "down") return layers * c * s.intermediate * es;
  if (region == "lm head") return double(s.vocab) * c * head_es;
  if (region == "attention") return layers * 2.0 * dc.batch * context * kv * cache_es;
  return 0;
}

// One .layer.decode.<region> result per region: seconds per step, and the region's
// bytes over that time where it has any.
void add_profile(std::vector<Result>& out, const std::vector<std::pair<std::string, double>>& t,
                 const Shape& s, const DecoderConfig& dc, int steps, int context) {
  const Result decode = out.back();  // a copy: `out` grows below
  double total = 0;
  for (const auto& [name, seconds] : t)
    total += seconds;
  for (const auto& [name, seconds] : t) {
    std::string key = "decode." + name;
    std::replace(key.begin(), key.end(), ' ', '.');
    Result r;
    r.id = result_id(Family::kModelLayer,
                     {std::get<std::string>(decode.parameters.at("model")), "infer",
                      std::get<std::string>(decode.parameters.at("precision")), key});
    r.name = fmt::format("{}, decode region {}", decode.name, name);
    r.devices = decode.devices;
    r.parameters = decode.parameters;
    for (const char* key : {"bytes_per_step", "achieved_bytes_per_s", "tokens_per_s_per_sequence",
                            "itl_p99_s", "cublaslt_step_s"})
      r.parameters.erase(key);
    r.parameters["profile_steps"] = int64_t{steps};
    r.parameters["share_of_eager_step"] = total > 0 ? seconds / total : 0.0;
    const double bytes = region_bytes(name, s, dc, context);
    if (bytes > 0) {
      r.parameters["region_bytes_per_step"] = bytes;
      r.parameters["region_bytes_per_s"] = bytes / (seconds / steps);
    }
    r.unit = "s";
    r.value = seconds / steps;
    r.validation = fmt::format(
        "CUDA events around the region, mean of {} eager decode steps (no graph)", steps);
    out.push_back(std::move(r));
  }
}

}  // namespace

std::vector<Result> run_inference(const ModelRunOptions& run, int device, bool quick) {
  ModelConfig c = run.config;
  const bool profile = run.profile;
  const std::optional<Shape> shape = find_shape(c.llama_size);
  if (!shape)
    throw UsageError(fmt::format("llama --size: '{}' is not one of {}", c.llama_size, size_list()));
  DecoderConfig dc;
  dc.shape = *shape;
  dc.dtype = dtype_of(c.precision);
  dc.fp8_weights = c.precision == Precision::kFp8;
  dc.fp8_cache = c.kv_cache_fp8;
  dc.batch = c.batch;
  dc.prompt = c.prompt;
  dc.max_context = c.prompt + c.generate;
  dc.seed = c.seed;
  DeviceScope scope(device);
  size_t free_before = 0, total = 0;
  GPUVS_CUDA_CHECK(cudaMemGetInfo(&free_before, &total));

  // The batches that fit: the decoder's memory from its plan, without allocating.
  auto memory_at = [&](int batch) {
    DecoderConfig at = dc;
    at.batch = batch;
    return Decoder::memory_bytes(at, device);
  };
  const int kMostBatch = 1 << 16;
  const int largest = largest_batch(
      kMostBatch, [&](int b) { return memory_at(b) + kDecoderSlackBytes <= free_before; });
  const std::string model = "llama-" + c.llama_size;
  std::optional<Result> max_batch;
  if (run.batch_max) {
    if (largest == 0)
      throw OutOfMemoryError(fmt::format(
          "{} does not fit on GPU {} even at batch 1: {} of {} free, the decoder needs {}",
          shape->name, device, format_si(double(free_before), "B"), format_si(double(total), "B"),
          format_si(double(memory_at(1)), "B")));
    // The headroom counts against the whole GPU, as the trainers' batch search does.
    const double budget = (1 - run.headroom) * double(total) - double(total - free_before);
    const int recommended = largest_batch(
        largest, [&](int b) { return double(memory_at(b) + kDecoderSlackBytes) <= budget; });
    {  // The largest built once: the plan's figure checked against the allocator.
      DecoderConfig at = dc;
      at.batch = largest;
      Decoder check(at, device);
    }
    c.batch = std::max(1, recommended);
    dc.batch = c.batch;
    Result r;
    r.id = result_id(Family::kModelMaxBatch, {model, "infer", std::string(to_string(c.precision))});
    r.name = fmt::format("{} {} inference, largest batch that fits (prompt {} + {} generated)",
                         shape->name, to_string(c.precision), c.prompt, c.generate);
    r.devices = {device};
    r.unit = "sequences";
    r.value = double(largest);
    r.samples = {r.value};
    r.stats = compute_stats(r.samples);
    r.parameters = {{"model", model},
                    {"mode", "infer"},
                    {"precision", std::string(to_string(c.precision))},
                    {"prompt", int64_t{c.prompt}},
                    {"generated", int64_t{c.generate}},
                    {"recommended_batch", int64_t{c.batch}},
                    {"headroom", run.headroom},
                    {"memory_bytes_at_largest", double(memory_at(largest))},
                    {"free_bytes", double(free_before)}};
    if (dc.fp8_cache) r.parameters["kv_cache"] = "fp8";
    r.validation = fmt::format(
        "the decoder's memory from its plan (weights, KV cache of prompt + generated tokens, "
        "activations of the prefill) plus {} for cuBLASLt and the graph, against the free "
        "memory; batch {} built once to check; recommended {}: the largest leaving {:.0f} % "
        "of the GPU's memory free",
        format_si(double(kDecoderSlackBytes), "B"), largest, c.batch, run.headroom * 100);
    max_batch = std::move(r);
  }
  std::optional<Decoder> built;
  try {
    built.emplace(dc, device);
  } catch (const OutOfMemoryError& e) {
    throw OutOfMemoryError(fmt::format("{}; the largest batch that fits is {}", e.what(), largest));
  }
  Decoder& d = *built;
  size_t free_after = 0;
  GPUVS_CUDA_CHECK(cudaMemGetInfo(&free_after, &total));
  const cudaStream_t s = d.stream();

  // Prefill: once to warm up, then timed repeats (fewer where one prefill is long, so
  // that the repeats take about 10 s at most).
  double warm_prefill_s = 0;  // the first prefill also calibrates the FP8 scales
  {
    Event t0, t1;
    GPUVS_CUDA_CHECK(cudaEventRecord(t0.get(), s));
    d.prefill();
    GPUVS_CUDA_CHECK(cudaEventRecord(t1.get(), s));
    GPUVS_CUDA_CHECK(cudaEventSynchronize(t1.get()));
    float ms = 0;
    GPUVS_CUDA_CHECK(cudaEventElapsedTime(&ms, t0.get(), t1.get()));
    warm_prefill_s = double(ms) * 1e-3;
  }
  const int repeats = std::clamp(int(10.0 / std::max(warm_prefill_s, 1e-6)), 3, quick ? 3 : 10);
  std::vector<Event> marks(size_t(repeats) + 1);
  GPUVS_CUDA_CHECK(cudaEventRecord(marks[0].get(), s));
  for (int i = 0; i < repeats; ++i) {
    d.prefill();
    GPUVS_CUDA_CHECK(cudaEventRecord(marks[size_t(i) + 1].get(), s));
  }
  const std::vector<double> prefill_s = spans(marks);

  // Decode: `generate` - 1 steps after the prefill (its greedy choice is the first
  // token), each one graph replay between two events.
  const int steps = std::max(1, c.generate - 1);
  StepGraph graph(d);  // captured, not run: the position is still the prompt's
  d.prefill();
  std::vector<Event> ticks(size_t(steps) + 1);
  GPUVS_CUDA_CHECK(cudaEventRecord(ticks[0].get(), s));
  for (int i = 0; i < steps; ++i) {
    graph.launch(s);
    GPUVS_CUDA_CHECK(cudaEventRecord(ticks[size_t(i) + 1].get(), s));
  }
  const std::vector<double> step_s = spans(ticks);
  const int end = d.position();
  if (end != c.prompt + steps)
    throw Error(
        fmt::format("llama decode: ended at position {}, expected {}", end, c.prompt + steps));
  const bool rows = d.use_row_gemms(true);

  // --profile: where a step's time goes. The same steps again without a graph, CUDA
  // events between the regions (each region then runs alone: the sum is more than the
  // graphed step); and, where the step takes the few-row projections, the graphed step
  // with cuBLASLt's GEMMs instead, the choice it makes measured beside it.
  std::vector<std::pair<std::string, double>> regions;
  std::vector<double> cublaslt_step_s;
  if (profile) {
    d.prefill();
    d.enable_profile(true);
    for (int i = 0; i < steps; ++i)
      d.decode_step();
    regions = d.profile_times();
    d.enable_profile(false);
    if (rows) {
      d.use_row_gemms(false);
      StepGraph other(d);
      d.use_row_gemms(true);
      d.prefill();
      GPUVS_CUDA_CHECK(cudaEventRecord(ticks[0].get(), s));
      for (int i = 0; i < steps; ++i) {
        other.launch(s);
        GPUVS_CUDA_CHECK(cudaEventRecord(ticks[size_t(i) + 1].get(), s));
      }
      cublaslt_step_s = spans(ticks);
    }
  }

  const std::string mode = "infer", prec(to_string(c.precision));
  auto base = [&](Family f, std::string name, std::string unit, std::span<const double> samples) {
    Result r;
    r.id = result_id(f, {model, mode, prec});
    r.name = fmt::format("{} {}, {} {}", shape->name, prec, name,
                         fmt::format("batch {}, prompt {}", c.batch, c.prompt));
    r.devices = {device};
    r.parameters = {{"model", model},
                    {"mode", mode},
                    {"precision", prec},
                    {"batch", int64_t{c.batch}},
                    {"seq", int64_t{c.prompt}},
                    {"prompt", int64_t{c.prompt}},
                    {"generated", int64_t{c.generate}},
                    {"graph", true},
                    {"decode_projections", rows ? "row kernels" : "cuBLASLt"},
                    {"parameter_count", d.parameter_count()},
                    {"memory_bytes", double(free_before - free_after)}};
    if (dc.fp8_weights)
      r.parameters["fp8_scaling"] =
          "E4M3 projections, one scale per weight tensor; cuBLASLt GEMM inputs one static scale "
          "per projection, calibrated on the first prefill";
    if (dc.fp8_cache) {
      r.parameters["kv_cache"] = "fp8";
      r.parameters["kv_cache_scale"] = double(dc.cache_scale);
    }
    r.unit = std::move(unit);
    r.samples.assign(samples.begin(), samples.end());
    r.stats = compute_stats(samples);
    r.value = r.stats.median;
    return r;
  };
  std::vector<Result> out;
  if (max_batch) out.push_back(std::move(*max_batch));
  out.push_back(base(Family::kModelTtft, "time to first token", "s", prefill_s));
  {
    std::vector<double> rates;
    for (double t : prefill_s)
      rates.push_back(double(c.batch) * c.prompt / t);
    Result r = base(Family::kModelPrefill, "prefill", "tokens/s", rates);
    r.flops_per_iteration = d.prefill_flops();
    out.push_back(std::move(r));
  }
  Result itl = base(Family::kModelItl, "inter-token latency", "s", step_s);
  out.push_back(itl);
  {
    const double mean_step =
        std::accumulate(step_s.begin(), step_s.end(), 0.0) / double(step_s.size());
    std::vector<double> rates;
    for (double t : step_s)
      rates.push_back(double(c.batch) / t);
    Result r = base(Family::kModelDecode, "decode", "tokens/s", rates);
    // Aggregate over the batch from the mean step (the median of rates is not it).
    r.value = double(c.batch) / mean_step;
    const int mean_context = mean_context_of(c, steps);
    const double bytes = d.decode_bytes(mean_context);
    r.bytes_per_iteration = bytes;
    r.flops_per_iteration = d.decode_flops(mean_context);
    r.parameters["bytes_per_step"] = bytes;
    r.parameters["achieved_bytes_per_s"] = bytes / mean_step;
    r.parameters["tokens_per_s_per_sequence"] = 1.0 / mean_step;
    r.parameters["itl_p99_s"] = itl.stats.p99.value_or(itl.stats.max);
    if (!cublaslt_step_s.empty())
      r.parameters["cublaslt_step_s"] = compute_stats(cublaslt_step_s).median;
    out.push_back(std::move(r));
  }
  if (!regions.empty()) add_profile(out, regions, *shape, dc, steps, mean_context_of(c, steps));
  return out;
}

}  // namespace gpuvs::models::llama
