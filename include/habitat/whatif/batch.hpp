#pragma once
// The batch-size what-if: the traced step as it would run with another batch on the GPU it was traced on.
// Every recorded shape has its batch dimension rescaled (batch_dim.hpp); each kernel's work follows its
// operation's (a GEMM's or convolution's FLOPs grow with the batch wherever an operand carries it; other
// kernels with their operands' elements), and its time is re-estimated from its launch (kernel_resize.hpp)
// or, for GEMMs, by the tile model, which also says when the library would pick another tile. What does
// not depend on the batch stays: optimizer and weight kernels, the host's work per operation, the order of
// the step. The result is a trace like the recorded one, index for index, so every predictor, the
// simulator and the reports take it as they take a recorded trace.
#include <cmath>
#include <cstdio>
#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "habitat/predict/gemm_tile_fit.hpp"
#include "habitat/predict/gemm_tile_predictor.hpp"
#include "habitat/predict/kernel_work.hpp"
#include "habitat/whatif/batch_dim.hpp"
#include "habitat/whatif/kernel_resize.hpp"

namespace habitat::whatif {

struct Transformed {
  Trace trace;                     // same ops, kernels and calls as the recorded trace, index for index
  std::vector<std::string> notes;  // what changed kind, what was assumed
  int kernels_changed = 0;         // kernels whose time the transform changed
  int tile_changes = 0;            // GEMMs whose tile the library would change
  std::vector<double> extra_host_us;  // per kernel: host work added before the call that launches it

  [[nodiscard]] static Transformed unchanged(const Trace& t) { return {t, {}, 0, 0, std::vector<double>(t.kernels.size(), 0)}; }
};

[[nodiscard]] inline std::string report_mb(double bytes) {
  char b[32];
  std::snprintf(b, sizeof b, "%.1f MB", bytes / 1e6);
  return b;
}

namespace detail {

[[nodiscard]] inline std::string tile_name(const gemm::Tile& t) {
  return std::to_string(static_cast<int>(t.tm)) + "x" + std::to_string(static_cast<int>(t.tn));
}

}  // namespace detail

// ATen's matrix products, by name (their operands are matrices of activations and weights).
[[nodiscard]] inline bool is_matrix_product(std::string_view name) {
  return name == "aten::addmm" || name == "aten::mm" || name == "aten::bmm" || name == "aten::baddbmm" || name == "aten::matmul" ||
         name == "aten::linear";
}

[[nodiscard]] inline Transformed scale_batch(const Trace& t, const Device& origin, std::int64_t from, std::int64_t to) {
  Transformed out = Transformed::unchanged(t);
  if (from == to) return out;
  const auto params = parameter_shapes(t);
  // Per operation: elements of its tensor operands before and after, and whether any carries the batch.
  std::vector<double> before(t.ops.size(), 0), after(t.ops.size(), 0);
  for (std::size_t i = 0; i < t.ops.size(); ++i) {
    for (auto& a : out.trace.ops[i].inputs) {
      const double n0 = numel(a.shape);
      a.shape = rescaled(a.shape, from, to, params);
      before[i] += n0;
      after[i] += numel(a.shape);
    }
    // A matrix product whose operands all have parameters' shapes multiplies an activation that only looks like
    // a weight (batch x sequence tokens = 4 x hidden in a GPT: [16384, 4096] is fc1's weight and the input of
    // fc2): its first matrix operand carries the batch.
    if (after[i] == before[i] && is_matrix_product(t.ops[i].name))
      for (auto& a : out.trace.ops[i].inputs)
        if (a.shape.size() >= 2) {
          const double n0 = numel(a.shape);
          a.shape = rescaled(a.shape, from, to, {});
          after[i] += numel(a.shape) - n0;
          break;
        }
  }
  // A kernel's operation is the innermost one with tensor operands (views and wrappers record none).
  auto shaped = [&](int op) {
    while (op >= 0 && before[static_cast<std::size_t>(op)] <= 0) op = t.ops[static_cast<std::size_t>(op)].parent;
    return op;
  };
  const double r = static_cast<double>(to) / static_cast<double>(from);
  const auto g0 = gemm::op_shapes(t), g1 = gemm::op_shapes(out.trace);
  std::set<int> tile_checked;  // GEMM operations already compared
  for (std::size_t i = 0; i < t.kernels.size(); ++i) {
    const Kernel& k = t.kernels[i];
    Kernel& nk = out.trace.kernels[i];
    if (k.collective) continue;
    const int op = shaped(k.op);
    if (op < 0) continue;
    const auto o = static_cast<std::size_t>(op);
    if (after[o] == before[o]) continue;  // no operand carries the batch
    const bool math = habitat::detail::is_math_kernel(k.name);
    const double ratio = math ? r : after[o] / before[o];
    const auto gk = k.op >= 0 ? static_cast<std::size_t>(k.op) : o;
    // The tile model says when the library would pick another tile; its time ratio is not used: on the
    // sweeps it missed cuBLAS filling the GPU with smaller tiles or split-K at small M (decoder 4 -> 8:
    // -19%; measured before the tile model had split-K), and the rule of kernel_resize.hpp did better.
    if (math && g0[gk] && g1[gk] && tile_checked.insert(static_cast<int>(gk)).second) {
      gemm::Shape s0 = *g0[gk], s1 = *g1[gk];
      s0.precision = s1.precision = habitat::detail::kernel_precision(k, true, &t.ops[gk]);
      const auto e0 = gemm::estimate(s0, origin, gemm::fitted), e1 = gemm::estimate(s1, origin, gemm::fitted);
      if (e0.tile.tm != e1.tile.tm || e0.tile.tn != e1.tile.tn) {
        ++out.tile_changes;
        if (out.tile_changes <= 3)
          out.notes.push_back("batch " + std::to_string(to) + ": " + operation_label(t, k.op) + " [" + std::to_string(static_cast<long long>(s0.m)) +
                              "x" + std::to_string(static_cast<long long>(s0.n)) + "x" + std::to_string(static_cast<long long>(s0.k)) +
                              "] would change GEMM tile " + detail::tile_name(e0.tile) + " -> " + detail::tile_name(e1.tile));
      }
    }
    nk.grid = rescaled_grid(k.grid, ratio);
    nk.duration_us = rescaled_us(k.duration_us, ratio);
    if (k.kind != GpuWorkKind::kernel) nk.bytes = k.bytes * ratio;
    ++out.kernels_changed;
  }
  if (out.tile_changes > 3) out.notes.push_back("batch " + std::to_string(to) + ": " + std::to_string(out.tile_changes - 3) + " more GEMMs would change tile");
  return out;
}

}  // namespace habitat::whatif
