#pragma once
// Kernel-varying GEMMs (mm, addmm, bmm, baddbmm, linear) by the tile model's ratio: their math kernels take
// origin time x tile(dest) / tile(origin), so the model's systematic error cancels and the kernel the
// destination's library would pick is predicted from its tile waves. By default only GEMM launches that
// cannot run on the destination go to it (measured across generations, roofline scaling carries a GEMM
// that still fits better: README, "Across GPU generations"); TileUse::every_gemm sends all of them. Every
// other kernel goes to the base predictor (roofline scaling, wave scaling, or a hybrid with learned models).
// The tile model here is the per-operation one (gemm_per_op.hpp: the architecture's residual where one serves).
//
// Physics scaling of a launch is blind to the operands' layout, which libraries run at different speeds on some
// GPUs (Pascal's `tn` SGEMMs at a third of their `nn` ones for some shapes). A GEMM the base scales by physics
// takes the destination's layout preference relative to the origin's (layout_preference below: the square
// root of the per-operation model's time in its layout over the other layout's, on each GPU), so the scaled time
// moves by how much more the destination than the origin favours one layout (exactly 1 on the same GPU).
#include <cmath>
#include <optional>
#include <vector>

#include "habitat/concepts.hpp"
#include "habitat/ops/trace_ops.hpp"
#include "habitat/predict/gemm_per_op.hpp"
#include "habitat/predict/gemm_tile.hpp"
#include "habitat/predict/kernel_work.hpp"
#include "habitat/predict/wave_scaling.hpp"

namespace habitat::gemm {

// The GEMM each trace operation is (or sits in), as the tile model sees it; nothing for other operations.
[[nodiscard]] inline std::vector<std::optional<Shape>> op_shapes(const Trace& t) {
  std::vector<std::optional<Shape>> out(t.ops.size());
  const auto qs = ops::op_queries(t);
  for (std::size_t i = 0; i < qs.size(); ++i) {
    const auto& q = qs[i];
    if (!q || (q->op != ops::OpKind::linear && q->op != ops::OpKind::bmm)) continue;
    // The layout from the weight's strides where recorded; without them, mm/addmm are taken as nn.Linear's x @ W^T
    // and bmm as plain.
    Shape s{q->dims[0], q->dims[1], q->dims[2], q->dims[3], q->op == ops::OpKind::linear, q->b_transposed.value_or(q->op == ops::OpKind::linear)};
    s.elem_bytes = ops::dtype_bytes(q->dtype);
    out[i] = s;
  }
  return out;
}

// Whether some GEMM of t has no recorded layout (no "Input Strides": older PyTorch, or another exporter), so
// op_shapes assumed one; the output names the assumption.
[[nodiscard]] inline bool layout_assumed(const Trace& t) {
  for (const auto& q : ops::op_queries(t))
    if (q && (q->op == ops::OpKind::linear || q->op == ops::OpKind::bmm) && !q->b_transposed) return true;
  return false;
}

// Which GEMM kernels the tile model takes: every one, or only those whose launch cannot run on the
// destination (the library would pick another kernel there: predict the operation, not the launch).
enum class TileUse { every_gemm, unfit_launches };

// How much slower g runs s than the geometric mean of s in both layouts: the square root of the ratio of the
// per-operation model's times (gemm_per_op.hpp), each layout by the best model that covers it (the residual of
// g's architecture, or the calibrated tile model where the residual has no such shapes: nn.Linear-shaped `nn`
// GEMMs, whose only measurements are bmm's). Where the two layouts come from different models the quotient also
// carries the residual's correction of the covered one; that is measured, not assumed away (README, "The
// operands' layout": taking the calibrated model for both whenever one is uncovered measured worse). Both sides
// are on the tile model the residuals correct (residual_base): Hopper's split-K share, fitted on Hopper's timings
// alone, stays out of the factor that pairs Hopper's layouts with an older GPU's. With it in, the H100's `nn`
// GEMMs it splits slowed, the factor carried that onto the P100's `nn` model, already the weaker side, and NeuSight's
// P100 forward passes moved past the 8% bar (README, "Hopper's split-K kernels").
[[nodiscard]] inline double layout_preference(const Shape& s, const Device& g) {
  Shape other = s;
  other.transposed_b = !s.transposed_b;
  return std::sqrt(per_op_time_us(s, g, 0, residual_base).us / per_op_time_us(other, g, 0, residual_base).us);
}

template <class Base>
  requires KernelPredictor<Base>
class TilePredictor {
 public:
  // `shapes` is op_shapes(t): the same for every destination, so computed once where there are several.
  TilePredictor(Base base, std::vector<std::optional<Shape>> shapes, TileUse use = TileUse::unfit_launches)
      : base_(std::move(base)), use_(use), shape_(std::move(shapes)), cache_(shape_.size()) {}
  TilePredictor(Base base, const Trace& t, TileUse use = TileUse::unfit_launches) : TilePredictor(std::move(base), op_shapes(t), use) {}

  [[nodiscard]] KernelPrediction predict(const Kernel& k, const KernelWork& w, const Device& origin, const Device& dest) const {
    KernelPrediction base = base_.predict(k, w, origin, dest);
    if (k.kind != GpuWorkKind::kernel || k.op < 0 || static_cast<std::size_t>(k.op) >= shape_.size() || !shape_[static_cast<std::size_t>(k.op)] ||
        !detail::is_math_kernel(k.name))
      return base;
    // Kernels of one GEMM share its factors: computed once per operation, precision and GPU pair.
    auto& c = cache_[static_cast<std::size_t>(k.op)];
    if (!c.valid || c.precision != w.precision || c.tf32 != w.tf32_allowed || c.origin != &origin || c.dest != &dest) {
      Shape o = *shape_[static_cast<std::size_t>(k.op)];
      o.precision = w.precision;  // TF32 or BF16 where the kernel ran on tensor cores
      Shape d = o;
      d.precision = datapath(w, origin, dest);
      const double to = per_op_time_us(o, origin, 0).us, td = per_op_time_us(d, dest, 0).us;
      c = {true, w.precision, w.tf32_allowed, &origin, &dest, to > 0 ? td / to : std::nan(""),
           layout_preference(d, dest) / layout_preference(o, origin)};
    }
    const bool unfit = base.method == Method::roofline_operation || base.method == Method::wave_scaling_sm_ratio;
    if ((use_ == TileUse::every_gemm || unfit) && std::isfinite(c.ratio)) return {k.duration_us * c.ratio, Method::tile_model, 0};
    if ((base.method == Method::roofline_scaling || base.method == Method::wave_scaling) && std::isfinite(c.layout) && c.layout > 0)
      base.duration_us *= c.layout;
    return base;
  }

 private:
  Base base_;
  TileUse use_;
  std::vector<std::optional<Shape>> shape_;  // per trace operation: the GEMM it is or sits in
  struct Cached {
    bool valid = false;
    Precision precision = Precision::fp32;
    bool tf32 = false;  // the datapath depends on it
    const Device *origin = nullptr, *dest = nullptr;
    double ratio = 0;   // tile(dest) / tile(origin)
    double layout = 1;  // the layout factor for physics scaling (above)
  };
  mutable std::vector<Cached> cache_;  // per trace operation (so one predictor serves one thread)
};

}  // namespace habitat::gemm
