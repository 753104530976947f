#pragma once
// The measurements both cross-generation studies read: NeuSight's public per-op CSVs
// (public_dir/train/<op>/<GPU>.csv, latency in ms per timed call) and habitat's measurements of the same
// configurations (opdata_dir/<gpu>_neusight/<op>.csv, CUPTI kernel sums in us, a status column).
#include <filesystem>
#include <fstream>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "habitat/detail/csv.hpp"
#include "habitat/device/catalog.hpp"
#include "habitat/ops/dtype.hpp"

namespace habitat::study {

// One CSV read whole ('#' lines skipped), with the columns it must have looked up by name.
struct Table {
  std::string file;
  std::vector<std::string> header;
  std::vector<std::vector<std::string>> rows;
  bool neusight = false;  // NeuSight's layout (Latency, ms per call) rather than habitat's (kernel_sum_us)
  ops::DataType dtype = ops::DataType::fp32;  // the memory-bound operators' tensors (habitat's header names it)
  int latency_col = -1, status_col = -1;

  [[nodiscard]] int find(std::string_view name) const {
    for (std::size_t i = 0; i < header.size(); ++i)
      if (header[i] == name) return static_cast<int>(i);
    return -1;
  }
  [[nodiscard]] int column(std::string_view name) const {
    const int c = find(name);
    if (c < 0) throw make_error(file, "header", "no column '" + std::string(name) + "'");
    return c;
  }
  // The row's latency in microseconds, or nothing (a failed measurement, an empty cell).
  [[nodiscard]] std::optional<double> latency_us(const std::vector<std::string>& row) const {
    if (status_col >= 0 && row[static_cast<std::size_t>(status_col)] != "ok") return std::nullopt;
    const auto t = habitat::detail::parse_csv_number(row[static_cast<std::size_t>(latency_col)]);
    if (!t || *t <= 0) return std::nullopt;
    return neusight ? *t * 1e3 : *t;
  }
};

[[nodiscard]] inline Table read_table(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw make_error(path, "", "cannot open");
  Table t{path, {}, {}};
  std::string line;
  std::size_t n = 0;
  while (std::getline(in, line)) {
    ++n;
    if (line.rfind("# habitat.neusight-opdata", 0) == 0 && line.find(" bf16 ") != std::string::npos) t.dtype = ops::DataType::bf16;
    if (line.empty() || line[0] == '#') continue;
    auto f = habitat::detail::split_csv_line(line, path, n);
    if (t.header.empty()) t.header = std::move(f);
    else if (f.size() == t.header.size()) t.rows.push_back(std::move(f));
  }
  t.neusight = t.find("Latency") >= 0;
  t.latency_col = t.column(t.neusight ? "Latency" : "kernel_sum_us");
  if (!t.neusight) t.status_col = t.column("status");
  return t;
}

// Calls fn(table, gpu) for every file of `op`: each public GPU, then habitat's H100 and H200.
inline void for_each_table(const Catalog& cat, const std::filesystem::path& public_dir, const std::filesystem::path& opdata_dir,
                           const std::string& op, const std::function<void(const Table&, const Device&)>& fn) {
  const auto dir = public_dir / "train" / op;
  if (std::filesystem::is_directory(dir))
    for (const auto& e : std::filesystem::directory_iterator(dir))
      if (e.path().extension() == ".csv") fn(read_table(e.path().string()), cat.at(e.path().stem().string()));
  for (const auto& [folder, gpu] : {std::pair{"h100_neusight", "H100 SXM"}, {"h200_neusight", "H200"}}) {
    const auto f = opdata_dir / folder / (op + ".csv");
    if (std::filesystem::exists(f)) fn(read_table(f.string()), cat.at(gpu));
  }
}

}  // namespace habitat::study
