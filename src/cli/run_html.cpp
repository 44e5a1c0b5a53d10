#include "cli/run_html.h"

#include <fmt/format.h>

#include <string_view>
#include <vector>

#include "core/atomic_file.h"
#include "core/embedded.h"
#include "core/error.h"
#include "report/html.h"
#include "report/render.h"
#include "specs/catalogue.h"
#include "specs/published.h"

namespace gpuvs::cli {

namespace {

constexpr std::string_view kReferenceRun = "data/reference/h200-sxm-run.json";

}  // namespace

RunReport::RunReport(const RunFile& run) : run_(run) {
  std::vector<CompareInput> inputs;
  for (const GpuInfo& g : run.system.gpus) {
    CompareInput in;
    in.run = &run;
    in.gpu_index = g.index;
    in.label = measured_column_label(run, g.index, "") + " (this run)";
    inputs.push_back(in);
  }
  // The reference GPU: the bundled H200 run, labelled as what it is.
  if (const std::optional<std::string_view> text = embedded_file(kReferenceRun)) {
    reference_ = parse_run_file(*text, fmt::format("bundled {}", kReferenceRun));
    if (!reference_->system.gpus.empty()) {
      CompareInput in;
      in.run = &*reference_;
      in.gpu_index = reference_->system.gpus.front().index;
      in.label = fmt::format("{} (bundled gpuvs run, {})", reference_->system.gpus.front().name,
                             reference_->meta.started_at.substr(0, 10));
      inputs.push_back(in);
    }
  }
  comparison_ =
      build_comparison(inputs, Catalogue::builtin(), Published::builtin(), CompareOptions{});
}

std::string RunReport::headline() const {
  return render_headline(comparison_, TextFormat::kTerminal);
}

void RunReport::write_html(const std::filesystem::path& html) const {
  HtmlReportInput report;
  report.title =
      fmt::format("gpuvs {} on {}, {}", run_.meta.command, run_.meta.host, run_.meta.started_at);
  report.comparison = &comparison_;
  report.runs = {&run_};
  report.note =
      "Measured columns come from this run; the last column is the H200 reference "
      "bundled with gpuvs (also measured by gpuvs), for scale.";
  write_file_atomically(html, render_html(report));
}

}  // namespace gpuvs::cli
