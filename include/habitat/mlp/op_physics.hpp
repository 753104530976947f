#pragma once
// The physics answer for one operation configuration, used where a learned model steps aside: the op's
// work at what the GPU sustains (datapath x SMs x sustained clock; measured bandwidth), divided by the
// share of that roofline such ops reach, plus the fixed cost of one timed call.
//
// Shares are medians over NeuSight's public FP32 timings on P4, P100, T4, V100 and A100 (sitar-lab/NeuSight,
// MIT; configurations whose sustained-roofline time exceeds 0.2 ms), derived once; the rows are not
// shipped. `habitat-gemm-study --part ops` re-derives them leaving one GPU out, with habitat's H100/H200
// measurements added. The call overhead is the one the GEMM tile model fitted to the same protocol. All
// are shared by every GPU, so the model has no per-GPU parameter that could be missing on an unseen one.
#include <algorithm>

#include "habitat/device/device.hpp"
#include "habitat/mlp/features.hpp"
#include "habitat/predict/gemm_tile_fit.hpp"
#include "habitat/predict/roofline.hpp"

namespace habitat::mlp {

struct OpPhysicsShares {
  double gemm = 0.65, conv = 0.85, norm = 0.64, softmax = 0.79, elementwise = 0.97;
  double call_ms = gemm::fitted_call_us / 1e3;  // one timed call's overhead (launch and events), NeuSight's protocol
  // The shortest a kernel runs: the median `add` kernel of configurations under 20k elements on habitat's
  // H100 (data/opdata/h100_neusight, CUPTI kernel durations: 1.25 us).
  double kernel_floor_ms = 0.00125;
};
inline constexpr OpPhysicsShares op_physics_shares{};

// FP32 stays on the SIMT lanes, convolutions included: NeuSight's protocol turns TF32 off (their A100
// convolutions ran FP32 kernels), and these shares were derived under it. (The MLP features assume cuDNN's
// TF32 default instead; the roofline bound allows either.)
[[nodiscard]] inline Precision op_precision(const OpQuery& q) {
  return q.dtype == ops::DataType::bf16 && gemm_like(q.op) ? Precision::bf16 : Precision::fp32;
}

[[nodiscard]] inline double roofline_share(ops::OpKind k) {
  using ops::OpKind;
  switch (k) {
    case OpKind::linear:
    case OpKind::bmm:
    case OpKind::lstm:
    case OpKind::sdpa: return op_physics_shares.gemm;
    case OpKind::conv2d:
    case OpKind::conv_transpose2d: return op_physics_shares.conv;
    case OpKind::batch_norm:
    case OpKind::layer_norm: return op_physics_shares.norm;
    case OpKind::softmax: return op_physics_shares.softmax;
    case OpKind::elementwise: return op_physics_shares.elementwise;
  }
  return op_physics_shares.gemm;
}

// The op's work at what g sustains (ms): the numerator of every physics op time.
[[nodiscard]] inline double sustained_roofline_ms(const OpQuery& q, const Device& g) {
  const auto w = ops::op_work(q.op, q.dims, q.dtype, q.pass);
  return roofline_sustained(w.flops, w.bytes, op_precision(q), g).bound_us() / 1e3;
}

// Milliseconds of the op's kernels on g at a given share of the sustained roofline; never below its bound.
[[nodiscard]] inline double physics_kernel_ms(const OpQuery& q, const Device& g, double share) {
  const auto w = ops::op_work(q.op, q.dims, q.dtype, q.pass);
  const double bound = roofline_bound(w.flops, w.bytes, fastest_datapath(op_precision(q), g), g).bound_us() / 1e3;
  return std::max(bound, op_physics_shares.kernel_floor_ms + sustained_roofline_ms(q, g) / share);
}

// Milliseconds of one timed call of the operation on g (kernels plus the call's overhead).
[[nodiscard]] inline double physics_op_ms(const OpQuery& q, const Device& g) {
  return op_physics_shares.call_ms + physics_kernel_ms(q, g, roofline_share(q.op));
}

}  // namespace habitat::mlp
