// Collective results for the terminal and the HTML report (collectives.h).
// The results are first gathered into points keyed by (op, ranks, tool, algo, proto,
// graph, size), each holding its busbw and time results; tables, the study and the
// charts all read those points, so they cannot disagree.
#include "report/collectives.h"

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

using Json = nlohmann::ordered_json;

constexpr int64_t kMiB = int64_t{1} << 20;
constexpr std::string_view kPrefix = "collective.";
// Operations in the order nccl-tests users know them; others follow alphabetically.
constexpr std::array<std::string_view, 7> kOpOrder = {
    "all_reduce", "all_gather", "reduce_scatter", "broadcast", "reduce", "alltoall", "sendrecv"};

// ---- reading the results --------------------------------------------------------

struct ParsedId {
  std::string op;
  std::string metric;  // "busbw" | "time"
  bool nccl_tests = false;
};

std::optional<ParsedId> parse_id(const std::string& id) {
  if (id.rfind(kPrefix, 0) != 0) return std::nullopt;
  std::vector<std::string> parts;
  size_t start = kPrefix.size();
  while (true) {
    const size_t dot = id.find('.', start);
    parts.push_back(id.substr(start, dot == std::string::npos ? std::string::npos : dot - start));
    if (dot == std::string::npos) break;
    start = dot + 1;
  }
  if (parts.size() < 2 || parts.size() > 3 || parts[0].empty()) return std::nullopt;
  if (parts[1] != "busbw" && parts[1] != "time") return std::nullopt;
  if (parts.size() == 3 && parts[2] != "nccl_tests") return std::nullopt;
  return ParsedId{parts[0], parts[1], parts.size() == 3};
}

std::string str_param(const Result& r, const std::string& key, std::string fallback = "") {
  const auto it = r.parameters.find(key);
  if (it == r.parameters.end()) return fallback;
  if (const auto* s = std::get_if<std::string>(&it->second)) return s->empty() ? fallback : *s;
  return fallback;
}

bool bool_param(const Result& r, const std::string& key) {
  const auto it = r.parameters.find(key);
  if (it == r.parameters.end()) return false;
  if (const auto* b = std::get_if<bool>(&it->second)) return *b;
  return false;
}

bool is_ok(const Result* r) {
  return r && r->status == Status::kOk && std::isfinite(r->value) && r->value > 0;
}

struct Key {
  std::string op;
  int64_t ranks = 0;
  bool nccl_tests = false;
  std::string algo, proto;
  bool graph = false;
  int64_t bytes = 0;

  auto tie() const { return std::tie(op, ranks, nccl_tests, algo, proto, graph, bytes); }
  bool operator<(const Key& o) const { return tie() < o.tie(); }
};

struct Point {
  const Result* busbw = nullptr;
  const Result* time = nullptr;
  int64_t bytes = 0;
  std::optional<double> factor;  // busbw / algbw

  // The result that makes the point unusable, worst first; nullptr when none is.
  const Result* bad() const {
    for (Status s : {Status::kInvalid, Status::kError, Status::kUnsupported})
      for (const Result* r : {busbw, time})
        if (r && r->status == s) return r;
    return nullptr;
  }
  std::optional<double> time_s() const {
    if (bad() || !is_ok(time)) return std::nullopt;
    return time->value;
  }
  std::optional<double> p99_s() const {
    if (!time_s() || !time->stats.p99) return std::nullopt;
    return *time->stats.p99;
  }
  std::optional<double> busbw_bps() const {
    if (bad()) return std::nullopt;
    if (is_ok(busbw)) return busbw->value;
    if (is_ok(time) && factor) return static_cast<double>(bytes) / time->value * *factor;
    return std::nullopt;
  }
  std::optional<double> algbw_bps() const {
    if (bad()) return std::nullopt;
    if (is_ok(time)) return static_cast<double>(bytes) / time->value;
    if (is_ok(busbw) && factor && *factor > 0) return busbw->value / *factor;
    return std::nullopt;
  }
  double busbw_noise() const { return busbw ? busbw->stats.noise : time ? time->stats.noise : 0; }
};

// One operation at one rank count: what its tables and charts are about.
struct OpGroup {
  std::string op;
  int64_t ranks = 0;
  std::string dtype, redop;
  std::optional<double> factor;
  std::string nccl_tests_tool;  // "nccl-tests 2.13.11" when nccl-tests ran
  // Results without a size: an op or a variant that was not measured at all ("needs 2
  // or more GPUs", "NCCL refused NCCL_ALGO=..."), one per op and variant.
  std::vector<const Result*> unsized;
};

