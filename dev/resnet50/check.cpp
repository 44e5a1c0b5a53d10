// dev check of ResNet-50 (src/models/resnet50) on one GPU, self-checking:
//   correctness at a small batch: finite differences against the gradients (fp32),
//   gradient accumulation doubles the gradients, same seed -> same loss, training
//   memorises one batch (loss falls), the train model's eval forward equals an
//   inference model's; then throughput at batch 256, with and without a CUDA graph,
//   and a per-layer breakdown.
// Usage: gpuvs_resnet50_check [--quick] [--batch N] [precision...]
// Prints PASS/FAIL lines; exit 1 when any check fails.
#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <functional>
#include <iterator>
#include <string>
#include <vector>

#include "core/error.h"
#include "dev/resnet50/check_util.h"
#include "gpu/device.h"
#include "models/model.h"

using namespace gpuvs;
using namespace gpuvs::models;

namespace gpuvs_check {

int failures = 0;

void check(bool ok, const std::string& what) {
  std::printf("%s %s\n", ok ? "PASS" : "FAIL", what.c_str());
  std::fflush(stdout);
  if (!ok) ++failures;
}

std::unique_ptr<Model> build(Precision p, Mode m, int batch, uint64_t seed) {
  ModelConfig c;
  c.model = "resnet50";
  c.precision = p;
  c.mode = m;
  c.batch = batch;
  c.seed = seed;
  const auto t0 = std::chrono::steady_clock::now();
  auto model = make_model(c, 0);
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::printf("  built %s %s batch %d in %.1f s\n", std::string(to_string(p)).c_str(),
              std::string(to_string(m)).c_str(), batch, s);
  return model;
}

double rel_l2(const std::vector<double>& got, const std::vector<double>& want) {
  double num = 0, den = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    num += (got[i] - want[i]) * (got[i] - want[i]);
    den += want[i] * want[i];
  }
  return std::sqrt(num / std::max(den, 1e-300));
}

std::vector<double> as_double(const std::vector<float>& v) {
  return {v.begin(), v.end()};
}

}  // namespace gpuvs_check

