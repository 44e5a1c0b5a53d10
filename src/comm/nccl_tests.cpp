// Parser of nccl-tests output; the runner is nccl_tests_run.cpp. Format facts: nccl_tests.h.
#include "comm/nccl_tests.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <charconv>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <system_error>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "core/error.h"

extern char** environ;

namespace gpuvs::comm {
namespace {

// ---------------------------------------------------------------- text helpers

bool is_space(char c) {
  return c == ' ' || c == '\t' || c == '\r' || c == '\v' || c == '\f';
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && is_space(s.front()))
    s.remove_prefix(1);
  while (!s.empty() && is_space(s.back()))
    s.remove_suffix(1);
  return s;
}

std::vector<std::string_view> split_ws(std::string_view s) {
  std::vector<std::string_view> out;
  size_t i = 0;
  while (i < s.size()) {
    while (i < s.size() && is_space(s[i]))
      ++i;
    size_t j = i;
    while (j < s.size() && !is_space(s[j]))
      ++j;
    if (j > i) out.push_back(s.substr(i, j - i));
    i = j;
  }
  return out;
}

bool contains(std::string_view s, std::string_view what) {
  return s.find(what) != std::string_view::npos;
}

bool contains_nocase(std::string_view s, std::string_view what) {
  auto it = std::search(s.begin(), s.end(), what.begin(), what.end(), [](char a, char b) {
    auto lower = [](char c) { return (c >= 'A' && c <= 'Z') ? char(c - 'A' + 'a') : c; };
    return lower(a) == lower(b);
  });
  return it != s.end();
}

bool is_letter(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}
bool is_digit(char c) {
  return c >= '0' && c <= '9';
}

// A whole token as an integer; nullopt for anything else ("12x", "", "1e3").
std::optional<int64_t> parse_int(std::string_view t) {
  int64_t v = 0;
  if (t.empty()) return std::nullopt;
  auto [p, ec] = std::from_chars(t.data(), t.data() + t.size(), v);
  if (ec != std::errc() || p != t.data() + t.size()) return std::nullopt;
  return v;
}

std::optional<int> parse_small_int(std::string_view t) {
  auto v = parse_int(t);
  if (!v || *v < std::numeric_limits<int>::min() || *v > std::numeric_limits<int>::max()) {
    return std::nullopt;
  }
  return static_cast<int>(*v);
}

// A whole token as a finite double ("12.85", "1.2e+05", "0e+00"); inf and nan are
// not figures.
std::optional<double> parse_double(std::string_view t) {
  double v = 0;
  if (t.empty()) return std::nullopt;
  if (t.front() == '+') t.remove_prefix(1);
  auto [p, ec] = std::from_chars(t.data(), t.data() + t.size(), v);
  if (ec != std::errc() || p != t.data() + t.size() || !std::isfinite(v)) return std::nullopt;
  return v;
}

// type and redop names: "float", "bfloat16", "f8e4m3", "sum", "mulsum", "none".
bool is_identifier(std::string_view t) {
  if (t.empty() || t.size() > 32 || !is_letter(t.front())) return false;
  return std::all_of(t.begin(), t.end(),
                     [](char c) { return is_letter(c) || is_digit(c) || c == '_'; });
}

// ---------------------------------------------------------------- row layout

enum class Col {
  kSize,
  kCount,
  kType,
  kRedop,
  kRoot,
  kTime,
  kAlgbw,
  kBusbw,
  kWrong,
  kMaxError,
  kSkip
};

struct Column {
  Col kind = Col::kSkip;
  int side = 0;  // 0 out-of-place, 1 in-place (figures only)
};

using Layout = std::vector<Column>;

// 2022 and later: size count type redop root, then time algbw busbw #wrong twice.
Layout default_layout() {
  Layout l = {{Col::kSize}, {Col::kCount}, {Col::kType}, {Col::kRedop}, {Col::kRoot}};
  for (int side = 0; side < 2; ++side) {
    for (Col c : {Col::kTime, Col::kAlgbw, Col::kBusbw, Col::kWrong})
      l.push_back({c, side});
  }
  return l;
}

bool is_figure(Col c) {
  return c == Col::kTime || c == Col::kAlgbw || c == Col::kBusbw || c == Col::kWrong ||
         c == Col::kMaxError || c == Col::kSkip;
}

// The column-name line ("size count type redop root time algbw busbw #wrong ...").
// Names it does not know (per-iteration i_min, ...) keep their place as kSkip; a
// trailing "timestamp" (which holds a space) ends the layout.
std::optional<Layout> layout_from_header(const std::vector<std::string_view>& tok, bool* cpu_time) {
  if (tok.size() < 4 || tok[0] != "size" || tok[1] != "count") return std::nullopt;
  Layout l;
  int side = -1;
  bool cpu = false;
  for (std::string_view t : tok) {
    Column c;
    if (t == "size") {
      c.kind = Col::kSize;
    } else if (t == "count") {
      c.kind = Col::kCount;
    } else if (t == "type") {
      c.kind = Col::kType;
    } else if (t == "redop") {
      c.kind = Col::kRedop;
    } else if (t == "root") {
      c.kind = Col::kRoot;
    } else if (t == "time" || t == "cputime") {
      ++side;
      cpu = cpu || t == "cputime";
      c.kind = Col::kTime;
    } else if (t == "algbw") {
      c.kind = Col::kAlgbw;
    } else if (t == "busbw") {
      c.kind = Col::kBusbw;
    } else if (t == "#wrong") {
      c.kind = Col::kWrong;
    } else if (t == "error") {
      c.kind = Col::kMaxError;
    } else if (t == "timestamp") {
      break;
    }
    if (is_figure(c.kind) && c.kind != Col::kSkip && (side < 0 || side > 1)) c.kind = Col::kSkip;
    c.side = std::max(side, 0);
    l.push_back(c);
  }
  if (side < 0) return std::nullopt;
  *cpu_time = cpu;
  return l;
}

// A result row under `layout`. The columns before the figures must all be there and
// well formed; figures are read until the tokens end or one is not a number (the
// rest stay nullopt). A row with no time at all is not a row.
std::optional<NcclTestsRow> parse_row(const std::vector<std::string_view>& tok,
                                      const Layout& layout) {
  if (tok.size() < 2 || !is_digit(tok[0].front())) return std::nullopt;
  NcclTestsRow row;
  bool figures_stopped = false;
  for (size_t i = 0; i < layout.size(); ++i) {
    const Column& c = layout[i];
    if (i >= tok.size()) {
      if (!is_figure(c.kind)) return std::nullopt;
      break;
    }
    std::string_view t = tok[i];
    switch (c.kind) {
      case Col::kSize:
      case Col::kCount: {
        auto v = parse_int(t);
        if (!v || *v < 0) return std::nullopt;
        (c.kind == Col::kSize ? row.size_bytes : row.count) = *v;
        break;
      }
      case Col::kType:
      case Col::kRedop:
        if (!is_identifier(t)) return std::nullopt;
        (c.kind == Col::kType ? row.type : row.redop) = std::string(t);
        break;
      case Col::kRoot: {
        auto v = parse_small_int(t);
        if (!v || *v < -1) return std::nullopt;
        row.root = *v;
        break;
      }
      case Col::kSkip:
        break;
      default: {
        if (figures_stopped || t == "N/A") break;
        auto v = parse_double(t);
        if (!v) {
          figures_stopped = true;
          break;
        }
        const bool oop = c.side == 0;
        if (c.kind == Col::kTime) {
          (oop ? row.oop_time_us : row.ip_time_us) = *v;
        } else if (c.kind == Col::kAlgbw) {
          (oop ? row.oop_algbw_gbs : row.ip_algbw_gbs) = *v;
        } else if (c.kind == Col::kBusbw) {
          (oop ? row.oop_busbw_gbs : row.ip_busbw_gbs) = *v;
        } else if (c.kind == Col::kMaxError) {
          (oop ? row.oop_max_error : row.ip_max_error) = *v;
        } else if (c.kind == Col::kWrong) {
          // "%6g": counts past 999999 come as 1.2e+06.
          if (*v < 0 || *v > 9e18 || std::floor(*v) != *v) {
            figures_stopped = true;
            break;
          }
          (oop ? row.oop_wrong : row.ip_wrong) = static_cast<int64_t>(*v);
        }
      }
    }
  }
  if (!row.oop_time_us && !row.ip_time_us) return std::nullopt;
  return row;
}

// ---------------------------------------------------------------- failure lines

// Where a failure message starts in a line, or npos. A failure printed while a row
// was half written is glued to it ("...  0gpu-07: Test NCCL failure common.cu:..."),
// so the message starts at the host name before ": Test"; the TESTCHECK trace starts
// at " .. "; NCCL's own lines ("host:pid:tid [dev] NCCL WARN ...") at their prefix.
size_t message_start(std::string_view line) {
  static constexpr std::array<std::string_view, 4> kTest = {
      ": Test NCCL failure", ": Test CUDA failure", ": Test timeout", ": Test failure"};
  for (std::string_view marker : kTest) {
    size_t m = line.find(marker);
    if (m == std::string_view::npos) continue;
    size_t dots = line.rfind(" .. ", m);
    if (line.starts_with(".. ")) return 0;
    if (dots != std::string_view::npos) return dots + 1;
    size_t ws = line.find_last_of(" \t", m == 0 ? 0 : m - 1);
    return ws == std::string_view::npos || ws >= m ? 0 : ws + 1;
  }
  for (std::string_view marker :
       {std::string_view(" NCCL WARN "), std::string_view(" NCCL INFO ")}) {
    size_t m = line.find(marker);
    if (m == std::string_view::npos) continue;
    // "host:pid:tid [dev] NCCL INFO" or "host:pid:tid [dev] file.cc:123 NCCL WARN":
    // the message starts at the token before the last " [" ahead of the marker.
    size_t bracket = line.rfind(" [", m);
    if (bracket == std::string_view::npos || bracket == 0) return 0;
    size_t ws = line.find_last_of(" \t", bracket - 1);
    return ws == std::string_view::npos ? 0 : ws + 1;
  }
  return std::string_view::npos;
}

// The message part of a line that had a row glued before it: drop the row's last
// value ("0", "N/A") from the host name when a name follows it.
std::string_view unglue(std::string_view msg) {
  size_t k = 0;
  if (msg.starts_with("N/A")) {
    k = 3;
  } else {
    while (k < msg.size() && (is_digit(msg[k]) || msg[k] == '.'))
      ++k;
  }
  if (k > 0 && k < msg.size() && is_letter(msg[k])) return msg.substr(k);
  return msg;
}

// Printed by nccl-tests, MPI or the shell when something went wrong; lines that say
// an option is being ignored or defaulted are warnings instead.
bool looks_like_error(std::string_view line) {
  static constexpr std::array<std::string_view, 16> kWords = {
      "error",    "fail",      "invalid",   "abort",    "incompatible", "not supported",
      "requires", "timeout",   "timed out", "killed",   "fault",        "denied",
      "no such",  "not found", "cannot",    "unable to"};
  return std::any_of(kWords.begin(), kWords.end(),
                     [&](std::string_view w) { return contains_nocase(line, w); });
}

bool looks_like_notice(std::string_view line) {
  return contains_nocase(line, "ignoring") || contains_nocase(line, "defaulting") ||
         contains_nocase(line, "disabling");
}

// ---------------------------------------------------------------- '#' lines

// "2(factor)" / "1048576(bytes)"
void parse_step(std::string_view t, NcclTestsConfig* config) {
  size_t paren = t.find('(');
  if (paren == std::string_view::npos) return;
  auto v = parse_int(t.substr(0, paren));
  if (!v) return;
  config->step = *v;
  config->step_is_factor = t.substr(paren) == "(factor)";
}

void parse_config(const std::vector<std::string_view>& tok, NcclTestsConfig* config) {
  for (size_t i = 0; i + 1 < tok.size(); ++i) {
    std::string_view k = tok[i], v = tok[i + 1];
    if (k == "nThread") config->threads = parse_small_int(v);
    if (k == "nGpus") config->gpus_per_thread = parse_small_int(v);
    if (k == "minBytes") config->min_bytes = parse_int(v);
    if (k == "maxBytes") config->max_bytes = parse_int(v);
    if (k == "step:") parse_step(v, config);
    if (k == "validation:") config->validation = parse_small_int(v);
    if (k == "graph:") config->graph = parse_small_int(v);
    if (k == "iters:") {
      std::string_view before = i > 0 ? tok[i - 1] : std::string_view();
      auto n = parse_small_int(v);
      if (before == "warmup") {
        config->warmup = n;
      } else if (before == "agg") {
        config->agg_iters = n;
      } else {
        config->iters = n;
      }
    }
  }
}

// "Rank  0 Group  0 Pid 4242 on host device  0 [0000:19:00] NVIDIA H200" (after '#')
std::optional<NcclTestsDevice> parse_device(std::string_view body) {
  auto tok = split_ws(body);
  NcclTestsDevice d;
  size_t i = 0;
  auto next = [&](std::string_view key) -> std::optional<std::string_view> {
    if (i + 1 >= tok.size() || tok[i] != key) return std::nullopt;
    i += 2;
    return tok[i - 1];
  };
  auto rank = next("Rank");
  if (!rank) return std::nullopt;
  d.rank = parse_small_int(*rank).value_or(-1);
  if (d.rank < 0) return std::nullopt;
  if (auto g = next("Group")) d.group = parse_small_int(*g).value_or(0);
  if (auto p = next("Pid")) d.pid = parse_int(*p).value_or(0);
  if (auto h = next("on")) d.host = std::string(*h);
  auto dev = next("device");
  if (!dev) return std::nullopt;
  d.device = parse_small_int(*dev).value_or(-1);
  size_t open = body.find('[', static_cast<size_t>(dev->data() - body.data()));
  size_t close = open == std::string_view::npos ? open : body.find(']', open);
  if (close != std::string_view::npos) {
    d.bus_id = std::string(body.substr(open + 1, close - open - 1));
    d.name = std::string(trim(body.substr(close + 1)));
  } else {
    d.name = std::string(
        trim(body.substr(static_cast<size_t>(dev->data() - body.data()) + dev->size())));
  }
  return d;
}

// The number after the ':' of "Avg bus bandwidth    : 118.467 OK" and its verdict.
std::vector<std::string_view> after_colon(std::string_view body) {
  size_t colon = body.find(':');
  if (colon == std::string_view::npos) return {};
  return split_ws(body.substr(colon + 1));
}

struct ParseState {
  NcclTestsOutput out;
  Layout layout = default_layout();
  // Versions from 2022 to 2025 end with "Avg bus bandwidth", "#" and then NCCL's last
  // error string, bare (usually empty): 1 after the first, 2 after the second.
  int trailer_step = 0;
};

void parse_hash_line(std::string_view body, ParseState* st) {
  NcclTestsOutput& out = st->out;
  auto tok = split_ws(body);
  st->trailer_step = tok.empty() && st->trailer_step == 1 ? 2 : 0;
  if (tok.empty()) return;
  if (tok.size() >= 3 && tok[0] == "nccl-tests" && tok[1] == "version") {
    out.version = std::string(tok[2]);
    std::string nccl;
    for (std::string_view t : tok) {
      for (std::string_view key :
           {std::string_view("nccl-library="), std::string_view("nccl-headers=")}) {
        if (t.starts_with(key) && nccl.empty()) {
          nccl = nccl_version_from_code(parse_int(t.substr(key.size())).value_or(0));
        }
      }
    }
    if (!nccl.empty()) out.nccl_version = nccl;
  } else if (body.starts_with("Collective test starting:")) {
    out.program = std::string(trim(body.substr(std::strlen("Collective test starting:"))));
  } else if (tok[0] == "nThread") {
    parse_config(tok, &out.config);
  } else if (tok[0] == "Rank") {
    if (auto d = parse_device(body)) out.devices.push_back(std::move(*d));
  } else if (tok[0] == "size") {
    bool cpu = false;
    if (auto l = layout_from_header(tok, &cpu)) {
      st->layout = std::move(*l);
      out.cpu_time = cpu;
    }
  } else if (body.starts_with("Out of bounds values")) {
    auto v = after_colon(body);
    if (!v.empty()) out.out_of_bounds = parse_int(v[0]);
    if (contains(body, "FAILED")) out.errors.emplace_back(body);
  } else if (body.starts_with("Avg bus bandwidth")) {
    auto v = after_colon(body);
    if (!v.empty()) out.avg_busbw_gbs = parse_double(v[0]);
    if (contains(body, "FAILED")) out.errors.emplace_back(body);
    st->trailer_step = 1;
    return;
  } else if (tok.size() >= 4 && tok[0] == "Reducing" && tok[1] == "maxBytes") {
    out.reduced_max_bytes = parse_int(tok[3]);
  } else if (body.starts_with("error:")) {
    out.errors.emplace_back(body);
  }
}

void parse_plain_line(std::string_view line, bool complete, ParseState* st) {
  NcclTestsOutput& out = st->out;
  size_t m = message_start(line);
  std::string_view row_part = m == std::string_view::npos ? line : line.substr(0, m);
  std::string_view msg = m == std::string_view::npos ? std::string_view() : trim(line.substr(m));
  bool row_found = false;
  const bool info = contains(line, " NCCL INFO ");
  const bool bare_last_error = st->trailer_step == 2 && !info;
  if (!info) st->trailer_step = 0;
  if (!trim(row_part).empty()) {
    // A line cut off by the end of the text may have lost digits: not a row.
    if (complete || !msg.empty()) {
      if (auto row = parse_row(split_ws(row_part), st->layout)) {
        out.rows.push_back(std::move(*row));
        row_found = true;
      }
    }
    if (!msg.empty()) msg = unglue(msg);
  }
  if (!msg.empty()) {
    if (contains(msg, " NCCL WARN ")) {
      out.warnings.emplace_back(msg);
    } else if (contains(msg, " NCCL INFO ")) {
      size_t v = msg.find("NCCL version ");
      if (v != std::string_view::npos && out.nccl_version.empty()) {
        auto tok = split_ws(msg.substr(v + std::strlen("NCCL version ")));
        if (!tok.empty()) out.nccl_version = std::string(tok[0].substr(0, tok[0].find('+')));
      }
    } else {
      out.errors.emplace_back(msg);
    }
    return;
  }
  if (row_found) return;
  std::string_view text = trim(line);
  if (text.empty()) return;
  if (bare_last_error) {
    out.errors.emplace_back(text);
  } else if (text.starts_with("[-") || text.starts_with("USAGE:")) {
    // the usage text printed after "invalid option"
  } else if (looks_like_notice(text)) {
    out.warnings.emplace_back(text);
  } else if (looks_like_error(text)) {
    out.errors.emplace_back(text);
  }
}

}  // namespace

