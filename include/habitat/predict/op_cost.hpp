#pragma once
// Counter-free work estimate: FLOPs and DRAM bytes of a framework operation from its recorded input
// shapes and dtypes. Outputs are not recorded by Kineto, so each rule derives them from the inputs.
// These are first-order counts (each tensor read or written once; no cache reuse, no recomputation):
// good enough to place a kernel left or right of a ridge point, not a substitute for counters.
#include <algorithm>
#include <cmath>
#include <array>
#include <cstdint>
#include <numeric>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "habitat/trace/trace.hpp"

namespace habitat {

struct OpCost {
  double flops = 0;
  double bytes = 0;
  bool math = false;  // dominated by tensor-core/FMA math (GEMM, convolution, attention, RNN)
};

namespace cost {

[[nodiscard]] inline double dtype_bytes(std::string_view t) {
  if (t == "double" || t == "long int" || t == "long" || t == "c10::complex<float>") return 8;
  if (t == "c10::BFloat16" || t == "c10::Half" || t == "short int") return 2;
  if (t == "bool" || t == "unsigned char" || t == "signed char" || t.find("Float8") != std::string_view::npos) return 1;
  return 4;
}

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

[[nodiscard]] inline double sum_input_bytes(const Operation& op) {
  double b = 0;
  for (const auto& t : op.inputs) b += bytes_of(t);
  return b;
}

[[nodiscard]] inline double largest_input_bytes(const Operation& op) {
  double b = 0;
  for (const auto& t : op.inputs) b = std::max(b, bytes_of(t));
  return b;
}

[[nodiscard]] inline double largest_input_numel(const Operation& op) {
  double n = 0;
  for (const auto& t : op.inputs) n = std::max(n, numel(t.shape));
  return n;
}

// Default for element-wise, copy, reduction and normalization ops, about one FLOP per element:
// - copy_/fill_/zero_ write their first argument without reading it: the inputs are the traffic;
// - other in-place ops (name ends in '_') read and write back their first argument;
// - reductions write little; everything else writes one output as large as its largest input.
[[nodiscard]] inline OpCost elementwise(const Operation& op) {
  const std::string_view n = op.name;
  const double in = sum_input_bytes(op);
  double out = largest_input_bytes(op);
  if (n == "aten::copy_" || n == "aten::fill_" || n == "aten::zero_") out = 0;
  else if (n.ends_with("_")) out = arg(op, 0) ? bytes_of(op.inputs[0]) : 0;
  else if (n.find("sum") != n.npos || n.find("mean") != n.npos || n.find("nll_loss") != n.npos) out = 0;
  return {largest_input_numel(op), in + out, false};
}

// Normalizations: forward reads x once or twice (statistics, then normalize) and writes y; backward
// reads x and dy and writes dx. About 8 FLOPs per element.
[[nodiscard]] inline OpCost normalization(const Operation& op) {
  const double n = arg(op, 0) ? numel(op.inputs[0].shape) : largest_input_numel(op);
  const double x = arg(op, 0) ? bytes_of(op.inputs[0]) : largest_input_bytes(op);
  // Backward: the inputs (x, dy, statistics, weights) plus dx, plus one more pass over x for the statistics
  // (known to overcount; see the foundation issue's note, kept so the held-out evaluation stays valid).
  const bool backward = op.backward || op.name.find("backward") != std::string::npos;
  return {8 * n, backward ? sum_input_bytes(op) + 2 * x : 3 * x, false};
}

[[nodiscard]] inline OpCost gemm(double batch, double m, double n, double k, double elem, double extra_bytes = 0) {
  return {2 * batch * m * n * k, elem * batch * (m * k + k * n + m * n) + extra_bytes, true};
}

[[nodiscard]] inline OpCost mm(const Operation& op, std::size_t a_at) {
  const TensorArg* a = arg(op, a_at);
  const TensorArg* b = arg(op, a_at + 1);
  if (!a || !b || a->shape.size() < 2 || b->shape.size() < 2) return elementwise(op);
  const auto& as = a->shape;
  const auto& bs = b->shape;
  const double batch = as.size() == 3 ? double(as[0]) : 1.0;
  const double m = double(as[as.size() - 2]), k = double(as.back()), n = double(bs.back());
  const double extra = a_at > 0 && arg(op, 0) ? bytes_of(op.inputs[0]) : 0;  // addmm/baddbmm bias
  return gemm(batch, m, n, k, dtype_bytes(a->dtype), extra);
}

[[nodiscard]] inline OpCost linear(const Operation& op) {
  const TensorArg* x = arg(op, 0);
  const TensorArg* w = arg(op, 1);
  if (!x || !w || w->shape.size() != 2) return elementwise(op);
  const double k = double(w->shape[1]), n = double(w->shape[0]);
  return gemm(1, numel(x->shape) / std::max(k, 1.0), n, k, dtype_bytes(x->dtype), arg(op, 2) ? bytes_of(op.inputs[2]) : 0);
}

// Convolution with the argument positions of the ATen signature that names it.
struct ConvArgs {
  std::size_t stride, padding, dilation;
  std::optional<std::size_t> transposed, output_padding;
  bool always_transposed = false;
};

[[nodiscard]] inline std::int64_t at_or(const std::vector<std::int64_t>& v, std::size_t i, std::int64_t dflt) {
  if (v.empty()) return dflt;
  return i < v.size() ? v[i] : v.back();
}

[[nodiscard]] inline OpCost convolution(const Operation& op, const ConvArgs& ca) {
  const TensorArg* x = arg(op, 0);
  const TensorArg* w = arg(op, 1);
  if (!x || !w || x->shape.size() < 3 || w->shape.size() != x->shape.size()) return elementwise(op);
  const bool transposed = ca.always_transposed || (ca.transposed && flag(op, *ca.transposed));
  const auto stride = ints(op, ca.stride), pad = ints(op, ca.padding), dil = ints(op, ca.dilation);
  const auto opad = ca.output_padding ? ints(op, *ca.output_padding) : std::vector<std::int64_t>{};
  const std::size_t spatial = x->shape.size() - 2;
  double in_pixels = 1, out_pixels = 1;
  for (std::size_t i = 0; i < spatial; ++i) {
    const double in = double(x->shape[2 + i]), kk = double(w->shape[2 + i]);
    const double s = double(at_or(stride, i, 1)), p = double(at_or(pad, i, 0)), d = double(at_or(dil, i, 1));
    const double out = transposed ? (in - 1) * s - 2 * p + d * (kk - 1) + double(at_or(opad, i, 0)) + 1
                                  : std::floor((in + 2 * p - d * (kk - 1) - 1) / s) + 1;
    in_pixels *= in;
    out_pixels *= std::max(out, 1.0);
  }
  const double n = double(x->shape[0]);
  // FLOPs follow from the weight's element count, which already divides by the groups.
  const double wnum = numel(w->shape);
  // Each weight element meets every output (forward) or input (transposed) pixel of every sample.
  const double flops = 2 * n * wnum * (transposed ? in_pixels : out_pixels);
  const double cout = transposed ? double(w->shape[1]) * std::max(1.0, double(x->shape[1]) / double(w->shape[0]))
                                 : double(w->shape[0]);
  const double e = dtype_bytes(x->dtype);
  return {flops, bytes_of(*x) + bytes_of(*w) + e * n * cout * out_pixels, true};
}

// convolution_backward(grad_output, input, weight, bias_sizes, stride, padding, dilation, transposed,
// output_padding, groups, output_mask): one convolution-sized GEMM per requested gradient.
[[nodiscard]] inline OpCost convolution_backward(const Operation& op) {
  const TensorArg* gy = arg(op, 0);
  const TensorArg* x = arg(op, 1);
  const TensorArg* w = arg(op, 2);
  if (!gy || !x || !w || gy->shape.size() < 3) return elementwise(op);
  const bool transposed = flag(op, 7);
  double pixels = 1;
  const TensorArg* pix_from = transposed ? x : gy;
  for (std::size_t i = 2; i < pix_from->shape.size(); ++i) pixels *= double(pix_from->shape[i]);
  const double one = 2 * double(gy->shape[0]) * numel(w->shape) * pixels;
  const auto mask = ints(op, 10);
  const double grads = mask.size() >= 2 ? double(mask[0] + mask[1]) : 2.0;
  return {one * std::max(grads, 1.0), bytes_of(*gy) + 2 * bytes_of(*x) + 2 * bytes_of(*w), true};
}

// Attention over q[B,H,L,D], k[B,H,S,D], v[B,H,S,Dv]: QK^T and PV (x2.5 for the backward pass, which
// recomputes P and forms dQ, dK, dV). Causal masks halve the work.
[[nodiscard]] inline OpCost attention(const Operation& op, bool backward, std::optional<std::size_t> causal_at) {
  const TensorArg* q = arg(op, 0);
  const TensorArg* k = arg(op, 1);
  if (!q || !k || q->shape.size() != 4 || k->shape.size() != 4) return elementwise(op);
  const double b = double(q->shape[0]), h = double(q->shape[1]), l = double(q->shape[2]), d = double(q->shape[3]);
  const double s = double(k->shape[2]);
  double flops = 4 * b * h * l * s * d;
  if (causal_at && flag(op, *causal_at)) flops /= 2;
  if (backward) flops *= 2.5;
  const double io = sum_input_bytes(op) + bytes_of(*q);  // inputs plus the output (or dQ, dK, dV ~ inputs)
  return {flops, backward ? 2 * io : io, true};
}

// cuDNN RNN: every weight is used once per time step per sequence (forward), twice in the backward pass.
[[nodiscard]] inline OpCost rnn(const Operation& op, bool backward) {
  const TensorArg* x = arg(op, 0);
  double weights = 0;
  for (std::size_t i = 1; i < op.inputs.size(); ++i)
    if (op.inputs[i].shape.size() == 1) weights = std::max(weights, numel(op.inputs[i].shape));  // weight_buf
  if (!x || x->shape.size() < 2 || weights == 0) return elementwise(op);
  const double tokens = numel(x->shape) / double(x->shape.back());
  return {2 * weights * tokens * (backward ? 2 : 1), sum_input_bytes(op) * (backward ? 3 : 2), true};
}

// Embedding lookups read and write one row per index; the dense backward also writes the whole table.
[[nodiscard]] inline OpCost embedding(const Operation& op) {
  const TensorArg* w = arg(op, 0);
  const TensorArg* idx = arg(op, 1);
  if (!w || !idx || w->shape.size() != 2) return elementwise(op);
  const double rows = numel(idx->shape);
  return {0, 2 * rows * double(w->shape[1]) * dtype_bytes(w->dtype) + bytes_of(*idx), false};
}

[[nodiscard]] inline OpCost embedding_backward(const Operation& op) {
  const TensorArg* grad = arg(op, 0);
  const auto num_weights = ints(op, 2);
  if (!grad || num_weights.empty()) return elementwise(op);
  const double dim = double(grad->shape.back());
  return {numel(grad->shape), 2 * bytes_of(*grad) + double(num_weights[0]) * dim * 4 * 2, false};
}

using Rule = OpCost (*)(const Operation&);

struct NamedRule {
  std::string_view name;
  Rule rule;
};

inline constexpr std::array rules = {
    NamedRule{"aten::mm", [](const Operation& op) { return mm(op, 0); }},
    NamedRule{"aten::bmm", [](const Operation& op) { return mm(op, 0); }},
    NamedRule{"aten::addmm", [](const Operation& op) { return mm(op, 1); }},
    NamedRule{"aten::baddbmm", [](const Operation& op) { return mm(op, 1); }},
    NamedRule{"aten::addbmm", [](const Operation& op) { return mm(op, 1); }},
    NamedRule{"aten::linear", linear},
    NamedRule{"aten::_convolution", [](const Operation& op) { return convolution(op, {3, 4, 5, 6, 7}); }},
    NamedRule{"aten::convolution", [](const Operation& op) { return convolution(op, {3, 4, 5, 6, 7}); }},
    NamedRule{"aten::cudnn_convolution", [](const Operation& op) { return convolution(op, {3, 2, 4, {}, {}}); }},
    NamedRule{"aten::cudnn_convolution_transpose",
              [](const Operation& op) { return convolution(op, {4, 2, 5, {}, 3, true}); }},
    NamedRule{"aten::_conv_depthwise2d", [](const Operation& op) { return convolution(op, {4, 5, 6, {}, {}}); }},
    NamedRule{"aten::convolution_backward", convolution_backward},
    NamedRule{"aten::_scaled_dot_product_cudnn_attention", [](const Operation& op) { return attention(op, false, 4); }},
    NamedRule{"aten::_cudnn_attention_forward", [](const Operation& op) { return attention(op, false, 8); }},
    NamedRule{"aten::_scaled_dot_product_flash_attention", [](const Operation& op) { return attention(op, false, 4); }},
    NamedRule{"aten::_flash_attention_forward", [](const Operation& op) { return attention(op, false, 7); }},
    NamedRule{"aten::_scaled_dot_product_efficient_attention", [](const Operation& op) { return attention(op, false, 6); }},
    NamedRule{"aten::_efficient_attention_forward", [](const Operation& op) { return attention(op, false, {}); }},
    NamedRule{"aten::_scaled_dot_product_cudnn_attention_backward", [](const Operation& op) { return attention(op, true, 14); }},
    NamedRule{"aten::_cudnn_attention_backward", [](const Operation& op) { return attention(op, true, 14); }},
    NamedRule{"aten::_scaled_dot_product_flash_attention_backward", [](const Operation& op) { return attention(op, true, {}); }},
    NamedRule{"aten::_flash_attention_backward", [](const Operation& op) { return attention(op, true, {}); }},
    NamedRule{"aten::_scaled_dot_product_efficient_attention_backward", [](const Operation& op) { return attention(op, true, {}); }},
    NamedRule{"aten::_efficient_attention_backward", [](const Operation& op) { return attention(op, true, {}); }},
    NamedRule{"aten::_cudnn_rnn", [](const Operation& op) { return rnn(op, false); }},
    NamedRule{"aten::_cudnn_rnn_backward", [](const Operation& op) { return rnn(op, true); }},
    NamedRule{"aten::embedding", embedding},
    NamedRule{"aten::embedding_dense_backward", embedding_backward},
    NamedRule{"aten::native_layer_norm", normalization},
    NamedRule{"aten::native_layer_norm_backward", normalization},
    NamedRule{"aten::native_batch_norm", normalization},
    NamedRule{"aten::native_batch_norm_backward", normalization},
    NamedRule{"aten::cudnn_batch_norm", normalization},
    NamedRule{"aten::cudnn_batch_norm_backward", normalization},
    NamedRule{"aten::_batch_norm_impl_index", normalization},
    NamedRule{"aten::native_group_norm", normalization},
    NamedRule{"aten::native_group_norm_backward", normalization},
};

}  // namespace cost

// Work of one operation; unknown operations count as element-wise. Returns nullopt where the trace holds
// no shapes at all (tensor lists, for instance), so callers can tell "estimated zero" from "unknown".
[[nodiscard]] inline std::optional<OpCost> estimate_op_cost(const Operation& op) {
  for (const auto& r : cost::rules)
    if (r.name == op.name) return r.rule(op);
  const OpCost c = cost::elementwise(op);
  if (c.bytes <= 0) return std::nullopt;
  return c;
}

}  // namespace habitat
