#include "tune/tune_json.h"

#include <fmt/format.h>

#include <cmath>
#include <set>
#include <utility>

#include "core/input_file.h"
#include "core/run_file_reader.h"

namespace gpuvs::tune {

namespace {

using run_json::json;
using run_json::Obj;
using run_json::ojson;
using run_json::opt;
using run_json::param_json;

ojson to_json(const Fingerprint& f) {
  return ojson{{"uuid", f.uuid},
               {"name", f.name},
               {"driver_version", opt(f.driver_version)},
               {"cuda_driver_version", opt(f.cuda_driver_version)},
               {"cuda_runtime_version", opt(f.cuda_runtime_version)},
               {"cublas_version", opt(f.cublas_version)},
               {"cudnn_version", opt(f.cudnn_version)},
               {"nccl_version", opt(f.nccl_version)},
               {"power_limit_w", opt(f.power_limit_w)},
               {"mig_enabled", opt(f.mig_enabled)},
               {"ecc_enabled", opt(f.ecc_enabled)}};
}

ojson to_json(const TuneRequest& r) {
  return ojson{{"models", r.models},
               {"quick", r.quick},
               {"headroom", r.headroom},
               {"global_batch", opt(r.global_batch)},
               {"gemm_shapes", r.gemm_shapes}};
}

ojson to_json(const Evidence& e) {
  ojson params = ojson::object();
  for (const auto& [key, value] : e.parameters)
    params[key] = param_json(value);
  return ojson{{"result_id", e.result_id},
               {"parameters", std::move(params)},
               {"value", e.value},
               {"unit", e.unit},
               {"basis", e.basis}};
}

ojson to_json(const Setting& s) {
  ojson rests = ojson::array();
  for (const Evidence& e : s.rests_on)
    rests.push_back(to_json(e));
  return ojson{
      {"scope", s.scope}, {"key", s.key},       {"value", param_json(s.value)}, {"env", s.env},
      {"why", s.why},     {"caveat", s.caveat}, {"rests_on", std::move(rests)}};
}

ojson to_json(const DeviceTune& d) {
  ojson settings = ojson::array();
  for (const Setting& s : d.settings)
    settings.push_back(to_json(s));
  ojson absent = ojson::array();
  for (const Absent& a : d.absent)
    absent.push_back(ojson{{"section", a.section}, {"why", a.why}});
  return ojson{{"fingerprint", to_json(d.fingerprint)},
               {"gpu_index", d.gpu_index},
               {"request", to_json(d.request)},
               {"created_at", d.created_at},
               {"tool_version", d.tool_version},
               {"git_sha", d.git_sha},
               {"run_file", d.run_file},
               {"measure_seconds", d.measure_seconds},
               {"settings", std::move(settings)},
               {"absent", std::move(absent)}};
}

// ---------------------------------------------------------------- reading

void require_nonempty(const Obj& o, const char* key, const std::string& v) {
  if (v.empty()) o.fail_at(key, "must not be empty");
}

Fingerprint read_fingerprint(const Obj& o) {
  Fingerprint f;
  f.uuid = o.req<std::string>("uuid");
  require_nonempty(o, "uuid", f.uuid);
  f.name = o.req<std::string>("name");
  f.driver_version = o.opt<std::string>("driver_version");
  f.cuda_driver_version = o.opt<std::string>("cuda_driver_version");
  f.cuda_runtime_version = o.opt<std::string>("cuda_runtime_version");
  f.cublas_version = o.opt<std::string>("cublas_version");
  f.cudnn_version = o.opt<std::string>("cudnn_version");
  f.nccl_version = o.opt<std::string>("nccl_version");
  f.power_limit_w = o.opt<double>("power_limit_w");
  if (f.power_limit_w && !(*f.power_limit_w > 0))
    o.fail_at("power_limit_w", fmt::format("must be > 0, got {}", *f.power_limit_w));
  f.mig_enabled = o.opt<bool>("mig_enabled");
  f.ecc_enabled = o.opt<bool>("ecc_enabled");
  return f;
}

TuneRequest read_request(const Obj& o) {
  TuneRequest r;
  r.models = o.vec<std::string>("models");
  r.quick = o.req<bool>("quick");
  r.headroom = o.req<double>("headroom");
  if (r.headroom < 0 || r.headroom >= 0.9)
    o.fail_at("headroom", fmt::format("must be in [0, 0.9), got {}", r.headroom));
  r.global_batch = o.opt<int64_t>("global_batch");
  if (r.global_batch) run_json::require_at_least<int64_t>(o, "global_batch", *r.global_batch, 1);
  r.gemm_shapes = o.vec<std::string>("gemm_shapes");
  return r;
}

Evidence read_evidence(const Obj& o) {
  Evidence e;
  e.result_id = o.req<std::string>("result_id");
  require_nonempty(o, "result_id", e.result_id);
  const Obj params = o.obj("parameters");
  for (const auto& [key, value] : params.json_value().items()) {
    ParamValue v;
    const std::string problem = run_json::convert(value, v);
    if (!problem.empty()) params.fail_at(key, problem);
    e.parameters.emplace(key, std::move(v));
  }
  e.value = o.req<double>("value");
  e.unit = o.req<std::string>("unit");
  e.basis = o.req<std::string>("basis");
  if (e.basis != "measured" && e.basis != "derived")
    o.fail_at("basis", fmt::format("{} is not measured or derived", run_json::quote(e.basis)));
  return e;
}

Setting read_setting(const Obj& o) {
  Setting s;
  s.scope = o.vec<std::string>("scope");
  if (s.scope.empty()) o.fail_at("scope", "must name at least one part");
  for (const std::string& part : s.scope)
    if (part.empty()) o.fail_at("scope", "a part is empty");
  s.key = o.req<std::string>("key");
  require_nonempty(o, "key", s.key);
  s.value = o.req<ParamValue>("value");
  s.env = o.req<std::string>("env");
  if (!s.env.empty() && !is_env_name(s.env))
    o.fail_at("env", fmt::format("{} is not an environment variable name ([A-Z_][A-Z0-9_]*)",
                                 run_json::quote(s.env)));
  s.why = o.req<std::string>("why");
  s.caveat = o.req<std::string>("caveat");
  s.rests_on = o.objects<Evidence>("rests_on", read_evidence);
  return s;
}

DeviceTune read_device(const Obj& o) {
  DeviceTune d;
  d.fingerprint = read_fingerprint(o.obj("fingerprint"));
  d.gpu_index = o.req<int>("gpu_index");
  run_json::require_at_least(o, "gpu_index", d.gpu_index, 0);
  d.request = read_request(o.obj("request"));
  d.created_at = o.req<std::string>("created_at");
  d.tool_version = o.req<std::string>("tool_version");
  d.git_sha = o.req<std::string>("git_sha");
  d.run_file = o.req<std::string>("run_file");
  d.measure_seconds = o.req<double>("measure_seconds");
  run_json::require_at_least(o, "measure_seconds", d.measure_seconds, 0.0);
  d.settings = o.objects<Setting>("settings", read_setting);
  // Two values for one setting would leave the reader to pick one; a setting whose
  // scope runs through another setting ({"nccl"} "algo" and {"nccl", "algo", ...})
  // has no place in the nested forms (--emit python).
  std::set<std::vector<std::string>> leaves;
  std::set<std::vector<std::string>> scopes;
  for (const Setting& s : d.settings) {
    for (std::size_t n = 1; n <= s.scope.size(); ++n)
      scopes.emplace(s.scope.begin(), s.scope.begin() + static_cast<std::ptrdiff_t>(n));
  }
  for (std::size_t i = 0; i < d.settings.size(); ++i) {
    std::vector<std::string> leaf = d.settings[i].scope;
    leaf.push_back(d.settings[i].key);
    const std::string at = o.path("settings") + "[" + std::to_string(i) + "]";
    if (scopes.count(leaf) > 0)
      run_json::fail(o.name(), at, "its key is also the scope of another setting");
    if (!leaves.insert(std::move(leaf)).second)
      run_json::fail(o.name(), at, "a second setting of the same scope and key");
  }
  d.absent = o.objects<Absent>("absent", [](const Obj& a) {
    return Absent{a.req<std::string>("section"), a.req<std::string>("why")};
  });
  return d;
}

void check_schema(const json& doc, std::string_view name) {
  if (!doc.is_object())
    run_json::fail(
        name, "",
        fmt::format("not a gpuvs tune file (the top level is {})", run_json::kind_of(doc)));
  const auto it = doc.find("schema");
  if (it == doc.end()) run_json::fail(name, "", "not a gpuvs tune file (no \"schema\" field)");
  if (!it->is_string()) run_json::fail(name, "schema", run_json::expected("a string", *it));
  const std::string& schema = it->get_ref<const std::string&>();
  if (schema != kTuneSchema)
    run_json::fail(name, "",
                   fmt::format("not a gpuvs tune file (schema {}, this gpuvs reads {})",
                               run_json::quote(schema), kTuneSchema));
}

}  // namespace

bool is_env_name(std::string_view name) {
  if (name.empty() || (name[0] >= '0' && name[0] <= '9')) return false;
  for (char c : name) {
    if (!((c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_')) return false;
  }
  return true;
}

nlohmann::ordered_json tune_to_json(const TuneDocument& doc) {
  ojson devices = ojson::array();
  for (const DeviceTune& d : doc.devices)
    devices.push_back(to_json(d));
  return ojson{{"schema", doc.schema}, {"devices", std::move(devices)}};
}

std::string to_json_text(const TuneDocument& doc) {
  // `replace`: text that is not UTF-8 (a GPU name from a broken driver) cannot make the
  // result unwritable.
  return tune_to_json(doc).dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
}

TuneDocument parse_tune_document(std::string_view text, std::string_view name) {
  const json doc = run_json::parse_json_document(text, name);
  check_schema(doc, name);
  const Obj root(doc, "", name);
  TuneDocument out;
  out.schema = root.req<std::string>("schema");
  out.devices = root.objects<DeviceTune>("devices", read_device);
  return out;
}

TuneDocument load_tune_file(const std::filesystem::path& path) {
  const std::string name = path.string();
  return parse_tune_document(read_input_file(path, name, "tune file", kMaxTuneFileBytes), name);
}

}  // namespace gpuvs::tune
