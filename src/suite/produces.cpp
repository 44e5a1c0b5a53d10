// The table of what gpuvs produces (produces.h): its lookups and the grammar of its ids;
// the rows themselves are in produces_rows.cpp. docs/results.md lists the same ids for
// readers of run files; tests/cpu/test_produces.cpp keeps the two and the code honest.
#include "suite/produces.h"

#include <fmt/format.h>

#include <algorithm>
#include <stdexcept>

#include "suite/produces_rows.h"

namespace gpuvs {

namespace {

const std::vector<FamilyDef>& family_table() {
  static const std::vector<FamilyDef> t = [] {
    std::vector<FamilyDef> v = produces_rows::families();
    for (size_t i = 0; i < v.size(); ++i)
      if (static_cast<size_t>(v[i].family) != i)
        throw std::logic_error(fmt::format("produces table: {} out of order", v[i].pattern));
    if (v.size() != static_cast<size_t>(Family::kCount))
      throw std::logic_error("produces table: a family has no row");
    return v;
  }();
  return t;
}

// Pattern parts: literal text and "{name}" placeholders, in order.
struct Part {
  bool placeholder = false;
  std::string_view text;  // literal text, or the placeholder's name
};

std::vector<Part> parts_of(std::string_view pattern) {
  std::vector<Part> out;
  size_t pos = 0;
  while (pos < pattern.size()) {
    const size_t open = pattern.find('{', pos);
    if (open == std::string_view::npos) {
      out.push_back({false, pattern.substr(pos)});
      break;
    }
    if (open > pos) out.push_back({false, pattern.substr(pos, open - pos)});
    const size_t close = pattern.find('}', open);
    if (close == std::string_view::npos)
      throw std::logic_error(fmt::format("produces table: unclosed '{{' in {}", pattern));
    out.push_back({true, pattern.substr(open + 1, close - open - 1)});
    pos = close + 1;
  }
  return out;
}

const Placeholder& placeholder(const FamilyDef& def, std::string_view name) {
  for (const Placeholder& p : def.placeholders)
    if (p.name == name) return p;
  throw std::logic_error(
      fmt::format("produces table: {} has no placeholder {}", def.pattern, name));
}

bool has_value(const Placeholder& p, std::string_view v) {
  return std::any_of(p.values.begin(), p.values.end(),
                     [&](const PlaceholderValue& x) { return x.text == v; });
}

// An open placeholder's text: one or more dotted words, none empty.
bool open_value_ok(std::string_view v) {
  if (v.empty() || v.front() == '.' || v.back() == '.') return false;
  return v.find("..") == std::string_view::npos;
}

// Matches `id` from position `at` against parts[k...]; fills `values`.
bool match_parts(const FamilyDef& def, const std::vector<Part>& parts, size_t k,
                 std::string_view id, size_t at, std::vector<std::string>& values) {
  if (k == parts.size()) return at == id.size();
  const Part& part = parts[k];
  if (!part.placeholder) {
    if (id.substr(at, part.text.size()) != part.text) return false;
    return match_parts(def, parts, k + 1, id, at + part.text.size(), values);
  }
  const Placeholder& p = placeholder(def, part.text);
  if (p.values.empty()) {  // open: the rest of the id
    const std::string_view rest = id.substr(at);
    if (k + 1 != parts.size() || !open_value_ok(rest)) return false;
    values.emplace_back(rest);
    return true;
  }
  for (const PlaceholderValue& v : p.values) {
    if (id.substr(at, v.text.size()) != v.text) continue;
    values.emplace_back(v.text);
    if (match_parts(def, parts, k + 1, id, at + v.text.size(), values)) return true;
    values.pop_back();
  }
  return false;
}

template <typename Values>
std::string build_id(Family family, const Values& values) {
  const FamilyDef& def = family_def(family);
  const std::vector<Part> parts = parts_of(def.pattern);
  std::string id;
  auto it = values.begin();
  for (const Part& part : parts) {
    if (!part.placeholder) {
      id += part.text;
      continue;
    }
    if (it == values.end())
      throw std::logic_error(
          fmt::format("result id {}: no value for {{{}}}", def.pattern, part.text));
    const std::string_view v = *it++;
    const Placeholder& p = placeholder(def, part.text);
    if (p.values.empty() ? !open_value_ok(v) : !has_value(p, v))
      throw std::logic_error(fmt::format("result id {}: '{}' is not a value of {{{}}} in the table",
                                         def.pattern, v, part.text));
    id += v;
  }
  if (it != values.end())
    throw std::logic_error(fmt::format("result id {}: too many values", def.pattern));
  return id;
}

}  // namespace

std::span<const FamilyDef> families() {
  return family_table();
}

const FamilyDef& family_def(Family f) {
  const auto i = static_cast<size_t>(f);
  if (i >= family_table().size()) throw std::logic_error("family_def: no such family");
  return family_table()[i];
}

std::span<const BenchmarkDef> benchmark_defs() {
  static const std::vector<BenchmarkDef> t = produces_rows::benchmarks();
  return t;
}

const BenchmarkDef* find_benchmark_def(std::string_view name) {
  for (const BenchmarkDef& b : benchmark_defs())
    if (b.name == name) return &b;
  return nullptr;
}

std::span<const ImporterDef> importer_defs() {
  static const std::vector<ImporterDef> t = produces_rows::importers();
  return t;
}

const ImporterDef* find_importer_def(std::string_view tool) {
  for (const ImporterDef& i : importer_defs())
    if (i.tool == tool) return &i;
  return nullptr;
}

std::span<const ModelDef> model_defs() {
  return produces_rows::models();
}

const ModelDef* find_model_def(std::string_view id) {
  for (const ModelDef& m : model_defs())
    if (m.id == id) return &m;
  return nullptr;
}

std::string result_id(Family family, std::initializer_list<std::string_view> values) {
  return build_id(family, values);
}

std::string result_id(Family family, const std::vector<std::string>& values) {
  return build_id(family, values);
}

std::string IdMatch::value(std::string_view name) const {
  if (!family) return {};
  size_t k = 0;
  for (const Part& part : parts_of(family->pattern)) {
    if (!part.placeholder) continue;
    if (part.text == name) return k < values.size() ? values[k] : std::string();
    ++k;
  }
  return {};
}

std::optional<IdMatch> match_result_id(std::string_view id) {
  for (const FamilyDef& def : family_table()) {
    std::vector<std::string> values;
    if (match_parts(def, parts_of(def.pattern), 0, id, 0, values))
      return IdMatch{&def, std::move(values)};
  }
  return std::nullopt;
}

std::vector<std::string> tool_twin_ids(std::string_view id) {
  std::vector<std::string> out;
  const std::optional<IdMatch> m = match_result_id(id);
  if (!m) return out;
  for (const FamilyDef& def : family_table()) {
    if (def.twin_of != m->family->family) continue;
    size_t k = 0;
    bool takes = true;
    for (const Part& part : parts_of(def.pattern)) {
      if (!part.placeholder) continue;
      const Placeholder& p = placeholder(def, part.text);
      takes = takes && k < m->values.size() && (p.values.empty() || has_value(p, m->values[k]));
      ++k;
    }
    if (takes && k == m->values.size()) out.push_back(build_id(def.family, m->values));
  }
  return out;
}

std::string family_unit(const FamilyDef& def, const std::vector<std::string>& values) {
  size_t k = 0;
  std::string item, batch;
  for (const Part& part : parts_of(def.pattern)) {
    if (!part.placeholder) continue;
    const Placeholder& p = placeholder(def, part.text);
    if (k < values.size()) {
      for (const PlaceholderValue& v : p.values)
        if (v.text == values[k] && !v.unit.empty()) return std::string(v.unit);
      if (p.name == "model")
        if (const ModelDef* m = find_model_def(values[k])) {
          item = m->item;
          batch = m->batch_unit();
        }
    }
    ++k;
  }
  std::string unit(def.unit);
  if (const size_t at = unit.find("{item}"); at != std::string::npos) unit.replace(at, 6, item);
  if (const size_t at = unit.find("{batch}"); at != std::string::npos) unit.replace(at, 7, batch);
  return unit;
}

std::vector<std::string> expand_family(const FamilyDef& def) {
  std::vector<std::string> ids = {""};
  for (const Part& part : parts_of(def.pattern)) {
    std::vector<std::string> next;
    if (!part.placeholder) {
      for (std::string& s : ids)
        next.push_back(s + std::string(part.text));
    } else {
      const Placeholder& p = placeholder(def, part.text);
      for (const std::string& s : ids) {
        if (p.values.empty()) next.push_back(s + "{" + std::string(p.name) + "}");
        for (const PlaceholderValue& v : p.values)
          next.push_back(s + std::string(v.text));
      }
    }
    ids = std::move(next);
  }
  return ids;
}

}  // namespace gpuvs
