// The Llama decoder's training kernels (models/llama/train_kernels.h) against host
// computations in double at small shapes: RMSNorm forward (and bit for bit against
// llama::rms_norm) and backward (residual add, aliasing, dw accumulated or
// overwritten, deterministic), the rotary split forward and backward (and backward
// as the transpose of forward), the SwiGLU backward (and the host formula against
// finite differences), the synthetic batch; the host argument checks. Skipped without
// a GPU, but for the argument checks, which launch nothing.
//
// Tolerances: each kernel computes in FP32 from the stored values and rounds where
// the header says; the host reference computes in double and rounds at the same
// places (round_to). In fp32 the two differ by FP32's own rounding (a few 1e-7 of
// the magnitudes involved); in bf16 a rounding of the kernel's FP32 value and of the
// host's double can fall on the two sides of a rounding boundary and then differ by
// one bf16 unit, 2^-7 of the value at most (8 significant bits), so each bf16 bound is
// a count of such units, said where it is set. Where the rounding is mirrored the
// bf16 results must also equal the host's exactly almost everywhere (a flip needs the
// FP32 value within ~1e-6 relative of a boundary): that fraction checks that the
// kernel rounds where the header says, which a tolerance of a unit or two cannot.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <iterator>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "core/error.h"
#include "fp8_cast_check.h"
#include "gpu/check.h"
#include "gpu/device.h"
#include "gpu_test_util.h"
#include "models/bert/fp8.h"
#include "models/bert/kernels.h"
#include "models/llama/kernels.h"
#include "models/llama/train_kernels.h"

namespace gpuvs::models::llama {
namespace {

const char* type_name(DType t) {
  return t == DType::kF32 ? "fp32" : t == DType::kF16 ? "fp16" : "bf16";
}

// v rounded to the storage type as the GPU rounds an FP32 value (round to nearest
// even); fp32 and bf16 only.
double round_to(DType t, double v) {
  const float f = static_cast<float>(v);
  if (t == DType::kF32 || std::isnan(f)) return f;
  EXPECT_EQ(t, DType::kBF16) << "round_to: fp32 or bf16";
  uint32_t u;
  std::memcpy(&u, &f, 4);
  u += 0x7FFFu + ((u >> 16) & 1u);
  u &= 0xFFFF0000u;
  float r;
  std::memcpy(&r, &u, 4);
  return r;
}

// Bounds relative to the result: fp32, and bf16 in units of its rounding (2^-7, the
// largest relative spacing of 8-bit significands).
constexpr double kBf16Unit = 0x1p-7;

std::vector<float> random_values(size_t n, std::mt19937& gen, float mean, float sd) {
  std::normal_distribution<float> dist(mean, sd);
  std::vector<float> v(n);
  for (float& e : v)
    e = dist(gen);
  return v;
}

// dst (n values of t) = v rounded on the GPU; returns the values dst holds.
std::vector<float> put(void* dst, const std::vector<float>& v, DType t);

// The n values of t at src, as floats.
std::vector<float> get(const void* src, size_t n, DType t) {
  DeviceBuffer f(n * 4);
  bert::cast_to_float(src, f.as<float>(), int64_t(n), t, nullptr);
  std::vector<float> out(n);
  GPUVS_CUDA_CHECK(cudaMemcpy(out.data(), f.get(), n * 4, cudaMemcpyDeviceToHost));
  return out;
}

std::vector<float> put(void* dst, const std::vector<float>& v, DType t) {
  DeviceBuffer f(v.size() * 4);
  GPUVS_CUDA_CHECK(cudaMemcpy(f.get(), v.data(), v.size() * 4, cudaMemcpyHostToDevice));
  bert::cast_from_float(f.as<float>(), dst, int64_t(v.size()), t, nullptr);
  return get(dst, v.size(), t);
}

DeviceBuffer tensor(size_t n, DType t) {
  return DeviceBuffer(n * dtype_size(t));
}

std::vector<float> get_floats(const float* src, size_t n) {
  std::vector<float> out(n);
  GPUVS_CUDA_CHECK(cudaMemcpy(out.data(), src, n * 4, cudaMemcpyDeviceToHost));
  return out;
}

std::vector<uint8_t> get_bytes(const void* src, size_t bytes) {
  std::vector<uint8_t> out(bytes);
  GPUVS_CUDA_CHECK(cudaMemcpy(out.data(), src, bytes, cudaMemcpyDeviceToHost));
  return out;
}

// Counts the elements outside |got - ref| <= tol (NaN fails), the worst ratio, and
// how many equal `mirrored` (the host's value with the kernel's roundings) exactly.
struct Tally {
  explicit Tally(std::string w) : what(std::move(w)) {}
  std::string what;
  int64_t n = 0, bad = 0, exact = 0;
  double worst = 0;

