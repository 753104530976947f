#pragma once
// Validation of the physics op model (mlp/op_physics.hpp) for the non-GEMM operations of NeuSight's public
// timings (conv, layer norm, softmax, eleven elementwise operators) on seven GPUs: the roofline share of
// each op family derived without the GPU under test (leave one GPU out), and the ratio method from the
// H100's measurement of the same configuration, next to the simple baselines.
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "habitat/device/catalog.hpp"
#include "habitat/mlp/op_physics.hpp"
#include "habitat/report/study_data.hpp"

namespace habitat::opstudy {

struct Row {
  const Device* gpu = nullptr;
  std::string op;  // as NeuSight names it: conv, ln, softmax, add, ...
  mlp::OpQuery q;
  double measured_ms = 0;
  bool call_timed = false;  // NeuSight's protocol: one timed call, its overhead included
};

inline const std::vector<std::string> study_ops = {"conv", "ln",  "softmax", "add", "addu", "mul",  "mulu",
                                                   "div",  "divu", "pow",    "powu", "relu", "tanh", "gelu"};

// Rows of one table; dims by the schema's names (NeuSight spells Kernel_Size "Kernel_Szie").
inline void load_table(const study::Table& t, const std::string& op, const Device& gpu, std::vector<Row>& out) {
  const auto kind = ops::op_from_name(op);
  if (!kind) throw make_error(t.file, "", "unknown operation '" + op + "'");
  const auto& schema = ops::schema(*kind);
  std::vector<int> dim_col;
  for (int i = 0; i < schema.csv_dims; ++i) {
    const auto name = schema.dims[static_cast<std::size_t>(i)];
    dim_col.push_back(name == "Kernel_Size" && t.find(name) < 0 ? t.column("Kernel_Szie") : t.column(name));
  }
  for (const auto& f : t.rows) {
    const auto us = t.latency_us(f);
    if (!us) continue;
    Row r{&gpu, op, {*kind, ops::Pass::forward, ops::DataType::fp32, {}}, *us / 1e3, t.neusight};
    bool ok = true;
    for (std::size_t i = 0; i < dim_col.size(); ++i) {
      const auto v = habitat::detail::parse_csv_number(f[static_cast<std::size_t>(dim_col[i])]);
      ok &= v && *v > 0;
      r.q.dims[i] = v.value_or(0);
    }
    ops::fill_derived_dims(*kind, op, r.q.dims);
    if (ok) out.push_back(r);
  }
}

[[nodiscard]] inline std::vector<Row> load_rows(const Catalog& cat, const std::filesystem::path& public_dir,
                                               const std::filesystem::path& opdata_dir) {
  std::vector<Row> rows;
  for (const auto& op : study_ops)
    study::for_each_table(cat, public_dir, opdata_dir, op, [&](const study::Table& t, const Device& g) { load_table(t, op, g, rows); });
  return rows;
}

[[nodiscard]] inline double kernel_ms(const Row& r) {
  return r.measured_ms - (r.call_timed ? mlp::op_physics_shares.call_ms : 0);
}

// The share of the sustained roofline an op family reaches: the median over long configurations (more
// than 0.2 ms at the sustained roofline) of the rows given, leaving out one GPU.
[[nodiscard]] inline double roofline_share(const std::vector<Row>& rows, ops::OpKind kind, const Device* leave_out) {
  std::vector<double> v;
  for (const auto& r : rows) {
    if (r.gpu == leave_out || r.q.op != kind) continue;
    const double roof = mlp::sustained_roofline_ms(r.q, *r.gpu), k = kernel_ms(r);
    if (roof > 0.2 && k > 0) v.push_back(roof / k);
  }
  if (v.empty()) return mlp::roofline_share(kind);
  std::nth_element(v.begin(), v.begin() + static_cast<long>(v.size() / 2), v.end());
  return v[v.size() / 2];
}

struct ErrorRow {
  std::string gpu, op;
  std::size_t n = 0, paired = 0;
  double share = 0;  // the roofline share derived without this GPU
  double model = 0, ratio = 0, same = 0, flops = 0, bandwidth = 0;
  std::string origin;
};

[[nodiscard]] inline std::vector<ErrorRow> leave_one_gpu_out(const std::vector<Row>& rows, const Catalog& cat) {
  std::vector<const Device*> gpus;
  for (const auto& r : rows)
    if (std::find(gpus.begin(), gpus.end(), r.gpu) == gpus.end()) gpus.push_back(r.gpu);
  // The same configuration on the origin: op name plus dims.
  using Key = std::pair<std::string, ops::Dims>;
  std::map<const Device*, std::map<Key, const Row*>> by_gpu;
  for (const auto& r : rows) by_gpu[r.gpu][Key{r.op, r.q.dims}] = &r;
  std::vector<ErrorRow> out;
  for (const Device* g : gpus) {
    const Device* origin = g->name == "H100 SXM" ? cat.find("A100 PCIe 40GB") : cat.find("H100 SXM");
    for (const auto& op : study_ops) {
      ErrorRow e{g->name, op};
      e.origin = origin ? origin->name : "";
      const auto kind = *ops::op_from_name(op);
      e.share = roofline_share(rows, kind, g);
      for (const auto& r : rows) {
        if (r.gpu != g || r.op != op) continue;
        ++e.n;
        const double call = r.call_timed ? mlp::op_physics_shares.call_ms : 0;
        e.model += std::abs((call + mlp::physics_kernel_ms(r.q, *g, e.share)) / r.measured_ms - 1);
        const auto it = origin ? by_gpu[origin].find(Key{r.op, r.q.dims}) : by_gpu[g].end();
        if (!origin || it == by_gpu[origin].end()) continue;
        const Row& o = *it->second;
        ++e.paired;
        const double ok = std::max(kernel_ms(o), 1e-4);
        const double ratio = mlp::physics_kernel_ms(r.q, *g, e.share) / mlp::physics_kernel_ms(o.q, *origin, e.share);
        auto err = [&](double factor) { return std::abs((ok * factor + call) / r.measured_ms - 1); };
        e.ratio += err(ratio);
        e.same += err(1);
        e.flops += err(origin->fp32_tflops() / g->fp32_tflops());
        e.bandwidth += err(origin->sustained_bandwidth_gbps() / g->sustained_bandwidth_gbps());
      }
      if (e.n == 0) continue;
      e.model /= double(e.n);
      const double p = double(std::max<std::size_t>(e.paired, 1));
      e.ratio /= p, e.same /= p, e.flops /= p, e.bandwidth /= p;
      out.push_back(e);
    }
  }
  return out;
}

}  // namespace habitat::opstudy
