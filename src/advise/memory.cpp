#include "advise/memory.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>

#include "core/error.h"
#include "core/units.h"

namespace gpuvs::advise {

namespace {

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out)
    c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

bool mixed(Precision p) {
  return p == Precision::kFp16 || p == Precision::kBf16 || p == Precision::kFp8;
}

// The Megatron activation formula counts 16-bit tensors (and 1-byte dropout masks);
// fp32 training keeps them in 4 bytes: twice as much, a slight overestimate.
double activation_scale(Precision p) {
  return mixed(p) ? 1.0 : 2.0;
}

std::string gb(double bytes) {
  return format_gb(bytes);
}

}  // namespace

std::string format_gb(double bytes) {
  return format_si(bytes, "B", 3);
}

Precision parse_precision(std::string_view text, bool training) {
  const std::string s = lower(text);
  if (s == "fp32") return Precision::kFp32;
  if (s == "tf32") return Precision::kTf32;
  if (s == "fp16") return Precision::kFp16;
  if (s == "bf16") return Precision::kBf16;
  if (s == "fp8") return Precision::kFp8;
  if (!training && s == "int8") return Precision::kInt8;
  if (!training && s == "int4") return Precision::kInt4;
  throw UsageError(fmt::format("--precision: unknown precision '{}' ({})", text,
                               training ? "training: fp32, tf32, fp16, bf16, fp8"
                                        : "inference: fp32, fp16, bf16, fp8, int8, int4"));
}

Optimizer parse_optimizer(std::string_view text) {
  const std::string s = lower(text);
  if (s == "adam" || s == "adamw") return Optimizer::kAdam;
  if (s == "sgd") return Optimizer::kSgd;
  throw UsageError(fmt::format("--optimizer: unknown optimizer '{}' (adam, adamw, sgd)", text));
}

Sharding parse_sharding(std::string_view text) {
  const std::string s = lower(text);
  if (s == "dp" || s == "ddp") return Sharding::kNone;
  if (s == "zero1") return Sharding::kZero1;
  if (s == "zero2") return Sharding::kZero2;
  if (s == "zero3" || s == "fsdp") return Sharding::kZero3;
  throw UsageError(
      fmt::format("--parallel: unknown strategy '{}' (dp, zero1, zero2, zero3, fsdp)", text));
}

Recompute parse_recompute(std::string_view text) {
  const std::string s = lower(text);
  if (s == "none" || s == "off") return Recompute::kNone;
  if (s == "selective") return Recompute::kSelective;
  if (s == "full") return Recompute::kFull;
  throw UsageError(fmt::format("--recompute: unknown mode '{}' (none, selective, full)", text));
}

std::string_view to_string(Precision p) {
  switch (p) {
    case Precision::kFp32:
      return "fp32";
    case Precision::kTf32:
      return "tf32";
    case Precision::kFp16:
      return "fp16";
    case Precision::kBf16:
      return "bf16";
    case Precision::kFp8:
      return "fp8";
    case Precision::kInt8:
      return "int8";
    case Precision::kInt4:
      return "int4";
  }
  return "?";
}

std::string_view to_string(Optimizer o) {
  return o == Optimizer::kAdam ? "adam" : "sgd";
}

std::string_view to_string(Sharding s) {
  switch (s) {
    case Sharding::kNone:
      return "dp";
    case Sharding::kZero1:
      return "zero1";
    case Sharding::kZero2:
      return "zero2";
    case Sharding::kZero3:
      return "zero3";
  }
  return "?";
}

std::string_view to_string(Recompute r) {
  switch (r) {
    case Recompute::kNone:
      return "none";
    case Recompute::kSelective:
      return "selective";
    case Recompute::kFull:
      return "full";
  }
  return "?";
}

double weight_bytes(Precision p) {
  switch (p) {
    case Precision::kFp32:
    case Precision::kTf32:
      return 4;
    case Precision::kFp16:
    case Precision::kBf16:
      return 2;
    case Precision::kFp8:
    case Precision::kInt8:
      return 1;
    case Precision::kInt4:
      return 0.5;
  }
  return 2;
}

BytesPerParam training_bytes_per_param(Precision p, Optimizer o) {
  if (mixed(p)) return {2, 2, o == Optimizer::kAdam ? 12.0 : 8.0};
  return {4, 4, o == Optimizer::kAdam ? 8.0 : 4.0};
}

