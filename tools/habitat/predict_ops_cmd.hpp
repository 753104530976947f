#pragma once
// `habitat predict-ops FILE.csv`: rows of operation configurations (NeuSight's column layout or
// habitat-collect's) written back with predicted_ms and predicted_by columns.
#include <CLI/CLI.hpp>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <optional>
#include <string>

#include "habitat/mlp/eigen_backend.hpp"
#include "habitat/mlp/predict_rows.hpp"
#include "habitat/detail/json_text.hpp"
#include "habitat/report/writers.hpp"

namespace habitat::cli {

struct PredictOpsArgs {
  std::string csv, out, from, origin_column, models;
};

// Where the shipped weights are: --models, else $HABITAT_MODELS, else share/habitat/models beside an
// installed binary (found from the binary's own path, so an installed tree can move), else the source
// tree's models/ for a binary run from its build folder.
[[nodiscard]] inline std::string model_dir(const std::string& flag) {
  if (!flag.empty()) return flag;
  if (const char* env = std::getenv("HABITAT_MODELS")) return env;
  std::error_code ec;
  const auto self = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (!ec)
    if (const auto installed = self.parent_path().parent_path() / "share" / "habitat" / "models"; std::filesystem::is_directory(installed, ec))
      return installed.string();
#ifdef HABITAT_DEFAULT_MODELS
  return HABITAT_DEFAULT_MODELS;
#else
  return "models";
#endif
}

// `quiet` false: says which folder the models came from (the install test checks it).
[[nodiscard]] inline mlp::ModelSet<mlp::EigenBackend> load_models(const std::string& flag, bool quiet = true) {
  const auto dir = model_dir(flag);
  auto set = mlp::ModelSet<mlp::EigenBackend>::load_dir(dir);
  if (set.empty()) throw make_error(dir, "", "no *.safetensors operation models here (--models DIR or HABITAT_MODELS names the folder)");
  if (!quiet) std::cerr << "habitat: operation models from " << dir << "\n";
  return set;
}

inline CLI::App* add_predict_ops_command(CLI::App& app, PredictOpsArgs& a) {
  auto* p = app.add_subcommand("predict-ops", "predict the forward latency of operation configurations listed in a CSV");
  p->add_option("csv", a.csv, "CSV with OPName, Device and the op's dimension columns (NeuSight layout)")->required()->check(CLI::ExistingFile);
  p->add_option("-o,--out", a.out, "write here instead of standard output");
  p->add_option("--from", a.from, "origin GPU of measured latencies: predict by the ratio method");
  p->add_option("--origin-column", a.origin_column, "column holding the latency measured on --from (ms)");
  p->add_option("--models", a.models, "folder of *.safetensors operation models (default: the shipped ones)");
  return p;
}

inline int run_predict_ops(const PredictOpsArgs& a, const Catalog& cat, const std::string& format = "csv") {
  if (a.from.empty() != a.origin_column.empty()) throw make_error("habitat predict-ops", "", "--from and --origin-column go together");
  const auto models = load_models(a.models);
  const auto csv = mlp::read_op_csv(a.csv);
  std::optional<mlp::RatioSource> ratio;
  if (!a.from.empty()) ratio = mlp::RatioSource{&cat.at(a.from), a.origin_column};
  const auto preds = mlp::predict_rows(csv, models, cat, ratio);
  std::ofstream file;
  if (!a.out.empty()) {
    file.open(a.out);
    if (!file) throw make_error(a.out, "", "cannot open for writing");
  }
  std::ostream& out = a.out.empty() ? std::cout : file;
  // Cells of each row: the input's fields, then the prediction and its method.
  std::vector<std::string> header = csv.header;
  header.insert(header.end(), {"predicted_ms", "predicted_by"});
  std::vector<std::vector<std::string>> cells;
  std::size_t missing = 0;
  for (std::size_t i = 0; i < csv.rows.size(); ++i) {
    cells.push_back(csv.rows[i].fields);
    cells.back().resize(csv.header.size());
    cells.back().push_back(preds[i].ms ? report::fmt("%.6g", *preds[i].ms) : "");
    cells.back().push_back(preds[i].method);
    missing += !preds[i].ms;
  }
  if (format == "json") {
    boost::json::array rows;
    for (std::size_t i = 0; i < cells.size(); ++i) {
      boost::json::object r;
      for (std::size_t j = 0; j < csv.header.size(); ++j) r[csv.header[j]] = cells[i][j];
      r["predicted_ms"] = preds[i].ms ? boost::json::value(*preds[i].ms) : boost::json::value(nullptr);
      r["predicted_by"] = preds[i].method;
      rows.push_back(std::move(r));
    }
    out << habitat::detail::json_text(boost::json::object{{"schema", "habitat.op-predictions/1"}, {"rows", std::move(rows)}}) << "\n";
  } else if (format == "table") {
    std::vector<std::size_t> width(header.size());
    for (std::size_t j = 0; j < header.size(); ++j) width[j] = header[j].size();
    for (const auto& r : cells)
      for (std::size_t j = 0; j < r.size(); ++j) width[j] = std::max(width[j], r[j].size());
    auto line = [&](const std::vector<std::string>& r) {
      for (std::size_t j = 0; j < r.size(); ++j) out << r[j] << std::string(width[j] - r[j].size() + 2, ' ');
      out << '\n';
    };
    line(header);
    for (const auto& r : cells) line(r);
  } else {
    for (const auto& c : csv.comments) out << c << '\n';
    for (std::size_t j = 0; j < header.size(); ++j) out << (j ? "," : "") << detail::csv_field(header[j]);
    out << '\n';
    for (const auto& r : cells) {
      for (std::size_t j = 0; j < r.size(); ++j) out << (j ? "," : "") << detail::csv_field(r[j]);
      out << '\n';
    }
  }
  if (missing)
    std::cerr << "habitat predict-ops: " << missing << " of " << csv.rows.size()
              << " rows have no prediction (operations without a model; with --from they are scaled by bandwidth)\n";
  return 0;
}

}  // namespace habitat::cli
