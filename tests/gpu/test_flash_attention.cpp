// The fused attention kernels (flash_attention.cu) against a host reference in double:
// forward output and log-sum-exp, and dq, dk, dv from a random d_o, for head sizes 64
// and 128, with and without the causal mask, with one key/value head per query head
// and with grouped-query attention; the edges of the no-dropout (mma.sync) path and its
// agreement with the WMMA (dropout) path; that a causal query gives its later keys no
// weight at all; cuDNN's fused attention (models/layers/cudnn_sdpa.h) against the same
// reference; and a printout of both one's throughput at the Llama training shapes.
// Skipped without a GPU.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "gpu/check.h"
#include "gpu/device.h"
#include "gpu_test_util.h"
#include "models/bert/kernels.h"
#include "models/layers/cudnn_sdpa.h"

namespace gpuvs::models {
namespace {

using bert::FlashArgs;
using bert::FlashBackwardArgs;

struct Shape {
  int b = 2, h = 4, g = 4, t = 128, d = 64;
  bool causal = false;
  int64_t q_elems() const { return int64_t(b) * h * t * d; }   // q, o, dq, d_o
  int64_t kv_elems() const { return int64_t(b) * g * t * d; }  // k, v, dk, dv
  int64_t rows() const { return int64_t(b) * h * t; }          // lse, delta
};

std::vector<float> random_values(int64_t n, float stddev, std::mt19937_64& gen) {
  std::normal_distribution<float> dist(0.0f, stddev);
  std::vector<float> v(static_cast<size_t>(n));
  for (float& e : v)
    e = dist(gen);
  return v;
}

// v rounded to dtype on the GPU; v becomes the rounded values (what the kernels read).
DeviceBuffer to_device(std::vector<float>& v, DType dtype) {
  const int64_t n = int64_t(v.size());
  DeviceBuffer f32(v.size() * 4), x(v.size() * dtype_size(dtype));
  GPUVS_CUDA_CHECK(cudaMemcpy(f32.get(), v.data(), v.size() * 4, cudaMemcpyHostToDevice));
  bert::cast_from_float(f32.as<float>(), x.get(), n, dtype, nullptr);
  bert::cast_to_float(x.get(), f32.as<float>(), n, dtype, nullptr);
  GPUVS_CUDA_CHECK(cudaMemcpy(v.data(), f32.get(), v.size() * 4, cudaMemcpyDeviceToHost));
  return x;
}

std::vector<float> to_host(const DeviceBuffer& x, int64_t n, DType dtype) {
  DeviceBuffer f32(size_t(n) * 4);
  bert::cast_to_float(x.get(), f32.as<float>(), n, dtype, nullptr);
  std::vector<float> v(static_cast<size_t>(n));
  GPUVS_CUDA_CHECK(cudaMemcpy(v.data(), f32.get(), v.size() * 4, cudaMemcpyDeviceToHost));
  return v;
}

std::vector<float> floats_to_host(const DeviceBuffer& x, int64_t n) {
  std::vector<float> v(static_cast<size_t>(n));
  GPUVS_CUDA_CHECK(cudaMemcpy(v.data(), x.get(), v.size() * 4, cudaMemcpyDeviceToHost));
  return v;
}

// (B, H, T, D) -> (B, T, H * D), as BERT hands the backward its output and d_o.
std::vector<float> to_tokens(const std::vector<float>& x, const Shape& s) {
  std::vector<float> y(x.size());
  for (int b = 0; b < s.b; ++b)
    for (int h = 0; h < s.h; ++h)
      for (int t = 0; t < s.t; ++t)
        for (int d = 0; d < s.d; ++d)
          y[((size_t(b) * s.t + t) * s.h + h) * s.d + d] =
              x[((size_t(b) * s.h + h) * s.t + t) * s.d + d];
  return y;
}

// The exact attention in double and, for each output element, a bound on what the
// kernels' storage-type roundings may move it by (u: the unit roundoff, 2^-8 bf16 and
// 2^-11 fp16; the kernels' FP32 arithmetic is some 2^-20 and left to the margin):
// - o: P is rounded to the storage type before P V, |o err| <= u sum_j P_ij |v_jd|,
//   plus the rounding of o itself, u |o|.
// - delta = rowsum(d_o o) takes the kernels' rounded o: |delta err| <= sum_d |d_o| eo.
// - dS = P (dP - delta) is rounded before dS K and dS^T Q, and carries P * delta err:
//   |dq err| <= s sum_j (u |dS_ij| + P_ij |delta err_i|) |k_jd| + u |dq|, and
//   |dk err| the same over the queries (and the group's query heads) with |q_id|.
// - dv: P rounded before P^T d_o, |dv err| <= u sum_i P_ij |d_o_id| + u |dv|.
struct Reference {
  std::vector<double> o, lse, dq, dk, dv;
  std::vector<double> eo, edq, edk, edv;
};

Reference reference(const Shape& s, const std::vector<float>& q, const std::vector<float>& k,
                    const std::vector<float>& v, const std::vector<float>& d_o,
                    const std::vector<int32_t>& mask, double scale, double u) {
  Reference r;
  r.o.assign(size_t(s.q_elems()), 0.0);
  r.eo = r.dq = r.edq = r.o;
  r.lse.assign(size_t(s.rows()), 0.0);
  r.dk.assign(size_t(s.kv_elems()), 0.0);
  r.dv = r.edk = r.edv = r.dk;
  const int rep = s.h / s.g, T = s.t, D = s.d;
  std::vector<double> p(size_t(T) * T);  // P of one (b, h), 0 where not attended
  for (int b = 0; b < s.b; ++b) {
    for (int h = 0; h < s.h; ++h) {
      const size_t qb = (size_t(b) * s.h + h) * T * D;
      const size_t kb = (size_t(b) * s.g + h / rep) * T * D;
      for (int i = 0; i < T; ++i) {
        double* pi = &p[size_t(i) * T];
        const int jn = s.causal ? i + 1 : T;
        double m = -INFINITY;
        for (int j = 0; j < T; ++j) {
          pi[j] = -INFINITY;
          if (j >= jn) continue;
          double dot = 0;
          for (int d = 0; d < D; ++d)
            dot += double(q[qb + size_t(i) * D + d]) * k[kb + size_t(j) * D + d];
          pi[j] = dot * scale + (mask.empty() || mask[size_t(b) * T + j] != 0 ? 0.0 : -1e30);
          m = std::max(m, pi[j]);
        }
        double l = 0;
        for (int j = 0; j < jn; ++j) {
          pi[j] = std::exp(pi[j] - m);
          l += pi[j];
        }
        for (int j = 0; j < T; ++j)
          pi[j] = j < jn ? pi[j] / l : 0.0;
        r.lse[(size_t(b) * s.h + h) * T + i] = m + std::log(l);
        for (int d = 0; d < D; ++d) {
          double o = 0, a = 0;
          for (int j = 0; j < jn; ++j) {
            o += pi[j] * v[kb + size_t(j) * D + d];
            a += pi[j] * std::fabs(v[kb + size_t(j) * D + d]);
          }
          r.o[qb + size_t(i) * D + d] = o;
          r.eo[qb + size_t(i) * D + d] = u * (a + std::fabs(o));
        }
      }
      for (int i = 0; i < T; ++i) {
        const size_t qi = qb + size_t(i) * D;
        double delta = 0, ddelta = 0;
        for (int d = 0; d < D; ++d) {
          delta += double(d_o[qi + d]) * r.o[qi + d];
          ddelta += std::fabs(d_o[qi + d]) * r.eo[qi + d];
        }
        for (int j = 0; j < T; ++j) {
          const double pij = p[size_t(i) * T + j];
          if (pij == 0.0) continue;
          const size_t kj = kb + size_t(j) * D;
          double dp = 0;
          for (int d = 0; d < D; ++d)
            dp += double(d_o[qi + d]) * v[kj + d];
          const double ds = pij * (dp - delta);
          const double eds = u * std::fabs(ds) + pij * ddelta;  // dS's error bound
          for (int d = 0; d < D; ++d) {
            r.dq[qi + d] += scale * ds * k[kj + d];
            r.edq[qi + d] += scale * eds * std::fabs(k[kj + d]);
            r.dk[kj + d] += scale * ds * q[qi + d];
            r.edk[kj + d] += scale * eds * std::fabs(q[qi + d]);
            r.dv[kj + d] += pij * d_o[qi + d];
            r.edv[kj + d] += u * pij * std::fabs(d_o[qi + d]);
          }
        }
      }
    }
  }
  const auto round_out = [u](const std::vector<double>& x, std::vector<double>& e) {
    for (size_t i = 0; i < x.size(); ++i)
      e[i] += u * std::fabs(x[i]);
  };
  round_out(r.dq, r.edq);
  round_out(r.dk, r.edk);
  round_out(r.dv, r.edv);
  return r;
}

// max over elements of |got - want| / tol with tol = 2 x bound + 1e-5 max |want| (the
// factor 2 and the floor for the FP32 arithmetic the bound leaves out); > 1 fails.
// `where` gets the worst element's index.
double worst_ratio(const std::vector<float>& got, const std::vector<double>& want,
                   const std::vector<double>& bound, size_t* where) {
  double peak = 0;
  for (const double w : want)
    peak = std::max(peak, std::fabs(w));
  double worst = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    const double tol = 2.0 * bound[i] + 1e-5 * peak;
    const double ratio = std::fabs(double(got[i]) - want[i]) / tol;
    if (!(ratio <= worst)) {  // NaN is the worst
      worst = std::isnan(ratio) ? INFINITY : ratio;
      *where = i;
    }
  }
  return worst;
}

// The GPU tensors of one attention problem and the kernels' results.
struct Attention {
  Shape s;
  DType dtype = DType::kBF16;
  std::vector<float> q, k, v, d_o;
  std::vector<int32_t> mask;  // empty: no padding mask
  DeviceBuffer dq_in, dk_in, dv_in, ddo, dmask;
  std::vector<float> o, lse, dq, dk, dv;  // results
  bool wmma = false;  // the WMMA kernels (the dropout path) instead of the default dispatch

