#pragma once
// Joins measured operation rows (habitat-collect files, NeuSight CSVs) with the device catalog into one
// training table per operation: features, the measured latency, and per row the simple baselines
// computed from the same configuration measured on another GPU.
#include <cmath>
#include <limits>
#include <map>
#include <string>
#include <vector>

#include "habitat/device/catalog.hpp"
#include "habitat/mlp/features.hpp"
#include "habitat/mlp/op_rows.hpp"
#include "habitat/mlp/table.hpp"

namespace habitat::mlp {

// Leading columns of every table; features follow.
inline const std::vector<std::string> meta_columns{"m:gpu",    "m:config",  "m:pass",         "m:dtype",    "m:lat_ms",
                                                   "m:roofline_ms", "m:same_ms", "m:flops_ratio_ms", "m:bw_ratio_ms"};

struct MeasuredOp {
  OpQuery q;
  const Device* gpu;
  double ms;
};

[[nodiscard]] inline std::vector<MeasuredOp> resolve_rows(const OpCsv& csv, const Catalog& catalog) {
  std::vector<MeasuredOp> out;
  for (const auto& r : csv.rows) {
    if (!r.op || !r.latency_ms) continue;
    out.push_back({r.query(), &row_device(csv, r, catalog), *r.latency_ms});
  }
  return out;
}

[[nodiscard]] inline std::map<ops::OpKind, Table> build_tables(const std::vector<MeasuredOp>& rows) {
  // One id per (op, dims): the unit of the train/test split, shared by passes, precisions and GPUs.
  std::map<std::pair<int, ops::Dims>, int> config_ids;
  std::map<std::string, int> gpu_ids;
  std::vector<std::string> gpu_names;
  using Key = std::tuple<ops::OpKind, ops::Dims, ops::Pass, ops::DataType>;
  const auto key = [](const MeasuredOp& r) { return Key{r.q.op, r.q.dims, r.q.pass, r.q.dtype}; };
  std::map<Key, std::vector<const MeasuredOp*>> same_config;
  for (const auto& r : rows) {
    same_config[key(r)].push_back(&r);
    if (gpu_ids.emplace(r.gpu->name, static_cast<int>(gpu_names.size())).second) gpu_names.push_back(r.gpu->name);
  }
  std::map<ops::OpKind, Table> tables;
  const float nan = std::numeric_limits<float>::quiet_NaN();
  for (const auto& r : rows) {
    auto& t = tables[r.q.op];
    if (t.columns.empty()) {
      t.columns = meta_columns;
      for (auto& f : feature_names(r.q.op)) t.columns.push_back(f);
      t.gpus = gpu_names;
    }
    const int config = config_ids.emplace(std::pair{static_cast<int>(r.q.op), r.q.dims}, static_cast<int>(config_ids.size())).first->second;
    // Baselines start from the GPU closest in peak FLOPS that measured the same configuration.
    const MeasuredOp* partner = nullptr;
    const double peak = peak_tflops(r.q, *r.gpu);
    double partner_distance = 0;
    for (const auto* o : same_config.at(key(r))) {
      const double distance = std::abs(std::log(peak_tflops(o->q, *o->gpu) / peak));
      if (o->gpu != r.gpu && (!partner || distance < partner_distance)) partner = o, partner_distance = distance;
    }
    const auto f = feature_values(r.q, *r.gpu);
    t.values.insert(t.values.end(),
                    {static_cast<float>(gpu_ids.at(r.gpu->name)), static_cast<float>(config),
                     static_cast<float>(r.q.pass == ops::Pass::backward), static_cast<float>(r.q.dtype == ops::DataType::bf16),
                     static_cast<float>(r.ms), static_cast<float>(roofline(r.q, *r.gpu).ms()),
                     partner ? static_cast<float>(partner->ms) : nan,
                     partner ? static_cast<float>(partner->ms * peak_tflops(partner->q, *partner->gpu) / peak) : nan,
                     partner ? static_cast<float>(partner->ms * partner->gpu->bandwidth_spec_gbps / r.gpu->bandwidth_spec_gbps) : nan});
    for (double x : f) t.values.push_back(static_cast<float>(x));
  }
  return tables;
}

}  // namespace habitat::mlp
