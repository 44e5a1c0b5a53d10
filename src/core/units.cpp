#include "core/units.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <initializer_list>
#include <limits>
#include <string>

#include "core/error.h"

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
  // strtod, not std::stod: a subnormal value (1e-310) reads back with ERANGE, which
  // std::stod turns into an exception.
  if (scaled != 0)
    scaled = std::strtod(fmt::format("{:.{}e}", scaled, digits - 1).c_str(), nullptr);
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

// ---- Figures read from files -------------------------------------------------------

namespace {

struct QuantityRange {
  std::string_view unit;
  std::string_view what;     // "bandwidth"
  double lo;                 // inclusive
  double hi;                 // inclusive
  std::string_view lo_text;  // "from 1 FLOP/s"
  std::string_view hi_text;
};

// Per unit, from what no measurement can go below (a GEMM at 1 FLOP/s, 1 ns for a
// whole timed region) to orders of magnitude above any GPU's datasheet (an H200
// reads 4.8 TB/s and 3958 TFLOP/s of FP8 with sparsity).
constexpr std::array<QuantityRange, 17> kQuantityRanges = {{
    {"B/s", "bandwidth", 1, 1e16, "0, or from 1 B/s", "10 PB/s"},
    {"FLOP/s", "compute rate", 1, 1e18, "from 1 FLOP/s", "1 EFLOP/s"},
    {"OP/s", "compute rate", 1, 1e18, "from 1 OP/s", "1 EOP/s"},
    {"FLOP/B", "arithmetic intensity", 1e-6, 1e9, "from 1e-6 FLOP/B", "1e9 FLOP/B"},
    {"s", "time", 1e-9, 1e7, "from 1 ns", "1e7 s"},
    {"B", "size", 1, 1e16, "from 1 B", "10 PB"},
    {"Hz", "clock", 1, 1e12, "from 1 Hz", "1 THz"},
    {"W", "power", 1e-3, 1e6, "from 1 mW", "1 MW"},
    {"1", "count", 0, 1e15, "from 0", "1e15"},
    {"img/s", "throughput", 1e-6, 1e15, "from 1e-6 img/s", "1e15 img/s"},
    {"seq/s", "throughput", 1e-6, 1e15, "from 1e-6 seq/s", "1e15 seq/s"},
    {"tokens/s", "throughput", 1e-6, 1e15, "from 1e-6 tokens/s", "1e15 tokens/s"},
    {"launch/s", "launch rate", 1e-6, 1e15, "from 1e-6 launch/s", "1e15 launch/s"},
    {"J/img", "energy per item", 1e-12, 1e9, "from 1 pJ/img", "1 GJ/img"},
    {"J/seq", "energy per item", 1e-12, 1e9, "from 1 pJ/seq", "1 GJ/seq"},
    {"img", "batch", 1, 1e12, "from 1 img", "1e12 img"},  // the largest batch of a model
    {"seq", "batch", 1, 1e12, "from 1 seq", "1e12 seq"},
}};

}  // namespace

std::string quantity_problem(double value, std::string_view unit) {
  if (!std::isfinite(value)) return fmt::format("{} is not a finite number", value);
  for (const QuantityRange& r : kQuantityRanges) {
    if (r.unit != unit) continue;
    if (value >= r.lo && value <= r.hi) return {};
    // nccl-tests prints bus bandwidth in GB/s with two decimals: a small message's
    // figure reads 0.00, recorded as a measured 0.
    if (value == 0 && unit == "B/s") return {};
    return fmt::format("{:g} is not a possible {} ({}): {} to {}", value, r.what, unit, r.lo_text,
                       r.hi_text);
  }
  return {};
}

// ---- Numbers typed by a user --------------------------------------------------------

