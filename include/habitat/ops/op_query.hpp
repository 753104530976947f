#pragma once
// One configuration of an operation the models know (its kind, pass, precision and dimensions, as the
// schema of ops/op_schema.hpp names them): what a trace operation is read as (ops/trace_ops.hpp), what a
// learned model or the physics answer is asked about (mlp/).
#include <optional>

#include "habitat/ops/op_schema.hpp"

namespace habitat::ops {

struct OpQuery {
  OpKind op;
  Pass pass = Pass::forward;
  DataType dtype = DataType::fp32;
  Dims dims{};
  // GEMMs read from a trace: whether the second operand is read transposed (x @ W^T, BLAS's "tn": nn.Linear's
  // weight), where the profiler recorded its strides; nothing where it did not.
  std::optional<bool> b_transposed{};
};

// Ops whose main kernels are matrix math (tensor cores in BF16), as opposed to the memory-bound ones.
[[nodiscard]] constexpr bool gemm_like(OpKind k) {
  return k != OpKind::batch_norm && k != OpKind::layer_norm && k != OpKind::softmax && k != OpKind::elementwise;
}

}  // namespace habitat::ops
