// The self-contained HTML report: one file that opens offline, with the chart
// library inlined at build time (web/, npm, pinned by package-lock.json). Without
// the library (built without npm) it renders tables only and says so.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "core/run_file.h"
#include "report/claims.h"
#include "report/compare.h"

namespace gpuvs {

struct HtmlReportInput {
  std::string title;                       // "gpuvs report: H200 vs A100-SXM4-80GB"
  const Comparison* comparison = nullptr;  // bar charts per metric, % of datasheet
  std::vector<const RunFile*> runs;        // fingerprints; size/latency sweeps; roofline
  const std::vector<ClaimJudgement>* claims = nullptr;
  std::string note;  // e.g. "No GPU here: bundled H200 reference run"
};

std::string render_html(const HtmlReportInput& input);

// Text for HTML element content and attribute values: control characters escaped as
// in core/text.h (escape_controls, newlines kept), then & < > " ' as entities.
std::string escape_html(std::string_view s);

// As above, with `chart_library` (a script that defines window.Chart) inlined in place
// of the built-in one; empty: tables only, and the page says charts are not available.
std::string render_html(const HtmlReportInput& input, std::string_view chart_library);

// True when the chart library was inlined at build time.
bool html_charts_available();

}  // namespace gpuvs
