// The datasheet catalogue: loading and validating gpus.json (gpuvs.catalogue/1),
// lookups by name, alias and driver identity, and the JSON reading helpers that the
// published-figure loader shares (specs_detail in catalogue.h).
//
// Invariants after parse(): ids and aliases are unique across entries once
// normalised (case, '-', '_' and ' ' ignored); every figure names a known metric,
// holds a finite value > 0 in the metric's base unit, and has a source (its own or
// the entry's http(s) URL); a metric is never both a figure and "unsupported".
#include "specs/catalogue.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <set>

#include <nlohmann/json.hpp>

#include "core/embedded.h"
#include "core/error.h"
#include "core/input_file.h"
#include "core/run_file_json.h"
#include "core/suggest.h"
#include "core/units.h"
#include "specs/metrics.h"

namespace gpuvs {

namespace specs_detail {

namespace {

using json = nlohmann::json;

constexpr size_t kMaxDepth = 32;  // the catalogue nests 5 levels deep

// The state of the parser callback: the open containers, to refuse deep nesting and
// duplicate keys (JSON leaves their meaning open) with the path of the offence.
struct Frame {
  bool is_array = false;
  size_t index = 0;            // arrays: the index of the next element
  std::string key;             // objects: the key whose value comes next
  std::set<std::string> keys;  // objects: the keys seen so far
};

std::string frames_path(const std::vector<Frame>& frames, size_t upto) {
  std::string path;
  for (size_t i = 0; i < upto; ++i) {
    if (frames[i].is_array)
      path += "[" + std::to_string(frames[i].index) + "]";
    else
      run_json::append_key(path, frames[i].key);
  }
  return path;
}

void element_done(std::vector<Frame>& frames) {
  if (!frames.empty() && frames.back().is_array) ++frames.back().index;
}

std::string_view type_name(const json& v) {
  if (v.is_object()) return "an object";
  if (v.is_array()) return "an array";
  if (v.is_string()) return "a string";
  if (v.is_boolean()) return "a boolean";
  if (v.is_number()) return "a number";
  return "null";
}

}  // namespace

json parse_document(std::string_view text, std::string_view name, std::string_view schema,
                    std::string_view what) {
  if (text.empty()) run_json::fail(name, "", "not valid JSON at byte 0: the file is empty");
  std::vector<Frame> frames;
  const json::parser_callback_t callback = [&](int /*depth*/, json::parse_event_t event,
                                               json& parsed) {
    switch (event) {
      case json::parse_event_t::object_start:
      case json::parse_event_t::array_start:
        if (frames.size() >= kMaxDepth) {
          run_json::fail(name, run_json::printable(frames_path(frames, frames.size()), 120),
                         fmt::format("nested deeper than {} levels", kMaxDepth));
        }
        frames.push_back(Frame{event == json::parse_event_t::array_start, 0, {}, {}});
        break;
      case json::parse_event_t::key: {
        Frame& top = frames.back();
        const std::string& key = parsed.get_ref<const std::string&>();
        if (!top.keys.insert(key).second) {
          top.key = key;
          run_json::fail(name, frames_path(frames, frames.size()),
                         "duplicate key (each key may appear once per object)");
        }
        top.key = key;
        break;
      }
      case json::parse_event_t::object_end:
      case json::parse_event_t::array_end:
        frames.pop_back();
        element_done(frames);
        break;
      case json::parse_event_t::value:
        element_done(frames);
        break;
    }
    return true;
  };
  json doc;
  try {
    doc = json::parse(text.begin(), text.end(), callback);
  } catch (const json::parse_error& e) {
    // what(): "[json.exception.parse_error.101] parse error at line 1, column 5:
    // syntax error while parsing value - invalid literal; last read: 'x'".
    std::string_view reason = e.what();
    if (const auto end = reason.find("]: "); end != std::string_view::npos)
      reason.remove_prefix(end + 3);
    else if (const auto end2 = reason.find("] "); end2 != std::string_view::npos)
      reason.remove_prefix(end2 + 2);
    for (std::string_view noise : {"parse error at ", "parse error: ", "parse error"}) {
      if (reason.substr(0, noise.size()) == noise) {
        reason.remove_prefix(noise.size());
        break;
      }
    }
    run_json::fail(name, "",
                   fmt::format("not valid JSON at byte {}: {}", e.byte > 0 ? e.byte - 1 : 0,
                               run_json::printable(reason, 200)));
  } catch (const json::exception& e) {
    // Found by fuzz_loaders: a number literal too large for a double is an
    // out_of_range error (406), not a parse_error.
    std::string_view reason = e.what();
    if (const auto end = reason.find("] "); end != std::string_view::npos)
      reason.remove_prefix(end + 2);
    run_json::fail(name, "", fmt::format("not valid JSON: {}", run_json::printable(reason, 120)));
  }
  if (!doc.is_object()) {
    run_json::fail(
        name, "",
        fmt::format("not a gpuvs {} (the top level is {}, not an object)", what, type_name(doc)));
  }
  const auto it = doc.find("schema");
  if (it == doc.end())
    run_json::fail(name, "", fmt::format("not a gpuvs {} (no \"schema\" field)", what));
  if (!it->is_string() || it->get_ref<const std::string&>() != schema) {
    run_json::fail(name, "schema",
                   fmt::format("expected \"{}\", got {}", schema,
                               it->is_string() ? run_json::quote(it->get_ref<const std::string&>())
                                               : std::string(type_name(*it))));
  }
  return doc;
}

std::string read_text_file(const std::filesystem::path& path, std::string_view what) {
  return read_input_file(path, path.string(), what, kMaxCatalogueBytes);
}

ObjectReader::ObjectReader(const json& value, std::string_view name, std::string path,
                           std::initializer_list<std::string_view> allowed)
    : value_(value), name_(name), path_(std::move(path)) {
  if (!value_.is_object())
    run_json::fail(name_, path_, fmt::format("expected an object, got {}", type_name(value_)));
  for (const auto& item : value_.items()) {
    if (std::find(allowed.begin(), allowed.end(), item.key()) == allowed.end())
      fail(item.key(), "unknown field");
  }
}

const json* ObjectReader::find(std::string_view key) const {
  const auto it = value_.find(std::string(key));
  return it == value_.end() ? nullptr : &*it;
}

std::string ObjectReader::path(std::string_view key) const {
  std::string p = path_;
  run_json::append_key(p, key);
  return p;
}

void ObjectReader::fail(std::string_view key, std::string_view problem) const {
  run_json::fail(name_, path(key), problem);
}

std::string ObjectReader::string(std::string_view key) const {
  const json* v = find(key);
  if (v == nullptr) fail(key, "missing (a string is required)");
  if (!v->is_string()) fail(key, fmt::format("expected a string, got {}", type_name(*v)));
  const std::string& s = v->get_ref<const std::string&>();
  if (s.empty()) fail(key, "must not be empty");
  return s;
}

std::string ObjectReader::opt_string(std::string_view key) const {
  const json* v = find(key);
  if (v == nullptr || v->is_null()) return {};
  if (!v->is_string()) fail(key, fmt::format("expected a string, got {}", type_name(*v)));
  return v->get<std::string>();
}

bool is_http_url(std::string_view s) {
  const size_t scheme = s.rfind("https://", 0) == 0 ? 8 : s.rfind("http://", 0) == 0 ? 7 : 0;
  const bool clean = std::none_of(
      s.begin(), s.end(), [](char c) { return static_cast<unsigned char>(c) <= ' ' || c == 0x7f; });
  return scheme > 0 && clean && s.size() > scheme;
}

std::string ObjectReader::url(std::string_view key, bool required) const {
  const std::string s = required ? string(key) : opt_string(key);
  if (!s.empty() && !is_http_url(s))
    fail(key, fmt::format("{} is not an http(s) URL", run_json::quote(s)));
  return s;
}

std::vector<std::string> ObjectReader::strings(std::string_view key) const {
  std::vector<std::string> out;
  const json* v = find(key);
  if (v == nullptr || v->is_null()) return out;
  if (!v->is_array()) fail(key, fmt::format("expected an array of strings, got {}", type_name(*v)));
  for (size_t i = 0; i < v->size(); ++i) {
    const json& e = (*v)[i];
    if (!e.is_string() || e.get_ref<const std::string&>().empty()) {
      run_json::fail(name_, path(key) + "[" + std::to_string(i) + "]",
                     e.is_string() ? std::string("must not be empty")
                                   : fmt::format("expected a string, got {}", type_name(e)));
    }
    out.push_back(e.get<std::string>());
  }
  return out;
}

std::optional<int> ObjectReader::opt_int(std::string_view key, int lo, int hi) const {
  const json* v = find(key);
  if (v == nullptr || v->is_null()) return std::nullopt;
  if (!v->is_number_integer())
    fail(key, fmt::format("expected an integer or null, got {}", type_name(*v)));
  const int64_t n = v->get<int64_t>();
  if (n < lo || n > hi) fail(key, fmt::format("{} is out of range [{}, {}]", n, lo, hi));
  return int(n);
}

double read_value(const ObjectReader& reader, const MetricDef& metric) {
  const json* v = reader.find("value");
  if (v == nullptr) reader.fail("value", "missing (a number is required)");
  if (!v->is_number())
    reader.fail("value", fmt::format("expected a number, got {}", type_name(*v)));
  const double number = v->get<double>();
  if (!std::isfinite(number)) reader.fail("value", "not a finite number");
  if (number <= 0) {
    reader.fail("value",
                fmt::format("{} is not positive (leave a figure out when there is none)", number));
  }
  const std::string unit = [&] {
    const json* u = reader.find("unit");
    if (u == nullptr) reader.fail("unit", "missing (a string such as \"TFLOP/s\" is required)");
    if (!u->is_string())
      reader.fail("unit", fmt::format("expected a string, got {}", type_name(*u)));
    return u->get<std::string>();
  }();
  const std::optional<double> base = to_base_unit(number, unit, metric.unit);
  if (!base) {
    reader.fail("unit", fmt::format("{} does not fit {} (measured in {})", run_json::quote(unit),
                                    metric.id, metric.unit));
  }
  if (!std::isfinite(*base)) reader.fail("value", "too large once converted to the base unit");
  const std::string problem = quantity_problem(*base, metric.unit);
  if (!problem.empty()) reader.fail("value", problem + " once converted from " + unit);
  return *base;
}

}  // namespace specs_detail

namespace {

using nlohmann::json;
using specs_detail::ObjectReader;

constexpr std::string_view kCatalogueSchema = "gpuvs.catalogue/1";

// "0x2335": the device part of a PCI id, 1 to 4 hex digits after "0x".
std::optional<uint32_t> parse_pci_id(std::string_view s) {
  if (s.size() < 3 || s[0] != '0' || (s[1] != 'x' && s[1] != 'X')) return std::nullopt;
  const std::string_view digits = s.substr(2);
  if (digits.size() > 4) return std::nullopt;
  uint32_t v = 0;
  for (char c : digits) {
    if (!std::isxdigit(static_cast<unsigned char>(c))) return std::nullopt;
    v = v * 16 + uint32_t(std::isdigit(static_cast<unsigned char>(c))
                              ? c - '0'
                              : std::tolower(static_cast<unsigned char>(c)) - 'a' + 10);
  }
  return v;
}

Figure read_figure(const json& value, std::string_view name, const std::string& path,
                   const MetricDef& metric, const std::string& gpu_source) {
  const ObjectReader r(value, name, path, {"value", "unit", "note", "source"});
  Figure f;
  f.value = specs_detail::read_value(r, metric);
  f.unit = std::string(metric.unit);
  f.note = r.opt_string("note");
  f.source = r.url("source", false);
  if (f.source.empty()) f.source = gpu_source;
  return f;
}

GpuSpec read_gpu(const json& value, std::string_view name, const std::string& path) {
  const ObjectReader r(value, name, path,
                       {"id", "name", "aliases", "driver_names", "pci_device_ids", "architecture",
                        "form_factor", "memory_type", "tensor_core_generation", "pcie_generation",
                        "nvlink_generation", "source", "checked_against", "note", "figures"});
  GpuSpec g;
  g.id = r.string("id");
  const bool plain_id = std::all_of(g.id.begin(), g.id.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.';
  });
  if (!plain_id || g.id.size() > 64) {
    r.fail("id", fmt::format("{} is not an id (letters, digits, '-', '_', '.'; at most 64)",
                             run_json::quote(g.id)));
  }
  g.name = r.string("name");
  g.aliases = r.strings("aliases");
  g.driver_names = r.strings("driver_names");
  const std::vector<std::string> pci = r.strings("pci_device_ids");
  for (size_t i = 0; i < pci.size(); ++i) {
    const std::optional<uint32_t> id = parse_pci_id(pci[i]);
    if (!id) {
      run_json::fail(
          name, r.path("pci_device_ids") + "[" + std::to_string(i) + "]",
          fmt::format("{} is not a hex PCI device id such as \"0x2335\"", run_json::quote(pci[i])));
    }
    g.pci_device_ids.push_back(*id);
  }
  g.architecture = r.string("architecture");
  g.form_factor = r.string("form_factor");
  g.memory_type = r.string("memory_type");
  g.tensor_core_generation = r.opt_int("tensor_core_generation", 1, 99);
  g.pcie_generation = r.opt_int("pcie_generation", 1, 99);
  g.nvlink_generation = r.opt_int("nvlink_generation", 1, 99);
  g.source = r.url("source", true);
  g.checked_against = r.strings("checked_against");
  for (size_t i = 0; i < g.checked_against.size(); ++i) {
    if (!specs_detail::is_http_url(g.checked_against[i])) {
      run_json::fail(
          name, r.path("checked_against") + "[" + std::to_string(i) + "]",
          fmt::format("{} is not an http(s) URL", run_json::quote(g.checked_against[i])));
    }
  }
  g.note = r.opt_string("note");

