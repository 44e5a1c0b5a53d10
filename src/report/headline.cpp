// The headline of a comparison (headline.h). For each headline metric and pair, the
// row to show is the best like-with-like one: both figures measured, else both from
// the datasheet, else both published in one setting; failing that each side's best
// figure on its own, marked as of different bases.
#include "report/headline.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace gpuvs {

namespace {

int basis_rank(const std::string& basis) {
  if (basis == "measured") return 0;
  if (basis == "datasheet") return 1;
  if (basis == "published") return 2;
  return 3;
}

// The row of `metric` where column `col` has its best figure (measured first).
const Row* best_row_for(const Comparison& c, const std::string& metric, size_t col) {
  const Row* best = nullptr;
  for (const Row& r : c.rows) {
    if (r.metric != metric || col >= r.cells.size()) continue;
    const Cell& cell = r.cells[col];
    // "none" (the datasheet says the GPU lacks it) is an answer too, after any figure.
    if (cell.unsupported && !best) best = &r;
    if (!cell.value || cell.invalid) continue;
    if (!best || !best->cells[col].value ||
        basis_rank(basis_of(cell)) < basis_rank(basis_of(best->cells[col])))
      best = &r;
  }
  return best;
}

// The item of `metric` from the rows given; `shared`: both figures in one row of one
// basis (a ratio), else each side's own figure (different bases or settings).
HeadlineItem make_item(const Comparison& c, const std::string& metric, size_t other,
                       const Row* base_row, const Row* other_row, bool shared) {
  HeadlineItem it;
  it.metric = metric;
  it.base_row = base_row;
  it.other_row = other_row;
  const Row* any = base_row ? base_row : other_row;
  if (!any) return it;
  it.name = any->name;
  it.unit = any->unit;
  it.speed = any->speed;
  if (base_row) it.base = base_row->cells[c.baseline];
  if (other_row) it.other = other_row->cells[other];
  if (!base_row || !other_row || it.base.unsupported || it.other.unsupported) return it;
  if (shared) {
    it.basis = it.other.basis;
    it.ratio = it.other.ratio;
    it.verdict = it.other.verdict;
    return it;
  }
  it.basis = "different";
  it.verdict = std::string(kDifferentBasis);
  if (it.other.datasheet && it.base.datasheet && *it.base.datasheet > 0)
    it.datasheet_ratio = *it.other.datasheet / *it.base.datasheet;
  return it;
}

// The items of a headline metric: the best row where both sides are of one basis; and
// where a side was measured outside that row (a measured model against published
// figures), that measurement against the other side's best figure too, marked as of
// different bases.
std::vector<HeadlineItem> items_for(const Comparison& c, const std::string& metric, size_t other) {
  const size_t base = c.baseline;
  const Row* shared = nullptr;
  for (const Row& r : c.rows) {
    if (r.metric != metric) continue;
    const Cell& o = r.cells[other];
    if (o.basis.empty() || !o.ratio) continue;
    if (!shared || basis_rank(o.basis) < basis_rank(shared->cells[other].basis)) shared = &r;
  }
  const Row* base_best = best_row_for(c, metric, base);
  const Row* other_best = best_row_for(c, metric, other);
  if (!shared) return {make_item(c, metric, other, base_best, other_best, false)};
  std::vector<HeadlineItem> out;
  auto measured = [&](const Row* r, size_t col) {
    return r && r != shared && basis_of(r->cells[col]) == "measured";
  };
  if (shared->cells[other].basis != "measured" &&
      (measured(base_best, base) || measured(other_best, other)))
    out.push_back(make_item(c, metric, other, base_best, other_best, false));
  out.push_back(make_item(c, metric, other, shared, shared, true));
  return out;
}

std::string ratio_range(double lo, double hi) {
  if (std::fabs(hi / lo - 1) < 0.005) return fmt::format("{:.2f}x", lo);
  return fmt::format("{:.2f}x to {:.2f}x", lo, hi);
}

std::string summary_of(const HeadlinePair& p) {
  int faster = 0, slower = 0, same = 0, different = 0;
  double lo = INFINITY, hi = 0;
  for (const HeadlineItem& it : p.items) {
    if (it.basis == "different") {
      ++different;
      continue;
    }
    if (!it.ratio) continue;
    if (it.verdict == "faster")
      ++faster;
    else if (it.verdict == "slower")
      ++slower;
    else if (it.verdict == "same")
      ++same;
    if (it.speed && it.verdict != "same") {
      lo = std::min(lo, *it.ratio);
      hi = std::max(hi, *it.ratio);
    }
  }
  std::string s;
  const int speeds = faster + slower + same;
  if (speeds > 0) {
    s = fmt::format("Of {} like-with-like speed figures, {} faster, {} slower, {} the same", speeds,
                    faster, slower, same);
    if (hi > 0) s += fmt::format(" ({} the baseline)", ratio_range(lo, hi));
  } else {
    s = "No speed figure of one basis on both sides";
  }
  if (different > 0)
    s += fmt::format("; {} figure{} of different bases or settings: both shown, no ratio",
                     different, different == 1 ? "" : "s");
  return s + ".";
}

}  // namespace

std::vector<HeadlinePair> build_headline(const Comparison& c) {
  std::vector<HeadlinePair> out;
  if (c.columns.size() < 2) return out;
  // Headline metrics in the table's order (the order of the metric vocabulary).
  std::vector<std::string> metrics;
  for (const Row& r : c.rows)
    if (r.headline && std::find(metrics.begin(), metrics.end(), r.metric) == metrics.end())
      metrics.push_back(r.metric);
  for (size_t other = 0; other < c.columns.size(); ++other) {
    if (other == c.baseline) continue;
    HeadlinePair p;
    p.baseline = c.baseline;
    p.other = other;
    for (const std::string& m : metrics)
      for (HeadlineItem& it : items_for(c, m, other))
        if (it.base_row || it.other_row) p.items.push_back(std::move(it));
    p.summary = summary_of(p);
    out.push_back(std::move(p));
  }
  return out;
}

std::string headline_config(const Row& row) {
  std::string s = row.config_text;
  if (!row.published) return s;
  if (s.rfind("published, ", 0) == 0) s = s.substr(11);
  // Drop parenthesised details: "MLPerf Inference Offline (closed division, TensorRT)".
  for (size_t open = s.find(" ("); open != std::string::npos; open = s.find(" (")) {
    const size_t close = s.find(')', open);
    if (close == std::string::npos) break;
    s.erase(open, close - open + 1);
  }
  return s;
}

std::string headline_comparison_text(const HeadlineItem& item) {
  if (item.other.unsupported || item.base.unsupported)
    return fmt::format("{} lacks it (datasheet)", item.other.unsupported ? "other" : "baseline");
  if (item.basis.empty()) return "no figure on one side";
  if (item.basis == "different") {
    std::string s = "different basis, no ratio";
    if (item.base_row && item.other_row && item.base_row != item.other_row &&
        basis_of(item.base) == basis_of(item.other))
      s = "different settings, no ratio";
    if (item.datasheet_ratio) s += fmt::format("; datasheets {:.2f}x", *item.datasheet_ratio);
    return s;
  }
  if (!item.ratio) return "-";
  if (item.verdict == "same")
    return fmt::format("same ({:+.1f} %, {})", (*item.ratio - 1) * 100, item.basis);
  return fmt::format("{:.2f}x {} ({})", *item.ratio, item.verdict, item.basis);
}

}  // namespace gpuvs
