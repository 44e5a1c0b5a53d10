// make_model: the registry of models this build has.
#include <fmt/format.h>

#include <functional>
#include <memory>
#include <string_view>
#include <utility>

#include "core/error.h"
#include "models/bert/bert.h"
#include "models/llama/training.h"
#include "models/model.h"
#include "models/resnet50/resnet50.h"

namespace gpuvs::models {

namespace {

struct Entry {
  std::string_view name;
  std::function<std::unique_ptr<Model>(const ModelConfig&, int)> make;
};

std::unique_ptr<Model> make_resnet50(const ModelConfig& c, int device) {
  if (c.precision == Precision::kFp8)
    throw UsageError("fp8 is for BERT-large and Llama: ResNet-50 runs fp32, tf32, fp16 or bf16");
  return std::make_unique<resnet50::ResNet50>(c, device);
}

const Entry kModels[] = {
    {"resnet50", make_resnet50},
    {"bert-large", make_bert_large},
    // The Llama decoder's training; its inference is models/llama/inference.h.
    {"llama-1b", make_llama_training},
    {"llama-3b", make_llama_training},
    {"llama-8b", make_llama_training},
};

}  // namespace

std::unique_ptr<Model> make_model(const ModelConfig& config, int device) {
  for (const auto& e : kModels)
    if (e.name == config.model) return e.make(config, device);
  std::string names;
  for (const auto& e : kModels)
    names += fmt::format("{}{}", names.empty() ? "" : ", ", e.name);
  throw UsageError(fmt::format("unknown model '{}' (models: {})", config.model, names));
}

}  // namespace gpuvs::models
