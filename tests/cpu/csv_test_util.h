// RFC 4180 records for the tests that read gpuvs's CSV back: quoted fields may hold
// commas, doubled quotes and newlines.
#pragma once

#include <string>
#include <vector>

namespace gpuvs_test {

inline std::vector<std::vector<std::string>> parse_csv(const std::string& text) {
  std::vector<std::vector<std::string>> rows(1);
  std::string field;
  bool quoted = false;
  for (size_t i = 0; i < text.size(); ++i) {
    const char ch = text[i];
    if (quoted) {
      if (ch == '"' && i + 1 < text.size() && text[i + 1] == '"') {
        field += '"';
        ++i;
      } else if (ch == '"') {
        quoted = false;
      } else {
        field += ch;
      }
    } else if (ch == '"') {
      quoted = true;
    } else if (ch == ',') {
      rows.back().push_back(field);
      field.clear();
    } else if (ch == '\n') {
      rows.back().push_back(field);
      field.clear();
      rows.emplace_back();
    } else {
      field += ch;
    }
  }
  if (rows.back().empty()) rows.pop_back();
  return rows;
}

}  // namespace gpuvs_test