// Points by key. A run of `gpuvs bench collectives` measures the default twice, in
// `collectives.nccl` (the full sweep) and again in `collectives.algorithms` (under the
// study's own budget, after it in the run file): the tables take the first, the study
// the last, so that it compares variants measured the same way.
struct Collection {
  std::map<Key, Point> points;  // first result per key and metric
  std::map<Key, Point> latest;  // last result per key and metric
  std::vector<OpGroup> groups;  // in kOpOrder, then by name, then by ranks

  const Point* find(const OpGroup& g, bool nt, const std::string& algo, const std::string& proto,
                    bool graph, int64_t bytes) const {
    const auto it = points.find(Key{g.op, g.ranks, nt, algo, proto, graph, bytes});
    return it == points.end() ? nullptr : &it->second;
  }
  // Sizes of the group's points that match `pred`, ascending.
  template <class Pred>
  std::vector<int64_t> sizes(const OpGroup& g, Pred pred) const {
    std::set<int64_t> out;
    for (const auto& [k, p] : points)
      if (k.op == g.op && k.ranks == g.ranks && pred(k)) out.insert(k.bytes);
    return {out.begin(), out.end()};
  }
};

size_t op_rank(const std::string& op) {
  const auto it = std::find(kOpOrder.begin(), kOpOrder.end(), op);
  return static_cast<size_t>(it - kOpOrder.begin());
}

Collection collect(const RunFile& run) {
  Collection c;
  const int64_t world = run.comm ? run.comm->world_size : 0;
  std::map<std::pair<std::string, int64_t>, OpGroup> groups;
  for (const Result& r : run.results) {
    const auto id = parse_id(r.id);
    if (!id) continue;
    const int64_t ranks = int_parameter(r, "ranks").value_or(world);
    OpGroup& g = groups[{id->op, ranks}];
    g.op = id->op;
    g.ranks = ranks;
    if (g.dtype.empty()) g.dtype = str_param(r, "dtype");
    if (g.redop.empty()) g.redop = str_param(r, "redop");
    const auto bytes = int_parameter(r, "bytes");
    if (!bytes) {
      g.unsized.push_back(&r);
      continue;
    }
    Key k{id->op,
          ranks,
          id->nccl_tests,
          str_param(r, "algo", "default"),
          str_param(r, "proto", "default"),
          bool_param(r, "graph"),
          *bytes};
    const auto factor = number_parameter(r, "busbw_factor");
    auto fill = [&](Point& p, bool keep_first) {
      const Result*& slot = id->metric == "busbw" ? p.busbw : p.time;
      if (slot && keep_first) return;
      slot = &r;
      p.bytes = *bytes;
      if (factor && *factor > 0) p.factor = *factor;
    };
    fill(c.points[k], true);
    fill(c.latest[k], false);
    if (!g.factor && factor && *factor > 0) g.factor = *factor;
    if (id->nccl_tests && g.nccl_tests_tool.empty())
      g.nccl_tests_tool = str_param(r, "tool", "nccl-tests");
  }
  for (auto& [key, g] : groups)
    c.groups.push_back(std::move(g));
  std::stable_sort(c.groups.begin(), c.groups.end(), [](const OpGroup& a, const OpGroup& b) {
    return std::make_tuple(op_rank(a.op), a.op, a.ranks) <
           std::make_tuple(op_rank(b.op), b.op, b.ranks);
  });
  return c;
}

// ---- formatting -----------------------------------------------------------------

std::string us(double seconds) {
  return fmt::format("{:.2f}", seconds * 1e6);
}
std::string gbs(double bytes_per_s) {
  return fmt::format("{:.2f}", bytes_per_s / 1e9);
}
std::string ratio_text(double r) {
  return fmt::format("{:.2f}×", r);
}
std::string ratio_range(const std::optional<double>& lo, const std::optional<double>& hi) {
  if (!lo || !hi) return "-";
  if (fmt::format("{:.2f}", *lo) == fmt::format("{:.2f}", *hi)) return ratio_text(*lo);
  return fmt::format("{:.2f}–{:.2f}×", *lo, *hi);
}

// "invalid", "n/a" (unsupported), "error": what a cell says in place of a number.
std::string status_word(const Result& r) {
  switch (r.status) {
    case Status::kInvalid:
      return "invalid";
    case Status::kUnsupported:
      return "n/a";
    case Status::kError:
      return "error";
    case Status::kOk:
      break;
  }
  return "-";
}

std::string status_note(const Result& r) {
  return r.status_reason.empty() ? status_word(r) : status_word(r) + ": " + r.status_reason;
}