double activation_bytes_per_layer(const ActivationInput& in) {
  const double sbh = static_cast<double>(in.seq) * static_cast<double>(in.micro_batch) *
                     static_cast<double>(in.hidden);
  const double t = std::max(1, in.tp);
  switch (in.recompute) {
    case Recompute::kFull:
      return 2.0 * sbh / t;
    case Recompute::kSelective:
      return 34.0 * sbh / t;
    case Recompute::kNone:
      break;
  }
  const double scores = in.flash_attention ? 0.0
                                           : 5.0 * in.heads * static_cast<double>(in.seq) /
                                                 static_cast<double>(in.hidden);
  return sbh * (34.0 + scores) / t;
}

double kv_cache_bytes(int layers, int kv_heads, int64_t head_dim, double bytes_per_value,
                      int64_t context, int64_t batch) {
  return 2.0 * layers * kv_heads * static_cast<double>(head_dim) * bytes_per_value *
         static_cast<double>(context) * static_cast<double>(batch);
}

MemoryBreakdown training_memory(const Model& m, const TrainingSetup& setup, const Layout& layout,
                                bool with_steps) {
  MemoryBreakdown r;
  const BytesPerParam bpp = training_bytes_per_param(setup.precision, setup.optimizer);
  const double tp = layout.tp;
  const double dp = layout.dp;
  const double per_gpu = m.params / tp;
  const bool z1 = setup.sharding != Sharding::kNone;
  const bool z2 = setup.sharding == Sharding::kZero2 || setup.sharding == Sharding::kZero3;
  const bool z3 = setup.sharding == Sharding::kZero3;
  r.weights = per_gpu * bpp.weights / (z3 ? dp : 1);
  r.gradients = per_gpu * bpp.gradients / (z2 ? dp : 1);
  r.optimizer = per_gpu * bpp.optimizer / (z1 ? dp : 1);

  const auto shard = [&](bool sharded) {
    return sharded && dp > 1 ? fmt::format(" ÷ dp {}", layout.dp) : std::string();
  };
  if (with_steps)
    r.steps.push_back(fmt::format(
        "model states ({} {}, {} B/param = {} weights + {} gradients + {} optimizer; ZeRO "
        "accounting): N/tp = {}/{} = {} parameters per GPU",
        to_string(setup.precision), to_string(setup.optimizer), bpp.total(), bpp.weights,
        bpp.gradients, bpp.optimizer, format_count(m.params), layout.tp, format_count(per_gpu)));
  if (with_steps)
    r.steps.push_back(fmt::format("  weights    {} × {} B{} = {}", format_count(per_gpu),
                                  bpp.weights, shard(z3), gb(r.weights)));
  if (with_steps)
    r.steps.push_back(fmt::format("  gradients  {} × {} B{} = {}", format_count(per_gpu),
                                  bpp.gradients, shard(z2), gb(r.gradients)));
  if (with_steps)
    r.steps.push_back(fmt::format("  optimizer  {} × {} B{} = {}", format_count(per_gpu),
                                  bpp.optimizer, shard(z1), gb(r.optimizer)));

  const double scale = activation_scale(setup.precision);
  if (m.kind == ModelKind::kTransformer) {
    const TransformerShape& s = m.shape;
    ActivationInput in{s.seq,     setup.micro_batch,     s.hidden,       s.heads,
                       layout.tp, setup.flash_attention, setup.recompute};
    const double layer = activation_bytes_per_layer(in) * scale;
    r.activations = layer * s.layers;
    std::string formula;
    switch (setup.recompute) {
      case Recompute::kFull:
        formula = "2·s·b·h/t (full recomputation: layer inputs only)";
        break;
      case Recompute::kSelective:
        formula = "34·s·b·h/t (selective recomputation)";
        break;
      case Recompute::kNone:
        formula = setup.flash_attention
                      ? "s·b·h·34/t (the 5·a·s/h term of s·b·h·(34 + 5·a·s/h) drops: "
                        "FlashAttention keeps no s×s scores)"
                      : fmt::format("s·b·h·(34 + 5·a·s/h)/t, 5·a·s/h = {:.1f}",
                                    5.0 * s.heads * static_cast<double>(s.seq) /
                                        static_cast<double>(s.hidden));
        break;
    }
    if (with_steps)
      r.steps.push_back(fmt::format(
          "activations per layer (Korthikanti et al. 2022): {}; s={} b={} h={} a={} t={}{} = {}",
          formula, s.seq, setup.micro_batch, s.hidden, s.heads, layout.tp,
          scale != 1 ? " ×2 (fp32)" : "", gb(layer)));
    if (with_steps)
      r.steps.push_back(fmt::format("  × {} layers = {}", s.layers, gb(r.activations)));
    if (setup.recompute == Recompute::kFull) {
      in.recompute = Recompute::kNone;
      const double working = activation_bytes_per_layer(in) * scale;
      r.activations += working;
      if (with_steps)
        r.steps.push_back(fmt::format("  + one layer recomputed at a time during backward: {} → {}",
                                      gb(working), gb(r.activations)));
    }
    const double logits = 4.0 * static_cast<double>(s.seq) *
                          static_cast<double>(setup.micro_batch) * static_cast<double>(s.vocab) /
                          tp;
    r.buffers = logits;
    if (with_steps)
      r.steps.push_back(
          fmt::format("logits kept in fp32 for the loss: 4·s·b·V/t = {}", gb(logits)));
    if (z3) {
      const double layer_params =
          12.0 * static_cast<double>(s.hidden) * static_cast<double>(s.hidden) / tp;
      const double gathered = 2.0 * layer_params * bpp.weights;
      r.buffers += gathered;
      if (with_steps)
        r.steps.push_back(fmt::format(
            "ZeRO-3 gathers whole layers: 2 (current + prefetched) × 12·h²/t × {} B = {}",
            bpp.weights, gb(gathered)));
    }
  } else {
    r.activations = m.cnn.activation_bytes * scale * static_cast<double>(setup.micro_batch);
    if (with_steps)
      r.steps.push_back(fmt::format("activations: {} per sample{} × micro-batch {} = {}",
                                    gb(m.cnn.activation_bytes), scale != 1 ? " ×2 (fp32)" : "",
                                    setup.micro_batch, gb(r.activations)));
  }
  const double subtotal = r.weights + r.gradients + r.optimizer + r.activations + r.buffers;
  r.overhead = setup.overhead.fixed_bytes + setup.overhead.fraction * subtotal;
  if (with_steps)
    r.steps.push_back(fmt::format("framework overhead: {} + {:.0f} % of {} = {}",
                                  gb(setup.overhead.fixed_bytes), setup.overhead.fraction * 100,
                                  gb(subtotal), gb(r.overhead)));
  if (with_steps) r.steps.push_back(fmt::format("total per GPU: {}", gb(r.total())));
  return r;
}

