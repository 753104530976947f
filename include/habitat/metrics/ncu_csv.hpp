#pragma once
// Reader for the CSV that `ncu --csv --page raw --print-units base --metrics ...` writes: a header row, a
// units row, then one row per profiled kernel. Values may carry thousands separators; launch dimensions
// are quoted tuples "(256, 1, 1)". Unknown columns are ignored; a known counter in a unit that does not
// measure its quantity is an error, never a silent rescaling.
#include <cxxabi.h>

#include <charconv>
#include <cmath>
#include <cstdlib>
#include <memory>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "habitat/detail/csv.hpp"
#include "habitat/detail/launch_limits.hpp"
#include "habitat/detail/number_text.hpp"
#include "habitat/error.hpp"
#include "habitat/metrics/counters.hpp"
#include "habitat/metrics/measured_kernel.hpp"

namespace habitat {

namespace detail {

// "(256, 1, 1)" or "256" -> Dim3.
[[nodiscard]] inline std::optional<Dim3> parse_dim3_tuple(std::string_view s) {
  std::string t;
  for (char c : s)
    if (c != '(' && c != ')' && c != ' ') t.push_back(c);
  std::vector<std::int64_t> v;
  std::size_t pos = 0;
  while (true) {
    const auto comma = t.find(',', pos);
    const std::string part = t.substr(pos, comma == std::string::npos ? std::string::npos : comma - pos);
    std::int64_t x = 0;
    auto [p, ec] = std::from_chars(part.data(), part.data() + part.size(), x);
    if (part.empty() || ec != std::errc() || p != part.data() + part.size() || x < 1) return std::nullopt;
    v.push_back(x);
    if (comma == std::string::npos) break;
    pos = comma + 1;
  }
  if (v.size() > 3) return std::nullopt;
  v.resize(3, 1);
  return Dim3{v[0], v[1], v[2]};
}

// ncu's own demangling ("<unnamed>", "T1 *") differs from the C++ ABI's that Kineto traces carry: ask ncu
// for mangled names and demangle them the ABI's way.
[[nodiscard]] inline std::string abi_demangle(const std::string& name) {
  if (name.rfind("_Z", 0) != 0) return name;
  int status = 0;
  std::unique_ptr<char, void (*)(void*)> d(abi::__cxa_demangle(name.c_str(), nullptr, nullptr, &status), std::free);
  return status == 0 && d ? std::string(d.get()) : name;
}

}  // namespace detail

struct NcuImportOptions {
  std::string device;    // GPU name to record when the CSV has no device__attribute_display_name column
  std::string workload;
};

[[nodiscard]] inline MetricSet read_ncu_csv(std::istream& in, const std::string& file, const NcuImportOptions& opt = {}) {
  std::string line;
  std::size_t lineno = 0;
  std::vector<std::string> header;
  while (std::getline(in, line)) {  // ncu may print "==PROF==" lines before the table
    ++lineno;
    if (line.rfind("\"ID\"", 0) == 0 || line.rfind("ID,", 0) == 0) {
      header = detail::split_csv_line(line, file, lineno);
      break;
    }
  }
  if (header.empty()) throw make_error(file, "", "no ncu CSV header (a row starting with \"ID\"); was it written with --csv --page raw?");
  auto col = [&](std::string_view name) -> int {
    for (std::size_t i = 0; i < header.size(); ++i)
      if (header[i] == name) return static_cast<int>(i);
    return -1;
  };
  const int c_name = col("Kernel Name"), c_grid = col("Grid Size"), c_block = col("Block Size");
  const int c_dev = col("device__attribute_display_name");
  const int c_dyn = col("launch__shared_mem_per_block_dynamic"), c_static = col("launch__shared_mem_per_block_static");
  for (auto [c, what] : {std::pair{c_name, "Kernel Name"}, {c_grid, "Grid Size"}, {c_block, "Block Size"}})
    if (c < 0) throw make_error(file, "header (line " + std::to_string(lineno) + ")", std::string("missing column '") + what + "'");
  std::vector<std::pair<int, const counters::Rule*>> counter_cols;
  for (std::size_t i = 0; i < header.size(); ++i)
    if (const auto* r = counters::find_rule(header[i])) counter_cols.emplace_back(static_cast<int>(i), r);
  if (counter_cols.empty())
    throw make_error(file, "header", "no known counter columns (e.g. dram__bytes_read.sum); see the README for the ncu command");

  // Units row: one factor per counter column (and the shared-memory columns).
  if (!std::getline(in, line)) throw make_error(file, "line " + std::to_string(lineno + 1), "missing units row");
  ++lineno;
  const auto units = detail::split_csv_line(line, file, lineno);
  if (units.size() != header.size())
    throw make_error(file, "line " + std::to_string(lineno), "units row has " + std::to_string(units.size()) + " fields, header " + std::to_string(header.size()));
  std::vector<double> factor(header.size(), 1.0);
  auto unit_of = [&](int c, counters::Quantity q, std::string_view per = "") {
    std::string_view u = units[c];
    if (!per.empty() && u.size() > per.size() && u.substr(u.size() - per.size()) == per) u.remove_suffix(per.size());
    auto f = counters::unit_factor(u, q);
    if (!f)
      throw make_error(file, "line " + std::to_string(lineno) + ", column '" + header[c] + "'",
                       "unit '" + units[c] + "' is not " + counters::to_string(q));
    factor[c] = *f;
  };
  for (auto [c, r] : counter_cols) unit_of(c, r->quantity());
  for (int c : {c_dyn, c_static})
    if (c >= 0) unit_of(c, counters::Quantity::bytes, "/block");

  MetricSet set;
  set.provenance.tool = "ncu";
  set.provenance.device = opt.device;
  set.provenance.workload = opt.workload;
  std::size_t rows = 0;
  while (std::getline(in, line)) {
    ++lineno;
    if (line.empty() || line == "\r") continue;
    const auto f = detail::split_csv_line(line, file, lineno);
    const std::string place = "line " + std::to_string(lineno);
    if (f.size() != header.size())
      throw make_error(file, place, "has " + std::to_string(f.size()) + " fields, header has " + std::to_string(header.size()));
    MeasuredKernel m;
    m.name = detail::abi_demangle(f[c_name]);
    if (m.name.empty()) throw make_error(file, place, "empty kernel name");
    m.key.name = normalize_kernel_name(m.name);
    const auto grid = detail::parse_dim3_tuple(f[c_grid]), block = detail::parse_dim3_tuple(f[c_block]);
    if (!grid) throw make_error(file, place + ", column 'Grid Size'", "not a launch dimension: '" + f[c_grid] + "'");
    if (!block) throw make_error(file, place + ", column 'Block Size'", "not a launch dimension: '" + f[c_block] + "'");
    m.key.grid = *grid;
    m.key.block = *block;
    if (auto bad = detail::launch_limit_violation(m.key.grid, m.key.block)) throw make_error(file, place, *bad);
    // In base units (bytes, ns, counts) and within a kernel's plausible bounds: a unit prefix times a large
    // number can overflow to infinity, and shared memory becomes an integer.
    auto num = [&](int c, double max) {
      const auto v = detail::parse_csv_number(f[c]);
      if (!v || *v < 0) throw make_error(file, place + ", column '" + header[c] + "'", "not a non-negative number: '" + f[c] + "'");
      if (!(*v * factor[c] <= max))
        throw make_error(file, place + ", column '" + header[c] + "'", "'" + f[c] + "' is more than " + detail::number_text(max) + " in base units");
      return *v * factor[c];
    };
    auto max_of = [](const counters::Rule& r) {
      return r.target == counters::Target::duration ? max_kernel_ns : r.target == counters::Target::flops ? max_kernel_flops : max_kernel_bytes;
    };
    const auto smem_max = static_cast<double>(detail::max_shared_mem_per_block);
    if (c_dyn >= 0) m.key.smem_dynamic = std::lround(num(c_dyn, smem_max));
    if (c_static >= 0) m.key.smem_static = std::lround(num(c_static, smem_max));
    for (auto [c, r] : counter_cols) counters::apply(m, *r, num(c, max_of(*r)));
    if (c_dev >= 0 && !f[c_dev].empty()) {
      if (set.provenance.device.empty()) set.provenance.device = f[c_dev];
      else if (opt.device.empty() && set.provenance.device != f[c_dev])
        throw make_error(file, place, "kernels from two GPUs ('" + set.provenance.device + "' and '" + f[c_dev] + "'): import one GPU per file");
    }
    set.add(m);
    ++rows;
  }
  if (rows == 0) throw make_error(file, "", "no kernel rows after the units row");
  if (set.provenance.device.empty())
    throw make_error(file, "", "the CSV does not name the GPU (add device__attribute_display_name to --metrics, or pass --device)");
  return set;
}

[[nodiscard]] inline MetricSet read_ncu_csv_file(const std::string& path, const NcuImportOptions& opt = {}) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw make_error(path, "", "cannot open ncu CSV");
  return read_ncu_csv(in, path, opt);
}

}  // namespace habitat
