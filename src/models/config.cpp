// Names of modes and precisions as the CLI and run files spell them.
#include "models/config.h"

#include <array>
#include <utility>

namespace gpuvs::models {

namespace {

constexpr std::array<std::pair<Mode, std::string_view>, 2> kModes{{
    {Mode::kTrain, "train"},
    {Mode::kInfer, "infer"},
}};

constexpr std::array<std::pair<Precision, std::string_view>, 5> kPrecisions{{
    {Precision::kFp32, "fp32"},
    {Precision::kTf32, "tf32"},
    {Precision::kFp16, "fp16"},
    {Precision::kBf16, "bf16"},
    {Precision::kFp8, "fp8"},
}};

}  // namespace

std::string_view to_string(Mode m) {
  for (const auto& [mode, name] : kModes)
    if (mode == m) return name;
  return "unknown";
}

std::string_view to_string(Precision p) {
  for (const auto& [precision, name] : kPrecisions)
    if (precision == p) return name;
  return "unknown";
}

std::optional<Mode> mode_from_string(std::string_view s) {
  for (const auto& [mode, name] : kModes)
    if (name == s) return mode;
  return std::nullopt;
}

std::optional<Precision> precision_from_string(std::string_view s) {
  for (const auto& [precision, name] : kPrecisions)
    if (name == s) return precision;
  return std::nullopt;
}

}  // namespace gpuvs::models
