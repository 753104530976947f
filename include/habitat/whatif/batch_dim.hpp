#pragma once
// Which dimension of a recorded tensor is the batch. The rule is per tensor argument, with the model's
// parameters told apart by their shapes (the gradients AccumulateGrad receives): activations keep the
// batch in the dimension equal to it (NCHW, [B,S,H], [S,B,H] after a transpose), or fold it into a leading
// dimension with the sequence, heads or bag size ([B*S,H] before a GEMM, [B*heads,S,D] in attention,
// [B*bag] indices of an embedding bag).
#include <cstdint>
#include <optional>
#include <set>
#include <vector>

#include "habitat/predict/op_cost.hpp"
#include "habitat/trace/trace.hpp"

namespace habitat::whatif {

using Shape = std::vector<std::int64_t>;
using cost::bytes_of;  // a tensor argument's bytes (predict/op_cost.hpp)
using cost::numel;

// Shapes of the model's parameters: a tensor of one of them is a parameter, its gradient or an optimizer
// state, and carries no batch.
[[nodiscard]] inline std::set<Shape> parameter_shapes(const Trace& t) {
  std::set<Shape> out;
  for (const auto& op : t.ops)
    if (op.name == "torch::autograd::AccumulateGrad" && !op.inputs.empty() && !op.inputs.front().shape.empty())
      out.insert(op.inputs.front().shape);
  return out;
}

// Bytes of the model's parameters (as many as of their gradients).
[[nodiscard]] inline double parameter_bytes(const Trace& t) {
  double b = 0;
  for (const auto& op : t.ops)
    if (op.name == "torch::autograd::AccumulateGrad" && !op.inputs.empty()) b += bytes_of(op.inputs.front());
  return b;
}

// The batch dimension of a tensor of shape `s` in a step of `batch` samples: the first dimension equal to
// the batch; else the first that is a multiple of it, at least twice it (the batch flattened with other
// dimensions); else none (a parameter, a mask or positional table, a scalar). Small batches make the second
// rule loose (with a batch of 2 every even dimension qualifies): a shape equal to a parameter's never counts.
[[nodiscard]] inline std::optional<std::size_t> batch_dim(const Shape& s, std::int64_t batch, const std::set<Shape>& params) {
  if (s.empty() || batch <= 0 || params.count(s)) return std::nullopt;
  for (std::size_t d = 0; d < s.size(); ++d)
    if (s[d] == batch) return d;
  for (std::size_t d = 0; d < s.size(); ++d)
    if (s[d] >= 2 * batch && s[d] % batch == 0) return d;
  return std::nullopt;
}

// The shape at a batch of `to` samples instead of `from`.
[[nodiscard]] inline Shape rescaled(Shape s, std::int64_t from, std::int64_t to, const std::set<Shape>& params) {
  if (const auto d = batch_dim(s, from, params)) s[*d] = s[*d] / from * to;
  return s;
}

}  // namespace habitat::whatif
