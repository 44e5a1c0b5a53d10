// core/text.h: the control-character rule, Markdown cells and lines, CSV cells.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "core/text.h"

namespace gpuvs {
namespace {

TEST(Text, TerminalEscapeSequencesBecomeVisible) {
  // OSC (retitles the terminal), CSI (colours, clears the screen), a lone ESC.
  EXPECT_EQ(one_line("A100\x1b]0;TITLE\x07"), "A100\\x1b]0;TITLE\\x07");
  EXPECT_EQ(one_line("\x1b[31mred\x1b[0m"), "\\x1b[31mred\\x1b[0m");
  EXPECT_EQ(one_line("\x1b[2J\x1b[H"), "\\x1b[2J\\x1b[H");
  EXPECT_EQ(one_line(std::string("a\0b", 3)), "a\\x00b");
  EXPECT_EQ(one_line("back\bspace\rover"), "back\\x08space\\x0dover");
  EXPECT_EQ(one_line("del\x7f"), "del\\u007f");
}

TEST(Text, C1AndBidiControlsAreEscaped) {
  EXPECT_EQ(one_line("\xc2\x9b"
                     "31m"),
            "\\u009b31m");  // CSI as a UTF-8 C1 character
  EXPECT_EQ(one_line("\xc2\x80\xc2\x9f"), "\\u0080\\u009f");
  EXPECT_EQ(one_line("\xc2\xa0"), "\xc2\xa0");  // U+00A0 is text
  // Right-to-left override and isolates reorder what follows; U+202F is text.
  EXPECT_EQ(one_line("H200\xe2\x80\xae"
                     "0001A"),
            "H200\\u202e0001A");
  EXPECT_EQ(one_line("\xe2\x80\xaa\xe2\x80\xac"), "\\u202a\\u202c");
  EXPECT_EQ(one_line("\xe2\x81\xa6x\xe2\x81\xa9"), "\\u2066x\\u2069");
  EXPECT_EQ(one_line("\xe2\x80\xaf"), "\xe2\x80\xaf");
}

TEST(Text, InvalidUtf8IsReplacedByItsBytes) {
  EXPECT_EQ(one_line("\xff\xfe"), "\\xff\\xfe");
  EXPECT_EQ(one_line("\x9b"
                     "2J"),
            "\\x9b2J");                                             // a raw 8-bit CSI
  EXPECT_EQ(one_line("\xc0\xaf"), "\\xc0\\xaf");                    // overlong '/'
  EXPECT_EQ(one_line("\xed\xa0\x80"), "\\xed\\xa0\\x80");           // a UTF-16 surrogate
  EXPECT_EQ(one_line("cut \xe2\x80"), "cut \\xe2\\x80");            // truncated character
  EXPECT_EQ(one_line("\xf4\x90\x80\x80"), "\\xf4\\x90\\x80\\x80");  // above U+10FFFF
}

TEST(Text, TextPassesUnchanged) {
  for (const std::string s : {"H200 SXM 141GB", "4.80 TB/s ±0.5% (ds)", "µs · 2×", "日本語",
                              "\xf0\x9f\x9a\x80", "a \\x1b b", "quote \" and \\"})
    EXPECT_EQ(one_line(s), s);
}

TEST(Text, LinesKeptOnlyWhereAsked) {
  EXPECT_EQ(one_line("a\nb\tc"), "a\\nb\\tc");
  EXPECT_EQ(terminal_text("a\nb\tc"), "a\nb\tc");
  EXPECT_EQ(terminal_text("a\r\nb\x1b[K"), "a\\x0d\nb\\x1b[K");
  EXPECT_EQ(escape_controls("say \"hi\" \\ \x01", false, true), "say \\\"hi\\\" \\\\ \\x01");
}

TEST(Text, TerminalTextKeepsJsonValid) {
  // What a JSON writer leaves raw inside strings comes out as JSON escapes of the same
  // characters: DEL, C1, bidi.
  EXPECT_EQ(terminal_text("{\"n\": \"x\x7f\xc2\x85\xe2\x80\xae\"}\n"),
            "{\"n\": \"x\\u007f\\u0085\\u202e\"}\n");
}

TEST(Text, MarkdownCellEscapesWhatBreaksATableOrInjectsHtml) {
  EXPECT_EQ(markdown_cell("a|b"), "a\\|b");
  EXPECT_EQ(markdown_cell("a\\|b"), "a\\\\\\|b");  // \| is a backslash and a pipe
  EXPECT_EQ(markdown_cell("C:\\gpu"), "C:\\\\gpu");
  EXPECT_EQ(markdown_cell("two\nlines\r\nand\ttab"), "two lines  and tab");
  EXPECT_EQ(markdown_cell("<script>alert(1)</script>"), "&lt;script&gt;alert(1)&lt;/script&gt;");
  EXPECT_EQ(markdown_cell("<img src=x onerror=alert(1)>"), "&lt;img src=x onerror=alert(1)&gt;");
  EXPECT_EQ(markdown_cell("&lt; &amp;"), "&amp;lt; &amp;amp;");
  EXPECT_EQ(markdown_cell("`code | span`"), "\\`code \\| span\\`");
  EXPECT_EQ(markdown_cell("[x](javascript:alert(1)) ![i](http://e/i.png)"),
            "\\[x\\](javascript:alert(1)) !\\[i\\](http://e/i.png)");
  EXPECT_EQ(markdown_cell("A100\x1b]0;T\x07"), "A100\\\\x1b\\]0;T\\\\x07");
  EXPECT_EQ(markdown_cell("rtl\xe2\x80\xae"), "rtl\\\\u202e");
  EXPECT_EQ(markdown_cell("\xff"), "\\\\xff");
  // Figures and gpuvs's own words stay as they read.
  for (const std::string s : {"4.80 TB/s (ds)", "1.13x faster", "-", "same (+0.4%)", "*bold*"})
    EXPECT_EQ(markdown_cell(s), s);
}

TEST(Text, MarkdownLineCannotOpenABlock) {
  EXPECT_EQ(markdown_line("# title"), "\\# title");
  EXPECT_EQ(markdown_line("- item"), "\\- item");
  EXPECT_EQ(markdown_line("+ item"), "\\+ item");
  EXPECT_EQ(markdown_line("* item"), "\\* item");
  EXPECT_EQ(markdown_line("> quote"), "&gt; quote");  // an entity opens no quote
  EXPECT_EQ(markdown_line("12. item"), "12\\. item");
  EXPECT_EQ(markdown_line("3) item"), "3\\) item");
  EXPECT_EQ(markdown_line("H200: 4.8 TB/s"), "H200: 4.8 TB/s");
  EXPECT_EQ(markdown_line("2024 figures"), "2024 figures");
}

TEST(Text, CsvFormulaPrefixesGetAQuote) {
  EXPECT_EQ(CsvCell("=1+2").field(), "\"'=1+2\"");
  EXPECT_EQ(CsvCell("+SUM(A1:A9)").field(), "\"'+SUM(A1:A9)\"");
  EXPECT_EQ(CsvCell("-2+3").field(), "\"'-2+3\"");
  EXPECT_EQ(CsvCell("@cmd").field(), "\"'@cmd\"");
  EXPECT_EQ(CsvCell("\t=1").field(), "\"'\t=1\"");
  EXPECT_EQ(CsvCell("\r=1").field(), "\"'\\x0d=1\"");
  // Quotes inside a formula are doubled inside the one quoted field.
  EXPECT_EQ(CsvCell("=HYPERLINK(\"http://e\",\"x\")").field(),
            "\"'=HYPERLINK(\"\"http://e\"\",\"\"x\"\")\"");
  // Text that is a negative number is still text: its type decides, not how it reads.
  EXPECT_EQ(CsvCell("-5").field(), "\"'-5\"");
  // Not at the start: no formula.
  EXPECT_EQ(CsvCell("a=1").field(), "a=1");
  EXPECT_EQ(CsvCell(" =1").field(), " =1");
}

TEST(Text, CsvQuotingAndControls) {
  EXPECT_EQ(CsvCell("plain").field(), "plain");
  EXPECT_EQ(CsvCell("").field(), "");
  EXPECT_EQ(CsvCell("a,b").field(), "\"a,b\"");
  EXPECT_EQ(CsvCell("say \"hi\"").field(), "\"say \"\"hi\"\"\"");
  EXPECT_EQ(CsvCell("two\nlines").field(), "\"two\nlines\"");
  EXPECT_EQ(CsvCell("=a\n\"b\",c").field(), "\"'=a\n\"\"b\"\",c\"");
  EXPECT_EQ(CsvCell("A100\x1b]0;T\x07").field(), "A100\\x1b]0;T\\x07");
  EXPECT_EQ(CsvCell("\xff").field(), "\\xff");
}

TEST(Text, CsvNumbersStayNumbers) {
  EXPECT_EQ(CsvCell::number(-3.5).field(), "-3.5");
  EXPECT_EQ(CsvCell::number(1234.5).field(), "1234.5");
  EXPECT_EQ(CsvCell::number(0.1).field(), "0.1");
  EXPECT_EQ(CsvCell::number(std::nullopt).field(), "");
  EXPECT_EQ(CsvCell::fixed(-12.345, 1).field(), "-12.3");
  EXPECT_EQ(CsvCell::fixed(std::nullopt, 1).field(), "");
  EXPECT_EQ(CsvCell::integer(-7).field(), "-7");
  EXPECT_EQ(CsvCell::boolean(true).field(), "true");
  EXPECT_EQ(csv_line({"-x", CsvCell::number(-1), CsvCell::integer(2), "a,b"}),
            "\"'-x\",-1,2,\"a,b\"\n");
}

}  // namespace
}  // namespace gpuvs
