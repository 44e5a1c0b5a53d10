#include "cli/fleet_folder.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <deque>
#include <vector>

#include "core/atomic_file.h"
#include "core/error.h"
#include "core/run_file.h"
#include "core/text.h"

namespace gpuvs::cli {

namespace {

bool json_name(const std::string& name) {
  if (name.size() <= 5) return false;
  std::string ext = name.substr(name.size() - 5);
  std::transform(ext.begin(), ext.end(), ext.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return ext == ".json";
}

}  // namespace

FleetReport judge_fleet_folder(const std::filesystem::path& dir, const FleetOptions& options,
                               const std::string& who, const std::string& shown) {
  std::error_code ec;
  if (!std::filesystem::is_directory(dir, ec))
    throw UsageError(fmt::format("{}: not a directory", shown));
  std::vector<std::filesystem::path> paths;
  for (auto it = std::filesystem::directory_iterator(dir, ec);
       !ec && it != std::filesystem::directory_iterator(); it.increment(ec)) {
    if (json_name(it->path().filename().string())) paths.push_back(it->path());
  }
  if (ec) throw UsageError(fmt::format("{}: {}", shown, ec.message()));
  std::sort(paths.begin(), paths.end());
  std::deque<RunFile> runs;  // stable addresses for FleetRun
  std::vector<FleetRun> fleet;
  std::vector<FleetSkip> bad;
  for (const std::filesystem::path& path : paths) {
    try {
      runs.push_back(load_run_file(path));
      fleet.push_back({path.string(), &runs.back()});
    } catch (const Error& e) {
      bad.push_back({path.string(), e.what()});
      print_text(stderr, "{}: skipped {}\n", who, one_line(e.what()));
    }
  }
  if (fleet.empty())
    throw UsageError(fmt::format("{}: no run file to compare ({} *.json file{} read)", shown,
                                 paths.size(), paths.size() == 1 ? "" : "s"));
  FleetReport report = judge_fleet(fleet, options);
  report.skipped.insert(report.skipped.begin(), bad.begin(), bad.end());
  report.files += static_cast<int>(bad.size());
  return report;
}

void write_fleet_file(const FleetReport& report, const std::filesystem::path& out_dir,
                      const std::string& who, bool quiet) {
  std::error_code ec;
  std::filesystem::create_directories(out_dir, ec);
  if (ec) throw Error(fmt::format("cannot create {}: {}", out_dir.string(), ec.message()));
  write_file_atomically(out_dir / "fleet.json", render_fleet_json(report));
  if (!quiet) print_text(stderr, "{}: wrote fleet.json to {}\n", who, out_dir.string());
}

void print_fleet(const FleetReport& report, bool json, const std::filesystem::path& out_dir,
                 const std::string& who, bool quiet) {
  print_text(stdout, "{}", json ? render_fleet_json(report) : render_fleet_text(report));
  std::fflush(stdout);
  if (!out_dir.empty()) write_fleet_file(report, out_dir, who, quiet);
}

}  // namespace gpuvs::cli
