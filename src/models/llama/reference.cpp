#include "models/llama/reference.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "models/tensor_file.h"

namespace gpuvs::models::llama {

namespace {

// y (rows, out) = x (rows, in) W^T, W (out, in).
std::vector<float> linear(const std::vector<float>& x, const std::vector<float>& w, int64_t rows,
                          int64_t in, int64_t out) {
  std::vector<float> y(size_t(rows * out));
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t o = 0; o < out; ++o) {
      double s = 0;
      for (int64_t i = 0; i < in; ++i)
        s += double(x[size_t(r * in + i)]) * double(w[size_t(o * in + i)]);
      y[size_t(r * out + o)] = float(s);
    }
  return y;
}

std::vector<float> rms_norm(const std::vector<float>& x, const std::vector<float>& w, int64_t rows,
                            int64_t c, double eps) {
  std::vector<float> y(x.size());
  for (int64_t r = 0; r < rows; ++r) {
    double sq = 0;
    for (int64_t i = 0; i < c; ++i)
      sq += double(x[size_t(r * c + i)]) * double(x[size_t(r * c + i)]);
    const double rstd = 1.0 / std::sqrt(sq / double(c) + eps);
    for (int64_t i = 0; i < c; ++i)
      y[size_t(r * c + i)] = float(double(w[size_t(i)]) * double(x[size_t(r * c + i)]) * rstd);
  }
  return y;
}

// Rotates `heads` heads of size d in each row of x (rows, width) from column `first`,
// row r at position r % seq.
void rope(std::vector<float>& x, int64_t rows, int64_t width, int64_t first, int heads, int d,
          int seq, const std::vector<double>& inv_freq) {
  const int half = d / 2;
  for (int64_t r = 0; r < rows; ++r) {
    const int p = int(r % seq);
    for (int h = 0; h < heads; ++h) {
      float* v = &x[size_t(r * width + first + int64_t(h) * d)];
      for (int i = 0; i < half; ++i) {
        // FP32 angle, as transformers computes it.
        const float angle = float(p) * float(inv_freq[size_t(i)]);
        const double c = std::cos(double(angle)), s = std::sin(double(angle));
        const double x1 = v[i], x2 = v[i + half];
        v[i] = float(x1 * c - x2 * s);
        v[i + half] = float(x2 * c + x1 * s);
      }
    }
  }
}

}  // namespace

std::vector<float> reference_logits(const Shape& s, const HostWeights& w,
                                    const std::vector<int32_t>& tokens, int batch, int seq,
                                    const Fp8Rounding& fp8) {
  const int64_t c = s.hidden, rows = int64_t(batch) * seq, d = s.head_dim();
  const int64_t qd = int64_t(s.heads) * d, kvd = s.kv_dim(), inter = s.intermediate;
  if (tokens.size() != size_t(rows)) throw std::invalid_argument("reference_logits: tokens");
  const std::vector<double> inv_freq = rope_inv_freq(s);
  std::vector<float> x(size_t(rows * c));
  for (int64_t r = 0; r < rows; ++r)
    std::copy_n(&w.embed[size_t(int64_t(tokens[size_t(r)]) * c)], c, &x[size_t(r * c)]);

  const int group = s.heads / s.kv_heads;
  if (!fp8.input_scales.empty() && fp8.input_scales.size() != 4 * w.layers.size())
    throw std::invalid_argument("reference_logits: 4 input scales per layer");
  // The projection k input of layer l, rounded where Fp8Rounding says.
  auto input = [&](std::vector<float> t, size_t l, int k, int64_t cols) {
    if (fp8.input_scales.empty()) return t;
    const float scale = fp8.input_scales[4 * l + size_t(k)];
    for (int64_t r = 0; r < rows; ++r) {
      if (r % seq >= fp8.rounded_positions) continue;
      for (int64_t i = 0; i < cols; ++i) {
        float& e = t[size_t(r * cols + i)];
        e = round_to_e4m3(e * scale) / scale;
      }
    }
    return t;
  };
  for (size_t li = 0; li < w.layers.size(); ++li) {
    const HostWeights::Layer& l = w.layers[li];
    const std::vector<float> h = input(rms_norm(x, l.attn_norm, rows, c, s.rms_norm_eps), li, 0, c);
    std::vector<float> q = linear(h, l.wq, rows, c, qd);
    std::vector<float> k = linear(h, l.wk, rows, c, kvd);
    std::vector<float> v = linear(h, l.wv, rows, c, kvd);
    rope(q, rows, qd, 0, s.heads, int(d), seq, inv_freq);
    rope(k, rows, kvd, 0, s.kv_heads, int(d), seq, inv_freq);
    if (fp8.cache) {
      for (std::vector<float>* t : {&k, &v})
        for (float& e : *t)
          e = round_to_e4m3(e / fp8.cache_scale) * fp8.cache_scale;
    }
    std::vector<float> o(size_t(rows * qd));
    const double scale = 1.0 / std::sqrt(double(d));
    std::vector<double> p(static_cast<size_t>(seq));
    for (int b = 0; b < batch; ++b)
      for (int hd = 0; hd < s.heads; ++hd) {
        const int g = hd / group;
        for (int t = 0; t < seq; ++t) {
          const int64_t qr = int64_t(b) * seq + t;
          double mx = -INFINITY;
          for (int j = 0; j <= t; ++j) {
            const int64_t kr = int64_t(b) * seq + j;
            double dot = 0;
            for (int64_t e = 0; e < d; ++e)
              dot +=
                  double(q[size_t(qr * qd + hd * d + e)]) * double(k[size_t(kr * kvd + g * d + e)]);
            p[size_t(j)] = dot * scale;
            mx = std::max(mx, p[size_t(j)]);
          }
          double sum = 0;
          for (int j = 0; j <= t; ++j)
            sum += (p[size_t(j)] = std::exp(p[size_t(j)] - mx));
          for (int64_t e = 0; e < d; ++e) {
            double acc = 0;
            for (int j = 0; j <= t; ++j)
              acc += p[size_t(j)] * double(v[size_t((int64_t(b) * seq + j) * kvd + g * d + e)]);
            o[size_t(qr * qd + hd * d + e)] = float(acc / sum);
          }
        }
      }
    const std::vector<float> attn = linear(input(std::move(o), li, 1, qd), l.wo, rows, qd, c);
    for (size_t i = 0; i < x.size(); ++i)
      x[i] += attn[i];
    const std::vector<float> h2 = input(rms_norm(x, l.mlp_norm, rows, c, s.rms_norm_eps), li, 2, c);
    const std::vector<float> gate = linear(h2, l.gate, rows, c, inter);
    const std::vector<float> up = linear(h2, l.up, rows, c, inter);
    std::vector<float> a(gate.size());
    for (size_t i = 0; i < a.size(); ++i)
      a[i] = float(double(gate[i]) / (1.0 + std::exp(-double(gate[i]))) * double(up[i]));
    const std::vector<float> down =
        linear(input(std::move(a), li, 3, inter), l.down, rows, inter, c);
    for (size_t i = 0; i < x.size(); ++i)
      x[i] += down[i];
  }
  const std::vector<float> hf = rms_norm(x, w.final_norm, rows, c, s.rms_norm_eps);
  return linear(hf, w.lm_head.empty() ? w.embed : w.lm_head, rows, c, s.vocab);
}

}  // namespace gpuvs::models::llama
