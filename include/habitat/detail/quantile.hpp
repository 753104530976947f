#pragma once
// Order statistics of a sample, taken by value (the caller's order is kept): the nearest-rank quantile and
// the median, with a fallback for an empty sample.
#include <algorithm>
#include <cstddef>
#include <vector>

namespace habitat::detail {

[[nodiscard]] inline double quantile(std::vector<double> v, double q, double fallback) {
  if (v.empty()) return fallback;
  auto at = v.begin() + static_cast<std::ptrdiff_t>(q * static_cast<double>(v.size() - 1) + 0.5);
  std::nth_element(v.begin(), at, v.end());
  return *at;
}
[[nodiscard]] inline double median(std::vector<double> v, double fallback) { return quantile(std::move(v), 0.5, fallback); }
// The median of a few values, the middle two averaged where the count is even (two runs: their mean): repeats of a
// measurement, or one figure per GPU or host (opstudy::floor_without, study::unseen), where the nearest rank
// would take the upper of the middle two.
[[nodiscard]] inline double median_of_runs(std::vector<double> v, double fallback) {
  if (v.empty()) return fallback;
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

}  // namespace habitat::detail