// ------------------------------------------------------------------------ parser

NcclTestsOutput parse_nccl_tests_output(std::string_view text) {
  ParseState st;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t nl = text.find('\n', pos);
    bool complete = nl != std::string_view::npos;
    std::string_view line = text.substr(pos, complete ? nl - pos : std::string_view::npos);
    pos = complete ? nl + 1 : text.size();
    while (!line.empty() && line.back() == '\r')
      line.remove_suffix(1);
    std::string_view t = trim(line);
    if (t.starts_with('#')) {
      parse_hash_line(trim(t.substr(1)), &st);
    } else {
      parse_plain_line(line, complete, &st);
    }
  }
  return std::move(st.out);
}

std::string nccl_tests_error_summary(const NcclTestsOutput& output) {
  const auto& e = output.errors;
  auto last = [&](auto pred) -> std::optional<std::string> {
    for (auto it = e.rbegin(); it != e.rend(); ++it) {
      if (pred(*it)) return *it;
    }
    return std::nullopt;
  };
  if (auto s = last([](const std::string& l) {
        return contains(l, "NCCL failure") || contains(l, "CUDA failure") ||
               contains(l, "Test timeout");
      })) {
    return *s;
  }
  if (auto s = last([](const std::string& l) { return !contains(l, ": Test failure "); })) {
    return *s;
  }
  if (!e.empty()) return e.back();
  if (!output.warnings.empty()) return output.warnings.back();
  return "";
}

std::string nccl_version_from_code(int64_t code) {
  if (code >= 10000 && code < 1000000) {
    return fmt::format("{}.{}.{}", code / 10000, (code / 100) % 100, code % 100);
  }
  if (code >= 1000 && code < 10000) {
    return fmt::format("{}.{}.{}", code / 1000, (code / 100) % 10, code % 100);
  }
  return "";
}

}  // namespace gpuvs::comm
