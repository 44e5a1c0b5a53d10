// Commands of docs/design.md that this version does not have yet: each says so, names
// what it will do, and exits 2 without running anything.
#include <fmt/format.h>

#include <array>

#include "cli/app.h"
#include "core/text.h"

namespace gpuvs::cli {

namespace {

struct Pending {
  const char* name;
  const char* summary;
};

constexpr std::array<Pending, 1> kPending = {{
    {"tune", "Per-device auto-tuning, cached"},
}};

std::vector<std::string>& ignored_args() {
  static std::vector<std::string> args;
  return args;
}

}  // namespace

void add_pending_commands(CLI::App& app, CliContext& ctx) {
  for (const Pending& p : kPending) {
    CLI::App* sub = app.add_subcommand(p.name, std::string(p.summary) + " (not built yet)");
    // Whatever follows is accepted and ignored: nothing runs, the message says so.
    sub->add_option("args", ignored_args(), "(ignored)");
    sub->allow_extras();
    sub->callback([&ctx, name = p.name] {
      print_text(stderr, "gpuvs {}: not built yet in this version ({}); nothing was run.\n", name,
                 version_line());
      ctx.exit_code = ExitCode::kUsage;
    });
  }
}

}  // namespace gpuvs::cli