  const json* figures = r.find("figures");
  if (figures == nullptr) r.fail("figures", "missing (an object of metric id -> figure)");
  if (!figures->is_object()) r.fail("figures", "expected an object of metric id -> figure");
  for (const auto& item : figures->items()) {
    std::string fpath = r.path("figures");
    run_json::append_key(fpath, item.key());
    const MetricDef* metric = find_metric(item.key());
    if (metric == nullptr)
      run_json::fail(name, fpath, "unknown metric id" + metric_suggestion(item.key()));
    if (item.value().is_null()) {
      g.unsupported.push_back(item.key());
      continue;
    }
    g.figures.emplace(item.key(), read_figure(item.value(), name, fpath, *metric, g.source));
  }
  return g;
}

bool same_text_ci(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) ==
                  std::tolower(static_cast<unsigned char>(y));
         });
}

bool has_driver_name(const GpuSpec& g, std::string_view driver_name) {
  return std::any_of(g.driver_names.begin(), g.driver_names.end(),
                     [&](const std::string& n) { return same_text_ci(n, driver_name); });
}

}  // namespace

Catalogue Catalogue::parse(std::string_view text, std::string_view name) {
  const json doc = specs_detail::parse_document(text, name, kCatalogueSchema, "catalogue");
  const ObjectReader top(doc, name, "", {"schema", "gpus", "note"});
  const json* gpus = top.find("gpus");
  if (gpus == nullptr) top.fail("gpus", "missing (an array of GPU entries)");
  if (!gpus->is_array() || gpus->empty()) top.fail("gpus", "expected a non-empty array");

  Catalogue c;
  // Normalised id or alias -> the entry (its index and id) that has it. By index, so
  // that two entries with one id are refused: find() would only ever see the first.
  std::map<std::string, std::pair<size_t, std::string>> owner;
  for (size_t i = 0; i < gpus->size(); ++i) {
    const std::string path = "gpus[" + std::to_string(i) + "]";
    GpuSpec g = read_gpu((*gpus)[i], name, path);
    std::vector<std::pair<std::string, std::string>> names = {{g.id, path + ".id"}};
    for (size_t k = 0; k < g.aliases.size(); ++k)
      names.emplace_back(g.aliases[k], path + ".aliases[" + std::to_string(k) + "]");
    for (const auto& [n, field] : names) {
      const std::string key = normalise_name(n);
      if (key.empty()) run_json::fail(name, field, "has no letter or digit");
      const auto [it, fresh] = owner.emplace(key, std::pair{i, g.id});
      if (!fresh && it->second.first != i) {
        run_json::fail(
            name, field,
            fmt::format("{} is already a name of {} (gpus[{}]; ids and aliases are "
                        "unique; case, '-', '_' and ' ' are ignored)",
                        run_json::quote(n), run_json::quote(it->second.second), it->second.first));
      }
    }
    c.gpus_.push_back(std::move(g));
  }
  return c;
}

