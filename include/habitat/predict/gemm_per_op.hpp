#pragma once
// A GEMM timed on its own, one operation at a time (predict-ops): the tile model with the residual of the GPU's
// architecture (gemm_residual.hpp) where one serves the GPU and covers the shape; NVIDIA GPUs only, FP32 only (the
// data's precision). Elsewhere the tile model with the GPU's large-GEMM library efficiency where it was measured
// (library_efficiency); the answer says which. A trace's GEMMs use it with no call overhead (call_us = 0).
#include <algorithm>
#include <array>
#include <cmath>
#include <string>

#include "habitat/device/device.hpp"
#include "habitat/predict/gemm_residual_fit.hpp"
#include "habitat/predict/gemm_tile.hpp"
#include "habitat/predict/gemm_tile_fit.hpp"

namespace habitat::gemm {

// The tile model the architectures' residuals correct: the fitted constants without Hopper's split-K share
// (Params::split_share). On it the sm_90 residual learns the split kernels from the shapes, and it held its held-out
// fifth better so than refit on top of the share (README, "Hopper's split-K kernels").
inline constexpr Params residual_base = [] {
  Params p = fitted;
  p.split_share = 1;
  return p;
}();

// The fitted library efficiency of a GPU for FP32 GEMMs of a layout; 1 for GPUs never measured and for
// tensor-core GEMMs (calibrated on FP32 timings only).
[[nodiscard]] inline double library_efficiency(const Device& g, const Shape& s) {
  if (s.precision != Precision::fp32) return 1.0;
  for (const auto& c : calibrations)
    if (c.gpu == g.name) return s.transposed_b ? c.tn : c.nn;
  return 1.0;
}

// The overhead of one timed call of the GEMM in NeuSight's protocol: F.linear's (with bias; a shared weight) or
// torch.bmm's. On every public rig the shortest bmm calls take 0.55-0.64 of the shortest linear calls (29-49 us
// against 46-89): the two host paths differ, by about the same share on every host.
[[nodiscard]] constexpr double timed_call_us(const Shape& s) { return per_operation(s, fitted_call_us, fitted_bmm_call_us); }

// The time of the tile model a residual corrects, as the residual was fitted on it (the study dump's shipped_us): the
// kernel on residual_base, plus the timed call's overhead where the rows were timed calls. A residual's input.
[[nodiscard]] constexpr double residual_base_us(const Estimate& e, const Shape& s, bool timed_call) {
  return e.us + (timed_call ? timed_call_us(s) : 0);
}

// The tile model with the GPU's library efficiency (no residual), plus the call's overhead.
[[nodiscard]] inline double calibrated_time_us(const Shape& s, const Device& g, double call_us, const Params& p = fitted) {
  return estimate(s, g, p, library_efficiency(g, s)).us + call_us;
}

struct PerOpTime {
  enum class By { tile, residual, outside_residual };
  double us;
  By by = By::tile;
  const ArchResidual* residual = nullptr;  // the architecture's residual, for residual and outside_residual

  // What answered, for the output: "tile", "tile + sm_90 residual", "tile (outside the sm_90 residual's shapes)".
  [[nodiscard]] std::string label() const {
    if (by == By::tile || !residual) return "tile";
    const std::string sm = "sm_" + std::to_string(residual->cc_major) + std::to_string(residual->cc_minor);
    return by == By::residual ? "tile + " + sm + " residual" : "tile (outside the " + sm + " residual's shapes)";
  }
};

// The architecture's residual for g, if one was fitted and serves g (ArchResidual::whole_call); nullptr otherwise.
[[nodiscard]] inline const ArchResidual* arch_residual(const Device& g) {
  if (!g.nvidia()) return nullptr;
  for (const auto& a : arch_residuals)
    if (a.cc_major == g.cc_major && a.cc_minor == g.cc_minor)
      return !a.whole_call || std::find(a.boards.begin(), a.boards.end(), g.name) != a.boards.end() ? &a : nullptr;
  return nullptr;
}

// call_us: the timed call's overhead where the GEMM was timed as one call (NeuSight's protocol), else 0. p: the tile
// model's constants where no residual covers the shape (a covered one always takes the residual on residual_base).
[[nodiscard]] inline PerOpTime per_op_time_us(const Shape& s, const Device& g, double call_us, const Params& p = fitted) {
  const auto calibrated = [&] { return calibrated_time_us(s, g, call_us, p); };
  const ArchResidual* a = s.precision == Precision::fp32 ? arch_residual(g) : nullptr;
  if (!a) return {calibrated()};
  const Estimate e = estimate(s, g, residual_base);  // the residual was fitted on this tile model, without a library efficiency
  const auto in = residual_inputs_of(s.batch, s.m, s.n, s.k, s.shared_weight, s.transposed_b, e.waves, residual_base_us(e, s, a->whole_call));
  if (!residual_covers(*a, in)) return {calibrated(), PerOpTime::By::outside_residual, a};
  const double log_f = std::clamp(residual_log(*a, in), -residual_log_clamp, residual_log_clamp);
  if (!a->whole_call) return {e.us * std::exp(log_f) + call_us, PerOpTime::By::residual, a};
  // Fitted on whole timed calls (kernel and call overhead): a call as timed takes it whole; a kernel alone (a
  // trace's, call_us = 0) takes the share of the correction its time has in the call, so a GEMM of a few
  // microseconds, whose timed call is mostly overhead, is not moved by the overhead's variations.
  if (call_us > 0) return {(e.us + call_us) * std::exp(log_f), PerOpTime::By::residual, a};
  return {e.us * std::exp(log_f * e.us / (e.us + timed_call_us(s))), PerOpTime::By::residual, a};
}

// The ratio method's label: "tile-ratio", naming each side's answer where either is not the tile model alone.
[[nodiscard]] inline std::string ratio_label(const PerOpTime& dest, const PerOpTime& origin) {
  if (dest.by == PerOpTime::By::tile && origin.by == PerOpTime::By::tile) return "tile-ratio";
  return "tile-ratio (destination: " + dest.label() + "; origin: " + origin.label() + ")";
}

}  // namespace habitat::gemm
