#pragma once
// Predicted against measured, as an SVG scatter plot on log-log axes: the accuracy studies' plot, where a
// reader would rather look than read a table of errors. The diagonal is a perfect prediction, the dashed
// lines +-10%. Drawn with the HTML report's primitives (report/html.hpp), so one page or one .svg file.
#include <algorithm>
#include <cmath>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

#include "habitat/report/html.hpp"

namespace habitat::report {

struct ScatterPoint {
  double measured = 0, predicted = 0;
  std::size_t series = 0;  // index into the series names (its color)
  std::string label;       // tooltip
};

struct ScatterAxes {
  double lo = 1, hi = 10;  // data range on both axes (log)
  double x0 = 70, y0 = 20, w = 420, h = 420;  // plot area in the SVG
  [[nodiscard]] double fx(double v) const { return x0 + w * (std::log10(v) - std::log10(lo)) / (std::log10(hi) - std::log10(lo)); }
  [[nodiscard]] double fy(double v) const { return y0 + h - h * (std::log10(v) - std::log10(lo)) / (std::log10(hi) - std::log10(lo)); }
};

// The range both axes share: every finite positive value, widened to 1-2-5 steps.
[[nodiscard]] inline ScatterAxes scatter_axes(const std::vector<ScatterPoint>& pts) {
  double lo = INFINITY, hi = 0;
  for (const auto& p : pts)
    for (const double v : {p.measured, p.predicted})
      if (std::isfinite(v) && v > 0) lo = std::min(lo, v), hi = std::max(hi, v);
  ScatterAxes a;
  if (!(hi > 0)) return a;
  a.hi = html::nice_ceiling(hi);
  a.lo = std::pow(10.0, std::floor(std::log10(lo)));
  return a;
}

inline void scatter_body(std::ostream& os, const std::vector<ScatterPoint>& pts, const std::vector<std::string>& series,
                         std::string_view x_label, std::string_view y_label) {
  const ScatterAxes a = scatter_axes(pts);
  auto line = [&](double f, std::string_view style) {  // predicted = f x measured, inside the plot area
    const double from = std::max(a.lo, a.lo / f), to = std::min(a.hi, a.hi / f);
    os << "<line x1=\"" << html::px(a.fx(from)) << "\" y1=\"" << html::px(a.fy(from * f)) << "\" x2=\"" << html::px(a.fx(to)) << "\" y2=\""
       << html::px(a.fy(to * f)) << "\" stroke=\"#888\" " << style << "/>\n";
  };
  for (double d = a.lo; d <= a.hi * 1.0001; d *= 10)
    for (const double m : {1.0, 2.0, 5.0}) {
      const double v = d * m;
      if (v > a.hi * 1.0001) break;
      os << "<line x1=\"" << html::px(a.fx(v)) << "\" y1=\"" << html::px(a.y0) << "\" x2=\"" << html::px(a.fx(v)) << "\" y2=\"" << html::px(a.y0 + a.h)
         << "\" stroke=\"#eee\"/><line x1=\"" << html::px(a.x0) << "\" y1=\"" << html::px(a.fy(v)) << "\" x2=\"" << html::px(a.x0 + a.w) << "\" y2=\""
         << html::px(a.fy(v)) << "\" stroke=\"#eee\"/>\n";
      html::text(os, a.fx(v), a.y0 + a.h + 16, html::num(v, "%g"), "text-anchor=\"middle\" font-size=\"11\"");
      html::text(os, a.x0 - 6, a.fy(v) + 4, html::num(v, "%g"), "text-anchor=\"end\" font-size=\"11\"");
    }
  line(1.0, "");
  line(1.1, "stroke-dasharray=\"4 3\"");
  line(1 / 1.1, "stroke-dasharray=\"4 3\"");
  for (const auto& p : pts) {
    if (!(p.measured > 0 && p.predicted > 0 && std::isfinite(p.measured) && std::isfinite(p.predicted))) continue;
    os << "<circle class=\"point\" cx=\"" << html::px(a.fx(p.measured)) << "\" cy=\"" << html::px(a.fy(p.predicted)) << "\" r=\"4\" fill=\""
       << html::color(p.series) << "\" fill-opacity=\"0.8\"><title>" << html::esc(p.label) << "</title></circle>\n";
  }
  html::text(os, a.x0 + a.w / 2, a.y0 + a.h + 36, x_label, "text-anchor=\"middle\" font-size=\"12\"");
  html::text(os, 16, a.y0 + a.h / 2, y_label, "text-anchor=\"middle\" font-size=\"12\" transform=\"rotate(-90 16 " + html::px(a.y0 + a.h / 2) + ")\"");
  html::legend(os, a.x0 + 10, a.y0 + 14, series, a.w - 20);
}

// A standalone .svg file (for a README): the plot with its title.
inline void write_scatter_svg(std::ostream& os, std::string_view title, const std::vector<ScatterPoint>& pts, const std::vector<std::string>& series,
                              std::string_view x_label, std::string_view y_label) {
  os << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"520\" height=\"520\" viewBox=\"0 0 520 520\" font-family=\"sans-serif\" font-size=\"12\">\n"
     << "<rect width=\"520\" height=\"520\" fill=\"white\"/>\n<title>" << html::esc(title) << "</title>\n<g transform=\"translate(0 24)\">\n";
  scatter_body(os, pts, series, x_label, y_label);
  os << "</g>\n";
  html::text(os, 260, 18, title, "text-anchor=\"middle\" font-size=\"14\" font-weight=\"bold\"");
  os << "</svg>\n";
}

}  // namespace habitat::report
