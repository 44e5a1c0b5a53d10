// Plain-text tables for the terminal: columns aligned by display width (UTF-8 aware,
// so "µs" counts as two columns, not three bytes), numbers right-aligned. Every cell
// passes one_line (core/text.h): one line, control characters escaped.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace gpuvs {

size_t table_width();  // below

class TextTable {
 public:
  enum class Align { kLeft, kRight };

  explicit TextTable(std::vector<std::string> header, std::vector<Align> align = {});
  void add_row(std::vector<std::string> cells);
  size_t rows() const { return rows_.size(); }
  // Header, a rule, rows; each line ends in '\n'. With `max_width` > 0 (default: the
  // process's table width, set_table_width) a table wider than that narrows its widest
  // columns, never below kMinColumnWidth, and wraps their cells (the header's too)
  // onto continuation lines (at spaces where it can): every line then fits, unless even
  // the narrowest columns do not.
  std::string render() const { return render(table_width()); }
  std::string render(size_t max_width) const;
  static constexpr size_t kMinColumnWidth = 8;
  // Where even the narrowest columns exceed the width, `column` (prose: a "why") leaves
  // the table and follows it as notes, one per row that has one, each headed by the
  // row's first cell ("  3: ...") and fitted to the width.
  void notes_when_narrow(size_t column) { notes_column_ = column; }

 private:
  std::vector<std::string> header_;
  std::vector<Align> align_;
  std::vector<std::vector<std::string>> rows_;
  size_t notes_column_ = SIZE_MAX;
};

// Number of terminal columns a UTF-8 string takes (code points; no wide glyphs used).
size_t display_width(const std::string& s);

// A paragraph as lines of at most `width` display columns (default: the table width;
// 0: one line), cut at spaces where it can, the first line after `first`, the others
// after `rest`; every line ends in '\n'.
std::string fit_text(const std::string& text, const std::string& first, const std::string& rest,
                     size_t width = table_width());

// Text of many lines, each longer than `width` (default: the table width; 0: as it is)
// fitted as fit_text() fits a paragraph: continuation lines indented as far as the
// line's own indent, past a leading "- " where the line is an item of a list.
std::string fit_lines(const std::string& text, size_t width = table_width());

// The width every TextTable fits by default: 0 (no limit) unless the command line set
// it, which it does for a terminal (cli/app.cpp: $COLUMNS or the terminal's size, not
// with --wide, never when stdout is a pipe or a file).
void set_table_width(size_t columns);
size_t table_width();

}  // namespace gpuvs
