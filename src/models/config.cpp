// Names of modes, precisions and attention kinds as the CLI and run files spell them.
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

constexpr std::array<std::pair<Attention, std::string_view>, 2> kAttentions{{
    {Attention::kUnfused, "unfused"},
    {Attention::kFused, "fused"},
}};

constexpr std::array<std::pair<AttentionKernel, std::string_view>, 3> kAttentionKernels{{
    {AttentionKernel::kAuto, "auto"},
    {AttentionKernel::kCudnn, "cudnn"},
    {AttentionKernel::kGpuvs, "gpuvs"},
}};

constexpr std::array<std::pair<Recompute, std::string_view>, 3> kRecomputes{{
    {Recompute::kNone, "none"},
    {Recompute::kSelective, "selective"},
    {Recompute::kFull, "full"},
}};

// The name of `v` in `table`, or "unknown".
template <class E, size_t N>
std::string_view name_of(const std::array<std::pair<E, std::string_view>, N>& table, E v) {
  for (const auto& [value, name] : table)
    if (value == v) return name;
  return "unknown";
}

template <class E, size_t N>
std::optional<E> value_of(const std::array<std::pair<E, std::string_view>, N>& table,
                          std::string_view s) {
  for (const auto& [value, name] : table)
    if (name == s) return value;
  return std::nullopt;
}

}  // namespace

std::string_view to_string(Mode m) {
  return name_of(kModes, m);
}

std::string_view to_string(Precision p) {
  return name_of(kPrecisions, p);
}

std::string_view to_string(Attention a) {
  return name_of(kAttentions, a);
}

std::optional<Mode> mode_from_string(std::string_view s) {
  return value_of(kModes, s);
}

std::optional<Precision> precision_from_string(std::string_view s) {
  return value_of(kPrecisions, s);
}

std::optional<Attention> attention_from_string(std::string_view s) {
  return value_of(kAttentions, s);
}

std::string_view to_string(AttentionKernel k) {
  return name_of(kAttentionKernels, k);
}

std::optional<AttentionKernel> attention_kernel_from_string(std::string_view s) {
  return value_of(kAttentionKernels, s);
}

std::string_view to_string(Recompute r) {
  return name_of(kRecomputes, r);
}

std::optional<Recompute> recompute_from_string(std::string_view s) {
  return value_of(kRecomputes, s);
}

std::optional<std::string> fp8_refusal(int major, int minor) {
  if (major * 10 + minor >= 89) return std::nullopt;
  return "fp8 needs FP8 tensor cores (compute capability 8.9 or newer: Ada, Hopper, "
         "Blackwell); this GPU is " +
         std::to_string(major) + "." + std::to_string(minor);
}

}  // namespace gpuvs::models
