#include "cli/options.h"

#include <fmt/format.h>

#include <limits>

#include "core/error.h"
#include "core/units.h"

namespace gpuvs::cli {

namespace {

// CLI11 calls these once per occurrence, as the command line is parsed; what they
// throw ends the parse and reaches main as one line.
template <typename Store>
CLI::Option* add_read(CLI::App* app, const std::string& name, const NumberRules& rules,
                      const std::string& help, Store store) {
  return app
      ->add_option_function<std::string>(
          name,
          [name, rules, store](const std::string& text) {
            store(option_number(name, text, rules));
          },
          help)
      ->type_name(rules.needs_whole() ? "INT" : "NUMBER");
}

}  // namespace

CLI::Option* add_number_option(CLI::App* app, const std::string& name, double& value,
                               const NumberRules& rules, const std::string& help) {
  return add_read(app, name, rules, help, [&value](const ParsedNumber& n) { value = n.value; });
}

CLI::Option* add_number_option(CLI::App* app, const std::string& name, std::optional<double>& value,
                               const NumberRules& rules, const std::string& help) {
  return add_read(app, name, rules, help, [&value](const ParsedNumber& n) { value = n.value; });
}

CLI::Option* add_number_option(CLI::App* app, const std::string& name, int& value,
                               const NumberRules& rules, const std::string& help) {
  constexpr double kIntMax = std::numeric_limits<int>::max();
  const NumberRules whole =
      rules.whole().at_most(rules.max() && *rules.max() < kIntMax ? *rules.max() : kIntMax);
  return add_read(app, name, whole, help,
                  [&value](const ParsedNumber& n) { value = static_cast<int>(n.integer); });
}

NumberRules monitor_interval_rules() {
  return NumberRules::count().whole().or_zero().at_most(3600 * 1000).eg("100, or 0 for off");
}

CLI::Option* add_path_option(CLI::App* app, const std::string& name, std::string& value,
                             const std::string& help) {
  return app
      ->add_option_function<std::string>(
          name,
          [name, &value](const std::string& text) {
            if (text.empty()) throw UsageError(fmt::format("{}: empty file name", name));
            if (text[0] == '-')
              throw UsageError(fmt::format(
                  "{} {}: not a file name (a file named so is given as ./{}); the file name "
                  "comes right after {}",
                  name, shown_text(text), shown_text(text), name));
            value = text;
          },
          help)
      ->type_name("PATH");
}

}  // namespace gpuvs::cli