namespace {

// A suffix or unit and the exact integer it multiplies by: 10^p10 · 2^p2.
struct Suffix {
  std::string_view text;
  int p10;
  int p2;
};

constexpr std::array<Suffix, 7> kCountSuffixes = {
    {{"", 0, 0}, {"k", 3, 0}, {"K", 3, 0}, {"M", 6, 0}, {"G", 9, 0}, {"T", 12, 0}, {"P", 15, 0}}};
constexpr Suffix kBillion = {"B", 9, 0};
constexpr std::array<Suffix, 11> kByteSuffixes = {{{"", 0, 0},
                                                   {"B", 0, 0},
                                                   {"kB", 3, 0},
                                                   {"KB", 3, 0},
                                                   {"MB", 6, 0},
                                                   {"GB", 9, 0},
                                                   {"TB", 12, 0},
                                                   {"KiB", 0, 10},
                                                   {"MiB", 0, 20},
                                                   {"GiB", 0, 30},
                                                   {"TiB", 0, 40}}};
// nccl-tests' letters (its -b/-e take K, M, G in either case), and the IEC prefixes
// without the B.
constexpr std::array<Suffix, 12> kBinaryLetters = {{{"K", 0, 10},
                                                    {"k", 0, 10},
                                                    {"M", 0, 20},
                                                    {"m", 0, 20},
                                                    {"G", 0, 30},
                                                    {"g", 0, 30},
                                                    {"T", 0, 40},
                                                    {"t", 0, 40},
                                                    {"Ki", 0, 10},
                                                    {"Mi", 0, 20},
                                                    {"Gi", 0, 30},
                                                    {"Ti", 0, 40}}};
constexpr std::array<Suffix, 7> kRateSuffixes = {{{"B/s", 0, 0},
                                                  {"kB/s", 3, 0},
                                                  {"KB/s", 3, 0},
                                                  {"MB/s", 6, 0},
                                                  {"GB/s", 9, 0},
                                                  {"TB/s", 12, 0},
                                                  {"PB/s", 15, 0}}};

bool is_space(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
}

bool is_digit(char c) {
  return c >= '0' && c <= '9';
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && is_space(s.front()))
    s.remove_prefix(1);
  while (!s.empty() && is_space(s.back()))
    s.remove_suffix(1);
  return s;
}

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out)
    c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

bool ends_with(std::string_view s, std::string_view end) {
  return s.size() >= end.size() && s.substr(s.size() - end.size()) == end;
}

// The number at the start of a text: value = digits · 10^exp10, digits without leading
// or trailing zeros (empty for 0).
struct Scanned {
  bool negative = false;
  std::string digits;
  long exp10 = 0;
  std::string_view rest;  // what follows the number, spaces and tabs skipped
};

std::optional<Scanned> scan(std::string_view s) {
  Scanned out;
  size_t i = 0;
  if (i < s.size() && (s[i] == '+' || s[i] == '-')) out.negative = s[i++] == '-';
  bool any_digit = false;
  bool point = false;
  long fraction_digits = 0;
  for (; i < s.size(); ++i) {
    const char c = s[i];
    if (is_digit(c)) {
      any_digit = true;
      if (!out.digits.empty() || c != '0') out.digits += c;
      if (point) ++fraction_digits;
    } else if (c == '.' && !point) {
      point = true;
    } else {
      break;
    }
  }
  if (!any_digit) return std::nullopt;
  long exponent = 0;
  if (i < s.size() && (s[i] == 'e' || s[i] == 'E')) {
    size_t j = i + 1;
    bool negative_exponent = false;
    if (j < s.size() && (s[j] == '+' || s[j] == '-')) negative_exponent = s[j++] == '-';
    if (j < s.size() && is_digit(s[j])) {
      // Clamped: 1e99999999 is too large either way, and must not overflow a long.
      for (; j < s.size() && is_digit(s[j]); ++j)
        if (exponent < 1000000) exponent = exponent * 10 + (s[j] - '0');
      if (negative_exponent) exponent = -exponent;
      i = j;
    }
  }
  out.exp10 = exponent - fraction_digits;
  while (!out.digits.empty() && out.digits.back() == '0') {
    out.digits.pop_back();
    ++out.exp10;
  }
  if (out.digits.empty()) out.exp10 = 0;
  size_t k = i;
  while (k < s.size() && (s[k] == ' ' || s[k] == '\t'))
    ++k;
  out.rest = s.substr(k);
  return out;
}

