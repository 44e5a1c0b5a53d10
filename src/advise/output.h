// The advisor's output, as pieces the command prints: a title, the ranked table
// (cells as text; the CLI aligns them), the lines below it (naive rule, prices,
// assumptions, notes; with --explain the arithmetic of the workload and of every
// candidate), or JSON (schema `gpuvs.advise/1`, values in base SI units: bytes,
// seconds, FLOP/s, B/s; null for anything unknown).
#pragma once

#include <string>
#include <vector>

#include "advise/advisor.h"

namespace gpuvs::advise {

struct TableView {
  std::vector<std::string> header;
  std::vector<bool> right_aligned;  // per column
  std::vector<std::vector<std::string>> rows;
};

std::string render_title(const Advice& advice);
TableView ranking_table(const Advice& advice);
std::string render_below_table(const Advice& advice, bool explain);
// One line when the usable candidates' figures rest on different bases (a
// measurement, a measured peak × MFU, a published figure, datasheet × MFU), naming
// which rests on which; "" when they share one.
std::string bases_line(const Advice& advice);
std::string render_json(const Advice& advice);

}  // namespace gpuvs::advise
