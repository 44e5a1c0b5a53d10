// Stage-by-stage host recomputation of the last bottleneck of ResNet-50 (fp32), from
// the model's own buffers; part of the dev check (check.cpp).
#include <cmath>
#include <string>
#include <vector>

#include "dev/resnet50/check_util.h"
#include "models/resnet50/resnet50.h"

namespace gpuvs_check {

using namespace gpuvs::models;

// The top of the fp32 backward recomputed on the host (double) from the model's own
// internal buffers, stage by stage: fc backward data, layer4.2.bn3 (+add+ReLU)
// backward, conv3's weight gradient and data gradient, layer4.2.bn2 (+ReLU) backward.
// Each stage takes the device's input to that stage, so a failure names the stage.
void backward_stages(int batch) {
  auto owner = build(Precision::kFp32, Mode::kTrain, batch);
  auto* m = dynamic_cast<resnet50::ResNet50*>(owner.get());
  m->forward_backward(false);
  const int n = batch, hw = 49, c3 = 2048, c2 = 512;
  const int64_t rows = int64_t(n) * hw;
  const auto dl = m->debug_tensor("dlogits").data;
  const auto dp = m->debug_tensor("dpooled").data;
  const auto w_fc = m->get_tensor("fc.weight").data;  // (1000, 2048)
  std::vector<double> dp_ref(size_t(n) * c3, 0.0);
  for (int i = 0; i < n; ++i)
    for (int j = 0; j < 1000; ++j)
      for (int k = 0; k < c3; ++k)
        dp_ref[size_t(i) * c3 + k] += double(w_fc[size_t(j) * c3 + k]) * dl[size_t(i) * 1000 + j];
  double e = rel_l2(as_double(dp), dp_ref);
  check(e < 1e-5, "stage fc backward data (dpooled) rel_l2 " + std::to_string(e));

  // bn3 + add + ReLU backward: dy = dpooled / 49, mask y > 0.
  const auto x3 = m->debug_tensor("act/layer4.2.conv3.x").data;
  const auto y3 = m->debug_tensor("act/layer4.2.conv3.y").data;
  const auto sv3 = m->debug_tensor("saved/layer4.2.conv3").data;  // mean, invstd, ...
  const auto g3 = m->get_tensor("layer4.2.bn3.weight").data;
  std::vector<double> g(size_t(rows) * c3), db(c3, 0.0), dg(c3, 0.0);
  for (int64_t r = 0; r < rows; ++r)
    for (int c = 0; c < c3; ++c) {
      const size_t i = size_t(r) * c3 + c;
      const double dy = double(dp[size_t(r / hw) * c3 + c]) / hw;
      g[i] = y3[i] > 0 ? dy : 0.0;
      db[c] += g[i];
      dg[c] += g[i] * (x3[i] - sv3[c]) * sv3[c3 + c];
    }
  e = rel_l2(as_double(m->get_tensor("grad/layer4.2.bn3.bias").data), db);
  check(e < 1e-5, "stage layer4.2.bn3 dbeta rel_l2 " + std::to_string(e));
  e = rel_l2(as_double(m->get_tensor("grad/layer4.2.bn3.weight").data), dg);
  check(e < 1e-5, "stage layer4.2.bn3 dgamma rel_l2 " + std::to_string(e));
  std::vector<double> dx3(g.size());
  for (int64_t r = 0; r < rows; ++r)
    for (int c = 0; c < c3; ++c) {
      const size_t i = size_t(r) * c3 + c;
      const double xhat = (x3[i] - sv3[c]) * sv3[c3 + c];
      dx3[i] = g3[c] * sv3[c3 + c] * (g[i] - db[c] / rows - xhat * dg[c] / rows);
    }
  // conv3 (1x1, 512 -> 2048): dW[co][ci] = sum_r y2[r][ci] dx3[r][co]
  const auto y2 = m->debug_tensor("act/layer4.2.conv2.y").data;
  std::vector<double> dw(size_t(c3) * c2, 0.0);
  for (int64_t r = 0; r < rows; ++r)
    for (int co = 0; co < c3; ++co) {
      const double d = dx3[size_t(r) * c3 + co];
      if (d == 0.0) continue;
      double* out = &dw[size_t(co) * c2];
      const float* in = &y2[size_t(r) * c2];
      for (int ci = 0; ci < c2; ++ci)
        out[ci] += d * in[ci];
    }
  e = rel_l2(as_double(m->get_tensor("grad/layer4.2.conv3.weight").data), dw);
  check(e < 1e-4, "stage layer4.2.conv3 weight gradient rel_l2 " + std::to_string(e));
  // conv3 backward data then bn2 + ReLU backward.
  const auto w3 = m->get_tensor("layer4.2.conv3.weight").data;  // (2048, 512, 1, 1)
  const auto x2 = m->debug_tensor("act/layer4.2.conv2.x").data;
  const auto sv2 = m->debug_tensor("saved/layer4.2.conv2").data;
  std::vector<double> g2(size_t(rows) * c2, 0.0), db2(c2, 0.0), dg2(c2, 0.0);
  for (int64_t r = 0; r < rows; ++r) {
    double* out = &g2[size_t(r) * c2];
    for (int co = 0; co < c3; ++co) {
      const double d = dx3[size_t(r) * c3 + co];
      const float* wr = &w3[size_t(co) * c2];
      for (int ci = 0; ci < c2; ++ci)
        out[ci] += d * wr[ci];
    }
    for (int c = 0; c < c2; ++c) {
      const size_t i = size_t(r) * c2 + c;
      if (!(y2[i] > 0)) g2[i] = 0.0;
      db2[c] += g2[i];
      dg2[c] += g2[i] * (x2[i] - sv2[c]) * sv2[c2 + c];
    }
  }
  e = rel_l2(as_double(m->get_tensor("grad/layer4.2.bn2.bias").data), db2);
  check(e < 1e-4,
        "stage layer4.2.bn2 dbeta (after conv3 backward data) rel_l2 " + std::to_string(e));
  e = rel_l2(as_double(m->get_tensor("grad/layer4.2.bn2.weight").data), dg2);
  check(e < 1e-4, "stage layer4.2.bn2 dgamma rel_l2 " + std::to_string(e));

  // The forward convolutions themselves (exact FP32 gives ~1e-6; FFT/Winograd/TF32
  // show as 1e-4 and more): conv3 (1x1) from y2, conv2 (3x3) from y1.
  {
    std::vector<double> x3_ref(size_t(rows) * c3, 0.0);
    for (int64_t r = 0; r < rows; ++r)
      for (int co = 0; co < c3; ++co) {
        double acc = 0;
        for (int ci = 0; ci < c2; ++ci)
          acc += double(y2[size_t(r) * c2 + ci]) * w3[size_t(co) * c2 + ci];
        x3_ref[size_t(r) * c3 + co] = acc;
      }
    e = rel_l2(as_double(x3), x3_ref);
    check(e < 1e-5, "stage forward layer4.2.conv3 output vs exact rel_l2 " + std::to_string(e));
  }
  // bn2 dx, then conv2 (3x3, stride 1, pad 1, 512 -> 512 at 7x7): weight and data
  // gradients; weights KRSC on the host as [co][kh][kw][ci].
  const auto g2w = m->get_tensor("layer4.2.bn2.weight").data;
  std::vector<double> dx2(g2.size());
  for (int64_t r = 0; r < rows; ++r)
    for (int c = 0; c < c2; ++c) {
      const size_t i = size_t(r) * c2 + c;
      const double xhat = (x2[i] - sv2[c]) * sv2[c2 + c];
      dx2[i] = g2w[c] * sv2[c2 + c] * (g2[i] - db2[c] / rows - xhat * dg2[c] / rows);
    }
  const auto y1 = m->debug_tensor("act/layer4.2.conv1.y").data;  // (rows, 512)
  const auto w2t = m->get_tensor("layer4.2.conv2.weight");       // OIHW (512,512,3,3)
  std::vector<double> w2(size_t(c2) * 9 * c2), dw2(w2.size(), 0.0);
  for (int co = 0; co < c2; ++co)
    for (int ci = 0; ci < c2; ++ci)
      for (int k = 0; k < 9; ++k)
        w2[(size_t(co) * 9 + k) * c2 + ci] = w2t.data[(size_t(co) * c2 + ci) * 9 + k];
  std::vector<double> dy1(size_t(rows) * c2, 0.0);
  for (int b = 0; b < n; ++b)
    for (int oh = 0; oh < 7; ++oh)
      for (int ow = 0; ow < 7; ++ow) {
        const size_t orow = (size_t(b) * 7 + oh) * 7 + ow;
        for (int kh = 0; kh < 3; ++kh)
          for (int kw = 0; kw < 3; ++kw) {
            const int ih = oh + kh - 1, iw = ow + kw - 1;
            if (ih < 0 || ih >= 7 || iw < 0 || iw >= 7) continue;
            const size_t irow = (size_t(b) * 7 + ih) * 7 + iw;
            const int k = kh * 3 + kw;
            for (int co = 0; co < c2; ++co) {
              const double d = dx2[orow * c2 + co];
              double* dwp = &dw2[(size_t(co) * 9 + k) * c2];
              const float* in = &y1[irow * c2];
              const double* wp = &w2[(size_t(co) * 9 + k) * c2];
              double* dip = &dy1[irow * c2];
              for (int ci = 0; ci < c2; ++ci) {
                dwp[ci] += d * in[ci];
                dip[ci] += d * wp[ci];
              }
            }
          }
      }
  {
    std::vector<double> x2_ref(size_t(rows) * c2, 0.0);
    for (int b = 0; b < n; ++b)
      for (int oh = 0; oh < 7; ++oh)
        for (int ow = 0; ow < 7; ++ow)
          for (int kh = 0; kh < 3; ++kh)
            for (int kw = 0; kw < 3; ++kw) {
              const int ih = oh + kh - 1, iw = ow + kw - 1;
              if (ih < 0 || ih >= 7 || iw < 0 || iw >= 7) continue;
              const float* in = &y1[((size_t(b) * 7 + ih) * 7 + iw) * c2];
              double* out = &x2_ref[((size_t(b) * 7 + oh) * 7 + ow) * c2];
              for (int co = 0; co < c2; ++co) {
                const double* wp = &w2[(size_t(co) * 9 + kh * 3 + kw) * c2];
                double acc = 0;
                for (int ci = 0; ci < c2; ++ci)
                  acc += wp[ci] * in[ci];
                out[co] += acc;
              }
            }
    e = rel_l2(as_double(x2), x2_ref);
    check(e < 1e-5,
          "stage forward layer4.2.conv2 (3x3) output vs exact rel_l2 " + std::to_string(e));
  }
  const auto dw2_dev = m->get_tensor("grad/layer4.2.conv2.weight");  // OIHW
  std::vector<double> dw2_oihw(dw2.size());
  for (int co = 0; co < c2; ++co)
    for (int ci = 0; ci < c2; ++ci)
      for (int k = 0; k < 9; ++k)
        dw2_oihw[(size_t(co) * c2 + ci) * 9 + k] = dw2[(size_t(co) * 9 + k) * c2 + ci];
  e = rel_l2(as_double(dw2_dev.data), dw2_oihw);
  check(e < 1e-4, "stage layer4.2.conv2 (3x3) weight gradient rel_l2 " + std::to_string(e));
  // bn1 + ReLU backward on conv2's data gradient.
  const auto x1 = m->debug_tensor("act/layer4.2.conv1.x").data;
  const auto sv1 = m->debug_tensor("saved/layer4.2.conv1").data;
  const auto g1w = m->get_tensor("layer4.2.bn1.weight").data;
  std::vector<double> db1(c2, 0.0), dg1(c2, 0.0);
  for (int64_t r = 0; r < rows; ++r)
    for (int c = 0; c < c2; ++c) {
      const size_t i = size_t(r) * c2 + c;
      if (!(y1[i] > 0)) dy1[i] = 0.0;
      db1[c] += dy1[i];
      dg1[c] += dy1[i] * (x1[i] - sv1[c]) * sv1[c2 + c];
    }
  e = rel_l2(as_double(m->get_tensor("grad/layer4.2.bn1.bias").data), db1);
  check(e < 1e-4,
        "stage layer4.2.bn1 dbeta (after conv2 data gradient) rel_l2 " + std::to_string(e));
  std::vector<double> dx1(dy1.size());
  for (int64_t r = 0; r < rows; ++r)
    for (int c = 0; c < c2; ++c) {
      const size_t i = size_t(r) * c2 + c;
      const double xhat = (x1[i] - sv1[c]) * sv1[c2 + c];
      dx1[i] = g1w[c] * sv1[c2 + c] * (dy1[i] - db1[c] / rows - xhat * dg1[c] / rows);
    }
  // conv1 (1x1, 2048 -> 512) on the block input (layer4.1's output).
  const auto yin = m->debug_tensor("act/layer4.1.conv3.y").data;  // (rows, 2048)
  const auto w1 = m->get_tensor("layer4.2.conv1.weight").data;    // (512, 2048, 1, 1)
  std::vector<double> dw1(size_t(c2) * c3, 0.0), din(g.size(), 0.0);
  for (int64_t r = 0; r < rows; ++r)
    for (int co = 0; co < c2; ++co) {
      const double d = dx1[size_t(r) * c2 + co];
      double* dwp = &dw1[size_t(co) * c3];
      const float* in = &yin[size_t(r) * c3];
      const float* wp = &w1[size_t(co) * c3];
      double* dip = &din[size_t(r) * c3];
      for (int ci = 0; ci < c3; ++ci) {
        dwp[ci] += d * in[ci];
        dip[ci] += d * wp[ci];
      }
    }
  e = rel_l2(as_double(m->get_tensor("grad/layer4.2.conv1.weight").data), dw1);
  check(e < 1e-4, "stage layer4.2.conv1 weight gradient rel_l2 " + std::to_string(e));
  // The block input's gradient: conv1's data gradient plus the identity's (g).
  for (size_t i = 0; i < din.size(); ++i)
    din[i] += g[i];
  const auto y41 = yin;  // layer4.1's output: its ReLU mask
  const auto x41 = m->debug_tensor("act/layer4.1.conv3.x").data;
  const auto sv41 = m->debug_tensor("saved/layer4.1.conv3").data;
  std::vector<double> db41(c3, 0.0), dg41(c3, 0.0);
  for (int64_t r = 0; r < rows; ++r)
    for (int c = 0; c < c3; ++c) {
      const size_t i = size_t(r) * c3 + c;
      const double gg = y41[i] > 0 ? din[i] : 0.0;
      db41[c] += gg;
      dg41[c] += gg * (x41[i] - sv41[c]) * sv41[c3 + c];
    }
  e = rel_l2(as_double(m->get_tensor("grad/layer4.1.bn3.bias").data), db41);
  check(e < 1e-4,
        "stage layer4.1.bn3 dbeta (identity + conv1 data gradient) rel_l2 " + std::to_string(e));
  e = rel_l2(as_double(m->get_tensor("grad/layer4.1.bn3.weight").data), dg41);
  check(e < 1e-4, "stage layer4.1.bn3 dgamma rel_l2 " + std::to_string(e));
}

}  // namespace gpuvs_check
