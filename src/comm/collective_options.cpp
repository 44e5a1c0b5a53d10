#include "comm/collective_options.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <cmath>

#include "core/error.h"

namespace gpuvs::comm {

namespace {

constexpr std::array<std::string_view, 7> kOps = {
    "all_reduce", "all_gather", "broadcast", "reduce_scatter", "reduce", "alltoall", "sendrecv"};
constexpr std::array<std::string_view, 7> kAlgos = {
    "Ring", "Tree", "CollnetDirect", "CollnetChain", "NVLS", "NVLSTree", "PAT"};
constexpr std::array<std::string_view, 3> kProtos = {"LL", "LL128", "Simple"};

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out)
    c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

std::vector<std::string_view> split(std::string_view text, char sep) {
  std::vector<std::string_view> out;
  size_t start = 0;
  for (;;) {
    const size_t end = text.find(sep, start);
    out.push_back(text.substr(start, end == std::string_view::npos ? end : end - start));
    if (end == std::string_view::npos) break;
    start = end + 1;
  }
  return out;
}

std::string join(std::span<const std::string_view> items) {
  std::string out;
  for (auto s : items)
    out += fmt::format("{}{}", out.empty() ? "" : ", ", s);
  return out;
}

}  // namespace

std::span<const std::string_view> collective_ops() {
  return kOps;
}
std::span<const std::string_view> nccl_algos() {
  return kAlgos;
}
std::span<const std::string_view> nccl_protos() {
  return kProtos;
}

NumberRules message_size_rules() {
  return NumberRules::bytes().whole().bare_binary().at_most(static_cast<double>(int64_t{1} << 62));
}

std::optional<int64_t> parse_size(std::string_view text) {
  const ParsedNumber n = parse_number(text, message_size_rules());
  if (!n.ok()) return std::nullopt;
  return n.integer;
}

void parse_size_range(std::string_view text, CollectiveOptions& options) {
  const auto parts = split(text, ':');
  const auto bad = [&](std::string_view why) {
    return UsageError(fmt::format("--sizes {}: {} (expected MIN:MAX[:FACTOR], e.g. 8:4G:2)",
                                  shown_text(text), why));
  };
  if (parts.size() < 2 || parts.size() > 3) throw bad("wrong number of fields");
  int64_t bounds[2] = {0, 0};
  for (size_t i = 0; i < 2; ++i) {
    const ParsedNumber n = parse_number(parts[i], message_size_rules());
    if (!n.ok())
      throw bad(fmt::format("{} {} is not a positive number of bytes: {}", i == 0 ? "MIN" : "MAX",
                            shown_text(parts[i]), n.error));
    bounds[i] = n.integer;
  }
  if (bounds[0] > bounds[1]) throw bad("MIN is larger than MAX");
  double factor = 2;
  if (parts.size() == 3) {
    const ParsedNumber f = parse_number(parts[2], NumberRules::plain());
    if (!f.ok()) throw bad(fmt::format("FACTOR must be a number above 1: {}", f.error));
    if (!(f.value > 1)) throw bad("FACTOR must be a number above 1");
    factor = f.value;
  }
  options.min_bytes = bounds[0];
  options.max_bytes = bounds[1];
  options.factor = factor;
  options.sizes.clear();
  options.sizes_given = true;
}

std::vector<std::string> parse_ops(std::string_view text) {
  std::vector<std::string> out;
  for (std::string_view item : split(text, ',')) {
    std::string name = lower(item);
    if (name == "all") {
      return {kOps.begin(), kOps.end()};
    }
    bool found = false;
    for (std::string_view op : kOps) {
      std::string plain(op);
      std::erase(plain, '_');
      if (name == op || name == plain) {
        if (std::find(out.begin(), out.end(), op) == out.end()) out.emplace_back(op);
        found = true;
      }
    }
    if (!found) {
      throw UsageError(fmt::format("--ops: unknown operation '{}'; known: {}", item, join(kOps)));
    }
  }
  return out;
}

std::vector<std::string> parse_nccl_values(std::string_view text,
                                           std::span<const std::string_view> known,
                                           std::string_view what) {
  std::vector<std::string> out;
  for (std::string_view item : split(text, ',')) {
    if (lower(item) == "all") return {known.begin(), known.end()};
    auto it = std::find_if(known.begin(), known.end(),
                           [&](std::string_view k) { return lower(k) == lower(item); });
    if (it == known.end()) {
      throw UsageError(
          fmt::format("{}: unknown value '{}'; NCCL knows: {}", what, item, join(known)));
    }
    if (std::find(out.begin(), out.end(), *it) == out.end()) out.emplace_back(*it);
  }
  return out;
}

GraphMode parse_graph_mode(std::string_view text) {
  const std::string t = lower(text);
  if (t == "auto") return GraphMode::kAuto;
  if (t == "off") return GraphMode::kOff;
  if (t == "on") return GraphMode::kOn;
  throw UsageError(fmt::format("--graph '{}': expected auto, off or on", text));
}

std::vector<int64_t> collective_sizes(const CollectiveOptions& options) {
  std::vector<int64_t> out = options.sizes;
  if (out.empty()) {
    // Compared as doubles: a large FACTOR must end the sweep, not overflow llround.
    double s = static_cast<double>(options.min_bytes);
    while (s <= static_cast<double>(options.max_bytes) && std::llround(s) <= options.max_bytes) {
      const int64_t v = std::llround(s);
      if (out.empty() || out.back() != v) out.push_back(v);
      s *= options.factor;
    }
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

std::vector<std::string> selected_ops(const CollectiveOptions& options) {
  std::vector<std::string> out;
  for (std::string_view op : kOps) {
    if (options.ops.empty() ||
        std::find(options.ops.begin(), options.ops.end(), op) != options.ops.end())
      out.emplace_back(op);
  }
  return out;
}

}  // namespace gpuvs::comm