  void upload() {
    dq_in = to_device(q, dtype);
    dk_in = to_device(k, dtype);
    dv_in = to_device(v, dtype);
    ddo = to_device(d_o, dtype);
    if (!mask.empty()) {
      dmask = DeviceBuffer(mask.size() * 4);
      GPUVS_CUDA_CHECK(
          cudaMemcpy(dmask.get(), mask.data(), mask.size() * 4, cudaMemcpyHostToDevice));
    }
  }

  // Forward with lse, then the backward (delta from token-major copies of o and d_o
  // where `tokens`, else from the head-major tensors).
  void run(bool tokens) {
    DeviceBuffer o_dev(size_t(s.q_elems()) * dtype_size(dtype)), lse_dev(size_t(s.rows()) * 4);
    DeviceBuffer delta(size_t(s.rows()) * 4);
    DeviceBuffer dq_dev(size_t(s.q_elems()) * dtype_size(dtype));
    DeviceBuffer dk_dev(size_t(s.kv_elems()) * dtype_size(dtype));
    DeviceBuffer dv_dev(size_t(s.kv_elems()) * dtype_size(dtype));
    FlashArgs f;
    f.batch = s.b;
    f.heads = s.h;
    f.kv_heads = s.g;
    f.seq = s.t;
    f.head_dim = s.d;
    f.dtype = dtype;
    f.q = dq_in.get();
    f.k = dk_in.get();
    f.v = dv_in.get();
    f.mask = mask.empty() ? nullptr : dmask.as<int32_t>();
    f.causal = s.causal;
    f.scale = float(1.0 / std::sqrt(double(s.d)));
    f.o = o_dev.get();
    f.lse = lse_dev.as<float>();
    wmma ? bert::flash_attention_forward_wmma(f, nullptr)
         : bert::flash_attention_forward(f, nullptr);
    o = to_host(o_dev, s.q_elems(), dtype);
    lse = floats_to_host(lse_dev, s.rows());
    FlashBackwardArgs bw;
    bw.f = f;
    bw.d_o = ddo.get();
    DeviceBuffer o_tok, do_tok;
    if (tokens) {
      std::vector<float> ot = to_tokens(o, s), dt = to_tokens(d_o, s);
      o_tok = to_device(ot, dtype);
      do_tok = to_device(dt, dtype);
      bw.o_tokens = o_tok.get();
      bw.do_tokens = do_tok.get();
    }
    bw.delta = delta.as<float>();
    bw.dq = dq_dev.get();
    bw.dk = dk_dev.get();
    bw.dv = dv_dev.get();
    wmma ? bert::flash_attention_backward_wmma(bw, nullptr)
         : bert::flash_attention_backward(bw, nullptr);
    GPUVS_CUDA_CHECK(cudaDeviceSynchronize());
    dq = to_host(dq_dev, s.q_elems(), dtype);
    dk = to_host(dk_dev, s.kv_elems(), dtype);
    dv = to_host(dv_dev, s.kv_elems(), dtype);
  }
};

// cuDNN's fused attention at shape s, scale 1 / sqrt(D), o and d_o token-major where
// `tokens`, built for training. Compute capability 9.0 and newer must get a plan
// (cuDNN's fused attention covers Hopper and Blackwell in bf16); on older GPUs null
// where cuDNN has none.
std::unique_ptr<CudnnSdpa> make_cudnn_sdpa(const Shape& s, bool tokens) {
  SdpaShape sh;
  sh.batch = s.b;
  sh.heads = s.h;
  sh.kv_heads = s.g;
  sh.seq = s.t;
  sh.head_dim = s.d;
  sh.scale = float(1.0 / std::sqrt(double(s.d)));
  sh.causal = s.causal;
  sh.o_tokens = tokens;
  try {
    return std::make_unique<CudnnSdpa>(sh, true);
  } catch (const SdpaUnsupported& e) {
    if (compute_capability() >= 90) throw;
    std::printf("cudnn-sdpa: %s\n", e.what());
    return nullptr;
  }
}

// cuDNN's fused attention on the same tensors: forward with stats, then the backward,
// o and d_o token-major where `tokens`; false where make_cudnn_sdpa has no plan.
bool run_cudnn(Attention& run, bool tokens) {
  const Shape& s = run.s;
  const std::unique_ptr<CudnnSdpa> sdpa = make_cudnn_sdpa(s, tokens);
  if (!sdpa) return false;
  const DType t = run.dtype;
  DeviceBuffer o_dev(size_t(s.q_elems()) * dtype_size(t)), stats(size_t(s.rows()) * 4);
  DeviceBuffer dq_dev(size_t(s.q_elems()) * dtype_size(t));
  DeviceBuffer dk_dev(size_t(s.kv_elems()) * dtype_size(t));
  DeviceBuffer dv_dev(size_t(s.kv_elems()) * dtype_size(t));
  DeviceBuffer ws(std::max<size_t>(sdpa->workspace_bytes(), 1));
  DeviceBuffer do_dev;
  if (tokens) {
    std::vector<float> dt = to_tokens(run.d_o, s);
    do_dev = to_device(dt, t);
  }
  const void* d_o = tokens ? do_dev.get() : run.ddo.get();
  sdpa->forward(run.dq_in.get(), run.dk_in.get(), run.dv_in.get(), o_dev.get(), stats.as<float>(),
                ws.get(), nullptr);
  sdpa->backward(run.dq_in.get(), run.dk_in.get(), run.dv_in.get(), o_dev.get(), d_o,
                 stats.as<float>(), dq_dev.get(), dk_dev.get(), dv_dev.get(), ws.get(), nullptr);
  GPUVS_CUDA_CHECK(cudaDeviceSynchronize());
  std::vector<float> o = to_host(o_dev, s.q_elems(), t);
  if (tokens) {  // back to (B, H, T, D) for the reference
    for (int b = 0; b < s.b; ++b)
      for (int h = 0; h < s.h; ++h)
        for (int i = 0; i < s.t; ++i)
          for (int d = 0; d < s.d; ++d)
            run.o.at(((size_t(b) * s.h + h) * s.t + i) * s.d + d) =
                o[((size_t(b) * s.t + i) * s.h + h) * s.d + d];
  } else {
    run.o = o;
  }
  run.lse = floats_to_host(stats, s.rows());
  run.dq = to_host(dq_dev, s.q_elems(), t);
  run.dk = to_host(dk_dev, s.kv_elems(), t);
  run.dv = to_host(dv_dev, s.kv_elems(), t);
  std::printf("cudnn-sdpa %s: %s\n", tokens ? "token-major o" : "head-major o",
              sdpa->describe().c_str());
  return true;
}

std::string describe(const Shape& s, DType dtype) {
  char buf[160];
  std::snprintf(buf, sizeof buf, "%s B%d T%d H%d G%d D%d %s",
                dtype == DType::kF16 ? "fp16" : "bf16", s.b, s.t, s.h, s.g, s.d,
                s.causal ? "causal" : "non-causal");
  return buf;
}

// Every element of o, lse, dq, dk, dv within its tolerance (worst_ratio; lse: 1e-5 (1 +
// |lse|), FP32 arithmetic on exact products) of the host reference.
void expect_matches_reference(const Attention& run, const std::string& name) {
  const Shape& s = run.s;
  const double u = run.dtype == DType::kF16 ? 0x1p-11 : 0x1p-8;
  const Reference ref =
      reference(s, run.q, run.k, run.v, run.d_o, run.mask, 1.0 / std::sqrt(double(s.d)), u);
  double lse_worst = 0;
  for (size_t i = 0; i < ref.lse.size(); ++i) {
    const double err = std::fabs(run.lse[i] - ref.lse[i]) / (1e-5 * (1 + std::fabs(ref.lse[i])));
    lse_worst = std::isnan(err) ? INFINITY : std::max(lse_worst, err);
  }
  EXPECT_LE(lse_worst, 1.0) << name << " lse";
  size_t at[4] = {0, 0, 0, 0};
  const double w[4] = {
      worst_ratio(run.o, ref.o, ref.eo, &at[0]), worst_ratio(run.dq, ref.dq, ref.edq, &at[1]),
      worst_ratio(run.dk, ref.dk, ref.edk, &at[2]), worst_ratio(run.dv, ref.dv, ref.edv, &at[3])};
  const char* what[4] = {"o", "dq", "dk", "dv"};
  const std::vector<float>* got[4] = {&run.o, &run.dq, &run.dk, &run.dv};
  const std::vector<double>* want[4] = {&ref.o, &ref.dq, &ref.dk, &ref.dv};
  std::printf("flash-check %s: worst error / tolerance o %.3f lse %.3f dq %.3f dk %.3f dv %.3f\n",
              name.c_str(), w[0], lse_worst, w[1], w[2], w[3]);
  for (int i = 0; i < 4; ++i)
    EXPECT_LE(w[i], 1.0) << name << " " << what[i] << "[" << at[i] << "] = " << (*got[i])[at[i]]
                         << ", reference " << (*want[i])[at[i]];
}

// Random q (sd 1.5, for peaked rows), k, v, d_o (sd 1) rounded to the storage type; with
// `pad`, batch 1's last quarter of keys padded.
void fill(Attention& run, bool pad, std::mt19937_64& gen) {
  const Shape& s = run.s;
  run.q = random_values(s.q_elems(), 1.5f, gen);
  run.k = random_values(s.kv_elems(), 1.0f, gen);
  run.v = random_values(s.kv_elems(), 1.0f, gen);
  run.d_o = random_values(s.q_elems(), 1.0f, gen);
  run.mask.clear();
  if (pad && s.b > 1) {
    run.mask.assign(size_t(s.b) * s.t, 1);
    for (int j = s.t - s.t / 4; j < s.t; ++j)
      run.mask[size_t(s.t) + j] = 0;
  }
}

// Every case: random q (sd 1.5, for peaked rows), k, v, d_o (sd 1) rounded to the
// storage type, scale 1 / sqrt(D); the non-causal cases (and one causal) pad batch 1's
// last quarter of keys, the others pass no mask. Causal cases use T 192 (three tiles: a
// diagonal tile after full ones), the others 128; the grouped cases hand the backward
// token-major o and d_o as BERT does, the others head-major. Every element of o, lse, dq,
// dk, dv must be within its tolerance (worst_ratio; lse: 1e-5 (1 + |lse|), FP32
// arithmetic on exact products).
TEST(FlashAttention, MatchesTheHostReference) {
  GPUVS_REQUIRE_GPU();
  bert::flash_attention_init();
  struct Case {
    int d, g;
    bool causal;
    DType dtype;
  };
  std::vector<Case> cases;
  for (const int d : {64, 128})
    for (const bool causal : {false, true})
      for (const int g : {4, 2})
        cases.push_back({d, g, causal, DType::kBF16});
  cases.push_back({128, 2, true, DType::kF16});
  std::mt19937_64 gen(7);
  for (const Case& c : cases) {
    Attention run;
    run.s.d = c.d;
    run.s.g = c.g;
    run.s.causal = c.causal;
    run.s.t = c.causal ? 192 : 128;
    run.dtype = c.dtype;
    const Shape& s = run.s;
    const std::string name = describe(s, c.dtype);
    run.q = random_values(s.q_elems(), 1.5f, gen);
    run.k = random_values(s.kv_elems(), 1.0f, gen);
    run.v = random_values(s.kv_elems(), 1.0f, gen);
    run.d_o = random_values(s.q_elems(), 1.0f, gen);
    if (!c.causal || (c.d == 64 && c.g == 4)) {
      run.mask.assign(size_t(s.b) * s.t, 1);
      for (int j = s.t - s.t / 4; j < s.t; ++j)
        run.mask[size_t(s.t) + j] = 0;
    }
    run.upload();
    run.run(c.g != s.h);
    expect_matches_reference(run, name);
  }
}

// cuDNN's fused attention (the Llama training's default kernels) held to the same
// reference and tolerances as gpuvs's kernels: causal, head sizes 64 and 128, one
// key/value head per query head and grouped-query attention, o and d_o head-major and
// token-major (as the training hands them), T 192 and 320 (a short last tile).
TEST(CudnnSdpa, MatchesTheHostReference) {
  GPUVS_REQUIRE_GPU();
  struct Case {
    int d, g, t;
    bool tokens;
  };
  const Case cases[] = {
      {64, 4, 192, false}, {64, 2, 192, true}, {128, 4, 320, true}, {128, 1, 192, false}};
  std::mt19937_64 gen(11);
  for (const Case& c : cases) {
    Attention run;
    run.s.d = c.d;
    run.s.g = c.g;
    run.s.t = c.t;
    run.s.causal = true;
    fill(run, false, gen);
    run.upload();
    run.o.assign(size_t(run.s.q_elems()), 0.0f);
    if (!run_cudnn(run, c.tokens)) GTEST_SKIP() << "no cuDNN fused attention on this GPU";
    expect_matches_reference(run, "cudnn " + describe(run.s, run.dtype));
  }
}

// The edges of the mma.sync path (drop.p == 0) that the cases above leave out: a single
// key tile (T 64, under the 128-query tile of the forward and dQ kernels), T 320 (a short
// last query tile after two full ones) with four query heads on one key/value head,
// fp16 at head size 64, and many (b, h) pairs (B 3 H 40 G 8).
TEST(FlashAttention, MmaEdgesMatchTheHostReference) {
  GPUVS_REQUIRE_GPU();
  bert::flash_attention_init();
  struct Case {
    Shape s;
    DType dtype;
    bool pad;
  };
  const Case cases[] = {{{2, 4, 4, 64, 64, true}, DType::kBF16, false},
                        {{2, 4, 2, 64, 128, false}, DType::kBF16, true},
                        {{2, 4, 1, 320, 128, true}, DType::kBF16, true},
                        {{2, 4, 1, 320, 64, false}, DType::kF16, true},
                        {{2, 4, 2, 192, 64, true}, DType::kF16, false},
                        {{3, 40, 8, 64, 64, false}, DType::kBF16, true}};
  std::mt19937_64 gen(13);
  for (const Case& c : cases) {
    Attention run;
    run.s = c.s;
    run.dtype = c.dtype;
    fill(run, c.pad, gen);
    run.upload();
    run.run(c.s.g != c.s.h);
    expect_matches_reference(run, describe(c.s, c.dtype));
  }
}

// Without dropout both implementations compute the same attention: each rounds P and dS
// to the storage type (and its outputs) at FP32 values that differ only by summation
// order, so each is within its rounding bound of the exact result and the two within
// the sum of both bounds, |mma - wmma| <= 2 tol (tol: worst_ratio's), lse within 2e-5
// (1 + |lse|).
TEST(FlashAttention, MmaPathMatchesWmmaPath) {
  GPUVS_REQUIRE_GPU();
  bert::flash_attention_init();
  const Shape shapes[] = {
      {2, 4, 2, 192, 64, true}, {2, 4, 4, 128, 128, false}, {2, 4, 1, 256, 128, true}};
  std::mt19937_64 gen(17);
  for (const Shape& s : shapes) {
    Attention mma, wmma;
    mma.s = wmma.s = s;
    fill(mma, !s.causal, gen);
    wmma.q = mma.q;
    wmma.k = mma.k;
    wmma.v = mma.v;
    wmma.d_o = mma.d_o;
    wmma.mask = mma.mask;
    wmma.wmma = true;
    mma.upload();
    wmma.upload();
    mma.run(false);
    wmma.run(false);
    const std::string name = describe(s, DType::kBF16);
    const Reference ref =
        reference(s, mma.q, mma.k, mma.v, mma.d_o, mma.mask, 1.0 / std::sqrt(double(s.d)), 0x1p-8);
    double lse_worst = 0;
    for (size_t i = 0; i < ref.lse.size(); ++i) {
      const double err =
          std::fabs(double(mma.lse[i]) - wmma.lse[i]) / (2e-5 * (1 + std::fabs(ref.lse[i])));
      lse_worst = std::isnan(err) ? INFINITY : std::max(lse_worst, err);
    }
    EXPECT_LE(lse_worst, 1.0) << name << " lse";
    const char* what[4] = {"o", "dq", "dk", "dv"};
    const std::vector<float>* a[4] = {&mma.o, &mma.dq, &mma.dk, &mma.dv};
    const std::vector<float>* b[4] = {&wmma.o, &wmma.dq, &wmma.dk, &wmma.dv};
    const std::vector<double>* want[4] = {&ref.o, &ref.dq, &ref.dk, &ref.dv};
    const std::vector<double>* bound[4] = {&ref.eo, &ref.edq, &ref.edk, &ref.edv};
    for (int x = 0; x < 4; ++x) {
      double peak = 0, worst = 0;
      for (const double w : *want[x])
        peak = std::max(peak, std::fabs(w));
      for (size_t i = 0; i < want[x]->size(); ++i) {
        const double tol = 2.0 * (2.0 * (*bound[x])[i] + 1e-5 * peak);
        const double r = std::fabs(double((*a[x])[i]) - (*b[x])[i]) / tol;
        worst = std::isnan(r) ? INFINITY : std::max(worst, r);
      }
      std::printf("flash-paths %s %s: worst |mma - wmma| / tolerance %.3f\n", name.c_str(), what[x],
                  worst);
      EXPECT_LE(worst, 1.0) << name << " " << what[x];
    }
  }
}

// The same at long sequences (many key tiles, deep causal loops, the group's four query
// heads summed into dk and dv), where the host reference would take minutes: the two
// paths' difference in relative L2 norm within 4 u (u = 2^-8): each path's rounding of
// P, dS and its outputs leaves it some u off the exact result in that norm.
TEST(FlashAttention, MmaPathMatchesWmmaPathAtLongSequences) {
  GPUVS_REQUIRE_GPU();
  bert::flash_attention_init();
  const Shape shapes[] = {{1, 32, 8, 2048, 64, true}, {1, 8, 2, 1024, 128, false}};
  std::mt19937_64 gen(19);
  for (const Shape& s : shapes) {
    Attention mma, wmma;
    mma.s = wmma.s = s;
    fill(mma, false, gen);
    wmma.q = mma.q;
    wmma.k = mma.k;
    wmma.v = mma.v;
    wmma.d_o = mma.d_o;
    wmma.wmma = true;
    mma.upload();
    wmma.upload();
    mma.run(false);
    wmma.run(false);
    const std::string name = describe(s, DType::kBF16);
    const char* what[5] = {"o", "lse", "dq", "dk", "dv"};
    const std::vector<float>* a[5] = {&mma.o, &mma.lse, &mma.dq, &mma.dk, &mma.dv};
    const std::vector<float>* b[5] = {&wmma.o, &wmma.lse, &wmma.dq, &wmma.dk, &wmma.dv};
    for (int x = 0; x < 5; ++x) {
      double diff = 0, norm = 0;
      for (size_t i = 0; i < b[x]->size(); ++i) {
        const double d = double((*a[x])[i]) - (*b[x])[i];
        diff += d * d;
        norm += double((*b[x])[i]) * (*b[x])[i];
      }
      const double rel = std::sqrt(diff / norm);
      std::printf("flash-paths %s %s: relative L2 |mma - wmma| %.3e\n", name.c_str(), what[x], rel);
      EXPECT_LE(rel, 4 * 0x1p-8) << name << " " << what[x];
    }
  }
}

// A causal query gives its later keys no weight at all, so two runs that agree on the
// keys a query sees agree on it bit for bit (the later keys' probabilities are exact
// zeros in both, the products they enter add exact zeros): (1) causal (G == H, no
// padding mask) against the non-causal path with a padding mask that keeps keys 0..t_b,
// at row t_b of batch b (t 100, inside a tile, and 64, a tile's first row): o, lse and
// dq; (2) causal with the keys and values after 100 replaced: o, lse and dq of the
// queries 0..100 unchanged, while a later query's output changes.
TEST(FlashAttention, CausalGivesLaterKeysNoWeight) {
  GPUVS_REQUIRE_GPU();
  bert::flash_attention_init();
  std::mt19937_64 gen(11);
  for (const int d : {64, 128}) {
    Shape s;
    s.t = 192;
    s.d = d;
    const int last[2] = {100, 64};  // t_b
    Attention causal;
    causal.s = s;
    causal.s.causal = true;
    causal.q = random_values(s.q_elems(), 1.5f, gen);
    causal.k = random_values(s.kv_elems(), 1.0f, gen);
    causal.v = random_values(s.kv_elems(), 1.0f, gen);
    causal.d_o = random_values(s.q_elems(), 1.0f, gen);
    causal.upload();
    causal.run(false);
    Attention masked;
    masked.s = s;
    masked.q = causal.q;
    masked.k = causal.k;
    masked.v = causal.v;
    masked.d_o = causal.d_o;
    masked.mask.assign(size_t(s.b) * s.t, 0);
    for (int b = 0; b < s.b; ++b)
      for (int j = 0; j <= last[b]; ++j)
        masked.mask[size_t(b) * s.t + j] = 1;
    masked.upload();
    masked.run(false);
    int64_t mismatches = 0;
    for (int b = 0; b < s.b; ++b) {
      for (int h = 0; h < s.h; ++h) {
        const size_t row = (size_t(b) * s.h + h) * s.t + last[b];
        mismatches += causal.lse[row] != masked.lse[row];
        for (int e = 0; e < d; ++e) {
          mismatches += causal.o[row * d + e] != masked.o[row * d + e];
          mismatches += causal.dq[row * d + e] != masked.dq[row * d + e];
        }
      }
    }
    EXPECT_EQ(mismatches, 0) << "D" << d << ": causal against masked non-causal";

    constexpr int kSeen = 100;
    Attention changed;
    changed.s = causal.s;
    changed.q = causal.q;
    changed.k = causal.k;
    changed.v = causal.v;
    changed.d_o = causal.d_o;
    const std::vector<float> fresh = random_values(2 * s.kv_elems(), 4.0f, gen);
    for (int64_t i = 0; i < s.kv_elems(); ++i) {
      if ((i / d) % s.t > kSeen) {
        changed.k[size_t(i)] = fresh[size_t(i)];
        changed.v[size_t(i)] = fresh[size_t(s.kv_elems() + i)];
      }
    }
    changed.upload();
    changed.run(false);
    int64_t seen_mismatches = 0, later_changes = 0;
    for (int64_t row = 0; row < s.rows(); ++row) {
      const bool seen = row % s.t <= kSeen;
      for (int e = 0; e < d; ++e) {
        const size_t i = size_t(row) * d + e;
        if (seen)
          seen_mismatches += (causal.o[i] != changed.o[i]) + (causal.dq[i] != changed.dq[i]);
        else
          later_changes += causal.o[i] != changed.o[i];
      }
      if (seen) seen_mismatches += causal.lse[size_t(row)] != changed.lse[size_t(row)];
    }
    EXPECT_EQ(seen_mismatches, 0) << "D" << d << ": queries 0.." << kSeen
                                  << " changed with later keys";
    EXPECT_GT(later_changes, 0) << "D" << d << ": the replaced keys changed nothing";
  }
}

// A measurement printout, not a check (speed targets live in benchmarks): the kernels'
// TFLOP/s at the Llama training shapes (causal, grouped-query: Llama 3.2 1B's 32 heads
// over 8 key/value heads at D 64, and 24 over 8 at D 128), and BERT-large's non-causal
// shape for comparison. Forward FLOPs 4 B H T^2 D (half of it causal), the backward's
// 2.5x the forward's (delta kernel included in its time); mean of 10 runs after 2. The
// default dispatch (no dropout: the mma.sync kernels) and the WMMA kernels. H200, bf16:
// mma.sync 224 TFLOP/s forward and 160 backward at head size 64, 213 and 155 at 128,
// 211 and 148 at BERT's shape; WMMA ~110 and ~78 at both Llama shapes, ~104 and ~75 at
// BERT's.
TEST(FlashAttention, PrintsCausalThroughput) {
  GPUVS_REQUIRE_GPU();
  bert::flash_attention_init();
  struct Case {
    Shape s;
    const char* what;
  };
  const Case cases[] = {{{8, 32, 8, 2048, 64, true}, "llama 3.2 1B"},
                        {{4, 24, 8, 2048, 128, true}, "head size 128"},
                        {{16, 16, 16, 512, 64, false}, "bert-large"}};
  constexpr DType kType = DType::kBF16;
  constexpr int kWarmup = 2, kIters = 10;
  Stream stream;
  const cudaStream_t st = stream.get();
  for (const Case& c : cases) {
    const Shape& s = c.s;
    const size_t e = dtype_size(kType);
    DeviceBuffer scratch(size_t(s.q_elems()) * 4);
    DeviceBuffer q(size_t(s.q_elems()) * e), k(size_t(s.kv_elems()) * e);
    DeviceBuffer v(size_t(s.kv_elems()) * e), o(size_t(s.q_elems()) * e);
    DeviceBuffer d_o(size_t(s.q_elems()) * e), dq(size_t(s.q_elems()) * e);
    DeviceBuffer dk(size_t(s.kv_elems()) * e), dv(size_t(s.kv_elems()) * e);
    DeviceBuffer lse(size_t(s.rows()) * 4), delta(size_t(s.rows()) * 4);
    uint64_t salt = 1;
    for (auto* x : {&q, &k, &v, &d_o}) {
      const int64_t n = int64_t(x->bytes() / e);
      bert::init_normal(scratch.as<float>(), n, 1.0f, 5, salt++, st);
      bert::cast_from_float(scratch.as<float>(), x->get(), n, kType, st);
    }
    FlashArgs f;
    f.batch = s.b;
    f.heads = s.h;
    f.kv_heads = s.g;
    f.seq = s.t;
    f.head_dim = s.d;
    f.dtype = kType;
    f.q = q.get();
    f.k = k.get();
    f.v = v.get();
    f.causal = s.causal;
    f.scale = float(1.0 / std::sqrt(double(s.d)));
    f.o = o.get();
    f.lse = lse.as<float>();
    FlashBackwardArgs bw;
    bw.f = f;
    bw.d_o = d_o.get();
    bw.delta = delta.as<float>();
    bw.dq = dq.get();
    bw.dk = dk.get();
    bw.dv = dv.get();
    const auto time_ms = [&](auto&& fn) {
      for (int i = 0; i < kWarmup; ++i)
        fn();
      Event start, stop;
      start.record(st);
      for (int i = 0; i < kIters; ++i)
        fn();
      stop.record(st);
      stop.synchronize();
      return stop.seconds_since(start) * 1e3 / kIters;
    };
    const double fwd_flop = 4.0 * s.b * s.h * double(s.t) * s.t * s.d * (s.causal ? 0.5 : 1.0);
    // The WMMA kernels (the dropout path) at p == 0 first, for comparison.
    const double wfwd_ms = time_ms([&] { bert::flash_attention_forward_wmma(f, st); });
    const double wbwd_ms = time_ms([&] { bert::flash_attention_backward_wmma(bw, st); });
    const double fwd_ms = time_ms([&] { bert::flash_attention_forward(f, st); });
    const double bwd_ms = time_ms([&] { bert::flash_attention_backward(bw, st); });
    for (const bool wmma : {true, false})
      std::printf(
          "flash-throughput%s %s (%s): forward %.3f ms %.1f TFLOP/s, backward %.3f ms %.1f "
          "TFLOP/s\n",
          wmma ? "-wmma" : "", describe(s, kType).c_str(), c.what, wmma ? wfwd_ms : fwd_ms,
          fwd_flop / (wmma ? wfwd_ms : fwd_ms) * 1e-9, wmma ? wbwd_ms : bwd_ms,
          2.5 * fwd_flop / (wmma ? wbwd_ms : bwd_ms) * 1e-9);
    EXPECT_EQ(bert::count_nonfinite(dq.get(), s.rows(), s.d, s.d, kType, st), 0);
    EXPECT_EQ(bert::count_nonfinite(dk.get(), int64_t(s.b) * s.g * s.t, s.d, s.d, kType, st), 0);
    if (!s.causal) continue;  // cuDNN's graph is built for the decoder's causal attention
    // o and d_o token-major, as the training hands them.
    const std::unique_ptr<CudnnSdpa> sdpa = make_cudnn_sdpa(s, true);
    if (!sdpa) continue;
    DeviceBuffer ws(std::max<size_t>(sdpa->workspace_bytes(), 1));
    const double cfwd_ms = time_ms(
        [&] { sdpa->forward(q.get(), k.get(), v.get(), o.get(), lse.as<float>(), ws.get(), st); });
    const double cbwd_ms = time_ms([&] {
      sdpa->backward(q.get(), k.get(), v.get(), o.get(), d_o.get(), lse.as<float>(), dq.get(),
                     dk.get(), dv.get(), ws.get(), st);
    });
    std::printf(
        "flash-throughput-cudnn %s (%s): forward %.3f ms %.1f TFLOP/s, backward %.3f ms %.1f "
        "TFLOP/s; %s\n",
        describe(s, kType).c_str(), c.what, cfwd_ms, fwd_flop / cfwd_ms * 1e-9, cbwd_ms,
        2.5 * fwd_flop / cbwd_ms * 1e-9, sdpa->describe().c_str());
    EXPECT_EQ(bert::count_nonfinite(dq.get(), s.rows(), s.d, s.d, kType, st), 0);
    EXPECT_EQ(bert::count_nonfinite(dk.get(), int64_t(s.b) * s.g * s.t, s.d, s.d, kType, st), 0);
  }
}

}  // namespace
}  // namespace gpuvs::models
