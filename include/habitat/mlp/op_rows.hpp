#pragma once
// Rows of operation configurations from CSV: habitat-collect's files (op from the file name, GPU from
// the "# habitat.opdata/1 gpu=..." line) and the public NeuSight layout (OPName, Device, Latency and
// the op's dimension columns). Other columns are kept verbatim so rows can be written back.
#include <cmath>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <vector>

#include "habitat/detail/csv.hpp"
#include "habitat/device/catalog.hpp"
#include "habitat/error.hpp"
#include "habitat/mlp/features.hpp"
#include "habitat/ops/op_schema.hpp"

namespace habitat::mlp {

struct OpRow {
  std::optional<ops::OpKind> op;  // nullopt: an operation habitat has no model for (softmax, add, ...)
  std::string op_name;
  ops::Pass pass = ops::Pass::forward;
  ops::DataType dtype = ops::DataType::fp32;
  ops::Dims dims{};
  std::string device;
  std::optional<double> latency_ms;  // measured, where the file has it
  std::vector<std::string> fields;   // the record as read
  std::size_t line = 0;

  [[nodiscard]] OpQuery query() const { return {*op, pass, dtype, dims}; }  // for rows with a known op
};

struct OpCsv {
  std::string file;
  std::vector<std::string> header;
  std::vector<std::string> comments;  // leading '#' lines
  std::vector<OpRow> rows;
  // NeuSight's column layout (an OPName column). Its linear and bmm name the reduction dimension N and the
  // output width K (x[B,M,N] through nn.Linear(N, K); [B,M,N] @ [B,N,K]); habitat's own files call the
  // reduction K.
  [[nodiscard]] bool neusight_layout() const {
    for (const auto& h : header)
      if (h == "OPName") return true;
    return false;
  }
};

struct OpCsvOptions {
  std::optional<ops::OpKind> op;  // for files without an OPName column
  std::string device;             // for files without a Device column
  std::string latency_column;     // empty: "Latency" or "lat_ms", whichever exists
  bool require_latency = false;
  bool skip_failed = false;       // collector rows without a latency (out of memory, invalid)
};

inline constexpr double max_op_dim = 1099511627776.0;  // 2^40

namespace detail {
inline int find_column(const std::vector<std::string>& header, std::string_view name) {
  for (std::size_t i = 0; i < header.size(); ++i)
    if (header[i] == name) return static_cast<int>(i);
  return -1;
}
inline std::string opdata_gpu(const std::string& comment) {
  const auto p = comment.find("gpu=\"");
  if (p == std::string::npos) return {};
  const auto e = comment.find('"', p + 5);
  return comment.substr(p + 5, e - p - 5);
}
}  // namespace detail

// The row's GPU; an unknown one is an error naming the file and line.
[[nodiscard]] inline const Device& row_device(const OpCsv& csv, const OpRow& r, const Catalog& catalog) {
  if (const Device* d = catalog.find(r.device)) return *d;
  throw make_error(csv.file, "line " + std::to_string(r.line),
                   "GPU '" + r.device + "' is not in the catalog (habitat devices lists it; --devices FILE adds GPUs)");
}

[[nodiscard]] inline OpCsv read_op_csv(const std::string& path, OpCsvOptions opt = {}) {
  std::ifstream in(path);
  if (!in) throw make_error(path, "", "cannot open");
  OpCsv csv{path, {}, {}, {}};
  std::string line;
  std::size_t lineno = 0;
  while (std::getline(in, line)) {
    ++lineno;
    if (line.empty()) continue;
    if (csv.header.empty() && line[0] == '#') {
      csv.comments.push_back(line);
      if (opt.device.empty()) opt.device = detail::opdata_gpu(line);
      continue;
    }
    if (csv.header.empty()) {
      csv.header = habitat::detail::split_csv_line(line, path, lineno);
      continue;
    }
    auto f = habitat::detail::split_csv_line(line, path, lineno);
    if (f.size() != csv.header.size())
      throw make_error(path, "line " + std::to_string(lineno),
                       std::to_string(f.size()) + " fields, the header has " + std::to_string(csv.header.size()));
    csv.rows.push_back(OpRow{{}, {}, ops::Pass::forward, ops::DataType::fp32, {}, {}, {}, std::move(f), lineno});
  }
  if (csv.header.empty()) throw make_error(path, "", "no header row");
  const auto& h = csv.header;
  const int op_col = detail::find_column(h, "OPName"), dev_col = detail::find_column(h, "Device");
  const int pass_col = detail::find_column(h, "pass"), dtype_col = detail::find_column(h, "dtype");
  int lat_col = opt.latency_column.empty() ? detail::find_column(h, "Latency") : detail::find_column(h, opt.latency_column);
  if (lat_col < 0 && opt.latency_column.empty()) lat_col = detail::find_column(h, "lat_ms");
  if (!opt.latency_column.empty() && lat_col < 0) throw make_error(path, "header", "no column '" + opt.latency_column + "'");
  if (op_col < 0 && !opt.op) throw make_error(path, "header", "no OPName column");
  if (dev_col < 0 && opt.device.empty()) throw make_error(path, "header", "no Device column and no GPU named");
  if (opt.require_latency && lat_col < 0) throw make_error(path, "header", "no latency column (Latency or lat_ms)");

  std::vector<OpRow> kept;
  for (auto& r : csv.rows) {
    const std::string where = "line " + std::to_string(r.line);
    r.op_name = op_col >= 0 ? r.fields[static_cast<std::size_t>(op_col)] : std::string(ops::schema(*opt.op).name);
    r.op = op_col >= 0 ? ops::op_from_name(r.op_name) : opt.op;
    r.device = dev_col >= 0 ? r.fields[static_cast<std::size_t>(dev_col)] : opt.device;
    if (pass_col >= 0) {
      const auto& p = r.fields[static_cast<std::size_t>(pass_col)];
      if (p != "fwd" && p != "bwd") throw make_error(path, where, "pass '" + p + "' is neither fwd nor bwd");
      r.pass = p == "bwd" ? ops::Pass::backward : ops::Pass::forward;
    }
    if (dtype_col >= 0) {
      const auto& t = r.fields[static_cast<std::size_t>(dtype_col)];
      if (t != "fp32" && t != "bf16") throw make_error(path, where, "dtype '" + t + "' is neither fp32 nor bf16");
      r.dtype = t == "bf16" ? ops::DataType::bf16 : ops::DataType::fp32;
    }
    if (lat_col >= 0) r.latency_ms = habitat::detail::parse_csv_number(r.fields[static_cast<std::size_t>(lat_col)]);
    if (r.op) {
      const auto& s = ops::schema(*r.op);
      ops::fill_derived_dims(*r.op, r.op_name, r.dims);
      for (int i = 0; i < s.csv_dims; ++i) {
        int c = detail::find_column(h, s.dims[i]);
        if (c < 0 && s.dims[i] == "Kernel_Size") c = detail::find_column(h, "Kernel_Szie");  // NeuSight's spelling
        if (c < 0) throw make_error(path, "header", "no column '" + std::string(s.dims[i]) + "' for " + std::string(s.name));
        // Sizes, flags and counts are whole numbers; 2^40 is far above any dimension a GPU holds (the
        // datasets reach 65519) and far below what turns a FLOP count infinite.
        const auto v = habitat::detail::parse_csv_number(r.fields[static_cast<std::size_t>(c)]);
        if (!v || !(*v >= 0 && *v <= max_op_dim && *v == std::floor(*v)))
          throw make_error(path, where + ", column " + std::string(s.dims[i]),
                           "'" + r.fields[static_cast<std::size_t>(c)] + "' is not a size (a whole number from 0 to 2^40)");
        r.dims[static_cast<std::size_t>(i)] = *v;
      }
    }
    if (!r.latency_ms || *r.latency_ms <= 0) {
      if (opt.skip_failed) continue;
      if (opt.require_latency) throw make_error(path, where, "no positive latency");
      r.latency_ms.reset();
    }
    kept.push_back(std::move(r));
  }
  csv.rows = std::move(kept);
  return csv;
}

}  // namespace habitat::mlp
