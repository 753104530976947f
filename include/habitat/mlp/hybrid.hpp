#pragma once
// The hybrid predictor (paper section 3.4): kernels of operations a learned model covers take
// origin time x model(destination) / model(origin); every other kernel goes to the wave scaler.
#include <cstdint>
#include <map>
#include <tuple>
#include <optional>
#include <vector>

#include "habitat/concepts.hpp"
#include "habitat/mlp/op_model.hpp"
#include "habitat/mlp/trace_ops.hpp"
#include "habitat/predict/wave_scaling.hpp"

namespace habitat::mlp {

template <class Wave, MlpBackend B>
  requires KernelPredictor<Wave>
class HybridPredictor {
 public:
  HybridPredictor(Wave wave, const ModelSet<B>& models, const Trace& t, const Device& origin, const Device& dest)
      : wave_(std::move(wave)), ratio_(t.ops.size()) {
    // Traces repeat shapes (layers, blocks, steps): each distinct configuration goes through the MLP once.
    const auto queries = op_queries(t);
    using Key = std::tuple<ops::OpKind, ops::Pass, ops::DataType, ops::Dims>;
    std::map<ops::OpKind, std::pair<std::vector<OpQuery>, std::map<Key, std::size_t>>> batches;
    std::vector<std::pair<ops::OpKind, std::size_t>> slot(queries.size(), {ops::OpKind::linear, SIZE_MAX});
    for (std::size_t i = 0; i < queries.size(); ++i) {
      if (!queries[i] || !models.find(queries[i]->op)) continue;
      const auto& q = *queries[i];
      auto& [list, index] = batches[q.op];
      const auto [it, added] = index.try_emplace(Key{q.op, q.pass, q.dtype, q.dims}, list.size());
      if (added) list.push_back(q);
      slot[i] = {q.op, it->second};
    }
    std::map<ops::OpKind, std::vector<double>> ratios;
    for (const auto& [op, b] : batches) {
      const auto& m = *models.find(op);
      const auto d = m.predict_ms(b.first, dest), o = m.predict_ms(b.first, origin);
      auto& r = ratios[op];
      for (std::size_t j = 0; j < d.size(); ++j) r.push_back(d[j] / o[j]);
    }
    for (std::size_t i = 0; i < queries.size(); ++i)
      if (slot[i].second != SIZE_MAX) ratio_[i] = ratios.at(slot[i].first)[slot[i].second];
  }

  [[nodiscard]] KernelPrediction predict(const Kernel& k, const KernelWork& w, const Device& origin, const Device& dest) const {
    if (k.kind == GpuWorkKind::kernel && k.op >= 0 && ratio_[static_cast<std::size_t>(k.op)])
      return {k.duration_us * *ratio_[static_cast<std::size_t>(k.op)], Method::mlp_ratio, 1};
    return wave_.predict(k, w, origin, dest);
  }

  // Operations of the trace the models cover.
  [[nodiscard]] std::size_t covered_ops() const {
    std::size_t n = 0;
    for (const auto& r : ratio_) n += r.has_value();
    return n;
  }

 private:
  Wave wave_;
  std::vector<std::optional<double>> ratio_;  // per trace operation
};

}  // namespace habitat::mlp
