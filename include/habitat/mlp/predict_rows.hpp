#pragma once
// Predicts rows of operation configurations (habitat predict-ops): the forward latency of each row's
// operation on its Device, either absolute from the learned model or, given a measured latency on an
// origin GPU, by the paper's ratio method (origin x model(dest) / model(origin)).
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "habitat/device/catalog.hpp"
#include "habitat/mlp/op_model.hpp"
#include "habitat/mlp/op_rows.hpp"

namespace habitat::mlp {

struct RowPrediction {
  std::optional<double> ms;
  std::string method;  // "mlp", "mlp-ratio", "bandwidth-ratio" or why there is none
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
  for (std::size_t i = 0; i < csv.rows.size(); ++i) {
    const auto& r = csv.rows[i];
    const Device* dest = &row_device(csv, r, catalog);
    if (ratio) {
      const auto& cell = r.fields[static_cast<std::size_t>(origin_col)];
      const auto v = habitat::detail::parse_csv_number(cell);
      if (!v || *v <= 0)
        throw make_error(csv.file, "line " + std::to_string(r.line) + ", column " + ratio->column, "'" + cell + "' is not a positive latency");
      origin_ms[i] = *v;
    }
    if (r.op && models.find(*r.op)) {
      groups[{static_cast<int>(*r.op), dest}].push_back(i);
    } else if (ratio) {
      // No model: the op streams memory, so scale by bandwidth, as wave scaling would.
      out[i] = {origin_ms[i] * ratio->origin->bandwidth_spec_gbps / dest->bandwidth_spec_gbps, "bandwidth-ratio"};
    } else {
      out[i] = {std::nullopt, r.op ? "no model for " + r.op_name : "no model for op '" + r.op_name + "'"};
    }
  }
  for (const auto& [key, idx] : groups) {
    const auto& model = *models.find(static_cast<ops::OpKind>(key.first));
    std::vector<OpQuery> qs;
    for (auto i : idx) qs.push_back(csv.rows[i].query());
    const auto dest_ms = model.predict_ms(qs, *key.second);
    std::vector<double> origin_model;
    if (ratio) origin_model = model.predict_ms(qs, *ratio->origin);
    for (std::size_t j = 0; j < idx.size(); ++j) {
      const auto i = idx[j];
      out[i] = ratio ? RowPrediction{origin_ms[i] * dest_ms[j] / origin_model[j], "mlp-ratio"} : RowPrediction{dest_ms[j], "mlp"};
    }
  }
  return out;
}

}  // namespace habitat::mlp
