#pragma once
// Ordinary least squares of y on x, one point at a time: the studies' straight-line fits.
#include <optional>

namespace habitat::detail {

struct LineFit {
  double n = 0, sx = 0, sy = 0, sxx = 0, sxy = 0;

  void add(double x, double y) { n += 1, sx += x, sy += y, sxx += x * x, sxy += x * y; }

  struct Line {
    double intercept, slope;
  };
  // The line through at least `min_points` points whose x vary; nothing otherwise.
  [[nodiscard]] std::optional<Line> line(double min_points = 2) const {
    const double det = n * sxx - sx * sx;
    if (n < min_points || !(det > 0)) return std::nullopt;
    const double slope = (n * sxy - sx * sy) / det;
    return Line{(sy - slope * sx) / n, slope};
  }
};

}  // namespace habitat::detail
