// A fleet's folder judged as `gpuvs compare --fleet DIR` does: every *.json in DIR (not
// below), by name; a file that is not a run file (truncated by a node that died,
// another tool's JSON) is one line on stderr ("<who>: skipped FILE: why") and left out,
// so that one bad node does not hide the others; the report lists it. Shared by
// `compare --fleet` and `run --fleet-summary` (rank 0 at the end of a launched run).
#pragma once

#include <filesystem>
#include <string>

#include "report/fleet.h"

namespace gpuvs::cli {

// UsageError when DIR is not a folder or holds no run file. `shown` names DIR in those
// errors ("--fleet DIR").
FleetReport judge_fleet_folder(const std::filesystem::path& dir, const FleetOptions& options,
                               const std::string& who, const std::string& shown);

// The report as text or JSON on stdout and, with an output folder, DIR/fleet.json.
void print_fleet(const FleetReport& report, bool json, const std::filesystem::path& out_dir,
                 const std::string& who, bool quiet);
// DIR/fleet.json (gpuvs.fleet/1), and a line on stderr saying so unless `quiet`.
void write_fleet_file(const FleetReport& report, const std::filesystem::path& out_dir,
                      const std::string& who, bool quiet);

}  // namespace gpuvs::cli
