// Options whose value is a number or a file name, declared the one way every command
// declares them. A number is read by core/units' option_number under the rules
// stated where the option is declared (its kind, whole or not, its bounds), as the
// command line is parsed: NaN, infinities, negative, huge, malformed and out-of-range
// values are one-line usage errors (exit 2) naming the option and the bound, before
// any command runs or touches a GPU.
#pragma once

#include <CLI/CLI.hpp>

#include <optional>
#include <string>

#include "core/units.h"

namespace gpuvs::cli {

CLI::Option* add_number_option(CLI::App* app, const std::string& name, double& value,
                               const NumberRules& rules, const std::string& help);
CLI::Option* add_number_option(CLI::App* app, const std::string& name, std::optional<double>& value,
                               const NumberRules& rules, const std::string& help);
// A whole number that fits an int: the rules are made whole() and capped at INT_MAX.
CLI::Option* add_number_option(CLI::App* app, const std::string& name, int& value,
                               const NumberRules& rules, const std::string& help);

// The session's --monitor-interval (run, bench, model): milliseconds, 0 for off, at
// most an hour.
NumberRules monitor_interval_rules();

// A file or directory name. Empty, or starting with '-' (the next option, or the
// `--` before a command, taken as the name: `monitor --prometheus -- CMD`), it is a
// usage error; a file that really starts with '-' is given as ./-name.
CLI::Option* add_path_option(CLI::App* app, const std::string& name, std::string& value,
                             const std::string& help);

}  // namespace gpuvs::cli
