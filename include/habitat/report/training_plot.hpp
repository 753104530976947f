#pragma once
// The learned models' training report (habitat-train --report R.tsv, one row per model and held-out GPU),
// as a page of bar charts: per model, the error on each held-out GPU next to the baselines a user has
// without the model (the same time as the origin, the ratio of peak FLOPS, the ratio of bandwidth), where a
// reader would rather look than read the table.
#include <fstream>
#include <map>
#include <ostream>
#include <string>
#include <vector>

#include "habitat/detail/csv.hpp"
#include "habitat/error.hpp"
#include "habitat/report/html.hpp"

namespace habitat::report {

struct TrainingRow {
  std::string model, gpu, pass, dtype;  // model: the label less its held-out GPU ("logo-habitat-bmm")
  double mlp = 0, same = 0, flops_ratio = 0, bw_ratio = 0;  // mean absolute percentage errors
};

// Reads the report; a missing column or a non-number is an error naming the file, line and column.
[[nodiscard]] inline std::vector<TrainingRow> read_training_report(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw make_error(path, "", "cannot open the training report");
  std::string line;
  if (!std::getline(in, line)) throw make_error(path, "line 1", "empty: expected habitat-train's header");
  const auto header = detail::split(line, '\t');
  auto column = [&](const char* name) {
    for (std::size_t i = 0; i < header.size(); ++i)
      if (header[i] == name) return i;
    throw make_error(path, "line 1", std::string("no column '") + name + "' (is this habitat-train --report output?)");
  };
  const std::size_t label = column("label"), gpu = column("gpu"), pass = column("pass"), dtype = column("dtype"), mlp = column("mlp_mape"),
                    same = column("same_mape"), flops = column("flops_ratio_mape"), bw = column("bw_ratio_mape");
  std::vector<TrainingRow> out;
  for (std::size_t n = 2; std::getline(in, line); ++n) {
    if (line.empty()) continue;
    const auto f = detail::split(line, '\t');
    const std::string at = "line " + std::to_string(n);
    if (f.size() != header.size()) throw make_error(path, at, std::to_string(f.size()) + " fields, the header has " + std::to_string(header.size()));
    auto number = [&](std::size_t i) {
      const auto v = detail::parse_csv_number(f[i]);
      if (!v || *v < 0) throw make_error(path, at + ", column " + header[i], "'" + f[i] + "' is not a non-negative number");
      return *v;
    };
    std::string model = f[label];
    std::string suffix = f[gpu];
    for (auto& c : suffix) c = c == ' ' ? '_' : c;
    if (model.size() > suffix.size() + 1 && model.ends_with("-" + suffix)) model.resize(model.size() - suffix.size() - 1);
    out.push_back({model, f[gpu], f[pass], f[dtype], number(mlp), number(same), number(flops), number(bw)});
  }
  return out;
}

// One chart per model, pass and dtype: a group of bars per held-out GPU.
inline void write_training_html(std::ostream& os, const std::vector<TrainingRow>& rows, const std::string& source) {
  html::page_head(os, source);
  os << "<h1>habitat: learned models, " << html::esc(source) << "</h1>\n<p>Mean absolute percentage error on each held-out GPU "
     << "(never seen in training), next to the baselines without a model.</p>\n<div class=\"row\">\n";
  std::map<std::string, std::vector<const TrainingRow*>> charts;
  for (const auto& r : rows) charts[r.model + " " + r.pass + " " + r.dtype].push_back(&r);
  for (const auto& [name, rs] : charts) {
    std::vector<std::string> gpus;
    std::vector<html::Series> series{{"MLP", {}}, {"same time", {}}, {"peak FLOPS ratio", {}}, {"bandwidth ratio", {}}};
    for (const TrainingRow* r : rs) {
      gpus.push_back(r->gpu);
      series[0].values.push_back(r->mlp);
      series[1].values.push_back(r->same);
      series[2].values.push_back(r->flops_ratio);
      series[3].values.push_back(r->bw_ratio);
    }
    html::bar_chart(os, "training", name, "error %", "%.0f", gpus, series, std::nullopt, "held-out GPU");
  }
  os << "</div>\n<p class=\"caption\">Written by habitat from habitat-train's report. Self-contained: no external resources.</p>\n</body></html>\n";
}

}  // namespace habitat::report
