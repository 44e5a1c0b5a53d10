#include "report/table.h"

#include <algorithm>
#include <stdexcept>
#include <string>
#include <vector>

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

namespace {

size_t g_table_width = 0;
constexpr size_t kMinTextWidth = 20;  // narrower than that, a paragraph is left whole

// The first `n` display columns of `s` (whole UTF-8 sequences).
size_t byte_prefix(const std::string& s, size_t n) {
  size_t cols = 0, i = 0;
  while (i < s.size()) {
    if ((static_cast<unsigned char>(s[i]) & 0xC0) != 0x80) {
      if (cols == n) break;
      ++cols;
    }
    ++i;
  }
  return i;
}

// `s` cut into pieces of at most `width` display columns, at the last space that
// keeps a piece within it where there is one.
std::vector<std::string> wrap(const std::string& s, size_t width) {
  std::vector<std::string> out;
  std::string rest = s;
  while (display_width(rest) > width) {
    size_t cut = byte_prefix(rest, width);
    const size_t space = rest.rfind(' ', cut);
    size_t next = cut;
    if (space != std::string::npos && space > 0 && rest[cut] == ' ') {
      next = cut + 1;  // the cut falls on a space: drop it
    } else if (space != std::string::npos && space > 0) {
      cut = space;
      next = space + 1;
    }
    out.push_back(rest.substr(0, cut));
    rest = rest.substr(next);
  }
  out.push_back(rest);
  return out;
}

}  // namespace

std::string fit_text(const std::string& text, const std::string& first, const std::string& rest,
                     size_t width) {
  const size_t indent = std::max(display_width(first), display_width(rest));
  if (width == 0 || width <= indent + kMinTextWidth) return first + text + "\n";
  std::string out;
  const std::vector<std::string> lines = wrap(text, width - indent);
  for (size_t i = 0; i < lines.size(); ++i)
    out += (i == 0 ? first : rest) + lines[i] + "\n";
  return out;
}

std::string fit_lines(const std::string& text, size_t width) {
  if (width == 0) return text;
  std::string out;
  size_t start = 0;
  while (start < text.size()) {
    const size_t end = text.find('\n', start);
    const std::string line =
        text.substr(start, end == std::string::npos ? std::string::npos : end - start);
    start = end == std::string::npos ? text.size() : end + 1;
    if (display_width(line) <= width || line.find_first_not_of(' ') == std::string::npos) {
      out += line;
      if (end != std::string::npos) out += '\n';
      continue;
    }
    const size_t indent = line.find_first_not_of(' ');
    const bool item = line.compare(indent, 2, "- ") == 0;
    const size_t lead = indent + (item ? 2 : 0);
    std::string fitted =
        fit_text(line.substr(lead), line.substr(0, lead), std::string(lead, ' '), width);
    if (end == std::string::npos) fitted.pop_back();  // the text's last line had no '\n'
    out += fitted;
  }
  return out;
}

void set_table_width(size_t columns) {
  g_table_width = columns;
}

size_t table_width() {
  return g_table_width;
}

std::string TextTable::render(size_t max_width) const {
  std::vector<size_t> width(header_.size());
  for (size_t c = 0; c < header_.size(); ++c) {
    width[c] = display_width(header_[c]);
    for (const auto& row : rows_)
      width[c] = std::max(width[c], display_width(row[c]));
  }
  const auto total_width = [&] {
    size_t t = 0;
    for (size_t c = 0; c < width.size(); ++c)
      t += width[c] + (c + 1 < width.size() ? 2 : 0);
    return t;
  };
  if (max_width > 0 && notes_column_ < header_.size() && header_.size() > 1) {
    size_t narrowest = 0;
    for (size_t c = 0; c < width.size(); ++c)
      narrowest += std::min(width[c], kMinColumnWidth) + (c + 1 < width.size() ? 2 : 0);
    if (narrowest > max_width) {
      const auto without = [&](std::vector<std::string> cells) {
        cells.erase(cells.begin() + static_cast<std::ptrdiff_t>(notes_column_));
        return cells;
      };
      std::vector<Align> align = align_;
      align.erase(align.begin() + static_cast<std::ptrdiff_t>(notes_column_));
      TextTable rest(without(header_), align);
      std::string notes;
      for (const auto& row : rows_) {
        rest.add_row(without(row));
        const std::string& note = row[notes_column_];
        if (note.empty()) continue;
        const std::string head = "  " + (notes_column_ == 0 ? row[1] : row[0]) + ": ";
        notes += fit_text(note, head, std::string(display_width(head), ' '), max_width);
      }
      return rest.render(max_width) +
             (notes.empty() ? "" : "\n" + header_[notes_column_] + ":\n" + notes);
    }
  }
  // Too wide: take one column from the widest column that can still give one, until
  // the table fits or none can.
  if (max_width > 0) {
    std::vector<size_t> floor(width.size());
    for (size_t c = 0; c < width.size(); ++c)
      floor[c] = std::min(width[c], kMinColumnWidth);
    while (total_width() > max_width) {
      size_t widest = width.size();
      for (size_t c = 0; c < width.size(); ++c)
        if (width[c] > floor[c] && (widest == width.size() || width[c] > width[widest])) widest = c;
      if (widest == width.size()) break;
      --width[widest];
    }
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
  // A row whose cells are wider than their columns: one line per piece, the cells of
  // the row top-aligned.
  auto row_lines = [&](const std::vector<std::string>& cells) {
    std::vector<std::vector<std::string>> pieces(cells.size());
    size_t lines = 1;
    for (size_t c = 0; c < cells.size(); ++c) {
      pieces[c] = display_width(cells[c]) > width[c] ? wrap(cells[c], width[c])
                                                     : std::vector<std::string>{cells[c]};
      lines = std::max(lines, pieces[c].size());
    }
    std::string out;
    for (size_t l = 0; l < lines; ++l) {
      std::vector<std::string> part(cells.size());
      for (size_t c = 0; c < cells.size(); ++c)
        if (l < pieces[c].size()) part[c] = pieces[c][l];
      out += line(part);
    }
    return out;
  };
  std::string out = row_lines(header_);
  out += std::string(total_width(), '-') + "\n";
  for (const auto& row : rows_)
    out += row_lines(row);
  return out;
}

}  // namespace gpuvs
