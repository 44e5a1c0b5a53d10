#include "models/llama/shapes.h"

#include <array>
#include <cmath>
#include <numbers>

namespace gpuvs::models::llama {

namespace {

constexpr std::array<Shape, 3> kShapes = {{
    {"1b", "Llama 3.2 1B", 2048, 16, 32, 8, 8192, 128256, true, 500000.0, 131072, 1e-5,
     "huggingface.co/meta-llama/Llama-3.2-1B, config.json", 32.0},
    {"3b", "Llama 3.2 3B", 3072, 28, 24, 8, 8192, 128256, true, 500000.0, 131072, 1e-5,
     "huggingface.co/meta-llama/Llama-3.2-3B, config.json", 32.0},
    {"8b", "Llama 3.1 8B", 4096, 32, 32, 8, 14336, 128256, false, 500000.0, 131072, 1e-5,
     "huggingface.co/meta-llama/Llama-3.1-8B, config.json", 8.0},
}};

}  // namespace

std::span<const Shape> shapes() {
  return kShapes;
}

std::optional<Shape> find_shape(std::string_view size) {
  for (const Shape& s : kShapes)
    if (s.size == size) return s;
  return std::nullopt;
}

std::string size_list() {
  std::string out;
  for (const Shape& s : kShapes)
    out += (out.empty() ? "" : ", ") + std::string(s.size);
  return out;
}

std::vector<double> rope_inv_freq(const Shape& s) {
  const int d = s.head_dim();
  std::vector<double> f(size_t(d / 2));
  for (int i = 0; i < d / 2; ++i)
    f[size_t(i)] = std::pow(s.rope_theta, -2.0 * i / d);
  if (!(s.rope_factor > 0)) return f;
  const double old_context = s.rope_original_context;
  const double low_wavelen = old_context / s.rope_low_freq_factor;
  const double high_wavelen = old_context / s.rope_high_freq_factor;
  for (double& x : f) {
    const double wavelen = 2 * std::numbers::pi / x;
    if (wavelen > low_wavelen) {
      x /= s.rope_factor;
    } else if (wavelen >= high_wavelen) {
      const double smooth = (old_context / wavelen - s.rope_low_freq_factor) /
                            (s.rope_high_freq_factor - s.rope_low_freq_factor);
      x = (1 - smooth) * x / s.rope_factor + smooth * x;
    }
  }
  return f;
}

int64_t parameter_count(const Shape& s) {
  const int64_t h = s.hidden;
  const int64_t embedding = int64_t(s.vocab) * h;
  const int64_t attention = h * h + 2 * h * s.kv_dim() + h * h;  // Q, K, V, output
  const int64_t mlp = 3 * h * s.intermediate;                    // gate, up, down
  const int64_t norms = 2 * h;
  return embedding * (s.tied_embeddings ? 1 : 2) + int64_t(s.layers) * (attention + mlp + norms) +
         h;
}

double train_flops_per_token(const Shape& s, int seq, bool causal) {
  const double attention = 12.0 * s.layers * s.hidden * double(seq);
  return 6.0 * double(parameter_count(s)) + (causal ? attention / 2 : attention);
}

int64_t kv_bytes_per_token(const Shape& s, int bytes_per_value) {
  return 2 * int64_t(s.layers) * s.kv_dim() * bytes_per_value;
}

int64_t decode_weight_count(const Shape& s) {
  return parameter_count(s) - (s.tied_embeddings ? 0 : int64_t(s.vocab) * s.hidden);
}

double decode_bytes_per_step(const Shape& s, int weight_bytes, int kv_bytes, int batch,
                             int context) {
  return double(decode_weight_count(s)) * weight_bytes +
         double(batch) * double(context) * double(kv_bytes_per_token(s, kv_bytes));
}

double adamw_state_bytes(const Shape& s) {
  return 16.0 * double(parameter_count(s));
}

}  // namespace gpuvs::models::llama