namespace {

using namespace gpuvs_check;

void finite_differences(int batch) {
  auto m = build(Precision::kFp32, Mode::kTrain, batch);
  m->forward_backward(false);
  struct Probe {
    const char* name;
    int64_t index;
  };
  const Probe probes[] = {{"fc.bias", 3},
                          {"fc.weight", 5 * 2048 + 7},
                          {"layer4.2.bn3.weight", 0},
                          {"layer4.2.bn3.bias", 11},
                          {"bn1.weight", 5},
                          {"bn1.bias", 9},
                          {"layer3.1.conv2.weight", 123},
                          {"layer1.0.conv1.weight", 17},
                          {"conv1.weight", 3 * 147 + 2 * 49 + 24},
                          {"layer2.0.downsample.0.weight", 40}};
  for (const auto& p : probes) {
    try {
      m->forward_backward(false);
      const HostTensor g = m->get_tensor(std::string("grad/") + p.name);
      const double analytic = g.data[size_t(p.index)];
      HostTensor w = m->get_tensor(p.name);
      const float w0 = w.data[size_t(p.index)];
      // Large enough that the loss moves by ~2e-4 (fp32 rounding of the loss, ~1e-6,
      // stays below 1%), small enough to cross few ReLU/max-pool kinks.
      const float eps =
          static_cast<float>(std::clamp(1e-4 / std::max(std::fabs(analytic), 1e-12), 1e-4, 1e-2));
      w.data[size_t(p.index)] = w0 + eps;
      m->set_tensor(p.name, w);
      m->forward_backward(false);
      const double lp = m->loss();
      w.data[size_t(p.index)] = w0 - eps;
      m->set_tensor(p.name, w);
      m->forward_backward(false);
      const double lm = m->loss();
      w.data[size_t(p.index)] = w0;
      m->set_tensor(p.name, w);
      const double numeric = (lp - lm) / (2.0 * eps);
      const bool ok = std::fabs(numeric - analytic) <= 1e-4 + 0.1 * std::fabs(numeric);
      char buf[256];
      std::snprintf(buf, sizeof buf, "fp32 grad %s[%lld]: analytic %.6g numeric %.6g (eps %.2g)",
                    p.name, static_cast<long long>(p.index), analytic, numeric, eps);
      check(ok, buf);
    } catch (const std::exception& e) {
      check(false, std::string("fp32 grad ") + p.name + ": " + e.what());
    }
  }
}

// The same weights and batch must give the same gradients on every call: a second
// and third forward_backward are compared with the first for every parameter (state
// left over from a previous step, or a race, shows here).
void repeatability(Precision p, int batch) {
  const std::string prec(to_string(p));
  auto m = build(p, Mode::kTrain, batch);
  const auto names = m->parameter_names();
  std::vector<std::vector<double>> first;
  m->forward_backward(false);
  for (const auto& n : names)
    first.push_back(as_double(m->get_tensor("grad/" + n).data));
  for (int call = 2; call <= 3; ++call) {
    m->forward_backward(false);
    double worst = 0;
    std::string worst_name;
    for (size_t i = 0; i < names.size(); ++i) {
      const double e = rel_l2(as_double(m->get_tensor("grad/" + names[i]).data), first[i]);
      if (!(e <= worst)) {
        worst = e;
        worst_name = names[i];
      }
    }
    check(worst < (p == Precision::kFp32 ? 1e-4 : 1e-2),
          prec + " call " + std::to_string(call) + " repeats call 1's gradients (worst " +
              worst_name + " rel_l2 " + std::to_string(worst) + ")");
  }
}

// Two SGD steps against the rule computed on the host from the model's own gradients:
// v = 0.9 v + g + wd w (wd 1e-4 on conv and fc weights only), w -= lr v, lr 0.1 N / 256.
void sgd_rule(Precision p, int batch) {
  const std::string prec(to_string(p));
  auto m = build(p, Mode::kTrain, batch);
  const char* names[] = {"conv1.weight",      "layer1.0.conv1.weight",
                         "layer3.5.bn3.bias", "layer4.2.conv3.weight",
                         "fc.weight",         "fc.bias"};
  const double lr = 0.1 * batch / 256;
  std::vector<std::vector<double>> v(std::size(names));
  for (int step = 1; step <= 2; ++step) {
    m->forward_backward(false);
    std::vector<std::vector<double>> w0, want;
    for (size_t i = 0; i < std::size(names); ++i) {
      const std::string n = names[i];
      const auto w = as_double(m->get_tensor(n).data);
      const auto g = as_double(m->get_tensor("grad/" + n).data);
      const bool decay = n.find("bn") == std::string::npos && n != "fc.bias";
      if (v[i].empty()) v[i].assign(w.size(), 0.0);
      std::vector<double> next(w.size());
      for (size_t k = 0; k < w.size(); ++k) {
        v[i][k] = 0.9 * v[i][k] + g[k] + (decay ? 1e-4 * w[k] : 0.0);
        next[k] = w[k] - lr * v[i][k];
      }
      w0.push_back(w);
      want.push_back(next);
    }
    m->optimizer_step(1);
    for (size_t i = 0; i < std::size(names); ++i) {
      const auto got = as_double(m->get_tensor(names[i]).data);
      std::vector<double> dgot(got.size()), dwant(got.size());
      for (size_t k = 0; k < got.size(); ++k) {
        dgot[k] = got[k] - w0[i][k];
        dwant[k] = want[i][k] - w0[i][k];
      }
      const double e = rel_l2(dgot, dwant);
      check(e < (p == Precision::kFp32 ? 1e-4 : 2e-2),
            prec + " sgd step " + std::to_string(step) + " " + names[i] +
                " follows the rule (rel_l2 of the change " + std::to_string(e) + ")");
    }
  }
}

void small_batch_checks(Precision p, int batch) {
  const std::string prec(to_string(p));
  auto m = build(p, Mode::kTrain, batch);
  check(m->parameter_count() == 25557032, prec + " parameter count " +
                                              std::to_string(m->parameter_count()) +
                                              " (torchvision 25557032)");
  check(m->parameter_names().size() == 161, prec + " 161 parameter tensors");
  m->forward_backward(false);
  const double l0 = m->loss();
  check(std::isfinite(l0) && std::fabs(l0 - std::log(1000.0)) < 1.5,
        prec + " initial loss " + std::to_string(l0) + " near ln(1000)=6.91");
  const HostTensor logits = m->get_tensor("logits");
  bool finite = true;
  for (float v : logits.data)
    finite &= std::isfinite(v);
  check(finite && logits.shape == std::vector<int64_t>{batch, 1000}, prec + " logits finite");

  // Accumulation: two identical micro-steps give twice one micro-step's gradient.
  const HostTensor g1 = m->get_tensor("grad/layer3.0.bn2.weight");
  const HostTensor gf1 = m->get_tensor("grad/fc.bias");
  m->forward_backward(true);
  const HostTensor g2 = m->get_tensor("grad/layer3.0.bn2.weight");
  const HostTensor gf2 = m->get_tensor("grad/fc.bias");
  double worst = 0;
  for (size_t i = 0; i < g1.data.size(); ++i)
    worst = std::max(worst, std::fabs(g2.data[i] - 2.0 * g1.data[i]) /
                                (1e-3 * 2.0 * std::fabs(g1.data[i]) + 1e-6));
  for (size_t i = 0; i < gf1.data.size(); ++i)
    worst = std::max(worst, std::fabs(gf2.data[i] - 2.0 * gf1.data[i]) /
                                (1e-3 * 2.0 * std::fabs(gf1.data[i]) + 1e-6));
  check(worst < 30.0, prec + " accumulation doubles the gradients (worst ratio to tolerance " +
                          std::to_string(worst) + ")");

  // Same seed, same first loss; and the eval forward of a train model (fresh running
  // stats) equals an inference model's (same seed, same weights).
  auto m2 = build(p, Mode::kTrain, batch);
  m2->forward();
  const HostTensor ev = m2->get_tensor("logits");
  m2->forward_backward(false);
  const double l0b = m2->loss();
  const double tol = p == Precision::kFp32 ? 1e-5 : 1e-3;
  check(std::fabs(l0b - l0) <= tol * std::fabs(l0),
        prec + " same seed, same loss (" + std::to_string(l0) + " vs " + std::to_string(l0b) + ")");
  auto inf = build(p, Mode::kInfer, batch);
  inf->forward();
  const HostTensor iv = inf->get_tensor("logits");
  double diff = 0, scale = 0;
  bool all_finite = true;
  for (size_t i = 0; i < ev.data.size(); ++i) {
    all_finite &= std::isfinite(ev.data[i]) && std::isfinite(iv.data[i]);
    diff = std::max(diff, double(std::fabs(ev.data[i] - iv.data[i])));
    scale = std::max(scale, double(std::fabs(iv.data[i])));
  }
  check(all_finite && diff <= 0.02 * scale + 1e-3,
        prec + " eval forward equals inference model (max diff " + std::to_string(diff) +
            ", max |logit| " + std::to_string(scale) + ")");
  m2.reset();
  inf.reset();

  // Memorise one batch.
  std::vector<double> losses;
  for (int step = 0; step < 40; ++step) {
    m->forward_backward(false);
    m->optimizer_step(1);
    losses.push_back(m->loss());
  }
  all_finite = true;
  for (double l : losses)
    all_finite &= std::isfinite(l);
  std::printf("  %s losses:", prec.c_str());
  for (size_t i = 0; i < losses.size(); i += 5)
    std::printf(" %.3f", losses[i]);
  std::printf(" ... %.3f\n", losses.back());
  check(all_finite && losses.back() < losses.front() - 1.0,
        prec + " training on one batch lowers the loss by more than 1");
}

double time_steps(Model& m, bool train, bool graph, int steps) {
  cudaStream_t s = m.stream();
  const auto step = [&](cudaStream_t) {
    if (train) {
      m.forward_backward(false);
      m.optimizer_step(1);
    } else {
      m.forward();
    }
  };
  std::unique_ptr<GraphExec> g;
  if (graph) g = std::make_unique<GraphExec>(s, step);
  for (int i = 0; i < 5; ++i)
    graph ? g->launch(s) : step(s);
  Event a, b;
  a.record(s);
  for (int i = 0; i < steps; ++i)
    graph ? g->launch(s) : step(s);
  b.record(s);
  b.synchronize();
  return double(m.items_per_micro_step()) * steps / b.seconds_since(a);
}

void throughput(Precision p, int batch, bool breakdown) {
  const std::string prec(to_string(p));
  for (Mode mode : {Mode::kTrain, Mode::kInfer}) {
    const bool train = mode == Mode::kTrain;
    try {
      auto m = build(p, mode, batch);
      const double eager = time_steps(*m, train, false, 10);
      const double graphed = time_steps(*m, train, true, 20);
      const double tflops = m->flops_per_micro_step() / m->items_per_micro_step() * graphed / 1e12;
      std::printf("RESULT %s %s batch %d: %.0f img/s eager, %.0f img/s graph (%.0f TFLOP/s)\n",
                  prec.c_str(), train ? "train" : "infer", batch, eager, graphed, tflops);
      if (train) check(std::isfinite(m->loss()), prec + " loss finite after timed steps");
      if (breakdown) {
        m->enable_layer_timing(true);
        for (int i = 0; i < 3; ++i) {
          if (train) {
            m->forward_backward(false);
            m->optimizer_step(1);
          } else {
            m->forward();
          }
        }
        auto t = m->layer_times();
        double total = 0;
        for (auto& [n, s] : t)
          total += s;
        std::sort(t.begin(), t.end(), [](auto& x, auto& y) { return x.second > y.second; });
        std::printf("  breakdown %s %s (per step, top 25 of %zu, total %.2f ms):\n", prec.c_str(),
                    train ? "train" : "infer", t.size(), total / 3 * 1e3);
        for (size_t i = 0; i < std::min<size_t>(25, t.size()); ++i)
          std::printf("    %-36s %8.3f ms\n", t[i].first.c_str(), t[i].second / 3 * 1e3);
        m->enable_layer_timing(false);
      }
    } catch (const std::exception& e) {
      check(false, prec + (train ? " train" : " infer") + " throughput: " + e.what());
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  bool quick = false;
  int batch = 256;
  std::vector<Precision> precisions;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--quick")) {
      quick = true;
    } else if (!std::strcmp(argv[i], "--batch") && i + 1 < argc) {
      batch = std::atoi(argv[++i]);
    } else if (auto p = precision_from_string(argv[i])) {
      precisions.push_back(*p);
    } else {
      std::fprintf(stderr, "unknown argument %s\n", argv[i]);
      return 2;
    }
  }
  if (precisions.empty())
    precisions = {Precision::kBf16, Precision::kFp16, Precision::kTf32, Precision::kFp32};
  const auto guarded = [](const std::string& what, const std::function<void()>& f) {
    try {
      f();
    } catch (const std::exception& e) {
      check(false, what + ": exception: " + e.what());
    }
  };
  guarded("backward stages", [] { backward_stages(16); });
  for (Precision p : precisions)
    guarded(std::string(to_string(p)) + " repeatability", [p] {
      repeatability(p, 16);
      sgd_rule(p, 16);
    });
  guarded("finite differences", [] { finite_differences(8); });
  for (Precision p : precisions)
    guarded(std::string(to_string(p)) + " small batch", [p] { small_batch_checks(p, 16); });
  if (!quick)
    for (Precision p : precisions)
      guarded(std::string(to_string(p)) + " throughput",
              [p, batch] { throughput(p, batch, p == Precision::kBf16); });
  guarded("fp8 refusal", [] {
    ModelConfig c;
    c.model = "resnet50";
    c.precision = Precision::kFp8;
    bool refused = false;
    try {
      make_model(c, 0);
    } catch (const UsageError&) {
      refused = true;
    }
    check(refused, "fp8 resnet50 refused with a usage error");
  });
  std::printf("%s: %d failure(s)\n", failures ? "FAILED" : "ALL PASSED", failures);
  return failures ? 1 : 0;
}
