#pragma once
// A trace predicted on another GPU: per-kernel times, iteration totals, throughput and breakdowns.
#include <algorithm>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "habitat/concepts.hpp"
#include "habitat/predict/kernel_work.hpp"
#include "habitat/predict/wave_scaling.hpp"
#include "habitat/trace/trace.hpp"

namespace habitat {

struct BreakdownRow {
  std::string key;
  double origin_us = 0;
  double predicted_us = 0;
  int kernels = 0;
};

struct PredictedTrace {
  std::string device;
  double origin_gpu_active_us = 0, origin_iteration_us = 0;
  double gpu_active_us = 0, iteration_us = 0;
  std::vector<KernelPrediction> kernels;
  std::vector<BreakdownRow> by_operation, by_method;
  std::optional<double> throughput;                  // samples per second
  std::optional<double> cost_normalized_throughput;  // samples per dollar
};

// The outermost framework operation above an op, named as users know it ("AddmmBackward0", not the
// autograd engine's wrapper).
[[nodiscard]] inline std::string operation_label(const Trace& t, int op) {
  if (op < 0) return "(no operation)";
  while (t.ops[op].parent >= 0) op = t.ops[op].parent;
  std::string name = t.ops[op].name;
  constexpr std::string_view wrapper = "autograd::engine::evaluate_function: ";
  if (name.starts_with(wrapper)) name.erase(0, wrapper.size());
  return name;
}

namespace detail {
inline std::vector<BreakdownRow> sorted_rows(std::map<std::string, BreakdownRow>& rows) {
  std::vector<BreakdownRow> out;
  for (auto& [k, r] : rows) {
    r.key = k;
    out.push_back(r);
  }
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.origin_us > b.origin_us; });
  return out;
}
}  // namespace detail

// The iteration keeps the origin's idle time (host-side gaps) constant, as the paper does.
[[nodiscard]] inline double predicted_iteration_us(double origin_iteration_us, double origin_gpu_active_us,
                                                  double predicted_gpu_active_us) {
  return std::max(origin_iteration_us - origin_gpu_active_us, 0.0) + predicted_gpu_active_us;
}

struct PredictOptions {
  std::optional<int> batch;  // samples per iteration, for throughput
};

// Predicts every kernel, then the iteration: GPU active time is the sum of the predicted GPU work; the
// iteration keeps the origin's idle time (the host-side gaps) constant, as the paper does.
template <class Predictor>
  requires KernelPredictor<Predictor>
[[nodiscard]] PredictedTrace predict_trace(const Trace& t, const std::vector<KernelWork>& work, const Device& origin,
                                           const Device& dest, const Predictor& p, const PredictOptions& opt = {}) {
  PredictedTrace out;
  out.device = dest.name;
  out.origin_gpu_active_us = t.gpu_active_us();
  out.origin_iteration_us = t.iteration_us();
  out.kernels.reserve(t.kernels.size());
  std::map<std::string, BreakdownRow> by_op, by_method;
  std::map<int, std::string> labels;
  for (std::size_t i = 0; i < t.kernels.size(); ++i) {
    const Kernel& k = t.kernels[i];
    const KernelPrediction kp = p.predict(k, work[i], origin, dest);
    out.kernels.push_back(kp);
    out.gpu_active_us += kp.duration_us;
    auto [it, fresh] = labels.try_emplace(k.op);
    if (fresh) it->second = operation_label(t, k.op);
    for (auto* row : {&by_op[it->second], &by_method[to_string(kp.method)]}) {
      row->origin_us += k.duration_us;
      row->predicted_us += kp.duration_us;
      ++row->kernels;
    }
  }
  out.iteration_us = predicted_iteration_us(out.origin_iteration_us, out.origin_gpu_active_us, out.gpu_active_us);
  out.by_operation = detail::sorted_rows(by_op);
  out.by_method = detail::sorted_rows(by_method);
  if (opt.batch && out.iteration_us > 0) {
    out.throughput = *opt.batch / (out.iteration_us * 1e-6);
    if (dest.price && dest.price->usd_per_hour > 0) out.cost_normalized_throughput = *out.throughput * 3600.0 / dest.price->usd_per_hour;
  }
  return out;
}

}  // namespace habitat
