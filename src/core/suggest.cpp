#include "core/suggest.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <limits>
#include <utility>

namespace gpuvs {

namespace {

size_t cut_off(size_t typed_length) {
  return typed_length <= 2 ? 1 : std::max<size_t>(2, typed_length / 3);
}

}  // namespace

std::string normalise_name(std::string_view name) {
  std::string out;
  for (char c : name) {
    if (c == '-' || c == '_' || c == ' ') continue;
    out += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  }
  return out;
}

size_t edit_distance(std::string_view a, std::string_view b) {
  // Three rows: the one before the previous is for a swap of neighbours.
  std::vector<size_t> two(b.size() + 1), one(b.size() + 1), row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j)
    one[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t cost = a[i - 1] == b[j - 1] ? 0 : 1;
      row[j] = std::min({one[j] + 1, row[j - 1] + 1, one[j - 1] + cost});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1])
        row[j] = std::min(row[j], two[j - 2] + 1);
    }
    std::swap(two, one);
    std::swap(one, row);
  }
  return one[b.size()];
}

std::vector<std::string> suggest(std::string_view typed, std::span<const NameCandidate> candidates,
                                 size_t max) {
  const std::string key = normalise_name(typed);
  const size_t limit = cut_off(key.size());
  std::vector<std::pair<size_t, size_t>> ranked;  // (rank, index)
  for (size_t i = 0; i < candidates.size(); ++i) {
    size_t best = std::numeric_limits<size_t>::max();
    bool same_start = false;
    const auto score = [&](std::string_view spelled) {
      const std::string c = normalise_name(spelled);
      const size_t whole = edit_distance(key, c);
      const size_t start = edit_distance(key, std::string_view(c).substr(0, key.size())) + 1;
      const size_t d = std::min(whole, start);
      if (d < best || (d == best && !same_start)) {
        best = d;
        same_start = !key.empty() && !c.empty() && key[0] == c[0];
      }
    };
    if (candidates[i].keys.empty()) score(candidates[i].shown);
    for (const std::string& k : candidates[i].keys)
      score(k);
    if (best <= limit) ranked.emplace_back(best * 2 + (same_start ? 0 : 1), i);
  }
  std::stable_sort(ranked.begin(), ranked.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  std::vector<std::string> out;
  for (size_t r = 0; r < ranked.size() && out.size() < max; ++r) {
    const std::string& shown = candidates[ranked[r].second].shown;
    if (std::find(out.begin(), out.end(), shown) == out.end()) out.push_back(shown);
  }
  return out;
}

std::vector<std::string> suggest(std::string_view typed, std::span<const std::string> names,
                                 size_t max) {
  std::vector<NameCandidate> candidates;
  candidates.reserve(names.size());
  for (const std::string& n : names)
    candidates.push_back({n, {}});
  return suggest(typed, candidates, max);
}

std::string did_you_mean(const std::vector<std::string>& close) {
  if (close.empty()) return "";
  return fmt::format("; did you mean: {}?", fmt::join(close, ", "));
}

std::string did_you_mean_or_known(const std::vector<std::string>& close, std::string_view known) {
  if (close.empty()) return fmt::format("; known: {}", known);
  return fmt::format("{} Known: {}", did_you_mean(close), known);
}

}  // namespace gpuvs
