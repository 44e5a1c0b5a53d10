// Text renderings of a Comparison and of claim judgements: terminal table, Markdown,
// CSV and JSON. Missing cells are written as missing ("-" / empty / null), never 0;
// invalid measurements as "invalid", never as a number.
#pragma once

#include <string>
#include <vector>

#include "report/claims.h"
#include "report/compare.h"

namespace gpuvs {

enum class TextFormat { kTerminal, kMarkdown, kCsv, kJson };

// The headline (report/headline.h) then the table; JSON carries both.
std::string render_comparison(const Comparison& c, TextFormat format);
// The headline alone, terminal or Markdown: per column against the baseline, a title,
// the summary sentence and a small table. Empty with fewer than two columns.
std::string render_headline(const Comparison& c, TextFormat format);
std::string render_claims(const std::vector<ClaimJudgement>& judgements, TextFormat format);

}  // namespace gpuvs
