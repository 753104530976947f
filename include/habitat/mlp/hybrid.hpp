#pragma once
// The hybrid predictor (paper section 3.4): kernels of operations a learned model covers take
// origin time x model(destination) / model(origin); every other kernel goes to the wave scaler.
#include <cmath>
#include <map>
#include <string>
#include <optional>
#include <tuple>
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
    // Traces repeat shapes (layers, blocks, steps): each distinct configuration goes through the MLP once,
    // batched per operation kind, and its ratio goes to every trace operation that has it.
    using Key = std::tuple<ops::Pass, ops::DataType, ops::Dims>;
    std::map<ops::OpKind, std::map<Key, std::pair<OpQuery, std::vector<std::size_t>>>> distinct;
    const auto queries = op_queries(t);
    // GEMMs are left to the physics (roofline scaling and the tile model): the shipped linear/bmm MLPs
    // learned NeuSight's public rows with their N and K swapped (README, "Learned operation models").
    for (std::size_t i = 0; i < queries.size(); ++i)
      if (const auto& q = queries[i]; q && models.find(q->op) && q->op != ops::OpKind::linear && q->op != ops::OpKind::bmm)
        distinct[q->op].try_emplace(Key{q->pass, q->dtype, q->dims}, *q, std::vector<std::size_t>{}).first->second.second.push_back(i);
    for (const auto& [op, configs] : distinct) {
      std::vector<OpQuery> qs;
      for (const auto& [key, entry] : configs) qs.push_back(entry.first);
      const auto& m = *models.find(op);
      const auto d = m.predict_checked(qs, dest), o = m.predict_checked(qs, origin);
      std::size_t j = 0;
      for (const auto& [key, entry] : configs) {
        // Outside the training domain on either GPU, or no finite ratio: the model steps aside and the
        // base predictor answers, which is counted and explained.
        if (d[j] && o[j] && std::isfinite(*d[j] / *o[j])) {
          for (auto i : entry.second) ratio_[i] = *d[j] / *o[j];
        } else {
          declined_ops_ += entry.second.size();
          if (declined_reason_.empty()) {
            auto why = m.outside_training(qs[j], dest);
            if (!why) why = m.outside_training(qs[j], origin);
            declined_reason_ = why.value_or("no finite prediction");
          }
        }
        ++j;
      }
    }
  }

  [[nodiscard]] KernelPrediction predict(const Kernel& k, const KernelWork& w, const Device& origin, const Device& dest) const {
    if (k.kind == GpuWorkKind::kernel && k.op >= 0 && ratio_[static_cast<std::size_t>(k.op)])
      return {k.duration_us * *ratio_[static_cast<std::size_t>(k.op)], Method::mlp_ratio, 1};
    return wave_.predict(k, w, origin, dest);
  }

  // Trace operations a model covers but declined (outside its training domain), and the first reason.
  [[nodiscard]] std::size_t declined_ops() const { return declined_ops_; }
  [[nodiscard]] const std::string& declined_reason() const { return declined_reason_; }

  // Operations of the trace the models cover.
  [[nodiscard]] std::size_t covered_ops() const {
    std::size_t n = 0;
    for (const auto& r : ratio_) n += r.has_value();
    return n;
  }

 private:
  Wave wave_;
  std::vector<std::optional<double>> ratio_;  // per trace operation
  std::size_t declined_ops_ = 0;
  std::string declined_reason_;
};

}  // namespace habitat::mlp
