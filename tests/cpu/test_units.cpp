// Decimal SI formatting of figures, and the one parser of numbers typed by a user:
// counts, byte sizes, rates and plain numbers, with every rule and every refusal.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>

#include "core/error.h"
#include "core/units.h"

namespace gpuvs {
namespace {

TEST(Units, FormatsDecimalPrefixes) {
  EXPECT_EQ(format_si(4.31e12, "B/s"), "4.31 TB/s");
  EXPECT_EQ(format_si(55.5e9, "B/s"), "55.5 GB/s");
  EXPECT_EQ(format_si(785e12, "FLOP/s"), "785 TFLOP/s");
  EXPECT_EQ(format_si(1.426e15, "FLOP/s", 4), "1426 TFLOP/s");  // datasheets stop at tera
  EXPECT_EQ(format_si(3.958e15, "OP/s"), "3958 TOP/s");
  EXPECT_EQ(format_si(15.2e-6, "s"), "15.2 µs");
  EXPECT_EQ(format_si(2.0, "s"), "2.00 s");
  EXPECT_EQ(format_si(0, "B/s"), "0.00 B/s");
  // Sub-unit prefixes are only for time: a tiny bandwidth stays in B/s.
  EXPECT_EQ(format_si(0.5, "B/s"), "0.500 B/s");
  EXPECT_EQ(format_si(4723, "img/s"), "4723 img/s");  // counts of things: no prefix
  EXPECT_EQ(format_si(9163.69, "seq/s"), "9164 seq/s");
  EXPECT_EQ(format_si(32.5, "seq/s"), "32.5 seq/s");
  EXPECT_EQ(format_si(206.3, "FLOP/B"), "206 FLOP/B");
}

TEST(Units, RoundingAtPrefixBoundary) {
  EXPECT_EQ(format_si(999.96e9, "B/s"), "1.00 TB/s");
}

TEST(Units, BinarySizes) {
  EXPECT_EQ(format_bytes_binary(512), "512 B");
  EXPECT_EQ(format_bytes_binary(int64_t{4} << 30), "4 GiB");
  EXPECT_EQ(format_bytes_binary(int64_t{3} << 19), "1.5 MiB");
}

// What parse_size took before the one parser: byte sizes spelled with their unit, the
// rules of --overhead; -1 when refused.
int64_t parse_size(std::string_view text) {
  const ParsedNumber n = parse_number(text, NumberRules::bytes().whole().or_zero());
  return n.ok() ? n.integer : -1;
}

TEST(Units, ParsesSizes) {
  EXPECT_EQ(parse_size("4096"), 4096);
  EXPECT_EQ(parse_size("4GiB"), int64_t{4} << 30);
  EXPECT_EQ(parse_size("512 MiB"), int64_t{512} << 20);
  EXPECT_EQ(parse_size("2GB"), 2000000000);
  EXPECT_EQ(parse_size("1e9"), 1000000000);
  EXPECT_EQ(parse_size("1.5KiB"), 1536);
  EXPECT_EQ(parse_size(""), -1);
  EXPECT_EQ(parse_size("abc"), -1);
  EXPECT_EQ(parse_size("-4GiB"), -1);
  EXPECT_EQ(parse_size("4 parsecs"), -1);
  EXPECT_EQ(parse_size("0.3B"), -1);
  EXPECT_EQ(parse_size("1e30"), -1);
}

// ---- parse_number ----------------------------------------------------------------

double value(std::string_view text, const NumberRules& rules) {
  const ParsedNumber n = parse_number(text, rules);
  EXPECT_TRUE(n.ok()) << text << ": " << n.error;
  return n.value;
}

int64_t integer(std::string_view text, const NumberRules& rules) {
  const ParsedNumber n = parse_number(text, rules.whole());
  EXPECT_TRUE(n.ok()) << text << ": " << n.error;
  EXPECT_EQ(n.value, static_cast<double>(n.integer)) << text;
  return n.integer;
}

std::string error(std::string_view text, const NumberRules& rules) {
  const ParsedNumber n = parse_number(text, rules);
  EXPECT_FALSE(n.ok()) << text << " = " << n.value;
  EXPECT_EQ(n.error.find('\n'), std::string::npos) << n.error;
  return n.error;
}

bool has(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

const NumberRules kCount = NumberRules::count();

TEST(ParseNumber, CountsTakeDecimalSuffixes) {
  EXPECT_EQ(value("7", kCount), 7);
  EXPECT_EQ(value("4k", kCount), 4e3);
  EXPECT_EQ(value("4K", kCount), 4e3);  // k and K: both kilo
  EXPECT_EQ(value("16M", kCount), 16e6);
  EXPECT_EQ(value("8G", kCount), 8e9);
  EXPECT_EQ(value("2T", kCount), 2e12);
  EXPECT_EQ(value("3P", kCount), 3e15);
  EXPECT_EQ(value("1.5T", kCount), 1.5e12);
  EXPECT_EQ(value("25.6M", kCount), 25.6e6);
  EXPECT_EQ(value("1.5e9", kCount), 1.5e9);
  EXPECT_EQ(value("1E3", kCount), 1e3);
  EXPECT_EQ(value(".5k", kCount), 500);
  EXPECT_EQ(value("5.", kCount), 5);
  EXPECT_EQ(value("+8", kCount), 8);
  EXPECT_EQ(value("  128k ", kCount), 128e3);  // spaces around
  EXPECT_EQ(value("4 k", kCount), 4e3);        // and before the suffix
  EXPECT_EQ(value("010", kCount), 10);         // decimal, never octal
}

TEST(ParseNumber, CountSuffixesAreCaseSensitiveExceptK) {
  for (const char* bad : {"4m", "4g", "4t", "4p"})
    EXPECT_TRUE(has(error(bad, kCount), "did you mean")) << bad;
  EXPECT_EQ(error("4m", kCount),
            "unknown unit 'm' (did you mean M?): give a number with a suffix k, M, G, T, P");
}

TEST(ParseNumber, BillionsOnlyWhereAsked) {
  const NumberRules model = NumberRules::count().billions();
  EXPECT_EQ(value("7B", model), 7e9);
  EXPECT_EQ(value("70B", model), 70e9);
  EXPECT_EQ(value("6.74B", model), 6.74e9);
  EXPECT_EQ(value("300 B", model), 300e9);
  EXPECT_EQ(value("2G", model), 2e9);
  EXPECT_TRUE(has(error("7B", kCount), "unknown unit 'B'"));
  EXPECT_TRUE(has(error("7b", model), "did you mean B?"));
  EXPECT_TRUE(has(model.describe(), "k, M, B or G, T, P"));
}

TEST(ParseNumber, CountsWithAUnit) {
  const NumberRules flops = NumberRules::count().billions().unit("FLOP");
  EXPECT_EQ(value("8.2G", flops), 8.2e9);
  EXPECT_EQ(value("8.2GFLOP", flops), 8.2e9);
  EXPECT_EQ(value("8.2 GFLOPs", flops), 8.2e9);
  EXPECT_EQ(value("8.2e9 FLOP", flops), 8.2e9);
  EXPECT_EQ(value("8.2BFLOP", flops), 8.2e9);
  EXPECT_TRUE(has(error("8.2GFLOPS", flops), "unknown unit 'GFLOPS'"));
  EXPECT_TRUE(has(error("FLOP", flops), "not a number"));
  EXPECT_TRUE(has(error("8.2GB", flops), "unknown unit 'GB'"));
}

TEST(ParseNumber, WholeNumbers) {
  EXPECT_EQ(integer("16M", kCount), 16000000);
  EXPECT_EQ(integer("4k", kCount), 4000);
  EXPECT_EQ(integer("1.5k", kCount), 1500);
  EXPECT_EQ(integer("1.1k", kCount), 1100);  // exact: 1.1 × 1000 is 1100.0000000000002 in doubles
  EXPECT_EQ(integer("1e3", kCount), 1000);
  EXPECT_EQ(integer("4096.000", kCount), 4096);
  EXPECT_EQ(integer("9223372036854775807", kCount), INT64_MAX);  // exact, beyond 2^53
  EXPECT_EQ(integer("9007199254740993", kCount), 9007199254740993);
  const NumberRules whole = kCount.whole();
  EXPECT_EQ(error("2.5", whole), "not a whole number");
  EXPECT_EQ(error("1e-5", whole), "not a whole number");
  EXPECT_EQ(error("4.0005k", whole), "not a whole number (4.0005k is 4000.5)");
  EXPECT_EQ(error("9223372036854775808", whole), "too large: at most 9.22e18");
  EXPECT_EQ(error("10P", whole.at_most(1 << 30)), "too large: at most 1073741824");
  EXPECT_EQ(integer("1073741824", kCount.at_most(1 << 30)), 1 << 30);
  // A fraction is fine where the rules allow one.
  EXPECT_EQ(value("2.5", kCount), 2.5);
}

TEST(ParseNumber, BytesSpellTheirUnit) {
  const NumberRules bytes = NumberRules::bytes().whole();
  EXPECT_EQ(integer("4096", bytes), 4096);
  EXPECT_EQ(integer("16B", bytes), 16);
  EXPECT_EQ(integer("2kB", bytes), 2000);
  EXPECT_EQ(integer("2KB", bytes), 2000);
  EXPECT_EQ(integer("45MB", bytes), 45000000);
  EXPECT_EQ(integer("2GB", bytes), 2000000000);
  EXPECT_EQ(integer("1TB", bytes), 1000000000000);
  EXPECT_EQ(integer("64KiB", bytes), 65536);
  EXPECT_EQ(integer("512 MiB", bytes), int64_t{512} << 20);
  EXPECT_EQ(integer("4GiB", bytes), int64_t{4} << 30);
  EXPECT_EQ(integer("2TiB", bytes), int64_t{2} << 40);
  EXPECT_EQ(integer("1.5KiB", bytes), 1536);
  EXPECT_EQ(integer("1e9", bytes), 1000000000);
  EXPECT_EQ(error("0.3B", bytes), "not a whole number");
  // A bare letter could be either: the message gives both readings.
  EXPECT_TRUE(has(error("2G", bytes), "unknown unit 'G' (GB is 10^9 bytes, GiB 2^30)"));
  EXPECT_TRUE(has(error("4k", bytes), "(kB is 10^3 bytes, KiB 2^10)"));
  EXPECT_TRUE(has(error("2gb", bytes), "did you mean GB?"));
  EXPECT_TRUE(has(error("4 parsecs", bytes), "unknown unit 'parsecs'"));
  EXPECT_TRUE(has(error("1e30", bytes), "too large"));
}

TEST(ParseNumber, BareBinaryLettersAsNcclTests) {
  const NumberRules sizes = NumberRules::bytes().whole().bare_binary();
  for (const char* k : {"64K", "64k", "64Ki", "64KiB"})
    EXPECT_EQ(integer(k, sizes), 65536) << k;
  for (const char* m : {"1M", "1m", "1Mi", "1MiB"})
    EXPECT_EQ(integer(m, sizes), 1 << 20) << m;
  for (const char* g : {"4G", "4g", "4Gi", "4GiB"})
    EXPECT_EQ(integer(g, sizes), int64_t{4} << 30) << g;
  for (const char* t : {"1T", "1t", "1Ti", "1TiB"})
    EXPECT_EQ(integer(t, sizes), int64_t{1} << 40) << t;
  EXPECT_EQ(integer("1.5K", sizes), 1536);
  EXPECT_EQ(integer("0.0009765625K", sizes), 1);  // 1/1024 KiB, exactly one byte
  // Spelled with B, the decimal units keep their meaning.
  EXPECT_EQ(integer("2GB", sizes), 2000000000);
  EXPECT_EQ(integer("16B", sizes), 16);
  EXPECT_EQ(error("0.5K", sizes.at_most(100)), "too large: at most 100");
  EXPECT_EQ(error("1.0001K", sizes), "not a whole number (1.0001K is 1024.1024)");
}

TEST(ParseNumber, RatesNeedBytesPerSecond) {
  const NumberRules rate = NumberRules::rate().eg("50GB/s");
  EXPECT_EQ(value("50GB/s", rate), 50e9);
  EXPECT_EQ(value("50 GB/s", rate), 50e9);
  EXPECT_EQ(value("1.5TB/s", rate), 1.5e12);
  EXPECT_EQ(value("800B/s", rate), 800);
  EXPECT_EQ(value("3kB/s", rate), 3e3);
  EXPECT_EQ(value("3KB/s", rate), 3e3);
  EXPECT_EQ(value("25MB/s", rate), 25e6);
  EXPECT_EQ(value("1PB/s", rate), 1e15);
  EXPECT_EQ(error("50", rate),
            "no unit: give a bandwidth in B/s, kB/s, MB/s, GB/s, TB/s, PB/s (e.g. 50GB/s)");
  EXPECT_TRUE(has(error("400Gb/s", rate), "bits; give bytes per second: 400 Gb/s = 50GB/s"));
  EXPECT_TRUE(has(error("400 Gbit/s", rate), "bits"));
  EXPECT_TRUE(has(error("50GB", rate), "unknown unit 'GB'"));
  EXPECT_TRUE(has(error("50GiB/s", rate), "unknown unit 'GiB/s'"));  // rates are decimal
  EXPECT_TRUE(has(error("50gb/s", rate), "bits"));
}

TEST(ParseNumber, PlainNumbers) {
  const NumberRules fraction = NumberRules::plain().at_most(1).eg("0.4");
  EXPECT_EQ(value("0.4", fraction), 0.4);
  EXPECT_EQ(value("1", fraction), 1);
  EXPECT_EQ(value("4e-1", fraction), 0.4);
  EXPECT_EQ(error("1.5", fraction), "too large: at most 1");
  EXPECT_EQ(error("40%", fraction), "unknown unit '%': give a number without a unit (e.g. 0.4)");
  EXPECT_EQ(error("0.4k", fraction), "unknown unit 'k': give a number without a unit (e.g. 0.4)");
  EXPECT_EQ(error("0", fraction), "must be positive");
  EXPECT_EQ(value("0", fraction.or_zero()), 0);
  EXPECT_EQ(value("0.00", fraction.or_zero()), 0);
  EXPECT_EQ(value("-0", fraction.or_zero()), 0);
}

TEST(ParseNumber, Refusals) {
  const NumberRules context = kCount.whole().at_most(1 << 30).eg("4k, 128k");
  const std::string hint = "a number with a suffix k, M, G, T, P (e.g. 4k, 128k)";
  EXPECT_EQ(error("", context), "empty: give " + hint);
  EXPECT_EQ(error("   ", context), "empty: give " + hint);
  EXPECT_EQ(error("abc", context), "not " + hint);
  EXPECT_EQ(error("k", context), "not " + hint);
  EXPECT_EQ(error(".", context), "not " + hint);
  EXPECT_EQ(error("4kk", context), "unknown unit 'kk': give " + hint);
  EXPECT_EQ(error("4k junk", context), "unknown unit 'k junk': give " + hint);
  EXPECT_EQ(error("0x10", context), "unknown unit 'x10': give " + hint);  // no hexadecimal
  EXPECT_EQ(error("1,000", context), "unknown unit ',000': give " + hint);
  EXPECT_EQ(error("1.2.3", context), "unknown unit '.3': give " + hint);
  EXPECT_EQ(error("2e", context), "unknown unit 'e': give " + hint);
  for (const char* nonfinite : {"inf", "-inf", "+Infinity", "nan", "NaN", "nan(0x1)"})
    EXPECT_EQ(error(nonfinite, context), "not a finite number: give " + hint) << nonfinite;
  EXPECT_EQ(error("-4k", context), "must be positive");
  EXPECT_EQ(error("0", context), "must be positive");
  EXPECT_EQ(error("0k", context), "must be positive");
  EXPECT_EQ(error("-1", context.or_zero()), "must not be negative");
  EXPECT_EQ(error("1.5", context), "not a whole number");
  EXPECT_EQ(error("2G", context), "too large: at most 1073741824");
  EXPECT_EQ(error("1e99999999999999", context), "too large: at most 1073741824");
  // Unbounded doubles: the bound in a few digits, not 309.
  EXPECT_EQ(error("1e400", kCount), "too large: at most 1.8e308");
  EXPECT_EQ(error("1e308k", kCount), "too large: at most 1.8e308");
  EXPECT_EQ(error("1e31", kCount.at_most(1e30)), "too large: at most 1e30");
  EXPECT_EQ(error("1e-400", kCount), "too small to tell from 0");
  EXPECT_EQ(value("0e999999", kCount.or_zero()), 0);
  // Control characters are shown escaped: the message stays one line.
  EXPECT_EQ(error("4\nk", context), "unknown unit '\\x0ak': give " + hint);
}

TEST(ParseNumber, OptionErrorsNameTheOptionAndTheText) {
  const NumberRules context = kCount.whole().at_most(1 << 30).eg("4k, 128k");
  EXPECT_EQ(option_number("--context", "4k", context).integer, 4000);
  try {
    option_number("--context", "4kk", context);
    ADD_FAILURE() << "no error";
  } catch (const UsageError& e) {
    EXPECT_STREQ(e.what(),
                 "--context 4kk: unknown unit 'kk': give a number with a suffix k, M, G, T, P "
                 "(e.g. 4k, 128k)");
    EXPECT_EQ(e.code(), ExitCode::kUsage);
  }
  EXPECT_EQ(shown_text(""), "''");
  EXPECT_EQ(shown_text("7 GB"), "'7 GB'");
  EXPECT_EQ(shown_text("a\tb"), "'a\\x09b'");
  EXPECT_EQ(shown_text("4k"), "4k");
}

// Any text at all: no exception, one line, and a value only when it keeps the rules.
TEST(ParseNumber, AnyTextKeepsTheRules) {
  const std::string alphabet = "0123456789.eE+-kKMGTPBiBb/s \t%xX\n";
  std::mt19937 rng(12345);
  const NumberRules rules[] = {
      NumberRules::count(),
      NumberRules::count().billions().unit("FLOP").at_most(1e30),
      NumberRules::count().whole().at_most(1 << 30),
      NumberRules::bytes().whole().or_zero(),
      NumberRules::bytes().whole().bare_binary(),
      NumberRules::rate(),
      NumberRules::plain().at_most(1).or_zero(),
  };
  for (int i = 0; i < 20000; ++i) {
    std::string text;
    const size_t length = rng() % 10;
    for (size_t k = 0; k < length; ++k)
      text += alphabet[rng() % alphabet.size()];
    for (const NumberRules& r : rules) {
      ParsedNumber n;
      ASSERT_NO_THROW(n = parse_number(text, r)) << text;
      if (!n.ok()) {
        EXPECT_EQ(n.error.find('\n'), std::string::npos) << text;
        continue;
      }
      EXPECT_TRUE(std::isfinite(n.value)) << text;
      EXPECT_GE(n.value, 0) << text;
      if (!r.allows_zero()) {
        EXPECT_GT(n.value, 0) << text;
      }
      if (r.max()) {
        EXPECT_LE(n.value, *r.max()) << text;
      }
      if (r.needs_whole()) {
        EXPECT_EQ(n.value, static_cast<double>(n.integer)) << text;
      }
    }
  }
}

}  // namespace
}  // namespace gpuvs
