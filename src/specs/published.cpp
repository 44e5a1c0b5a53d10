// Published figures (data/published/*.json, schema gpuvs.published/1): throughput
// measured by others, each with its source, publisher and date. Loaded with the same
// rules as the catalogue (one-line UsageError naming the file and the field).
#include "specs/published.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cctype>
#include <iterator>

#include <nlohmann/json.hpp>

#include "core/embedded.h"
#include "core/error.h"
#include "core/run_file_json.h"
#include "specs/catalogue.h"
#include "specs/metrics.h"

namespace gpuvs {

namespace {

using nlohmann::json;
using specs_detail::ObjectReader;

constexpr std::string_view kPublishedSchema = "gpuvs.published/1";

// "2024-08-28": the day the source was published (or last changed).
bool is_date(std::string_view s) {
  if (s.size() != 10 || s[4] != '-' || s[7] != '-') return false;
  for (size_t i : {0, 1, 2, 3, 5, 6, 8, 9})
    if (!std::isdigit(static_cast<unsigned char>(s[i]))) return false;
  const int month = (s[5] - '0') * 10 + (s[6] - '0');
  const int day = (s[8] - '0') * 10 + (s[9] - '0');
  return month >= 1 && month <= 12 && day >= 1 && day <= 31;
}

PublishedFigure read_figure(const json& value, std::string_view name, const std::string& path,
                            const Catalogue& catalogue) {
  const ObjectReader r(value, name, path,
                       {"gpu", "metric", "value", "unit", "precision", "setting", "source",
                        "publisher", "date", "suite", "config"});
  PublishedFigure f;
  const std::string gpu = r.string("gpu");
  const GpuSpec* spec = catalogue.find(gpu);
  if (spec == nullptr) {
    const std::vector<std::string> close = catalogue.suggest(gpu);
    r.fail("gpu", fmt::format("{} is not a GPU of the catalogue{}", run_json::quote(gpu),
                              close.empty()
                                  ? std::string()
                                  : fmt::format(" (did you mean: {}?)", fmt::join(close, ", "))));
  }
  f.gpu = spec->id;
  f.metric = r.string("metric");
  const MetricDef* metric = find_metric(f.metric);
  if (metric == nullptr)
    r.fail("metric", fmt::format("unknown metric id {}{}", run_json::quote(f.metric),
                                 metric_suggestion(f.metric)));
  f.metric = metric->id;  // the vocabulary's spelling, whatever punctuation the file used
  f.value = specs_detail::read_value(r, *metric);
  f.unit = std::string(metric->unit);
  f.precision = r.string("precision");
  f.setting = r.string("setting");
  f.source = r.url("source", true);
  f.publisher = r.string("publisher");
  f.date = r.string("date");
  if (!is_date(f.date))
    r.fail("date", fmt::format("{} is not a date such as \"2024-08-28\"", run_json::quote(f.date)));
  f.suite = r.opt_string("suite");
  if (f.suite.empty()) f.suite = f.publisher;
  if (const json* config = r.find("config"); config && !config->is_null()) {
    const ObjectReader c(*config, name, r.path("config"), {"precision", "batch", "seq"});
    f.precision_key = c.opt_string("precision");
    if (!f.precision_key.empty() &&
        std::find(std::begin(kPublishedPrecisions), std::end(kPublishedPrecisions),
                  f.precision_key) == std::end(kPublishedPrecisions))
      c.fail("precision", fmt::format("{} is not one of fp32, tf32, fp16, bf16, fp8, int8",
                                      run_json::quote(f.precision_key)));
    if (auto b = c.opt_int("batch", 1, 1 << 24)) f.batch = *b;
    if (auto q = c.opt_int("seq", 1, 1 << 24)) f.seq = *q;
  }
  return f;
}

}  // namespace

std::string describe(const PublishedFigure& f) {
  std::vector<std::string> parts;
  if (!f.precision.empty()) parts.push_back(f.precision);
  if (f.batch) parts.push_back(fmt::format("batch {}", *f.batch));
  if (f.seq) parts.push_back(fmt::format("seq {}", *f.seq));
  if (!f.date.empty()) parts.push_back(f.date);
  return fmt::format("{}{}", f.publisher.empty() ? "published" : f.publisher,
                     parts.empty() ? "" : fmt::format(": {}", fmt::join(parts, ", ")));
}

Published Published::parse(std::string_view text, std::string_view name) {
  return parse(text, name, Catalogue::builtin());
}

Published Published::parse(std::string_view text, std::string_view name,
                           const Catalogue& catalogue) {
  const json doc =
      specs_detail::parse_document(text, name, kPublishedSchema, "published figures file");
  const ObjectReader top(doc, name, "", {"schema", "figures", "note"});
  const json* figures = top.find("figures");
  if (figures == nullptr) top.fail("figures", "missing (an array of published figures)");
  if (!figures->is_array()) top.fail("figures", "expected an array");
  Published p;
  for (size_t i = 0; i < figures->size(); ++i) {
    p.figures_.push_back(
        read_figure((*figures)[i], name, "figures[" + std::to_string(i) + "]", catalogue));
  }
  return p;
}

const Published& Published::builtin() {
  static const Published all = [] {
    Published p;
    for (std::string_view path : embedded_files("data/published/")) {
      if (path.size() < 5 || path.substr(path.size() - 5) != ".json") continue;
      const Published one = parse(*embedded_file(path), path);
      p.figures_.insert(p.figures_.end(), one.figures_.begin(), one.figures_.end());
    }
    return p;
  }();
  return all;
}

std::vector<const PublishedFigure*> Published::for_gpu(std::string_view catalogue_id) const {
  std::vector<const PublishedFigure*> out;
  for (const PublishedFigure& f : figures_)
    if (f.gpu == catalogue_id) out.push_back(&f);
  return out;
}

}  // namespace gpuvs
