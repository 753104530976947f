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
#include "habitat/ops/trace_ops.hpp"
#include "habitat/predict/wave_scaling.hpp"

namespace habitat::mlp {

// What depends on the trace and the origin only, computed once for any number of destinations: each
// distinct operation configuration (traces repeat shapes: layers, blocks, steps), the trace operations
// that have it, and the model's origin prediction for it.
template <MlpBackend B>
class OriginPlan {
 public:
  struct Config {
    OpQuery query;
    std::vector<std::size_t> ops;        // trace operations with this configuration
    std::optional<double> origin_ms;     // the model on the origin; empty outside its training range
  };
  struct Group {
    const OpModel<B>* model;
    std::vector<Config> configs;
  };

  OriginPlan(const ModelSet<B>& models, const Trace& t, const Device& origin) : origin_(&origin), ops_(t.ops.size()) {
    using Key = std::tuple<ops::Pass, ops::DataType, ops::Dims>;
    std::map<ops::OpKind, std::map<Key, Config>> distinct;
    const auto queries = ops::op_queries(t);
    // GEMMs are left to the physics (roofline scaling and the tile model): the shipped linear/bmm MLPs
    // learned NeuSight's public rows with their N and K swapped (README, "Learned operation models").
    for (std::size_t i = 0; i < queries.size(); ++i)
      if (const auto& q = queries[i]; q && models.find(q->op) && q->op != ops::OpKind::linear && q->op != ops::OpKind::bmm)
        distinct[q->op].try_emplace(Key{q->pass, q->dtype, q->dims}, Config{*q, {}, {}}).first->second.ops.push_back(i);
    for (auto& [op, configs] : distinct) {
      Group g{models.find(op), {}};
      std::vector<OpQuery> qs;
      for (auto& [key, c] : configs) qs.push_back(c.query);
      const auto o = g.model->predict_checked(qs, origin);
      std::size_t j = 0;
      for (auto& [key, c] : configs) {
        c.origin_ms = o[j++];
        g.configs.push_back(std::move(c));
      }
      groups_.push_back(std::move(g));
    }
  }

  [[nodiscard]] const std::vector<Group>& groups() const { return groups_; }
  [[nodiscard]] const Device& origin() const { return *origin_; }
  [[nodiscard]] std::size_t trace_ops() const { return ops_; }

 private:
  const Device* origin_;
  std::size_t ops_;
  std::vector<Group> groups_;
};

template <class Wave, MlpBackend B>
  requires KernelPredictor<Wave>
class HybridPredictor {
 public:
  // The destination's side only: one batched model call per operation kind.
  HybridPredictor(Wave wave, const OriginPlan<B>& plan, const Device& dest) : wave_(std::move(wave)), ratio_(plan.trace_ops()) {
    for (const auto& g : plan.groups()) {
      std::vector<OpQuery> qs;
      for (const auto& c : g.configs) qs.push_back(c.query);
      const auto d = g.model->predict_checked(qs, dest);
      for (std::size_t j = 0; j < qs.size(); ++j) {
        const auto& c = g.configs[j];
        // Outside the training domain on either GPU, or no finite ratio: the model steps aside and the
        // base predictor answers, which is counted and explained.
        if (d[j] && c.origin_ms && std::isfinite(*d[j] / *c.origin_ms)) {
          for (auto i : c.ops) ratio_[i] = *d[j] / *c.origin_ms;
        } else {
          declined_ops_ += c.ops.size();
          if (declined_reason_.empty()) {
            auto why = g.model->outside_training(qs[j], dest);
            if (!why) why = g.model->outside_training(qs[j], plan.origin());
            declined_reason_ = why.value_or("no finite prediction");
          }
        }
      }
    }
  }

  // One destination, the origin's side computed here.
  HybridPredictor(Wave wave, const ModelSet<B>& models, const Trace& t, const Device& origin, const Device& dest)
      : HybridPredictor(std::move(wave), OriginPlan<B>(models, t, origin), dest) {}

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
