// Largest-batch search and recommended batch. See batch_search.h.
#include "models/batch_search.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "core/error.h"
#include "core/units.h"

namespace gpuvs::models {

std::optional<MemoryLine> memory_line(const std::vector<BatchProbe>& probes) {
  std::vector<const BatchProbe*> fits;
  for (const BatchProbe& p : probes)
    if (p.probe.fits && p.probe.used_bytes && p.batch > 0) fits.push_back(&p);
  if (fits.empty()) return std::nullopt;
  std::sort(fits.begin(), fits.end(),
            [](const BatchProbe* a, const BatchProbe* b) { return a->batch > b->batch; });
  const BatchProbe& big = *fits[0];
  const double proportional = *big.probe.used_bytes / big.batch;
  for (size_t i = 1; i < fits.size(); ++i) {
    const BatchProbe& small = *fits[i];
    if (small.batch == big.batch) continue;
    const double per_item =
        (*big.probe.used_bytes - *small.probe.used_bytes) / (big.batch - small.batch);
    // A line that does not grow with the batch is noise (or a figure that lies):
    // fall back to the proportional estimate, which errs on the large side.
    if (!(per_item > 0)) break;
    return MemoryLine{*big.probe.used_bytes - per_item * big.batch, per_item};
  }
  return MemoryLine{0, proportional};
}

int recommend_batch(const std::optional<MemoryLine>& line, int max_batch,
                    const BatchSearchOptions& o, std::string* how) {
  if (max_batch < 1) return 0;
  double b = 0;
  std::string text;
  if (line && line->per_item_bytes > 0 && o.total_bytes > 0) {
    const double budget = (1 - o.headroom) * o.total_bytes - o.baseline_bytes - line->fixed_bytes;
    b = std::floor(budget / line->per_item_bytes);
    text = fmt::format(
        "largest batch whose predicted memory ({} + {} per item, plus {} in use before) stays "
        "under {:.0f} % of {}",
        format_si(line->fixed_bytes, "B"), format_si(line->per_item_bytes, "B"),
        format_si(o.baseline_bytes, "B"), (1 - o.headroom) * 100, format_si(o.total_bytes, "B"));
  } else {
    b = std::floor(max_batch * (1 - o.headroom));
    text = fmt::format("no memory figures: {:.0f} % of the largest batch", (1 - o.headroom) * 100);
  }
  int batch = static_cast<int>(std::clamp(b, 1.0, static_cast<double>(max_batch)));
  if (batch >= 8) batch = batch / 8 * 8;
  if (how) *how = text + (batch >= 8 ? ", rounded down to a multiple of 8" : "");
  return batch;
}

// The widest pair: its baseline is the least disturbed by allocator rounding.
std::optional<int> predicted_max_batch(const std::vector<BatchProbe>& probes,
                                       const BatchSearchOptions& o) {
  if (!(o.total_bytes > 0)) return std::nullopt;
  const BatchProbe* small = nullptr;
  const BatchProbe* big = nullptr;
  for (const BatchProbe& p : probes) {
    if (!p.probe.fits || !p.probe.used_bytes || p.batch <= 0) continue;
    if (!small || p.batch < small->batch) small = &p;
    if (!big || p.batch > big->batch) big = &p;
  }
  if (!big) return std::nullopt;
  MemoryLine line{0, *big->probe.used_bytes / big->batch};
  if (small->batch != big->batch) {
    const double per_item =
        (*big->probe.used_bytes - *small->probe.used_bytes) / (big->batch - small->batch);
    if (per_item > 0) line = {*big->probe.used_bytes - per_item * big->batch, per_item};
  }
  if (!(line.per_item_bytes > 0)) return std::nullopt;
  const double room = o.total_bytes - o.baseline_bytes - line.fixed_bytes;
  double est = std::floor(room / line.per_item_bytes);
  est = std::clamp(est, 1.0, static_cast<double>(o.limit));
  int b = static_cast<int>(est);
  if (b >= o.granularity) b = b / o.granularity * o.granularity;
  return b;
}

BatchSearchResult search_max_batch(const std::function<FitProbe(int)>& try_batch,
                                   const BatchSearchOptions& o) {
  if (o.start < 1 || o.limit < o.start || o.granularity < 1 || o.max_probes < 1 ||
      !(o.headroom >= 0 && o.headroom < 1) || !(o.relative_width >= 0 && o.relative_width < 1))
    throw UsageError(fmt::format(
        "batch search: invalid options (start {}, limit {}, granularity {}, headroom {})", o.start,
        o.limit, o.granularity, o.headroom));
  BatchSearchResult r;
  auto probe = [&](int batch) {
    r.probes.push_back({batch, try_batch(batch)});
    return r.probes.back().probe.fits;
  };
  auto tried = [&](int batch) {
    return std::any_of(r.probes.begin(), r.probes.end(),
                       [&](const BatchProbe& p) { return p.batch == batch; });
  };
  auto budget = [&] { return static_cast<int>(r.probes.size()) < o.max_probes; };
  const int g = o.granularity;
  int lo = 0;  // largest batch that fit
  int hi = 0;  // smallest batch that did not; 0: none yet

  // 1. The start, halving while it does not fit; then one doubling, so that two fits
  // give the memory line.
  if (probe(o.start)) {
    lo = o.start;
  } else {
    hi = o.start;
    while (budget() && hi > 1) {
      const int next = hi / 2;
      if (probe(next)) {
        lo = next;
        break;
      }
      hi = next;
    }
  }
  if (lo == 0) {
    r.first_failure = hi;
    r.recommendation = fmt::format("not even batch {} fits", hi);
    return r;
  }

  // 2. Predict, bracket, bisect. Each candidate is the memory line's prediction when it
  // falls inside the bracket; otherwise, without a failure yet, a gallop upwards from the
  // largest fit (the line says the edge is near: lo + g, lo + 2g, lo + 4g...) or a
  // doubling (no line); with both ends known, the middle.
  int gallop = g;
  const auto open = [&] {
    if (hi == 0) return lo < o.limit;
    return hi - lo > std::max(g, static_cast<int>(o.relative_width * lo));
  };
  while (budget() && open()) {
    const std::optional<int> est = predicted_max_batch(r.probes, o);
    int cand = 0;
    if (est && *est > lo && (hi == 0 || *est < hi) && !tried(*est)) {
      cand = *est;
    } else if (hi == 0) {
      const long long up = est ? static_cast<long long>(lo) + gallop : 2LL * lo;
      cand = static_cast<int>(std::min<long long>(up, o.limit));
      if (est) gallop *= 2;
    } else {
      cand = lo + (hi - lo) / 2;
      if (const int rounded = cand / g * g; rounded > lo) cand = rounded;
    }
    if (cand <= lo || (hi != 0 && cand >= hi) || tried(cand)) break;
    if (probe(cand)) {
      lo = cand;
    } else {
      hi = cand;
    }
  }

  r.max_batch = lo;
  r.first_failure = hi;
  r.memory = memory_line(r.probes);
  r.recommended_batch = recommend_batch(r.memory, lo, o, &r.recommendation);
  return r;
}

}  // namespace gpuvs::models
