// The report of a measured run (`gpuvs run`, `bench`, `model`): every GPU of the run,
// each against its own datasheet entry (% of datasheet), beside the bundled H200
// reference run measured by gpuvs; the terminal headline of those columns and the
// HTML report with the run's own sweeps, collectives, model results and utilization
// timelines, written next to the run file.
#pragma once

#include <filesystem>
#include <optional>
#include <string>

#include "core/run_file.h"
#include "report/compare.h"

namespace gpuvs::cli {

class RunReport {
 public:
  explicit RunReport(const RunFile& run);

  const Comparison& comparison() const { return comparison_; }
  // The headline for the terminal: each other column against GPU 0 of the run.
  std::string headline() const;
  // `html` = the run file's path with the extension .html, written with
  // write_file_atomically (core/atomic_file.h). Throws gpuvs::Error when the file
  // cannot be written; the caller keeps the run file either way.
  void write_html(const std::filesystem::path& html) const;

 private:
  const RunFile& run_;
  std::optional<RunFile> reference_;  // the bundled H200 run
  Comparison comparison_;
};

}  // namespace gpuvs::cli