template <size_t N>
const Suffix* find_suffix(const std::array<Suffix, N>& table, std::string_view text) {
  for (const Suffix& s : table)
    if (s.text == text) return &s;
  return nullptr;
}

const Suffix* match_suffix(std::string_view text, const NumberRules& rules) {
  switch (rules.kind()) {
    case NumberKind::kPlain:
      return text.empty() ? &kCountSuffixes[0] : nullptr;
    case NumberKind::kCount:
      if (rules.b_is_billion() && text == kBillion.text) return &kBillion;
      return find_suffix(kCountSuffixes, text);
    case NumberKind::kBytes:
      if (rules.binary_letters())
        if (const Suffix* s = find_suffix(kBinaryLetters, text)) return s;
      return find_suffix(kByteSuffixes, text);
    case NumberKind::kRate:
      return find_suffix(kRateSuffixes, text);
  }
  return nullptr;
}

// Why an unknown unit might have been typed, for the message: a suffix in the wrong
// case, bits for bytes, a bare letter where bytes need their B.
std::string unit_hint(std::string_view unit, const NumberRules& rules) {
  if (rules.kind() == NumberKind::kRate &&
      (ends_with(unit, "b/s") || ends_with(unit, "bit/s") || ends_with(unit, "bps")))
    return " (bits; give bytes per second: 400 Gb/s = 50GB/s)";
  if (rules.kind() == NumberKind::kBytes && !rules.binary_letters() && unit.size() == 1) {
    // A bare letter is ambiguous for bytes here: say both readings.
    static constexpr std::string_view kLetters = "kMGT";
    const size_t i = kLetters.find(unit[0] == 'K' ? 'k' : unit[0]);
    if (i != std::string_view::npos) {
      const char letter = kLetters[i];
      const char upper = static_cast<char>(std::toupper(static_cast<unsigned char>(letter)));
      return fmt::format(" ({}B is 10^{} bytes, {}iB 2^{})", letter, 3 * (i + 1), upper,
                         10 * (i + 1));
    }
  }
  const std::string want = lower(unit);
  const auto check = [&](std::string_view known) { return !known.empty() && lower(known) == want; };
  std::string_view near;
  const auto scan_table = [&](const auto& table) {
    for (const Suffix& s : table)
      if (near.empty() && check(s.text)) near = s.text;
  };
  switch (rules.kind()) {
    case NumberKind::kPlain:
      break;
    case NumberKind::kCount:
      if (rules.b_is_billion() && check(kBillion.text)) near = kBillion.text;
      scan_table(kCountSuffixes);
      break;
    case NumberKind::kBytes:
      if (rules.binary_letters()) scan_table(kBinaryLetters);
      scan_table(kByteSuffixes);
      break;
    case NumberKind::kRate:
      scan_table(kRateSuffixes);
      break;
  }
  if (!near.empty()) return fmt::format(" (did you mean {}?)", near);
  return "";
}

// A bound as people read it: 1073741824, 1e30, 1.8e308.
std::string readable(double v) {
  if (v == std::floor(v) && std::fabs(v) < 1e16) return fmt::format("{:.0f}", v);
  std::string s = fmt::format("{:.3g}", v);
  const size_t e = s.find('e');
  if (e != std::string::npos) {
    std::string mantissa = s.substr(0, e);
    std::string exponent = s.substr(e + 1);
    if (!exponent.empty() && exponent[0] == '+') exponent.erase(0, 1);
    while (exponent.size() > 1 && exponent[0] == '0')
      exponent.erase(0, 1);
    s = mantissa + "e" + exponent;
  }
  return s;
}

