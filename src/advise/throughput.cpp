#include "advise/throughput.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <variant>

#include "core/units.h"
#include "specs/metrics.h"
#include "specs/published.h"
#include "suite/produces.h"

namespace gpuvs::advise {

namespace {

bool mixed(Precision p) {
  return p == Precision::kFp16 || p == Precision::kBf16 || p == Precision::kFp8;
}

}  // namespace

std::string gemm_key(Precision p) {
  // The run file's GEMM ids name precisions as to_string() does, except FP8 (the E4M3
  // variant is the training format) and weight-only INT4 (it computes in FP16).
  if (p == Precision::kFp8) return "fp8_e4m3";
  if (p == Precision::kInt4) return "fp16";
  return std::string(to_string(p));
}

namespace {

std::string metric_label(const std::string& metric) {
  const MetricDef* def = find_metric(metric);
  return def ? std::string(def->name) : metric;
}

bool contains_ci(std::string_view text, std::string_view part) {
  const auto it =
      std::search(text.begin(), text.end(), part.begin(), part.end(), [](char a, char b) {
        return std::tolower(static_cast<unsigned char>(a)) ==
               std::tolower(static_cast<unsigned char>(b));
      });
  return it != text.end();
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

std::string flops(double v) {
  return format_si(v, "FLOP/s", 3);
}

std::string bps(double v) {
  return format_si(v, "B/s", 3);
}

}  // namespace

void Measurements::add_run(const RunFile& run, const std::string& file,
                           const Catalogue& catalogue) {
  std::vector<const GpuSpec*> spec(run.system.gpus.size(), nullptr);
  for (size_t i = 0; i < run.system.gpus.size(); ++i) {
    const GpuInfo& g = run.system.gpus[i];
    spec[i] = catalogue.match_driver(g.name, g.pci_device_id);
    if (!spec[i])
      notes_.push_back(
          fmt::format("{}: GPU {} ({}) matches no catalogue entry; its results are "
                      "not used",
                      file, i, g.name));
  }
  struct Pick {
    double value = 0;
    bool best = false;
    std::string id;
    int64_t rank = 0;  // the decode share: the model's parameter count
  };
  std::map<std::pair<size_t, std::string>, Pick> picks;  // (device, key) → figure
  for (const Result& r : run.results) {
    if (r.status != Status::kOk || r.devices.empty() || !std::isfinite(r.value) || r.value <= 0)
      continue;
    const int dev = r.devices.front();
    if (dev < 0 || static_cast<size_t>(dev) >= spec.size() || !spec[dev]) continue;
    std::string key;
    bool best = false;
    const std::string& id = r.id;
    const auto match = match_result_id(id);
    if (!match) continue;
    const Family family = match->family->family;
    // The power-capped sustained GEMM is not what the 0.803 reference (a short
    // best-shape matmul) measured: comparing like with like, it is skipped. The
    // all_reduce figures are NCCL's own choice of algorithm (not the algorithm study's
    // forced ones, nor nccl-tests'), in bytes per second.
    auto param_is = [&](const char* name, const char* value) {
      const auto it = r.parameters.find(name);
      if (it == r.parameters.end()) return true;
      const auto* s = std::get_if<std::string>(&it->second);
      return s && *s == value;
    };
    if ((family == Family::kGemm || family == Family::kGemmBest) &&
        (r.unit == "FLOP/s" || r.unit == "OP/s")) {
      best = family == Family::kGemmBest;
      key = "gemm." + match->value("precision");
    } else if (family == Family::kHbmStream && match->value("op") == "copy" && r.unit == "B/s") {
      key = "copy";
    } else if (family == Family::kCollectiveBusbw && match->value("op") == "all_reduce" &&
               r.unit == "B/s" && param_is("algo", "default") && param_is("proto", "default")) {
      key = "all_reduce";
    } else if (family == Family::kModelRate && match->value("model") == "resnet50" &&
               match->value("mode") == "train" && r.unit == "img/s") {
      key = "resnet50";
    } else if (family == Family::kModelDecodeShare && r.unit == "1" && r.value <= 1) {
      // Batch 1, where a decode step is bound by its bytes; of the largest model, the
      // nearest to the models advised.
      const std::optional<int64_t> n = int_parameter(r, "parameter_count");
      if (int_parameter(r, "batch") != 1 || !n) continue;
      Pick& p = picks[{static_cast<size_t>(dev), "decode_share"}];
      if (p.id.empty() || *n > p.rank) p = Pick{r.value, false, id, *n};
      continue;
    } else {
      continue;
    }
    Pick& p = picks[{static_cast<size_t>(dev), key}];
    // The best-shape GEMM is the achievable peak; otherwise the larger figure (the
    // all-reduce at the message size that saturates the links).
    if (p.id.empty() || (best && !p.best) || (best == p.best && r.value > p.value))
      p = Pick{r.value, best, id};
  }
  for (const auto& [where, pick] : picks) {
    Samples& s = samples_[spec[where.first]->id];
    std::vector<double>& values = s.values[where.second];
    // A ranked figure (the decode share) keeps only the highest rank's samples.
    if (pick.rank > 0) {
      int64_t& rank = s.rank[where.second];
      if (pick.rank < rank) continue;
      if (pick.rank > rank) values.clear();
      rank = pick.rank;
    }
    values.push_back(pick.value);
    s.from[where.second] = fmt::format("{} in {}", pick.id, file);
  }
  medians_.clear();
  for (const auto& [gpu, s] : samples_) {
    MeasuredGpu m;
    m.gpu_id = gpu;
    for (const auto& [key, values] : s.values) {
      const double v = median(values);
      const std::string& from = s.from.at(key);
      if (key.rfind("gemm.", 0) == 0) {
        m.gemm[key.substr(5)] = v;
        m.gemm_from[key.substr(5)] = from;
      } else if (key == "copy") {
        m.copy_bandwidth = v;
        m.copy_from = from;
      } else if (key == "all_reduce") {
        m.all_reduce_busbw = v;
        m.all_reduce_from = from;
      } else if (key == "resnet50") {
        m.resnet50_train = v;
        m.resnet50_from = from;
      } else if (key == "decode_share") {
        m.decode_share = v;
        m.decode_share_from = from;
      }
    }
    medians_[gpu] = std::move(m);
  }
}

const MeasuredGpu* Measurements::find(const std::string& gpu_id) const {
  const auto it = medians_.find(gpu_id);
  return it == medians_.end() ? nullptr : &it->second;
}

std::string compute_metric(Precision p) {
  switch (p) {
    case Precision::kFp32:
      return "compute.fp32";
    case Precision::kTf32:
      return "compute.tf32";
    case Precision::kFp16:
      return "compute.fp16";
    case Precision::kBf16:
      return "compute.bf16";
    case Precision::kFp8:
      return "compute.fp8";
    case Precision::kInt8:
      return "compute.int8";
    case Precision::kInt4:
      return "compute.fp16";
  }
  return "compute.bf16";
}

std::optional<ComputeRate> compute_rate(const GpuSpec& gpu, Precision p,
                                        const MeasuredGpu* measured, double mfu,
                                        std::string& why_not) {
  const std::string metric = compute_metric(p);
  const auto it = gpu.figures.find(metric);
  if (it == gpu.figures.end()) {
    const bool none =
        std::find(gpu.unsupported.begin(), gpu.unsupported.end(), metric) != gpu.unsupported.end();
    why_not = none
                  ? fmt::format("no {} (the datasheet says the GPU lacks it)", metric_label(metric))
                  : fmt::format("the catalogue has no {} figure", metric_label(metric));
    return std::nullopt;
  }
  const double datasheet = it->second.value;
  const std::string unit = it->second.unit;
  ComputeRate r;
  if (measured) {
    const auto g = measured->gemm.find(gemm_key(p));
    if (g != measured->gemm.end()) {
      r.peak = g->second;
      r.utilization = std::min(1.0, mfu / kMamfReference);
      r.basis = "measured";
      r.text = fmt::format(
          "measured GEMM {} ({}; {:.0f} % of the datasheet {}) × MFU {:.2f} / {:.3f} (the best "
          "GEMM's usual share of the datasheet) = {} per GPU",
          format_si(r.peak, unit, 3), measured->gemm_from.at(g->first), 100 * r.peak / datasheet,
          format_si(datasheet, unit, 3), mfu, kMamfReference, format_si(r.rate(), unit, 3));
      return r;
    }
  }
  r.peak = datasheet;
  r.utilization = mfu;
  r.basis = "datasheet";
  r.text = fmt::format("datasheet {} {} × MFU {:.2f} = {} per GPU", metric_label(metric),
                       format_si(datasheet, unit, 3), mfu, format_si(r.rate(), unit, 3));
  return r;
}

std::optional<ComputeRate> resnet50_rate(const GpuSpec& gpu, Precision p,
                                         const MeasuredGpu* measured) {
  ComputeRate r;
  if (measured && measured->resnet50_train) {
    r.samples_per_s = *measured->resnet50_train;
    r.basis = "measured";
    r.text = fmt::format("measured ResNet-50 training {:.0f} img/s per GPU ({})", *r.samples_per_s,
                         measured->resnet50_from);
    return r;
  }
  for (const PublishedFigure* f : Published::builtin().for_gpu(gpu.id)) {
    if (f->metric != "model.resnet50.train") continue;
    const bool match =
        mixed(p) ? (contains_ci(f->precision, "mixed") || contains_ci(f->precision, "amp"))
                 : (p == Precision::kTf32 && contains_ci(f->precision, "tf32"));
    if (!match) continue;
    r.samples_per_s = f->value;
    r.basis = "published";
    r.text = fmt::format("published ResNet-50 training {:.0f} img/s per GPU ({}, {}; {}, {})",
                         f->value, f->precision, f->setting.substr(0, 60), f->publisher, f->date);
    return r;
  }
  return std::nullopt;
}

std::optional<Bandwidth> memory_bandwidth(const GpuSpec& gpu, const MeasuredGpu* measured,
                                          double bw_util, std::string& why_not) {
  const auto it = gpu.figures.find("memory.bandwidth");
  if (measured && measured->copy_bandwidth && measured->decode_share) {
    Bandwidth b;
    b.factor = *measured->decode_share;
    b.value = *measured->copy_bandwidth * b.factor;
    b.basis = "measured";
    b.text = fmt::format(
        "measured copy {} ({}) × {:.3f}, the share of it gpuvs's Llama decode reached at batch "
        "1 ({}) = {}",
        bps(*measured->copy_bandwidth), measured->copy_from, b.factor, measured->decode_share_from,
        bps(b.value));
    return b;
  }
  if (measured && measured->copy_bandwidth) {
    Bandwidth b;
    const double util = std::min(1.0, bw_util / kCopyReference);
    b.factor = util;
    b.value = *measured->copy_bandwidth * util;
    b.basis = "measured";
    b.text = fmt::format(
        "measured copy {} ({}) × {:.2f} / {:.3f} (the copy's share of the datasheet in gpuvs's "
        "H200 reference run) = {}",
        bps(*measured->copy_bandwidth), measured->copy_from, bw_util, kCopyReference, bps(b.value));
    return b;
  }
  if (it == gpu.figures.end()) {
    why_not = "the catalogue has no memory bandwidth figure";
    return std::nullopt;
  }
  Bandwidth b;
  b.value = it->second.value * bw_util;
  b.factor = bw_util;
  b.basis = "datasheet";
  b.text = fmt::format("datasheet bandwidth {} × {:.2f} = {}", bps(it->second.value), bw_util,
                       bps(b.value));
  return b;
}

Bandwidth node_bandwidth(const GpuSpec& gpu, const MeasuredGpu* measured) {
  Bandwidth b;
  if (measured && measured->all_reduce_busbw) {
    b.value = *measured->all_reduce_busbw;
    b.basis = "measured";
    b.text = fmt::format("measured all-reduce bus bandwidth {} ({})", bps(b.value),
                         measured->all_reduce_from);
    return b;
  }
  const auto nv = gpu.figures.find("link.nvlink");
  if (nv != gpu.figures.end()) {
    b.value = nv->second.value / 2;
    b.basis = "datasheet";
    b.text = fmt::format("NVLink {} total ÷ 2 = {} per direction (datasheet; an upper bound)",
                         bps(nv->second.value), bps(b.value));
    return b;
  }
  const auto pcie = gpu.figures.find("link.pcie");
  if (pcie != gpu.figures.end()) {
    b.value = pcie->second.value / 2;
    b.basis = "datasheet";
    b.text = fmt::format("no NVLink: PCIe {} total ÷ 2 = {} per direction (datasheet)",
                         bps(pcie->second.value), bps(b.value));
    return b;
  }
  b.value = 32e9;
  b.basis = "assumed";
  b.text = "no link figure in the catalogue: PCIe Gen4 x16, 32 GB/s per direction, assumed";
  return b;
}

TrainingTime training_time(const Model& m, const TrainingSetup& setup, const Layout& layout,
                           const TrainingJob& job, const ComputeRate& rate, const Bandwidth& node,
                           const Assumptions& a) {
  TrainingTime t;
  const double n = layout.count();
  const bool transformer = m.kind == ModelKind::kTransformer;
  t.executed_flops = job.model_flops;
  if (transformer && setup.recompute == Recompute::kFull) {
    t.executed_flops = job.model_flops * 4.0 / 3.0;
    t.lines.push_back(fmt::format(
        "full recomputation runs the forward pass twice: executed FLOPs = 4/3 × {:.3g} = {:.3g}",
        job.model_flops, t.executed_flops));
  } else if (transformer && setup.recompute == Recompute::kSelective) {
    const TransformerShape& s = m.shape;
    const double extra = job.samples * static_cast<double>(s.seq) * 4.0 * s.layers *
                         static_cast<double>(s.hidden) * static_cast<double>(s.seq);
    t.executed_flops += extra;
    t.lines.push_back(fmt::format(
        "selective recomputation repeats the attention scores: + 4·L·h·s per token = {:.3g} "
        "executed FLOPs",
        t.executed_flops));
  }
  t.steps = job.samples / static_cast<double>(job.global_batch);
  if (rate.samples_per_s) {
    t.compute_s = job.samples / (n * *rate.samples_per_s);
    t.lines.push_back(fmt::format("compute: {} samples / ({} GPUs × {:.0f} samples/s) = {}",
                                  format_count(job.samples), layout.count(), *rate.samples_per_s,
                                  format_duration(t.compute_s)));
  } else {
    t.compute_s = t.executed_flops / (n * rate.rate());
    t.lines.push_back(fmt::format("compute: {:.3g} FLOP / ({} GPUs × {}) = {}", t.executed_flops,
                                  layout.count(), flops(rate.rate()),
                                  format_duration(t.compute_s)));
  }
  const double step_compute = t.compute_s / t.steps;
  const bool across_nodes = layout.count() > a.gpus_per_node;
  const double micro = static_cast<double>(setup.micro_batch);
  // Micro-batches each data-parallel rank runs per optimizer step (gradient accumulation).
  const double accumulation =
      std::ceil(static_cast<double>(job.global_batch) / (micro * layout.dp));
  if (layout.dp > 1) {
    const BytesPerParam bpp = training_bytes_per_param(setup.precision, setup.optimizer);
    const double grads = m.params / layout.tp * bpp.gradients;
    const bool z3 = setup.sharding == Sharding::kZero3;
    // An all-reduce (or reduce-scatter + all-gather) moves 2·(dp−1)/dp of the gradients
    // per step; ZeRO-3 also gathers the weights for every forward and backward pass:
    // 2 per micro-batch + 1 reduce-scatter (with one micro-batch: 3, ZeRO's 1.5×).
    const double factor = z3 ? 2.0 * accumulation + 1.0 : 2.0;
    const double dp = layout.dp;
    const double volume = factor * (dp - 1) / dp * grads;
    const double bw = across_nodes ? std::min(node.value, a.network_bandwidth) : node.value;
    const double per_step = volume / bw;
    // Gradient traffic overlaps the backward pass (2/3 of the compute); ZeRO-3's
    // prefetched gathers overlap the whole step.
    const double window = step_compute * (z3 ? 1.0 : 2.0 / 3.0);
    t.dp_comm_s = t.steps * per_step;
    t.dp_exposed_s = t.steps * std::max(0.0, per_step - window);
    t.lines.push_back(fmt::format(
        "data parallel: {:g} × (dp−1)/dp × {} = {} per GPU per step{} at {} ({}) = {:.3g} s/step; "
        "{:.0f} steps of {} samples; overlapped with {} ({:.3g} s/step): {} exposed",
        factor, format_gb(grads), format_gb(volume),
        z3 ? fmt::format(" (ZeRO-3: 2 gathers × {:g} micro-batches + 1 reduce-scatter)",
                         accumulation)
           : "",
        bps(bw),
        across_nodes ? fmt::format("between nodes: min(link, network {})", bps(a.network_bandwidth))
                     : node.basis + " link",
        per_step, t.steps, job.global_batch, z3 ? "the step" : "the backward pass", window,
        format_duration(t.dp_exposed_s)));
  }
  if (transformer && layout.tp > 1) {
    const TransformerShape& s = m.shape;
    const double act_bytes = mixed(setup.precision) ? 2.0 : 4.0;
    const double per_rank = accumulation;
    const double size =
        static_cast<double>(s.seq) * micro * static_cast<double>(s.hidden) * act_bytes;
    const int k = setup.recompute == Recompute::kFull ? 6 : 4;
    const double tp = layout.tp;
    const double each = 2.0 * (tp - 1) / tp * size / node.value;
    t.tp_comm_s = t.steps * per_rank * s.layers * k * each;
    t.lines.push_back(fmt::format(
        "tensor parallel: {} all-reduces per layer per micro-batch of s·b·h·{} B = {}, each "
        "2·(t−1)/t × {} / {} = {:.3g} ms; × {} layers × {:.0f} micro-batches × {:.0f} steps = {}",
        k, act_bytes, format_gb(size), format_gb(size), bps(node.value), each * 1e3, s.layers,
        per_rank, t.steps, format_duration(t.tp_comm_s)));
  }
  t.total_s = t.compute_s + t.dp_exposed_s + t.tp_comm_s;
  t.lines.push_back(fmt::format("time: {} compute + {} data-parallel + {} tensor-parallel = {}",
                                format_duration(t.compute_s), format_duration(t.dp_exposed_s),
                                format_duration(t.tp_comm_s), format_duration(t.total_s)));
  return t;
}

InferenceSpeed inference_speed(const Model& m, const InferenceSetup& setup, int count,
                               const ComputeRate& rate, const Bandwidth& bandwidth) {
  InferenceSpeed r;
  const TransformerShape& s = m.shape;
  const double n = count;
  const double batch = static_cast<double>(setup.batch);
  const double ctx = static_cast<double>(setup.context);
  const double weights = m.params * weight_bytes(setup.precision);
  const double kv = kv_cache_bytes(s.layers, s.kv_heads, s.head_dim(),
                                   weight_bytes(setup.kv_precision), setup.context, setup.batch);
  const double bytes = (weights + kv) / n;
  const double mem_t = bytes / bandwidth.value;
  const double attn = 4.0 * s.layers * static_cast<double>(s.hidden) * ctx;
  const double step_flops = (2.0 * m.params + attn) * batch;
  const double comp_t = step_flops / (n * rate.rate());
  r.decode_step_s = std::max(mem_t, comp_t);
  r.memory_bound = mem_t >= comp_t;
  r.tokens_per_s = batch / r.decode_step_s;
  r.lines.push_back(fmt::format(
      "decode step reads weights + KV cache: ({} + {}) / {} GPUs = {} per GPU / {} = {:.3g} ms",
      format_gb(weights), format_gb(kv), count, format_gb(bytes), bps(bandwidth.value),
      mem_t * 1e3));
  r.lines.push_back(fmt::format(
      "decode step computes (2·N + 4·L·h·context) × batch = {:.3g} FLOP / ({} × {}) = {:.3g} ms",
      step_flops, count, flops(rate.rate()), comp_t * 1e3));
  r.lines.push_back(fmt::format(
      "{}-bound: {:.3g} ms per step → {} sequences / step = {:.0f} tokens/s ({:.1f} tokens/s per "
      "sequence)",
      r.memory_bound ? "memory" : "compute", r.decode_step_s * 1e3, setup.batch, r.tokens_per_s,
      1.0 / r.decode_step_s));
  const double prefill =
      batch * (2.0 * m.params * ctx + 4.0 * s.layers * static_cast<double>(s.hidden) * ctx * ctx);
  r.prefill_s = prefill / (n * rate.rate());
  r.lines.push_back(fmt::format(
      "prefill of {} full-context prompts: (2·N·s + 4·L·h·s²) × batch = {:.3g} FLOP / ({} × {}) "
      "= {}",
      setup.batch, prefill, count, flops(rate.rate()), format_duration(r.prefill_s)));
  return r;
}

std::string format_duration(double seconds) {
  if (!std::isfinite(seconds)) return "-";
  if (seconds == 0) return "0 s";
  if (seconds < 1) return fmt::format("{:.3g} ms", seconds * 1e3);
  if (seconds < 120) return fmt::format("{:.3g} s", seconds);
  if (seconds < 2 * 3600) return fmt::format("{:.0f} min", seconds / 60);
  if (seconds < 48 * 3600) return fmt::format("{:.1f} h", seconds / 3600);
  const double days = seconds / 86400;
  if (days < 730) return fmt::format("{:.1f} days", days);
  return fmt::format("{:.1f} years", days / 365.25);
}

}  // namespace gpuvs::advise
