// Text from files (run files, catalogues, claims, prices, labels) on its way out: to a
// terminal, into a Markdown table, into a CSV cell. One rule for control characters
// everywhere, so that a GPU name cannot retitle the terminal, reorder what is shown
// after it, break a table or run a formula in a spreadsheet.
//
// The control-character rule (escape_controls): valid UTF-8 text passes unchanged,
// except
//   - C0 controls (U+0000-U+001F) and bytes of ill-formed UTF-8 become \xHH, with \n
//     and \t for newline and tab (kept as they are where lines are kept);
//   - DEL (U+007F), the C1 controls (U+0080-U+009F) and the bidirectional embeddings,
//     overrides and isolates (U+202A-U+202E, U+2066-U+2069) become \uXXXX, a form that
//     is also a valid JSON escape of the same character, so JSON stays JSON.
// A backslash itself is not escaped: the result is for reading, not for decoding.
#pragma once

#include <fmt/format.h>

#include <cerrno>
#include <cstdio>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>
#include <utility>
#include <vector>

namespace gpuvs {

// The length of the well-formed UTF-8 character at s[i] (RFC 3629: no overlongs, no
// surrogates, nothing above U+10FFFF), or 0 when the bytes there are not one.
std::size_t utf8_length(std::string_view s, std::size_t i);

// The control-character rule above. `keep_lines`: newline and tab stay (a whole
// output); otherwise they are escaped too (one line: a cell, a name in a message).
// `escape_quotes` also puts a backslash before '"' and '\' (text shown in quotes).
std::string escape_controls(std::string_view s, bool keep_lines, bool escape_quotes = false);

// One line of text from a file, for a terminal: every control character escaped.
inline std::string one_line(std::string_view s) {
  return escape_controls(s, false);
}

// Everything gpuvs prints: newlines and tabs kept, every other control escaped. A JSON
// document (whose writer escapes C0 controls itself) stays valid and means the same.
inline std::string terminal_text(std::string_view s) {
  return escape_controls(s, true);
}

// fmt::print through terminal_text: the one way the command line prints. A failed
// write throws as fmt::print does (std::system_error "cannot write to file" with the
// OS's reason), since errno is gone by the time the stream is flushed.
template <typename... T>
void print_text(std::FILE* f, fmt::format_string<T...> format, T&&... args) {
  const std::string text = terminal_text(fmt::format(format, std::forward<T>(args)...));
  if (std::fwrite(text.data(), 1, text.size(), f) != text.size())
    throw std::system_error(errno, std::generic_category(), "cannot write to file");
}

// A Markdown (GFM) table cell or inline text: newline, CR and tab become a space (a
// cell is one line; <br> would be raw HTML, which some renderers drop), the other
// controls are escaped by the rule above, and the characters that end a cell or start
// markup that is not text are backslash-escaped or written as entities: \ | ` [ ] as
// \\ \| \` \[ \] (no code span, link or image from a file), < > & as &lt; &gt; &amp;
// (no raw HTML). Emphasis characters are left alone: they change no structure.
std::string markdown_cell(std::string_view s);
// markdown_cell, and a backslash before a leading #, >, -, +, * or "1." / "1)" so that
// text at the start of a Markdown line (a list item) cannot open a heading, a quote or
// a nested list.
std::string markdown_line(std::string_view s);

// One cell of a CSV line, typed: the type decides how it is written, never the text.
// Text (from a file or gpuvs's own words) passes the control rule with newlines kept
// and, when it starts with = + - @ tab or CR, gets a ' in front inside a quoted field
// (OWASP's rule against formula injection); a field with a comma, quote, CR or newline
// is quoted with quotes doubled (RFC 4180). A number written by gpuvs is written as
// the number, so a negative figure stays -3.5, not '-3.5.
class CsvCell {
 public:
  CsvCell(std::string_view text);  // NOLINT: text cells are the common case
  CsvCell(const std::string& text) : CsvCell(std::string_view(text)) {}  // NOLINT
  CsvCell(const char* text) : CsvCell(std::string_view(text)) {}         // NOLINT

  // Shortest text that reads back as `v`; empty when absent.
  static CsvCell number(std::optional<double> v);
  // `v` with `decimals` digits after the point; empty when absent.
  static CsvCell fixed(std::optional<double> v, int decimals);
  static CsvCell integer(long long v);
  static CsvCell boolean(bool v);

  const std::string& field() const { return field_; }  // as written in the line

 private:
  struct Raw {};
  CsvCell(Raw, std::string field) : field_(std::move(field)) {}
  std::string field_;
};

// The cells joined by commas, ending in '\n'.
std::string csv_line(const std::vector<CsvCell>& cells);

}  // namespace gpuvs