MemoryBreakdown inference_memory(const Model& m, const InferenceSetup& setup, int count,
                                 bool with_steps) {
  MemoryBreakdown r;
  const TransformerShape& s = m.shape;
  const double n = std::max(1, count);
  const double wb = weight_bytes(setup.precision);
  const double kvb = weight_bytes(setup.kv_precision);
  const double weights_all = m.params * wb;
  const double kv_all =
      kv_cache_bytes(s.layers, s.kv_heads, s.head_dim(), kvb, setup.context, setup.batch);
  r.weights = weights_all / n;
  r.activations = kv_all / n;
  if (with_steps)
    r.steps.push_back(fmt::format("weights: N × {} B = {} × {} = {}; ÷ {} GPUs = {}", wb,
                                  format_count(m.params), wb, gb(weights_all), count,
                                  gb(r.weights)));
  if (with_steps)
    r.steps.push_back(fmt::format(
        "KV cache: 2·L·kv_heads·head_dim·bytes·context·batch = 2·{}·{}·{}·{}·{}·{} = {} ({} per "
        "token); ÷ {} GPUs = {}",
        s.layers, s.kv_heads, s.head_dim(), kvb, setup.context, setup.batch, gb(kv_all),
        gb(kv_cache_bytes(s.layers, s.kv_heads, s.head_dim(), kvb, 1, 1)), count,
        gb(r.activations)));
  const double subtotal = r.weights + r.activations;
  r.overhead = setup.overhead.fixed_bytes + setup.overhead.fraction * subtotal;
  if (with_steps)
    r.steps.push_back(fmt::format("framework overhead: {} + {:.0f} % of {} = {}",
                                  gb(setup.overhead.fixed_bytes), setup.overhead.fraction * 100,
                                  gb(subtotal), gb(r.overhead)));
  if (with_steps) r.steps.push_back(fmt::format("total per GPU: {}", gb(r.total())));
  return r;
}

}  // namespace gpuvs::advise
