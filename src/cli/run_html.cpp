#include "cli/run_html.h"

#include <fmt/format.h>

#include <fstream>
#include <optional>
#include <string_view>
#include <vector>

#include "core/embedded.h"
#include "core/error.h"
#include "report/compare.h"
#include "report/html.h"
#include "specs/catalogue.h"
#include "specs/published.h"

namespace gpuvs::cli {

namespace {

constexpr std::string_view kReferenceRun = "data/reference/h200-sxm-run.json";

}  // namespace

void write_run_html(const RunFile& run, const std::filesystem::path& html) {
  const Catalogue& catalogue = Catalogue::builtin();
  std::vector<CompareInput> inputs;
  for (const GpuInfo& g : run.system.gpus) {
    CompareInput in;
    in.run = &run;
    in.gpu_index = g.index;
    in.label = fmt::format("GPU {} {} (this run)", g.index, g.name);
    inputs.push_back(in);
  }
  // The reference GPU: the bundled H200 run, labelled as what it is.
  std::optional<RunFile> reference;
  if (const std::optional<std::string_view> text = embedded_file(kReferenceRun)) {
    reference = parse_run_file(*text, fmt::format("bundled {}", kReferenceRun));
    if (!reference->system.gpus.empty()) {
      CompareInput in;
      in.run = &*reference;
      in.gpu_index = reference->system.gpus.front().index;
      in.label = fmt::format("{} (bundled gpuvs run, {})", reference->system.gpus.front().name,
                             reference->meta.started_at.substr(0, 10));
      inputs.push_back(in);
    }
  }
  const Comparison comparison =
      build_comparison(inputs, catalogue, Published::builtin(), CompareOptions{});
  HtmlReportInput report;
  report.title =
      fmt::format("gpuvs {} on {}, {}", run.meta.command, run.meta.host, run.meta.started_at);
  report.comparison = &comparison;
  report.runs = {&run};
  report.note =
      "Measured columns come from this run; the last column is the H200 reference "
      "bundled with gpuvs (also measured by gpuvs), for scale.";
  const std::string text = render_html(report);
  std::ofstream out(html, std::ios::binary | std::ios::trunc);
  out << text;
  out.close();
  if (!out) throw Error(fmt::format("cannot write {}", html.string()));
}

}  // namespace gpuvs::cli
