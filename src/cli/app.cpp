#include "cli/app.h"

#include <fmt/format.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <optional>
#include <sstream>
#include <string_view>

#include "cli/manpage.h"
#include "cli/options.h"
#include "core/host.h"
#include "core/suggest.h"
#include "core/text.h"
#include "core/units.h"
#include "report/table.h"

namespace gpuvs::cli {

ProgressMode progress_mode(const GlobalOptions& options) {
  if (options.quiet || options.progress == "off") return ProgressMode::kOff;
  if (options.progress == "plain") return ProgressMode::kPlain;
  const char* term = std::getenv("TERM");
  const bool dumb = term != nullptr && std::string_view(term) == "dumb";
  return isatty(fileno(stderr)) && !dumb ? ProgressMode::kLive : ProgressMode::kPlain;
}

std::unique_ptr<Progress> make_progress(const GlobalOptions& options) {
  static FileProgressSink sink(stderr);
  ProgressOptions o;
  o.tick_period_s = 0.2;
  const ProgressMode mode = progress_mode(options);
  if (winsize w{}; mode == ProgressMode::kLive && ioctl(fileno(stderr), TIOCGWINSZ, &w) == 0)
    o.width = w.ws_col;
  return std::make_unique<Progress>(mode, sink, steady_wall_clock(), o);
}

std::filesystem::path run_file_path(const GlobalOptions& options, const std::string& command,
                                    const Meta& meta, std::optional<int> rank) {
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
  const std::string who = rank ? fmt::format("{}-rank{}", host, *rank) : host;
  return dir / fmt::format("{}-{}-{}.json", command, stamp, who);
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
    const ParsedNumber n = parse_number(item, NumberRules::plain().whole().or_zero());
    if (!n.ok() || item.find_first_not_of("0123456789") != std::string::npos)
      throw UsageError(fmt::format("--gpu: {} is not a GPU index (0, 1, ...: e.g. --gpu 0,1)",
                                   shown_text(item)));
    if (n.integer >= count)
      throw UsageError(fmt::format("--gpu: GPU {} does not exist ({} visible)", n.integer, count));
    const int v = static_cast<int>(n.integer);
    if (std::find(out.begin(), out.end(), v) == out.end()) out.push_back(v);
  }
  if (!text.empty() && text.back() == ',')
    throw UsageError(fmt::format("--gpu: {} ends with a comma", shown_text(text)));
  return out;
}

void check_gpu_list(const std::string& text) {
  if (!text.empty()) parse_gpu_list(text, std::numeric_limits<int>::max());
}

namespace {

// "gpuvs bench": the command a parse error belongs to, whose --help tells more.
std::string parsed_command(const CLI::App& app) {
  std::string path = app.get_name();
  const CLI::App* at = &app;
  for (;;) {
    const std::vector<const CLI::App*> subs =
        at->get_subcommands([](const CLI::App* s) { return s->parsed(); });
    if (subs.empty()) break;
    at = subs.front();
    path += " " + at->get_name();
  }
  return path;
}

// CLI11's message as one line: its own hint ("Run with --help ...") is replaced by
// the help of the command at hand.
std::string one_line(std::string text) {
  for (char& c : text)
    if (c == '\n' || c == '\r') c = ' ';
  while (!text.empty() && text.back() == ' ')
    text.pop_back();
  return text;
}

// The first word of the command line that is neither an option nor the value of a
// global option taking one (--out DIR, --progress MODE, --completion SHELL): where the
// command goes.
std::optional<std::string> typed_command(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    const std::string_view a = argv[i];
    if (a == "--out" || a == "--progress" || a == "--completion") {
      ++i;
      continue;
    }
    if (!a.empty() && a[0] == '-') continue;
    return std::string(a);
  }
  return std::nullopt;
}

