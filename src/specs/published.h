// Published figures (data/published/*.json, embedded): results measured by others
// (NVIDIA DeepLearningExamples, MLPerf), each with its source. Shown labelled
// "published", never mixed with gpuvs's own measurements.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace gpuvs {

class Catalogue;

struct PublishedFigure {
  std::string gpu;        // catalogue id: "A100-SXM4-80GB"
  std::string metric;     // metric id: "model.resnet50.train"
  double value = 0;       // base unit of the metric
  std::string unit;       // that base unit
  std::string precision;  // as published: "mixed precision (AMP)", "TF32", ...
  std::string setting;    // "batch 256, 1 GPU, PyTorch 22.xx"
  std::string source;     // URL
  std::string publisher;  // "NVIDIA DeepLearningExamples", "MLPerf Inference v4.1"
  std::string date;       // "2024-08-28"
  // The settings in gpuvs's terms ("config" in the file), so that a figure meets only
  // figures and claims of the same settings: the precision the math ran in (one of
  // kPublishedPrecisions; "" where the publisher does not say), the batch per GPU and
  // the sequence length where published. `suite` names the benchmark and software
  // ("MLPerf Inference Offline, closed, TensorRT"): two figures compare only within one.
  std::string precision_key;
  std::optional<int64_t> batch;
  std::optional<int64_t> seq;
  std::string suite;
};

// Precisions a published figure's config may name: gpuvs's model precisions and INT8.
inline constexpr std::string_view kPublishedPrecisions[] = {"fp32", "tf32", "fp16",
                                                            "bf16", "fp8",  "int8"};

// "NVIDIA DeepLearningExamples: mixed precision (AMP), batch 256, 2021-04-20": the
// figure's publisher, settings and date, for notes and why texts.
std::string describe(const PublishedFigure& f);

class Published {
 public:
  static const Published& builtin();
  // Against the built-in catalogue: every figure must name one of its GPUs.
  static Published parse(std::string_view text, std::string_view name);
  // Added: against another catalogue (one given with --catalogue). A figure's "gpu"
  // may be an id or an alias; it is stored as the catalogue id.
  static Published parse(std::string_view text, std::string_view name, const Catalogue& catalogue);
  const std::vector<PublishedFigure>& figures() const { return figures_; }
  std::vector<const PublishedFigure*> for_gpu(std::string_view catalogue_id) const;

 private:
  std::vector<PublishedFigure> figures_;
};

}  // namespace gpuvs
