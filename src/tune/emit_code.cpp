// The forms of a tuned result that other programs read: `export` lines for a shell
// and a dict literal for Python. Both must mean exactly what the document says, or
// say nothing: a value a shell or Python could not carry verbatim is left out with a
// comment, never altered.
#include <fmt/format.h>

#include <cmath>
#include <map>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/run_file_reader.h"
#include "core/text.h"
#include "tune/emit.h"
#include "tune/tune_json.h"

namespace gpuvs::tune {

namespace {

using ojson = nlohmann::ordered_json;

// A value as its environment variable holds it: the text of the value (true/false for
// a boolean, the shortest text of a number).
std::string env_text(const ParamValue& v) {
  if (const auto* s = std::get_if<std::string>(&v)) return *s;
  return param_text(v);
}

// Single quotes keep every byte but the quote itself, which is closed, escaped and
// reopened: 'it'\''s'.
std::string shell_quote(std::string_view s) {
  std::string out = "'";
  for (char c : s) {
    if (c == '\'')
      out += "'\\''";
    else
      out += c;
  }
  return out + "'";
}

// Why a value cannot be exported as it is: the CLI prints through terminal_text,
// which would rewrite a control character other than newline and tab; a shell
// variable cannot hold a NUL.
std::optional<std::string> env_value_problem(const std::string& v) {
  if (v.find('\0') != std::string::npos) return "its value holds a NUL byte";
  if (terminal_text(v) != v) return "its value holds a control character";
  return std::nullopt;
}

struct EnvValue {
  int gpu = 0;
  std::string value;
};

// Per variable, in order of first appearance: the values the settings give it.
std::vector<std::pair<std::string, std::vector<EnvValue>>> env_settings(
    const std::vector<const DeviceTune*>& devices) {
  std::vector<std::pair<std::string, std::vector<EnvValue>>> out;
  for (const DeviceTune* d : devices) {
    for (const Setting& s : d->settings) {
      if (s.env.empty()) continue;
      auto it =
          std::find_if(out.begin(), out.end(), [&](const auto& e) { return e.first == s.env; });
      if (it == out.end()) it = out.insert(out.end(), {s.env, {}});
      it->second.push_back({d->gpu_index, env_text(s.value)});
    }
  }
  return out;
}

// Which variables are exported (name, value), and a comment for each one that is not.
struct EnvPlan {
  std::vector<std::pair<std::string, std::string>> exports;
  std::vector<std::string> skipped;
};

EnvPlan plan_env(const std::vector<const DeviceTune*>& devices) {
  EnvPlan plan;
  for (const auto& [name, values] : env_settings(devices)) {
    if (!is_env_name(name)) {
      plan.skipped.push_back(fmt::format("{} is not a variable name: not exported", name));
      continue;
    }
    bool agree = true;
    std::map<int, int> per_gpu;
    for (const EnvValue& v : values) {
      agree = agree && v.value == values.front().value;
      ++per_gpu[v.gpu];
    }
    if (!agree) {
      std::string list;
      for (const EnvValue& v : values)
        list += fmt::format("{}GPU {}: {}", list.empty() ? "" : ", ", v.gpu, v.value);
      plan.skipped.push_back(
          fmt::format("{} not exported: the settings disagree ({})", name, list));
      continue;
    }
    if (per_gpu.size() != devices.size()) {
      plan.skipped.push_back(fmt::format("{} not exported: set for {} of the {} GPUs", name,
                                         per_gpu.size(), devices.size()));
      continue;
    }
    if (auto problem = env_value_problem(values.front().value)) {
      plan.skipped.push_back(fmt::format("{} not exported: {}", name, *problem));
      continue;
    }
    plan.exports.emplace_back(name, values.front().value);
  }
  return plan;
}

void comment(std::string& out, std::string_view text) {
  out += "# " + one_line(text) + "\n";
}

std::string python_of(const ojson& j) {
  switch (j.type()) {
    case ojson::value_t::null:
      return "None";
    case ojson::value_t::boolean:
      return j.get<bool>() ? "True" : "False";
    case ojson::value_t::number_integer:
      return std::to_string(j.get<int64_t>());
    case ojson::value_t::number_unsigned:
      return std::to_string(j.get<uint64_t>());
    case ojson::value_t::number_float:
      return python_literal(ParamValue(j.get<double>()));
    case ojson::value_t::string:
      return python_string(j.get_ref<const std::string&>());
    case ojson::value_t::array: {
      std::string out = "[";
      for (const ojson& v : j)
        out += (out.size() > 1 ? ", " : "") + python_of(v);
      return out + "]";
    }
    case ojson::value_t::object: {
      std::string out = "{";
      for (const auto& [k, v] : j.items())
        out += (out.size() > 1 ? ", " : "") + python_string(k) + ": " + python_of(v);
      return out + "}";
    }
    default:
      throw Error("a tuned result holds a value Python has no literal for");
  }
}

// settings[scope[0]][scope[1]]...[key] = value.
ojson settings_tree(const DeviceTune& d) {
  ojson tree = ojson::object();
  for (const Setting& s : d.settings) {
    ojson* node = &tree;
    for (const std::string& part : s.scope) {
      ojson& child = (*node)[part];
      if (child.is_null()) child = ojson::object();
      if (!child.is_object())
        throw Error(fmt::format("the tuned result of {} has a setting {} under the setting {}",
                                one_line(d.fingerprint.uuid), one_line(s.key), one_line(part)));
      node = &child;
    }
    if (node->contains(s.key))
      throw Error(fmt::format("the tuned result of {} sets {} twice", one_line(d.fingerprint.uuid),
                              one_line(s.key)));
    (*node)[s.key] = run_json::param_json(s.value);
  }
  return tree;
}

}  // namespace

std::string python_string(std::string_view s) {
  std::string out = "\"";
  for (std::size_t i = 0; i < s.size();) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    if (c == '\\' || c == '"') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\r') {
      out += "\\r";
    } else if (c == '\t') {
      out += "\\t";
    } else if (c < 0x20 || c == 0x7f) {
      out += fmt::format("\\x{:02x}", c);
    } else if (c < 0x80) {
      out += static_cast<char>(c);
    } else {
      const std::size_t n = utf8_length(s, i);
      if (n == 0) {  // not UTF-8: the byte's value as a code point, still a valid literal
        out += fmt::format("\\x{:02x}", c);
        ++i;
        continue;
      }
      uint32_t cp = c & (0xFF >> (n + 1));
      for (std::size_t k = 1; k < n; ++k)
        cp = (cp << 6) | (static_cast<unsigned char>(s[i + k]) & 0x3F);
      out += cp <= 0xFFFF ? fmt::format("\\u{:04x}", cp) : fmt::format("\\U{:08x}", cp);
      i += n;
      continue;
    }
    ++i;
  }
  return out + "\"";
}

