#pragma once
// `habitat mlp dataset`: joins habitat-collect folders and NeuSight CSV folders into one training
// table per operation for habitat-train. `habitat mlp plot`: habitat-train's report as bar charts.
#include <CLI/CLI.hpp>

#include <cstdio>
#include <filesystem>
#include <iostream>
#include <string>
#include <vector>

#include "habitat/mlp/dataset.hpp"
#include "habitat/report/training_plot.hpp"

namespace habitat::cli {

struct MlpArgs {
  std::vector<std::string> opdata, neusight;
  std::string out, report;
};

inline CLI::App* add_mlp_commands(CLI::App& app, MlpArgs& a) {
  auto* m = app.add_subcommand("mlp", "learned operation models: build training tables, plot a training report");
  m->require_subcommand(1);
  auto* ds = m->add_subcommand("dataset", "join measured operation latencies into habitat.table/1 files, one per operation");
  ds->add_option("--opdata", a.opdata, "folder written by habitat-collect (repeatable)")->check(CLI::ExistingDirectory);
  ds->add_option("--neusight", a.neusight, "NeuSight train/ folder (per-op subfolders of per-GPU CSVs), repeatable")
      ->check(CLI::ExistingDirectory);
  ds->add_option("-o,--out", a.out, "output folder")->required();
  auto* plot = m->add_subcommand("plot", "habitat-train's --report as an HTML page of bar charts (error per held-out GPU, next to the baselines)");
  plot->add_option("report", a.report, "habitat-train --report TSV")->required()->check(CLI::ExistingFile);
  return m;
}

inline int run_mlp_command(const CLI::App& m, const MlpArgs& a, const Catalog& cat) {
  namespace fs = std::filesystem;
  if (*m.get_subcommand("plot")) {
    report::write_training_html(std::cout, report::read_training_report(a.report), a.report);
    return 0;
  }
  if (!*m.get_subcommand("dataset")) return 1;
  std::vector<mlp::MeasuredOp> rows;
  auto add_file = [&](const fs::path& p, mlp::OpCsvOptions opt) {
    const auto csv = mlp::read_op_csv(p.string(), opt);
    const auto r = mlp::resolve_rows(csv, cat);
    rows.insert(rows.end(), r.begin(), r.end());
  };
  for (const auto& dir : a.opdata)
    for (const auto& e : fs::directory_iterator(dir)) {
      if (e.path().extension() != ".csv") continue;
      const auto op = ops::op_from_name(e.path().stem().string());
      if (!op) continue;
      mlp::OpCsvOptions o;
      o.op = op;
      o.skip_failed = true;
      add_file(e.path(), o);
    }
  for (const auto& dir : a.neusight)
    for (const auto& sub : fs::directory_iterator(dir)) {
      if (!sub.is_directory() || !ops::op_from_name(sub.path().filename().string())) continue;
      for (const auto& e : fs::directory_iterator(sub.path()))
        if (e.path().extension() == ".csv") {
          mlp::OpCsvOptions o;
          o.latency_column = "Latency";
          o.skip_failed = true;
          add_file(e.path(), o);
        }
    }
  if (rows.empty()) throw make_error("habitat mlp dataset", "", "no rows: give --opdata or --neusight folders");
  fs::create_directories(a.out);
  for (const auto& [op, t] : mlp::build_tables(rows)) {
    const auto path = (fs::path(a.out) / (std::string(ops::schema(op).name) + ".table")).string();
    mlp::write_table(t, path);
    std::fprintf(stderr, "habitat mlp dataset: %s: %zu rows, %zu features, %zu GPUs\n", path.c_str(), t.rows(),
                 t.columns.size() - mlp::meta_columns.size(), t.gpus.size());
  }
  return 0;
}

}  // namespace habitat::cli
