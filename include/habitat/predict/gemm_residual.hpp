#pragma once
// What a GPU's cuBLAS does that the shared tile model does not, per architecture. cuBLAS chooses its kernels by
// SM version and shape, so every GPU of one compute capability runs the same kernel list: the tile model's
// residual on the measured GPUs of an architecture is a function of the shape, and carries to the other GPUs of it
// (sm_90: H100 SXM/PCIe, H200, H800, H20, GH200), whose own SMs, clocks and bandwidth stay in the tile model. It also
// reads the tile model's time, which carries those: on a board of other SMs and clocks than the fitted ones it sees
// shapes and times together as it never did (assumed to carry; unmeasured). Per architecture, the mean of
// residual_members small networks trained from different seeds (fitted by scripts/fit_gemm_residual.py, constants in
// gemm_residual_fit.hpp) maps the shape and that time to log(measured / tile model):
// one network's seed alone spread NeuSight's forward passes over up to 0.9 point. It was fitted on operations timed
// one at a time (NeuSight's timed calls, habitat's kernel sums): it serves per-operation predictions (predict-ops)
// and, in a trace, the GEMMs the tile ratio takes and the layout preference of those physics scales
// (gemm_tile_predictor.hpp); it steps aside outside the shapes it saw.
#include <algorithm>
#include <array>
#include <cmath>
#include <cstddef>
#include <string_view>

namespace habitat::gemm {

inline constexpr std::size_t residual_inputs = 7, residual_hidden = 32, residual_members = 5;

// One member network: inputs (standardized) -> ReLU -> ReLU -> log factor.
struct ResidualNet {
  std::array<double, residual_hidden * residual_inputs> w1;  // row-major [hidden][inputs]
  std::array<double, residual_hidden> b1;
  std::array<double, residual_hidden * residual_hidden> w2;
  std::array<double, residual_hidden> b2;
  std::array<double, residual_hidden> w3;
  double b3;
};

struct ArchResidual {
  int cc_major, cc_minor;
  // Fitted on timed calls (the factor scales kernel + call) rather than kernel sums (the kernel). Timed calls carry
  // the measuring rig (its call floor, its cooling: the P4's long calls), so such a residual serves only the boards
  // it was fitted on; a residual of kernel sums serves every GPU of the architecture.
  bool whole_call;
  std::array<std::string_view, 2> boards;  // the catalog names of the GPUs fitted on ("" for none)
  // The fitted range of each input and of log2 FLOPs, per layout ([0]: nn, [1]: tn); outside it, no residual.
  std::array<std::array<double, residual_inputs + 1>, 2> lo, hi;
  std::array<double, residual_inputs> mu, sd;  // standardization of the inputs
  std::array<ResidualNet, residual_members> nets;
};

// The network's inputs for a GEMM, and log2 of its FLOPs last (range only; scripts/fit_gemm_residual.py's features()).
// A GEMM with one weight for every batch (linear, mm) is one GEMM of batch x m rows, as the fitted linear rows were.
// `us`: the time of the tile model the residual corrects, as fitted (a timed call's overhead included where the
// architecture's rows were timed calls). Motivated by a capped card's clock falling, and fixed costs weighing less, the
// longer a call runs; measured only as a better fit (README, "The tile model's time as a seventh input").
[[nodiscard]] inline std::array<double, residual_inputs + 1> residual_inputs_of(double batch, double m, double n, double k, bool shared_weight,
                                                                               bool transposed_b, double waves, double us) {
  if (shared_weight) m *= batch, batch = 1;
  return {std::log2(m),
          std::log2(n),
          std::log2(k),
          std::log2(batch),
          transposed_b ? 1.0 : 0.0,
          std::log2(std::max(waves, 1.0 / 64)),
          std::log2(std::max(us, 1e-3)),
          std::log2(2 * batch * m * n * k)};
}

// The tile model's time among the inputs, not range-checked, as measured: GEMMs of a few microseconds whose shapes the
// residual saw can come out shorter on the tile model than every fitted row, and checked, 25 of the fresh H200 set's
// bmm shapes fell back to the tile model with the library efficiency, taking its bmm from 23.6% to 26.8% (README).
inline constexpr std::size_t residual_time_input = 6;

// Whether the residual saw GEMMs like this one: every input but the time within the range fitted on its layout.
[[nodiscard]] inline bool residual_covers(const ArchResidual& a, const std::array<double, residual_inputs + 1>& raw) {
  const std::size_t layout = raw[4] > 0.5 ? 1 : 0;  // the layout input
  for (std::size_t i = 0; i < raw.size(); ++i)
    if (i != residual_time_input && !(raw[i] >= a.lo[layout][i] && raw[i] <= a.hi[layout][i])) return false;
  return true;
}

[[nodiscard]] inline double residual_net_log(const ResidualNet& n, const std::array<double, residual_inputs>& x) {
  std::array<double, residual_hidden> h1{}, h2{};
  for (std::size_t j = 0; j < residual_hidden; ++j) {
    double s = n.b1[j];
    for (std::size_t i = 0; i < residual_inputs; ++i) s += n.w1[j * residual_inputs + i] * x[i];
    h1[j] = std::max(s, 0.0);
  }
  for (std::size_t j = 0; j < residual_hidden; ++j) {
    double s = n.b2[j];
    for (std::size_t i = 0; i < residual_hidden; ++i) s += n.w2[j * residual_hidden + i] * h1[i];
    h2[j] = std::max(s, 0.0);
  }
  double out = n.b3;
  for (std::size_t j = 0; j < residual_hidden; ++j) out += n.w3[j] * h2[j];
  return out;
}

// The members' inputs: the raw inputs (log2 FLOPs, range only, dropped) standardized as fitted.
[[nodiscard]] inline std::array<double, residual_inputs> residual_standardized(const ArchResidual& a,
                                                                             const std::array<double, residual_inputs + 1>& raw) {
  std::array<double, residual_inputs> x{};
  for (std::size_t i = 0; i < residual_inputs; ++i) x[i] = (raw[i] - a.mu[i]) / a.sd[i];
  return x;
}

// log(measured / tile model) for those inputs (unclamped): the members' mean.
[[nodiscard]] inline double residual_log(const ArchResidual& a, const std::array<double, residual_inputs + 1>& raw) {
  const auto x = residual_standardized(a, raw);
  double sum = 0;
  for (const auto& n : a.nets) sum += residual_net_log(n, x);
  return sum / static_cast<double>(a.nets.size());
}

// The held-out fifth of the configurations (never fitted on; the same rule as the script's held_out()).
[[nodiscard]] inline bool residual_held_out(double batch, double m, double n, double k) {
  const auto i = [](double v) { return static_cast<long long>(v); };
  return ((i(m) * 73 + i(n) * 151 + i(k) * 269 + i(batch) * 397) % 1009) % 5 == 0;
}

}  // namespace habitat::gemm
