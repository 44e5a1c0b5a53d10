// Internal to gpuvs_core (and read by gpuvs_import for other tools' JSON, with the same
// conversions and messages): the pieces that read run-file JSON (run_file_json.cpp for
// the run, run_file_monitor.cpp for its utilization and timeline), so that every field
// is read with the same conversions and messages. See run_file_json.h for the
// invariants of reading.
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/run_file.h"
#include "core/run_file_json.h"

namespace gpuvs::run_json {

using json = nlohmann::json;
using ojson = nlohmann::ordered_json;

// ---------------------------------------------------------------- writing

// An optional field: its value, or null when empty.
template <class T>
ojson opt(const std::optional<T>& v) {
  return v ? ojson(*v) : ojson(nullptr);
}

// A parameter in its own JSON type, so that it reads back as the same alternative.
inline ojson param_json(const ParamValue& p) {
  return std::visit([](const auto& v) { return ojson(v); }, p);
}

// ---------------------------------------------------------------- reading

// The JSON kind of a value as messages name it: "got string", "got integer" ...
inline std::string_view kind_of(const json& v) {
  switch (v.type()) {
    case json::value_t::null:
      return "null";
    case json::value_t::boolean:
      return "boolean";
    case json::value_t::string:
      return "string";
    case json::value_t::array:
      return "array";
    case json::value_t::object:
      return "object";
    case json::value_t::number_integer:
    case json::value_t::number_unsigned:
      return "integer";
    case json::value_t::number_float:
      return "number";
    default:
      return "binary";
  }
}

inline std::string expected(std::string_view what, const json& v) {
  return fmt::format("expected {}, got {}", what, kind_of(v));
}

// Each convert() returns the problem, or "" when `out` was set.
inline std::string convert(const json& v, std::string& out) {
  if (!v.is_string()) return expected("a string", v);
  out = v.get_ref<const std::string&>();
  return {};
}

inline std::string convert(const json& v, bool& out) {
  if (!v.is_boolean()) return expected("a boolean", v);
  out = v.get<bool>();
  return {};
}

inline std::string convert(const json& v, double& out) {
  if (!v.is_number()) return expected("a number", v);
  out = v.get<double>();
  // The parser already refuses literals beyond the double range (1e400); checked
  // again so that no document, however it was built, yields a non-finite value.
  if (!std::isfinite(out)) return "number is not finite";
  return {};
}

// The non-template overloads above win for bool, double and ParamValue.
template <class Int>
std::string convert(const json& v, Int& out) {
  static_assert(std::is_integral_v<Int> && !std::is_same_v<Int, bool>);
  using Lim = std::numeric_limits<Int>;
  const auto out_of_range = [](const auto& got) {
    return fmt::format("integer {} is out of range [{}, {}]", got, Lim::min(), Lim::max());
  };
  if (v.is_number_unsigned()) {
    const uint64_t u = v.get<uint64_t>();
    if (u > uint64_t(Lim::max())) return out_of_range(u);
    out = Int(u);
    return {};
  }
  if (v.is_number_integer()) {
    const int64_t i = v.get<int64_t>();
    if (i < int64_t(Lim::min()) || (i > 0 && uint64_t(i) > uint64_t(Lim::max())))
      return out_of_range(i);
    out = Int(i);
    return {};
  }
  return expected("an integer", v);
}

inline std::string convert(const json& v, ParamValue& out) {
  switch (v.type()) {
    case json::value_t::boolean:
      out = v.get<bool>();
      return {};
    case json::value_t::string:
      out = v.get<std::string>();
      return {};
    case json::value_t::number_integer:
      out = v.get<int64_t>();
      return {};
    case json::value_t::number_unsigned: {
      // Integers beyond int64 keep their magnitude as a double rather than wrap.
      const uint64_t u = v.get<uint64_t>();
      if (u <= uint64_t(std::numeric_limits<int64_t>::max())) {
        out = int64_t(u);
      } else {
        out = double(u);
      }
      return {};
    }
    case json::value_t::number_float: {
      double d = 0;
      std::string problem = convert(v, d);
      out = d;
      return problem;
    }
    default:
      return expected("a boolean, number or string", v);
  }
}

// A JSON object being read, with its field path for messages.
class Obj {
 public:
  Obj(const json& j, std::string path, std::string_view name)
      : j_(j), path_(std::move(path)), name_(name) {
    if (!j.is_object()) fail(name_, path_, expected("an object", j));
  }

