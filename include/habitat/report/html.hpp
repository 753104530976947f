#pragma once
// The prediction as one self-contained HTML page: bar charts of iteration time, throughput and samples
// per dollar (like Fig. 6/7 of the Habitat paper), breakdowns by operation and by method, the simulated
// step's timeline, the what-if beside the as-traced step, and how far each prediction can be trusted.
//
// Why SVG written here rather than a vendored JS chart library: the page must open offline as one file
// (a report mailed or attached to a ticket), so nothing may be fetched; a vendored library would be a
// dependency to update and audit, and hundreds of kB in every report; SVG written by the project is
// deterministic, so tests can check the drawn bars as text without running any JavaScript. The only
// script counts drawn elements, for the headless-browser test (tests/report/browser_test.sh).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <map>
#include <optional>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

#include "habitat/report/whatif_summary.hpp"
#include "habitat/report/writers.hpp"

namespace habitat::report {

struct HtmlInput {
  const Trace* trace = nullptr;             // the origin trace (kernel names, streams); may be null
  OriginSummary origin;
  std::vector<PredictedTrace> predictions;  // one per destination GPU
  std::vector<std::string> validation;      // per prediction: the catalog's validation status ("" = physics only)
  std::vector<double> usd_per_hour;         // per prediction: price used for samples/$ (0 = none)
  const WhatIfSummary* what_if = nullptr;   // may be null
  std::optional<int> batch;                 // samples per step (for throughput); may be empty
  std::vector<std::string> notes;           // warnings and assumptions to show
  std::string source;                       // trace file name, for the title
};

namespace html {

// Text for HTML content and attribute values alike.
[[nodiscard]] inline std::string esc(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (const char c : s) {
    switch (c) {
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '&': out += "&amp;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&#39;"; break;
      default: out += c;
    }
  }
  return out;
}

// A number for people: "–" where it is not finite, so a page never shows nan or inf.
[[nodiscard]] inline std::string num(double v, const char* f = "%.3f") { return std::isfinite(v) ? fmt(f, v) : "–"; }
[[nodiscard]] inline std::string num(const std::optional<double>& v, const char* f = "%.1f") { return v ? num(*v, f) : "–"; }
// An SVG coordinate: never non-finite either (a broken value draws at 0 rather than breaking the page).
[[nodiscard]] inline std::string px(double v) { return fmt("%.1f", std::isfinite(v) ? v : 0.0); }
[[nodiscard]] inline double finite_or(double v, double fallback) { return std::isfinite(v) ? v : fallback; }

inline constexpr const char* palette[] = {"#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#76b7b2",
                                          "#edc948", "#b07aa1", "#ff9da7", "#9c755f", "#bab0ac"};
[[nodiscard]] inline const char* color(std::size_t i) { return palette[i % std::size(palette)]; }

// The smallest 1-2-5 step above v (an axis's top), 1 where there is nothing to show.
[[nodiscard]] inline double nice_ceiling(double v) {
  if (!(v > 0) || !std::isfinite(v)) return 1;
  const double mag = std::pow(10.0, std::floor(std::log10(v)));
  for (const double m : {1.0, 2.0, 5.0, 10.0})
    if (m * mag >= v) return m * mag;
  return 10 * mag;
}

inline void text(std::ostream& os, double x, double y, std::string_view s, std::string_view attrs = "") {
  os << "<text x=\"" << px(x) << "\" y=\"" << px(y) << "\" " << attrs << ">" << esc(s) << "</text>\n";
}

inline void rect(std::ostream& os, std::string_view cls, double x, double y, double w, double h, const char* fill, std::string_view tip = "") {
  os << "<rect class=\"" << cls << "\" x=\"" << px(x) << "\" y=\"" << px(y) << "\" width=\"" << px(std::max(w, 0.0)) << "\" height=\""
     << px(std::max(h, 0.0)) << "\" fill=\"" << fill << "\">";
  if (!tip.empty()) os << "<title>" << esc(tip) << "</title>";
  os << "</rect>\n";
}

// A legend of colored squares (class "legend", so it is never counted as a bar or segment), in as many
// columns of `width` as the longest name leaves room for.
struct LegendGrid {
  double item_w = 120;
  std::size_t cols = 1;
};
[[nodiscard]] inline LegendGrid legend_grid(const std::vector<std::string>& names, double width) {
  std::size_t longest = 0;
  for (const auto& n : names) longest = std::max(longest, n.size());
  const double item_w = std::clamp(7.0 * double(longest) + 30, 120.0, width);
  return {item_w, std::max<std::size_t>(1, static_cast<std::size_t>(width / item_w))};
}
[[nodiscard]] inline double legend_height(const std::vector<std::string>& names, double width) {
  return 18.0 * double((names.size() + legend_grid(names, width).cols - 1) / legend_grid(names, width).cols);
}
inline void legend(std::ostream& os, double x, double y, const std::vector<std::string>& names, double width) {
  const LegendGrid g = legend_grid(names, width);
  const auto fits = static_cast<std::size_t>((g.item_w - 30) / 7);  // characters of 12px text in an item
  for (std::size_t i = 0; i < names.size(); ++i) {
    const double lx = x + double(i % g.cols) * g.item_w, ly = y + double(i / g.cols) * 18;
    rect(os, "legend", lx, ly - 10, 11, 11, color(i));
    text(os, lx + 16, ly, names[i].size() > fits ? names[i].substr(0, fits - 1) + "…" : names[i]);
  }
}

inline void svg_open(std::ostream& os, std::string_view kind, double w, double h, std::string_view title) {
  os << "<figure><svg class=\"chart\" data-chart=\"" << kind << "\" width=\"" << px(w) << "\" height=\""
     << px(h) << "\" viewBox=\"0 0 " << px(w) << ' ' << px(h) << "\" role=\"img\"><title>" << esc(title) << "</title>\n";
}
inline void svg_close(std::ostream& os, std::string_view caption) {
  os << "</svg><figcaption>" << esc(caption) << "</figcaption></figure>\n";
}

// One bar chart for every per-GPU quantity: a series is one bar per GPU (two series: grouped bars).
// A missing or non-finite value draws no bar, only "–".
struct Series {
  std::string name;
  std::vector<std::optional<double>> values;  // per GPU
};
struct Reference {  // a dashed line across the chart, e.g. the origin's own iteration time
  std::string label;
  double value = 0;
};

inline void bar_chart(std::ostream& os, std::string_view kind, std::string_view title, std::string_view unit, const char* value_fmt,
                      const std::vector<std::string>& gpus, const std::vector<Series>& series, const std::optional<Reference>& ref = {},
                      std::string_view category = "destination GPU") {
  constexpr double left = 80, top = 40, plot_h = 260, bottom = 110, bar_w = 44, gap = 28;
  // Groups spread over the plot: a few GPUs get wide gaps rather than a crowded corner.
  const double plot_w = std::max(360.0, double(gpus.size()) * (double(series.size()) * bar_w + gap)), w = left + plot_w + 20;
  const double group_w = plot_w / double(std::max<std::size_t>(gpus.size(), 1));
  double peak = ref ? finite_or(ref->value, 0) : 0;
  for (const auto& s : series)
    for (const auto& v : s.values) peak = std::max(peak, v ? finite_or(*v, 0) : 0);
  const double ymax = nice_ceiling(peak * 1.05);
  auto y_of = [&](double v) { return top + plot_h - plot_h * std::clamp(v / ymax, 0.0, 1.0); };
  std::vector<std::string> names;  // the legend's, drawn where there are several series
  for (const auto& s : series) names.push_back(s.name);
  svg_open(os, kind, w, top + plot_h + bottom + (series.size() > 1 ? legend_height(names, plot_w) + 8 : 0), title);
  text(os, left, 20, title, "class=\"title\"");
  for (int i = 0; i <= 5; ++i) {  // y axis: ticks, grid and the unit
    const double v = ymax * i / 5, y = y_of(v);
    os << "<line class=\"grid\" x1=\"" << px(left) << "\" x2=\"" << px(left + plot_w) << "\" y1=\"" << px(y) << "\" y2=\"" << px(y) << "\"/>\n";
    text(os, left - 6, y + 4, num(v, "%.7g"), "text-anchor=\"end\"");
  }
  text(os, 18, top + plot_h / 2, unit, "class=\"axis\" text-anchor=\"middle\" transform=\"rotate(-90 18 " + px(top + plot_h / 2) + ")\"");
  for (std::size_t g = 0; g < gpus.size(); ++g) {
    const double gx = left + double(g) * group_w + (group_w - double(series.size()) * bar_w) / 2;
    for (std::size_t s = 0; s < series.size(); ++s) {
      const auto& v = g < series[s].values.size() ? series[s].values[g] : std::nullopt;
      const double x = gx + double(s) * bar_w, cx = x + (bar_w - 6) / 2;
      const bool drawn = v && std::isfinite(*v) && *v >= 0;
      if (drawn) rect(os, "bar", x, y_of(*v), bar_w - 6, top + plot_h - y_of(*v), color(s), gpus[g] + ", " + series[s].name + ": " + num(*v, value_fmt));
      text(os, cx, (drawn ? y_of(*v) : top + plot_h) - 4, v ? num(*v, value_fmt) : "–", "class=\"value\" text-anchor=\"middle\"");
    }
    const double lx = gx + double(series.size()) * bar_w / 2, ly = top + plot_h + 14;
    text(os, lx, ly, gpus[g], "text-anchor=\"end\" transform=\"rotate(-30 " + px(lx) + ' ' + px(ly) + ")\"");
  }
  if (ref && std::isfinite(ref->value)) {
    const double y = y_of(ref->value);
    os << "<line class=\"ref\" x1=\"" << px(left) << "\" x2=\"" << px(left + plot_w) << "\" y1=\"" << px(y) << "\" y2=\"" << px(y) << "\"/>\n";
    // Its label beside the title: over the bars it would collide with their value labels.
    os << "<line class=\"ref\" x1=\"" << px(left + plot_w - 24) << "\" x2=\"" << px(left + plot_w) << "\" y1=\"16\" y2=\"16\"/>\n";
    text(os, left + plot_w - 30, 20, ref->label + ": " + num(ref->value, value_fmt), "class=\"value\" text-anchor=\"end\"");
  }
  os << "<line class=\"axisline\" x1=\"" << px(left) << "\" x2=\"" << px(left + plot_w) << "\" y1=\"" << px(top + plot_h) << "\" y2=\""
     << px(top + plot_h) << "\"/>\n";
  text(os, left + plot_w / 2, top + plot_h + bottom - 8, category, "class=\"axis\" text-anchor=\"middle\"");
  if (series.size() > 1) legend(os, left, top + plot_h + bottom + 12, names, plot_w);
  svg_close(os, std::string(title) + " per " + std::string(category) + ", in " + std::string(unit) + ".");
}

// Stacked horizontal bars, one per GPU: ms[g][k] is key k's predicted time on GPU g.
inline void stacked_chart(std::ostream& os, std::string_view kind, std::string_view title, const std::vector<std::string>& gpus,
                          const std::vector<std::string>& keys, const std::vector<std::vector<double>>& ms) {
  constexpr double left = 170, top = 36, row_h = 24, plot_w = 720;
  double peak = 0;
  for (const auto& row : ms) {
    double sum = 0;
    for (const double v : row) sum += finite_or(v, 0);
    peak = std::max(peak, sum);
  }
  const double scale = plot_w / nice_ceiling(peak), legend_y = top + double(gpus.size()) * row_h + 26;
  svg_open(os, kind, left + plot_w + 110, legend_y + legend_height(keys, plot_w + 100) + 10, title);
  text(os, 10, 20, title, "class=\"title\"");
  for (std::size_t g = 0; g < gpus.size(); ++g) {
    const double y = top + double(g) * row_h;
    double x = left;
    text(os, left - 8, y + 15, gpus[g], "text-anchor=\"end\"");
    for (std::size_t k = 0; k < keys.size() && k < ms[g].size(); ++k) {
      const double w = finite_or(ms[g][k], 0) * scale;
      rect(os, "seg", x, y + 3, w, row_h - 6, color(k), keys[k] + ": " + num(ms[g][k]) + " ms");
      x += w;
    }
    double sum = 0;
    for (const double v : ms[g]) sum += v;
    text(os, x + 6, y + 15, num(sum) + " ms", "class=\"value\"");
  }
  legend(os, 10, legend_y, keys, plot_w + 100);
  svg_close(os, std::string(title) + ": predicted GPU time (ms) of each destination, stacked.");
}

// The per-GPU matrix of a breakdown: the first `top` keys (rows are sorted by origin time) and "other".
struct Stack {
  std::vector<std::string> keys;
  std::vector<std::vector<double>> ms;
};
[[nodiscard]] inline Stack stack_of(const std::vector<PredictedTrace>& ps, std::vector<BreakdownRow> PredictedTrace::*rows, std::size_t top) {
  Stack s;
  std::map<std::string, std::size_t> index;
  for (const auto& p : ps)
    for (const auto& r : p.*rows)
      if (!index.contains(r.key) && index.size() < top) {
        index[r.key] = s.keys.size();
        s.keys.push_back(r.key);
      }
  bool other = false;
  for (const auto& p : ps) {
    auto& row = s.ms.emplace_back(s.keys.size() + 1, 0.0);
    for (const auto& r : p.*rows) {
      const auto it = index.find(r.key);
      other |= it == index.end();
      row[it == index.end() ? s.keys.size() : it->second] += r.predicted_us / 1e3;
    }
  }
  if (other) s.keys.push_back("other");
  else
    for (auto& row : s.ms) row.pop_back();
  return s;
}

// A kernel bar on the timeline: neighbours closer than a pixel, of which one is under a pixel, are merged.
struct Span {
  double x0 = 0, x1 = 0;
  std::size_t first = 0, count = 1;
};
[[nodiscard]] inline std::vector<Span> lane_spans(const std::vector<std::size_t>& kernels, const sim::Timeline& tl, double t0, double scale) {
  std::vector<Span> out;
  for (const std::size_t k : kernels) {
    const double x0 = (tl.last_step[k].first - t0) * scale, x1 = (tl.last_step[k].second - t0) * scale;
    if (!out.empty() && x0 - out.back().x1 < 1 && (x1 - x0 < 1 || out.back().x1 - out.back().x0 < 1)) {
      out.back().x1 = std::max(out.back().x1, x1);
      ++out.back().count;
    } else {
      out.push_back({x0, x1, k, 1});
    }
  }
  return out;
}

inline constexpr std::size_t max_drawn_kernels = 20000;  // keeps a page of a long step small

// One simulated step: a lane per GPU stream, kernels at their simulated (start, end), a time axis in ms.
inline void timeline_chart(std::ostream& os, std::string_view title, const Trace* t, const sim::Timeline& tl) {
  if (!t || t->kernels.size() != tl.last_step.size() || tl.last_step.empty()) {
    os << "<p class=\"caption\">" << esc(title) << ": no timeline (the trace's kernels are not available here).</p>\n";
    return;
  }
  std::map<std::int64_t, std::vector<std::size_t>> lanes;  // kernels by stream, in start order
  double t0 = tl.last_step.front().first, t1 = t0;
  for (std::size_t k = 0; k < tl.last_step.size(); ++k) {
    lanes[t->kernels[k].stream].push_back(k);
    t0 = std::min(t0, tl.last_step[k].first);
    t1 = std::max(t1, tl.last_step[k].second);
  }
  for (auto& [s, ks] : lanes) std::sort(ks.begin(), ks.end(), [&](auto a, auto b) { return tl.last_step[a].first < tl.last_step[b].first; });
  constexpr double left = 120, top = 36, lane_h = 26, plot_w = 1000;
  const double step_ms = nice_ceiling(finite_or((t1 - t0) / 1e4, 0));  // ten ticks or fewer
  const int ticks = std::max(1, static_cast<int>(std::ceil(finite_or((t1 - t0) / 1e3 / step_ms, 1) - 1e-9)));
  const double scale = plot_w / (ticks * step_ms * 1e3);
  const double h = top + double(lanes.size()) * lane_h + 40;
  svg_open(os, "timeline", left + plot_w + 20, h, title);
  text(os, 10, 20, title, "class=\"title\"");
  std::size_t drawn = 0, dropped = 0, lane = 0;
  for (const auto& [stream, ks] : lanes) {
    const double y = top + double(lane++) * lane_h;
    text(os, left - 8, y + 16, "stream " + std::to_string(stream) + " (" + std::to_string(ks.size()) + ")", "text-anchor=\"end\"");
    for (const Span& sp : lane_spans(ks, tl, t0, scale)) {
      if (drawn == max_drawn_kernels) { dropped += sp.count; continue; }
      const std::string tip = sp.count == 1 ? t->kernels[sp.first].name : std::to_string(sp.count) + " kernels from " + t->kernels[sp.first].name;
      rect(os, "kernel", left + sp.x0, y + 4, std::max(sp.x1 - sp.x0, 0.5), lane_h - 8, color(lane - 1), tip);
      ++drawn;
    }
  }
  const double axis_y = top + double(lanes.size()) * lane_h + 6;
  for (int i = 0; i <= ticks; ++i) {
    const double x = left + plot_w * i / ticks;
    os << "<line class=\"grid\" x1=\"" << px(x) << "\" x2=\"" << px(x) << "\" y1=\"" << px(top) << "\" y2=\"" << px(axis_y) << "\"/>\n";
    text(os, x, axis_y + 14, num(step_ms * i, "%.7g"), "text-anchor=\"middle\"");
  }
  text(os, left - 8, axis_y + 14, "ms", "text-anchor=\"end\" class=\"axis\"");
  std::string cap = std::string(title) + ": GPU busy " + num(tl.gpu_busy_us / 1e3) + " ms of a " + num(tl.period_us / 1e3) + " ms step, host " +
                    num(tl.host_us / 1e3) + " ms (" + tl.verdict() + "). No CPU lane: the simulator keeps no per-call host times, only "
                    "each kernel's position.";
  if (dropped) cap += " " + std::to_string(dropped) + " kernels past the first " + std::to_string(max_drawn_kernels) + " bars are not drawn.";
  svg_close(os, cap);
}

// A table from rows of already-escaped cells.
inline void table(std::ostream& os, std::string_view cls, const std::vector<std::string>& head, const std::vector<std::vector<std::string>>& rows) {
  os << "<table class=\"" << cls << "\"><thead><tr>";
  for (const auto& h : head) os << "<th>" << esc(h) << "</th>";
  os << "</tr></thead><tbody>\n";
  for (const auto& r : rows) {
    os << "<tr>";
    for (const auto& c : r) os << "<td>" << c << "</td>";
    os << "</tr>\n";
  }
  os << "</tbody></table>\n";
}

inline void list(std::ostream& os, const std::vector<std::string>& items) {
  os << "<ul>";
  for (const auto& n : items) os << "<li>" << esc(n) << "</li>";
  os << "</ul>\n";
}

[[nodiscard]] inline std::vector<std::string> devices(const std::vector<PredictedTrace>& ps) {
  std::vector<std::string> out;
  for (const auto& p : ps) out.push_back(p.device);
  return out;
}

template <class F>
[[nodiscard]] std::vector<std::optional<double>> values(const std::vector<PredictedTrace>& ps, F f) {
  std::vector<std::optional<double>> out;
  for (const auto& p : ps) out.push_back(f(p));
  return out;
}
[[nodiscard]] inline std::optional<double> iteration_ms(const PredictedTrace& p) { return p.iteration_us / 1e3; }

[[nodiscard]] inline double price(const HtmlInput& in, std::size_t i) { return i < in.usd_per_hour.size() ? in.usd_per_hour[i] : 0; }

// The page's head and style, shared by every habitat page (the prediction report, the training report).
inline void page_head(std::ostream& os, std::string_view title) {
  os << "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>habitat: " << esc(title) << "</title>\n<style>\n"
        "body{font:14px/1.4 system-ui,sans-serif;margin:24px;color:#222;max-width:1200px}h2{margin-top:32px;border-bottom:1px solid #ddd}\n"
        "table{border-collapse:collapse;margin:8px 0}th,td{border:1px solid #ccc;padding:3px 8px;text-align:right}th{background:#f4f4f4}\n"
        "td:first-child,th:first-child{text-align:left}svg.chart{font-size:12px;display:block}svg .title{font-weight:600;font-size:14px}\n"
        "svg .grid{stroke:#e6e6e6}svg .axisline{stroke:#444}svg .ref{stroke:#c00;stroke-dasharray:5 4}svg .axis{fill:#555;font-style:italic}\n"
        "svg .value{fill:#333;font-size:11px}figure{margin:12px 24px 12px 0}.row{display:flex;flex-wrap:wrap}figcaption,.caption{color:#555;font-size:12px}.nofit{color:#c00;font-weight:600}\n"
        "</style></head>\n<body>\n";
}
inline void head(std::ostream& os, const HtmlInput& in) { page_head(os, in.source); }

inline void overview(std::ostream& os, const HtmlInput& in) {
  os << "<h1>habitat: " << esc(in.source.empty() ? "prediction" : in.source) << "</h1>\n<p>Traced on <b>" << esc(in.origin.device)
     << "</b>: iteration " << num(in.origin.iteration_us / 1e3) << " ms (un-profiled, simulated), GPU active " << num(in.origin.gpu_active_us / 1e3)
     << " ms" << (in.batch ? ", batch " + std::to_string(*in.batch) : std::string()) << ".</p>\n";
  if (!in.notes.empty()) {
    os << "<h3>Warnings and assumptions</h3>\n";
    list(os, in.notes);
  }
  std::vector<std::vector<std::string>> rows;
  for (std::size_t i = 0; i < in.predictions.size(); ++i) {
    const auto& p = in.predictions[i];
    rows.push_back({esc(p.device), num(p.iteration_us / 1e3), num(p.gpu_active_us / 1e3), p.timeline ? num(p.timeline->gpu_busy_us / 1e3) : "–",
                    p.timeline ? p.timeline->verdict() : "–", num(p.throughput), price(in, i) > 0 ? num(price(in, i), "%.2f") : "–",
                    num(p.cost_normalized_throughput, "%.0f"), esc(p.host)});
  }
  table(os, "summary", {"GPU", "iteration ms", "GPU active ms", "GPU busy ms", "bound", "samples/s", "USD/hour", "samples/$", "host"}, rows);
  // Several GPUs (DDP, FSDP, tensor parallel): the plan's line per GPU, as the table output writes it.
  std::vector<std::string> plans;
  for (const auto& p : in.predictions)
    if (p.data_parallel) plans.push_back(p.device + ": " + data_parallel_line(*p.data_parallel, p.iteration_us));
  if (!plans.empty()) {
    os << "<h3>On several GPUs</h3>\n";
    list(os, plans);
  }
}

inline void performance(std::ostream& os, const HtmlInput& in) {
  const auto gpus = devices(in.predictions);
  os << "<h2>Iteration time, throughput and cost</h2>\n<div class=\"row\">\n";
  const std::optional<Reference> ref = in.origin.iteration_us > 0 ? std::optional(Reference{"origin " + in.origin.device, in.origin.iteration_us / 1e3})
                                                                   : std::nullopt;
  bar_chart(os, "iteration", "Predicted iteration time", "ms", "%.2f", gpus, {{"iteration", values(in.predictions, iteration_ms)}}, ref);
  if (in.batch)
    bar_chart(os, "throughput", "Predicted training throughput", "samples/s", "%.0f", gpus,
              {{"throughput", values(in.predictions, [](const PredictedTrace& p) { return p.throughput; })}});
  const bool priced = std::any_of(in.predictions.begin(), in.predictions.end(), [](const auto& p) { return p.cost_normalized_throughput.has_value(); });
  if (priced)
    bar_chart(os, "cost", "Cost-normalized throughput", "samples per $", "%.0f", gpus,
              {{"samples/$", values(in.predictions, [](const PredictedTrace& p) { return p.cost_normalized_throughput; })}});
  else
    os << "<p class=\"caption\">No cost-normalized throughput: " << (in.batch ? "no destination has a price" : "no batch size given") << ".</p>\n";
  os << "</div>\n";
}

inline void breakdowns(std::ostream& os, const HtmlInput& in) {
  os << "<h2>Where the time goes</h2>\n";
  const auto gpus = devices(in.predictions);
  const Stack op = stack_of(in.predictions, &PredictedTrace::by_operation, 8);
  stacked_chart(os, "breakdown-op", "By operation", gpus, op.keys, op.ms);
  const Stack method = stack_of(in.predictions, &PredictedTrace::by_method, 16);
  stacked_chart(os, "breakdown-method", "By prediction method", gpus, method.keys, method.ms);
}

inline void timelines(std::ostream& os, const HtmlInput& in) {
  os << "<h2>One simulated step</h2>\n";
  if (!in.predictions.empty() && in.predictions.front().timeline)
    timeline_chart(os, in.predictions.front().device + " (predicted)", in.trace, *in.predictions.front().timeline);
  if (in.origin.simulated) timeline_chart(os, in.origin.device + " (origin, un-profiled)", in.trace, in.origin.simulated->timeline);
}

inline void what_if(std::ostream& os, const HtmlInput& in) {
  if (!in.what_if) return;
  const WhatIfSummary& w = *in.what_if;
  os << "<h2>What if: " << esc(w.label) << "</h2>\n";
  bar_chart(os, "what-if", "Iteration time: as traced and what-if", "ms", "%.2f", devices(in.predictions),
            {{"as traced", values(in.predictions, iteration_ms)}, {w.label, values(w.predictions, iteration_ms)}});
  std::vector<std::vector<std::string>> rows;
  for (std::size_t i = 0; i < w.predictions.size(); ++i) {
    const auto& p = w.predictions[i];
    const bool fits = i >= w.fits.size() || w.fits[i] != 0;
    rows.push_back({esc(p.device), i < in.predictions.size() ? num(in.predictions[i].iteration_us / 1e3) : "–", num(p.iteration_us / 1e3),
                    num(p.gpu_active_us / 1e3), num(p.throughput), fits ? "fits" : "<span class=\"nofit\">does not fit</span>"});
  }
  table(os, "what-if", {"GPU", "as traced ms", "what-if ms", "what-if GPU active ms", "what-if samples/s", "memory"}, rows);
  if (w.memory)
    os << "<p>Estimated peak memory of the what-if step: " << num(w.memory->total_bytes() / whatif::bytes_per_gib, "%.2f") << " GiB (parameters, "
       << "gradients and optimizer states " << num(w.memory->parameter_bytes / whatif::bytes_per_gib, "%.2f") << " GiB, activations "
       << num(w.memory->activation_bytes / whatif::bytes_per_gib, "%.2f") << " GiB).</p>\n";
  if (!w.notes.empty()) list(os, w.notes);
}

inline void trust(std::ostream& os, const HtmlInput& in) {
  os << "<h2>How far to trust it</h2>\n";
  std::vector<std::vector<std::string>> rows;
  for (std::size_t i = 0; i < in.predictions.size(); ++i) {
    const auto& p = in.predictions[i];
    const std::string v = i < in.validation.size() ? in.validation[i] : "";
    rows.push_back({esc(p.device), esc(p.method_summary()), std::to_string(p.floored_kernels), std::to_string(p.replaced_kernels),
                    std::to_string(p.model_declined_ops) + (p.model_declined_reason.empty() ? "" : " (" + esc(p.model_declined_reason) + ")"),
                    esc(v.empty() ? "physics only, not validated against measurements" : v)});
  }
  table(os, "trust",
        {"GPU", "methods (share of origin GPU time)", "raised to roofline bound", "replaced (non-finite)", "model declined ops", "validation"}, rows);
}

// Counts drawn bars for the headless-browser test; it changes nothing on the page.
inline void script(std::ostream& os) {
  os << "<script>\nvar d=document.body.dataset;d.errors=0;window.onerror=function(){d.errors=Number(d.errors)+1;};\n"
        "d.bars=document.querySelectorAll('svg[data-chart=\"iteration\"] rect.bar').length;\n"
        "d.whatIfBars=document.querySelectorAll('svg[data-chart=\"what-if\"] rect.bar').length;\n</script>\n";
}

}  // namespace html

inline void write_html(std::ostream& os, const HtmlInput& in) {
  html::head(os, in);
  html::overview(os, in);
  html::performance(os, in);
  html::breakdowns(os, in);
  html::timelines(os, in);
  html::what_if(os, in);
  html::trust(os, in);
  html::script(os);
  os << "<p class=\"caption\">Written by habitat. Self-contained: no external resources.</p>\n</body></html>\n";
}

}  // namespace habitat::report
