#pragma once
// CSV helpers shared by the readers of ncu exports and operation datasets.
#include <charconv>
#include <cmath>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "habitat/error.hpp"

namespace habitat::detail {

// Splits one CSV record ("" escapes a quote inside a quoted field).
[[nodiscard]] inline std::vector<std::string> split_csv_line(std::string_view line, std::string_view file, std::size_t lineno) {
  std::vector<std::string> out;
  std::string cur;
  bool quoted = false, was_quoted = false;
  for (std::size_t i = 0; i < line.size(); ++i) {
    const char c = line[i];
    if (quoted) {
      if (c == '"' && i + 1 < line.size() && line[i + 1] == '"') cur.push_back('"'), ++i;
      else if (c == '"') quoted = false;
      else cur.push_back(c);
    } else if (c == '"' && cur.empty() && !was_quoted) {
      quoted = was_quoted = true;
    } else if (c == ',') {
      out.push_back(std::move(cur));
      cur.clear();
      was_quoted = false;
    } else if (c != '\r') {
      cur.push_back(c);
    }
  }
  if (quoted) throw make_error(file, "line " + std::to_string(lineno), "unterminated quoted field");
  out.push_back(std::move(cur));
  return out;
}

// "1,234.5" -> 1234.5; nullopt for anything that is not a number ("n/a", empty).
[[nodiscard]] inline std::optional<double> parse_csv_number(std::string_view s) {
  std::string clean;
  for (char c : s)
    if (c != ',' && c != ' ') clean.push_back(c);
  if (clean.empty()) return std::nullopt;
  double v = 0;
  auto [p, ec] = std::from_chars(clean.data(), clean.data() + clean.size(), v);
  if (ec != std::errc() || p != clean.data() + clean.size() || !std::isfinite(v)) return std::nullopt;
  return v;
}

// Non-empty items of a list separated by sep ("a,b" -> {"a", "b"}).
[[nodiscard]] inline std::vector<std::string> split(std::string_view s, char sep) {
  std::vector<std::string> out;
  while (!s.empty()) {
    const auto p = s.find(sep);
    if (p != 0) out.emplace_back(s.substr(0, p));
    if (p == std::string_view::npos) break;
    s.remove_prefix(p + 1);
  }
  return out;
}

// One field for a CSV record: quoted (with quotes doubled) when it holds a separator, quote or newline.
[[nodiscard]] inline std::string csv_field(const std::string& s) {
  if (s.find_first_of(",\"\n") == std::string::npos) return s;
  std::string q = "\"";
  for (char c : s) q += c == '"' ? std::string("\"\"") : std::string(1, c);
  return q + "\"";
}

}  // namespace habitat::detail
