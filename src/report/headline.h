// The answer at a glance: for each column against the baseline, the few figures that
// decide a purchase (the metrics marked `headline`: memory size and bandwidth, FP64,
// BF16 and FP8 dense, NVLink, ResNet-50 and BERT-large training and inference), each
// with its basis and, only where both figures are of one basis, a ratio. Read from a
// Comparison, so it follows the same like-with-like rules as the table.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "report/compare.h"

namespace gpuvs {

struct HeadlineItem {
  std::string metric;  // metric id
  std::string name;
  std::string unit;
  bool speed = false;
  // The figure of each side: the rows they come from (the same row where both are of
  // one basis and setting) and their cells; a side without a figure has a row of
  // nullptr and an empty cell.
  const Row* base_row = nullptr;
  const Row* other_row = nullptr;
  Cell base;
  Cell other;
  // "measured", "datasheet", "published": one basis and one setting, with a ratio;
  // "different": two bases (or two published settings): both shown, no ratio;
  // "": a side has no figure.
  std::string basis;
  std::optional<double> ratio;  // other / base
  std::string verdict;          // as Cell::verdict
  // Across bases, the ratio of the two GPUs' datasheet figures where both exist.
  std::optional<double> datasheet_ratio;
};

struct HeadlinePair {
  size_t baseline = 0;
  size_t other = 0;
  std::vector<HeadlineItem> items;
  // One sentence: how many like-with-like speed figures of the other column are
  // faster, slower, the same (and their range of ratios), and how many are of
  // different bases.
  std::string summary;
};

// One pair per column other than the baseline, in column order. Empty with one column.
std::vector<HeadlinePair> build_headline(const Comparison& c);

// A row's settings, short, for the headline: "bf16, batch 256"; a published row's
// suite without its parenthesised details ("MLPerf Inference Offline: int8").
std::string headline_config(const Row& row);

// "different basis", "0.57x lower (datasheet)", "same (+0.3 %, measured)", "1.03x
// faster (measured)", "no figure": the comparison of an item in words.
std::string headline_comparison_text(const HeadlineItem& item);

}  // namespace gpuvs
