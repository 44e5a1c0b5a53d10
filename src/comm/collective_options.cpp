#include "comm/collective_options.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <charconv>
#include <cmath>

#include "core/error.h"
#include "core/units.h"

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

std::optional<int64_t> parse_size(std::string_view text) {
  // nccl-tests' spelling (-e 4G: K, M, G are binary) on top of the house's parser
  // (core/units: "4GiB", "512MiB", "2GB", "4096").
  std::string t(text);
  if (!t.empty() && std::string_view("kKmMgG").find(t.back()) != std::string_view::npos) {
    const char unit = static_cast<char>(std::toupper(static_cast<unsigned char>(t.back())));
    t.back() = unit;
    t += "iB";
  }
  const int64_t v = gpuvs::parse_size(t);
  if (v <= 0) return std::nullopt;
  return v;
}

void parse_size_range(std::string_view text, CollectiveOptions& options) {
  const auto parts = split(text, ':');
  const auto bad = [&](std::string_view why) {
    return UsageError(
        fmt::format("--sizes '{}': {} (expected MIN:MAX[:FACTOR], e.g. 8:4G:2)", text, why));
  };
  if (parts.size() < 2 || parts.size() > 3) throw bad("wrong number of fields");
  const auto lo = parse_size(parts[0]);
  const auto hi = parse_size(parts[1]);
  if (!lo || !hi) throw bad("a size is not a positive number of bytes");
  if (*lo > *hi) throw bad("MIN is larger than MAX");
  double factor = 2;
  if (parts.size() == 3) {
    const std::string f(parts[2]);
    char* end = nullptr;
    factor = std::strtod(f.c_str(), &end);
    if (f.empty() || end != f.c_str() + f.size() || !(factor > 1) || !std::isfinite(factor))
      throw bad("FACTOR must be a number above 1");
  }
  options.min_bytes = *lo;
  options.max_bytes = *hi;
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
    double s = static_cast<double>(options.min_bytes);
    while (std::llround(s) <= options.max_bytes) {
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
