#include "advise/prices.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <map>
#include <optional>

#include "core/embedded.h"
#include "core/error.h"
#include "core/input_file.h"

namespace gpuvs::advise {

namespace {

constexpr std::string_view kExamplePath = "data/prices/example-prices.csv";
constexpr double kMinPrice = 1e-6;
constexpr double kMaxPrice = 1e9;

std::string trim(std::string_view s) {
  size_t b = 0;
  size_t e = s.size();
  while (b < e && std::isspace(static_cast<unsigned char>(s[b])))
    ++b;
  while (e > b && std::isspace(static_cast<unsigned char>(s[e - 1])))
    --e;
  return std::string(s.substr(b, e - b));
}

[[noreturn]] void fail(std::string_view name, int line, const std::string& problem) {
  if (line > 0) throw UsageError(fmt::format("{}:{}: {}", name, line, problem));
  throw UsageError(fmt::format("{}: {}", name, problem));
}

// RFC 4180 fields of one line; nullopt when a quote is left open.
std::optional<std::vector<std::string>> split_csv(std::string_view line) {
  std::vector<std::string> out;
  std::string field;
  bool quoted = false;
  bool was_quoted = false;
  for (size_t i = 0; i < line.size(); ++i) {
    const char c = line[i];
    if (quoted) {
      if (c == '"') {
        if (i + 1 < line.size() && line[i + 1] == '"') {
          field += '"';
          ++i;
        } else {
          quoted = false;
        }
      } else {
        field += c;
      }
    } else if (c == '"' && trim(field).empty()) {
      quoted = true;
      was_quoted = true;
      field.clear();
    } else if (c == ',') {
      out.push_back(was_quoted ? field : trim(field));
      field.clear();
      was_quoted = false;
    } else {
      field += c;
    }
  }
  if (quoted) return std::nullopt;
  out.push_back(was_quoted ? field : trim(field));
  return out;
}

std::string lower(std::string s) {
  for (char& c : s)
    c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

}  // namespace

Prices Prices::parse(std::string_view text, std::string_view name, const Catalogue& catalogue) {
  Prices p;
  p.name_ = std::string(name);
  if (text.size() >= 3 && text.substr(0, 3) == "\xEF\xBB\xBF") text.remove_prefix(3);
  // Before any line is read: comments and sources reach JSON output, which needs UTF-8.
  if (const std::optional<TextProblem> problem = find_text_problem(text, "prices file"))
    fail(name, problem->line, problem->problem);
  std::map<std::string, int> columns;
  bool header_seen = false;
  bool leading_comments = true;
  std::map<std::string, int> seen;  // gpu id → line
  int line_no = 0;
  size_t pos = 0;
  while (pos <= text.size()) {
    const size_t end = text.find('\n', pos);
    std::string_view raw =
        text.substr(pos, end == std::string_view::npos ? std::string_view::npos : end - pos);
    pos = end == std::string_view::npos ? text.size() + 1 : end + 1;
    ++line_no;
    if (!raw.empty() && raw.back() == '\r') raw.remove_suffix(1);
    const std::string line = trim(raw);
    if (line.empty()) continue;
    if (line[0] == '#') {
      if (leading_comments) p.description_.push_back(trim(line.substr(1)));
      continue;
    }
    leading_comments = false;
    const auto fields = split_csv(raw);
    if (!fields) fail(name, line_no, "a quoted field is not closed");
    if (!header_seen) {
      header_seen = true;
      for (size_t i = 0; i < fields->size(); ++i) {
        const std::string col = lower((*fields)[i]);
        if (col != "gpu" && col != "price_per_gpu_hour" && col != "currency" && col != "source" &&
            col != "note")
          fail(name, line_no,
               fmt::format("unknown column '{}' (gpu, price_per_gpu_hour, currency, source, note)",
                           (*fields)[i]));
        if (columns.count(col)) fail(name, line_no, fmt::format("column '{}' appears twice", col));
        columns[col] = static_cast<int>(i);
      }
      for (const char* need : {"gpu", "price_per_gpu_hour", "currency"})
        if (!columns.count(need))
          fail(name, line_no,
               fmt::format("the header lacks the column '{}' (needs gpu, price_per_gpu_hour, "
                           "currency)",
                           need));
      continue;
    }
    if (fields->size() != columns.size())
      fail(name, line_no,
           fmt::format("{} fields, the header has {}", fields->size(), columns.size()));
    const auto field = [&](const char* col) { return (*fields)[columns.at(col)]; };
    const std::string gpu = field("gpu");
    if (gpu.empty()) fail(name, line_no, "empty gpu");
    const GpuSpec* spec = catalogue.find(gpu);
    if (!spec) {
      const std::vector<std::string> close = catalogue.suggest(gpu);
      fail(name, line_no,
           fmt::format("unknown GPU '{}'{}", gpu,
                       close.empty() ? std::string()
                                     : fmt::format("; did you mean: {}?", fmt::join(close, ", "))));
    }
    const std::string price_text = field("price_per_gpu_hour");
    char* stop = nullptr;
    const double price = std::strtod(price_text.c_str(), &stop);
    if (price_text.empty() || stop != price_text.c_str() + price_text.size())
      fail(name, line_no, fmt::format("price '{}' is not a number", price_text));
    // Bounds wide enough for any currency's hourly price, narrow enough to refuse
    // what is no price (a subnormal 1e-310 passes strtod as a positive number).
    if (!std::isfinite(price) || price < kMinPrice || price > kMaxPrice)
      fail(name, line_no,
           fmt::format("price '{}' must be a positive number from {:g} to {:g}", price_text,
                       kMinPrice, kMaxPrice));
    const std::string currency = field("currency");
    if (currency.empty()) fail(name, line_no, "empty currency");
    if (p.currency_.empty()) {
      p.currency_ = currency;
    } else if (currency != p.currency_) {
      fail(name, line_no,
           fmt::format("currency '{}' differs from '{}' above: one currency per file", currency,
                       p.currency_));
    }
    if (const auto it = seen.find(spec->id); it != seen.end())
      fail(name, line_no, fmt::format("{} is priced twice (line {} too)", spec->id, it->second));
    seen[spec->id] = line_no;
    Price price_row;
    price_row.gpu_id = spec->id;
    price_row.per_gpu_hour = price;
    price_row.source = columns.count("source") ? field("source") : std::string();
    price_row.line = line_no;
    p.prices_.push_back(std::move(price_row));
  }
  if (!header_seen) fail(name, 0, "no header line (gpu,price_per_gpu_hour,currency,...)");
  if (p.prices_.empty()) fail(name, 0, "no prices after the header");
  return p;
}

Prices Prices::load(const std::filesystem::path& path, const Catalogue& catalogue) {
  return parse(read_input_file(path, path.string(), "prices file", kMaxPricesBytes), path.string(),
               catalogue);
}

Prices Prices::example(const Catalogue& catalogue) {
  const std::optional<std::string_view> text = embedded_file(kExamplePath);
  if (!text) throw Error("the example prices file is not built into this binary");
  return parse(*text, kExamplePath, catalogue);
}

const Price* Prices::find(const std::string& gpu_id) const {
  const auto it = std::find_if(prices_.begin(), prices_.end(),
                               [&](const Price& p) { return p.gpu_id == gpu_id; });
  return it == prices_.end() ? nullptr : &*it;
}

}  // namespace gpuvs::advise
