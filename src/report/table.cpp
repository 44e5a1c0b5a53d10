#include "report/table.h"

#include <algorithm>
#include <stdexcept>

#include "core/text.h"

namespace gpuvs {

size_t display_width(const std::string& s) {
  size_t n = 0;
  for (unsigned char c : s)
    if ((c & 0xC0) != 0x80) ++n;  // count lead bytes, skip continuation bytes
  return n;
}

TextTable::TextTable(std::vector<std::string> header, std::vector<Align> align)
    : header_(std::move(header)), align_(std::move(align)) {
  for (std::string& h : header_)
    h = one_line(h);
  align_.resize(header_.size(), Align::kLeft);
}

void TextTable::add_row(std::vector<std::string> cells) {
  if (cells.size() > header_.size()) throw std::logic_error("table row has too many cells");
  cells.resize(header_.size());
  // Cells hold names from files: escaped here, where widths are counted, so that a
  // newline cannot break a row and an escape sequence cannot reach the terminal.
  for (std::string& c : cells)
    c = one_line(c);
  rows_.push_back(std::move(cells));
}

std::string TextTable::render() const {
  std::vector<size_t> width(header_.size());
  for (size_t c = 0; c < header_.size(); ++c) {
    width[c] = display_width(header_[c]);
    for (const auto& row : rows_)
      width[c] = std::max(width[c], display_width(row[c]));
  }
  auto line = [&](const std::vector<std::string>& cells) {
    std::string out;
    for (size_t c = 0; c < cells.size(); ++c) {
      const std::string pad(width[c] - display_width(cells[c]), ' ');
      const bool last = c + 1 == cells.size();
      if (align_[c] == Align::kRight) {
        out += pad + cells[c];
      } else {
        out += cells[c];
        if (!last) out += pad;
      }
      if (!last) out += "  ";
    }
    while (!out.empty() && out.back() == ' ')
      out.pop_back();
    return out + "\n";
  };
  std::string out = line(header_);
  size_t total = 0;
  for (size_t c = 0; c < width.size(); ++c)
    total += width[c] + (c + 1 < width.size() ? 2 : 0);
  out += std::string(total, '-') + "\n";
  for (const auto& row : rows_)
    out += line(row);
  return out;
}

}  // namespace gpuvs