  void add(double got, double ref, double tol, int64_t i, double mirrored) {
    ++n;
    exact += got == mirrored;
    const double excess = std::fabs(got - ref) / std::max(tol, 1e-30);
    if (excess > worst || std::isnan(excess)) worst = excess;
    if (!(excess <= 1.0)) {
      if (bad < 5)
        ADD_FAILURE() << what << " element " << i << ": " << got << " vs " << ref << " (tol " << tol
                      << ")";
      ++bad;
    }
  }
  void add(double got, double ref, double tol, int64_t i) { add(got, ref, tol, i, ref); }
  double exact_fraction() const { return n ? double(exact) / double(n) : 0.0; }
  void finish() const {
    std::printf("llama-train-check %s: %lld values, worst |err| / tol %.3f, exact %.5f\n",
                what.c_str(), (long long)n, worst, exact_fraction());
    EXPECT_GT(n, 0) << what;
    EXPECT_EQ(bad, 0) << what << ": worst |err| / tol " << worst;
  }
};

// ---- RMSNorm forward ---------------------------------------------------------------

// rstd against the double rsqrt(mean(x^2) + eps) within 1e-5 relative (an FP32 sum of
// C <= 4096 positive terms, 16 a thread then a tree of 8 and 3 levels: under 2e-6,
// halved by the square root, and rsqrtf's 2 units); y against w * round(x * rstd),
// rounded, with the host's rstd: fp32 1e-5 relative (that rstd's error), bf16 two
// units (round(x * rstd) may flip by one, the product rounds again) and at least 99 %
// exact; and y bit for bit llama::rms_norm's in every type (fp16 included). C 3072
// gives threads one or two vectors; the rows get different scales.
TEST(LlamaTrainKernels, RmsNormForwardMatchesTheHostAndRmsNorm) {
  GPUVS_REQUIRE_GPU();
  constexpr int64_t kRows = 16;  // B 2, T 8
  constexpr float kEps = 1e-5f;
  std::mt19937 gen(11);
  for (const DType t : {DType::kF32, DType::kBF16, DType::kF16}) {
    for (const int c : {256, 3072, 4096}) {
      const size_t n = size_t(kRows) * c;
      std::vector<float> x = random_values(n, gen, 0.0f, 1.0f);
      for (size_t i = 0; i < n; ++i)
        x[i] *= 0.25f + 0.3f * float(i / size_t(c));
      DeviceBuffer dx = tensor(n, t), dw = tensor(size_t(c), t), dy = tensor(n, t),
                   dy2 = tensor(n, t), drstd(kRows * 4);
      x = put(dx.get(), x, t);
      const std::vector<float> w = put(dw.get(), random_values(size_t(c), gen, 1.0f, 0.3f), t);
      rms_norm_forward_train(dx.get(), dw.get(), dy.get(), drstd.as<float>(), kRows, c, kEps, t,
                             nullptr);
      rms_norm(dx.get(), dw.get(), dy2.get(), kRows, c, kEps, t, nullptr);
      GPUVS_CUDA_CHECK(cudaDeviceSynchronize());
      const std::string what =
          std::string("rms forward ") + type_name(t) + " C " + std::to_string(c);
      const std::vector<uint8_t> a = get_bytes(dy.get(), n * dtype_size(t));
      const std::vector<uint8_t> b = get_bytes(dy2.get(), n * dtype_size(t));
      EXPECT_TRUE(a == b) << what << ": y differs from llama::rms_norm's";
      if (t == DType::kF16) continue;  // the host rounds to fp32 and bf16 only
      const std::vector<float> y = get(dy.get(), n, t);
      const std::vector<float> rstd = get_floats(drstd.as<float>(), kRows);
      Tally tr{what + " rstd"}, ty{what + " y"};
      for (int64_t r = 0; r < kRows; ++r) {
        double sq = 0;
        for (int j = 0; j < c; ++j)
          sq += double(x[size_t(r * c + j)]) * x[size_t(r * c + j)];
        const double rs = 1.0 / std::sqrt(sq / c + double(kEps));
        tr.add(rstd[size_t(r)], rs, 1e-5 * rs, r);
        for (int j = 0; j < c; ++j) {
          const size_t i = size_t(r * c + j);
          const double ref = round_to(t, w[size_t(j)] * round_to(t, x[i] * rs));
          const double rtol = t == DType::kF32 ? 1e-5 : 2 * kBf16Unit;
          ty.add(y[i], ref, rtol * std::fabs(ref), int64_t(i));
        }
      }
      tr.finish();
      ty.finish();
      if (t == DType::kBF16) {
        EXPECT_GE(ty.exact_fraction(), 0.99) << what;
      }
    }
  }
}

// ---- RMSNorm backward --------------------------------------------------------------

enum class DxMode { kPlain, kResidual, kResidualAliased, kOverDy };

const char* mode_name(DxMode m) {
  switch (m) {
    case DxMode::kPlain:
      return "plain";
    case DxMode::kResidual:
      return "+residual";
    case DxMode::kResidualAliased:
      return "+residual in place";
    case DxMode::kOverDy:
      return "in place over dy";
  }
  return "?";
}

struct NormBwdCase {
  DType dtype;
  int c;
  int64_t rows;
  DxMode mode;
  bool accumulate;
};

// The backward against the header's formula in double, with the forward's rstd (the
// input the backward is given) and the kernel's roundings: g = round(dy * w),
// dx = round(rstd (g - n mean(g n))), then round(dres + dx). dx bound: fp32 1e-6,
// bf16 one unit, of |ref| + |the unrounded dx| (one flip of the inner rounding, one of
// the outer), plus 1e-5 of rstd (|g| + |n| (|mean| + mean |g n|)), what FP32 loses to
// the cancellation in g - n mean; bf16 at least 98 % exact. dw: the prior (accumulate)
// plus the column sum of dy * round(n), within 1e-5 of the sum of |terms| (an FP32 sum
// of at most 200 rows in blocks of 8 and more, then 25 partials). Without accumulate
// dw starts as NaN: it must not be read. Rows 16, 40 and 200 take 2, 5 and 25 blocks.
void check_norm_backward(const NormBwdCase& k, std::mt19937& gen) {
  const DType t = k.dtype;
  const int c = k.c;
  const int64_t rows = k.rows;
  const size_t n = size_t(rows) * c;
  constexpr float kEps = 1e-5f;
  const std::string what = std::string("rms backward ") + type_name(t) + " C " + std::to_string(c) +
                           " rows " + std::to_string(rows) + " " + mode_name(k.mode) +
                           (k.accumulate ? " dw+=" : " dw=");
  DeviceBuffer dx_in = tensor(n, t), dw_in = tensor(size_t(c), t), ddy = tensor(n, t),
               ddres = tensor(n, t), ddx = tensor(n, t), dyf = tensor(n, t),
               drstd(size_t(rows) * 4), ddw(size_t(c) * 4);
  DeviceBuffer partials(size_t(rms_norm_partial_floats(rows, c)) * 4);
  const std::vector<float> x = put(dx_in.get(), random_values(n, gen, 0.0f, 1.5f), t);
  const std::vector<float> w = put(dw_in.get(), random_values(size_t(c), gen, 1.0f, 0.3f), t);
  const std::vector<float> dy = put(ddy.get(), random_values(n, gen, 0.0f, 1.0f), t);
  const bool residual = k.mode == DxMode::kResidual || k.mode == DxMode::kResidualAliased;
  const std::vector<float> dres =
      residual ? put(ddres.get(), random_values(n, gen, 0.0f, 1.0f), t) : std::vector<float>();
  rms_norm_forward_train(dx_in.get(), dw_in.get(), dyf.get(), drstd.as<float>(), rows, c, kEps, t,
                         nullptr);
  std::vector<float> prior(static_cast<size_t>(c));
  for (int j = 0; j < c; ++j)
    prior[size_t(j)] = 0.5f - 0.25f * float(j % 7);
  if (k.accumulate)
    GPUVS_CUDA_CHECK(cudaMemcpy(ddw.get(), prior.data(), prior.size() * 4, cudaMemcpyHostToDevice));
  else
    GPUVS_CUDA_CHECK(cudaMemset(ddw.get(), 0xFF, size_t(c) * 4));  // NaN
  RmsNormBackwardArgs a;
  a.rows = rows;
  a.c = c;
  a.dtype = t;
  a.dy = ddy.get();
  a.x = dx_in.get();
  a.w = dw_in.get();
  a.rstd = drstd.as<float>();
  a.dres = residual ? ddres.get() : nullptr;
  a.dx = k.mode == DxMode::kResidualAliased ? ddres.get()
         : k.mode == DxMode::kOverDy        ? ddy.get()
                                            : ddx.get();
  a.dw = ddw.as<float>();
  a.accumulate = k.accumulate;
  a.partials = partials.as<float>();
  rms_norm_backward(a, nullptr);
  GPUVS_CUDA_CHECK(cudaDeviceSynchronize());
  const std::vector<float> dx = get(a.dx, n, t);
  const std::vector<float> dw = get_floats(ddw.as<float>(), size_t(c));
  const std::vector<float> rstd = get_floats(drstd.as<float>(), size_t(rows));

  const double rtol = t == DType::kF32 ? 1e-6 : kBf16Unit;
  Tally tdx{what + " dx"}, tdw{what + " dw"};
  std::vector<double> col(static_cast<size_t>(c), 0.0), col_abs(static_cast<size_t>(c), 0.0),
      g(static_cast<size_t>(c)), nn(static_cast<size_t>(c));
  for (int64_t r = 0; r < rows; ++r) {
    const double rs = rstd[size_t(r)];
    double sum = 0, sum_abs = 0;
    for (int j = 0; j < c; ++j) {
      const size_t i = size_t(r * c + j);
      nn[size_t(j)] = x[i] * rs;
      g[size_t(j)] = round_to(t, double(dy[i]) * w[size_t(j)]);
      sum += g[size_t(j)] * nn[size_t(j)];
      sum_abs += std::fabs(g[size_t(j)] * nn[size_t(j)]);
      const double term = dy[i] * round_to(t, nn[size_t(j)]);
      col[size_t(j)] += term;
      col_abs[size_t(j)] += std::fabs(term);
    }
    const double mean = sum / c, mean_abs = sum_abs / c;
    for (int j = 0; j < c; ++j) {
      const size_t i = size_t(r * c + j);
      const double raw = rs * (g[size_t(j)] - nn[size_t(j)] * mean);
      double ref = round_to(t, raw), unrounded = raw;
      if (residual) {
        ref = round_to(t, dres[i] + ref);
        unrounded = dres[i] + raw;
      }
      const double lost =
          rs * (std::fabs(g[size_t(j)]) + std::fabs(nn[size_t(j)]) * (std::fabs(mean) + mean_abs));
      const double tol =
          rtol * (std::fabs(ref) + std::fabs(unrounded) + std::fabs(raw)) + 1e-5 * lost;
      tdx.add(dx[i], ref, tol, int64_t(i));
    }
  }
  for (int j = 0; j < c; ++j) {
    const double p = k.accumulate ? prior[size_t(j)] : 0.0;
    tdw.add(dw[size_t(j)], p + col[size_t(j)], 1e-5 * (std::fabs(p) + col_abs[size_t(j)]), j);
  }
  tdx.finish();
  tdw.finish();
  if (t == DType::kBF16) {
    EXPECT_GE(tdx.exact_fraction(), 0.98) << what;
  }
}

TEST(LlamaTrainKernels, RmsNormBackwardMatchesTheHost) {
  GPUVS_REQUIRE_GPU();
  std::mt19937 gen(23);
  const struct {
    int c;
    int64_t rows;
  } shapes[] = {{256, 16}, {3072, 40}, {4096, 200}};
  const DxMode modes[] = {DxMode::kPlain, DxMode::kResidual, DxMode::kResidualAliased,
                          DxMode::kOverDy};
  int n = 0;
  for (const DType t : {DType::kF32, DType::kBF16})
    for (const auto& s : shapes)
      for (const DxMode m : modes)
        check_norm_backward({t, s.c, s.rows, m, (n++ % 2) == 1}, gen);
}

// Two runs over the same inputs give the same bits (no atomics; partials reduced in a
// fixed order), and accumulating a run onto a run's dw gives exactly twice it (the
// same column sums added to themselves: exact in FP32).
TEST(LlamaTrainKernels, RmsNormBackwardIsDeterministic) {
  GPUVS_REQUIRE_GPU();
  constexpr int64_t kRows = 1000;
  constexpr int kC = 2048;
  constexpr DType t = DType::kBF16;
  const size_t n = size_t(kRows) * kC;
  std::mt19937 gen(5);
  DeviceBuffer dx_in = tensor(n, t), dw_in = tensor(kC, t), ddy = tensor(n, t),
               ddres = tensor(n, t), ddx = tensor(n, t), dyf = tensor(n, t), drstd(kRows * 4),
               ddw(kC * 4), partials(size_t(rms_norm_partial_floats(kRows, kC)) * 4);
  put(dx_in.get(), random_values(n, gen, 0.0f, 1.0f), t);
  put(dw_in.get(), random_values(kC, gen, 1.0f, 0.3f), t);
  put(ddy.get(), random_values(n, gen, 0.0f, 1.0f), t);
  put(ddres.get(), random_values(n, gen, 0.0f, 1.0f), t);
  rms_norm_forward_train(dx_in.get(), dw_in.get(), dyf.get(), drstd.as<float>(), kRows, kC, 1e-5f,
                         t, nullptr);
  RmsNormBackwardArgs a;
  a.rows = kRows;
  a.c = kC;
  a.dtype = t;
  a.dy = ddy.get();
  a.x = dx_in.get();
  a.w = dw_in.get();
  a.rstd = drstd.as<float>();
  a.dres = ddres.get();
  a.dx = ddx.get();
  a.dw = ddw.as<float>();
  a.partials = partials.as<float>();
  rms_norm_backward(a, nullptr);
  const std::vector<uint8_t> dx1 = get_bytes(ddx.get(), n * 2);
  const std::vector<float> dw1 = get_floats(ddw.as<float>(), kC);
  GPUVS_CUDA_CHECK(cudaMemset(ddx.get(), 0, n * 2));
  rms_norm_backward(a, nullptr);
  EXPECT_TRUE(get_bytes(ddx.get(), n * 2) == dx1) << "dx differs between runs";
  EXPECT_TRUE(get_floats(ddw.as<float>(), kC) == dw1) << "dw differs between runs";
  a.accumulate = true;
  rms_norm_backward(a, nullptr);
  const std::vector<float> dw2 = get_floats(ddw.as<float>(), kC);
  int64_t off = 0;
  for (int j = 0; j < kC; ++j)
    off += dw2[size_t(j)] != 2.0f * dw1[size_t(j)];
  EXPECT_EQ(off, 0) << "accumulated dw is not exactly twice the overwritten one";
}

// ---- Rotary split ------------------------------------------------------------------

struct RopeCase {
  DType dtype;
  int batch, seq, heads, kv_heads, head_dim;
};

// Forward against the host's rotation in double of the same FP32 angle
// (float(t) * inv_freq[i]), both layouts' indexing written out: fp32 within 2e-6 of
// |x1| + |x2| (sincosf's 2 units, two products and a sum in FP32); bf16 within half a
// unit of |ref| (one rounding of a value that close, 2^-8 |ref|), plus that. The
// values are copied exactly. Backward (from random dq, dk, dv) against the transposed
// rotation the same way; in fp32 <rope(x), y> must equal <x, rope_backward(y)> within
// 1e-5 of the sum of |terms| (the transpose, whatever the reference).
void check_rope(const RopeCase& k, std::mt19937& gen) {
  const DType t = k.dtype;
  const int b_n = k.batch, t_n = k.seq, h_n = k.heads, g_n = k.kv_heads, d = k.head_dim;
  const int half = d / 2, nh = h_n + 2 * g_n;
  const int64_t rows = int64_t(b_n) * t_n;
  const size_t width = size_t(nh) * d, n_tok = size_t(rows) * width;
  const size_t n_q = size_t(rows) * h_n * d, n_k = size_t(rows) * g_n * d;
  const std::string what = std::string("rope ") + type_name(t) + " B " + std::to_string(b_n) +
                           " T " + std::to_string(t_n) + " H " + std::to_string(h_n) + " G " +
                           std::to_string(g_n) + " D " + std::to_string(d);
  std::vector<float> inv_freq(static_cast<size_t>(half));
  for (int i = 0; i < half; ++i)
    inv_freq[size_t(i)] = static_cast<float>(std::pow(10000.0, -2.0 * i / d));
  DeviceBuffer dfreq(size_t(half) * 4), dqkv = tensor(n_tok, t), dq = tensor(n_q, t),
                                        dk = tensor(n_k, t), dv = tensor(n_k, t),
                                        dgrad = tensor(n_tok, t);
  GPUVS_CUDA_CHECK(
      cudaMemcpy(dfreq.get(), inv_freq.data(), inv_freq.size() * 4, cudaMemcpyHostToDevice));
  const std::vector<float> x = put(dqkv.get(), random_values(n_tok, gen, 0.0f, 1.0f), t);
  RopeSplitArgs a;
  a.batch = b_n;
  a.seq = t_n;
  a.heads = h_n;
  a.kv_heads = g_n;
  a.head_dim = d;
  a.dtype = t;
  a.inv_freq = dfreq.as<float>();
  a.qkv = dqkv.get();
  a.q = dq.get();
  a.k = dk.get();
  a.v = dv.get();
  rope_split_forward(a, nullptr);
  GPUVS_CUDA_CHECK(cudaDeviceSynchronize());
  const std::vector<float> q = get(dq.get(), n_q, t), kk = get(dk.get(), n_k, t),
                           v = get(dv.get(), n_k, t);
  // Random gradients into q, k, v, then back into dgrad.
  const std::vector<float> gq = put(dq.get(), random_values(n_q, gen, 0.0f, 1.0f), t);
  const std::vector<float> gk = put(dk.get(), random_values(n_k, gen, 0.0f, 1.0f), t);
  const std::vector<float> gv = put(dv.get(), random_values(n_k, gen, 0.0f, 1.0f), t);
  a.qkv = dgrad.get();
  rope_split_backward(a, nullptr);
  GPUVS_CUDA_CHECK(cudaDeviceSynchronize());
  const std::vector<float> gx = get(dgrad.get(), n_tok, t);

  const double rtol = t == DType::kF32 ? 0.0 : kBf16Unit / 2;
  Tally tf{what + " forward"}, tb{what + " backward"}, tv{what + " values"};
  // The index of (sequence bb, position tt, head hh, column j) in q (hh < H), k or v
  // (head-major), the head counted as in a token-major row.
  const auto head_major = [&](int bb, int tt, int hh, int j) {
    const int nheads = hh < h_n ? h_n : g_n;
    const int local = hh < h_n ? hh : hh < h_n + g_n ? hh - h_n : hh - h_n - g_n;
    return ((size_t(bb) * nheads + local) * t_n + tt) * d + j;
  };
  double dot_fwd = 0, dot_bwd = 0, dot_abs = 0;
  for (int bb = 0; bb < b_n; ++bb) {
    for (int tt = 0; tt < t_n; ++tt) {
      const size_t row = size_t(bb) * t_n + tt;
      for (int hh = 0; hh < nh; ++hh) {
        const std::vector<float>* out = hh < h_n ? &q : hh < h_n + g_n ? &kk : &v;
        const std::vector<float>* grad = hh < h_n ? &gq : hh < h_n + g_n ? &gk : &gv;
        for (int i = 0; i < half; ++i) {
          const size_t o1 = head_major(bb, tt, hh, i), o2 = head_major(bb, tt, hh, i + half);
          const size_t t1 = row * width + size_t(hh) * d + i, t2 = t1 + half;
          const double x1 = x[t1], x2 = x[t2], d1 = (*grad)[o1], d2 = (*grad)[o2];
          if (hh >= h_n + g_n) {
            tv.add((*out)[o1], x1, 0.0, int64_t(o1));
            tv.add((*out)[o2], x2, 0.0, int64_t(o2));
            tv.add(gx[t1], d1, 0.0, int64_t(t1));
            tv.add(gx[t2], d2, 0.0, int64_t(t2));
          } else {
            const float angle = float(tt) * inv_freq[size_t(i)];
            const double cs = std::cos(double(angle)), sn = std::sin(double(angle));
            const double r1 = x1 * cs - x2 * sn, r2 = x2 * cs + x1 * sn;
            const double b1 = d1 * cs + d2 * sn, b2 = d2 * cs - d1 * sn;
            const double lost_f = 2e-6 * (std::fabs(x1) + std::fabs(x2));
            const double lost_b = 2e-6 * (std::fabs(d1) + std::fabs(d2));
            tf.add((*out)[o1], r1, rtol * (std::fabs(r1) + lost_f) + lost_f, int64_t(o1),
                   round_to(t, r1));
            tf.add((*out)[o2], r2, rtol * (std::fabs(r2) + lost_f) + lost_f, int64_t(o2),
                   round_to(t, r2));
            tb.add(gx[t1], b1, rtol * (std::fabs(b1) + lost_b) + lost_b, int64_t(t1),
                   round_to(t, b1));
            tb.add(gx[t2], b2, rtol * (std::fabs(b2) + lost_b) + lost_b, int64_t(t2),
                   round_to(t, b2));
          }
          dot_fwd += double((*out)[o1]) * d1 + double((*out)[o2]) * d2;
          dot_abs += std::fabs(double((*out)[o1]) * d1) + std::fabs(double((*out)[o2]) * d2);
          dot_bwd += x1 * gx[t1] + x2 * gx[t2];
          dot_abs += std::fabs(x1 * gx[t1]) + std::fabs(x2 * gx[t2]);
        }
      }
    }
  }
  tf.finish();
  tb.finish();
  tv.finish();
  if (t == DType::kF32) {
    std::printf("llama-train-check %s: <rope(x), y> %.9g, <x, rope'(y)> %.9g\n", what.c_str(),
                dot_fwd, dot_bwd);
    EXPECT_LE(std::fabs(dot_fwd - dot_bwd), 1e-5 * dot_abs) << what << ": not the transpose";
  } else {
    EXPECT_GE(tf.exact_fraction(), 0.99) << what;
    EXPECT_GE(tb.exact_fraction(), 0.99) << what;
  }
}

// B 2, T 8, H 4, G 2 at D 64 and 128; and 10 heads a row (H 6, G 2: the last step of
// 4 heads half full) over 37 positions at D 128, sequences of three.
TEST(LlamaTrainKernels, RopeSplitMatchesTheHostAndBackwardIsItsTranspose) {
  GPUVS_REQUIRE_GPU();
  std::mt19937 gen(31);
  for (const DType t : {DType::kF32, DType::kBF16}) {
    check_rope({t, 2, 8, 4, 2, 64}, gen);
    check_rope({t, 2, 8, 4, 2, 128}, gen);
    check_rope({t, 3, 37, 6, 2, 128}, gen);
  }
}

// ---- SwiGLU backward ---------------------------------------------------------------

double sigmoid(double x) {
  return 1.0 / (1.0 + std::exp(-x));
}

// The host's derivative of silu, s (1 + x (1 - s)), against central differences of
// x s(x): it is the reference's formula for d_gate, so it is checked first.
TEST(LlamaTrainKernels, SiluDerivativeMatchesFiniteDifferences) {
  constexpr double kH = 1e-5;
  for (const double x : {-30.0, -6.0, -2.0, -1.2784645, -0.5, 0.0, 0.3, 1.0, 2.5, 7.0, 30.0}) {
    const double s = sigmoid(x);
    const double analytic = s * (1 + x * (1 - s));
    const double fd = ((x + kH) * sigmoid(x + kH) - (x - kH) * sigmoid(x - kH)) / (2 * kH);
    EXPECT_NEAR(analytic, fd, 1e-8) << "x = " << x;
  }
}

// Against the header's formula in double with its roundings (round(silu), round(da up)):
// d_up within fp32 4e-6 (expf's and the division's units, a product), bf16 two units
// (round(silu) may flip, the product rounds again) of |ref|; d_gate within fp32 1e-6,
// bf16 one unit, of |ref|, plus 2e-6 of |round(da up)| s (1 + |gate|) (what FP32 loses
// in s (1 + gate (1 - s)): 1 - s near s = 1, the sum near its zero at gate -1.28);
// bf16 at least 98 % exact. Gates from N(0, 3) and a few far out (+-20, +-100: s 0 or 1,
// no NaN). In place over gu too. F 264 is not a multiple of a block's 256 vectors.
TEST(LlamaTrainKernels, SwigluBackwardMatchesTheHost) {
  GPUVS_REQUIRE_GPU();
  constexpr int64_t kRows = 16;
  std::mt19937 gen(41);
  for (const DType t : {DType::kF32, DType::kBF16}) {
    for (const int f : {264, 2048}) {
      for (const bool in_place : {false, true}) {
        const size_t n_gu = size_t(kRows) * 2 * f, n_a = size_t(kRows) * f;
        const std::string what = std::string("swiglu backward ") + type_name(t) + " F " +
                                 std::to_string(f) + (in_place ? " in place" : "");
        std::vector<float> gu0(n_gu);
        {
          const std::vector<float> gate = random_values(n_a, gen, 0.0f, 3.0f);
          const std::vector<float> up = random_values(n_a, gen, 0.0f, 1.0f);
          for (size_t r = 0; r < size_t(kRows); ++r)
            for (size_t j = 0; j < size_t(f); ++j) {
              gu0[r * 2 * f + j] = gate[r * f + j];
              gu0[r * 2 * f + f + j] = up[r * f + j];
            }
          const float far[] = {-100.0f, 100.0f, -20.0f, 20.0f, 0.0f, -1.2784645f};
          for (size_t i = 0; i < std::size(far); ++i)
            gu0[i] = far[i];
        }
        DeviceBuffer dgu = tensor(n_gu, t), dda = tensor(n_a, t), dout = tensor(n_gu, t);
        const std::vector<float> gu = put(dgu.get(), gu0, t);
        const std::vector<float> da = put(dda.get(), random_values(n_a, gen, 0.0f, 1.0f), t);
        void* out = in_place ? dgu.get() : dout.get();
        swiglu_backward(dgu.get(), dda.get(), out, kRows, f, t, nullptr);
        GPUVS_CUDA_CHECK(cudaDeviceSynchronize());
        const std::vector<float> got = get(out, n_gu, t);
        const bool f32 = t == DType::kF32;
        Tally tg{what + " d_gate"}, tu{what + " d_up"};
        for (size_t r = 0; r < size_t(kRows); ++r) {
          for (size_t j = 0; j < size_t(f); ++j) {
            const size_t ig = r * 2 * f + j, iu = ig + size_t(f);
            const double g = gu[ig], u = gu[iu], d = da[r * f + j];
            const double s = sigmoid(g);
            const double act = round_to(t, g * s);
            const double du = round_to(t, d * act);
            const double dact = round_to(t, d * u);
            const double dg = round_to(t, dact * s * (1 + g * (1 - s)));
            tu.add(got[iu], du, (f32 ? 4e-6 : 2 * kBf16Unit) * std::fabs(du), int64_t(iu));
            tg.add(got[ig], dg,
                   (f32 ? 1e-6 : kBf16Unit) * std::fabs(dg) +
                       2e-6 * std::fabs(dact) * s * (1 + std::fabs(g)),
                   int64_t(ig));
          }
        }
        tg.finish();
        tu.finish();
        if (!f32) {
          EXPECT_GE(tg.exact_fraction(), 0.98) << what;
          EXPECT_GE(tu.exact_fraction(), 0.98) << what;
        }
      }
    }
  }
}

// ---- Synthetic batch ---------------------------------------------------------------

// ids are lm_input_id's (the host's and the kernel's one definition), in [0, V);
// labels the next id, -100 at the end of each sequence; the same seed gives the same
// batch again, another seed another batch; the counts of a small vocabulary within 5
// sigma of uniform, the mean of a large one too.
// The fp8 training fuses SwiGLU into the down projection's input cast and SwiGLU's
// gradient into the gate and up projections' gradient cast (bert/fp8.h, kSwiglu and
// kSwigluGrad). Fused and unfused (swiglu or swiglu_backward, then the plain cast)
// agree bit for bit: the bf16 value, every FP8 byte of the cast and of its transpose,
// and the amax. 96 rows leave a partial row tile; F 128 puts the gate's and the up
// projection's gradients in separate column tiles.
TEST(LlamaTrainKernels, FusedSwigluCastsMatchTheUnfusedKernels) {
  GPUVS_REQUIRE_GPU();
  constexpr int64_t kRows = 96, kF = 128;
  std::mt19937 gen(43);
  DeviceBuffer gu = tensor(size_t(kRows * 2 * kF), DType::kBF16),
               da = tensor(size_t(kRows * kF), DType::kBF16);
  put(gu.get(), random_values(size_t(kRows * 2 * kF), gen, 0.0f, 2.0f), DType::kBF16);
  put(da.get(), random_values(size_t(kRows * kF), gen, 0.0f, 1e-3f), DType::kBF16);
  for (const bool grad : {false, true}) {
    const char* what = grad ? "swiglu grad -> e5m2" : "swiglu -> e4m3";
    const int64_t cols = grad ? 2 * kF : kF, n = kRows * cols;
    DeviceBuffer ref16 = tensor(size_t(n), DType::kBF16), fused16 = tensor(size_t(n), DType::kBF16);
    if (grad)
      swiglu_backward(gu.get(), da.get(), ref16.get(), kRows, int(kF), DType::kBF16, nullptr);
    else
      swiglu(gu.get(), ref16.get(), kRows, int(kF), DType::kBF16, nullptr);
    DeviceBuffer out[2] = {DeviceBuffer(size_t(n)), DeviceBuffer(size_t(n))};
    DeviceBuffer out_t[2] = {DeviceBuffer(size_t(n)), DeviceBuffer(size_t(n))};
    DeviceBuffer meta[2] = {DeviceBuffer(sizeof(bert::Fp8Meta)),
                            DeviceBuffer(sizeof(bert::Fp8Meta))};
    bert::Fp8Meta m = bert::fp8_meta_init(grad, true);
    m.scale = grad ? 8192.0f : 4.0f;
    for (int i = 0; i < 2; ++i) {
      GPUVS_CUDA_CHECK(cudaMemcpy(meta[i].get(), &m, sizeof m, cudaMemcpyHostToDevice));
      bert::Fp8CastArgs a;
      a.rows = kRows;
      a.cols = cols;
      a.e5m2 = grad;
      a.out = out[i].as<uint8_t>();
      a.out_t = out_t[i].as<uint8_t>();
      a.meta = meta[i].as<bert::Fp8Meta>();
      if (i == 0) {
        a.src = ref16.get();
      } else {
        a.src = grad ? da.get() : gu.get();
        a.aux = grad ? gu.get() : nullptr;
        a.op = grad ? bert::Fp8CastOp::kSwigluGrad : bert::Fp8CastOp::kSwiglu;
        a.value_out = fused16.get();
      }
      bert::fp8_cast(a, nullptr);
    }
    expect_same_casts(
        {{&ref16, &fused16}, {&out[0], &out[1]}, {&out_t[0], &out_t[1]}, {&meta[0], &meta[1]}}, n,
        "llama-kernels", what);
  }
}

TEST(LlamaTrainKernels, LmInputsAreShiftedIdsFromTheSeed) {
  GPUVS_REQUIRE_GPU();
  const struct {
    int batch, seq, vocab;
    uint64_t seed;
  } cases[] = {{2, 8, 1000, 1}, {4, 512, 128256, 2}, {3, 1, 50, 3}, {8, 1000, 7, 4}};
  for (const auto& k : cases) {
    const size_t n = size_t(k.batch) * k.seq;
    const std::string what = "lm_inputs B " + std::to_string(k.batch) + " T " +
                             std::to_string(k.seq) + " V " + std::to_string(k.vocab);
    DeviceBuffer ids(n * 4), labels(n * 4);
    LmInputArgs a;
    a.batch = k.batch;
    a.seq = k.seq;
    a.vocab = k.vocab;
    a.seed = k.seed;
    a.ids = ids.as<int32_t>();
    a.labels = labels.as<int32_t>();
    const auto run = [&](uint64_t seed) {
      a.seed = seed;
      GPUVS_CUDA_CHECK(cudaMemset(ids.get(), 0xFF, n * 4));
      GPUVS_CUDA_CHECK(cudaMemset(labels.get(), 0xFF, n * 4));
      lm_inputs(a, nullptr);
      std::vector<int32_t> i(n), l(n);
      GPUVS_CUDA_CHECK(cudaMemcpy(i.data(), ids.get(), n * 4, cudaMemcpyDeviceToHost));
      GPUVS_CUDA_CHECK(cudaMemcpy(l.data(), labels.get(), n * 4, cudaMemcpyDeviceToHost));
      return std::pair{i, l};
    };
    const auto [id, label] = run(k.seed);
    int64_t bad_id = 0, bad_label = 0;
    std::vector<int64_t> counts(size_t(k.vocab), 0);
    double sum = 0;
    for (size_t i = 0; i < n; ++i) {
      const bool last = int(i % size_t(k.seq)) == k.seq - 1;
      bad_id += id[i] != lm_input_id(k.seed, i, k.vocab) || id[i] < 0 || id[i] >= k.vocab;
      bad_label += label[i] != (last ? -100 : id[i + 1]);
      if (id[i] >= 0 && id[i] < k.vocab) ++counts[size_t(id[i])];
      sum += id[i];
    }
    EXPECT_EQ(bad_id, 0) << what;
    EXPECT_EQ(bad_label, 0) << what;
    const auto again = run(k.seed);
    EXPECT_TRUE(again.first == id && again.second == label) << what << ": not reproducible";
    const auto other = run(k.seed + 1);
    int64_t same = 0;
    for (size_t i = 0; i < n; ++i)
      same += other.first[i] == id[i];
    if (k.vocab >= 1000 && n >= 1000) {
      EXPECT_LT(same, int64_t(n / 100)) << what;
    }
    if (k.vocab <= 10) {
      const double p = 1.0 / k.vocab, sigma = std::sqrt(double(n) * p * (1 - p));
      for (int v = 0; v < k.vocab; ++v)
        EXPECT_NEAR(double(counts[size_t(v)]), double(n) * p, 5 * sigma) << what << " id " << v;
    }
    if (n >= 1000) {
      const double sigma = k.vocab / std::sqrt(12.0 * double(n));
      EXPECT_NEAR(sum / double(n), (k.vocab - 1) / 2.0, 5 * sigma) << what;
    }
  }
}

// ---- Argument checks ---------------------------------------------------------------

// Each call is refused on the host, naming the function (a CUDA failure would not):
// with zero rows nothing would be launched anyway, so a missing check fails here
// rather than faulting a kernel. Needs no GPU.
template <class F>
void expect_refused(F&& f, const char* fn, const char* what) {
  try {
    f();
    ADD_FAILURE() << fn << " accepted " << what;
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(fn), std::string::npos) << what << ": " << e.what();
  }
}

TEST(LlamaTrainKernels, ArgumentsAreCheckedOnTheHost) {
  alignas(16) static char fake[256];
  void* p = fake;
  void* odd = fake + 2;
  float* fp = reinterpret_cast<float*>(fake);
  const DType t = DType::kBF16;
  const char* fwd = "rms_norm_forward_train";
  expect_refused([&] { rms_norm_forward_train(p, p, p, fp, 0, 200, 1e-5f, t, nullptr); }, fwd,
                 "C 200");
  expect_refused([&] { rms_norm_forward_train(p, p, p, fp, 0, 4352, 1e-5f, t, nullptr); }, fwd,
                 "C 4352");
  expect_refused([&] { rms_norm_forward_train(p, p, p, fp, 0, 0, 1e-5f, t, nullptr); }, fwd, "C 0");
  expect_refused([&] { rms_norm_forward_train(nullptr, p, p, fp, 0, 256, 1e-5f, t, nullptr); }, fwd,
                 "null x");
  expect_refused([&] { rms_norm_forward_train(p, p, p, nullptr, 0, 256, 1e-5f, t, nullptr); }, fwd,
                 "null rstd");
  expect_refused([&] { rms_norm_forward_train(p, p, odd, fp, 0, 256, 1e-5f, t, nullptr); }, fwd,
                 "misaligned y");
  EXPECT_NO_THROW(rms_norm_forward_train(p, p, p, fp, 0, 4096, 1e-5f, t, nullptr));

  const char* bwd = "rms_norm_backward";
  RmsNormBackwardArgs b;
  b.c = 2048;
  b.dtype = t;
  b.dy = b.x = b.w = p;
  b.rstd = fp;
  b.dx = p;
  b.dw = fp;
  b.partials = fp;
  b.accumulate = true;  // zero rows: nothing to do
  EXPECT_NO_THROW(rms_norm_backward(b, nullptr));
  {
    RmsNormBackwardArgs e = b;
    e.c = 8192;
    expect_refused([&] { rms_norm_backward(e, nullptr); }, bwd, "C 8192");
  }
  {
    RmsNormBackwardArgs e = b;
    e.c = 1000;
    expect_refused([&] { rms_norm_backward(e, nullptr); }, bwd, "C 1000");
  }
  {
    RmsNormBackwardArgs e = b;
    e.partials = nullptr;
    expect_refused([&] { rms_norm_backward(e, nullptr); }, bwd, "null partials");
  }
  {
    RmsNormBackwardArgs e = b;
    e.dres = odd;
    expect_refused([&] { rms_norm_backward(e, nullptr); }, bwd, "misaligned dres");
  }

  RopeSplitArgs r;
  r.batch = 0;
  r.seq = 8;
  r.heads = 4;
  r.kv_heads = 2;
  r.head_dim = 128;
  r.dtype = t;
  r.inv_freq = fp;
  r.qkv = r.q = r.k = r.v = p;
  EXPECT_NO_THROW(rope_split_forward(r, nullptr));
  EXPECT_NO_THROW(rope_split_backward(r, nullptr));
  for (const int d : {0, 8, 24, 72, 512}) {
    RopeSplitArgs e = r;
    e.head_dim = d;
    const std::string what = "D " + std::to_string(d);
    expect_refused([&] { rope_split_forward(e, nullptr); }, "rope_split_forward", what.c_str());
    expect_refused([&] { rope_split_backward(e, nullptr); }, "rope_split_backward", what.c_str());
  }
  {
    RopeSplitArgs e = r;
    e.inv_freq = nullptr;
    expect_refused([&] { rope_split_forward(e, nullptr); }, "rope_split_forward", "null inv_freq");
  }
  {
    RopeSplitArgs e = r;
    e.v = nullptr;
    expect_refused([&] { rope_split_backward(e, nullptr); }, "rope_split_backward", "null v");
  }
  {
    RopeSplitArgs e = r;
    e.kv_heads = 0;
    expect_refused([&] { rope_split_forward(e, nullptr); }, "rope_split_forward", "no kv heads");
  }
  {
    RopeSplitArgs e = r;
    e.k = odd;
    expect_refused([&] { rope_split_forward(e, nullptr); }, "rope_split_forward", "misaligned k");
  }

  const char* sw = "swiglu_backward";
  EXPECT_NO_THROW(swiglu_backward(p, p, p, 0, 14336, t, nullptr));
  expect_refused([&] { swiglu_backward(p, p, p, 0, 12, t, nullptr); }, sw, "F 12");
  expect_refused([&] { swiglu_backward(p, p, p, 0, 0, t, nullptr); }, sw, "F 0");
  expect_refused([&] { swiglu_backward(p, nullptr, p, 0, 256, t, nullptr); }, sw, "null da");
  expect_refused([&] { swiglu_backward(p, p, odd, 0, 256, t, nullptr); }, sw, "misaligned dgu");

  LmInputArgs l;
  l.batch = 0;
  l.seq = 8;
  l.vocab = 1000;
  l.ids = l.labels = reinterpret_cast<int32_t*>(fake);
  EXPECT_NO_THROW(lm_inputs(l, nullptr));
  {
    LmInputArgs e = l;
    e.vocab = 0;
    expect_refused([&] { lm_inputs(e, nullptr); }, "lm_inputs", "vocab 0");
  }
  {
    LmInputArgs e = l;
    e.labels = nullptr;
    expect_refused([&] { lm_inputs(e, nullptr); }, "lm_inputs", "null labels");
  }
}

}  // namespace
}  // namespace gpuvs::models::llama
