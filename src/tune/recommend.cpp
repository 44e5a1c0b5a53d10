// recommend(): every rule for one GPU, and the helpers the rules share
// (recommend_detail.h). The rules themselves: recommend_models.cpp (precision, batch,
// CUDA graph, global batch), recommend_links.cpp (GEMM, host transfers) and
// recommend_nccl.cpp (NCCL_ALGO, NCCL_PROTO).
#include "tune/recommend.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>

#include "core/units.h"
#include "tune/recommend_detail.h"

namespace gpuvs::tune {

void Recommendations::add(Recommendations&& other) {
  for (Setting& s : other.settings)
    settings.push_back(std::move(s));
  for (Absent& a : other.absent)
    absent.push_back(std::move(a));
}

const ParamValue* Recommendations::value_of(std::string_view key) const {
  for (const Setting& s : settings)
    if (s.key == key) return &s.value;
  return nullptr;
}

namespace detail {

Found find_results(const RunFile& run, Family family,
                   const std::vector<std::pair<std::string_view, std::string>>& values,
                   const std::function<bool(const Result&)>& accept) {
  Found out;
  for (const Result& r : run.results) {
    const std::optional<IdMatch> m = match_result_id(r.id);
    if (!m || m->family->family != family) continue;
    if (!std::all_of(values.begin(), values.end(),
                     [&](const auto& v) { return m->value(v.first) == v.second; }))
      continue;
    if (accept && !accept(r)) continue;
    (r.status == Status::kOk ? out.ok : out.not_ok).push_back(&r);
  }
  return out;
}

std::string id_text(Family family,
                    const std::vector<std::pair<std::string_view, std::string>>& values) {
  std::string out(family_def(family).pattern);
  for (const auto& [name, value] : values) {
    const std::string hole = fmt::format("{{{}}}", name);
    if (const size_t at = out.find(hole); at != std::string::npos)
      out.replace(at, hole.size(), value);
  }
  return out;
}

bool on_gpu(const Result& r, int gpu) {
  return r.devices.size() == 1 && r.devices.front() == gpu;
}

std::string str_param(const Result& r, const std::string& key, std::string fallback) {
  const auto it = r.parameters.find(key);
  if (it == r.parameters.end()) return fallback;
  if (const auto* s = std::get_if<std::string>(&it->second)) return *s;
  return param_text(it->second);
}

bool bool_param(const Result& r, const std::string& key, bool fallback) {
  const auto it = r.parameters.find(key);
  if (it == r.parameters.end()) return fallback;
  if (const auto* b = std::get_if<bool>(&it->second)) return *b;
  return fallback;
}

int64_t int_param(const Result& r, const std::string& key, int64_t fallback) {
  return int_parameter(r, key).value_or(fallback);
}

double tie_margin(const Result& a, const Result& b) {
  return std::max({kMinNoise, a.stats.noise, b.stats.noise});
}

bool within_noise(const Result& a, const Result& b) {
  if (b.value <= 0) return false;
  return std::fabs(a.value / b.value - 1) <= tie_margin(a, b);
}

Evidence measured(const Result& r, Keys keys) {
  Evidence e;
  e.result_id = r.id;
  for (std::string_view k : keys) {
    const auto it = r.parameters.find(std::string(k));
    if (it != r.parameters.end()) e.parameters.emplace(it->first, it->second);
  }
  e.value = r.value;
  e.unit = r.unit;
  e.basis = "measured";
  return e;
}

std::string describe(const Result& r, Keys keys) {
  std::string params;
  for (std::string_view k : keys) {
    const auto it = r.parameters.find(std::string(k));
    if (it == r.parameters.end()) continue;
    params += fmt::format("{}{}={}", params.empty() ? "" : ", ", k, param_text(it->second));
  }
  return params.empty() ? r.id : fmt::format("{} ({})", r.id, params);
}

Evidence derived_ratio(const Result& num, const Result& den, Keys keys) {
  Evidence e = measured(num, keys);
  e.parameters["over"] = describe(den, keys);
  e.value = den.value > 0 ? num.value / den.value : 0;
  e.unit = "x";
  e.basis = "derived";
  return e;
}

std::string figure(double value, const std::string& unit) {
  return format_si(value, unit, 3);
}

std::string figure(const Result& r) {
  return figure(r.value, r.unit);
}

std::string size_text(int64_t lo, int64_t hi) {
  auto one = [](int64_t b) {
    std::string s = format_bytes_binary(b);
    s.erase(std::remove(s.begin(), s.end(), ' '), s.end());
    return s;
  };
  return lo == hi ? one(lo) : one(lo) + "-" + one(hi);
}

std::string ratio_text(double ratio) {
  // Near 1 a third decimal keeps a gain beyond a 1 % noise from reading "1.01x".
  return std::fabs(ratio - 1) < 0.1 ? fmt::format("{:.3f}x", ratio) : fmt::format("{:.2f}x", ratio);
}

std::string percent_text(double share) {
  return fmt::format("{:.1f} %", share * 100);
}

std::string status_note(const Result& r) {
  const std::string word(to_string(r.status));
  return r.status_reason.empty() ? word : word + ": " + r.status_reason;
}

std::string not_used_note(const std::vector<const Result*>& rs, Keys keys) {
  // A few name the reasons; a sweep of failed results would drown the line.
  constexpr size_t kNamed = 3;
  std::string out;
  for (size_t i = 0; i < rs.size() && i < kNamed; ++i)
    out += fmt::format("{}{} ({})", i == 0 ? "; not used: " : ", ", describe(*rs[i], keys),
                       status_note(*rs[i]));
  if (rs.size() > kNamed) out += fmt::format(" and {} more not ok", rs.size() - kNamed);
  return out;
}

Setting make_setting(std::vector<std::string> scope, std::string key, ParamValue value,
                     std::string why, std::vector<Evidence> rests_on) {
  Setting s;
  s.scope = std::move(scope);
  s.key = std::move(key);
  s.value = std::move(value);
  s.why = std::move(why);
  s.rests_on = std::move(rests_on);
  return s;
}

}  // namespace detail

namespace {

// The modes a model is tuned in: every mode of the table.
constexpr std::array<std::string_view, 2> kModes = {"train", "infer"};

bool has_model_results(const RunFile& run, int gpu, std::string_view model, std::string_view mode) {
  const detail::Found f = detail::find_results(
      run, Family::kModelRate, {{"model", std::string(model)}, {"mode", std::string(mode)}},
      [gpu](const Result& r) { return detail::on_gpu(r, gpu); });
  return !f.ok.empty() || !f.not_ok.empty();
}

Recommendations model_rules(const RunFile& run, int gpu, std::string_view model,
                            std::string_view mode, const TuneRequest& request) {
  Recommendations out = recommend_precision(run, gpu, model, mode);
  const ParamValue* chosen = out.value_of("precision");
  const std::string section = fmt::format("{} {}", model, mode);
  if (chosen == nullptr || !std::holds_alternative<std::string>(*chosen)) {
    out.absent.push_back({section, "batch, CUDA graph: no precision chosen to measure them at"});
    return out;
  }
  const std::string precision = std::get<std::string>(*chosen);
  Recommendations batch = recommend_batch(run, gpu, model, mode, precision, request.headroom);
  std::vector<int64_t> preferred;
  for (const char* key : {"batch_knee", "batch"})
    if (const ParamValue* v = batch.value_of(key); v && std::holds_alternative<int64_t>(*v))
      preferred.push_back(std::get<int64_t>(*v));
  out.add(std::move(batch));
  out.add(recommend_cuda_graph(run, gpu, model, mode, precision, preferred));
  if (mode == "train" && request.global_batch)
    out.add(recommend_global_batch(run, gpu, model, precision, *request.global_batch));
  return out;
}

}  // namespace

DeviceTune recommend(const RunFile& run, int gpu, const TuneRequest& request) {
  Recommendations all;
  for (const std::string& model : request.models) {
    bool any = false;
    for (std::string_view mode : kModes) {
      if (!has_model_results(run, gpu, model, mode)) continue;
      any = true;
      all.add(model_rules(run, gpu, model, mode, request));
    }
    if (!any)
      all.absent.push_back(
          {model,
           fmt::format("no {} results for GPU {} in the run: nothing measured", model, gpu)});
  }
  for (const std::string& shape : request.gemm_shapes)
    all.add(recommend_gemm(run, gpu, shape));
  all.add(recommend_nccl(run, gpu));
  all.add(recommend_host(run, gpu));

  DeviceTune t;
  t.gpu_index = gpu;
  t.request = request;
  t.settings = std::move(all.settings);
  t.absent = std::move(all.absent);
  return t;
}

}  // namespace gpuvs::tune