  std::string path(std::string_view key) const {
    std::string p = path_;
    append_key(p, key);
    return p;
  }
  [[noreturn]] void fail_at(std::string_view key, std::string_view problem) const {
    fail(name_, path(key), problem);
  }
  [[noreturn]] void fail_here(std::string_view problem) const { fail(name_, path_, problem); }

  template <class T>
  T req(const char* key) const {
    T out{};
    check(key, convert(require(key), out));
    return out;
  }

  template <class T>
  std::optional<T> opt(const char* key) const {
    const json* v = find(key);
    if (v == nullptr || v->is_null()) return std::nullopt;
    T out{};
    check(key, convert(*v, out));
    return out;
  }

  template <class T>
  std::vector<T> vec(const char* key) const {
    const json& a = array(key);
    std::vector<T> out(a.size());
    for (std::size_t i = 0; i < a.size(); ++i) {
      const std::string problem = convert(a[i], out[i]);
      if (!problem.empty()) fail(name_, index_path(key, i), problem);
    }
    return out;
  }

  // The length of the array under `key` (which must be one).
  std::size_t array_size(const char* key) const { return array(key).size(); }

  Obj obj(const char* key) const { return Obj(require(key), path(key), name_); }

  std::optional<Obj> opt_obj(const char* key) const {
    const json* v = find(key);
    if (v == nullptr || v->is_null()) return std::nullopt;
    return Obj(*v, path(key), name_);
  }

  // Reads an array of objects with `read(Obj) -> T`.
  template <class T, class Read>
  std::vector<T> objects(const char* key, Read read) const {
    const json& a = array(key);
    std::vector<T> out;
    out.reserve(a.size());
    for (std::size_t i = 0; i < a.size(); ++i) {
      out.push_back(read(Obj(a[i], index_path(key, i), name_)));
    }
    return out;
  }

  const json& json_value() const { return j_; }
  std::string_view name() const { return name_; }

 private:
  const json* find(const char* key) const {
    const auto it = j_.find(key);
    return it == j_.end() ? nullptr : &*it;
  }
  const json& require(const char* key) const {
    const json* v = find(key);
    if (v == nullptr) fail_at(key, "required field is missing");
    return *v;
  }
  const json& array(const char* key) const {
    const json& a = require(key);
    if (!a.is_array()) fail_at(key, expected("an array", a));
    return a;
  }
  std::string index_path(const char* key, std::size_t i) const {
    return path(key) + "[" + std::to_string(i) + "]";
  }
  void check(const char* key, const std::string& problem) const {
    if (!problem.empty()) fail_at(key, problem);
  }

  const json& j_;
  std::string path_;
  std::string_view name_;
};

template <class T>
void require_at_least(const Obj& o, const char* key, T value, T min) {
  if (value < min) o.fail_at(key, fmt::format("must be >= {}, got {}", min, value));
}

template <class T>
void require_greater(const Obj& o, const char* key, T value, T bound) {
  if (!(value > bound)) o.fail_at(key, fmt::format("must be > {}, got {}", bound, value));
}

// The utilization of a result and the run's timeline (run_file_monitor.cpp).
// `gpu_count` is the size of system.gpus: GPU indices must fall in it.
ojson utilization_to_json(const Utilization& u);
ojson timeline_to_json(const Timeline& t);
Utilization read_utilization(const Obj& o, std::size_t gpu_count);
Timeline read_timeline(const Obj& o, std::size_t gpu_count);

}  // namespace gpuvs::run_json
