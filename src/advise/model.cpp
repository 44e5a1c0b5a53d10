#include "advise/model.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <cmath>

#include "core/error.h"

namespace gpuvs::advise {

namespace {

struct Preset {
  const char* id;
  const char* description;
  ModelKind kind;
  double params;
  TransformerShape shape;
  CnnShape cnn;
  double default_samples;
  const char* default_samples_note;
  const char* source;
};

// ImageNet-1k training set: 1,281,167 images (Russakovsky et al. 2015); the
// ResNet schedule of Goyal et al. 2017 ("Accurate, Large Minibatch SGD") is 90 epochs.
constexpr double kImageNetTrain = 1281167;

// Published configurations. Parameter counts are those of the released checkpoints
// (config.json of the Hugging Face repository); shapes as published.
const std::array<Preset, 5> kPresets = {{
    {"llama-2-7b",
     "Llama 2 7B: 32 layers, hidden 4096, 32 heads, context 4096",
     ModelKind::kTransformer,
     6738415616.0,
     {32, 4096, 32, 32, 4096, 32000},
     {},
     0,
     "",
     "https://huggingface.co/meta-llama/Llama-2-7b-hf/blob/main/config.json (Touvron et al. "
     "2023, arXiv:2307.09288)"},
    {"llama-2-13b",
     "Llama 2 13B: 40 layers, hidden 5120, 40 heads, context 4096",
     ModelKind::kTransformer,
     13015864320.0,
     {40, 5120, 40, 40, 4096, 32000},
     {},
     0,
     "",
     "https://huggingface.co/meta-llama/Llama-2-13b-hf/blob/main/config.json (Touvron et al. "
     "2023, arXiv:2307.09288)"},
    {"llama-2-70b",
     "Llama 2 70B: 80 layers, hidden 8192, 64 heads, 8 KV heads (GQA), context 4096",
     ModelKind::kTransformer,
     68976648192.0,
     {80, 8192, 64, 8, 4096, 32000},
     {},
     0,
     "",
     "https://huggingface.co/meta-llama/Llama-2-70b-hf/blob/main/config.json (Touvron et al. "
     "2023, arXiv:2307.09288)"},
    {"gpt3-175b",
     "GPT-3 175B: 96 layers, hidden 12288, 96 heads, context 2048",
     ModelKind::kTransformer,
     175e9,
     {96, 12288, 96, 96, 2048, 50257},
     {},
     0,
     "",
     "https://arxiv.org/abs/2005.14165 (Brown et al. 2020, table 2.1)"},
    // 4.09 G multiply-adds at 224×224 (torchvision prints it as "GFLOPS 4.09"): 8.18
    // GFLOP. Activations: derived in docs/advise.md from the layer shapes (each
    // convolution's output kept twice, for its batch norm and its ReLU, 16-bit).
    {"resnet50",
     "ResNet-50 v1.5 at 224x224: 25.6M parameters, 8.18 GFLOP forward per image",
     ModelKind::kCnn,
     25557032.0,
     {},
     {8.18e9, 44.5e6},
     90 * kImageNetTrain,
     "90 epochs of ImageNet-1k (1,281,167 images), the schedule of Goyal et al. 2017",
     "https://pytorch.org/vision/stable/models/generated/torchvision.models.resnet50.html"},
}};

std::string normalise(std::string_view s) {
  std::string out;
  for (char c : s) {
    if (c == '-' || c == '_' || c == ' ' || c == '.') continue;
    out += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  }
  return out;
}

std::string trim(std::string_view s) {
  size_t b = 0;
  size_t e = s.size();
  while (b < e && std::isspace(static_cast<unsigned char>(s[b])))
    ++b;
  while (e > b && std::isspace(static_cast<unsigned char>(s[e - 1])))
    --e;
  return std::string(s.substr(b, e - b));
}

const Preset* find_preset(std::string_view name) {
  const std::string want = normalise(name);
  for (const Preset& p : kPresets) {
    if (normalise(p.id) == want) return &p;
  }
  // Common spellings: "llama2-7b" is covered by normalising; "resnet-50" too.
  if (want == "gpt3" || want == "gpt3175b") return &kPresets[3];
  return nullptr;
}

std::string preset_list() {
  std::vector<std::string> ids;
  for (const Preset& p : kPresets)
    ids.emplace_back(p.id);
  return fmt::format("{}", fmt::join(ids, ", "));
}

void check_shape(const Model& m) {
  const TransformerShape& s = m.shape;
  if (s.layers <= 0 || s.hidden <= 0 || s.heads <= 0 || s.kv_heads <= 0 || s.seq <= 0 ||
      s.vocab <= 0)
    throw UsageError("model shape: layers, hidden, heads, kv-heads, seq and vocab must be > 0");
  if (s.hidden % s.heads != 0)
    throw UsageError(
        fmt::format("model shape: --heads {} does not divide --hidden {}", s.heads, s.hidden));
  if (s.heads % s.kv_heads != 0)
    throw UsageError(
        fmt::format("model shape: --kv-heads {} does not divide --heads {}", s.kv_heads, s.heads));
}

// Shape of a transformer known only by its size: 12·L·h² ≈ N (the weights of the
// layers, Kaplan et al. 2020 eq. 2.1) with GPT-3's aspect ratio h = 128·L (175B: 96
// layers, hidden 12288) and head dimension 128.
TransformerShape derive_shape(double params, std::optional<int> layers,
                              std::optional<int64_t> hidden) {
  TransformerShape s;
  if (hidden && layers) {
    s.hidden = *hidden;
    s.layers = *layers;
  } else if (hidden) {
    s.hidden = *hidden;
    s.layers = std::max(
        1, static_cast<int>(std::lround(params / (12.0 * static_cast<double>(*hidden * *hidden)))));
  } else {
    const int l =
        layers ? *layers
               : std::max(1, static_cast<int>(std::lround(std::cbrt(params / (12.0 * 128 * 128)))));
    s.layers = l;
    const double h = layers ? std::sqrt(params / (12.0 * l)) : 128.0 * l;
    s.hidden = std::max<int64_t>(128, std::llround(h / 128.0) * 128);
  }
  s.heads = static_cast<int>(std::max<int64_t>(1, s.hidden / 128));
  if (s.hidden % s.heads != 0) s.heads = 1;
  s.kv_heads = s.heads;
  s.seq = 4096;
  s.vocab = 32000;
  return s;
}

}  // namespace

std::string_view to_string(ModelKind kind) {
  return kind == ModelKind::kCnn ? "cnn" : "transformer";
}

NumberRules model_count_rules() {
  return NumberRules::count().billions().at_most(1e30);
}

NumberRules model_size_rules() {
  return model_count_rules().at_least(1e6);
}

std::string format_count(double n) {
  static constexpr std::array<std::pair<double, const char*>, 4> kScales = {
      {{1e12, "T"}, {1e9, "B"}, {1e6, "M"}, {1e3, "k"}}};
  for (const auto& [scale, suffix] : kScales) {
    if (std::fabs(n) >= scale * 0.9995) {
      const double v = n / scale;
      return fmt::format("{:.{}f}{}", v, v >= 100 ? 0 : (v >= 10 ? 1 : 2), suffix);
    }
  }
  return fmt::format("{:.3g}", n);
}

std::vector<std::pair<std::string, std::string>> model_presets() {
  std::vector<std::pair<std::string, std::string>> out;
  for (const Preset& p : kPresets)
    out.emplace_back(p.id, p.description);
  return out;
}

Model resolve_model(std::string_view name_or_size, const ModelOverrides& o) {
  const std::string name = trim(name_or_size);
  if (name.empty()) throw UsageError("--model: give a preset (" + preset_list() + ") or a size");
  Model m;
  m.name = name;
  if (const Preset* p = find_preset(name)) {
    if (o.kind && *o.kind != p->kind)
      throw UsageError(
          fmt::format("--kind {}: {} is a {}", to_string(*o.kind), p->id, to_string(p->kind)));
    m.name = p->id;
    m.kind = p->kind;
    m.params = p->params;
    m.shape = p->shape;
    m.cnn = p->cnn;
    m.source = p->source;
    m.default_samples = p->default_samples;
    m.default_samples_note = p->default_samples_note;
    m.shape_note = fmt::format("published configuration of {}", p->id);
    if (o.params) m.params = *o.params;
  } else {
    const bool looks_like_size =
        !name.empty() && (std::isdigit(static_cast<unsigned char>(name[0])) || name[0] == '.' ||
                          name[0] == '-' || name[0] == '+');
    if (!looks_like_size)
      throw UsageError(fmt::format("--model: unknown model '{}' (presets: {}; or a size: 7B, 70B)",
                                   name, preset_list()));
    m.params = option_number("--model", name, model_size_rules().eg("7B, 70B, 25.6M")).value;
    m.kind = o.kind.value_or(ModelKind::kTransformer);
    if (m.kind == ModelKind::kTransformer) {
      const Preset* near = nullptr;
      for (const Preset& p : kPresets) {
        if (p.kind == ModelKind::kTransformer && std::fabs(p.params / m.params - 1) <= 0.10)
          near = &p;
      }
      if (near && !o.layers && !o.hidden) {
        m.shape = near->shape;
        m.source = near->source;
        m.shape_note = fmt::format(
            "shape of {} (published, {:.2f}B parameters, within 10 % of {}); --layers/--hidden/"
            "--heads/--seq change it",
            near->id, near->params / 1e9, name);
      } else {
        m.shape = derive_shape(m.params, o.layers, o.hidden);
        m.shape_note =
            "derived from the size: 12·L·h² ≈ N with hidden = 128 × layers (GPT-3's aspect) "
            "and head dimension 128; --layers/--hidden/--heads/--seq change it";
      }
    } else {
      m.shape_note = "CNN given by --flops-per-sample and --activation-bytes";
    }
  }
  if (m.kind == ModelKind::kTransformer) {
    if (o.forward_flops || o.activation_bytes)
      throw UsageError(
          "--flops-per-sample and --activation-bytes describe a CNN (--kind cnn); a transformer "
          "is described by its shape");
    const bool custom = o.layers || o.hidden || o.heads || o.kv_heads || o.seq || o.vocab;
    if (o.layers) m.shape.layers = *o.layers;
    if (o.hidden) m.shape.hidden = *o.hidden;
    if (o.heads) {
      m.shape.heads = *o.heads;
      if (!o.kv_heads) m.shape.kv_heads = *o.heads;
    } else if (o.hidden && !o.kv_heads) {
      m.shape.heads = static_cast<int>(std::max<int64_t>(1, m.shape.hidden / 128));
      if (m.shape.hidden % m.shape.heads != 0) m.shape.heads = 1;
      m.shape.kv_heads = m.shape.heads;
    }
    if (o.kv_heads) m.shape.kv_heads = *o.kv_heads;
    if (o.seq) m.shape.seq = *o.seq;
    if (o.vocab) m.shape.vocab = *o.vocab;
    if (custom) m.shape_note += " (with the shape options given)";
    check_shape(m);
  } else {
    if (o.layers || o.hidden || o.heads || o.kv_heads || o.seq || o.vocab)
      throw UsageError("--layers/--hidden/--heads/--kv-heads/--seq/--vocab describe a transformer");
    if (o.forward_flops) m.cnn.forward_flops = *o.forward_flops;
    if (o.activation_bytes) m.cnn.activation_bytes = *o.activation_bytes;
    if (m.cnn.forward_flops <= 0)
      throw UsageError("a CNN needs --flops-per-sample (forward FLOPs of one sample, e.g. 8.2G)");
    if (m.cnn.activation_bytes <= 0)
      throw UsageError(
          "a CNN needs --activation-bytes (bytes kept for backward per sample, e.g. 45MB)");
  }
  return m;
}

double transformer_train_flops_per_token(const Model& m) {
  const TransformerShape& s = m.shape;
  return 6.0 * m.params +
         12.0 * s.layers * static_cast<double>(s.hidden) * static_cast<double>(s.seq);
}

double training_flops(const Model& m, double tokens_or_samples) {
  if (m.kind == ModelKind::kCnn) return 3.0 * m.cnn.forward_flops * tokens_or_samples;
  return transformer_train_flops_per_token(m) * tokens_or_samples;
}

}  // namespace gpuvs::advise