// digits · 10^e10 · 2^p2 exactly, when it is a whole number of at most `limit`.
enum class Exact { kOk, kFraction, kTooLarge };

__extension__ using Uint128 = unsigned __int128;

Exact exact_integer(const std::string& digits, long e10, int p2, uint64_t limit, int64_t& out) {
  out = 0;
  if (digits.empty()) return Exact::kOk;
  // value = d · 2^twos · 5^fives
  const long fives = e10;
  const long twos = e10 + p2;
  // 38 digits fill 128 bits. A longer whole number is too large; a longer fraction
  // is a fraction (a binary suffix could make one of 39+ digits whole, say
  // 0.000...0625TiB: no one types that).
  if (digits.size() > 38) return fives >= 0 ? Exact::kTooLarge : Exact::kFraction;
  Uint128 d = 0;
  for (char c : digits)
    d = d * 10 + static_cast<unsigned>(c - '0');
  for (long k = 0; k < -fives; ++k) {
    if (d % 5 != 0) return Exact::kFraction;
    d /= 5;
  }
  for (long k = 0; k < -twos; ++k) {
    if (d % 2 != 0) return Exact::kFraction;
    d /= 2;
  }
  if (d > limit) return Exact::kTooLarge;
  for (long k = 0; k < twos; ++k) {
    d *= 2;
    if (d > limit) return Exact::kTooLarge;
  }
  for (long k = 0; k < fives; ++k) {
    d *= 5;
    if (d > limit) return Exact::kTooLarge;
  }
  out = static_cast<int64_t>(d);
  return Exact::kOk;
}

// Control characters as \xNN, so that a message stays one line.
std::string escaped(std::string_view text) {
  std::string out;
  for (char c : text) {
    const auto u = static_cast<unsigned char>(c);
    if (u < 0x20 || u == 0x7f)
      out += fmt::format("\\x{:02x}", u);
    else
      out += c;
  }
  return out;
}

std::string join_suffixes(std::initializer_list<std::string_view> items) {
  std::string out;
  for (std::string_view s : items)
    out += fmt::format("{}{}", out.empty() ? "" : ", ", s);
  return out;
}

}  // namespace

std::string NumberRules::describe() const {
  std::string what;
  switch (kind_) {
    case NumberKind::kPlain:
      what = "a number without a unit";
      break;
    case NumberKind::kCount:
      what = fmt::format("a number with a suffix {}",
                         billions_ ? "k, M, B or G, T, P" : "k, M, G, T, P");
      if (!unit_.empty()) what += fmt::format(" and an optional {} or {}s", unit_, unit_);
      break;
    case NumberKind::kBytes:
      what = bare_binary_ ? "a size in bytes with a suffix K, M, G, T or KiB, MiB, GiB, TiB "
                            "(1024^n), or kB, MB, GB, TB (1000^n)"
                          : "a size in bytes with a suffix B, kB, MB, GB, TB (1000^n) or KiB, MiB, "
                            "GiB, TiB (1024^n)";
      break;
    case NumberKind::kRate:
      what = "a bandwidth in " + join_suffixes({"B/s", "kB/s", "MB/s", "GB/s", "TB/s", "PB/s"});
      break;
  }
  if (!examples_.empty()) what += fmt::format(" (e.g. {})", examples_);
  return what;
}