Catalogue Catalogue::load(const std::filesystem::path& path) {
  return parse(specs_detail::read_text_file(path, "catalogue"), path.string());
}

const Catalogue& Catalogue::builtin() {
  static const Catalogue c = [] {
    constexpr std::string_view kPath = "data/catalogue/gpus.json";
    const std::optional<std::string_view> bytes = embedded_file(kPath);
    if (!bytes) throw Error(fmt::format("built-in {} is missing from this binary", kPath));
    return parse(*bytes, kPath);
  }();
  return c;
}

const GpuSpec* Catalogue::find(std::string_view name) const {
  const std::string key = normalise_name(name);
  if (key.empty()) return nullptr;
  for (const GpuSpec& g : gpus_) {
    if (normalise_name(g.id) == key) return &g;
    for (const std::string& a : g.aliases)
      if (normalise_name(a) == key) return &g;
  }
  // Users paste what nvidia-smi printed: its name, or the PCI device id ("0x2684"). Ids
  // and aliases are unique, these need not be: like match_driver(), one entry or no guess.
  const auto only = [&](auto&& has) -> const GpuSpec* {
    const GpuSpec* hit = nullptr;
    for (const GpuSpec& g : gpus_) {
      if (!has(g)) continue;
      if (hit != nullptr) return nullptr;
      hit = &g;
    }
    return hit;
  };
  if (const GpuSpec* g = only([&](const GpuSpec& e) {
        return std::any_of(e.driver_names.begin(), e.driver_names.end(),
                           [&](const std::string& n) { return normalise_name(n) == key; });
      }))
    return g;
  if (const std::optional<uint32_t> device = parse_pci_id(name)) {
    return only([&](const GpuSpec& e) {
      return std::find(e.pci_device_ids.begin(), e.pci_device_ids.end(), *device) !=
             e.pci_device_ids.end();
    });
  }
  return nullptr;
}

