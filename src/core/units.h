// Formatting of values in base SI units for people: decimal prefixes only
// (GB/s = 1e9 B/s, TFLOP/s = 1e12 FLOP/s), the house rule for every rate. Byte
// *sizes* of buffers are shown in binary units (MiB, GiB) since that is how they are
// allocated; the two are never mixed in one figure.
//
// And the one parser of numbers typed by a user (counts, byte sizes, rates, plain
// numbers), which every command-line option that takes a number goes through.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace gpuvs {

// "4.31 TB/s", "785 TFLOP/s", "15.2 µs", "55.5 GB/s". `digits` significant digits.
std::string format_si(double value, std::string_view unit, int digits = 3);

// "4 GiB", "1.5 MiB", "512 B".
std::string format_bytes_binary(int64_t bytes);

// ---- Figures read from files -------------------------------------------------------
//
// The values a figure in `unit` can take, so that a file's impossible value (a
// negative bandwidth, a 1e-300 FLOP/s GEMM, 1e-320 TB/s in a catalogue) is refused
// where it is read rather than shown or used as a figure. Bounds are wide (a few
// orders of magnitude beyond any GPU, down to what no measurement can give) so that
// only values that cannot be true fall outside them; a unit not in the table (a
// hand-written one) needs a finite value only. Returns the problem, one line, or ""
// when the value is possible: "-4.28e+12 is not a possible bandwidth (B/s): 0, or
// from 1 B/s to 10 PB/s".
std::string quantity_problem(double value, std::string_view unit);

// ---- Numbers typed by a user --------------------------------------------------------
//
// A number is an optional sign, digits with an optional decimal point, an optional
// exponent (1.5e9), then, after optional spaces, a suffix or unit of its kind. The
// suffixes are exact integers (10^k or 2^k), so "1.1k" is exactly 1100 and whole; no
// hexadecimal, no octal ("010" is ten), no digit separators. Spaces around the text
// are ignored. Suffixes are case-sensitive except where a kind says otherwise.
enum class NumberKind {
  kPlain,  // no suffix: 0.4, 30, 1e-3
  kCount,  // decimal: k or K 10^3, M 10^6, G 10^9, T 10^12, P 10^15 (4k, 2T, 1.5e9)
  kBytes,  // B; kB or KB, MB, GB, TB = 10^3 .. 10^12; KiB, MiB, GiB, TiB = 2^10 .. 2^40
  kRate,   // bytes per second, a unit required: B/s, kB/s or KB/s, MB/s, GB/s, TB/s, PB/s
};

// What a caller parses, stated where it parses it:
//   NumberRules::count().whole().at_most(1 << 30).eg("4k, 128k")
class NumberRules {
 public:
  static NumberRules plain() { return NumberRules(NumberKind::kPlain); }
  static NumberRules count() { return NumberRules(NumberKind::kCount); }
  static NumberRules bytes() { return NumberRules(NumberKind::kBytes); }
  static NumberRules rate() { return NumberRules(NumberKind::kRate); }

  // A whole number is needed: 16M and 1.5k are, 2.5 is not. The exact value is then
  // ParsedNumber::integer, at most 2^63 - 1.
  NumberRules whole() const {
    NumberRules r = *this;
    r.whole_ = true;
    return r;
  }
  // 0 is allowed; otherwise the value must be above 0. Negative values never are.
  NumberRules or_zero() const {
    NumberRules r = *this;
    r.zero_ = true;
    return r;
  }
  // The largest value allowed (inclusive). Without it: what fits (2^63 - 1 for a
  // whole number, the largest finite double otherwise).
  NumberRules at_most(double max) const {
    NumberRules r = *this;
    r.max_ = max;
    return r;
  }
  // The smallest value allowed (inclusive), above 0; a smaller one is refused with
  // the bound ("too small: at least 1000000"). 0 stays governed by or_zero().
  NumberRules at_least(double min) const {
    NumberRules r = *this;
    r.min_ = min;
    return r;
  }
  // Counts: B is 10^9 as well as G, as model sizes and token counts are written
  // (7B parameters, 300B tokens).
  NumberRules billions() const {
    NumberRules r = *this;
    r.billions_ = true;
    return r;
  }
  // Bytes: K, M, G, T alone (either case) and Ki, Mi, Gi, Ti are binary, as nccl-tests'
  // -b 8 -e 4G; the spellings with B keep their meaning (2GB = 2·10^9, 4GiB = 2^32).
  NumberRules bare_binary() const {
    NumberRules r = *this;
    r.bare_binary_ = true;
    return r;
  }
  // Counts: a unit the text may end with, singular or with "s": "FLOP" takes 8.2G,
  // 8.2GFLOP and 8.2 GFLOPs. Not copied: pass a literal.
  NumberRules unit(std::string_view unit) const {
    NumberRules r = *this;
    r.unit_ = unit;
    return r;
  }
  // Examples for the message of a text that is not such a number: "4k, 128k". Not
  // copied: pass a literal.
  NumberRules eg(std::string_view examples) const {
    NumberRules r = *this;
    r.examples_ = examples;
    return r;
  }

  NumberKind kind() const { return kind_; }
  bool needs_whole() const { return whole_; }
  bool allows_zero() const { return zero_; }
  std::optional<double> max() const { return max_; }
  std::optional<double> min() const { return min_; }
  bool b_is_billion() const { return billions_; }
  bool binary_letters() const { return bare_binary_; }
  std::string_view unit_name() const { return unit_; }
  std::string_view examples() const { return examples_; }

  // "a number with a suffix k, M, G, T, P (e.g. 4k, 128k)": what the text should be.
  std::string describe() const;

 private:
  explicit NumberRules(NumberKind kind) : kind_(kind) {}

  NumberKind kind_;
  bool whole_ = false;
  bool zero_ = false;
  std::optional<double> max_;
  std::optional<double> min_;
  bool billions_ = false;
  bool bare_binary_ = false;
  std::string_view unit_;
  std::string_view examples_;
};

struct ParsedNumber {
  double value = 0;     // in base units: things, bytes, B/s
  int64_t integer = 0;  // the value exactly, when the rules need a whole number
  std::string error;    // why the text is not such a number, one line; empty when it is

  bool ok() const { return error.empty(); }
};

// The value of `text` under `rules`, or the reason it has none: empty, not a number,
// an unknown unit, not finite, negative, 0 where not allowed, a fraction where a whole
// number is needed, too large or too small (the bound given readably: "at most
// 1073741824", "at least 0.001").
ParsedNumber parse_number(std::string_view text, const NumberRules& rules);

// parse_number for a command-line option: the value, or a UsageError (exit 2) naming
// the option and the text, one line: "--context 4kk: unknown unit 'kk': give a number
// with a suffix k, M, G, T, P (e.g. 4k, 128k)".
ParsedNumber option_number(std::string_view option, std::string_view text,
                           const NumberRules& rules);

// `text` as an error message shows it: quoted when empty or spaced, control
// characters escaped, so that the message stays one line.
std::string shown_text(std::string_view text);

}  // namespace gpuvs
