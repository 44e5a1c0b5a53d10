// The HTML report of a measured run (DESIGN.md: `gpuvs run` ends with a terminal
// summary and an HTML report against the datasheet and a reference GPU): every GPU of
// the run, each against its own datasheet entry (% of datasheet), beside the bundled
// H200 reference run measured by gpuvs; the run's own sweeps, collectives, model
// results and utilization timelines. Written next to the run file.
#pragma once

#include <filesystem>

#include "core/run_file.h"

namespace gpuvs::cli {

// `html` = the run file's path with the extension .html. Throws gpuvs::Error when the
// file cannot be written; the caller keeps the run file either way.
void write_run_html(const RunFile& run, const std::filesystem::path& html);

}  // namespace gpuvs::cli
