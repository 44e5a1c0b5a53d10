#include "core/text.h"

#include <cctype>

namespace gpuvs {

namespace {

// The code point of the well-formed character of `len` bytes at s[i].
char32_t decode(std::string_view s, std::size_t i, std::size_t len) {
  const auto b = [&](std::size_t k) { return char32_t(static_cast<unsigned char>(s[i + k])); };
  switch (len) {
    case 1:
      return b(0);
    case 2:
      return (b(0) & 0x1F) << 6 | (b(1) & 0x3F);
    case 3:
      return (b(0) & 0x0F) << 12 | (b(1) & 0x3F) << 6 | (b(2) & 0x3F);
    default:
      return (b(0) & 0x07) << 18 | (b(1) & 0x3F) << 12 | (b(2) & 0x3F) << 6 | (b(3) & 0x3F);
  }
}

// DEL, C1, and the bidi controls that reorder what follows them on the line.
bool is_escaped_code_point(char32_t c) {
  return c == 0x7F || (c >= 0x80 && c <= 0x9F) || (c >= 0x202A && c <= 0x202E) ||
         (c >= 0x2066 && c <= 0x2069);
}

bool starts_formula(std::string_view s) {
  return !s.empty() && std::string_view("=+-@\t\r").find(s.front()) != std::string_view::npos;
}

}  // namespace

std::size_t utf8_length(std::string_view s, std::size_t i) {
  const auto byte = [&](std::size_t k) -> unsigned {
    return i + k < s.size() ? static_cast<unsigned char>(s[i + k]) : 0u;
  };
  const auto in = [](unsigned b, unsigned lo, unsigned hi) { return b >= lo && b <= hi; };
  const unsigned c = byte(0);
  if (c < 0x80) return 1;
  if (in(c, 0xC2, 0xDF)) return in(byte(1), 0x80, 0xBF) ? 2 : 0;
  if (in(c, 0xE0, 0xEF)) {
    const unsigned lo = c == 0xE0 ? 0xA0 : 0x80;
    const unsigned hi = c == 0xED ? 0x9F : 0xBF;
    return in(byte(1), lo, hi) && in(byte(2), 0x80, 0xBF) ? 3 : 0;
  }
  if (in(c, 0xF0, 0xF4)) {
    const unsigned lo = c == 0xF0 ? 0x90 : 0x80;
    const unsigned hi = c == 0xF4 ? 0x8F : 0xBF;
    return in(byte(1), lo, hi) && in(byte(2), 0x80, 0xBF) && in(byte(3), 0x80, 0xBF) ? 4 : 0;
  }
  return 0;
}

std::string escape_controls(std::string_view s, bool keep_lines, bool escape_quotes) {
  std::string out;
  out.reserve(s.size());
  for (std::size_t i = 0; i < s.size();) {
    const auto c = static_cast<unsigned char>(s[i]);
    const std::size_t len = utf8_length(s, i);
    if (len == 0) {  // not UTF-8: the byte, shown
      out += fmt::format("\\x{:02x}", unsigned(c));
      ++i;
      continue;
    }
    const char32_t cp = decode(s, i, len);
    if (is_escaped_code_point(cp)) {
      out += fmt::format("\\u{:04x}", unsigned(cp));
    } else if (cp == '\n' || cp == '\t') {
      out += keep_lines ? std::string(1, char(c)) : (cp == '\n' ? "\\n" : "\\t");
    } else if (cp < 0x20) {
      out += fmt::format("\\x{:02x}", unsigned(c));
    } else if (escape_quotes && (cp == '"' || cp == '\\')) {
      out += '\\';
      out += char(c);
    } else {
      out.append(s.substr(i, len));
    }
    i += len;
  }
  return out;
}

std::string markdown_cell(std::string_view s) {
  std::string flat(s);
  for (char& ch : flat)
    if (ch == '\n' || ch == '\r' || ch == '\t') ch = ' ';
  std::string out;
  out.reserve(flat.size());
  for (char ch : escape_controls(flat, false)) {
    switch (ch) {
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '&':
        out += "&amp;";
        break;
      case '\\':
      case '|':
      case '`':
      case '[':
      case ']':
        out += '\\';
        out += ch;
        break;
      default:
        out += ch;
    }
  }
  return out;
}

std::string markdown_line(std::string_view s) {
  std::string out = markdown_cell(s);
  if (!out.empty() && std::string_view("#-+*").find(out.front()) != std::string_view::npos)
    return "\\" + out;
  std::size_t digits = 0;
  while (digits < out.size() && std::isdigit(static_cast<unsigned char>(out[digits])))
    ++digits;
  if (digits > 0 && digits < out.size() && (out[digits] == '.' || out[digits] == ')'))
    out.insert(digits, "\\");
  return out;
}

CsvCell::CsvCell(std::string_view text) {
  const std::string shown = escape_controls(text, true);
  const bool formula = starts_formula(text);
  if (!formula && shown.find_first_of(",\"\r\n") == std::string::npos) {
    field_ = shown;
    return;
  }
  field_ = formula ? "\"'" : "\"";
  for (char ch : shown) {
    if (ch == '"') field_ += '"';
    field_ += ch;
  }
  field_ += '"';
}

CsvCell CsvCell::number(std::optional<double> v) {
  return {Raw{}, v ? fmt::format("{}", *v) : std::string()};
}

CsvCell CsvCell::fixed(std::optional<double> v, int decimals) {
  return {Raw{}, v ? fmt::format("{:.{}f}", *v, decimals) : std::string()};
}

CsvCell CsvCell::integer(long long v) {
  return {Raw{}, fmt::format("{}", v)};
}

CsvCell CsvCell::boolean(bool v) {
  return {Raw{}, v ? "true" : "false"};
}

std::string csv_line(const std::vector<CsvCell>& cells) {
  std::string out;
  for (std::size_t i = 0; i < cells.size(); ++i) {
    if (i) out += ',';
    out += cells[i].field();
  }
  return out + "\n";
}

}  // namespace gpuvs
