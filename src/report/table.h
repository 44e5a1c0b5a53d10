// Plain-text tables for the terminal: columns aligned by display width (UTF-8 aware,
// so "µs" counts as two columns, not three bytes), numbers right-aligned. Every cell
// passes one_line (core/text.h): one line, control characters escaped.
#pragma once

#include <string>
#include <vector>

namespace gpuvs {

class TextTable {
 public:
  enum class Align { kLeft, kRight };

  explicit TextTable(std::vector<std::string> header, std::vector<Align> align = {});
  void add_row(std::vector<std::string> cells);
  size_t rows() const { return rows_.size(); }
  std::string render() const;  // header, a rule, rows; each line ends in '\n'

 private:
  std::vector<std::string> header_;
  std::vector<Align> align_;
  std::vector<std::vector<std::string>> rows_;
};

// Number of terminal columns a UTF-8 string takes (code points; no wide glyphs used).
size_t display_width(const std::string& s);

}  // namespace gpuvs
