// BERT's own kernels against host computations (no model, no reference file): the
// attention softmax forward and backward with dropout, the FP8 cast with its
// transpose and amax, and the casts fused with the GELU against the unfused kernels.
// Skipped without a GPU.
#include <cuda_fp8.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "fp8_cast_check.h"
#include "gpu/check.h"
#include "gpu/device.h"
#include "gpu_test_util.h"
#include "models/bert/dropout_hash.h"
#include "models/bert/fp8.h"
#include "models/bert/kernels.h"

namespace gpuvs::models {
namespace {

// The attention softmax kernels against a host computation in double, on random
// scores rounded to the storage type (B 2, H 2), in place as the model runs them:
// forward p = softmax(s + mask bias) and p_drop, backward ds = p (g - sum g p) with
// g = dropout'(dp). Batch 1 pads its last quarter of keys. Every element must be
// within atol + rtol |ref| (rtol: 2^-8 bf16, 2^-10 fp16, 1e-5 fp32, about two units
// of the output's rounding; atol 1e-6 for what a 16-bit type flushes or cancels), the
// dropout mask must be dropout_hash.h's bit for bit (checked where p != 0), and the
// fraction dropped within 5 sigma of p. Sequence lengths cover every vector width
// (seq 128: 4 keys of 16 bits per lane, 512: 16, 96: 3, 192: 6).
TEST(BertKernels, SoftmaxKernelsMatchTheHost) {
  GPUVS_REQUIRE_GPU();
  constexpr int kB = 2, kH = 2;
  constexpr float kP = 0.1f;
  constexpr uint64_t kStep = 7;
  constexpr uint32_t kSite = 4;
  struct Case {
    int seq;
    DType dtype;
    bool dropout;
  };
  const Case cases[] = {{128, DType::kBF16, false}, {128, DType::kBF16, true},
                        {512, DType::kBF16, false}, {512, DType::kBF16, true},
                        {96, DType::kBF16, true},   {192, DType::kBF16, true},
                        {512, DType::kF16, true},   {128, DType::kF32, true}};
  DeviceBuffer rng(sizeof(uint64_t));
  GPUVS_CUDA_CHECK(cudaMemcpy(rng.get(), &kStep, sizeof kStep, cudaMemcpyHostToDevice));
  std::mt19937_64 gen(2024);
  for (const Case& k : cases) {
    const int t = k.seq;
    const int64_t rows = int64_t(kB) * kH * t, n = rows * t;
    const char* type = k.dtype == DType::kF32 ? "fp32" : k.dtype == DType::kF16 ? "fp16" : "bf16";
    const double rtol = k.dtype == DType::kF32 ? 1e-5 : k.dtype == DType::kF16 ? 0x1p-10 : 0x1p-8;
    constexpr double kAtol = 1e-6;
    std::vector<int32_t> mask(size_t(kB) * t, 1);
    for (int j = t - t / 4; j < t; ++j)
      mask[size_t(t) + j] = 0;
    // Host values -> storage type on the GPU -> back as floats (exactly what the kernels read).
    DeviceBuffer f32(size_t(n) * 4), x(size_t(n) * dtype_size(k.dtype));
    DeviceBuffer x2(size_t(n) * dtype_size(k.dtype)), dmask(mask.size() * 4);
    GPUVS_CUDA_CHECK(cudaMemcpy(dmask.get(), mask.data(), mask.size() * 4, cudaMemcpyHostToDevice));
    const auto upload = [&](std::normal_distribution<float> dist, void* dst) {
      std::vector<float> v(static_cast<size_t>(n));
      for (float& e : v)
        e = dist(gen);
      GPUVS_CUDA_CHECK(cudaMemcpy(f32.get(), v.data(), v.size() * 4, cudaMemcpyHostToDevice));
      bert::cast_from_float(f32.as<float>(), dst, n, k.dtype, nullptr);
    };
    const auto download = [&](const void* src) {
      bert::cast_to_float(src, f32.as<float>(), n, k.dtype, nullptr);
      std::vector<float> v(static_cast<size_t>(n));
      GPUVS_CUDA_CHECK(cudaMemcpy(v.data(), f32.get(), v.size() * 4, cudaMemcpyDeviceToHost));
      return v;
    };
    upload(std::normal_distribution<float>(0.0f, 2.0f), x.get());
    const std::vector<float> scores = download(x.get());
    bert::Dropout drop;
    drop.p = k.dropout ? kP : 0.0f;
    drop.rng = rng.as<uint64_t>();
    drop.site = kSite;
    bert::SoftmaxArgs sm;
    sm.batch = kB;
    sm.heads = kH;
    sm.seq = t;
    sm.dtype = k.dtype;
    sm.scores = x.get();
    sm.mask = dmask.as<int32_t>();
    sm.p = x.get();
    sm.p_drop = k.dropout ? x2.get() : nullptr;
    sm.drop = drop;
    bert::attention_softmax_forward(sm, nullptr);
    const std::vector<float> p = download(x.get());
    const std::vector<float> pd = k.dropout ? download(x2.get()) : std::vector<float>();
    upload(std::normal_distribution<float>(0.0f, 1.0f), x2.get());
    const std::vector<float> dp = download(x2.get());
    bert::SoftmaxBackwardArgs sb;
    sb.rows = rows;
    sb.seq = t;
    sb.dtype = k.dtype;
    sb.dp = x2.get();
    sb.p = x.get();
    sb.ds = x2.get();
    sb.drop = drop;
    bert::attention_softmax_backward(sb, nullptr);
    const std::vector<float> ds = download(x2.get());
    GPUVS_CUDA_CHECK(cudaDeviceSynchronize());

    const uint64_t key = bert::dropout_key(kStep, kSite);
    const uint32_t threshold = bert::dropout_threshold(kP);
    const double scale = 1.0 / (1.0 - double(kP));
    int64_t bad_p = 0, bad_pd = 0, bad_ds = 0, bad_mask = 0, nonzero = 0, dropped = 0;
    double worst_p = 0, worst_ds = 0;
    const auto off = [&](double got, double ref, double* worst) {
      const double excess = std::fabs(got - ref) / (kAtol + rtol * std::fabs(ref));
      *worst = std::max(*worst, excess);
      return excess > 1.0;
    };
    std::vector<double> prob(static_cast<size_t>(t)), g(static_cast<size_t>(t));
    for (int64_t r = 0; r < rows; ++r) {
      const int64_t b = r / (int64_t(kH) * t), base = r * t;
      double mx = -INFINITY, sum = 0, dot = 0;
      for (int j = 0; j < t; ++j) {
        prob[j] = scores[base + j] + (mask[b * t + j] != 0 ? 0.0 : -1e30);
        mx = std::max(mx, prob[j]);
      }
      for (int j = 0; j < t; ++j)
        sum += (prob[j] = std::exp(prob[j] - mx));
      for (int j = 0; j < t; ++j) {
        const int64_t i = base + j;
        prob[j] /= sum;
        const bool keep = !k.dropout || bert::drop_keep(key, uint64_t(i), threshold);
        bad_p += off(p[i], prob[j], &worst_p);
        if (k.dropout) {
          bad_pd += off(pd[i], keep ? prob[j] * scale : 0.0, &worst_p);
          if (p[i] != 0.0f) {
            ++nonzero;
            dropped += pd[i] == 0.0f;
            bad_mask += (pd[i] != 0.0f) != keep;
          }
        }
        g[j] = keep ? dp[i] * (k.dropout ? scale : 1.0) : 0.0;
        dot += g[j] * p[i];  // the backward's input p is the forward's output
      }
      for (int j = 0; j < t; ++j)
        bad_ds += off(ds[base + j], p[base + j] * (g[j] - dot), &worst_ds);
    }
    const double want = threshold / 65536.0;
    const double frac = nonzero ? double(dropped) / nonzero : 0.0;
    const double sigma = std::sqrt(want * (1 - want) / std::max<int64_t>(nonzero, 1));
    std::printf(
        "bert-check softmax %s seq %d dropout %s: worst |err| / tol p %.3f ds %.3f; outside: p "
        "%lld p_drop %lld ds %lld; mask mismatches %lld; dropped %.5f of %lld (expected %.5f, "
        "sigma %.5f)\n",
        type, t, k.dropout ? "on" : "off", worst_p, worst_ds, (long long)bad_p, (long long)bad_pd,
        (long long)bad_ds, (long long)bad_mask, frac, (long long)nonzero, want, sigma);
    const std::string what = std::string(type) + " seq " + std::to_string(t);
    EXPECT_EQ(bad_p, 0) << what;
    EXPECT_EQ(bad_pd, 0) << what;
    EXPECT_EQ(bad_ds, 0) << what;
    if (k.dropout) {
      EXPECT_EQ(bad_mask, 0) << what;
      EXPECT_GT(nonzero, n / 2) << what;
      EXPECT_NEAR(frac, want, 5 * sigma) << what;
    }
  }
}

// fp8_cast against the host's conversion (cuda_fp8.h, the same saturating rounding):
// every byte of the cast and of its transpose, and the amax, exactly. Cases: 16-bit
// source to E4M3 with a partial last row tile (96 rows), fp32 source (the master
// weights' path) to E5M2; a few values far beyond the format's range check the
// saturation.
TEST(BertKernels, Fp8CastMatchesTheHost) {
  GPUVS_REQUIRE_GPU();
  struct Case {
    int64_t rows, cols;
    bool f32;
    bool e5m2;
  };
  const Case cases[] = {{96, 128, false, false}, {64, 192, true, true}, {256, 1024, false, true}};
  std::mt19937 gen(77);
  std::normal_distribution<float> normal(0.f, 3.f);
  for (const Case& k : cases) {
    const int64_t n = k.rows * k.cols;
    std::vector<float> v(static_cast<size_t>(n));
    for (float& x : v)
      x = normal(gen);
    v[5] = 5000.f;  // beyond E4M3's 448 after the scale
    v[static_cast<size_t>(n) - 3] = -1e6f;
    DeviceBuffer f32(size_t(n) * 4), src16(size_t(n) * 2), out{size_t(n)}, out_t{size_t(n)};
    DeviceBuffer meta(sizeof(bert::Fp8Meta));
    GPUVS_CUDA_CHECK(cudaMemcpy(f32.get(), v.data(), v.size() * 4, cudaMemcpyHostToDevice));
    if (!k.f32) {
      // The source as the model holds it: rounded to bf16, and v the rounded values.
      bert::cast_from_float(f32.as<float>(), src16.get(), n, DType::kBF16, nullptr);
      bert::cast_to_float(src16.get(), f32.as<float>(), n, DType::kBF16, nullptr);
      GPUVS_CUDA_CHECK(cudaMemcpy(v.data(), f32.get(), v.size() * 4, cudaMemcpyDeviceToHost));
    }
    bert::Fp8Meta m = bert::fp8_meta_init(k.e5m2, true);
    m.scale = 2.0f;
    GPUVS_CUDA_CHECK(cudaMemcpy(meta.get(), &m, sizeof m, cudaMemcpyHostToDevice));
    bert::Fp8CastArgs a;
    a.rows = k.rows;
    a.cols = k.cols;
    a.src = k.f32 ? f32.get() : src16.get();
    a.src_f32 = k.f32;
    a.dtype = DType::kBF16;
    a.e5m2 = k.e5m2;
    a.out = out.as<uint8_t>();
    a.out_t = out_t.as<uint8_t>();
    a.meta = meta.as<bert::Fp8Meta>();
    bert::fp8_cast(a, nullptr);
    std::vector<uint8_t> q(static_cast<size_t>(n)), qt(static_cast<size_t>(n));
    GPUVS_CUDA_CHECK(cudaMemcpy(q.data(), out.get(), q.size(), cudaMemcpyDeviceToHost));
    GPUVS_CUDA_CHECK(cudaMemcpy(qt.data(), out_t.get(), qt.size(), cudaMemcpyDeviceToHost));
    GPUVS_CUDA_CHECK(cudaMemcpy(&m, meta.get(), sizeof m, cudaMemcpyDeviceToHost));
    int64_t bad = 0, bad_t = 0;
    float amax = 0.f;
    for (int64_t r = 0; r < k.rows; ++r) {
      for (int64_t c = 0; c < k.cols; ++c) {
        const float x = v[static_cast<size_t>(r * k.cols + c)];
        amax = std::max(amax, std::fabs(x));
        const auto want = static_cast<uint8_t>(
            __nv_cvt_float_to_fp8(x * 2.0f, __NV_SATFINITE, k.e5m2 ? __NV_E5M2 : __NV_E4M3));
        bad += q[static_cast<size_t>(r * k.cols + c)] != want;
        bad_t += qt[static_cast<size_t>(c * k.rows + r)] != want;
      }
    }
    const std::string what = std::to_string(k.rows) + "x" + std::to_string(k.cols) +
                             (k.f32 ? " fp32" : " bf16") + (k.e5m2 ? " -> e5m2" : " -> e4m3");
    std::printf(
        "bert-check fp8 cast %s: %lld / %lld bytes differ, %lld transposed; amax %g (host %g)\n",
        what.c_str(), (long long)bad, (long long)n, (long long)bad_t, m.amax, amax);
    EXPECT_EQ(bad, 0) << what;
    EXPECT_EQ(bad_t, 0) << what;
    EXPECT_EQ(m.amax, amax) << what;
  }
}

// The fp8 model fuses the GELU into ffn2's input cast and the GELU's gradient into
// ffn1's gradient cast (fp8.h, Fp8CastOp). Fused and unfused must agree bit for bit:
// the 16-bit value (gelu_forward's / gelu_backward's output), every FP8 byte of the
// cast and its transpose, and the amax. In place as the model runs the backward
// (value_out == src); 96 rows leave a partial row tile. The gradient's fused column
// sums (the bias gradient) match a host sum in double within 1e-5 of the sum of |v|.
TEST(BertKernels, FusedGeluCastsMatchTheUnfusedKernels) {
  GPUVS_REQUIRE_GPU();
  constexpr int64_t kRows = 96, kCols = 256, kN = kRows * kCols;
  std::mt19937 gen(5);
  std::normal_distribution<float> normal(0.f, 2.f);
  std::vector<float> hv(kN), dv(kN);
  for (float& x : hv)
    x = normal(gen);
  for (float& x : dv)
    x = 1e-3f * normal(gen);
  DeviceBuffer f32(size_t(kN) * 4), h(size_t(kN) * 2), d(size_t(kN) * 2), ref16(size_t(kN) * 2),
      fused16(size_t(kN) * 2);
  DeviceBuffer partials(size_t(bert::fp8_colsum_partial_floats(kRows, kCols)) * 4),
      sums(size_t(kCols) * 4);
  const auto to_bf16 = [&](const std::vector<float>& v, DeviceBuffer& dst) {
    GPUVS_CUDA_CHECK(cudaMemcpy(f32.get(), v.data(), v.size() * 4, cudaMemcpyHostToDevice));
    bert::cast_from_float(f32.as<float>(), dst.get(), kN, DType::kBF16, nullptr);
  };
  to_bf16(hv, h);
  for (const bool grad : {false, true}) {
    const char* what = grad ? "gelu grad -> e5m2" : "gelu -> e4m3";
    // Unfused: the GELU kernel, then the plain cast.
    if (grad) {
      to_bf16(dv, d);
      bert::gelu_backward(d.get(), h.get(), ref16.get(), kN, DType::kBF16, nullptr);
    } else {
      bert::gelu_forward(h.get(), ref16.get(), kN, DType::kBF16, nullptr);
    }
    DeviceBuffer out[2] = {DeviceBuffer(kN), DeviceBuffer(kN)};
    DeviceBuffer out_t[2] = {DeviceBuffer(kN), DeviceBuffer(kN)};
    DeviceBuffer meta[2] = {DeviceBuffer(sizeof(bert::Fp8Meta)),
                            DeviceBuffer(sizeof(bert::Fp8Meta))};
    bert::Fp8Meta m = bert::fp8_meta_init(grad, true);
    m.scale = grad ? 4096.0f : 2.0f;
    for (int i = 0; i < 2; ++i) {
      GPUVS_CUDA_CHECK(cudaMemcpy(meta[i].get(), &m, sizeof m, cudaMemcpyHostToDevice));
      bert::Fp8CastArgs a;
      a.rows = kRows;
      a.cols = kCols;
      a.e5m2 = grad;
      a.out = out[i].as<uint8_t>();
      a.out_t = out_t[i].as<uint8_t>();
      a.meta = meta[i].as<bert::Fp8Meta>();
      if (i == 0) {
        a.src = ref16.get();
      } else if (grad) {
        to_bf16(dv, fused16);  // in place: the gradient becomes dh
        a.src = fused16.get();
        a.op = bert::Fp8CastOp::kGeluGrad;
        a.aux = h.get();
        a.value_out = fused16.get();
        a.colsum = partials.as<float>();
      } else {
        a.src = h.get();
        a.op = bert::Fp8CastOp::kGelu;
        a.value_out = fused16.get();
      }
      bert::fp8_cast(a, nullptr);
    }
    expect_same_casts(
        {{&ref16, &fused16}, {&out[0], &out[1]}, {&out_t[0], &out_t[1]}, {&meta[0], &meta[1]}}, kN,
        "bert-check", what);
    if (!grad) continue;
    bert::reduce_partials(partials.as<float>(),
                          bert::fp8_colsum_partial_floats(kRows, kCols) / kCols, kCols,
                          sums.as<float>(), false, nullptr);
    std::vector<float> got(kCols), v(kN);
    GPUVS_CUDA_CHECK(cudaMemcpy(got.data(), sums.get(), got.size() * 4, cudaMemcpyDeviceToHost));
    bert::cast_to_float(ref16.get(), f32.as<float>(), kN, DType::kBF16, nullptr);
    GPUVS_CUDA_CHECK(cudaMemcpy(v.data(), f32.get(), v.size() * 4, cudaMemcpyDeviceToHost));
    double worst = 0;
    for (int64_t c = 0; c < kCols; ++c) {
      double sum = 0, abs_sum = 0;
      for (int64_t r = 0; r < kRows; ++r) {
        sum += v[size_t(r * kCols + c)];
        abs_sum += std::fabs(v[size_t(r * kCols + c)]);
      }
      worst = std::max(worst, std::fabs(got[size_t(c)] - sum) / abs_sum);
    }
    std::printf("bert-check fused gelu grad column sums: worst |err| / sum |v| %.2e\n", worst);
    EXPECT_LE(worst, 1e-5);
  }
}

// The softmax cross-entropy (the MLM head's and the Llama LM head's loss) against a
// host computation in double: per row the loss lse - x[label] and the gradient
// (softmax - onehot) / count, padding columns 0, ignored rows (label -100) 0 and loss 0;
// in place (dlogits == logits, as the Llama training runs it) and not; rows of 16
// bytes (the vector path: ld a multiple of 8 bf16 or 4 fp32 values) and not (ld odd:
// one value at a time), a column count that is not a multiple of the vector width.
// Tolerances: the loss within 1e-5 relative (FP32 sums of up to 128256 terms); the
// gradient within 2^-8 (bf16) or 1e-5 (fp32) relative of its magnitude plus 1e-9.
TEST(BertKernels, SoftmaxXentMatchesTheHostInPlaceOrNot) {
  GPUVS_REQUIRE_GPU();
  struct Case {
    int rows, cols, ld;
    DType dtype;
    bool in_place;
  };
  const Case cases[] = {
      {6, 30522, 30528, DType::kBF16, false},  {6, 30522, 30528, DType::kBF16, true},
      {4, 128256, 128256, DType::kBF16, true}, {5, 1001, 1003, DType::kBF16, true},
      {5, 1001, 1004, DType::kF32, true},      {5, 999, 1001, DType::kF32, false}};
  std::mt19937_64 gen(7);
  for (const Case& k : cases) {
    const int64_t n = int64_t(k.rows) * k.ld;
    const size_t es = dtype_size(k.dtype);
    std::vector<float> host(static_cast<size_t>(n));
    std::normal_distribution<float> dist(0.0f, 3.0f);
    for (float& e : host)
      e = dist(gen);
    std::vector<int32_t> labels(static_cast<size_t>(k.rows));
    for (int r = 0; r < k.rows; ++r)
      labels[size_t(r)] = r == 1 ? -100 : int32_t(gen() % uint64_t(k.cols));
    labels[0] = k.cols - 1;  // the last real column
    DeviceBuffer f32(size_t(n) * 4), x(size_t(n) * es), dx(size_t(n) * es);
    DeviceBuffer dlabels(labels.size() * 4), count(4), row_loss(size_t(k.rows) * 4);
    GPUVS_CUDA_CHECK(cudaMemcpy(f32.get(), host.data(), host.size() * 4, cudaMemcpyHostToDevice));
    bert::cast_from_float(f32.as<float>(), x.get(), n, k.dtype, nullptr);
    bert::cast_to_float(x.get(), f32.as<float>(), n, k.dtype, nullptr);
    GPUVS_CUDA_CHECK(cudaMemcpy(host.data(), f32.get(), host.size() * 4, cudaMemcpyDeviceToHost));
    GPUVS_CUDA_CHECK(
        cudaMemcpy(dlabels.get(), labels.data(), labels.size() * 4, cudaMemcpyHostToDevice));
    bert::count_valid_labels(dlabels.as<int32_t>(), k.rows, count.as<float>(), nullptr);
    bert::XentArgs a;
    a.rows = k.rows;
    a.cols = k.cols;
    a.ld = k.ld;
    a.dtype = k.dtype;
    a.logits = x.get();
    a.labels = dlabels.as<int32_t>();
    a.count = count.as<float>();
    a.row_loss = row_loss.as<float>();
    a.dlogits = k.in_place ? x.get() : dx.get();
    bert::softmax_xent(a, nullptr);
    std::vector<float> loss(static_cast<size_t>(k.rows)), grad(static_cast<size_t>(n));
    GPUVS_CUDA_CHECK(
        cudaMemcpy(loss.data(), row_loss.get(), loss.size() * 4, cudaMemcpyDeviceToHost));
    bert::cast_to_float(a.dlogits, f32.as<float>(), n, k.dtype, nullptr);
    GPUVS_CUDA_CHECK(cudaMemcpy(grad.data(), f32.get(), grad.size() * 4, cudaMemcpyDeviceToHost));
    const double valid = double(k.rows - 1);
    const double rtol = k.dtype == DType::kF32 ? 1e-5 : 0x1p-8;
    int64_t bad = 0;
    for (int r = 0; r < k.rows; ++r) {
      const float* row = host.data() + int64_t(r) * k.ld;
      const float* g = grad.data() + int64_t(r) * k.ld;
      const int label = labels[size_t(r)];
      double mx = -INFINITY, sum = 0;
      for (int j = 0; j < k.cols; ++j)
        mx = std::max(mx, double(row[j]));
      for (int j = 0; j < k.cols; ++j)
        sum += std::exp(row[j] - mx);
      const double lse = mx + std::log(sum);
      if (label < 0) {
        EXPECT_EQ(loss[size_t(r)], 0.0f);
      } else {
        EXPECT_NEAR(loss[size_t(r)], lse - row[label], 1e-5 * lse)
            << "row " << r << " cols " << k.cols << " ld " << k.ld;
      }
      for (int j = 0; j < k.ld; ++j) {
        const double want = label < 0 || j >= k.cols
                                ? 0.0
                                : (std::exp(row[j] - lse) - (j == label ? 1.0 : 0.0)) / valid;
        bad += std::fabs(g[j] - want) > 1e-9 + rtol * std::fabs(want);
      }
    }
    EXPECT_EQ(bad, 0) << "gradient elements off: cols " << k.cols << " ld " << k.ld
                      << (k.in_place ? " in place" : "");
  }
}

}  // namespace
}  // namespace gpuvs::models
