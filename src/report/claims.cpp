// Claims files (CSV, TOML) and the names claims use. Parsing validates everything it
// can without a catalogue (columns, numbers, metric names, units), so a malformed
// file fails at once with one line naming the file and the line. Claimed GPU names
// resolve through the catalogue here; judging is in compare.cpp, next to the other
// comparisons of a figure with a reference.
#include "report/claims.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <map>
#include <regex>
#include <sstream>
#include <tuple>

#include "core/error.h"
#include "core/input_file.h"
#include "core/run_file_json.h"
#include "specs/metrics.h"

#if GPUVS_HAVE_TOML
#include <toml++/toml.h>
#endif

namespace gpuvs {

const char* to_string(ClaimVerdict v) {
  switch (v) {
    case ClaimVerdict::kHolds:
      return "holds";
    case ClaimVerdict::kHoldsSparse:
      return "holds (sparse)";
    case ClaimVerdict::kHoldsTensor:
      return "holds (tensor)";
    case ClaimVerdict::kHoldsNonTensor:
      return "holds (non-tensor)";
    case ClaimVerdict::kOff:
      return "off";
    case ClaimVerdict::kContradicted:
      return "contradicted";
    case ClaimVerdict::kUnverifiable:
      return "unverifiable";
  }
  return "unknown";
}

bool holds(ClaimVerdict v) {
  return v == ClaimVerdict::kHolds || v == ClaimVerdict::kHoldsSparse ||
         v == ClaimVerdict::kHoldsTensor || v == ClaimVerdict::kHoldsNonTensor;
}

namespace {

std::string alnum_lower(std::string_view s) {
  std::string out;
  for (unsigned char c : s)
    if (std::isalnum(c)) out += static_cast<char>(std::tolower(c));
  return out;
}

std::string trim(std::string_view s) {
  size_t b = 0, e = s.size();
  while (b < e && std::isspace(static_cast<unsigned char>(s[b])))
    ++b;
  while (e > b && std::isspace(static_cast<unsigned char>(s[e - 1])))
    --e;
  return std::string(s.substr(b, e - b));
}

// Names people write for metrics, by their alnum-lowercase key.
struct MetricAlias {
  const char* key;
  const char* id;
};

constexpr MetricAlias kMetricAliases[] = {
    {"fp64", "compute.fp64"},
    {"fp64tensor", "compute.fp64_tensor"},
    {"fp32", "compute.fp32"},
    {"tf32", "compute.tf32"},
    {"fp16", "compute.fp16"},
    {"half", "compute.fp16"},
    {"bf16", "compute.bf16"},
    {"bfloat16", "compute.bf16"},
    {"fp8", "compute.fp8"},
    {"int8", "compute.int8"},
    {"memorybandwidth", "memory.bandwidth"},
    {"bandwidth", "memory.bandwidth"},
    {"hbmbandwidth", "memory.bandwidth"},
    {"memory", "memory.size"},
    {"memorysize", "memory.size"},
    {"memorycapacity", "memory.size"},
    {"vram", "memory.size"},
    {"gpumemory", "memory.size"},
    {"nvlink", "link.nvlink"},
    {"nvlinkbandwidth", "link.nvlink"},
    {"pcie", "link.pcie"},
    {"pciebandwidth", "link.pcie"},
    {"cudacores", "gpu.cuda_cores"},
    {"cores", "gpu.cuda_cores"},
    {"sms", "gpu.sm_count"},
    {"smcount", "gpu.sm_count"},
    {"tdp", "power.tdp"},
    {"power", "power.tdp"},
    {"maxpower", "power.tdp"},
    {"boostclock", "clock.boost"},
    {"resnet50training", "model.resnet50.train"},
    {"resnet50train", "model.resnet50.train"},
    {"resnet50inference", "model.resnet50.infer"},
    {"resnet50infer", "model.resnet50.infer"},
    {"bertlargetraining", "model.bert-large.train"},
    {"bertlargetrain", "model.bert-large.train"},
    {"bertlargeinference", "model.bert-large.infer"},
    {"bertlargeinfer", "model.bert-large.infer"},
};

}  // namespace

const MetricDef* resolve_claim_metric(std::string_view name) {
  const std::string t = trim(name);
  if (const MetricDef* m = find_metric(t)) return m;
  const std::string key = alnum_lower(t);
  if (key.empty()) return nullptr;
  for (const MetricAlias& a : kMetricAliases) {
    if (key == a.key) return find_metric(a.id);
  }
  // Metric ids and names with punctuation ignored: "Memory.Bandwidth", "FP16 tensor
  // (dense)"; precisions without their group: "fp16 sparse" is compute.fp16_sparse.
  for (const MetricDef& m : metrics()) {
    const std::string id = alnum_lower(m.id);
    if (id == key || alnum_lower(m.name) == key || id == "compute" + key) return &m;
  }
  return nullptr;
}

std::optional<double> claim_to_base_unit(double value, std::string_view unit,
                                         std::string_view base_unit) {
  const std::string u = trim(unit);
  if (auto v = to_base_unit(value, u, base_unit)) return v;
  const std::string k = alnum_lower(u);
  auto any = [&](std::initializer_list<const char*> keys) {
    return std::any_of(keys.begin(), keys.end(), [&](const char* x) { return k == x; });
  };
  if (base_unit == "1" && any({"", "1", "cores", "core", "count", "units", "x"})) return value;
  if (base_unit == "img/s" && any({"imgs", "imagess", "imagesec", "imgsec", "imagessec", "ips"}))
    return value;
  if (base_unit == "seq/s" && any({"seqs", "sampless", "samplesec", "sampless", "sequencess",
                                   "seqsec", "samplessec", "sequencessec"}))
    return value;
  return std::nullopt;
}

// ---------------------------------------------------------------------------------
// Parsing

namespace {

// One line whatever `what` holds: a TOML parser's description quotes the source,
// newlines included, and a quoted CSV field may hold one too.
[[noreturn]] void fail(std::string_view name, int line, const std::string& what) {
  throw UsageError(fmt::format("{}:{}: {}", name, line, run_json::printable(what, 400)));
}

std::string known_metric_hint() {
  return "e.g. fp32, fp16, bf16, fp8, memory bandwidth, memory, nvlink, cuda cores, "
         "resnet-50 training, or a metric id such as compute.fp16";
}

// Checks a claim's fields (everything but the GPU, which needs the catalogue).
void validate_claim(const Claim& c, std::string_view name) {
  if (c.gpu.empty()) fail(name, c.line, "empty gpu");
  // Names are matched with regular expressions later: keep them to sensible sizes.
  for (auto [field, text, max] :
       {std::tuple<const char*, const std::string*, size_t>{"gpu", &c.gpu, 100},
        {"metric", &c.metric, 100},
        {"unit", &c.unit, 32},
        {"precision", &c.precision, 200},
        {"setting", &c.setting, 500}})
    if (text->size() > max)
      fail(name, c.line, fmt::format("{} is longer than {} characters", field, max));
  if (c.metric.empty()) fail(name, c.line, "empty metric");
  const MetricDef* m = resolve_claim_metric(c.metric);
  if (!m)
    fail(name, c.line,
         fmt::format("unknown metric '{}'{} ({})", c.metric, metric_suggestion(c.metric),
                     known_metric_hint()));
  if (!std::isfinite(c.value)) fail(name, c.line, "value is not a finite number");
  if (c.value < 0) fail(name, c.line, fmt::format("value {} is negative", c.value));
  // A subnormal value has lost its precision already; every claim is far above one.
  if (c.value != 0 && c.value < std::numeric_limits<double>::min())
    fail(name, c.line, fmt::format("value {} is too small to be a figure", c.value));
  const std::optional<double> base = claim_to_base_unit(c.value, c.unit, m->unit);
  if (!base)
    fail(name, c.line,
         fmt::format("unit '{}' does not fit {} (a unit of {} expected)", c.unit, m->id, m->unit));
  // 1e300 PB/s is finite as written and infinite in B/s: no figure to judge it by.
  if (!std::isfinite(*base) || (*base != 0 && *base < std::numeric_limits<double>::min()))
    fail(name, c.line,
         fmt::format("value {} {} is out of range once converted to {}", c.value, c.unit, m->unit));
}

double parse_number(std::string_view text, std::string_view name, int line) {
  const std::string t = trim(text);
  double v = 0;
  const char* end = t.data() + t.size();
  auto [ptr, ec] = std::from_chars(t.data(), end, v);
  if (t.empty() || ec != std::errc() || ptr != end)
    fail(name, line,
         fmt::format("value '{}' is not a number (plain digits, '.' for decimals, no "
                     "thousands separators)",
                     t));
  return v;
}

// One CSV line into fields (RFC 4180 quoting within the line; "" is a quote).
std::vector<std::string> split_csv_line(std::string_view s, std::string_view name, int line) {
  std::vector<std::string> out;
  size_t i = 0;
  while (true) {
    std::string field;
    while (i < s.size() && (s[i] == ' ' || s[i] == '\t'))
      ++i;
    if (i < s.size() && s[i] == '"') {
      ++i;
      bool closed = false;
      while (i < s.size()) {
        if (s[i] == '"') {
          if (i + 1 < s.size() && s[i + 1] == '"') {
            field += '"';
            i += 2;
            continue;
          }
          closed = true;
          ++i;
          break;
        }
        field += s[i++];
      }
      if (!closed) fail(name, line, "unterminated quoted field");
      while (i < s.size() && (s[i] == ' ' || s[i] == '\t'))
        ++i;
      if (i < s.size() && s[i] != ',') fail(name, line, "text after a closing quote");
    } else {
      const size_t comma = s.find(',', i);
      field =
          trim(s.substr(i, comma == std::string_view::npos ? std::string_view::npos : comma - i));
      if (field.find('"') != std::string::npos)
        fail(name, line, "a quote inside an unquoted field");
      i = comma == std::string_view::npos ? s.size() : comma;
    }
    out.push_back(std::move(field));
    if (i >= s.size()) break;
    ++i;  // the comma
  }
  return out;
}

constexpr std::array<const char*, 7> kCsvColumns = {"gpu",    "metric",    "value",  "unit",
                                                    "source", "precision", "setting"};
constexpr const char* kCsvHeaderHint = "gpu,metric,value,unit[,source,precision,setting]";

std::vector<Claim> parse_csv(std::string_view text, std::string_view name) {
  std::vector<Claim> claims;
  std::map<std::string, size_t> col;  // column name -> index
  size_t ncols = 0;
  int line_no = 0;
  size_t pos = 0;
  bool have_header = false;
  while (pos < text.size()) {
    size_t nl = text.find('\n', pos);
    if (nl == std::string_view::npos) nl = text.size();
    std::string_view line = text.substr(pos, nl - pos);
    pos = nl + 1;
    ++line_no;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    const std::string t = trim(line);
    if (t.empty() || t[0] == '#') continue;
    std::vector<std::string> f = split_csv_line(line, name, line_no);
    if (!have_header) {
      for (size_t i = 0; i < f.size(); ++i) {
        std::string c = f[i];
        std::transform(c.begin(), c.end(), c.begin(),
                       [](unsigned char x) { return std::tolower(x); });
        if (std::find_if(kCsvColumns.begin(), kCsvColumns.end(),
                         [&](const char* k) { return c == k; }) == kCsvColumns.end())
          fail(
              name, line_no,
              fmt::format("unknown column '{}' in the header (expected {})", f[i], kCsvHeaderHint));
        if (!col.emplace(c, i).second) fail(name, line_no, fmt::format("column '{}' twice", c));
      }
      for (const char* req : {"gpu", "metric", "value", "unit"})
        if (!col.count(req))
          fail(name, line_no,
               fmt::format("header lacks column '{}' (expected {})", req, kCsvHeaderHint));
      ncols = f.size();
      have_header = true;
    } else {
      if (f.size() != ncols)
        fail(name, line_no, fmt::format("{} fields, the header has {}", f.size(), ncols));
      auto get = [&](const char* k) { return col.count(k) ? f[col.at(k)] : std::string(); };
      Claim c;
      c.line = line_no;
      c.gpu = get("gpu");
      c.metric = get("metric");
      c.value = parse_number(get("value"), name, line_no);
      c.unit = get("unit");
      c.source = get("source");
      c.precision = get("precision");
      c.setting = get("setting");
      validate_claim(c, name);
      claims.push_back(std::move(c));
    }
  }
  if (!have_header)
    fail(name, std::max(line_no, 1),
         fmt::format("empty claims file (expected the header {})", kCsvHeaderHint));
  if (claims.empty()) fail(name, line_no, "no claims after the header");
  return claims;
}

#if GPUVS_HAVE_TOML
std::vector<Claim> parse_toml(std::string_view text, std::string_view name) {
  toml::table doc;
  try {
    doc = toml::parse(text, name);
  } catch (const toml::parse_error& e) {
    fail(name, static_cast<int>(e.source().begin.line), std::string(e.description()));
  }
  std::string default_source;
  for (const auto& [key, node] : doc) {
    const int line = static_cast<int>(node.source().begin.line);
    if (key == "claim") continue;
    if ((key == "source" || key == "title" || key == "description") && node.is_string()) {
      if (key == "source") default_source = *node.value<std::string>();
      continue;
    }
    fail(name, line,
         fmt::format("unknown key '{}' (expected [[claim]] tables, and optionally title, "
                     "description and source strings)",
                     key.str()));
  }
  const toml::array* arr = doc["claim"].as_array();
  if (!arr || arr->empty())
    fail(name, 1, "no [[claim]] tables (each: gpu, metric, value, unit[, source])");
  std::vector<Claim> claims;
  for (const toml::node& n : *arr) {
    const int line = static_cast<int>(n.source().begin.line);
    const toml::table* t = n.as_table();
    if (!t) fail(name, line, "'claim' must be an array of tables ([[claim]])");
    Claim c;
    c.line = line;
    c.source = default_source;
    bool have_value = false;
    for (const auto& [key, v] : *t) {
      const int kline = static_cast<int>(v.source().begin.line);
      const std::string k(key.str());
      if (k == "value") {
        if (auto i = v.as_integer())
          c.value = static_cast<double>(i->get());
        else if (auto d = v.as_floating_point())
          c.value = d->get();
        else
          fail(name, kline, "value must be a number");
        have_value = true;
        continue;
      }
      std::string* dst = k == "gpu"         ? &c.gpu
                         : k == "metric"    ? &c.metric
                         : k == "unit"      ? &c.unit
                         : k == "source"    ? &c.source
                         : k == "precision" ? &c.precision
                         : k == "setting"   ? &c.setting
                                            : nullptr;
      if (!dst)
        fail(name, kline,
             fmt::format("unknown key '{}' (expected gpu, metric, value, unit, source, "
                         "precision, setting)",
                         k));
      if (!v.is_string()) fail(name, kline, fmt::format("{} must be a string", k));
      *dst = *v.value<std::string>();
    }
    for (auto [k, present] : {std::pair<const char*, bool>{"gpu", !c.gpu.empty()},
                              {"metric", !c.metric.empty()},
                              {"value", have_value},
                              {"unit", t->contains("unit")}})
      if (!present) fail(name, line, fmt::format("claim lacks '{}'", k));
    validate_claim(c, name);
    claims.push_back(std::move(c));
  }
  return claims;
}
#endif

bool ends_with_ci(std::string_view s, std::string_view suffix) {
  if (s.size() < suffix.size()) return false;
  for (size_t i = 0; i < suffix.size(); ++i)
    if (std::tolower(static_cast<unsigned char>(s[s.size() - suffix.size() + i])) != suffix[i])
      return false;
  return true;
}

bool looks_like_toml(std::string_view text) {
  std::istringstream in{std::string(text)};
  for (std::string line; std::getline(in, line);) {
    const std::string t = trim(line);
    if (t.empty() || t[0] == '#') continue;
    return t[0] == '[' || t.find('=') != std::string::npos;
  }
  return false;
}

}  // namespace

std::vector<Claim> parse_claims(std::string_view text, std::string_view name) {
  if (text.size() >= 3 && std::memcmp(text.data(), "\xEF\xBB\xBF", 3) == 0) text.remove_prefix(3);
  // Checked before any field is read: a field that is not UTF-8 would make the JSON
  // output fail after the text outputs were written.
  if (const std::optional<TextProblem> p = find_text_problem(text, "claims file"))
    fail(name, p->line, p->problem);
  const bool toml =
      ends_with_ci(name, ".toml") || (!ends_with_ci(name, ".csv") && looks_like_toml(text));
  if (!toml) return parse_csv(text, name);
#if GPUVS_HAVE_TOML
  return parse_toml(text, name);
#else
  throw UsageError(fmt::format(
      "{}: this build reads CSV claims files only (built without toml++); use the CSV form "
      "(header {})",
      name, kCsvHeaderHint));
#endif
}

std::vector<Claim> load_claims(const std::filesystem::path& path) {
  return parse_claims(read_input_file(path, path.string(), "claims file", kMaxClaimsBytes),
                      path.string());
}

// ---------------------------------------------------------------------------------
// Resolving claimed GPU names

namespace {

std::vector<std::string> tokens(std::string_view s) {
  std::vector<std::string> out;
  std::string cur;
  for (unsigned char c : s) {
    if (std::isalnum(c)) {
      cur += static_cast<char>(std::tolower(c));
    } else if (!cur.empty()) {
      out.push_back(cur);
      cur.clear();
    }
  }
  if (!cur.empty()) out.push_back(cur);
  return out;
}

bool has_all_tokens(const GpuSpec& g, const std::vector<std::string>& want) {
  std::vector<std::string> have = tokens(g.id);
  for (const std::string* s : {&g.name})
    for (auto& t : tokens(*s))
      have.push_back(t);
  for (const std::string& a : g.aliases)
    for (auto& t : tokens(a))
      have.push_back(t);
  return std::all_of(want.begin(), want.end(), [&](const std::string& w) {
    return std::find(have.begin(), have.end(), w) != have.end();
  });
}

}  // namespace

ClaimedGpu resolve_claimed_gpu(std::string_view name, const Catalogue& catalogue) {
  ClaimedGpu out;
  std::string n = trim(name);
  if (n.size() > 7 && alnum_lower(n.substr(0, 7)) == "nvidia") n = trim(n.substr(7));
  out.family = n;
  if ((out.spec = catalogue.find(n))) return out;

  // A memory size in the name ("80GB", "96 GB", "80GiB") narrows the family.
  static const std::regex kSize(R"((\d+(?:\.\d+)?)\s*(GB|GiB|G)\b)", std::regex::icase);
  std::smatch m;
  if (std::regex_search(n, m, kSize)) {
    const bool binary = alnum_lower(m[2].str()) == "gib";
    // strtod, not std::stod: it never throws, whatever digits a name holds.
    out.named_memory_bytes =
        std::strtod(m[1].str().c_str(), nullptr) * (binary ? 1073741824.0 : 1e9);
    out.family = trim(std::string(m.prefix()) + " " + std::string(m.suffix()));
  }
  const std::vector<std::string> want = tokens(out.family);
  if (want.empty()) return out;
  const GpuSpec* family_entry = catalogue.find(out.family);
  std::vector<const GpuSpec*> family;
  for (const GpuSpec& g : catalogue.gpus())
    if (has_all_tokens(g, want)) family.push_back(&g);
  if (family_entry && std::find(family.begin(), family.end(), family_entry) == family.end())
    family.insert(family.begin(), family_entry);
  if (family.empty()) return out;
  if (!out.named_memory_bytes) {
    out.spec = family_entry ? family_entry : family.front();
    return out;
  }
  // Sizes match within 10 %: "80GB" is 80 GiB on the A100 datasheet's own terms.
  auto size_fits = [&](const GpuSpec* g) {
    auto it = g->figures.find("memory.size");
    return it != g->figures.end() && it->second.value > 0 &&
           std::fabs(*out.named_memory_bytes / it->second.value - 1) <= 0.10;
  };
  if (family_entry && size_fits(family_entry)) {
    out.spec = family_entry;
    return out;
  }
  for (const GpuSpec* g : family)
    if (size_fits(g)) {
      out.spec = g;
      return out;
    }
  out.spec = family_entry ? family_entry : family.front();
  out.memory_mismatch = true;
  const std::string fam = alnum_lower(out.family);
  for (const GpuSpec& g : catalogue.gpus())
    if (alnum_lower(g.id).find(fam) != std::string::npos && size_fits(&g)) {
      out.other_with_size = &g;
      break;
    }
  return out;
}

}  // namespace gpuvs