std::vector<std::string> Catalogue::suggest(std::string_view name, size_t max) const {
  std::vector<NameCandidate> candidates;
  for (const GpuSpec& g : gpus_) {
    NameCandidate c{g.id, {g.id}};
    c.keys.insert(c.keys.end(), g.aliases.begin(), g.aliases.end());
    candidates.push_back(std::move(c));
  }
  return gpuvs::suggest(name, candidates, max);
}

const GpuSpec& Catalogue::get(std::string_view name) const {
  if (const GpuSpec* g = find(name)) return *g;
  std::string msg = fmt::format("unknown GPU {}", run_json::quote(name));
  msg += did_you_mean(suggest(name));
  msg += " (`gpuvs specs list` shows them all)";
  throw UsageError(msg);
}

const GpuSpec* Catalogue::match_driver(std::string_view driver_name,
                                       std::optional<uint32_t> nvml_pci_device_id) const {
  if (nvml_pci_device_id) {
    // NVML's pciDeviceId is (device << 16) | vendor (0x233510DE); a bare device id
    // (no vendor bits) is taken as it is.
    const uint32_t raw = *nvml_pci_device_id;
    const uint32_t device = raw > 0xFFFF ? raw >> 16 : raw;
    std::vector<const GpuSpec*> hits;
    for (const GpuSpec& g : gpus_)
      if (std::find(g.pci_device_ids.begin(), g.pci_device_ids.end(), device) !=
          g.pci_device_ids.end())
        hits.push_back(&g);
    if (hits.size() == 1) return hits.front();
    for (const GpuSpec* g : hits)
      if (has_driver_name(*g, driver_name)) return g;
    // Several entries share the id and the name does not pick one: no guess.
    if (hits.size() > 1) return nullptr;
  }
  for (const GpuSpec& g : gpus_)
    if (has_driver_name(g, driver_name)) return &g;
  return nullptr;
}

}  // namespace gpuvs
