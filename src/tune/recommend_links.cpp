// The rules of GEMMs and host transfers (recommend.h, rules 5 and 7): the fastest
// cuBLASLt algorithm per shape and whether TF32 or FP8 pays there; pinned, pageable or
// zero-copy host memory.
#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <charconv>
#include <map>

#include "tune/recommend.h"
#include "tune/recommend_detail.h"

namespace gpuvs::tune {

using namespace detail;

namespace {

constexpr std::array<std::string_view, 9> kGemmKeys = {
    "m",       "n",         "k",     "compute_type", "algorithm_index", "algorithm_id",
    "tile_id", "stages_id", "splitk"};
constexpr std::array<std::string_view, 2> kHostKeys = {"bytes", "memory"};
constexpr std::array<std::string_view, 4> kZeroCopyKeys = {"bytes", "buffer_bytes", "memory",
                                                           "stride_bytes"};

const Result* fastest(const std::vector<const Result*>& rs) {
  const Result* best = nullptr;
  for (const Result* r : rs)
    if (!best || r->value > best->value) best = r;
  return best;
}

// ---- GEMM ---------------------------------------------------------------------------

// compute.gemm spells FP8 by its format; a request's "fp8" is E4M3, the one the models use.
std::string gemm_result_precision(const std::string& p) {
  return p == "fp8" ? "fp8_e4m3" : p;
}

Found gemm_at(const RunFile& run, int gpu, const std::string& precision,
              const GemmShapeRequest& s) {
  return find_results(run, Family::kGemm, {{"precision", precision}}, [&](const Result& r) {
    return on_gpu(r, gpu) && int_param(r, "m", 0) == s.m && int_param(r, "n", 0) == s.n &&
           int_param(r, "k", 0) == s.k;
  });
}

std::string gemm_id(const std::string& precision) {
  return id_text(Family::kGemm, {{"precision", precision}});
}

// Whether `num` pays over `den` at the shape: a setting, or an Absent when either lacks
// an ok result.
void pays_rule(const RunFile& run, int gpu, const GemmShapeRequest& s, const std::string& shape,
               const std::string& key, const std::string& num_p, const std::string& den_p,
               Recommendations& out) {
  const Found num = gemm_at(run, gpu, num_p, s), den = gemm_at(run, gpu, den_p, s);
  const Result *a = fastest(num.ok), *b = fastest(den.ok);
  if (!a || !b) {
    out.absent.push_back(
        {"gemm", fmt::format("{}: {} against {}: no ok {} at {}x{}x{}{}", shape, num_p, den_p,
                             gemm_id(a ? den_p : num_p), s.m, s.n, s.k,
                             not_used_note(a ? den.not_ok : num.not_ok, kGemmKeys))});
    return;
  }
  const double ratio = a->value / b->value;
  const bool pays = ratio >= 1 + kPaysGain;
  Setting st = make_setting(
      {"gemm", shape}, key, pays,
      fmt::format("{}: {} {} is {} {}'s {} at this shape ({} pays from {})",
                  pays ? "pays" : "does not pay", num_p, figure(*a), ratio_text(ratio), den_p,
                  figure(*b), key, fmt::format("{:.2f}x", 1 + kPaysGain)),
      {measured(*a, kGemmKeys), measured(*b, kGemmKeys), derived_ratio(*a, *b, kGemmKeys)});
  if (pays && key == "tf32")
    st.caveat =
        "tf32 is a reduced-precision math mode: inputs rounded to 10 mantissa bits (fp32 keeps 23)";
  if (pays && key == "fp8")
    st.caveat =
        "fp8 (E4M3) keeps 3 mantissa bits and needs per-tensor scales: check the model's accuracy";
  out.settings.push_back(std::move(st));
}

// ---- host ---------------------------------------------------------------------------

std::map<int64_t, const Result*> copies(const RunFile& run, int gpu, const std::string& direction,
                                        const std::string& memory, Found& all) {
  const Found f = find_results(
      run, Family::kHostCopy, {{"direction", direction}, {"memory", memory}},
      [gpu](const Result& r) { return on_gpu(r, gpu) && r.parameters.contains("bytes"); });
  all.not_ok.insert(all.not_ok.end(), f.not_ok.begin(), f.not_ok.end());
  std::map<int64_t, const Result*> out;
  for (const Result* r : f.ok)
    out[int_param(*r, "bytes", 0)] = r;
  return out;
}

const Result* at_bytes(const RunFile& run, int gpu, Family family,
                       const std::vector<std::pair<std::string_view, std::string>>& values,
                       int64_t bytes) {
  const Found f = find_results(run, family, values, [&](const Result& r) {
    return on_gpu(r, gpu) &&
           (int_param(r, "bytes", -1) == bytes || int_param(r, "buffer_bytes", -1) == bytes);
  });
  return f.ok.empty() ? nullptr : f.ok.back();
}

void zero_copy_rule(const RunFile& run, int gpu, Recommendations& out) {
  const Found f = find_results(run, Family::kZeroCopySparse, {},
                               [gpu](const Result& r) { return on_gpu(r, gpu); });
  const std::string id = result_id(Family::kZeroCopySparse);
  if (f.ok.empty()) {
    out.absent.push_back({"host", fmt::format("zero_copy: no ok {} result{}", id,
                                              not_used_note(f.not_ok, kZeroCopyKeys))});
    return;
  }
  const Result& r = *f.ok.back();
  const std::string verdict = str_param(r, "verdict");
  // The benchmark's verdict opens with its answer (bench/host/link.cpp).
  std::string value;
  if (verdict.starts_with("Only for sparse access"))
    value = "sparse access only";
  else if (verdict.starts_with("No."))
    value = "no";
  if (value.empty()) {
    out.absent.push_back({"host", fmt::format("zero_copy: {} gives no verdict{}", id,
                                              verdict.empty() ? std::string() : ": " + verdict)});
    return;
  }
  std::vector<Evidence> evidence = {measured(r, kZeroCopyKeys)};
  const int64_t bytes = int_param(r, "buffer_bytes", 0);
  for (const Result* x :
       {at_bytes(run, gpu, Family::kZeroCopy, {{"op", "read"}}, bytes),
        at_bytes(run, gpu, Family::kZeroCopy, {{"op", "reread"}}, bytes),
        at_bytes(run, gpu, Family::kHostCopy, {{"direction", "h2d"}, {"memory", "pinned"}}, bytes)})
    if (x) evidence.push_back(measured(*x, kZeroCopyKeys));
  out.settings.push_back(make_setting({"host"}, "zero_copy", value,
                                      "the host-link benchmark's measured verdict: " + verdict,
                                      std::move(evidence)));
}

}  // namespace

std::optional<GemmShapeRequest> parse_gemm_shape(std::string_view text) {
  GemmShapeRequest s;
  const size_t colon = text.find(':');
  s.precision = colon == std::string_view::npos ? "bf16" : std::string(text.substr(colon + 1));
  std::string_view dims = text.substr(0, colon);
  std::array<int64_t*, 3> out = {&s.m, &s.n, &s.k};
  for (size_t i = 0; i < out.size(); ++i) {
    const size_t x = i + 1 < out.size() ? dims.find('x') : dims.size();
    if (x == std::string_view::npos) return std::nullopt;
    const std::string_view part = dims.substr(0, x);
    const auto [end, ec] = std::from_chars(part.data(), part.data() + part.size(), *out[i]);
    if (ec != std::errc() || end != part.data() + part.size() || *out[i] <= 0) return std::nullopt;
    dims = x < dims.size() ? dims.substr(x + 1) : std::string_view();
  }
  if (s.precision.empty()) return std::nullopt;
  return s;
}

Recommendations recommend_gemm(const RunFile& run, int gpu, std::string_view shape_text) {
  Recommendations out;
  const std::string shape(shape_text);
  const std::optional<GemmShapeRequest> s = parse_gemm_shape(shape_text);
  if (!s) {
    out.absent.push_back({"gemm", shape + ": not a shape of the form MxNxK:precision"});
    return out;
  }
  const std::string p = gemm_result_precision(s->precision);
  const Found f = gemm_at(run, gpu, p, *s);
  if (const Result* best = fastest(f.ok)) {
    const std::string algo =
        fmt::format("heuristic #{}: algo {}, tile {}, stages {}, split-k {}",
                    int_param(*best, "algorithm_index", -1), int_param(*best, "algorithm_id", -1),
                    int_param(*best, "tile_id", -1), int_param(*best, "stages_id", -1),
                    int_param(*best, "splitk", -1));
    out.settings.push_back(make_setting(
        {"gemm", shape}, "algorithm", algo,
        fmt::format("{} at {}x{}x{} {} (TN): the fastest of the {} cuBLASLt heuristic algorithms "
                    "timed",
                    figure(*best), s->m, s->n, s->k, p, int_param(*best, "algorithms_tried", 0)),
        {measured(*best, kGemmKeys)}));
  } else {
    out.absent.push_back({"gemm", fmt::format("{}: no ok {} at {}x{}x{}{}", shape, gemm_id(p), s->m,
                                              s->n, s->k, not_used_note(f.not_ok, kGemmKeys))});
  }
  if (p == "fp32" || p == "tf32") pays_rule(run, gpu, *s, shape, "tf32", "tf32", "fp32", out);
  if (p == "bf16" || p == "fp16" || p.starts_with("fp8"))
    pays_rule(run, gpu, *s, shape, "fp8", "fp8_e4m3", "bf16", out);
  return out;
}

Recommendations recommend_host(const RunFile& run, int gpu) {
  Recommendations out;
  const auto mine = [gpu](const Result& r) { return on_gpu(r, gpu); };
  const Found all = find_results(run, Family::kHostCopy, {}, mine);
  const Found sparse = find_results(run, Family::kZeroCopySparse, {}, mine);
  if (all.ok.empty() && sparse.ok.empty()) {
    std::vector<const Result*> bad = all.not_ok;
    bad.insert(bad.end(), sparse.not_ok.begin(), sparse.not_ok.end());
    out.absent.push_back(
        {"host", fmt::format("no ok host-link result for GPU {} (host.link did not run){}", gpu,
                             not_used_note(bad, kZeroCopyKeys))});
    return out;
  }
  for (const PlaceholderValue& d : family_def(Family::kHostCopy).placeholders[0].values) {
    const std::string dir(d.text);
    Found skipped;
    const auto pinned = copies(run, gpu, dir, "pinned", skipped);
    const auto pageable = copies(run, gpu, dir, "pageable", skipped);
    const Result *a = nullptr, *b = nullptr;
    for (const auto& [bytes, r] : pinned)
      if (pageable.contains(bytes)) {
        a = r;
        b = pageable.at(bytes);
      }
    if (!a) {
      out.absent.push_back({"host", fmt::format("{}: no size with both a pinned and a pageable ok "
                                                "result{}",
                                                dir, not_used_note(skipped.not_ok, kHostKeys))});
      continue;
    }
    const double ratio = a->value / b->value;
    const double margin = tie_margin(*a, *b);
    const std::string value = ratio - 1 > margin   ? "pinned"
                              : 1 - ratio > margin ? "pageable"
                                                   : "either";
    const int64_t bytes = int_param(*a, "bytes", 0);
    out.settings.push_back(make_setting(
        {"host", dir}, "host_memory", value,
        fmt::format("{}: pinned is {} pageable (noise {}); pinned {} against pageable {} at {}, "
                    "the largest size measured both ways",
                    value, ratio_text(ratio), percent_text(margin), figure(*a), figure(*b),
                    size_text(bytes, bytes)),
        {measured(*a, kHostKeys), measured(*b, kHostKeys), derived_ratio(*a, *b, kHostKeys)}));
  }
  zero_copy_rule(run, gpu, out);
  return out;
}

}  // namespace gpuvs::tune
