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

std::string render_comparison(const Comparison& c, TextFormat format);
std::string render_claims(const std::vector<ClaimJudgement>& judgements, TextFormat format);

}  // namespace gpuvs
