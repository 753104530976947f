#pragma once
// "Did you mean": the nearest known word to a mistyped command or flag, within two edits.
#include <algorithm>
#include <string>
#include <vector>

namespace habitat::cli {

[[nodiscard]] inline std::size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<std::size_t> row(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    std::size_t prev = row[0]++;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t cur = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, prev + (a[i - 1] != b[j - 1])});
      prev = cur;
    }
  }
  return row.back();
}

// The candidate nearest to `given`, if one is within two edits; empty otherwise.
[[nodiscard]] inline std::string nearest(const std::string& given, const std::vector<std::string>& candidates) {
  std::string best;
  std::size_t best_d = 3;
  for (const auto& c : candidates)
    if (const std::size_t d = edit_distance(given, c); d < best_d) best_d = d, best = c;
  return best;
}

}  // namespace habitat::cli
