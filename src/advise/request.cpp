// A request made whole (request.h): the defaults filled in, the checks across options,
// and the lines of the workload and the assumptions the advice prints.
#include "advise/request.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "core/error.h"
#include "core/units.h"

namespace gpuvs::advise {

void fill_defaults(Request& r, Advice& a) {
  const Model& m = r.model;
  const bool cnn = m.kind == ModelKind::kCnn;
  r.assumptions.mfu = r.mfu.value_or(cnn ? kDefaultMfuCnn : kDefaultMfuTransformer);
  if (r.mode == Mode::kInfer) {
    if (cnn)
      throw UsageError(
          "advise infer models a transformer's weights and KV cache; for CNN inference see the "
          "published figures of `gpuvs compare` or `gpuvs specs show`");
    if (r.max_days) throw UsageError("--max-days applies to training");
    if (r.tokens || r.samples) throw UsageError("--tokens/--samples apply to training");
    r.infer.context = r.context.value_or(m.shape.seq);
    return;
  }
  if (r.context) throw UsageError("--context applies to inference (advise infer)");
  if (cnn && r.train.recompute != Recompute::kNone)
    throw UsageError("--recompute applies to transformers");
  if (cnn && r.tp && *r.tp != 1) throw UsageError("--tp applies to transformers");
  if (!cnn && r.samples) throw UsageError("--samples is for CNNs; give a transformer --tokens");
  if (cnn && r.tokens) throw UsageError("--tokens is for transformers; give a CNN --samples");
  r.train.micro_batch = r.micro_batch.value_or(cnn ? kDefaultCnnMicroBatch : 1);
  if (cnn) {
    if (!r.samples) {
      if (m.default_samples <= 0)
        throw UsageError("a CNN without a standard schedule needs --samples (samples seen)");
      r.samples = m.default_samples;
      a.model_lines.push_back(fmt::format("samples: {} ({}; --samples to change)",
                                          format_count(*r.samples), m.default_samples_note));
    } else {
      a.model_lines.push_back(fmt::format("samples: {} (given)", format_count(*r.samples)));
    }
    if (r.global_batch_tokens)
      throw UsageError(
          "--global-batch: a CNN's batch counts samples, not tokens (e.g. --global-batch 8192)");
    if (!r.global_batch) r.global_batch = kDefaultCnnGlobalBatch;
  } else {
    if (!r.tokens) {
      r.tokens = kChinchillaTokensPerParam * m.params;
      a.model_lines.push_back(fmt::format(
          "tokens: T = 20 × N = {} (compute-optimal, Hoffmann et al. 2022; --tokens to change)",
          format_count(*r.tokens)));
    } else {
      a.model_lines.push_back(fmt::format("tokens: T = {} (given)", format_count(*r.tokens)));
    }
    if (r.global_batch_tokens) {
      // Tokens per step as published ("16M tokens"): whole sequences of the model's
      // length, the nearest count, said where it is not exact.
      const double seqs = *r.global_batch_tokens / static_cast<double>(m.shape.seq);
      if (seqs < 0.5)
        throw UsageError(
            fmt::format("--global-batch: {} tokens is less than one sequence of {} tokens",
                        format_count(*r.global_batch_tokens), m.shape.seq));
      r.global_batch = std::llround(seqs);
      const double used = static_cast<double>(*r.global_batch * m.shape.seq);
      a.model_lines.push_back(
          used == *r.global_batch_tokens
              ? fmt::format("global batch given: {} tokens = {} sequences of {}",
                            format_count(*r.global_batch_tokens), *r.global_batch, m.shape.seq)
              : fmt::format("global batch given: {} tokens = {:.2f} sequences of {}: {} used "
                            "({:.0f} tokens)",
                            format_count(*r.global_batch_tokens), seqs, m.shape.seq,
                            *r.global_batch, used));
    }
    if (!r.global_batch)
      r.global_batch = std::max<int64_t>(
          1, std::llround(kDefaultBatchTokens / static_cast<double>(m.shape.seq)));
  }
  if (r.train.micro_batch > *r.global_batch)
    throw UsageError(fmt::format("--micro-batch {} is larger than the global batch {}",
                                 r.train.micro_batch, *r.global_batch));
  if (r.tp) {
    if (*r.tp > r.assumptions.gpus_per_node)
      throw UsageError(fmt::format("--tp {}: tensor parallelism stays inside a node of {} GPUs",
                                   *r.tp, r.assumptions.gpus_per_node));
    if (m.shape.heads % *r.tp != 0)
      throw UsageError(
          fmt::format("--tp {} does not divide the {} attention heads", *r.tp, m.shape.heads));
    if (r.gpus && *r.gpus % *r.tp != 0)
      throw UsageError(fmt::format("--gpus {} is not a multiple of --tp {}", *r.gpus, *r.tp));
  }
  // Both counts fixed: the data-parallel degree is too, and every rank needs a micro-batch.
  if (r.gpus && (r.tp || m.kind == ModelKind::kCnn)) {
    const int64_t dp = *r.gpus / r.tp.value_or(1);
    const int64_t most = *r.global_batch / r.train.micro_batch;
    if (dp > most)
      throw UsageError(fmt::format(
          "--gpus {}{} makes {} data-parallel ranks, more than the global batch of {} at "
          "micro-batch {} feeds ({})",
          *r.gpus, r.tp ? fmt::format(" at --tp {}", *r.tp) : "", dp, *r.global_batch,
          r.train.micro_batch, most));
  }
}

void describe_model(const Request& r, Advice& a) {
  const Model& m = r.model;
  std::vector<std::string> lines;
  if (m.kind == ModelKind::kTransformer) {
    const TransformerShape& s = m.shape;
    lines.push_back(fmt::format(
        "model {}: N = {} parameters; {} layers, hidden {}, {} heads ({} KV), sequence {}, "
        "vocabulary {} — {}{}",
        m.name, format_count(m.params), s.layers, s.hidden, s.heads, s.kv_heads, s.seq, s.vocab,
        m.shape_note, m.source.empty() ? "" : "; " + m.source));
  } else {
    lines.push_back(fmt::format(
        "model {}: N = {} parameters; forward {:.3g} GFLOP and {} of activations per sample — "
        "{}{}",
        m.name, format_count(m.params), m.cnn.forward_flops / 1e9,
        format_gb(m.cnn.activation_bytes), m.shape_note, m.source.empty() ? "" : "; " + m.source));
  }
  a.model_lines.insert(a.model_lines.begin(), lines.begin(), lines.end());
  if (r.mode == Mode::kInfer) {
    a.model_lines.push_back(fmt::format(
        "serving: batch {} sequences × context {} tokens; weights {}, KV cache {}", r.infer.batch,
        r.infer.context, to_string(r.infer.precision), to_string(r.infer.kv_precision)));
    return;
  }
  if (m.kind == ModelKind::kTransformer) {
    const TransformerShape& s = m.shape;
    const double per_token = transformer_train_flops_per_token(m);
    a.model_lines.push_back(fmt::format(
        "FLOPs: (6·N + 12·L·h·s) · T = (6·{} + 12·{}·{}·{}) · {} = {:.3g} (6·N·T alone: {:.3g}; "
        "PaLM's model FLOPs)",
        format_count(m.params), s.layers, s.hidden, s.seq, format_count(*r.tokens),
        per_token * *r.tokens, 6 * m.params * *r.tokens));
    a.model_lines.push_back(fmt::format(
        "global batch: {} sequences × {} tokens = {} tokens per step; micro-batch {} per GPU",
        *r.global_batch, s.seq, format_count(static_cast<double>(*r.global_batch * s.seq)),
        r.train.micro_batch));
  } else {
    a.model_lines.push_back(fmt::format("FLOPs: 3 × forward × samples = 3 × {:.3g} × {} = {:.3g}",
                                        m.cnn.forward_flops, format_count(*r.samples),
                                        training_flops(m, *r.samples)));
    a.model_lines.push_back(fmt::format("global batch: {} samples; micro-batch {} per GPU",
                                        *r.global_batch, r.train.micro_batch));
  }
}

void list_assumptions(const Request& r, Advice& a) {
  const bool cnn = r.model.kind == ModelKind::kCnn;
  const std::string mfu_why =
      r.mfu ? "given"
            : (cnn ? "default for CNNs: NVIDIA's published A100 ResNet-50 training reaches 19.4 % "
                     "of the datasheet"
                   : "default for transformers: PaLM reached 46.2 % (Chowdhery et al. 2022); "
                     "conservative for a run not tuned for weeks");
  a.assumptions.push_back(fmt::format(
      "MFU {:.2f} of the datasheet dense peak ({}); a measured GEMM peak counts as {:.1f} % of "
      "the datasheet (Bekman's H100 best-GEMM share), so it scales the estimate by measured / "
      "expected",
      r.assumptions.mfu, mfu_why, 100 * kMamfReference));
  a.assumptions.push_back(fmt::format(
      "framework overhead per GPU: {} + {:.0f} % (CUDA context, cuBLAS/NCCL buffers, allocator "
      "fragmentation)",
      format_gb(r.train.overhead.fixed_bytes), 100 * r.train.overhead.fraction));
  if (r.mode == Mode::kInfer) {
    a.assumptions.push_back(fmt::format(
        "decode reads every weight and the whole KV cache each step at {:.2f} of the datasheet "
        "bandwidth (a measured copy counts as {:.1f} %, or as the share a measured gpuvs "
        "Llama decode at batch 1 reached where a run file has one); prefill at the MFU above",
        r.assumptions.bw_util, 100 * kCopyReference));
    a.assumptions.push_back(
        "weights and KV cache split evenly over the GPUs (tensor parallel in a node, pipeline "
        "stages beyond); tensor-parallel traffic of decode is not counted");
    return;
  }
  a.assumptions.push_back(fmt::format(
      "parallelism: {} with tensor parallelism {} inside a node of {} GPUs (sequence parallel "
      "when t > 1); no pipeline parallelism; between nodes {} per GPU",
      to_string(r.train.sharding), r.tp ? fmt::format("{}", *r.tp) : "1-8 as needed",
      r.assumptions.gpus_per_node, format_si(r.assumptions.network_bandwidth, "B/s", 3)));
  if (!cnn)
    a.assumptions.push_back(fmt::format("attention: {}; recomputation: {}",
                                        r.train.flash_attention
                                            ? "FlashAttention (no s×s scores stored)"
                                            : "standard (s×s scores stored)",
                                        to_string(r.train.recompute)));
}

}  // namespace gpuvs::advise
