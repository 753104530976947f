#pragma once
// The operations habitat learns (kernel-varying ones, paper section 3.4 plus today's additions), the
// names of their dimensions, and the work each does. Shared by the collector, the trainer and the
// predictor, so a dimension means the same thing everywhere. Free of any SDK or JSON dependency.
#include <array>
#include <cmath>
#include <optional>
#include <string_view>

#include "habitat/ops/dtype.hpp"
#include "habitat/ops/work.hpp"

namespace habitat::ops {

enum class OpKind { linear, bmm, conv2d, conv_transpose2d, batch_norm, layer_norm, lstm, sdpa, softmax, elementwise };
enum class Pass { forward, backward };

inline constexpr int max_dims = 8;
using Dims = std::array<double, max_dims>;

struct OpSchema {
  OpKind kind;
  std::string_view name;
  int ndims;
  std::array<std::string_view, max_dims> dims;
  int csv_dims = ndims;    // dims read from CSV columns; the rest follow from the operation's name
  bool collected = true;   // measured by habitat-collect (else learned from public data only)
};

// Dimension names follow the public NeuSight CSVs where an op appears there (B,M,N,K; conv's
// Kernel_Szie spelling is accepted as an alias by the CSV reader).
inline constexpr std::array<OpSchema, 10> op_schemas{{
    {OpKind::linear, "linear", 4, {"B", "M", "N", "K"}},  // x[B*M,K] @ W[N,K]^T + b
    {OpKind::bmm, "bmm", 4, {"B", "M", "N", "K"}},        // [B,M,K] @ [B,K,N]
    {OpKind::conv2d, "conv2d", 7, {"B", "Input_Channel", "Output_Channel", "Kernel_Size", "Input_Size", "Stride", "Padding"}},
    {OpKind::conv_transpose2d, "conv_transpose2d", 7,
     {"B", "Input_Channel", "Output_Channel", "Kernel_Size", "Input_Size", "Stride", "Padding"}},
    {OpKind::batch_norm, "batch_norm", 3, {"B", "C", "Input_Size"}},
    {OpKind::layer_norm, "layer_norm", 2, {"B", "H"}},  // B rows normalized over H
    {OpKind::lstm, "lstm", 6, {"B", "T", "I", "H", "L", "Bidirectional"}},
    {OpKind::sdpa, "sdpa", 5, {"B", "Heads", "S", "D", "Causal"}},
    // Memory-bound ops learned from the public NeuSight timings only (forward, FP32); with a model of
    // their own, predict-ops covers every op of those CSVs.
    {OpKind::softmax, "softmax", 2, {"B", "H"}, 2, false},
    {OpKind::elementwise, "elementwise", 4, {"B", "H", "Operands", "Operator"}, 2, false},
}};

// Elementwise operators as NeuSight names them: tensor operands and an operator code (a model input).
// "u" variants take one tensor (the other operand is a scalar or the tensor itself).
struct ElementwiseOp {
  std::string_view name;
  double operands, code;
  double flops = 1;  // per element: a transcendental counts 8
};
inline constexpr std::array<ElementwiseOp, 11> elementwise_ops{{{"add", 2, 1}, {"addu", 1, 1}, {"mul", 2, 2}, {"mulu", 1, 2},
                                                                {"div", 2, 3}, {"divu", 1, 3}, {"pow", 2, 4, 8}, {"powu", 1, 4, 8},
                                                                {"relu", 1, 5}, {"tanh", 1, 6, 8}, {"gelu", 1, 7, 8}}};

// FLOPs per element of the elementwise operator with this code (1 for a code the table does not know).
[[nodiscard]] constexpr double elementwise_flops(double code) {
  for (const auto& e : elementwise_ops)
    if (e.code == code) return e.flops;
  return 1;
}

[[nodiscard]] constexpr const OpSchema& schema(OpKind k) { return op_schemas[static_cast<int>(k)]; }

[[nodiscard]] inline std::optional<OpKind> op_from_name(std::string_view name) {
  for (const auto& s : op_schemas)
    if (s.name == name) return s.kind;
  // Spellings of the NeuSight CSVs.
  if (name == "conv") return OpKind::conv2d;
  if (name == "ln") return OpKind::layer_norm;
  for (const auto& e : elementwise_ops)
    if (e.name == name) return OpKind::elementwise;
  return std::nullopt;
}

// Dims beyond the CSV columns, from the operation's name (elementwise: operands and operator).
inline void fill_derived_dims(OpKind k, std::string_view name, Dims& d) {
  if (k != OpKind::elementwise) return;
  for (const auto& e : elementwise_ops)
    if (e.name == name) d[2] = e.operands, d[3] = e.code;
}

[[nodiscard]] constexpr std::string_view pass_name(Pass p) { return p == Pass::forward ? "fwd" : "bwd"; }
[[nodiscard]] constexpr std::string_view dtype_name(DataType t) { return t == DataType::fp32 ? "fp32" : "bf16"; }

// The work of one pass. Backward is counted as twice the forward's FLOPs (gradients for inputs and
// weights) and reads of the saved activations; exactness matters less than scaling with the dims.
[[nodiscard]] inline Work op_work(OpKind k, const Dims& d, DataType t, Pass p) {
  const double e = dtype_bytes(t);
  Work w;
  switch (k) {
    case OpKind::linear:
    case OpKind::bmm:
      w = gemm_work(d[0], d[1], d[2], d[3], e, k == OpKind::linear);
      break;
    case OpKind::conv2d:
    case OpKind::conv_transpose2d: {
      const double b = d[0], ci = d[1], co = d[2], ks = d[3], in = d[4], s = d[5], pad = d[6];
      const double out = k == OpKind::conv2d ? conv_out_size(in, ks, s, pad) : conv_transpose_out_size(in, ks, s, pad);
      const double o = std::max(out, 1.0);
      w = conv_work(b, ci, co, ci * co * ks * ks, in * in, o * o, k == OpKind::conv_transpose2d, e);
      break;
    }
    case OpKind::batch_norm: {
      const double n = d[0] * d[1] * d[2] * d[2];
      w.flops = 8 * n;
      w.bytes = e * 2 * n;
      break;
    }
    case OpKind::layer_norm: {
      const double n = d[0] * d[1];
      w.flops = 8 * n;
      w.bytes = e * 2 * n;
      break;
    }
    case OpKind::lstm: {
      const double b = d[0], tt = d[1], in = d[2], h = d[3], l = d[4], dirs = d[5] > 0 ? 2 : 1;
      // Per layer and direction: four gates over [input, hidden]; later layers read dirs*h features.
      const double gates = 2 * 4 * h * (in + h) + 2 * 4 * h * (dirs * h + h) * (l - 1);
      w.flops = b * tt * dirs * gates;
      w.bytes = e * (tt * b * in + dirs * l * 4 * h * (in + 2 * h) + tt * b * dirs * h * (2 * l + 8 * l));
      break;
    }
    case OpKind::sdpa: {
      const double b = d[0], heads = d[1], s = d[2], hd = d[3], causal = d[4] > 0 ? 0.5 : 1.0;
      w.flops = 4 * b * heads * s * s * hd * causal;
      w.bytes = e * 4 * b * heads * s * hd;
      break;
    }
    case OpKind::softmax: {
      const double n = d[0] * d[1];
      w.flops = 5 * n;
      w.bytes = e * 2 * n;
      break;
    }
    case OpKind::elementwise: {
      const double n = d[0] * d[1];
      w.flops = n * elementwise_flops(d[3]);
      w.bytes = e * n * (std::max(d[2], 1.0) + 1);
      break;
    }
  }
  if (p == Pass::backward) {
    w.flops *= 2;
    w.bytes *= 2;
  }
  return w;
}

}  // namespace habitat::ops