std::string env_settings(const std::string& algo, const std::string& proto) {
  std::vector<std::string> parts;
  if (algo != "default") parts.push_back("NCCL_ALGO=" + algo);
  if (proto != "default") parts.push_back("NCCL_PROTO=" + proto);
  return fmt::format("{}", fmt::join(parts, " "));
}

// What "the default" means for a recommendation: NCCL's choice, or the user's own
// NCCL_ALGO/NCCL_PROTO when the environment set them (the default runs under them).
std::string keep_default(const RunFile& run) {
  std::vector<std::string> set;
  if (run.comm)
    for (const char* v : {"NCCL_ALGO", "NCCL_PROTO"})
      if (const auto it = run.comm->nccl_env.find(v); it != run.comm->nccl_env.end())
        set.push_back(fmt::format("{}={}", v, it->second));
  if (set.empty()) return "leave NCCL_ALGO/NCCL_PROTO unset";
  return fmt::format("keep {} as set", fmt::join(set, " "));
}

std::string escape_html(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (char c : s) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&#39;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

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

// ---- the study ------------------------------------------------------------------

StudyVerdict verdict_of(const StudyPoint& p) {
  if (!p.gain) return StudyVerdict::kNoDefault;
  if (*p.gain <= 1 + kTieGain) return StudyVerdict::kDefault;
  return p.clear ? StudyVerdict::kClear : StudyVerdict::kUnclear;
}

std::string verdict_text(StudyVerdict v, const std::string& keep) {
  switch (v) {
    case StudyVerdict::kDefault:
      return "default is within 3 %: " + keep;
    case StudyVerdict::kClear:
      return "beats the default by > 5 %, beyond noise";
    case StudyVerdict::kUnclear:
      return "ahead, but by ≤ 5 % or within noise: not significant";
    case StudyVerdict::kNoDefault:
      return "no valid default result to compare with";
  }
  return "";
}

std::string best_cell(const StudyRange& r) {
  if (r.verdict != StudyVerdict::kDefault) return variant_label(r.algo, r.proto);
  if (r.best.size() == 1 && r.best[0] == "default") return "default";
  std::vector<std::string> others;
  for (const std::string& b : r.best)
    if (b != "default") others.push_back(b);
  return fmt::format("default ≈ {}", fmt::join(others, ", "));
}

StudyOp study_op(const RunFile& run, const Collection& c, const OpGroup& g) {
  StudyOp s;
  s.op = g.op;
  s.ranks = g.ranks;
  // The sizes the study measured (a variant other than the default has a result there,
  // whatever its status): a size of the main sweep only is no point of the study, and a
  // size where nothing is ok breaks a range instead of being silently bridged.
  const auto sizes = c.sizes(g, [](const Key& k) {
    return !k.nccl_tests && !k.graph && (k.algo != "default" || k.proto != "default");
  });
  std::set<std::pair<std::string, std::string>> variants;
  for (const Result* r : g.unsized) {
    const std::string algo = str_param(*r, "algo", "default"),
                      proto = str_param(*r, "proto", "default");
    if (algo == "default" && proto == "default") continue;
    variants.insert({algo, proto});
    if (r->status == Status::kOk) continue;
    auto& list = s.unsupported[status_note(*r)];
    list.push_back(variant_label(algo, proto));
  }
  std::vector<size_t> index;  // of each point in `sizes`
  for (size_t i = 0; i < sizes.size(); ++i) {
    StudyPoint p;
    p.bytes = sizes[i];
    bool have = false;
    for (const auto& [k, pt] : c.latest) {
      if (k.op != g.op || k.ranks != g.ranks || k.nccl_tests || k.graph || k.bytes != sizes[i])
        continue;
      variants.insert({k.algo, k.proto});
      const std::string label = variant_label(k.algo, k.proto);
      if (const Result* b = pt.bad()) {
        if (b->status == Status::kUnsupported) {
          auto& list = s.unsupported[status_note(*b)];
          if (std::find(list.begin(), list.end(), label) == list.end()) list.push_back(label);
        } else {
          s.invalid.push_back(
              fmt::format("{} at {}: {}", label, format_bytes_binary(k.bytes), status_note(*b)));
        }
        continue;
      }
      const auto bw = pt.busbw_bps();
      if (!bw) continue;
      ++p.variants_ok;
      const bool is_default = k.algo == "default" && k.proto == "default";
      if (is_default) {
        p.default_busbw = *bw;
        p.default_noise = pt.busbw_noise();
      }
      // A variant must be strictly better to win: on a tie the default keeps the place.
      if (!have || *bw > p.best_busbw || (*bw == p.best_busbw && is_default)) {
        p.algo = k.algo;
        p.proto = k.proto;
        p.best_busbw = *bw;
        p.best_noise = pt.busbw_noise();
        have = true;
      }
    }
    if (!have) continue;
    if (p.default_busbw) {
      p.gain = p.best_busbw / *p.default_busbw;
      const double gap = *p.gain - 1;
      p.clear = gap > kRecommendGain && p.best_noise < gap && p.default_noise < gap;
    }
    s.points.push_back(p);
    index.push_back(i);
  }
  s.variants = static_cast<int>(variants.size());
  for (size_t i = 0; i < s.points.size(); ++i) {
    const StudyPoint& p = s.points[i];
    const StudyVerdict v = verdict_of(p);
    const bool is_default_verdict = v == StudyVerdict::kDefault;
    const std::string algo = is_default_verdict ? "default" : p.algo;
    const std::string proto = is_default_verdict ? "default" : p.proto;
    StudyRange* last = s.ranges.empty() ? nullptr : &s.ranges.back();
    const bool joins = last && i > 0 && index[i] == index[i - 1] + 1 && last->verdict == v &&
                       last->algo == algo && last->proto == proto;
    if (!joins) {
      StudyRange r;
      r.min_bytes = p.bytes;
      r.verdict = v;
      r.algo = algo;
      r.proto = proto;
      s.ranges.push_back(r);
      last = &s.ranges.back();
    }
    last->max_bytes = p.bytes;
    const std::string best = variant_label(p.algo, p.proto);
    if (std::find(last->best.begin(), last->best.end(), best) == last->best.end())
      last->best.push_back(best);
    if (p.gain) {
      last->min_gain = last->min_gain ? std::min(*last->min_gain, *p.gain) : *p.gain;
      last->max_gain = last->max_gain ? std::max(*last->max_gain, *p.gain) : *p.gain;
    }
  }
  const std::string keep = keep_default(run);
  std::vector<std::string> recs;
  for (const StudyRange& r : s.ranges)
    if (r.verdict == StudyVerdict::kClear)
      recs.push_back(fmt::format(
          "{} for {} messages of {} ({} the default's busbw)", env_settings(r.algo, r.proto), g.op,
          size_range_label(r.min_bytes, r.max_bytes), ratio_range(r.min_gain, r.max_gain)));
  const bool any_default = std::any_of(s.points.begin(), s.points.end(),
                                       [](const StudyPoint& p) { return p.default_busbw; });
  if (!recs.empty())
    s.recommendation = fmt::format("{}; at other sizes {}", fmt::join(recs, "; "), keep);
  else if (!any_default)
    s.recommendation = "none: the default has no valid result to compare with";
  else
    s.recommendation = keep + ": no variant beats the default by more than 5 % beyond noise";
  return s;
}

bool has_study(const Collection& c, const OpGroup& g) {
  for (const auto& [k, p] : c.points)
    if (k.op == g.op && k.ranks == g.ranks && !k.nccl_tests && !k.graph &&
        (k.algo != "default" || k.proto != "default"))
      return true;
  return std::any_of(g.unsized.begin(), g.unsized.end(), [](const Result* r) {
    return str_param(*r, "algo", "default") != "default" ||
           str_param(*r, "proto", "default") != "default";
  });
}

// Results of the op that were not measured at any size, other than the study's
// variants (those are in its notes): "n/a: collectives need 2 or more GPUs ...".
std::vector<std::string> unsized_notes(const OpGroup& g) {
  std::vector<std::string> out;
  for (const Result* r : g.unsized)
    if (r->status != Status::kOk && str_param(*r, "algo", "default") == "default" &&
        str_param(*r, "proto", "default") == "default" &&
        std::find(out.begin(), out.end(), status_note(*r)) == out.end())
      out.push_back(status_note(*r));
  return out;
}

std::vector<std::string> study_notes(const StudyOp& s) {
  std::vector<std::string> out;
  for (const auto& [reason, vs] : s.unsupported)
    out.push_back(fmt::format("not measured: {} ({})", fmt::join(vs, ", "), reason));
  out.insert(out.end(), s.invalid.begin(), s.invalid.end());
  return out;
}

std::vector<std::string> study_row(const StudyRange& r, const std::string& keep) {
  return {size_range_label(r.min_bytes, r.max_bytes), best_cell(r),
          ratio_range(r.min_gain, r.max_gain), verdict_text(r.verdict, keep)};
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

std::vector<StudyOp> study_winners(const RunFile& run) {
  const Collection c = collect(run);
  std::vector<StudyOp> out;
  for (const OpGroup& g : c.groups)
    if (has_study(c, g)) out.push_back(study_op(run, c, g));
  return out;
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
