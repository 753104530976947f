#pragma once
// Predicts rows of operation configurations (habitat predict-ops): the forward latency of each row's
// operation on its Device, either absolute from the learned model or, given a measured latency on an
// origin GPU, by the paper's ratio method (origin x model(dest) / model(origin)).
#include <cmath>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "habitat/device/catalog.hpp"
#include "habitat/mlp/op_model.hpp"
#include "habitat/mlp/op_physics.hpp"
#include "habitat/predict/gemm_per_op.hpp"
#include "habitat/mlp/op_rows.hpp"

namespace habitat::mlp {

struct RowPrediction {
  std::optional<double> ms;
  std::string method;  // "tile..." (gemm::per_op_time_us), "mlp", "mlp-ratio", "physics", "physics-ratio", "bandwidth-ratio" or why there is none
};

struct RatioSource {
  const Device* origin = nullptr;
  std::string column;  // measured origin latency, ms
};

template <MlpBackend B>
[[nodiscard]] std::vector<RowPrediction> predict_rows(const OpCsv& csv, const ModelSet<B>& models, const Catalog& catalog,
                                                      const std::optional<RatioSource>& ratio = std::nullopt) {
  std::vector<RowPrediction> out(csv.rows.size());
  int origin_col = -1;
  if (ratio) {
    origin_col = detail::find_column(csv.header, ratio->column);
    if (origin_col < 0) throw make_error(csv.file, "header", "no column '" + ratio->column + "' (--origin-column)");
  }
  // Rows grouped by (op, device) so each model runs once per group on the whole batch.
  std::map<std::pair<int, const Device*>, std::vector<std::size_t>> groups;
  std::vector<double> origin_ms(ratio ? csv.rows.size() : 0);  // measured latency on the origin, per row
  std::vector<const Device*> devices(csv.rows.size());            // each row's GPU, looked up once
  for (std::size_t i = 0; i < csv.rows.size(); ++i) {
    const auto& r = csv.rows[i];
    const Device* dest = devices[i] = &row_device(csv, r, catalog);
    if (ratio) {
      const auto& cell = r.fields[static_cast<std::size_t>(origin_col)];
      const auto v = habitat::detail::parse_csv_number(cell);
      // A measured latency is at least a nanosecond: zero, denormal or smaller values are a broken cell, and
      // would turn every ratio into 0 or infinity.
      if (!v || !std::isnormal(*v) || *v < 1e-6 || *v > 1e9)
        throw make_error(csv.file, "line " + std::to_string(r.line) + ", column " + ratio->column,
                         "'" + cell + "' is not a latency in ms (1e-6 to 1e9)");
      origin_ms[i] = *v;
    }
    if (r.op && (*r.op == ops::OpKind::linear || *r.op == ops::OpKind::bmm)) {
      // GEMMs: the tile model, as one timed call (NeuSight's protocol: the kernel plus a call's overhead).
      const auto& d = r.dims;
      gemm::Shape s{d[0], d[1], csv.neusight_layout() ? d[3] : d[2], csv.neusight_layout() ? d[2] : d[3], *r.op == ops::OpKind::linear,
                    *r.op == ops::OpKind::linear};
      if (r.dtype == ops::DataType::bf16) s.precision = Precision::bf16, s.elem_bytes = ops::dtype_bytes(r.dtype);
      s.timed_alone = true;
      if (!(s.batch > 0 && s.m > 0 && s.n > 0 && s.k > 0)) {
        out[i] = {std::nullopt, "no prediction: an empty matrix (a dimension of 0)"};
        continue;
      }
      // The architecture's residual where it serves the GPU and covers the shape (gemm_per_op.hpp); `label()` says which.
      const auto d_call = gemm::per_op_time_us(s, *dest, gemm::timed_call_us(s));
      // A tensor-core GEMM timed on its own runs at the clock its board's power limit allows: where unmeasured, its
      // power twin's measured clock or the law's; an SGEMM on a capped card at the clock a peer's loop gives.
      const auto clock_note = [&s](const Device& g) {
        const std::string mhz = std::to_string(std::lround(g.loop_clock_mhz_at(s.precision))) + " MHz";
        if (!g.on_tensor_cores(s.precision) && !g.loop_clock_peer.empty() && g.loop_clock_mhz_at(s.precision) == g.loop_clock_mhz)
          return "; " + g.name + "'s clock in an SGEMM loop derived from the " + g.loop_clock_peer + "'s (" + mhz + ", an estimate)";
        if (!g.tensor_loop_clock_from_power(s.precision)) return std::string();
        return "; " + g.name + "'s tensor clock in a GEMM loop " +
               (g.tensor_power_twin.empty() ? "derived from its power limit (" + mhz + ", an estimate)"
                                            : "as measured on the " + g.tensor_power_twin + ", whose SMs, clocks, memory and power limit it shares (" + mhz + ")");
      };
      if (!ratio) {
        out[i] = {d_call.us / 1e3, d_call.label() + clock_note(*dest)};
        continue;
      }
      const auto o_call = gemm::per_op_time_us(s, *ratio->origin, gemm::timed_call_us(s));
      out[i] = {origin_ms[i] * d_call.us / o_call.us, gemm::ratio_label(d_call, o_call) + clock_note(*dest) + clock_note(*ratio->origin)};
    } else if (r.op && models.find(*r.op)) {
      groups[{static_cast<int>(*r.op), dest}].push_back(i);
    } else if (r.op) {
      out[i] = ratio ? RowPrediction{origin_ms[i] * physics_ratio(r.query(), *dest, *ratio->origin), "physics-ratio (no learned model)"}
                     : RowPrediction{physics_op_ms(r.query(), *dest), "physics (no learned model)"};
    } else if (ratio) {
      // An operation habitat knows nothing of: assume it streams memory and scale by sustained bandwidth.
      out[i] = {origin_ms[i] * ratio->origin->sustained_bandwidth_gbps() / dest->sustained_bandwidth_gbps(), "bandwidth-ratio"};
    } else {
      out[i] = {std::nullopt, "no model for op '" + r.op_name + "'"};
    }
  }
  for (const auto& [key, idx] : groups) {
    const auto& model = *models.find(static_cast<ops::OpKind>(key.first));
    std::vector<OpQuery> qs;
    for (auto i : idx) qs.push_back(csv.rows[i].query());
    const auto dest_ms = model.predict_checked(qs, *key.second);
    std::vector<std::optional<double>> origin_model;
    if (ratio) origin_model = model.predict_checked(qs, *ratio->origin);
    for (std::size_t j = 0; j < idx.size(); ++j) {
      const auto i = idx[j];
      const bool learned = dest_ms[j] && (!ratio || origin_model[j]);
      // Outside the model's training domain: the physics model answers, and the row says so.
      if (!ratio) out[i] = {learned ? *dest_ms[j] : physics_op_ms(qs[j], *key.second), learned ? "mlp" : "physics (outside the model's training range)"};
      else {
        const double f = learned ? *dest_ms[j] / *origin_model[j] : physics_ratio(qs[j], *key.second, *ratio->origin);
        out[i] = {origin_ms[i] * f, learned ? "mlp-ratio" : "physics-ratio (outside the model's training range)"};
      }
    }
  }
  // Every answer, whoever gave it: finite, and never below the destination's roofline bound.
  for (std::size_t i = 0; i < out.size(); ++i) {
    auto& p = out[i];
    if (!p.ms) continue;
    if (!std::isfinite(*p.ms) || *p.ms <= 0) {
      p = {std::nullopt, p.method + ": no finite prediction"};
      continue;
    }
    const auto& r = csv.rows[i];
    if (!r.op) continue;
    const Device& g = *devices[i];
    const auto q = r.query();
    const auto w = ops::op_work(q.op, q.dims, q.dtype, q.pass);
    const double bound = op_bound_ms(q, g, w.flops, w.bytes);
    if (*p.ms < bound) p = {bound, p.method + ", raised to the roofline bound"};
  }
  return out;
}

}  // namespace habitat::mlp
