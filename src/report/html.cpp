// The self-contained HTML report (html.h). C++ writes the tables, so the page reads
// without JavaScript, and one container per chart; the chart specifications go into
// the JSON island and web/report.js draws them with the inlined chart library.
// Invariants:
//  - every string that comes from a file (run, catalogue, claims) is HTML-escaped,
//    in text and in attributes alike, after the control rule of core/text.h;
//  - the island is valid JSON holding no '<', '>' or '&' (escaped as \u003c ...), so
//    no string in it can end or confuse its <script> element, and its strings passed
//    the same control rule as the tables;
//  - without the chart library no chart container is written and the page says so;
//    data-charts-expected on <body> is the number of containers;
//  - an invalid result is never shown as a number, a missing figure reads "missing".
#include "report/html.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <cmath>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string_view>
#include <utility>
#include <variant>

#include "core/embedded.h"
#include "core/error.h"
#include "core/text.h"
#include "core/units.h"
#include "core/verdict.h"
#include "report/collectives.h"
#include "report/headline.h"
#include "report/html_charts.h"
#include "report/html_timeline.h"
#include "report/summary.h"

namespace gpuvs {
namespace {

using Json = nlohmann::ordered_json;

constexpr std::string_view kChartLibrary = "web/chart.umd.js";
constexpr std::string_view kNoCharts =
    "Charts are not available: this gpuvs was built without a chart library (neither npm nor "
    "Debian's libjs-chart.js was there at build time). Build gpuvs where one is (README, "
    "\"Building by hand\"), then `gpuvs compare RUN --out DIR` writes this report with charts";

// A CSS class fragment from a word of ours ("measured", "holds"): letters, digits, '-'.
std::string css_word(std::string_view s) {
  std::string out;
  for (char c : s)
    if (std::isalnum(static_cast<unsigned char>(c)) || c == '-')
      out += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

void replace_all(std::string& s, std::string_view from, std::string_view to) {
  for (size_t at = s.find(from); at != std::string::npos; at = s.find(from, at + to.size()))
    s.replace(at, from.size(), to);
}

// Text inside <script>: "</script" (any case) would end the element early. "<\/" means
// "</" in JavaScript strings, regular expressions and comments alike.
std::string script_safe(std::string_view js) {
  std::string out(js);
  for (size_t at = out.find("</"); at != std::string::npos; at = out.find("</", at + 3)) {
    std::string word = out.substr(at + 2, 6);
    std::transform(word.begin(), word.end(), word.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    if (word == "script") out.insert(at + 1, "\\");
  }
  return out;
}

// The control rule of core/text.h on every string value, so that a chart label from a
// file reads as its table cell does (escape_html applies the same rule).
void escape_control_strings(Json& j) {
  if (j.is_string()) {
    j = escape_controls(j.get_ref<const std::string&>(), true);
  } else if (j.is_structured()) {
    for (Json& v : j)
      escape_control_strings(v);
  }
}

// JSON for the island: '<', '>' and '&' only occur inside strings, where \u003c,
// \u003e and \u0026 mean the same; so no "</script", "<!--" or entity can appear.
std::string island_text(Json data) {
  escape_control_strings(data);
  std::string s = data.dump(-1, ' ', false, Json::error_handler_t::replace);
  replace_all(s, "&", "\\u0026");
  replace_all(s, "<", "\\u003c");
  replace_all(s, ">", "\\u003e");
  return s;
}

std::string asset(std::string_view path) {
  const auto text = embedded_file(path);
  if (!text)
    throw Error(fmt::format("the HTML report asset {} is not built into this gpuvs", path));
  return std::string(*text);
}

// One pass over the template: "{{name}}" becomes values[name]; inserted text is not
// scanned again, so a "{{" inside a GPU name stays as it is.
std::string fill(std::string_view tpl, const std::map<std::string, std::string>& values) {
  std::string out;
  size_t pos = 0;
  while (true) {
    const size_t open = tpl.find("{{", pos);
    if (open == std::string_view::npos) break;
    const size_t close = tpl.find("}}", open);
    if (close == std::string_view::npos) break;
    const auto it = values.find(std::string(tpl.substr(open + 2, close - open - 2)));
    if (it == values.end())
      throw Error(fmt::format("web/report.html: unknown placeholder {}",
                              tpl.substr(open, close + 2 - open)));
    out += tpl.substr(pos, open - pos);
    out += it->second;
    pos = close + 2;
  }
  out += tpl.substr(pos);
  return out;
}

std::string source_badge(std::string_view kind, std::string_view ref) {
  if (ref.empty())
    return fmt::format("<span class=\"src src-{}\">{}</span>", css_word(kind), escape_html(kind));
  return fmt::format("<span class=\"src src-{}\" title=\"{}\">{}</span>", css_word(kind),
                     escape_html(ref), escape_html(kind));
}

template <typename T>
std::string na(const std::optional<T>& v) {
  if (!v) return "n/a";
  if constexpr (std::is_same_v<T, bool>)
    return *v ? "yes" : "no";
  else
    return fmt::format("{}", *v);
}

// ---- comparison -----------------------------------------------------------------

std::string value_html(const Row& row, const Cell& cell) {
  if (cell.invalid) return "invalid";
  if (cell.unsupported) return "none";
  if (!cell.value) return "missing";
  return fmt::format(
      "<span class=\"num\">{}</span> {}", escape_html(format_si(*cell.value, row.unit)),
      cell.fallback ? source_badge("datasheet", cell.source_ref) +
                          "<span class=\"sub fallback\">datasheet, not measured</span>"
                    : source_badge(to_string(cell.source), cell.source_ref));
}

// The comparison of a cell with the baseline: a ratio of one basis, or "different
// basis" with the datasheets' ratio.
std::string verdict_html(const Cell& cell) {
  if (cell.verdict.empty()) return "";
  std::string text = cell.verdict;
  if (cell.verdict == kDifferentBasis) {
    if (cell.datasheet_ratio) text += fmt::format("; datasheets {:.2f}x", *cell.datasheet_ratio);
  } else if (cell.verdict != kBaseline && cell.ratio) {
    text = cell.verdict == "same" ? fmt::format("same {:+.1f} %", *cell.diff_pct)
                                  : fmt::format("{:.2f}x {}", *cell.ratio, cell.verdict);
    if (!cell.basis.empty()) text += " (" + cell.basis + ")";
  }
  return fmt::format("<span class=\"verdict verdict-{}\">{}</span>", css_word(cell.verdict),
                     escape_html(text));
}

std::string cell_html(const Row& row, const Cell& cell) {
  if (cell.invalid) {
    return fmt::format(
        "<td class=\"cell invalid\">invalid{}</td>",
        cell.note.empty() ? "" : "<span class=\"note\">" + escape_html(cell.note) + "</span>");
  }
  if (cell.unsupported)
    return "<td class=\"cell none\">none<span class=\"note\">" + escape_html(cell.note) +
           "</span></td>";
  if (!cell.value) return "<td class=\"cell missing\">missing</td>";
  std::string s = "<td class=\"cell\">" + value_html(row, cell);
  if (cell.source == Source::kMeasured && cell.of_datasheet)
    s += fmt::format("<span class=\"pct\">{:.1f} % of datasheet</span>", *cell.of_datasheet * 100);
  if (cell.noise)
    s += fmt::format("<span class=\"noise\">noise {:.2f} %</span>", *cell.noise * 100);
  if (cell.throttled) s += "<span class=\"warn\">throttled: thermal/hardware</span>";
  if (cell.power_capped) s += "<span class=\"note\">power-capped</span>";
  s += verdict_html(cell);
  if (!cell.note.empty() && !cell.fallback)
    s += "<span class=\"note\">" + escape_html(cell.note) + "</span>";
  return s + "</td>";
}

std::string row_header(const Row& row) {
  return fmt::format("<th scope=\"row\">{}{}<span class=\"sub\">{}</span></th>",
                     escape_html(row.name),
                     row.config_text.empty()
                         ? ""
                         : "<span class=\"config\">" + escape_html(row.config_text) + "</span>",
                     escape_html(row.metric));
}

std::string column_sub(const Column& col) {
  std::vector<std::string> parts = {col.gpu_name};
  if (col.measured) {
    if (!col.file.empty()) parts.push_back(col.file);
    if (!col.host.empty()) parts.push_back("host " + col.host);
    if (col.gpu_index) parts.push_back(fmt::format("GPU {}", *col.gpu_index));
    if (!col.uuid.empty()) parts.push_back(col.uuid);
    if (!col.measured_by.empty() && col.measured_by != "gpuvs")
      parts.push_back("measured by " + col.measured_by);
  }
  if (!col.catalogue_id.empty()) parts.push_back("datasheet " + col.catalogue_id);
  return fmt::format("{}", fmt::join(parts, " · "));
}

void comparison_section(std::string& out, const Comparison& c) {
  out += "<section id=\"comparison\">\n<h2>Comparison</h2>\n";
  out +=
      "<p class=\"legend\">Every figure says where it comes from: " + source_badge("measured", "") +
      " here by gpuvs, from the " + source_badge("datasheet", "") + ", " +
      source_badge("published", "") + " elsewhere, or " + source_badge("derived", "") +
      " from the driver's figures. Hover a label for its source. A ratio only between figures "
      "of one basis; across bases the cell says <em>different basis</em> and gives the ratio of "
      "the two datasheets where both have one.</p>\n";
  if (c.rows.empty()) {
    out += "<p>No metric has a figure for these GPUs.</p>\n</section>\n";
    return;
  }
  out += "<div class=\"table-wrap\"><table class=\"comparison\">\n<thead><tr><th>metric</th>";
  for (size_t i = 0; i < c.columns.size(); ++i) {
    const Column& col = c.columns[i];
    out += fmt::format("<th>{}<span class=\"sub\">{}</span>{}</th>", escape_html(col.label),
                       escape_html(column_sub(col)),
                       i == c.baseline ? "<span class=\"sub\">baseline</span>" : "");
  }
  out += "</tr></thead>\n<tbody>\n";
  MetricGroup group = MetricGroup::kMemory;
  bool first = true;
  for (const Row& row : c.rows) {
    if (first || row.group != group)
      out += fmt::format("<tr class=\"group\"><th colspan=\"{}\">{}</th></tr>\n",
                         c.columns.size() + 1, escape_html(to_string(row.group)));
    first = false;
    group = row.group;
    out += "<tr>" + row_header(row);
    for (size_t i = 0; i < c.columns.size(); ++i)
      out += i < row.cells.size() ? cell_html(row, row.cells[i])
                                  : "<td class=\"cell missing\">missing</td>";
    out += "</tr>\n";
  }
  out += "</tbody></table></div>\n</section>\n";
}

std::string side_html(const Row* row, const Cell& cell) {
  if (!row) return "<span class=\"missing\">no figure</span>";
  std::string s = value_html(*row, cell);
  if (cell.source == Source::kMeasured && cell.of_datasheet)
    s += fmt::format("<span class=\"pct\">{:.0f} % of its datasheet</span>",
                     *cell.of_datasheet * 100);
  if (cell.throttled) s += "<span class=\"warn\">throttled: thermal/hardware</span>";
  if (cell.power_capped) s += "<span class=\"note\">power-capped</span>";
  const std::string config = headline_config(*row);
  if (!config.empty()) s += "<span class=\"config\">" + escape_html(config) + "</span>";
  return s;
}

// The first screen: per pair, which is faster, by how much, for what, on which basis.
void headline_section(std::string& out, const Comparison& c) {
  const std::vector<HeadlinePair> pairs = build_headline(c);
  if (pairs.empty()) return;
  out += "<section id=\"headline\">\n<h2>At a glance</h2>\n";
  for (const HeadlinePair& p : pairs) {
    const std::string& base = c.columns[p.baseline].label;
    const std::string& other = c.columns[p.other].label;
    out += fmt::format(
        "<div class=\"headline-pair\" data-baseline=\"{0}\" data-other=\"{1}\">\n<h3>{1} "
        "<span class=\"against\">against</span> {0}</h3>\n<p class=\"headline-summary\">{2}</p>\n"
        "<table class=\"headline\"><thead><tr><th>figure</th><th>{0}</th><th>{1}</th>"
        "<th>{1} vs {0}</th></tr></thead>\n<tbody>\n",
        escape_html(base), escape_html(other), escape_html(p.summary));
    for (const HeadlineItem& it : p.items) {
      const std::string basis = it.basis.empty() ? "missing" : it.basis;
      out += fmt::format(
          "<tr data-metric=\"{}\" data-basis=\"{}\"><th scope=\"row\">{}</th><td "
          "class=\"base\">{}</td><td class=\"other\">{}</td><td class=\"ratio "
          "verdict-{}\">{}</td></tr>\n",
          escape_html(it.metric), css_word(basis), escape_html(it.name),
          side_html(it.base_row, it.base), side_html(it.other_row, it.other),
          css_word(it.verdict.empty() ? basis : it.verdict),
          escape_html(headline_comparison_text(it)));
    }
    out += "</tbody></table>\n</div>\n";
  }
  out += "</section>\n";
}

// ---- claims and runs ------------------------------------------------------------

void claims_section(std::string& out, const std::vector<ClaimJudgement>& claims) {
  out += "<section id=\"claims\">\n<h2>Claims</h2>\n";
  if (claims.empty()) {
    out += "<p>No claims were given.</p>\n</section>\n";
    return;
  }
  out +=
      "<div class=\"table-wrap\"><table class=\"claims\">\n<thead><tr><th>GPU</th><th>metric</th>"
      "<th>claimed</th><th>verdict</th><th>off by</th><th>reference</th><th>why</th>"
      "<th>claimed by</th></tr></thead>\n<tbody>\n";
  for (const ClaimJudgement& j : claims) {
    const Claim& c = j.claim;
    std::string setting;
    for (const std::string* s : {&c.precision, &c.setting})
      if (!s->empty()) setting += (setting.empty() ? "" : ", ") + *s;
    std::string ref = "n/a";
    if (j.reference)
      ref = escape_html(format_si(*j.reference, j.reference_unit)) + " " +
            source_badge(to_string(j.reference_source), j.reference_ref);
    const bool judged = j.reference && j.verdict != ClaimVerdict::kUnverifiable;
    out += fmt::format(
        "<tr><td>{}</td><td>{}{}</td><td class=\"num\">{} {}</td><td><span class=\"verdict "
        "verdict-{}\">{}</span></td><td class=\"num\">{}</td><td>{}</td><td>{}</td><td>{}{}</td>"
        "</tr>\n",
        escape_html(c.gpu), escape_html(c.metric),
        setting.empty() ? "" : "<span class=\"sub\">" + escape_html(setting) + "</span>",
        escape_html(fmt::format("{:g}", c.value)), escape_html(c.unit),
        holds(j.verdict) ? "holds" : to_string(j.verdict), escape_html(to_string(j.verdict)),
        judged ? fmt::format("{:+.1f} %", j.off_pct) : "n/a", ref, escape_html(j.why),
        escape_html(c.source),
        c.line > 0 ? fmt::format("<span class=\"sub\">line {}</span>", c.line) : "");
  }
  out += "</tbody></table></div>\n</section>\n";
}

void kv_table(std::string& out, const std::vector<std::pair<std::string, std::string>>& rows) {
  out += "<table class=\"kv\"><tbody>\n";
  for (const auto& [k, v] : rows)
    out += fmt::format("<tr><th scope=\"row\">{}</th><td>{}</td></tr>\n", escape_html(k),
                       escape_html(v));
  out += "</tbody></table>\n";
}

std::string bytes_text(int64_t b) {
  return fmt::format("{} ({} B)", format_bytes_binary(b), b);
}

void gpu_fingerprint(std::string& out, const GpuInfo& g, size_t run_index) {
  out += fmt::format("<section class=\"fingerprint\" id=\"run-{}-gpu-{}\">\n<h3>GPU {}: {}</h3>\n",
                     run_index + 1, g.index, g.index, escape_html(g.name));
  std::string links = g.nvlinks.empty() ? "none" : "";
  for (const NvLinkInfo& l : g.nvlinks)
    links += fmt::format("{}link {}: {}, NVLink {}, remote {}", links.empty() ? "" : "; ", l.link,
                         l.active ? "active" : "inactive", na(l.version), na(l.remote_pci_bus_id));
  kv_table(
      out,
      {{"index", std::to_string(g.index)},
       {"name", g.name},
       {"uuid", g.uuid},
       {"PCI bus id", g.pci_bus_id},
       {"PCI device id", g.pci_device_id ? fmt::format("0x{:08X}", *g.pci_device_id) : "n/a"},
       {"compute capability", g.compute_capability},
       {"SMs", std::to_string(g.sm_count)},
       {"memory", bytes_text(g.memory_total_bytes)},
       {"L2 cache", bytes_text(g.l2_bytes)},
       {"memory bus width (bit)", na(g.memory_bus_width_bits)},
       {"SM clock, now / max (MHz)", na(g.sm_clock_mhz) + " / " + na(g.sm_clock_max_mhz)},
       {"memory clock, now / max (MHz)", na(g.mem_clock_mhz) + " / " + na(g.mem_clock_max_mhz)},
       {"power limit, enforced / default (W)",
        na(g.power_limit_w) + " / " + na(g.power_default_limit_w)},
       {"PCIe generation, now / max", na(g.pcie_gen_current) + " / " + na(g.pcie_gen_max)},
       {"PCIe width, now / max (lanes)", na(g.pcie_width_current) + " / " + na(g.pcie_width_max)},
       {"ECC", na(g.ecc_enabled)},
       {"MIG", na(g.mig_enabled)},
       {"VBIOS", na(g.vbios_version)},
       {"NVLinks", links}});
  out += "</section>\n";
}

void results_table(std::string& out, const RunFile& run) {
  if (run.results.empty()) return;
  const auto collective = std::count_if(run.results.begin(), run.results.end(),
                                        [](const Result& r) { return is_collective_result(r); });
  if (collective > 0)
    out += fmt::format(
        "<p>{} collective results are shown by operation in the Collectives "
        "section.</p>\n",
        collective);
  if (run.results.size() == static_cast<size_t>(collective)) {
    for (const RunError& e : run.errors)  // as below: a run of collectives only has them too
      out += fmt::format("<p class=\"error\">error in {}: {}</p>\n", escape_html(e.context),
                         escape_html(e.message));
    return;
  }
  out +=
      "<h3>Results</h3>\n<div class=\"table-wrap\"><table class=\"results\">\n<thead><tr>"
      "<th>result</th><th>GPU</th><th>parameters</th><th>value</th><th>noise</th><th>samples</th>"
      "<th>of peak</th><th>status</th></tr></thead>\n<tbody>\n";
  for (const Result& r : run.results) {
    if (is_collective_result(r)) continue;
    std::vector<std::string> params;
    for (const auto& [k, v] : r.parameters)
      params.push_back(k + "=" + param_text(v));
    const bool ok = r.status == Status::kOk;
    std::string peak = "n/a";
    if (ok && r.efficiency && r.peak)
      peak = fmt::format("{:.1f} % {}", *r.efficiency * 100,
                         source_badge(r.peak->kind, r.peak->source));
    std::string status(to_string(r.status));
    if (!r.status_reason.empty()) status += ": " + r.status_reason;
    if (const std::string events = clock_event_text(r); ok && !events.empty())
      status += ", " + events;
    out += fmt::format(
        "<tr><td>{}<span class=\"sub\">{}</span></td><td>{}</td><td class=\"params\">{}</td>"
        "<td class=\"num{}\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td>{}</td>"
        "<td class=\"status-{}\">{}</td></tr>\n",
        escape_html(r.name), escape_html(r.id), escape_html(gpu_label(run, r.devices)),
        escape_html(fmt::format("{}", fmt::join(params, ", "))), ok ? "" : " invalid",
        ok ? escape_html(format_si(r.value, r.unit)) : escape_html(to_string(r.status)),
        ok ? fmt::format("{:.2f} %", r.stats.noise * 100) : "n/a", r.stats.samples, peak,
        css_word(to_string(r.status)), escape_html(status));
  }
  out += "</tbody></table></div>\n";
  for (const RunError& e : run.errors)
    out += fmt::format("<p class=\"error\">error in {}: {}</p>\n", escape_html(e.context),
                       escape_html(e.message));
}

void run_section(std::string& out, const RunFile& run, size_t ri) {
  const Meta& m = run.meta;
  const SystemInfo& s = run.system;
  out += fmt::format("<section class=\"run\" id=\"run-{}\">\n<h2>Run {}: {}, {}</h2>\n", ri + 1,
                     ri + 1, escape_html(m.host), escape_html(m.started_at));
  std::vector<std::pair<std::string, std::string>> rows = {
      {"command", fmt::format("{}", fmt::join(m.argv, " "))},
      {"gpuvs", fmt::format("{} ({})", m.tool_version, m.git_sha)},
      {"started / finished", fmt::format("{} / {}", m.started_at, m.finished_at)},
      {"host", m.host},
      {"OS", s.os},
      {"CPU", s.cpu.model},
      {"logical cores", na(s.cpu.logical_cores)},
      {"host memory", s.cpu.memory_bytes ? bytes_text(*s.cpu.memory_bytes) : "n/a"},
      {"driver", na(s.driver_version)},
      {"CUDA (driver)", na(s.cuda_driver_version)},
      {"CUDA runtime", na(s.cuda_runtime_version)},
      {"cuBLAS", na(s.cublas_version)},
      {"cuDNN", na(s.cudnn_version)},
      {"NCCL", na(s.nccl_version)}};
  kv_table(out, rows);
  if (s.gpus.empty()) out += "<p>No GPU in this run.</p>\n";
  for (const GpuInfo& g : s.gpus)
    gpu_fingerprint(out, g, ri);
  results_table(out, run);
  out += "</section>\n";
}

}  // namespace

bool html_charts_available() {
  return embedded_file(kChartLibrary).has_value();
}

std::string render_html(const HtmlReportInput& input) {
  const auto lib = embedded_file(kChartLibrary);
  return render_html(input, lib ? *lib : std::string_view());
}

std::string render_html(const HtmlReportInput& input, std::string_view chart_library) {
  std::vector<const RunFile*> runs;
  for (const RunFile* r : input.runs)
    if (r) runs.push_back(r);
  const std::string title = input.title.empty() ? "gpuvs report" : input.title;
  const bool charts_on = !chart_library.empty();

  Charts charts;
  if (charts_on) {
    if (input.comparison) metric_charts(charts, *input.comparison);
    sweep_charts(charts, runs, input.comparison);
    roofline_chart(charts, runs, input.comparison);
  }
  std::string collectives;
  const AddChart add_chart = [&](Json spec) { return charts.container(std::move(spec)); };
  for (size_t i = 0; i < runs.size(); ++i)
    collectives += render_collectives_html(
        *runs[i], runs.size() > 1 ? fmt::format("collectives-run-{}", i + 1) : "collectives",
        runs.size() > 1 ? fmt::format("Collectives: run {}", i + 1) : "Collectives",
        charts_on ? add_chart : AddChart());
  std::string utilization;
  for (size_t i = 0; i < runs.size(); ++i)
    utilization += render_utilization_html(
        *runs[i], runs.size() > 1 ? fmt::format("utilization-run-{}", i + 1) : "utilization",
        runs.size() > 1 ? fmt::format("Utilization: run {}", i + 1) : "Utilization",
        charts_on ? add_chart : AddChart());

  std::string body = fmt::format("<header>\n<h1>{}</h1>\n", escape_html(title));
  if (!input.note.empty())
    body += fmt::format("<p class=\"note-line\">{}</p>\n", escape_html(input.note));
  if (!charts_on) body += fmt::format("<p class=\"charts-unavailable\">{}</p>\n", kNoCharts);
  body += "<div id=\"report-errors\" hidden></div>\n</header>\n<main>\n";
  if (input.comparison) headline_section(body, *input.comparison);
  if (input.comparison) comparison_section(body, *input.comparison);
  body += charts.html;
  body += collectives;
  body += utilization;
  if (input.claims) claims_section(body, *input.claims);
  for (size_t i = 0; i < runs.size(); ++i)
    run_section(body, *runs[i], i);
  body +=
      "</main>\n<footer><p>Made by gpuvs. Units are decimal: GB/s = 10<sup>9</sup> B/s, "
      "TFLOP/s = 10<sup>12</sup> FLOP/s; buffer sizes in binary units (MiB, GiB).</p></footer>";

  // Every compared column, in order: a bar's "column" indexes this list, and each
  // column keeps one colour and one legend entry in every chart.
  Json columns = Json::array();
  if (input.comparison)
    for (const Column& col : input.comparison->columns)
      columns.push_back({{"label", col.label}, {"measured", col.measured}});
  const Json data = {{"schema", "gpuvs.report/1"},
                     {"title", title},
                     {"note", input.note},
                     {"charts_available", charts_on},
                     {"columns", std::move(columns)},
                     {"charts", charts.specs}};
  const std::string lib =
      charts_on ? "<script>\n" + script_safe(chart_library) + "\n</script>" : std::string();
  return fill(asset("web/report.html"), {{"title", escape_html(title)},
                                         {"style", asset("web/report.css")},
                                         {"charts_expected", std::to_string(charts.specs.size())},
                                         {"body", body},
                                         {"data", island_text(data)},
                                         {"chart_library", lib},
                                         {"script", script_safe(asset("web/report.js"))}});
}

std::string escape_html(std::string_view raw) {
  // The terminal's control rule first (newlines kept: they are white space here), so
  // that a name reads the same in every output and no ill-formed UTF-8 reaches the page.
  const std::string s = escape_controls(raw, true);
  static constexpr std::string_view kSpecial = "&<>\"'";
  static constexpr std::array<std::string_view, 5> kEntity = {"&amp;", "&lt;", "&gt;", "&quot;",
                                                              "&#39;"};
  std::string out;
  out.reserve(s.size());
  for (char c : s) {
    const size_t k = kSpecial.find(c);
    if (k == std::string_view::npos)
      out += c;
    else
      out += kEntity[k];
  }
  return out;
}

}  // namespace gpuvs
