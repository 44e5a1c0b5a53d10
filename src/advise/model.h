// What is trained or served: a dense decoder-only transformer (its shape published
// in a preset, given by the user, or derived from its size) or a CNN given by its
// forward FLOPs and stored activation bytes per sample. Every preset names the page
// its shape comes from. Counts (parameters, tokens, FLOPs) are doubles: 70B does not
// fit an int and nothing here needs exact integers.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/units.h"

namespace gpuvs::advise {

enum class ModelKind { kTransformer, kCnn };

std::string_view to_string(ModelKind kind);

struct TransformerShape {
  int layers = 0;      // L
  int64_t hidden = 0;  // h (d_model)
  int heads = 0;       // a, attention (query) heads
  int kv_heads = 0;    // key/value heads; < heads with grouped-query attention
  int64_t seq = 0;     // s, training sequence length; the default inference context
  int64_t vocab = 0;   // V

  int64_t head_dim() const { return heads > 0 ? hidden / heads : 0; }
};

struct CnnShape {
  double forward_flops = 0;     // FLOP of one forward pass of one sample
  double activation_bytes = 0;  // bytes kept for the backward pass per sample, 16-bit
};

struct Model {
  std::string name;  // "llama-2-70b", or "70B" as typed
  ModelKind kind = ModelKind::kTransformer;
  double params = 0;  // N
  TransformerShape shape;
  CnnShape cnn;
  std::string shape_note;      // where the shape comes from, for the output
  std::string source;          // URL of a preset's published configuration
  double default_samples = 0;  // CNN presets: a standard schedule (0 = none)
  std::string default_samples_note;
};

// What the user typed beyond the model name; anything set replaces the preset's or
// derived value.
struct ModelOverrides {
  std::optional<ModelKind> kind;
  std::optional<int> layers;
  std::optional<int64_t> hidden;
  std::optional<int> heads;
  std::optional<int> kv_heads;
  std::optional<int64_t> seq;
  std::optional<int64_t> vocab;
  std::optional<double> params;            // when --model names a preset
  std::optional<double> forward_flops;     // CNN, per sample
  std::optional<double> activation_bytes;  // CNN, per sample
};

// How a count of parameters, tokens, samples or FLOPs is typed (--model 70B, --params,
// --tokens 2T, --samples 115M, --flops-per-sample): "7B", "6.74B", "25.6M", "2T",
// "1.5e9", "1000"; decimal suffixes k/K, M, B or G (10^9), T, P; positive, decimals
// allowed, at most 1e30 (core/units' parse_number).
NumberRules model_count_rules();
// A model's size (--model 70B, --params): model_count_rules() of at least 1M
// parameters. Smaller models fit any GPU many times over and their shape cannot be
// derived; "--model 0.0001" is a mistake, not a model.
NumberRules model_size_rules();

// "6.74B", "25.6M", "2T": three significant digits, suffixes model_count_rules() reads.
std::string format_count(double n);

// A preset name ("llama-2-70b", "resnet50"; case, '-', '_', '.' and spaces ignored)
// or a size ("70B"). A bare transformer size takes the shape of the published
// configuration within 10 % of it, else the GPT-3 aspect rule (hidden = 128 ×
// layers, head dimension 128). UsageError for an unknown name or an inconsistent
// shape (heads not dividing hidden, kv_heads not dividing heads).
Model resolve_model(std::string_view name_or_size, const ModelOverrides& overrides);

// Preset ids with a one-line description, for --help and error messages.
std::vector<std::pair<std::string, std::string>> model_presets();

// Training FLOPs per token of a transformer: 6·N + 12·L·h·s (PaLM, Chowdhery et al.
// 2022, appendix B: the model FLOPs that MFU counts; attention over the full s×s).
double transformer_train_flops_per_token(const Model& m);

// Total training FLOPs (model FLOPs, recomputation excluded): transformers
// tokens × flops_per_token; CNNs 3 × forward × samples (backward ≈ 2 × forward).
double training_flops(const Model& m, double tokens_or_samples);

}  // namespace gpuvs::advise
