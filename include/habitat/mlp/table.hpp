#pragma once
// habitat.table/1: the numeric training table habitat writes and habitat-train reads. A text header
// (column names, GPU names) and then float32 rows, little-endian. Kept free of any JSON or SDK
// dependency so the trainer builds on GPU machines that only have LibTorch.
#include <cmath>
#include <cstdint>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "habitat/detail/csv.hpp"

namespace habitat::mlp {

struct Table {
  std::vector<std::string> columns;
  std::vector<std::string> gpus;  // the column "m:gpu" indexes this list
  std::vector<float> values;      // row-major, rows() x columns.size()

  [[nodiscard]] std::size_t rows() const { return columns.empty() ? 0 : values.size() / columns.size(); }
  [[nodiscard]] int column(const std::string& name) const {
    for (std::size_t i = 0; i < columns.size(); ++i)
      if (columns[i] == name) return static_cast<int>(i);
    return -1;
  }
  [[nodiscard]] float at(std::size_t row, int col) const { return values[row * columns.size() + static_cast<std::size_t>(col)]; }
};

inline constexpr const char* table_magic = "habitat.table/1";

namespace detail {
inline std::string join_tabs(const std::vector<std::string>& v) {
  std::string s;
  for (const auto& x : v) s += (s.empty() ? "" : "\t") + x;
  return s;
}
}  // namespace detail

inline void write_table(const Table& t, const std::string& path) {
  std::ofstream out(path, std::ios::binary);
  if (!out) throw std::runtime_error(path + ": cannot open for writing");
  out << table_magic << '\n' << t.columns.size() << ' ' << t.rows() << '\n'
      << detail::join_tabs(t.columns) << '\n' << detail::join_tabs(t.gpus) << '\n';
  out.write(reinterpret_cast<const char*>(t.values.data()), static_cast<std::streamsize>(t.values.size() * sizeof(float)));
  if (!out) throw std::runtime_error(path + ": write failed");
}

inline Table read_table(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error(path + ": cannot open");
  std::string magic, dims, cols, gpus;
  std::getline(in, magic);
  if (magic != table_magic) throw std::runtime_error(path + ": line 1: not a " + std::string(table_magic) + " file");
  std::getline(in, dims);
  std::size_t ncols = 0, nrows = 0;
  if (!(std::istringstream(dims) >> ncols >> nrows) || ncols == 0)
    throw std::runtime_error(path + ": line 2: expected '<columns> <rows>'");
  std::getline(in, cols);
  std::getline(in, gpus);
  Table t{habitat::detail::split(cols, '\t'), habitat::detail::split(gpus, '\t'), {}};
  if (t.columns.size() != ncols)
    throw std::runtime_error(path + ": line 3: " + std::to_string(t.columns.size()) + " names for " + std::to_string(ncols) + " columns");
  t.values.resize(ncols * nrows);
  in.read(reinterpret_cast<char*>(t.values.data()), static_cast<std::streamsize>(t.values.size() * sizeof(float)));
  if (in.gcount() != static_cast<std::streamsize>(t.values.size() * sizeof(float)))
    throw std::runtime_error(path + ": truncated: expected " + std::to_string(nrows) + " rows");
  return t;
}

}  // namespace habitat::mlp
