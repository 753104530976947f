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

#include "habitat/detail/csv.hpp"
#include "habitat/device/catalog.hpp"
#include "habitat/mlp/op_physics.hpp"

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

// One CSV of NeuSight's layout (Latency, ms) or habitat's measurement of the same configurations
// (kernel_sum_us, status); dims by the schema's names (NeuSight spells Kernel_Size "Kernel_Szie").
inline void load_csv(const std::string& path, const std::string& op, const Device& gpu, std::vector<Row>& out) {
  std::ifstream in(path);
  if (!in) throw make_error(path, "", "cannot open");
  const auto kind = ops::op_from_name(op);
  if (!kind) throw make_error(path, "", "unknown operation '" + op + "'");
  const auto& schema = ops::schema(*kind);
  std::vector<std::string> h;
  std::string line;
  std::size_t n = 0;
  std::vector<int> dim_col;
  int t_col = -1, status_col = -1;
  bool neusight = false;
  while (std::getline(in, line)) {
    ++n;
    if (line.empty() || line[0] == '#') continue;
    auto f = habitat::detail::split_csv_line(line, path, n);
    if (h.empty()) {
      h = std::move(f);
      auto col = [&](std::string_view name) {
        for (std::size_t i = 0; i < h.size(); ++i)
          if (h[i] == name) return static_cast<int>(i);
        return -1;
      };
      neusight = col("Latency") >= 0;
      for (int i = 0; i < schema.csv_dims; ++i) {
        int c = col(schema.dims[static_cast<std::size_t>(i)]);
        if (c < 0 && schema.dims[static_cast<std::size_t>(i)] == "Kernel_Size") c = col("Kernel_Szie");
        if (c < 0) throw make_error(path, "header", "no column '" + std::string(schema.dims[static_cast<std::size_t>(i)]) + "'");
        dim_col.push_back(c);
      }
      t_col = col(neusight ? "Latency" : "kernel_sum_us");
      status_col = col("status");
      if (t_col < 0) throw make_error(path, "header", "no latency column");
      continue;
    }
    if (f.size() != h.size() || (status_col >= 0 && f[static_cast<std::size_t>(status_col)] != "ok")) continue;
    Row r{&gpu, op, {*kind, ops::Pass::forward, ops::DataType::fp32, {}}, 0, neusight};
    bool ok = true;
    for (std::size_t i = 0; i < dim_col.size(); ++i) {
      const auto v = habitat::detail::parse_csv_number(f[static_cast<std::size_t>(dim_col[i])]);
      ok &= v && *v > 0;
      r.q.dims[i] = v.value_or(0);
    }
    ops::fill_derived_dims(*kind, op, r.q.dims);
    const auto t = habitat::detail::parse_csv_number(f[static_cast<std::size_t>(t_col)]);
    if (!ok || !t || *t <= 0) continue;
    r.measured_ms = neusight ? *t : *t / 1e3;
    out.push_back(r);
  }
}

[[nodiscard]] inline std::vector<Row> load_rows(const Catalog& cat, const std::filesystem::path& public_dir,
                                               const std::filesystem::path& opdata_dir) {
  std::vector<Row> rows;
  for (const auto& op : study_ops) {
    const auto dir = public_dir / "train" / op;
    if (std::filesystem::is_directory(dir))
      for (const auto& e : std::filesystem::directory_iterator(dir))
        if (e.path().extension() == ".csv") load_csv(e.path().string(), op, cat.at(e.path().stem().string()), rows);
    for (const auto& [folder, gpu] : {std::pair{"h100_neusight", "H100 SXM"}, {"h200_neusight", "H200"}}) {
      const auto f = opdata_dir / folder / (op + ".csv");
      if (std::filesystem::exists(f)) load_csv(f.string(), op, cat.at(gpu), rows);
    }
  }
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
