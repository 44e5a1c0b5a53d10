#include "core/units.h"

#include <fmt/format.h>

#include <array>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <string>

namespace gpuvs {

namespace {

struct Prefix {
  double scale;
  const char* symbol;
};

// Seconds read best with sub-unit prefixes; throughputs with large ones.
constexpr std::array<Prefix, 9> kPrefixes = {{{1e15, "P"},
                                              {1e12, "T"},
                                              {1e9, "G"},
                                              {1e6, "M"},
                                              {1e3, "k"},
                                              {1, ""},
                                              {1e-3, "m"},
                                              {1e-6, "µ"},
                                              {1e-9, "n"}}};

std::string with_digits(double scaled, int digits) {
  // Significant digits, never scientific notation: 4.31, 43.1, 431. Round first so
  // that 0.99996 is shown as 1.00, not 1.000.
  // Integer parts are never rounded away: 3958, not 3960.
  if (std::fabs(scaled) >= std::pow(10.0, digits - 1)) return fmt::format("{:.0f}", scaled);
  if (scaled != 0) scaled = std::stod(fmt::format("{:.{}e}", scaled, digits - 1));
  const double mag = scaled == 0 ? 0 : std::floor(std::log10(std::fabs(scaled)));
  const int decimals = std::max(0, digits - 1 - static_cast<int>(mag));
  return fmt::format("{:.{}f}", scaled, decimals);
}

}  // namespace

std::string format_si(double value, std::string_view unit, int digits) {
  if (!std::isfinite(value)) return fmt::format("{} {}", value, unit);
  if (unit == "1" || unit.empty()) return with_digits(value, digits);
  if (unit == "%") return with_digits(value, digits) + " %";
  // Prefixes only for SI units; counts of things ("img/s", "seq/s") read best as
  // plain numbers (4723 img/s, not 4.72 kimg/s). Arithmetic rates stop at tera, as
  // datasheets write them (1979 TFLOP/s, 3958 TOP/s).
  const bool si = unit == "B" || unit == "B/s" || unit == "FLOP/s" || unit == "OP/s" ||
                  unit == "Hz" || unit == "W" || unit == "s" || unit == "FLOP/B";
  if (!si || unit == "FLOP/B") return fmt::format("{} {}", with_digits(value, digits), unit);
  const bool cap_at_tera = unit == "FLOP/s" || unit == "OP/s";
  const double mag = std::fabs(value);
  const Prefix* chosen = &kPrefixes[5];
  if (mag != 0) {
    for (const Prefix& p : kPrefixes) {
      if (cap_at_tera && p.scale > 1e12) continue;
      if (mag >= p.scale * 0.9995) {
        chosen = &p;
        break;
      }
    }
  }
  // Units with a leading letter that is itself a prefix-able quantity: "B/s" -> "TB/s",
  // "FLOP/s" -> "TFLOP/s", "s" -> "µs". Sub-unit prefixes only make sense for time.
  if (chosen->scale < 1 && unit != "s") chosen = &kPrefixes[5];
  return fmt::format("{} {}{}", with_digits(value / chosen->scale, digits), chosen->symbol, unit);
}

std::string format_bytes_binary(int64_t bytes) {
  static constexpr std::array<const char*, 5> kUnits = {"B", "KiB", "MiB", "GiB", "TiB"};
  double v = static_cast<double>(bytes);
  size_t u = 0;
  while (std::fabs(v) >= 1024 && u + 1 < kUnits.size()) {
    v /= 1024;
    ++u;
  }
  if (u == 0 || v == std::floor(v)) return fmt::format("{} {}", static_cast<int64_t>(v), kUnits[u]);
  return fmt::format("{:.3g} {}", v, kUnits[u]);
}

int64_t parse_size(std::string_view text) {
  std::string s(text);
  if (s.empty()) return -1;
  char* end = nullptr;
  const double number = std::strtod(s.c_str(), &end);
  if (end == s.c_str() || !std::isfinite(number) || number < 0) return -1;
  std::string suffix(end);
  while (!suffix.empty() && std::isspace(static_cast<unsigned char>(suffix.front())))
    suffix.erase(0, 1);
  double scale = 1;
  if (suffix.empty() || suffix == "B") {
    scale = 1;
  } else {
    static constexpr std::array<std::pair<const char*, double>, 9> kSuffixes = {{
        {"KiB", 1024.0},
        {"MiB", 1024.0 * 1024},
        {"GiB", 1024.0 * 1024 * 1024},
        {"TiB", 1024.0 * 1024 * 1024 * 1024},
        {"kB", 1e3},
        {"KB", 1e3},
        {"MB", 1e6},
        {"GB", 1e9},
        {"TB", 1e12},
    }};
    bool found = false;
    for (const auto& [name, factor] : kSuffixes) {
      if (suffix == name) {
        scale = factor;
        found = true;
        break;
      }
    }
    if (!found) return -1;
  }
  const double bytes = number * scale;
  if (bytes > 9.0e18 || bytes != std::floor(bytes)) return -1;
  return static_cast<int64_t>(bytes);
}

}  // namespace gpuvs
