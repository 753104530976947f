#pragma once
// A GEMM timed on its own, one operation at a time (predict-ops): the tile model with the residual of the GPU's
// architecture (gemm_residual.hpp) where one serves the GPU and covers the shape; NVIDIA GPUs only, FP32 only (the
// data's precision). Elsewhere the tile model with the GPU's large-GEMM library efficiency where it was measured
// (library_efficiency), as in a trace; the answer says which.
#include <algorithm>
#include <array>
#include <cmath>
#include <string>

#include "habitat/device/device.hpp"
#include "habitat/predict/gemm_residual_fit.hpp"
#include "habitat/predict/gemm_tile.hpp"
#include "habitat/predict/gemm_tile_fit.hpp"
#include "habitat/predict/gemm_tile_predictor.hpp"

namespace habitat::gemm {

struct PerOpTime {
  double us;
  std::string by;  // "tile", "tile + sm_90 residual", "tile (outside the sm_90 residual's shapes)"
};

// The architecture's residual for g, if one was fitted and serves g (ArchResidual::whole_call); nullptr otherwise.
[[nodiscard]] inline const ArchResidual* arch_residual(const Device& g) {
  if (!g.nvidia()) return nullptr;
  for (const auto& a : arch_residuals)
    if (a.cc_major == g.cc_major && a.cc_minor == g.cc_minor)
      return !a.whole_call || std::find(a.boards.begin(), a.boards.end(), g.name) != a.boards.end() ? &a : nullptr;
  return nullptr;
}

// call_us: the timed call's overhead where the GEMM was timed as one call (NeuSight's protocol), else 0.
[[nodiscard]] inline PerOpTime per_op_time_us(const Shape& s, const Device& g, double call_us) {
  const auto calibrated = [&] { return estimate(s, g, fitted, library_efficiency(g, s)).us + call_us; };
  const ArchResidual* a = s.precision == Precision::fp32 ? arch_residual(g) : nullptr;
  if (!a) return {calibrated(), "tile"};
  const Estimate e = estimate(s, g, fitted);  // the residual was fitted on the tile model without a library efficiency
  const std::string sm = "sm_" + std::to_string(a->cc_major) + std::to_string(a->cc_minor);
  const auto in = residual_inputs_of(s.batch, s.m, s.n, s.k, s.shared_weight, s.transposed_b, e.waves);
  if (!residual_covers(*a, in)) return {calibrated(), "tile (outside the " + sm + " residual's shapes)"};
  const double f = std::exp(std::clamp(residual_log(*a, in), -residual_log_clamp, residual_log_clamp));
  return {a->whole_call ? (e.us + call_us) * f : e.us * f + call_us, "tile + " + sm + " residual"};
}

}  // namespace habitat::gemm
