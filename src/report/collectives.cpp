// Collective results for the terminal and the HTML report (collectives.h).
// The results are first gathered into points keyed by (op, ranks, tool, algo, proto,
// graph, size), each holding its busbw and time results; tables, the study and the
// charts all read those points, so they cannot disagree.
#include "report/collectives.h"
#include "report/collectives_detail.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <nlohmann/json.hpp>
#include <set>
#include <string_view>
#include <tuple>
#include <utility>
#include <variant>

#include "core/units.h"
#include "report/summary.h"
#include "report/table.h"

namespace gpuvs {
namespace {

using namespace collectives_detail;

// ---- the per-operation table ----------------------------------------------------

// One table per group: the columns that have data, then a row per size.
struct OpTable {
  std::vector<std::string> header;
  std::vector<bool> numeric;  // right-aligned
  std::vector<std::vector<std::string>> rows;
  std::vector<std::vector<bool>> bad;  // the cell shows a status, not a number
};

// gpuvs against nccl-tests at one size: busbw in % at >= 1 MiB (+: gpuvs faster), time
// in µs below (+: gpuvs slower), as nccl-tests users read small sizes by latency.
std::string diff_cell(int64_t bytes, const Point* g, const Point* nt) {
  if (!g || !nt) return "-";
  if (bytes >= kMiB) {
    const auto a = g->busbw_bps(), b = nt->busbw_bps();
    return a && b ? fmt::format("{:+.1f} %", (*a / *b - 1) * 100) : "-";
  }
  const auto a = g->time_s(), b = nt->time_s();
  return a && b ? fmt::format("{:+.2f} µs", (*a - *b) * 1e6) : "-";
}

struct Cell {
  std::string text;
  bool bad = false;  // a status word in place of a number
  std::string note;  // why, for the note column
};

using Figure = std::optional<double> (Point::*)() const;

// A point's figure formatted, or its status word with the reason as a note.
Cell figure_cell(const Point* p, Figure figure, std::string (*format)(double),
                 const std::string& who) {
  if (!p) return {"-", false, ""};
  if (const Result* b = p->bad())
    return {status_word(*b), true, who.empty() ? status_note(*b) : who + " " + status_note(*b)};
  const auto v = (p->*figure)();
  return {v ? format(*v) : "-", false, ""};
}

OpTable op_table(const Collection& c, const OpGroup& g) {
  const std::string d = "default";
  const auto sizes = c.sizes(g, [&](const Key& k) { return k.algo == d && k.proto == d; });
  auto at = [&](bool nt, bool graph, int64_t b) { return c.find(g, nt, d, d, graph, b); };
  auto any = [&](bool nt, bool graph) {
    return std::any_of(sizes.begin(), sizes.end(), [&](int64_t b) { return at(nt, graph, b); });
  };
  const bool eager = any(false, false), graph = any(false, true), nt = any(true, false),
             nt_graph = any(true, true);
  std::vector<std::pair<std::string, std::function<Cell(int64_t)>>> columns;
  auto figure = [&](std::string header, bool is_nt, bool is_graph, Figure f,
                    std::string (*format)(double), std::string who) {
    columns.emplace_back(std::move(header), [=, &at](int64_t b) {
      return figure_cell(at(is_nt, is_graph, b), f, format, who);
    });
  };
  auto diff = [&](std::string header, bool is_graph) {
    columns.emplace_back(std::move(header), [=, &at](int64_t b) {
      return Cell{diff_cell(b, at(false, is_graph, b), at(true, is_graph, b)), false, ""};
    });
  };
  const Figure p99 = &Point::p99_s;
  if (eager) {
    figure("time µs", false, false, &Point::time_s, us, "");
    figure("p99 µs", false, false, p99, us, "");
    figure("algbw GB/s", false, false, &Point::algbw_bps, gbs, "");
    figure("busbw GB/s", false, false, &Point::busbw_bps, gbs, "");
  }
  if (graph) figure("graph µs", false, true, &Point::time_s, us, "graph");
  if (nt) {
    figure("nccl-tests GB/s", true, false, &Point::busbw_bps, gbs, "nccl-tests");
    figure("nccl-tests µs", true, false, &Point::time_s, us, "nccl-tests");
    if (eager) diff("vs nccl-tests", false);
  }
  if (nt_graph) {
    figure("nccl-tests graph µs", true, true, &Point::time_s, us, "nccl-tests graph");
    if (graph) diff("graph vs nccl-tests", true);
  }

  OpTable t;
  t.header = {"size"};
  t.numeric = {true};
  for (const auto& [header, cell] : columns) {
    t.header.push_back(header);
    t.numeric.push_back(true);
  }
  bool any_note = false;
  std::vector<std::string> notes;
  for (int64_t b : sizes) {
    std::vector<std::string> row = {format_bytes_binary(b)}, why;
    std::vector<bool> bad = {false};
    for (const auto& [header, cell_of] : columns) {
      Cell cell = cell_of(b);
      row.push_back(std::move(cell.text));
      bad.push_back(cell.bad);
      if (!cell.note.empty() && std::find(why.begin(), why.end(), cell.note) == why.end())
        why.push_back(std::move(cell.note));
    }
    any_note = any_note || !why.empty();
    notes.push_back(fmt::format("{}", fmt::join(why, "; ")));
    t.rows.push_back(std::move(row));
    t.bad.push_back(std::move(bad));
  }
  if (any_note) {
    t.header.push_back("note");
    t.numeric.push_back(false);
    for (size_t i = 0; i < t.rows.size(); ++i) {
      t.rows[i].push_back(notes[i]);
      t.bad[i].push_back(false);
    }
  }
  return t;
}

std::string group_title(const OpGroup& g) {
  std::vector<std::string> parts;
  if (g.ranks > 0) parts.push_back(fmt::format("{} ranks", g.ranks));
  std::string type = g.dtype;
  if (!g.redop.empty()) type += (type.empty() ? "" : ", ") + g.redop;
  if (!type.empty()) parts.push_back(type);
  if (g.factor) parts.push_back(fmt::format("busbw = algbw × {:.3g}", *g.factor));
  if (parts.empty()) return g.op;
  return fmt::format("{} ({})", g.op, fmt::join(parts, "; "));
}

// "2 ranks, single-process launch, on node-1 (2× H200); NCCL 2.21.5; timeout 60 s"
std::string header_line(const RunFile& run, const Collection& c) {
  int64_t world = 0;
  for (const OpGroup& g : c.groups)
    world = std::max(world, g.ranks);
  std::string out;
  if (!run.comm) {
    std::vector<std::string> parts;
    if (world > 0) parts.push_back(fmt::format("{} ranks", world));
    if (!run.meta.host.empty()) parts.push_back("on " + run.meta.host);
    out = fmt::format("{}", fmt::join(parts, ", "));
  } else {
    const CommInfo& comm = *run.comm;
    out = fmt::format("{} ranks", comm.world_size);
    if (!comm.launch.empty()) out += fmt::format(", {} launch", comm.launch);
    // Hosts in order of their first rank, with the GPUs each drove.
    std::vector<std::pair<std::string, std::vector<std::string>>> hosts;
    for (const RankInfo& r : comm.ranks) {
      auto it = std::find_if(hosts.begin(), hosts.end(),
                             [&](const auto& h) { return h.first == r.host; });
      if (it == hosts.end()) it = hosts.insert(hosts.end(), {r.host, {}});
      it->second.push_back(r.gpu_name.empty() ? "GPU" : short_gpu_name(r.gpu_name));
    }
    std::vector<std::string> hs;
    for (const auto& entry : hosts) {
      const std::string& host = entry.first;
      const std::vector<std::string>& gpus = entry.second;
      const bool same =
          std::all_of(gpus.begin(), gpus.end(), [&](auto& n) { return n == gpus[0]; });
      hs.push_back(same ? fmt::format("{} ({}× {})", host, gpus.size(), gpus[0])
                        : fmt::format("{} ({})", host, fmt::join(gpus, ", ")));
    }
    if (hs.empty() && !run.meta.host.empty()) hs.push_back(run.meta.host);
    if (!hs.empty()) out += fmt::format(", on {}", fmt::join(hs, ", "));
  }
  if (run.system.nccl_version) out += fmt::format("; NCCL {}", *run.system.nccl_version);
  if (run.comm && run.comm->timeout_s > 0)
    out += fmt::format("; timeout {:g} s", run.comm->timeout_s);
  return out;
}

std::string env_line(const RunFile& run) {
  if (!run.comm || run.comm->nccl_env.empty()) return "";
  std::vector<std::string> kv;
  for (const auto& [k, v] : run.comm->nccl_env)
    kv.push_back(k + "=" + v);
  return fmt::format("{}", fmt::join(kv, " "));
}

constexpr std::string_view kLegendTime =
    "time: median per operation; p99: 99th percentile of the batch means (not of single "
    "operations)";
constexpr std::string_view kLegendBandwidth =
    "algbw = size / time; busbw = algbw × the operation's factor (nccl-tests' definition); GB/s "
    "= 1e9 B/s";
constexpr std::string_view kLegendNcclTests =
    "vs nccl-tests: busbw difference at ≥ 1 MiB (+: gpuvs faster), time difference below "
    "(+: gpuvs slower)";
constexpr std::string_view kStudyNote =
    "NCCL_ALGO and NCCL_PROTO apply to every operation and size of a process: set them only "
    "for a job whose messages fall in the recommended range";

// ---- charts ---------------------------------------------------------------------

Json line_chart(std::string title, const std::vector<std::pair<std::string, Json>>& series) {
  Json js = Json::array();
  for (const auto& [label, points] : series)
    js.push_back({{"label", label}, {"role", "measured"}, {"points", points}});
  return {{"kind", "line"},         {"title", std::move(title)},
          {"x_unit", "B"},          {"y_unit", "B/s"},
          {"x_log", true},          {"y_log", false},
          {"series", std::move(js)}};
}

// Points (size, busbw) of the ok results of one series; empty when none.
Json busbw_points(const Collection& c, const OpGroup& g, bool nt, const std::string& algo,
                  const std::string& proto, bool graph) {
  Json pts = Json::array();
  for (const auto& [k, p] : c.points) {
    if (k.op != g.op || k.ranks != g.ranks || k.nccl_tests != nt || k.algo != algo ||
        k.proto != proto || k.graph != graph)
      continue;
    if (const auto bw = p.busbw_bps()) pts.push_back({static_cast<double>(k.bytes), *bw});
  }
  return pts;
}

void add_series(std::vector<std::pair<std::string, Json>>& series, std::string label, Json pts) {
  if (!pts.empty()) series.emplace_back(std::move(label), std::move(pts));
}

bool is_sweep(const std::vector<std::pair<std::string, Json>>& series) {
  return std::any_of(series.begin(), series.end(),
                     [](const auto& s) { return s.second.size() >= 2; });
}

// ---- HTML pieces ----------------------------------------------------------------

void html_table(std::string& out, const std::vector<std::string>& header,
                const std::vector<bool>& numeric, const std::vector<std::vector<std::string>>& rows,
                const std::vector<std::vector<bool>>& bad, std::string_view cls) {
  out += fmt::format("<div class=\"table-wrap\"><table class=\"{}\">\n<thead><tr>", cls);
  for (const std::string& h : header)
    out += "<th>" + escape_html(h) + "</th>";
  out += "</tr></thead>\n<tbody>\n";
  for (size_t i = 0; i < rows.size(); ++i) {
    out += "<tr>";
    for (size_t j = 0; j < rows[i].size(); ++j) {
      std::string classes;
      if (j < numeric.size() && numeric[j]) classes = "num";
      if (i < bad.size() && j < bad[i].size() && bad[i][j])
        classes += classes.empty() ? "invalid" : " invalid";
      out += classes.empty() ? "<td>" : fmt::format("<td class=\"{}\">", classes);
      out += escape_html(rows[i][j]) + "</td>";
    }
    out += "</tr>\n";
  }
  out += "</tbody></table></div>\n";
}

}  // namespace

bool is_collective_result(const Result& r) {
  return parse_id(r.id).has_value();
}

std::string variant_label(const std::string& algo, const std::string& proto) {
  if (algo == "default" && proto == "default") return "default";
  return algo + "/" + proto;
}

std::string size_range_label(int64_t min_bytes, int64_t max_bytes) {
  if (min_bytes == max_bytes) return format_bytes_binary(min_bytes);
  return format_bytes_binary(min_bytes) + " – " + format_bytes_binary(max_bytes);
}

std::string render_collectives(const RunFile& run) {
  const Collection c = collect(run);
  if (c.groups.empty()) return "";
  std::string out = "collectives: " + header_line(run, c) + "\n";
  if (const std::string env = env_line(run); !env.empty()) out += "NCCL environment: " + env + "\n";
  if (!c.points.empty()) out += fmt::format("{}\n{}\n", kLegendTime, kLegendBandwidth);
  bool nt = false;
  for (const OpGroup& g : c.groups)
    nt = nt || !g.nccl_tests_tool.empty();
  if (nt) out += fmt::format("{}\n", kLegendNcclTests);
  for (const OpGroup& g : c.groups) {
    const OpTable t = op_table(c, g);
    const std::vector<std::string> notes = unsized_notes(g);
    if (t.rows.empty() && notes.empty()) continue;
    out += "\n" + group_title(g);
    if (!g.nccl_tests_tool.empty()) out += fmt::format(", beside {}", g.nccl_tests_tool);
    out += "\n";
    for (const std::string& n : notes)
      out += n + "\n";
    if (t.rows.empty()) continue;
    std::vector<TextTable::Align> align;
    for (bool n : t.numeric)
      align.push_back(n ? TextTable::Align::kRight : TextTable::Align::kLeft);
    TextTable tt(t.header, align);
    for (const auto& row : t.rows)
      tt.add_row(row);
    out += tt.render();
  }
  const std::vector<StudyOp> study = study_winners(run);
  const std::string keep = keep_default(run);
  for (const StudyOp& s : study) {
    out += fmt::format("\nalgorithm study: {}{}, best busbw per size among {} variants\n", s.op,
                       s.ranks > 0 ? fmt::format(" ({} ranks)", s.ranks) : "", s.variants);
    using A = TextTable::Align;
    TextTable t({"sizes", "best", "best/default", "verdict"}, {A::kLeft, A::kLeft, A::kRight});
    for (const StudyRange& r : s.ranges)
      t.add_row(study_row(r, keep));
    if (t.rows() > 0) out += t.render();
    for (const std::string& n : study_notes(s))
      out += n + "\n";
    out += "recommendation: " + s.recommendation + "\n";
  }
  if (!study.empty()) out += fmt::format("{}\n", kStudyNote);
  return out;
}

std::string render_collectives_html(const RunFile& run, const std::string& id,
                                    const std::string& title, const AddChart& add_chart) {
  const Collection c = collect(run);
  if (c.groups.empty()) return "";
  std::string out = fmt::format("<section class=\"collectives\" id=\"{}\">\n<h2>{}</h2>\n",
                                escape_html(id), escape_html(title));
  out += "<p>" + escape_html(header_line(run, c)) + "</p>\n";
  if (const std::string env = env_line(run); !env.empty())
    out += "<p>NCCL environment: <code>" + escape_html(env) + "</code></p>\n";
  if (!c.points.empty()) {
    out += fmt::format("<p class=\"legend\">{}. {}.", escape_html(kLegendTime),
                       escape_html(kLegendBandwidth));
    if (std::any_of(c.groups.begin(), c.groups.end(),
                    [](const OpGroup& g) { return !g.nccl_tests_tool.empty(); }))
      out += " " + escape_html(kLegendNcclTests) + ".";
    out += "</p>\n";
  }
  const std::vector<StudyOp> study = study_winners(run);
  const std::string keep = keep_default(run);
  for (const OpGroup& g : c.groups) {
    const OpTable t = op_table(c, g);
    const auto st = std::find_if(study.begin(), study.end(), [&](const StudyOp& s) {
      return s.op == g.op && s.ranks == g.ranks;
    });
    const std::vector<std::string> notes = unsized_notes(g);
    if (t.rows.empty() && st == study.end() && notes.empty()) continue;
    std::string h3 = group_title(g);
    if (!g.nccl_tests_tool.empty()) h3 += ", beside " + g.nccl_tests_tool;
    out += "<h3>" + escape_html(h3) + "</h3>\n";
    for (const std::string& n : notes)
      out += "<p class=\"note\">" + escape_html(n) + "</p>\n";
    if (!t.rows.empty()) html_table(out, t.header, t.numeric, t.rows, t.bad, "collective");
    std::vector<std::string> figures;
    const std::string d = "default";
    if (add_chart) {
      std::vector<std::pair<std::string, Json>> series;
      add_series(series, "gpuvs", busbw_points(c, g, false, d, d, false));
      add_series(series, "gpuvs, CUDA graph", busbw_points(c, g, false, d, d, true));
      add_series(series, g.nccl_tests_tool.empty() ? "nccl-tests" : g.nccl_tests_tool,
                 busbw_points(c, g, true, d, d, false));
      add_series(series,
                 (g.nccl_tests_tool.empty() ? "nccl-tests" : g.nccl_tests_tool) + ", CUDA graph",
                 busbw_points(c, g, true, d, d, true));
      if (is_sweep(series))
        figures.push_back(add_chart(line_chart(
            fmt::format("Bus bandwidth vs size: {} ({} ranks)", g.op, g.ranks), series)));
    }
    if (add_chart && st != study.end()) {
      std::set<std::pair<std::string, std::string>> variants;
      for (const auto& [k, p] : c.points)
        if (k.op == g.op && k.ranks == g.ranks && !k.nccl_tests && !k.graph)
          variants.insert({k.algo, k.proto});
      std::vector<std::pair<std::string, Json>> series;
      add_series(series, "default", busbw_points(c, g, false, d, d, false));
      for (const auto& [algo, proto] : variants)
        if (algo != d || proto != d)
          add_series(series, variant_label(algo, proto),
                     busbw_points(c, g, false, algo, proto, false));
      if (is_sweep(series))
        figures.push_back(add_chart(line_chart(
            fmt::format("Bus bandwidth by NCCL algorithm/protocol: {} ({} ranks)", g.op, g.ranks),
            series)));
    }
    if (!figures.empty())
      out += fmt::format("<div class=\"charts\">\n{}</div>\n", fmt::join(figures, ""));
    if (st != study.end()) {
      out += fmt::format("<h4>Algorithm study: best busbw per size among {} variants</h4>\n",
                         st->variants);
      std::vector<std::vector<std::string>> rows;
      for (const StudyRange& r : st->ranges)
        rows.push_back(study_row(r, keep));
      if (!rows.empty())
        html_table(out, {"sizes", "best", "best/default", "verdict"}, {false, false, true, false},
                   rows, {}, "study");
      for (const std::string& n : study_notes(*st))
        out += "<p class=\"note\">" + escape_html(n) + "</p>\n";
      out += "<p class=\"recommendation\"><strong>Recommendation:</strong> " +
             escape_html(st->recommendation) + "</p>\n";
    }
  }
  if (!study.empty()) out += "<p class=\"note\">" + escape_html(kStudyNote) + ".</p>\n";
  out += "</section>\n";
  return out;
}

}  // namespace gpuvs
