// The manual page and the shell completions, generated from the command line's own
// definition (every command, option and description CLI11 holds), so that they never
// drift from `--help`: `gpuvs --man` prints gpuvs.1 (roff, man(7) macros) and
// `gpuvs --completion bash|zsh` a completion script. The build writes all three and
// installs them (src/CMakeLists.txt); the package carries them.
#pragma once

#include <CLI/CLI.hpp>

#include <string>
#include <string_view>

namespace gpuvs::cli {

// gpuvs.1: NAME, SYNOPSIS, DESCRIPTION, OPTIONS (the global ones), COMMANDS (each with
// its options and its own commands, depth first), EXIT STATUS (the footer), FILES and
// SEE ALSO. `version` goes into the title line. Options in the group "" (hidden) are
// left out.
std::string render_man(const CLI::App& app, std::string_view version);

// A completion script for "bash" or "zsh": the commands where a command goes, and
// after a command (and its subcommand) that command's options and subcommands, each
// with its description where the shell shows them (zsh). Throws std::invalid_argument
// for another shell.
std::string render_completion(const CLI::App& app, std::string_view shell);

}  // namespace gpuvs::cli
