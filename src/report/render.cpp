// Text renderings of comparisons and claim judgements. One cell text is shared by the
// terminal and Markdown tables; CSV and JSON carry the raw figures in base units.
// Invariants: a missing figure is "-" (table), empty (CSV) or null (JSON); an invalid
// measurement is "invalid" / null and never a number; "none" marks a GPU that lacks
// the feature (datasheet).
#include "report/render.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>

#include <nlohmann/json.hpp>

#include "core/text.h"
#include "core/units.h"
#include "report/headline.h"
#include "report/table.h"

namespace gpuvs {

namespace {

using nlohmann::json;

std::string fmt_value(double v, const std::string& unit) {
  if (unit == "1" || unit.empty())
    return std::fabs(v - std::round(v)) < 1e-9 ? fmt::format("{:.0f}", v)
                                               : fmt::format("{:.3g}", v);
  return format_si(v, unit);
}

const char* source_tag(Source s) {
  switch (s) {
    case Source::kMeasured:
      return "";
    case Source::kDatasheet:
      return " (ds)";
    case Source::kPublished:
      return " (pub)";
    case Source::kDerived:
      return " (der)";
  }
  return "";
}

std::string cell_text(const Cell& c, const std::string& unit) {
  if (c.invalid) return "invalid";
  if (c.unsupported) return "none";
  if (!c.value) return "-";
  std::string s = fmt_value(*c.value, unit) + (c.fallback ? " (ds*)" : source_tag(c.source));
  if (c.source == Source::kMeasured) {
    if (c.noise) s += fmt::format(" ±{:.2f}%", *c.noise * 100);
    if (c.of_datasheet) s += fmt::format(" ({:.0f}% of ds)", *c.of_datasheet * 100);
    if (c.throttled) s += " throttled";
    if (c.power_capped) s += " power-capped";
  }
  return s;
}

const char* basis_tag(const std::string& basis) {
  if (basis == "datasheet") return " (ds)";
  if (basis == "published") return " (pub)";
  return "";
}

std::string vs_text(const Cell& c) {
  if (c.verdict == kDifferentBasis)
    return c.datasheet_ratio ? fmt::format("different basis (ds {:.2f}x)", *c.datasheet_ratio)
                             : std::string(kDifferentBasis);
  if (c.verdict.empty() || !c.ratio) return "-";
  if (c.verdict == "same") return fmt::format("same ({:+.1f}%){}", *c.diff_pct, basis_tag(c.basis));
  return fmt::format("{:.2f}x {}{}", *c.ratio, c.verdict, basis_tag(c.basis));
}

std::string column_source(const Column& col) {
  std::string s = col.gpu_name;
  if (col.measured) {
    s += ", measured by " + (col.measured_by.empty() ? std::string("gpuvs") : col.measured_by);
    if (col.gpu_index) s += fmt::format(": GPU {}", *col.gpu_index);
    if (!col.file.empty()) s += fmt::format(" of {}", col.file);
    if (!col.host.empty()) s += fmt::format(" on host {}", col.host);
    if (!col.started_at.empty()) s += fmt::format(" at {}", col.started_at);
    if (!col.uuid.empty()) s += fmt::format(", {}", col.uuid);
  }
  s += col.catalogue_id.empty() ? ", no catalogue entry"
                                : fmt::format(", datasheet {}", col.catalogue_id);
  return s;
}

std::string row_label(const Row& r) {
  return r.config_text.empty() ? r.name : fmt::format("{} · {}", r.name, r.config_text);
}

// Header and rows as plain strings: shared by the terminal and Markdown tables.
struct Grid {
  std::vector<std::string> header;
  std::vector<std::vector<std::string>> rows;
  std::vector<std::string> notes;  // invalid / throttled / published cells, and sources
};

Grid comparison_grid(const Comparison& c) {
  Grid g;
  g.header.push_back("metric");
  const std::string base =
      c.baseline < c.columns.size() ? c.columns[c.baseline].label : std::string();
  for (size_t i = 0; i < c.columns.size(); ++i) {
    g.header.push_back(c.columns[i].label);
    if (i != c.baseline) g.header.push_back("vs " + base);
  }
  for (const Row& r : c.rows) {
    std::vector<std::string> line{row_label(r)};
    for (size_t i = 0; i < r.cells.size(); ++i) {
      const Cell& cell = r.cells[i];
      line.push_back(cell_text(cell, r.unit));
      if (i != c.baseline) line.push_back(vs_text(cell));
      const std::string& label = c.columns[i].label;
      if (cell.invalid || cell.throttled || (cell.source == Source::kPublished && cell.value))
        g.notes.push_back(fmt::format("{}, {}: {}{}", label, row_label(r),
                                      cell.note.empty() ? to_string(cell.source) : cell.note,
                                      cell.source_ref.empty() ? "" : " (" + cell.source_ref + ")"));
      // Another tool's figure in a column of gpuvs's own measurements.
      else if (cell.value && cell.source == Source::kMeasured && !cell.measured_by.empty() &&
               cell.measured_by != "gpuvs" && c.columns[i].measured_by == "gpuvs")
        g.notes.push_back(fmt::format("{}, {}: measured by {} ({})", label, row_label(r),
                                      cell.measured_by, cell.source_ref));
    }
    g.rows.push_back(std::move(line));
  }
  for (size_t i = 0; i < c.columns.size(); ++i) {
    std::vector<std::string> urls;  // datasheet sources of this column, in row order
    for (const Row& r : c.rows) {
      const Cell& cell = r.cells[i];
      if (cell.source == Source::kDatasheet && (cell.value || cell.unsupported) &&
          !cell.source_ref.empty() &&
          std::find(urls.begin(), urls.end(), cell.source_ref) == urls.end())
        urls.push_back(cell.source_ref);
    }
    g.notes.push_back(fmt::format("{}: {}{}", c.columns[i].label, column_source(c.columns[i]),
                                  urls.empty() ? "" : fmt::format(" ({})", fmt::join(urls, ", "))));
  }
  return g;
}

constexpr const char* kLegend =
    "(ds) datasheet, (ds*) datasheet in a measured column (the run did not measure it), (pub) "
    "published, no tag: measured here; ±: measurement noise. Ratios only between figures of one "
    "basis (measured with measured, datasheet with datasheet, published with published of one "
    "setting); across bases \"different basis\" and, where both have one, the ratio of their "
    "datasheets. \"same\": within 2 sigma of the measured noise, or 1 %";

json opt_json(const std::optional<double>& v) {
  return v ? json(*v) : json(nullptr);
}

std::string md_table(const std::vector<std::string>& header,
                     const std::vector<std::vector<std::string>>& rows) {
  std::string out = "|";
  for (const std::string& h : header)
    out += " " + markdown_cell(h) + " |";
  out += "\n|";
  for (size_t i = 0; i < header.size(); ++i)
    out += "---|";
  out += "\n";
  for (const auto& row : rows) {
    out += "|";
    for (const std::string& cell : row)
      out += " " + markdown_cell(cell) + " |";
    out += "\n";
  }
  return out;
}

json config_json(const Row& r) {
  json c = json::object();
  for (const auto& [k, v] : r.config)
    c[k] = v;
  return c;
}

json headline_json(const Comparison& c, const std::vector<HeadlinePair>& pairs) {
  auto row_index = [&](const Row* r) -> json {
    if (!r) return nullptr;
    return static_cast<size_t>(r - c.rows.data());
  };
  json out = json::array();
  for (const HeadlinePair& p : pairs) {
    json items = json::array();
    for (const HeadlineItem& it : p.items)
      items.push_back(
          {{"metric", it.metric},
           {"name", it.name},
           {"unit", it.unit},
           {"baseline_row", row_index(it.base_row)},
           {"other_row", row_index(it.other_row)},
           {"baseline_value", it.base.invalid ? json(nullptr) : opt_json(it.base.value)},
           {"baseline_source", it.base_row ? json(basis_of(it.base)) : json(nullptr)},
           {"other_value", it.other.invalid ? json(nullptr) : opt_json(it.other.value)},
           {"other_source", it.other_row ? json(basis_of(it.other)) : json(nullptr)},
           {"basis", it.basis},
           {"ratio", opt_json(it.ratio)},
           {"verdict", it.verdict},
           {"datasheet_ratio", opt_json(it.datasheet_ratio)},
           {"text", headline_comparison_text(it)}});
    out.push_back({{"baseline", p.baseline},
                   {"other", p.other},
                   {"summary", p.summary},
                   {"items", std::move(items)}});
  }
  return out;
}

json comparison_json(const Comparison& c) {
  json cols = json::array();
  for (const Column& col : c.columns)
    cols.push_back(
        {{"label", col.label},
         {"gpu_name", col.gpu_name},
         {"catalogue_id", col.catalogue_id.empty() ? json(nullptr) : json(col.catalogue_id)},
         {"measured", col.measured},
         {"file", col.measured && !col.file.empty() ? json(col.file) : json(nullptr)},
         {"host", col.measured ? json(col.host) : json(nullptr)},
         {"gpu_index", col.gpu_index ? json(*col.gpu_index) : json(nullptr)},
         {"uuid", col.measured && !col.uuid.empty() ? json(col.uuid) : json(nullptr)},
         {"started_at", col.measured ? json(col.started_at) : json(nullptr)}});
  json rows = json::array();
  for (const Row& r : c.rows) {
    json cells = json::array();
    for (const Cell& cell : r.cells) {
      const bool present = cell.value || cell.invalid || cell.unsupported;
      cells.push_back({{"value", cell.invalid ? json(nullptr) : opt_json(cell.value)},
                       {"source", present ? json(to_string(cell.source)) : json(nullptr)},
                       {"fallback", cell.fallback},
                       {"source_ref", cell.source_ref},
                       {"noise", opt_json(cell.noise)},
                       {"datasheet", opt_json(cell.datasheet)},
                       {"of_datasheet", opt_json(cell.of_datasheet)},
                       {"ratio", opt_json(cell.ratio)},
                       {"diff_pct", opt_json(cell.diff_pct)},
                       {"verdict", cell.verdict},
                       {"basis", cell.basis.empty() ? json(nullptr) : json(cell.basis)},
                       {"datasheet_ratio", opt_json(cell.datasheet_ratio)},
                       {"invalid", cell.invalid},
                       {"throttled", cell.throttled},
                       {"power_capped", cell.power_capped},
                       {"unsupported", cell.unsupported},
                       {"note", cell.note}});
    }
    rows.push_back({{"metric", r.metric},
                    {"name", r.name},
                    {"unit", r.unit},
                    {"group", std::string(to_string(r.group))},
                    {"higher_is_better", r.higher_is_better},
                    {"headline", r.headline},
                    {"config", config_json(r)},
                    {"config_text", r.config_text},
                    {"published", r.published},
                    {"cells", std::move(cells)}});
  }
  return {{"schema", "gpuvs.compare/1"},
          {"baseline", c.baseline},
          {"columns", std::move(cols)},
          {"headline", headline_json(c, build_headline(c))},
          {"rows", std::move(rows)}};
}

std::string side_text(const Cell& cell, const Row* row, const std::string& unit) {
  if (!row) return "-";
  std::string s = cell_text(cell, unit);
  const std::string config = headline_config(*row);
  if (!config.empty()) s += " [" + config + "]";
  return s;
}

}  // namespace

std::string render_headline(const Comparison& c, TextFormat format) {
  const std::vector<HeadlinePair> pairs = build_headline(c);
  std::string out;
  for (const HeadlinePair& p : pairs) {
    const std::string& base = c.columns[p.baseline].label;
    const std::string& other = c.columns[p.other].label;
    std::vector<std::string> header = {"at a glance", "baseline", "other", "other vs baseline"};
    std::vector<std::vector<std::string>> rows;
    for (const HeadlineItem& it : p.items)
      rows.push_back({it.name, side_text(it.base, it.base_row, it.unit),
                      side_text(it.other, it.other_row, it.unit), headline_comparison_text(it)});
    const std::string title =
        fmt::format("At a glance: {} (other) against {} (baseline).", other, base);
    if (format == TextFormat::kMarkdown) {
      out += fmt::format("**{}** {}\n\n{}\n", markdown_cell(title), markdown_cell(p.summary),
                         md_table(header, rows));
    } else {
      using A = TextTable::Align;
      TextTable t(header, {A::kLeft, A::kRight, A::kRight, A::kLeft});
      for (auto& r : rows)
        t.add_row(std::move(r));
      out += fit_text(one_line(title), "", "") + fit_text(one_line(p.summary), "", "") +
             t.render() + "\n";
    }
  }
  return out;
}

std::string render_comparison(const Comparison& c, TextFormat format) {
  switch (format) {
    case TextFormat::kJson:
      // `replace`: a run file's path need not be UTF-8 (a Latin-1 file name).
      return comparison_json(c).dump(2, ' ', false, json::error_handler_t::replace) + "\n";
    case TextFormat::kCsv: {
      std::string out = csv_line({"metric",          "name",       "config",       "unit",
                                  "column",          "gpu",        "catalogue_id", "source",
                                  "fallback",        "value",      "noise",        "of_datasheet",
                                  "ratio",           "diff_pct",   "verdict",      "basis",
                                  "datasheet_ratio", "invalid",    "throttled",    "power_capped",
                                  "unsupported",     "source_ref", "note"});
      for (const Row& r : c.rows) {
        for (size_t i = 0; i < r.cells.size(); ++i) {
          const Cell& cell = r.cells[i];
          const Column& col = c.columns[i];
          const bool present = cell.value || cell.invalid || cell.unsupported;
          out += csv_line({r.metric,
                           r.name,
                           r.config_text,
                           r.unit,
                           col.label,
                           col.gpu_name,
                           col.catalogue_id,
                           present ? to_string(cell.source) : "",
                           CsvCell::boolean(cell.fallback),
                           CsvCell::number(cell.invalid ? std::nullopt : cell.value),
                           CsvCell::number(cell.noise),
                           CsvCell::number(cell.of_datasheet),
                           CsvCell::number(cell.ratio),
                           CsvCell::number(cell.diff_pct),
                           cell.verdict,
                           cell.basis,
                           CsvCell::number(cell.datasheet_ratio),
                           CsvCell::boolean(cell.invalid),
                           CsvCell::boolean(cell.throttled),
                           CsvCell::boolean(cell.power_capped),
                           CsvCell::boolean(cell.unsupported),
                           cell.source_ref,
                           cell.note});
        }
      }
      return out;
    }
    case TextFormat::kMarkdown: {
      const Grid g = comparison_grid(c);
      std::string out = render_headline(c, format) + md_table(g.header, g.rows);
      out += fmt::format("\n{}\n\n", markdown_cell(kLegend));
      for (const std::string& n : g.notes)
        out += "- " + markdown_line(n) + "\n";
      return out;
    }
    case TextFormat::kTerminal:
      break;
  }
  const Grid g = comparison_grid(c);
  std::vector<TextTable::Align> align(g.header.size(), TextTable::Align::kRight);
  align[0] = TextTable::Align::kLeft;
  TextTable t(g.header, align);
  for (const auto& row : g.rows)
    t.add_row(row);
  std::string out = render_headline(c, format);
  out += t.rows() ? t.render() : "no figures to compare\n";
  out += fit_text(kLegend, "", "");
  for (const std::string& n : g.notes)
    out += fit_text(one_line(n), "  ", "    ");
  return out;
}

namespace {

std::string verdict_text(const ClaimJudgement& j) {
  switch (j.verdict) {
    case ClaimVerdict::kOff:
      return fmt::format("off by {:+.0f}%", j.off_pct);
    case ClaimVerdict::kContradicted:
      return fmt::format("contradicted ({:+.0f}%)", j.off_pct);
    default:
      return to_string(j.verdict);
  }
}

std::string claimed_text(const Claim& c) {
  const std::string v = fmt::format("{}", c.value);
  return c.unit.empty() ? v : v + " " + c.unit;
}

std::string reference_text(const ClaimJudgement& j) {
  if (!j.reference) return "-";
  if (*j.reference == 0) return fmt::format("none ({})", to_string(j.reference_source));
  return fmt::format("{} ({})", fmt_value(*j.reference, j.reference_unit),
                     to_string(j.reference_source));
}

std::string claims_summary(const std::vector<ClaimJudgement>& js) {
  std::map<ClaimVerdict, int> n;
  int hold = 0;
  for (const ClaimJudgement& j : js) {
    ++n[j.verdict];
    if (holds(j.verdict)) ++hold;
  }
  std::vector<std::string> as;
  for (ClaimVerdict v :
       {ClaimVerdict::kHoldsSparse, ClaimVerdict::kHoldsTensor, ClaimVerdict::kHoldsNonTensor})
    if (n[v] > 0) {
      const std::string word = to_string(v);  // "holds (sparse)" -> "sparse"
      as.push_back(fmt::format("{} as the {} figure", n[v], word.substr(7, word.size() - 8)));
    }
  return fmt::format("{} claims: {} hold{}, {} off, {} contradicted, {} unverifiable", js.size(),
                     hold, as.empty() ? "" : fmt::format(" ({})", fmt::join(as, ", ")),
                     n[ClaimVerdict::kOff], n[ClaimVerdict::kContradicted],
                     n[ClaimVerdict::kUnverifiable]);
}

}  // namespace

std::string render_claims(const std::vector<ClaimJudgement>& judgements, TextFormat format) {
  const std::vector<std::string> header = {"line",    "gpu",       "metric", "claimed",
                                           "verdict", "reference", "why"};
  std::vector<std::vector<std::string>> rows;
  for (const ClaimJudgement& j : judgements)
    rows.push_back({std::to_string(j.claim.line), j.claim.gpu, j.claim.metric,
                    claimed_text(j.claim), verdict_text(j), reference_text(j), j.why});
  switch (format) {
    case TextFormat::kJson: {
      json arr = json::array();
      std::map<std::string, int> counts = {
          {"holds", 0}, {"holds (sparse)", 0}, {"holds (tensor)", 0}, {"holds (non-tensor)", 0},
          {"off", 0},   {"contradicted", 0},   {"unverifiable", 0}};
      for (const ClaimJudgement& j : judgements) {
        const MetricDef* m = resolve_claim_metric(j.claim.metric);
        ++counts[to_string(j.verdict)];
        arr.push_back({{"line", j.claim.line},
                       {"gpu", j.claim.gpu},
                       {"metric", j.claim.metric},
                       {"metric_id", m ? json(std::string(m->id)) : json(nullptr)},
                       {"value", j.claim.value},
                       {"unit", j.claim.unit},
                       {"source", j.claim.source},
                       {"precision", j.claim.precision},
                       {"setting", j.claim.setting},
                       {"verdict", to_string(j.verdict)},
                       {"off_pct", j.reference ? json(j.off_pct) : json(nullptr)},
                       {"reference", opt_json(j.reference)},
                       {"reference_unit", j.reference_unit},
                       {"reference_source",
                        j.reference ? json(to_string(j.reference_source)) : json(nullptr)},
                       {"reference_ref", j.reference_ref},
                       {"why", j.why}});
      }
      const json doc = {
          {"schema", "gpuvs.claims/1"}, {"claims", std::move(arr)}, {"summary", counts}};
      return doc.dump(2, ' ', false, json::error_handler_t::replace) + "\n";
    }
    case TextFormat::kCsv: {
      std::string out =
          csv_line({"line", "gpu", "metric", "value", "unit", "source", "verdict", "off_pct",
                    "reference", "reference_unit", "reference_source", "reference_ref", "why"});
      for (const ClaimJudgement& j : judgements)
        out += csv_line({CsvCell::integer(j.claim.line), j.claim.gpu, j.claim.metric,
                         CsvCell::number(j.claim.value), j.claim.unit, j.claim.source,
                         to_string(j.verdict),
                         CsvCell::fixed(j.reference ? std::optional(j.off_pct) : std::nullopt, 1),
                         CsvCell::number(j.reference), j.reference_unit,
                         j.reference ? to_string(j.reference_source) : "", j.reference_ref, j.why});
      return out;
    }
    case TextFormat::kMarkdown:
      return md_table(header, rows) + "\n" + claims_summary(judgements) + "\n";
    case TextFormat::kTerminal:
      break;
  }
  using A = TextTable::Align;
  TextTable t(header, {A::kRight, A::kLeft, A::kLeft, A::kRight, A::kLeft, A::kRight, A::kLeft});
  for (auto& row : rows)
    t.add_row(std::move(row));
  return t.render() + claims_summary(judgements) + "\n";
}

}  // namespace gpuvs
