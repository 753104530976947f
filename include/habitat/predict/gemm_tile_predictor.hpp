#pragma once
// Kernel-varying GEMMs (mm, addmm, bmm, baddbmm, linear) by the tile model's ratio: their math kernels take
// origin time x tile(dest) / tile(origin), so the model's systematic error cancels and the kernel the
// destination's library would pick is predicted from its tile waves. By default only GEMM launches that
// cannot run on the destination go to it (measured across generations, roofline scaling carries a GEMM
// that still fits better: README, "Across GPU generations"); TileUse::every_gemm sends all of them. Every
// other kernel goes to the base predictor (roofline scaling, wave scaling, or a hybrid with learned models).
#include <cmath>
#include <optional>
#include <vector>

#include "habitat/concepts.hpp"
#include "habitat/ops/trace_ops.hpp"
#include "habitat/predict/gemm_tile.hpp"
#include "habitat/predict/gemm_tile_fit.hpp"
#include "habitat/predict/kernel_work.hpp"
#include "habitat/predict/wave_scaling.hpp"

namespace habitat::gemm {

// The fitted library efficiency of a GPU for FP32 GEMMs of a layout; 1 for GPUs never measured and for
// tensor-core GEMMs (calibrated on FP32 timings only).
[[nodiscard]] inline double library_efficiency(const Device& g, const Shape& s) {
  if (s.precision != Precision::fp32) return 1.0;
  for (const auto& c : calibrations)
    if (c.gpu == g.name) return s.transposed_b ? c.tn : c.nn;
  return 1.0;
}

// The GEMM each trace operation is (or sits in), as the tile model sees it; nothing for other operations.
[[nodiscard]] inline std::vector<std::optional<Shape>> op_shapes(const Trace& t) {
  std::vector<std::optional<Shape>> out(t.ops.size());
  const auto qs = ops::op_queries(t);
  for (std::size_t i = 0; i < qs.size(); ++i) {
    const auto& q = qs[i];
    if (!q || (q->op != ops::OpKind::linear && q->op != ops::OpKind::bmm)) continue;
    Shape s{q->dims[0], q->dims[1], q->dims[2], q->dims[3], q->op == ops::OpKind::linear, q->op == ops::OpKind::linear};
    s.elem_bytes = ops::dtype_bytes(q->dtype);
    out[i] = s;
  }
  return out;
}

// Which GEMM kernels the tile model takes: every one, or only those whose launch cannot run on the
// destination (the library would pick another kernel there: predict the operation, not the launch).
enum class TileUse { every_gemm, unfit_launches };

template <class Base>
  requires KernelPredictor<Base>
class TilePredictor {
 public:
  // `shapes` is op_shapes(t): the same for every destination, so computed once where there are several.
  TilePredictor(Base base, std::vector<std::optional<Shape>> shapes, TileUse use = TileUse::unfit_launches, Params params = fitted)
      : base_(std::move(base)), use_(use), params_(params), shape_(std::move(shapes)), cache_(shape_.size()) {}
  TilePredictor(Base base, const Trace& t, TileUse use = TileUse::unfit_launches, Params params = fitted)
      : TilePredictor(std::move(base), op_shapes(t), use, params) {}

  [[nodiscard]] KernelPrediction predict(const Kernel& k, const KernelWork& w, const Device& origin, const Device& dest) const {
    const KernelPrediction base = base_.predict(k, w, origin, dest);
    const bool unfit = base.method == Method::roofline_operation || base.method == Method::wave_scaling_sm_ratio;
    if ((use_ == TileUse::every_gemm || unfit) && k.kind == GpuWorkKind::kernel && k.op >= 0 &&
        static_cast<std::size_t>(k.op) < shape_.size() && shape_[static_cast<std::size_t>(k.op)] &&
        detail::is_math_kernel(k.name)) {
      // Kernels of one GEMM share its ratio: computed once per operation, precision and GPU pair.
      auto& c = cache_[static_cast<std::size_t>(k.op)];
      if (!c.valid || c.precision != w.precision || c.origin != &origin || c.dest != &dest) {
        Shape s = *shape_[static_cast<std::size_t>(k.op)];
        s.precision = w.precision;  // TF32 or BF16 where the kernel ran on tensor cores
        const double o = estimate(s, origin, params_, library_efficiency(origin, s)).us;
        s.precision = datapath(w, origin, dest);
        const double d = estimate(s, dest, params_, library_efficiency(dest, s)).us;
        c = {true, w.precision, &origin, &dest, o > 0 ? d / o : std::nan("")};
      }
      if (std::isfinite(c.ratio)) return {k.duration_us * c.ratio, Method::tile_model, 0};
    }
    return base;
  }

 private:
  Base base_;
  TileUse use_;
  Params params_;
  std::vector<std::optional<Shape>> shape_;  // per trace operation: the GEMM it is or sits in
  struct Cached {
    bool valid = false;
    Precision precision = Precision::fp32;
    const Device *origin = nullptr, *dest = nullptr;
    double ratio = 0;
  };
  mutable std::vector<Cached> cache_;  // per trace operation (so one predictor serves one thread)
};

}  // namespace habitat::gemm
