#pragma once
// Reading a recorded operation's arguments: tensor shapes and the values the profiler writes as text
// ("[2, 2]", "True"), by position. The positions come from ops/aten_signatures.hpp; what an argument means
// is for the readers above (the work estimate in predict/op_cost.hpp, the op queries in ops/trace_ops.hpp).
#include <cstdint>
#include <numeric>
#include <optional>
#include <string>
#include <vector>

#include "habitat/ops/aten_signatures.hpp"
#include "habitat/ops/dtype.hpp"
#include "habitat/trace/trace.hpp"

namespace habitat::cost {

using ops::dtype_bytes;  // bytes per element of a profiler dtype name (ops/dtype.hpp)

[[nodiscard]] inline double numel(const std::vector<std::int64_t>& s) {
  return s.empty() ? 0.0 : std::accumulate(s.begin(), s.end(), 1.0, [](double a, std::int64_t b) { return a * double(b); });
}

[[nodiscard]] inline double bytes_of(const TensorArg& t) { return numel(t.shape) * dtype_bytes(t.dtype); }

[[nodiscard]] inline const TensorArg* arg(const Operation& op, std::size_t i) {
  return i < op.inputs.size() && !op.inputs[i].shape.empty() ? &op.inputs[i] : nullptr;
}

// "[2, 2]" -> {2, 2}; "3" -> {3}; "" -> {}
[[nodiscard]] inline std::vector<std::int64_t> ints(const Operation& op, std::size_t i) {
  std::vector<std::int64_t> out;
  if (i >= op.inputs.size()) return out;
  const std::string& s = op.inputs[i].value;
  std::int64_t cur = 0;
  bool in = false, neg = false;
  for (char c : s) {
    if (c >= '0' && c <= '9') {
      cur = cur * 10 + (c - '0');
      in = true;
    } else if (c == '-') {
      neg = true;
    } else {
      if (in) out.push_back(neg ? -cur : cur);
      cur = 0;
      in = neg = false;
    }
  }
  if (in) out.push_back(neg ? -cur : cur);
  return out;
}

[[nodiscard]] inline bool flag(const Operation& op, std::size_t i) {
  return i < op.inputs.size() && (op.inputs[i].value == "True" || op.inputs[i].value == "1");
}

[[nodiscard]] inline std::int64_t at_or(const std::vector<std::int64_t>& v, std::size_t i, std::int64_t dflt) {
  if (v.empty()) return dflt;
  return i < v.size() ? v[i] : v.back();
}

[[nodiscard]] inline bool conv_transposed(const Operation& op, const ops::aten::ConvArgs& ca) {
  return ca.always_transposed || (ca.transposed && flag(op, *ca.transposed));
}

[[nodiscard]] inline std::vector<std::int64_t> ints_or_none(const Operation& op, std::optional<std::size_t> at) {
  return at ? ints(op, *at) : std::vector<std::int64_t>{};
}

// Whether an attention op masks causally: its is_causal flag, or a non-zero custom_mask_type.
[[nodiscard]] inline bool attention_causal(const Operation& op, const ops::aten::AttentionArgs& aa) {
  if (aa.is_causal) return flag(op, *aa.is_causal);
  if (aa.custom_mask_type) return at_or(ints(op, *aa.custom_mask_type), 0, 0) != 0;
  return false;
}

}  // namespace habitat::cost
