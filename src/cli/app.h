// The command line: CLI11 wiring shared by the commands. Commands are thin: parse,
// call the layers below, print. Errors travel as gpuvs::Error to main, which turns
// them into the exit codes of docs/design.md.
#pragma once

#include <CLI/CLI.hpp>

#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/run_file.h"
#include "measure/progress.h"

namespace gpuvs::cli {

struct GlobalOptions {
  bool json = false;    // machine output on stdout, nothing else there
  std::string out_dir;  // where files go; empty: the command's default
  bool quiet = false;   // no progress on stderr (whatever --progress says)
  // --progress: auto (live on a terminal, plain lines otherwise), plain or off.
  // Independent of --json: progress is on stderr, the JSON alone on stdout.
  std::string progress = "auto";
  std::vector<std::string> argv;
};

struct CliContext {
  GlobalOptions global;
  ExitCode exit_code = ExitCode::kOk;
};

// The progress mode the options ask for: off with --quiet or --progress off; plain
// with --progress plain; auto: live when stderr is a terminal whose TERM is not
// "dumb", plain otherwise (a pipe, a file, a batch job's log).
ProgressMode progress_mode(const GlobalOptions& options);

// The progress of a long command on stderr (measure/progress.h: begin, step, detail,
// fail, done), in progress_mode(options), on the steady clock, ticking every 0.2 s;
// live lines are cut to the terminal's width.
std::unique_ptr<Progress> make_progress(const GlobalOptions& options);

Meta make_meta(const std::string& command, const std::vector<std::string>& argv);
std::string version_line();    // "gpuvs 0.1.0 (git 0123456789ab)"
std::string version_number();  // "0.1.0"

// "<out>/<command>-<UTC stamp>-<host>.json", "...-<host>-rank<R>.json" for one rank of
// several that each write their own; creates the directory.
std::filesystem::path run_file_path(const GlobalOptions& options, const std::string& command,
                                    const Meta& meta, std::optional<int> rank = std::nullopt);

// Parse a GPU list "0,1" (empty: all of `count`). Bad or out-of-range: UsageError.
std::vector<int> parse_gpu_list(const std::string& text, int count);
// The same list's form alone, before any GPU is counted: UsageError when malformed.
void check_gpu_list(const std::string& text);

// Builds the app, parses, runs the chosen command; returns the exit code.
int run_cli(int argc, char** argv);

// Command registration, one per file.
void add_detect_command(CLI::App& app, CliContext& ctx);
void add_run_command(CLI::App& app, CliContext& ctx);
void add_bench_command(CLI::App& app, CliContext& ctx);
void add_specs_command(CLI::App& app, CliContext& ctx);
void add_compare_command(CLI::App& app, CliContext& ctx);
void add_advise_command(CLI::App& app, CliContext& ctx);
void add_monitor_command(CLI::App& app, CliContext& ctx);
void add_model_command(CLI::App& app, CliContext& ctx);
void add_tune_command(CLI::App& app, CliContext& ctx);
void add_check_command(CLI::App& app, CliContext& ctx);
void add_import_command(CLI::App& app, CliContext& ctx);

}  // namespace gpuvs::cli
