#pragma once
// Peak GPU memory of a training step, estimated from the trace's tensors (Kineto traces recorded without
// profile_memory carry no allocations): the parameters, their gradients and the optimizer's states, plus
// the activations the forward pass keeps for the backward pass, taken as the batch-carrying tensors the
// forward operations that launched GPU work read. Checked against torch.cuda.max_memory_allocated() of the
// sweeps in fixtures/whatif (tests/whatif/whatif_accuracy_test.cpp); what it misses (the caching allocator's
// fragmentation, cuDNN/cuBLAS workspaces, the CUDA context) is why a step is said not to fit above 90% of
// the destination's memory.
#include <cstdint>
#include <set>

#include "habitat/ops/dtype.hpp"
#include "habitat/whatif/batch_dim.hpp"

namespace habitat::whatif {

// Usable share of a GPU's memory before a step is said not to fit.
inline constexpr double usable_memory_share = 0.9;
inline constexpr double bytes_per_gib = 1073741824.0;

struct MemoryEstimate {
  double parameter_bytes = 0;   // parameters + gradients + optimizer states
  double activation_bytes = 0;  // kept for the backward pass
  [[nodiscard]] double total_bytes() const { return parameter_bytes + activation_bytes; }
  [[nodiscard]] bool fits(const Device& d) const { return total_bytes() <= usable_memory_share * d.memory_gib * bytes_per_gib; }
};

[[nodiscard]] inline MemoryEstimate estimate_memory(const Trace& t, std::int64_t batch) {
  MemoryEstimate m;
  const auto params = parameter_shapes(t);
  // Optimizer states: the tensor lists of its largest foreach update, less the parameters and gradients.
  int lists = 0;
  for (const auto& op : t.ops)
    if (op.name.starts_with("aten::_foreach_")) {
      int n = 0;
      for (const auto& a : op.inputs) n += a.dtype == "TensorList" ? 1 : 0;
      lists = std::max(lists, n);
    }
  const int states = std::max(1, lists - 1);  // SGD momentum: 1; Adam: exp_avg and exp_avg_sq
  m.parameter_bytes = parameter_bytes(t) * (2 + states);
  std::vector<char> has_kernel(t.ops.size(), 0);
  for (const auto& k : t.kernels)
    for (int o = k.op; o >= 0; o = t.ops[static_cast<std::size_t>(o)].parent) has_kernel[static_cast<std::size_t>(o)] = 1;
  for (std::size_t i = 0; i < t.ops.size(); ++i) {
    const Operation& op = t.ops[i];
    if (op.backward || op.parent >= 0 || !has_kernel[i]) continue;  // top-level forward operations with GPU work
    for (const auto& a : op.inputs)
      if (batch_dim(a.shape, batch, params)) m.activation_bytes += bytes_of(a);
  }
  return m;
}

}  // namespace habitat::whatif
