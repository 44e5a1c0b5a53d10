#include "cli/app.h"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <sstream>

#include "core/host.h"
#include "core/text.h"

namespace gpuvs::cli {

Progress::Progress(const GlobalOptions& options)
    : enabled_(!options.quiet && !options.json && isatty(fileno(stderr))) {}

Progress::~Progress() {
  done();
}

void Progress::step(const std::string& message) {
  if (!enabled_) return;
  fmt::print(stderr, "\r\033[K{}", one_line(message));
  std::fflush(stderr);
  dirty_ = true;
}

void Progress::done() {
  if (!enabled_ || !dirty_) return;
  fmt::print(stderr, "\r\033[K");
  std::fflush(stderr);
  dirty_ = false;
}

std::filesystem::path run_file_path(const GlobalOptions& options, const std::string& command,
                                    const Meta& meta) {
  const std::filesystem::path dir = options.out_dir.empty() ? "gpuvs-results" : options.out_dir;
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec)
    throw Error(fmt::format("cannot create output directory {}: {}", dir.string(), ec.message()));
  std::string stamp = meta.started_at;
  stamp.erase(
      std::remove_if(stamp.begin(), stamp.end(), [](char c) { return c == ':' || c == '-'; }),
      stamp.end());
  std::string host = meta.host;
  for (char& c : host)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '.' && c != '_') c = '_';
  return dir / fmt::format("{}-{}-{}.json", command, stamp, host);
}

std::vector<int> parse_gpu_list(const std::string& text, int count) {
  std::vector<int> out;
  if (text.empty()) {
    for (int i = 0; i < count; ++i)
      out.push_back(i);
    return out;
  }
  std::stringstream ss(text);
  for (std::string item; std::getline(ss, item, ',');) {
    size_t used = 0;
    int v = -1;
    try {
      v = std::stoi(item, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used != item.size() || item.empty() || v < 0)
      throw UsageError(fmt::format("--gpu: '{}' is not a GPU index", item));
    if (v >= count)
      throw UsageError(fmt::format("--gpu: GPU {} does not exist ({} visible)", v, count));
    if (std::find(out.begin(), out.end(), v) == out.end()) out.push_back(v);
  }
  return out;
}

int run_cli(int argc, char** argv) {
  CliContext ctx;
  ctx.global.argv.assign(argv, argv + argc);

  CLI::App app{
      "gpuvs: measure, compare and choose NVIDIA GPUs. Every figure is measured, "
      "from a datasheet, or published, and says which.",
      "gpuvs"};
  app.set_version_flag("--version", version_line());
  app.add_flag("--json", ctx.global.json, "Machine output (JSON) on stdout, nothing else there");
  app.add_option("--out", ctx.global.out_dir, "Directory for the files a command writes");
  app.add_flag("-q,--quiet", ctx.global.quiet, "No progress on stderr");
  app.fallthrough();  // global flags are accepted after the command name too
  app.require_subcommand(0, 1);
  app.footer(
      "Exit codes: 0 ok; 1 failure or failed check; 2 usage error; 3 could not run (no GPU, "
      "no driver); 4 finished, but some results are invalid or were taken while throttled.");

  add_run_command(app, ctx);
  add_detect_command(app, ctx);
  add_bench_command(app, ctx);
  add_compare_command(app, ctx);
  add_specs_command(app, ctx);
  add_advise_command(app, ctx);
  add_monitor_command(app, ctx);
  add_model_command(app, ctx);
  add_pending_commands(app, ctx);

  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    app.exit(e);  // prints the message and a hint to stderr
    return static_cast<int>(ExitCode::kUsage);
  }
  if (app.get_subcommands().empty()) {
    print_text(stderr, "{}", app.help());
    return static_cast<int>(ExitCode::kUsage);
  }
  return static_cast<int>(ctx.exit_code);
}

}  // namespace gpuvs::cli
