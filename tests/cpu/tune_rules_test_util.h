// Synthetic run files for the tests of `gpuvs tune`'s rules (test_tune_rules*.cpp):
// results with the real ids (suite/produces.h) and the parameters the benchmarks and
// the trainer write, and the check every test's output goes through
// (expect_rests_on_run: each setting's evidence names results of the run, with their
// values).
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "suite/produces.h"
#include "tune/recommend.h"

namespace gpuvs::tune {

inline constexpr int64_t kMiB = int64_t{1} << 20;

inline RunFile run_with_gpus(int n) {
  RunFile run;
  for (int i = 0; i < n; ++i) {
    GpuInfo g;
    g.index = i;
    g.name = "NVIDIA H200";
    g.uuid = "GPU-" + std::to_string(i);
    run.system.gpus.push_back(g);
  }
  return run;
}

inline Result result(std::string id, double value, std::string unit, double noise = 0.002) {
  Result r;
  r.id = std::move(id);
  r.value = value;
  r.unit = std::move(unit);
  r.devices = {0};
  r.stats.median = value;
  r.stats.noise = noise;
  r.stats.samples = 10;
  return r;
}

struct RateOptions {
  bool graph = true;
  int64_t accumulate = 1;
  double noise = 0.002;
  Status status = Status::kOk;
  int gpu = 0;
};

inline Result rate(const std::string& model, const std::string& mode, const std::string& precision,
                   int64_t batch, double value, RateOptions o = {}) {
  Result r = result(result_id(Family::kModelRate, {model, mode, precision}), value,
                    model == "bert-large" ? "seq/s" : "img/s", o.noise);
  r.devices = {o.gpu};
  r.parameters = {{"model", model},
                  {"mode", mode},
                  {"precision", precision},
                  {"batch", batch},
                  {"accumulate", o.accumulate},
                  {"global_batch", batch * o.accumulate},
                  {"graph", o.graph},
                  {"batch_mode", std::string("fixed")}};
  if (model == "bert-large") {
    r.parameters["seq"] = int64_t{128};
    r.parameters["attention"] = std::string("unfused");
  }
  r.status = o.status;
  if (o.status != Status::kOk) r.status_reason = "training loss after the timed steps is nan";
  return r;
}

inline Result max_batch(const std::string& precision, int64_t max, int64_t recommended,
                        double headroom) {
  Result r = rate("bert-large", "train", precision, recommended, 0);
  r.id = result_id(Family::kModelMaxBatch, {"bert-large", "train", precision});
  r.value = static_cast<double>(max);
  r.unit = "seq";
  r.stats.noise = 0;
  r.parameters["batch_mode"] = std::string("max");
  r.parameters["max_batch"] = max;
  r.parameters["recommended_batch"] = recommended;
  r.parameters["headroom"] = headroom;
  r.parameters["first_failure"] = max + 8;
  return r;
}

inline Result gemm(const std::string& precision, int64_t m, int64_t n, int64_t k, double tflops,
                   Status status = Status::kOk) {
  Result r = result(result_id(Family::kGemm, {precision}), tflops * 1e12, "FLOP/s");
  r.parameters = {{"m", m},
                  {"n", n},
                  {"k", k},
                  {"layout", std::string("TN")},
                  {"compute_type", std::string("32F")},
                  {"algorithm_index", int64_t{1}},
                  {"algorithm_id", int64_t{66}},
                  {"tile_id", int64_t{18}},
                  {"stages_id", int64_t{20}},
                  {"splitk", int64_t{1}},
                  {"algorithms_tried", int64_t{8}}};
  r.status = status;
  return r;
}

inline Result busbw(const std::string& op, int64_t bytes, const std::string& algo,
                    const std::string& proto, double gbs, double noise = 0.002) {
  Result r = result(result_id(Family::kCollectiveBusbw, {op}), gbs * 1e9, "B/s", noise);
  r.devices = {0, 1};
  r.parameters = {{"bytes", bytes}, {"ranks", int64_t{2}}, {"dtype", std::string("float32")},
                  {"algo", algo},   {"proto", proto},      {"graph", false}};
  return r;
}

inline Result host_copy(const std::string& dir, const std::string& memory, int64_t bytes,
                        double gbs) {
  Result r = result(result_id(Family::kHostCopy, {dir, memory}), gbs * 1e9, "B/s");
  r.parameters = {{"bytes", bytes}, {"memory", memory}};
  return r;
}

inline constexpr const char* kVerdict =
    "Only for sparse access. Reading a whole 256 MiB host buffer once moves the same bytes "
    "either way: zero-copy 53.1 GB/s against cudaMemcpy 54.3 GB/s (pinned).";

inline Result sparse(const std::string& verdict) {
  Result r = result(result_id(Family::kZeroCopySparse), 0.0004, "s");
  r.parameters = {{"buffer_bytes", 256 * kMiB},
                  {"memory", std::string("mapped")},
                  {"stride_bytes", int64_t{4096}},
                  {"verdict", verdict}};
  return r;
}

// Every setting rests on results of the run: measured evidence is an ok result with
// that id, those parameters and that value; derived evidence names an ok result too.
inline void expect_rests_on_run(const RunFile& run, const std::vector<Setting>& settings) {
  for (const Setting& s : settings) {
    SCOPED_TRACE(s.key + " = " + param_text(s.value) + ": " + s.why);
    EXPECT_FALSE(s.rests_on.empty());
    EXPECT_FALSE(s.why.empty());
    EXPECT_EQ(s.why.find('\n'), std::string::npos);
    for (const Evidence& e : s.rests_on) {
      SCOPED_TRACE(e.result_id);
      const bool found = std::any_of(run.results.begin(), run.results.end(), [&](const Result& r) {
        if (r.id != e.result_id || r.status != Status::kOk) return false;
        for (const auto& [k, v] : e.parameters) {
          if (e.basis == "derived" && k == "over") continue;
          const auto it = r.parameters.find(k);
          if (it == r.parameters.end() || !(it->second == v)) return false;
        }
        return e.basis == "derived"
                   ? e.parameters.contains("over") && e.unit == "x"
                   : e.basis == "measured" && r.value == e.value && r.unit == e.unit;
      });
      EXPECT_TRUE(found) << "basis " << e.basis;
    }
  }
}

inline void expect_rests_on_run(const RunFile& run, const Recommendations& rec) {
  expect_rests_on_run(run, rec.settings);
}

inline const Setting* find(const Recommendations& rec, const std::string& key,
                           const std::vector<std::string>& scope = {}) {
  for (const Setting& s : rec.settings)
    if (s.key == key && (scope.empty() || s.scope == scope)) return &s;
  return nullptr;
}

inline bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

}  // namespace gpuvs::tune