ParsedNumber parse_number(std::string_view text, const NumberRules& rules) {
  ParsedNumber out;
  const auto fail = [&](std::string why) {
    out.error = std::move(why);
    return out;
  };
  const std::string_view s = trim(text);
  if (s.empty()) return fail("empty: give " + rules.describe());
  {
    std::string_view unsigned_text = s;
    if (unsigned_text[0] == '+' || unsigned_text[0] == '-') unsigned_text.remove_prefix(1);
    const std::string l = lower(unsigned_text.substr(0, 3));
    if (l == "inf" || l == "nan") return fail("not a finite number: give " + rules.describe());
  }
  const std::optional<Scanned> number = scan(s);
  if (!number) return fail("not " + rules.describe());

  std::string_view rest = number->rest;
  if (rules.kind() == NumberKind::kCount && !rules.unit_name().empty()) {
    const std::string plural = std::string(rules.unit_name()) + "s";
    if (ends_with(rest, plural))
      rest.remove_suffix(plural.size());
    else if (ends_with(rest, rules.unit_name()))
      rest.remove_suffix(rules.unit_name().size());
    rest = trim(rest);
  }
  if (rules.kind() == NumberKind::kRate && rest.empty())
    return fail("no unit: give " + rules.describe());
  const Suffix* suffix = match_suffix(rest, rules);
  if (suffix == nullptr)
    return fail(fmt::format("unknown unit '{}'{}: give {}", escaped(rest), unit_hint(rest, rules),
                            rules.describe()));

  const bool zero = number->digits.empty();
  if (number->negative && !zero)
    return fail(rules.allows_zero() ? "must not be negative" : "must be positive");
  if (zero) {
    if (!rules.allows_zero()) return fail("must be positive");
    return out;
  }

  constexpr uint64_t kInt64Max = static_cast<uint64_t>(std::numeric_limits<int64_t>::max());
  if (rules.needs_whole()) {
    uint64_t limit = kInt64Max;
    if (rules.max() && *rules.max() < 9.2e18)
      limit = static_cast<uint64_t>(std::floor(std::max(0.0, *rules.max())));
    const Exact e =
        exact_integer(number->digits, number->exp10 + suffix->p10, suffix->p2, limit, out.integer);
    if (e == Exact::kTooLarge)
      return fail("too large: at most " + readable(static_cast<double>(limit)));
    if (e == Exact::kFraction) {
      if (suffix->p10 == 0 && suffix->p2 == 0) return fail("not a whole number");
      const std::string exact = number->digits + "e" + std::to_string(number->exp10 + suffix->p10);
      double v = 0;
      std::from_chars(exact.data(), exact.data() + exact.size(), v);
      return fail(
          fmt::format("not a whole number ({} is {})", shown_text(s), std::ldexp(v, suffix->p2)));
    }
    out.value = static_cast<double>(out.integer);
    if (rules.min() && out.value < *rules.min())
      return fail("too small: at least " + readable(*rules.min()));
    return out;
  }

  const double limit = rules.max().value_or(std::numeric_limits<double>::max());
  const std::string exact = number->digits + "e" + std::to_string(number->exp10 + suffix->p10);
  double v = 0;
  const auto [end, ec] = std::from_chars(exact.data(), exact.data() + exact.size(), v);
  (void)end;
  if (ec == std::errc::result_out_of_range) {
    // Too many digits before the point or too few: which one the exponent says.
    const long magnitude = number->exp10 + suffix->p10 + static_cast<long>(number->digits.size());
    if (magnitude > 0) return fail("too large: at most " + readable(limit));
    return fail("too small to tell from 0");
  }
  if (v == 0) return fail("too small to tell from 0");
  v = std::ldexp(v, suffix->p2);
  if (!std::isfinite(v) || v > limit) return fail("too large: at most " + readable(limit));
  if (rules.min() && v < *rules.min()) return fail("too small: at least " + readable(*rules.min()));
  out.value = v;
  return out;
}

ParsedNumber option_number(std::string_view option, std::string_view text,
                           const NumberRules& rules) {
  ParsedNumber n = parse_number(text, rules);
  if (!n.ok()) throw UsageError(fmt::format("{} {}: {}", option, shown_text(text), n.error));
  return n;
}

std::string shown_text(std::string_view text) {
  const bool quote = text.empty() || std::any_of(text.begin(), text.end(), [](char c) {
                       return is_space(c) || static_cast<unsigned char>(c) < 0x20;
                     });
  return quote ? "'" + escaped(text) + "'" : escaped(text);
}

}  // namespace gpuvs
