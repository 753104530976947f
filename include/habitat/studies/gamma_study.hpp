#pragma once
// Where gamma comes from, side by side on one origin/destination pair: the paper's fallback (gamma = 1),
// the counter-free estimate, and measured metrics (Eq. 3 alone and with the DRAM-utilization weight).
// Errors are given for the GPU-active total and per kernel class.
#include <array>
#include <string>
#include <vector>

#include "habitat/predict/predicted_trace.hpp"
#include "habitat/predict/wave_scaling.hpp"
#include "habitat/studies/evaluate.hpp"

namespace habitat {

enum class KernelClass { math, other_kernel, copy_fill };
inline constexpr std::array<KernelClass, 3> kernel_classes{KernelClass::math, KernelClass::other_kernel, KernelClass::copy_fill};

[[nodiscard]] constexpr const char* to_string(KernelClass c) {
  switch (c) {
    case KernelClass::math: return "GEMM/conv/attention";
    case KernelClass::other_kernel: return "other kernels";
    case KernelClass::copy_fill: return "copies and fills";
  }
  return "?";
}

[[nodiscard]] inline KernelClass kernel_class(const Kernel& k) {
  if (k.kind != GpuWorkKind::kernel) return KernelClass::copy_fill;
  return detail::is_math_kernel(k.name) ? KernelClass::math : KernelClass::other_kernel;
}

struct GammaStudyRow {
  std::string source;
  double gpu_active_error = 0;                           // signed, relative
  std::array<double, kernel_classes.size()> by_class{};  // signed, relative, per class total
};

struct GammaStudy {
  double measured_time_share = 0;  // of origin kernel time with metrics attached
  std::array<double, kernel_classes.size()> class_share{};  // of destination GPU-active time
  std::vector<GammaStudyRow> rows;
};

// `origin` carries the metrics to study (attach_metrics); the other rows ignore them.
[[nodiscard]] inline GammaStudy gamma_study(const Trace& origin, const Trace& dest, const Device& od, const Device& dd) {
  GammaStudy s;
  std::array<double, kernel_classes.size()> actual{};
  for (const auto& k : dest.kernels) actual[static_cast<std::size_t>(kernel_class(k))] += k.duration_us;
  for (std::size_t c = 0; c < actual.size(); ++c) s.class_share[c] = actual[c] / dest.gpu_active_us();
  double with = 0, all = 0;
  for (const auto& k : origin.kernels) {
    all += k.duration_us;
    if (k.metrics) with += k.duration_us;
  }
  s.measured_time_share = all > 0 ? with / all : 0;

  std::vector<std::size_t> cls(origin.kernels.size());  // classify once: name matching is the costly part
  for (std::size_t i = 0; i < cls.size(); ++i) cls[i] = static_cast<std::size_t>(kernel_class(origin.kernels[i]));
  Trace counter_free = origin;
  for (auto& k : counter_free.kernels) k.metrics.reset();
  const auto estimated = kernel_work(counter_free), measured = kernel_work(origin);
  auto row = [&](std::string name, const std::vector<KernelWork>& work, const auto& predictor) {
    const PredictedTrace p = predict_trace(origin, work, od, dd, predictor);
    GammaStudyRow r{std::move(name), (p.gpu_active_us - dest.gpu_active_us()) / dest.gpu_active_us(), {}};
    std::array<double, kernel_classes.size()> pred{};
    for (std::size_t i = 0; i < cls.size(); ++i) pred[cls[i]] += p.kernels[i].duration_us;
    for (std::size_t c = 0; c < pred.size(); ++c) r.by_class[c] = actual[c] > 0 ? (pred[c] - actual[c]) / actual[c] : 0;
    s.rows.push_back(std::move(r));
  };
  row("gamma = 1 (paper fallback)", estimated, WaveScaling<waves::Exact, gamma::Fixed<1>>{});
  row("counter-free estimate", estimated, DefaultWaveScaling{});
  row("measured, Eq. 3 only", measured, WaveScaling<waves::Exact, gamma::Roofline>{});
  row("measured", measured, DefaultWaveScaling{});
  return s;
}

}  // namespace habitat