// The width tables fit: none unless stdout is a terminal and --wide is not given
// (before a "--", whose words are another command's); then $COLUMNS where it is a
// number, else the terminal's own width (TIOCGWINSZ). Known before the commands run,
// which CLI11 does while it parses, hence read from argv here.
size_t terminal_table_width(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    const std::string_view a = argv[i];
    if (a == "--") break;
    if (a == "--wide") return 0;
  }
  if (!isatty(fileno(stdout))) return 0;
  if (const char* c = std::getenv("COLUMNS"))
    if (const int n = std::atoi(c); n > 0) return static_cast<size_t>(n);
  if (winsize w{}; ioctl(fileno(stdout), TIOCGWINSZ, &w) == 0 && w.ws_col > 0) return w.ws_col;
  return 0;
}

}  // namespace

int run_cli(int argc, char** argv) {
  CliContext ctx;
  ctx.global.argv.assign(argv, argv + argc);

  CLI::App app{
      "gpuvs: measure, compare and choose NVIDIA GPUs. Every figure is measured, "
      "from a datasheet, or published, and says which.",
      "gpuvs"};
  app.set_version_flag("--version", version_line());
  app.add_flag("--json", ctx.global.json, "Machine output (JSON) on stdout, nothing else there");
  add_path_option(&app, "--out", ctx.global.out_dir, "Directory for the files a command writes");
  app.add_flag("-q,--quiet", ctx.global.quiet, "No progress on stderr");
  app.add_option("--progress", ctx.global.progress,
                 "Progress of long commands on stderr: auto (default: a line replaced in place "
                 "on a terminal, plain lines otherwise), plain (one line per step with the "
                 "elapsed time, for logs and batch jobs), off")
      ->check(CLI::IsMember({"auto", "plain", "off"}));
  // The manual page and the completions, from this very definition (cli/manpage.h); the
  // build writes them and the package installs them, so they are not in --help.
  bool man = false;
  std::string completion;
  app.add_flag("--man", man, "Print the manual page gpuvs.1 (roff) and exit")->group("");
  app.add_option("--completion", completion, "Print the bash or zsh completion script and exit")
      ->group("");
  bool wide = false;
  app.add_flag("--wide", wide,
               "Tables at their full width on a terminal too (by default they fit its width: "
               "long cells wrap)");
  set_table_width(terminal_table_width(argc, argv));
  app.fallthrough();  // global flags are accepted after the command name too
  app.require_subcommand(0, 1);
  app.footer(
      "Exit codes: 0 ok; 1 failure or failed check; 2 usage error; 3 could not run (no GPU, "
      "no driver); 4 finished, but some results are invalid or were taken while throttled.");

  add_run_command(app, ctx);
  add_detect_command(app, ctx);
  add_bench_command(app, ctx);
  add_compare_command(app, ctx);
  add_import_command(app, ctx);
  add_specs_command(app, ctx);
  add_advise_command(app, ctx);
  add_monitor_command(app, ctx);
  add_model_command(app, ctx);
  add_tune_command(app, ctx);
  add_check_command(app, ctx);

  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    const std::string command = parsed_command(app);
    // No command recognised and a word where one goes: name it and what is close.
    if (app.get_subcommands().empty()) {
      if (const std::optional<std::string> typed = typed_command(argc, argv)) {
        std::vector<std::string> names;
        for (const CLI::App* sub : app.get_subcommands({}))
          names.push_back(sub->get_name());
        print_text(stderr, "gpuvs: unknown command '{}'{} (see gpuvs --help)\n", *typed,
                   did_you_mean(suggest(*typed, names)));
        return static_cast<int>(ExitCode::kUsage);
      }
    }
    fmt::print(stderr, "{}: {} (see {} --help)\n", command, one_line(e.what()), command);
    return static_cast<int>(ExitCode::kUsage);
  }
  if (!completion.empty() && completion != "bash" && completion != "zsh") {
    print_text(stderr, "gpuvs: --completion: '{}' is not bash or zsh\n", completion);
    return static_cast<int>(ExitCode::kUsage);
  }
  if (man || !completion.empty()) {
    fmt::print("{}", man ? render_man(app, version_number()) : render_completion(app, completion));
    return static_cast<int>(ExitCode::kOk);
  }
  if (app.get_subcommands().empty()) {
    print_text(stderr, "{}", app.help());
    return static_cast<int>(ExitCode::kUsage);
  }
  return static_cast<int>(ctx.exit_code);
}

}  // namespace gpuvs::cli
