#pragma once
// Prediction error against a trace recorded on the destination GPU: totals, and per kernel, matched by
// kernel name and order of appearance.
#include <algorithm>
#include <cmath>
#include <map>
#include <string>
#include <vector>

#include "habitat/predict/baselines.hpp"
#include "habitat/predict/predicted_trace.hpp"

namespace habitat {

struct ErrorSummary {
  std::string predictor;
  double gpu_active_us = 0, gpu_active_error = 0;  // signed relative error of the total
  double iteration_us = 0, iteration_error = 0;
  std::size_t matched = 0;
  double kernel_median = 0, kernel_p90 = 0, kernel_weighted = 0;  // |error| per kernel; weighted by actual time
};

struct Evaluation {
  double actual_gpu_active_us = 0, actual_iteration_us = 0;
  std::size_t origin_kernels = 0, dest_kernels = 0, matched = 0;
  std::vector<ErrorSummary> rows;  // habitat first, then the baselines
};

// Pairs of (origin kernel index, destination kernel index) with the same name, k-th with k-th.
[[nodiscard]] inline std::vector<std::pair<std::size_t, std::size_t>> match_kernels(const Trace& origin, const Trace& dest) {
  std::map<std::string, std::vector<std::size_t>> at_dest;
  for (std::size_t j = 0; j < dest.kernels.size(); ++j) at_dest[dest.kernels[j].name].push_back(j);
  std::map<std::string, std::size_t> used;
  std::vector<std::pair<std::size_t, std::size_t>> pairs;
  for (std::size_t i = 0; i < origin.kernels.size(); ++i) {
    const std::string& n = origin.kernels[i].name;
    auto it = at_dest.find(n);
    if (it == at_dest.end()) continue;
    std::size_t& u = used[n];
    if (u < it->second.size()) pairs.emplace_back(i, it->second[u++]);
  }
  return pairs;
}

[[nodiscard]] inline ErrorSummary summarize(std::string name, const std::vector<double>& predicted_us, const Trace& origin,
                                            const Trace& dest, const std::vector<std::pair<std::size_t, std::size_t>>& pairs) {
  ErrorSummary s;
  s.predictor = std::move(name);
  for (double p : predicted_us) s.gpu_active_us += p;
  const double actual = dest.gpu_active_us();
  s.gpu_active_error = (s.gpu_active_us - actual) / actual;
  s.iteration_us = idle_kept_iteration_us(origin.iteration_us(), origin.gpu_active_us(), s.gpu_active_us);
  s.iteration_error = (s.iteration_us - dest.iteration_us()) / dest.iteration_us();
  std::vector<double> errs;
  double wsum = 0, wtot = 0;
  for (auto [i, j] : pairs) {
    const double a = dest.kernels[j].duration_us;
    if (a <= 0) continue;
    const double e = std::abs(predicted_us[i] - a) / a;
    errs.push_back(e);
    wsum += e * a;
    wtot += a;
  }
  s.matched = errs.size();
  if (!errs.empty()) {
    std::sort(errs.begin(), errs.end());
    s.kernel_median = errs[errs.size() / 2];
    s.kernel_p90 = errs[std::min(errs.size() - 1, static_cast<std::size_t>(0.9 * double(errs.size())))];
    s.kernel_weighted = wsum / wtot;
  }
  return s;
}

[[nodiscard]] inline Evaluation evaluate(const Trace& origin, const Trace& dest, const PredictedTrace& prediction,
                                         const Device& origin_device, const Device& dest_device) {
  Evaluation ev;
  ev.actual_gpu_active_us = dest.gpu_active_us();
  ev.actual_iteration_us = dest.iteration_us();
  ev.origin_kernels = origin.kernels.size();
  ev.dest_kernels = dest.kernels.size();
  const auto pairs = match_kernels(origin, dest);
  ev.matched = pairs.size();
  std::vector<double> pred;
  for (const auto& k : prediction.kernels) pred.push_back(k.duration_us);
  ev.rows.push_back(summarize("habitat", pred, origin, dest, pairs));
  for (const Baseline& b : baselines) {
    const double f = b.factor(origin_device, dest_device);
    for (std::size_t i = 0; i < pred.size(); ++i) pred[i] = origin.kernels[i].duration_us * f;
    ev.rows.push_back(summarize(b.name, pred, origin, dest, pairs));
  }
  return ev;
}

}  // namespace habitat
