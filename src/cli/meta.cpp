// Run-file metadata: version and git sha (generated at build time), argv, host, time.
#include <fmt/format.h>

#include "cli/app.h"
#include "core/host.h"
#include "core/version.h"

namespace gpuvs::cli {

std::string version_number() {
  return kVersion;
}

std::string version_line() {
  return fmt::format("gpuvs {} (git {})", kVersion, kGitSha);
}

Meta make_meta(const std::string& command, const std::vector<std::string>& argv) {
  Meta m;
  m.tool_version = kVersion;
  m.git_sha = kGitSha;
  m.argv = argv;
  m.command = command;
  m.started_at = utc_now_iso8601();
  m.host = host_name();
  return m;
}

}  // namespace gpuvs::cli
