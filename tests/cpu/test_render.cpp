// Text renderings of a comparison and of claim judgements: terminal, Markdown, CSV
// (RFC 4180 quoting) and JSON (valid, nulls for missing). Missing is never 0 and an
// invalid measurement is never a number, in any format.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <sstream>
#include <string>

#include "compare_test_util.h"
#include "csv_test_util.h"
#include "report/render.h"
#include "report/table.h"

namespace gpuvs {
namespace {

using gpuvs_test::parse_csv;

Comparison small_comparison() {
  Comparison c;
  c.columns = {column_of("H200 run", "NVIDIA H200", "H200-SXM", true),
               column_of("A100, \"80GB\"", "NVIDIA A100 SXM4 80GB", "A100-SXM4-80GB", false),
               column_of("H100 | SXM", "NVIDIA H100 SXM5 80GB", "H100-SXM", false)};
  c.baseline = 0;

  Row bw = row_of("memory.bandwidth", "Memory bandwidth", "B/s");
  Cell m;
  m.value = 4.2499e12;
  m.source = Source::kMeasured;
  m.source_ref = "run file h200.json, result memory.hbm.copy";
  m.noise = 0.0012;
  m.of_datasheet = 0.886;
  m.ratio = 1;
  m.diff_pct = 0;
  m.verdict = "baseline";
  Cell d;
  d.value = 2.039e12;
  d.source = Source::kDatasheet;
  d.source_ref = "https://www.nvidia.com/a100-datasheet.pdf";
  d.ratio = 2.039 / 4.2499;
  d.diff_pct = (*d.ratio - 1) * 100;
  d.verdict = "slower";
  Cell missing;  // H100 figure unknown here
  bw.cells = {m, d, missing};

  Row fp16 = row_of("compute.fp16", "FP16 tensor (dense)", "FLOP/s");
  Cell inv;
  inv.source = Source::kMeasured;
  inv.invalid = true;
  inv.note = "invalid: checksum mismatch, at element 17";
  Cell ds;
  ds.value = 312e12;
  ds.source = Source::kDatasheet;
  ds.source_ref = "https://www.nvidia.com/a100-datasheet.pdf";
  Cell none;
  none.unsupported = true;
  none.source = Source::kDatasheet;
  fp16.cells = {inv, ds, none};

  Row cores = row_of("gpu.cuda_cores", "CUDA cores", "1");
  Cell a, b, e;
  a.value = 16896;
  a.source = Source::kDatasheet;
  a.verdict = "baseline";
  a.ratio = 1;
  a.diff_pct = 0;
  b.value = 6912;
  b.source = Source::kDatasheet;
  b.ratio = 6912.0 / 16896;
  b.diff_pct = (*b.ratio - 1) * 100;
  b.verdict = "lower";
  e.value = 16896;
  e.source = Source::kDatasheet;
  e.ratio = 1;
  e.diff_pct = 0;
  e.verdict = "same";
  cores.cells = {a, b, e};
  c.rows = {bw, fp16, cores};
  return c;
}

// No rendering may show the invalid cell as a number: its value was never set, and
// no "0" stands in for the missing H100 bandwidth either.
void expect_no_fake_numbers(const std::string& out) {
  EXPECT_EQ(out.find("0 TB/s"), std::string::npos) << out;
  EXPECT_EQ(out.find("0.00 B/s"), std::string::npos) << out;
}

TEST(Render, Terminal) {
  const std::string out = render_comparison(small_comparison(), TextFormat::kTerminal);
  EXPECT_NE(out.find("Memory bandwidth"), std::string::npos) << out;
  EXPECT_NE(out.find("4.25 TB/s ±0.12% (89% of ds)"), std::string::npos) << out;
  EXPECT_NE(out.find("2.04 TB/s (ds)"), std::string::npos) << out;
  EXPECT_NE(out.find("0.48x slower"), std::string::npos) << out;
  EXPECT_NE(out.find("invalid"), std::string::npos) << out;
  EXPECT_NE(out.find("none"), std::string::npos) << out;
  EXPECT_NE(out.find("16896 (ds)"), std::string::npos) << out;
  EXPECT_NE(out.find("same (+0.0%)"), std::string::npos) << out;
  EXPECT_NE(out.find("vs H200 run"), std::string::npos) << out;
  EXPECT_NE(out.find("checksum mismatch"), std::string::npos) << out;  // why invalid
  EXPECT_NE(out.find("(ds) datasheet"), std::string::npos) << out;     // legend
  expect_no_fake_numbers(out);
  // The missing H100 bandwidth is "-".
  std::istringstream lines(out);
  for (std::string line; std::getline(lines, line);)
    if (line.rfind("Memory bandwidth", 0) == 0) {
      EXPECT_EQ(line.back(), '-') << line;
    }
}

TEST(Render, Markdown) {
  const std::string out = render_comparison(small_comparison(), TextFormat::kMarkdown);
  // The headline comes first (a summary line per pair, then its table), then the detail.
  EXPECT_EQ(out.rfind("**", 0), 0u) << out;
  std::istringstream lines(out);
  std::string header, rule, row;
  while (std::getline(lines, header) && header.rfind("| metric |", 0) != 0) {
  }
  std::getline(lines, rule);
  std::getline(lines, row);
  EXPECT_EQ(header.rfind("| metric |", 0), 0u) << header;
  EXPECT_NE(header.find("H100 \\| SXM"), std::string::npos) << header;  // '|' escaped
  EXPECT_EQ(rule, "|---|---|---|---|---|---|");
  EXPECT_EQ(row.rfind("| Memory bandwidth |", 0), 0u) << row;
  EXPECT_NE(row.find("| 4.25 TB/s ±0.12% (89% of ds) |"), std::string::npos) << row;
  EXPECT_NE(row.find("| - |"), std::string::npos) << row;
  EXPECT_NE(out.find("| invalid |"), std::string::npos) << out;
  EXPECT_NE(out.find("https://www.nvidia.com"), std::string::npos) << out;  // not required
  expect_no_fake_numbers(out);
}

TEST(Render, CsvQuotesAndLeavesMissingEmpty) {
  const std::string out = render_comparison(small_comparison(), TextFormat::kCsv);
  EXPECT_NE(out.find("\"A100, \"\"80GB\"\"\""), std::string::npos) << out;  // RFC 4180
  EXPECT_NE(out.find("\"invalid: checksum mismatch, at element 17\""), std::string::npos);
  const auto rows = parse_csv(out);
  ASSERT_EQ(rows.size(), 1u + 3 * 3);
  const auto& h = rows[0];
  auto col = [&](const char* name) {
    return static_cast<size_t>(std::find(h.begin(), h.end(), name) - h.begin());
  };
  for (const auto& r : rows)
    ASSERT_EQ(r.size(), h.size());
  // metric memory.bandwidth, column 1 (A100): datasheet in base units.
  EXPECT_EQ(rows[2][col("column")], "A100, \"80GB\"");
  EXPECT_EQ(std::stod(rows[2][col("value")]), 2.039e12);
  EXPECT_EQ(rows[2][col("source")], "datasheet");
  EXPECT_EQ(rows[2][col("verdict")], "slower");
  // Missing H100 bandwidth: empty value and source, not 0.
  EXPECT_EQ(rows[3][col("value")], "");
  EXPECT_EQ(rows[3][col("source")], "");
  // Invalid FP16 measurement: no value, invalid=true.
  EXPECT_EQ(rows[4][col("value")], "");
  EXPECT_EQ(rows[4][col("invalid")], "true");
  EXPECT_EQ(rows[6][col("unsupported")], "true");
}

TEST(Render, JsonIsValidWithNulls) {
  const std::string out = render_comparison(small_comparison(), TextFormat::kJson);
  const nlohmann::json doc = nlohmann::json::parse(out);
  EXPECT_EQ(doc["schema"], "gpuvs.compare/1");
  EXPECT_EQ(doc["baseline"], 0);
  ASSERT_EQ(doc["columns"].size(), 3u);
  EXPECT_EQ(doc["columns"][1]["label"], "A100, \"80GB\"");
  EXPECT_TRUE(doc["columns"][0]["measured"].get<bool>());
  const auto& bw = doc["rows"][0];
  EXPECT_EQ(bw["metric"], "memory.bandwidth");
  EXPECT_DOUBLE_EQ(bw["cells"][0]["value"].get<double>(), 4.2499e12);
  EXPECT_DOUBLE_EQ(bw["cells"][0]["noise"].get<double>(), 0.0012);
  EXPECT_EQ(bw["cells"][0]["source"], "measured");
  EXPECT_TRUE(bw["cells"][2]["value"].is_null());
  EXPECT_TRUE(bw["cells"][2]["source"].is_null());
  const auto& inv = doc["rows"][1]["cells"][0];
  EXPECT_TRUE(inv["value"].is_null());
  EXPECT_TRUE(inv["invalid"].get<bool>());
  EXPECT_TRUE(doc["rows"][1]["cells"][2]["unsupported"].get<bool>());
}

std::vector<ClaimJudgement> small_judgements() {
  ClaimJudgement a;
  a.claim = {"A100 80GB", "fp32", 19.5, "TFLOPS", "article, p. 2", "", "", 3};
  a.verdict = ClaimVerdict::kHolds;
  a.reference = 19.5e12;
  a.reference_unit = "FLOP/s";
  a.reference_source = Source::kDatasheet;
  a.reference_ref = "https://www.nvidia.com/a100-datasheet.pdf";
  a.why = "A100 SXM4 80GB FP32 19.5 TFLOP/s holds (datasheet 19.5)";
  ClaimJudgement b;
  b.claim = {"H200 96GB", "memory", 96, "GB", "article", "", "", 4};
  b.verdict = ClaimVerdict::kContradicted;
  b.off_pct = -31.9;
  b.reference = 141e9;
  b.reference_unit = "B";
  b.why = "no H200 has 96 GB; the H200 SXM has 141 GB (datasheet)";
  ClaimJudgement c;
  c.claim = {"RTX 9090", "fp16", 1, "PFLOPS", "", "", "", 5};
  c.verdict = ClaimVerdict::kUnverifiable;
  c.why = "the catalogue has no GPU 'RTX 9090'";
  return {a, b, c};
}

TEST(Render, ClaimsInEveryFormat) {
  const auto js = small_judgements();
  const std::string term = render_claims(js, TextFormat::kTerminal);
  EXPECT_NE(term.find("contradicted (-32%)"), std::string::npos) << term;
  EXPECT_NE(term.find("141 GB (datasheet)"), std::string::npos) << term;
  EXPECT_NE(term.find("3 claims: 1 hold, 0 off, 1 contradicted, 1 unverifiable"), std::string::npos)
      << term;
  const std::string md = render_claims(js, TextFormat::kMarkdown);
  EXPECT_EQ(md.rfind("| line | gpu | metric |", 0), 0u) << md;
  const std::string csv = render_claims(js, TextFormat::kCsv);
  EXPECT_NE(csv.find(",no H200 has 96 GB; the H200 SXM has 141 GB (datasheet)\n"),
            std::string::npos)
      << csv;
  EXPECT_NE(csv.find("\"article, p. 2\""), std::string::npos) << csv;
  const auto rows = parse_csv(csv);
  ASSERT_EQ(rows.size(), 4u);
  for (const auto& r : rows)
    EXPECT_EQ(r.size(), rows[0].size());
  const nlohmann::json doc = nlohmann::json::parse(render_claims(js, TextFormat::kJson));
  EXPECT_EQ(doc["schema"], "gpuvs.claims/1");
  ASSERT_EQ(doc["claims"].size(), 3u);
  EXPECT_EQ(doc["claims"][0]["metric_id"], "compute.fp32");
  EXPECT_EQ(doc["claims"][1]["verdict"], "contradicted");
  EXPECT_TRUE(doc["claims"][2]["reference"].is_null());
  EXPECT_TRUE(doc["claims"][2]["off_pct"].is_null());
  EXPECT_EQ(doc["summary"]["contradicted"], 1);
}

TEST(Render, EmptyComparison) {
  Comparison c;
  EXPECT_NE(render_comparison(c, TextFormat::kTerminal).find("no figures"), std::string::npos);
  EXPECT_TRUE(nlohmann::json::accept(render_comparison(c, TextFormat::kJson)));
}

// Names from files in every text format: shown in the terminal, text in Markdown, no
// formula in CSV; the figures around them unchanged.
TEST(Render, HostileNamesInEveryFormat) {
  Comparison c = small_comparison();
  c.columns[1].label = "=cmd|' /C calc'!A0";
  c.columns[1].gpu_name = "A100\x1b]0;TITLE\x07\n<script>alert(1)</script>";
  c.columns[2].label = "-2+3 \xe2\x80\xae|\\|";

  const std::string term = render_comparison(c, TextFormat::kTerminal);
  EXPECT_EQ(term.find('\x1b'), std::string::npos) << term;
  EXPECT_EQ(term.find("\xe2\x80\xae"), std::string::npos) << term;
  EXPECT_NE(term.find("A100\\x1b]0;TITLE\\x07\\n<script>"), std::string::npos) << term;

  const std::string md = render_comparison(c, TextFormat::kMarkdown);
  EXPECT_EQ(md.find("<script>"), std::string::npos) << md;
  EXPECT_NE(md.find("| =cmd\\|' /C calc'!A0 |"), std::string::npos) << md;
  EXPECT_NE(md.find("| -2+3 \\\\u202e\\|\\\\\\| |"), std::string::npos) << md;
  // A note starts with the label: no list item of its own, no HTML.
  EXPECT_NE(md.find("\n- \\-2+3 "), std::string::npos) << md;
  EXPECT_NE(md.find("A100\\\\x1b\\]0;TITLE\\\\x07 &lt;script&gt;"), std::string::npos) << md;

  const auto rows = parse_csv(render_comparison(c, TextFormat::kCsv));
  ASSERT_GT(rows.size(), 3u);
  bool seen = false;
  for (const auto& r : rows) {
    ASSERT_EQ(r.size(), rows[0].size());
    if (r[4] != "'=cmd|' /C calc'!A0") continue;
    seen = true;
    EXPECT_EQ(r[5], "A100\\x1b]0;TITLE\\x07\n<script>alert(1)</script>");
  }
  EXPECT_TRUE(seen);
}

TEST(Render, TableCellsStayOnOneLine) {
  TextTable t({"name", "value"}, {TextTable::Align::kLeft, TextTable::Align::kRight});
  t.add_row({"two\nlines", "1"});
  t.add_row({"\x1b[2Jx", "-2"});
  EXPECT_EQ(t.render(),
            "name        value\n"
            "-----------------\n"
            "two\\nlines      1\n"
            "\\x1b[2Jx       -2\n");
}

// A table wider than the width it must fit narrows its widest columns and wraps their
// cells at spaces onto continuation lines; every line fits and every word is kept.
TEST(Render, TableFitsAWidthByWrappingItsWidestCells) {
  TextTable t({"metric", "value", "note"},
              {TextTable::Align::kLeft, TextTable::Align::kRight, TextTable::Align::kLeft});
  t.add_row({"Memory bandwidth", "4.80 TB/s",
             "the datasheet's figure, which the run did not measure on this GPU at all"});
  t.add_row({"FP8", "1979 TFLOP/s", "dense"});
  const std::string wide = t.render(0);
  EXPECT_EQ(wide, t.render(1000)) << "a table that fits is left as it is";
  const std::string narrow = t.render(60);
  std::istringstream lines(narrow);
  std::string line, words;
  size_t count = 0;
  while (std::getline(lines, line)) {
    EXPECT_LE(display_width(line), 60u) << line;
    ++count;
  }
  EXPECT_GT(count, 4u) << narrow;  // the note took several lines
  for (const char* w : {"datasheet's", "measure", "GPU", "all", "dense", "1979 TFLOP/s"})
    EXPECT_NE(narrow.find(w), std::string::npos) << w << " lost:\n" << narrow;
  EXPECT_EQ(narrow.rfind("metric", 0), 0u);
  // Never narrower than kMinColumnWidth: a width that cannot be met is exceeded, not
  // turned into one-letter columns.
  const std::string tiny = t.render(10);
  std::istringstream tl(tiny);
  while (std::getline(tl, line))
    EXPECT_LE(display_width(line), 3 * TextTable::kMinColumnWidth + 4) << line;
  // A word longer than its column is cut.
  TextTable one({"x"});
  one.add_row({std::string(30, 'a')});
  EXPECT_EQ(one.render(12), "x\n" + std::string(12, '-') + "\n" + std::string(12, 'a') + "\n" +
                                std::string(12, 'a') + "\n" + std::string(6, 'a') + "\n");
}

TEST(Render, FitTextWrapsAParagraphAtSpaces) {
  const std::string p = "one two three four five six seven eight nine ten eleven twelve";
  EXPECT_EQ(fit_text(p, "  ", "    ", 0), "  " + p + "\n");
  const std::string f = fit_text(p, "  ", "    ", 30);
  EXPECT_EQ(f,
            "  one two three four five\n"
            "    six seven eight nine ten\n"
            "    eleven twelve\n");
}

// A table that cannot fit even at its narrowest columns moves its prose column below
// itself as notes headed by each row's first cell; one that can keeps it.
TEST(Render, AProseColumnBecomesNotesWhereTheTableCannotFit) {
  TextTable t({"#", "name", "value", "basis", "why"},
              {TextTable::Align::kRight, TextTable::Align::kLeft, TextTable::Align::kRight,
               TextTable::Align::kLeft, TextTable::Align::kLeft});
  t.notes_when_narrow(4);
  t.add_row({"1", "first-name-long", "12.5 days", "datasheet", "fewest GPU-hours of all"});
  t.add_row({"2", "second", "3 days", "measured", ""});
  const std::string wide = t.render(0);
  EXPECT_NE(wide.find("fewest GPU-hours of all"), std::string::npos);
  EXPECT_EQ(wide.find("why:"), std::string::npos);
  EXPECT_EQ(t.render(80), wide) << "it fits: nothing moves";
  const std::string narrow = t.render(34);
  std::istringstream in(narrow);
  std::string line;
  while (std::getline(in, line))
    EXPECT_LE(display_width(line), 34u) << line << "\n" << narrow;
  EXPECT_EQ(narrow.find("why  "), std::string::npos) << narrow;
  EXPECT_NE(narrow.find("\nwhy:\n  1: fewest GPU-hours of all\n"), std::string::npos) << narrow;
  EXPECT_EQ(narrow.find("  2: "), std::string::npos) << "an empty note is left out";
}

TEST(Render, FitLinesWrapsEachLongLineUnderItsIndent) {
  const std::string text =
      "Title short\n"
      "Assumptions:\n"
      "  - one two three four five six seven eight nine ten\n"
      "  plain indented words that run past the width here\n"
      "last line without a newline and long enough to wrap";
  EXPECT_EQ(fit_lines(text, 0), text);
  EXPECT_EQ(fit_lines(text, 200), text);
  EXPECT_EQ(fit_lines(text, 30),
            "Title short\n"
            "Assumptions:\n"
            "  - one two three four five\n"
            "    six seven eight nine ten\n"
            "  plain indented words that\n"
            "  run past the width here\n"
            "last line without a newline\n"
            "and long enough to wrap");
  // A line of spaces alone is kept as it is.
  EXPECT_EQ(fit_lines(std::string(40, ' ') + "\n", 30), std::string(40, ' ') + "\n");
}

}  // namespace
}  // namespace gpuvs