std::string python_literal(const ParamValue& v) {
  if (const auto* b = std::get_if<bool>(&v)) return *b ? "True" : "False";
  if (const auto* i = std::get_if<int64_t>(&v)) return std::to_string(*i);
  if (const auto* s = std::get_if<std::string>(&v)) return python_string(*s);
  const double d = std::get<double>(v);
  if (!std::isfinite(d)) throw Error("a tuned result holds a number that is not finite");
  // The shortest text that reads back as d; a point added where it has none, so that
  // Python reads a float, not an int.
  std::string text = fmt::format("{}", d);
  if (text.find_first_of(".eE") == std::string::npos) text += ".0";
  return text;
}

std::string render_tune_env(const TuneDocument& doc) {
  std::vector<const DeviceTune*> devices;
  for (const DeviceTune& d : doc.devices)
    devices.push_back(&d);
  std::string out;
  comment(out, "gpuvs tune: environment variables that a measurement supports (gpuvs.tune/1)");
  for (const DeviceTune* d : devices)
    comment(out, fmt::format("GPU {} {} ({}), tuned {}, run file {}", d->gpu_index,
                             d->fingerprint.name, d->fingerprint.uuid, d->created_at, d->run_file));
  comment(out,
          "The other settings (precision, batch, CUDA graph, ...) are not environment variables: "
          "gpuvs tune --show lists them.");
  const EnvPlan plan = plan_env(devices);
  if (devices.size() > 1)
    comment(out, "Several GPUs: only variables that every GPU's result sets to one value.");
  for (const std::string& s : plan.skipped)
    comment(out, s);
  if (plan.exports.empty()) comment(out, "No environment variable to set.");
  for (const auto& [name, value] : plan.exports)
    out += fmt::format("export {}={}\n", name, shell_quote(value));
  return out;
}

std::string render_tune_python(const TuneDocument& doc) {
  ojson devices = ojson::array();
  for (const DeviceTune& d : doc.devices) {
    ojson env = ojson::object();
    for (const auto& [name, value] : plan_env({&d}).exports)
      env[name] = value;
    ojson absent = ojson::object();
    for (const Absent& a : d.absent)
      absent[a.section] = a.why;
    devices.push_back(ojson{{"uuid", d.fingerprint.uuid},
                            {"name", d.fingerprint.name},
                            {"gpu_index", d.gpu_index},
                            {"created_at", d.created_at},
                            {"run_file", d.run_file},
                            {"settings", settings_tree(d)},
                            {"env", std::move(env)},
                            {"absent", std::move(absent)}});
  }
  return python_of(ojson{{"schema", doc.schema}, {"devices", std::move(devices)}}) + "\n";
}

}  // namespace gpuvs::tune
