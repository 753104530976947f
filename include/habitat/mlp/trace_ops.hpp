#pragma once
// Which operations of a trace a learned model covers, and their configurations, read from the shapes
// the profiler recorded. GEMMs are matched at the primitive (mm, addmm, bmm), so the GEMMs of a
// backward pass are predicted by their own shapes; convolution, normalization, attention and LSTM
// backward ops map to the model's backward pass.
#include <cmath>
#include <functional>
#include <optional>
#include <string_view>
#include <vector>

#include "habitat/mlp/features.hpp"
#include "habitat/predict/op_cost.hpp"
#include "habitat/trace/trace.hpp"

namespace habitat::mlp {

namespace trace_rules {

using cost::arg;
using cost::at_or;
using cost::flag;
using cost::ints;

[[nodiscard]] inline std::optional<ops::DataType> dtype_of(const TensorArg& t) {
  if (t.dtype == "float") return ops::DataType::fp32;
  if (t.dtype == "c10::BFloat16") return ops::DataType::bf16;
  return std::nullopt;  // half, double, ints: no model
}

[[nodiscard]] inline std::optional<OpQuery> gemm(const Operation& op, std::size_t a_at) {
  const TensorArg* a = arg(op, a_at);
  const TensorArg* b = arg(op, a_at + 1);
  if (!a || !b || a->shape.size() != b->shape.size() || a->shape.size() < 2 || a->shape.size() > 3) return std::nullopt;
  const auto t = dtype_of(*a);
  if (!t) return std::nullopt;
  const auto& s = a->shape;
  const double m = double(s[s.size() - 2]), k = double(s.back()), n = double(b->shape.back());
  if (s.size() == 3) return OpQuery{ops::OpKind::bmm, ops::Pass::forward, *t, {double(s[0]), m, n, k}};
  return OpQuery{ops::OpKind::linear, ops::Pass::forward, *t, {1, m, n, k}};
}

// Square-equivalent sizes: the models were trained on square images and kernels.
[[nodiscard]] inline double square(double a, double b) { return std::round(std::sqrt(a * b)); }

[[nodiscard]] inline std::optional<OpQuery> conv(const Operation& op, std::size_t x_at, std::size_t w_at, std::size_t stride_at,
                                                 std::size_t pad_at, std::optional<std::size_t> transposed_at,
                                                 std::optional<std::size_t> groups_at, ops::Pass pass) {
  const TensorArg* x = arg(op, x_at);
  const TensorArg* w = arg(op, w_at);
  if (!x || !w || x->shape.size() != 4 || w->shape.size() != 4) return std::nullopt;
  if (groups_at && at_or(ints(op, *groups_at), 0, 1) != 1) return std::nullopt;  // grouped/depthwise: no model
  const auto t = dtype_of(*x);
  if (!t) return std::nullopt;
  const bool transposed = transposed_at && flag(op, *transposed_at);
  const auto st = ints(op, stride_at), pd = ints(op, pad_at);
  const double cin = double(x->shape[1]), cout = transposed ? double(w->shape[1]) : double(w->shape[0]);
  return OpQuery{transposed ? ops::OpKind::conv_transpose2d : ops::OpKind::conv2d, pass, *t,
                 {double(x->shape[0]), cin, cout, square(double(w->shape[2]), double(w->shape[3])),
                  square(double(x->shape[2]), double(x->shape[3])), double(at_or(st, 0, 1)), double(at_or(pd, 0, 0))}};
}

[[nodiscard]] inline std::optional<OpQuery> layer_norm(const Operation& op, ops::Pass pass) {
  const TensorArg* x = arg(op, pass == ops::Pass::forward ? 0 : 1);
  if (!x || x->shape.empty()) return std::nullopt;
  const auto t = dtype_of(*x);
  if (!t) return std::nullopt;
  const double h = double(x->shape.back());
  return OpQuery{ops::OpKind::layer_norm, pass, *t, {cost::numel(x->shape) / std::max(h, 1.0), h}};
}

[[nodiscard]] inline std::optional<OpQuery> batch_norm(const Operation& op, ops::Pass pass) {
  const TensorArg* x = arg(op, pass == ops::Pass::forward ? 0 : 1);
  if (!x || x->shape.size() != 4) return std::nullopt;
  const auto t = dtype_of(*x);
  if (!t) return std::nullopt;
  return OpQuery{ops::OpKind::batch_norm, pass, *t,
                 {double(x->shape[0]), double(x->shape[1]), square(double(x->shape[2]), double(x->shape[3]))}};
}

[[nodiscard]] inline std::optional<OpQuery> attention(const Operation& op, ops::Pass pass, std::optional<std::size_t> causal_at,
                                                      std::size_t q_at) {
  const TensorArg* q = arg(op, q_at);
  if (!q || q->shape.size() != 4) return std::nullopt;
  const auto t = dtype_of(*q);
  if (!t) return std::nullopt;
  const bool causal = causal_at && flag(op, *causal_at);
  return OpQuery{ops::OpKind::sdpa, pass, *t,
                 {double(q->shape[0]), double(q->shape[1]), double(q->shape[2]), double(q->shape[3]), causal ? 1.0 : 0.0}};
}

// cuDNN RNN: input [T, B, I] and hx [layers x directions, B, H] give the configuration.
[[nodiscard]] inline std::optional<OpQuery> lstm(const Operation& op, ops::Pass pass) {
  const TensorArg* x = arg(op, 0);
  const TensorArg* hx = nullptr;
  for (std::size_t i = 1; i < op.inputs.size(); ++i)
    if (op.inputs[i].shape.size() == 3 && !hx) hx = &op.inputs[i];
  if (!x || !hx || x->shape.size() != 3) return std::nullopt;
  const auto t = dtype_of(*x);
  if (!t) return std::nullopt;
  return OpQuery{ops::OpKind::lstm, pass, *t,
                 {double(hx->shape[1]), double(x->shape[0]), double(x->shape[2]), double(hx->shape[2]), double(hx->shape[0]), 0}};
}

struct Rule {
  std::string_view name;
  std::function<std::optional<OpQuery>(const Operation&)> query;
};

inline const std::vector<Rule>& rules() {
  using P = ops::Pass;
  static const std::vector<Rule> r{
      {"aten::mm", [](const Operation& o) { return gemm(o, 0); }},
      {"aten::addmm", [](const Operation& o) { return gemm(o, 1); }},
      {"aten::bmm", [](const Operation& o) { return gemm(o, 0); }},
      {"aten::baddbmm", [](const Operation& o) { return gemm(o, 1); }},
      {"aten::cudnn_convolution", [](const Operation& o) { return conv(o, 0, 1, 3, 2, {}, 5, P::forward); }},
      {"aten::cudnn_convolution_transpose",
       [](const Operation& o) {
         auto q = conv(o, 0, 1, 4, 2, {}, 6, P::forward);
         if (q) q->op = ops::OpKind::conv_transpose2d, q->dims[2] = double(o.inputs[1].shape[1]);  // weight [Cin, Cout, k, k]
         return q;
       }},
      {"aten::convolution_backward", [](const Operation& o) { return conv(o, 1, 2, 4, 5, 7, 9, P::backward); }},
      {"aten::native_layer_norm", [](const Operation& o) { return layer_norm(o, P::forward); }},
      {"aten::native_layer_norm_backward", [](const Operation& o) { return layer_norm(o, P::backward); }},
      {"aten::cudnn_batch_norm", [](const Operation& o) { return batch_norm(o, P::forward); }},
      {"aten::native_batch_norm", [](const Operation& o) { return batch_norm(o, P::forward); }},
      {"aten::cudnn_batch_norm_backward", [](const Operation& o) { return batch_norm(o, P::backward); }},
      {"aten::native_batch_norm_backward", [](const Operation& o) { return batch_norm(o, P::backward); }},
      {"aten::_scaled_dot_product_flash_attention", [](const Operation& o) { return attention(o, P::forward, 4, 0); }},
      {"aten::_scaled_dot_product_efficient_attention", [](const Operation& o) { return attention(o, P::forward, 6, 0); }},
      {"aten::_scaled_dot_product_cudnn_attention", [](const Operation& o) { return attention(o, P::forward, 6, 0); }},
      {"aten::_scaled_dot_product_flash_attention_backward", [](const Operation& o) { return attention(o, P::backward, {}, 1); }},
      {"aten::_scaled_dot_product_efficient_attention_backward", [](const Operation& o) { return attention(o, P::backward, {}, 1); }},
      {"aten::_scaled_dot_product_cudnn_attention_backward", [](const Operation& o) { return attention(o, P::backward, {}, 1); }},
      {"aten::_cudnn_rnn", [](const Operation& o) { return lstm(o, P::forward); }},
      {"aten::_cudnn_rnn_backward", [](const Operation& o) { return lstm(o, P::backward); }},
  };
  return r;
}

}  // namespace trace_rules

// The configuration of the nearest enclosing operation a model covers, for each trace operation.
[[nodiscard]] inline std::vector<std::optional<OpQuery>> op_queries(const Trace& t) {
  std::vector<std::optional<OpQuery>> own(t.ops.size()), out(t.ops.size());
  for (std::size_t i = 0; i < t.ops.size(); ++i)
    for (const auto& r : trace_rules::rules())
      if (t.ops[i].name == r.name) {
        own[i] = r.query(t.ops[i]);
        break;
      }
  for (std::size_t i = 0; i < t.ops.size(); ++i)
    for (int o = static_cast<int>(i); o >= 0 && !out[i]; o = t.ops[static_cast<std::size_t>(o)].parent) out[i] = own[static_cast<std::size_t>(o)];
  return out;
}

}  // namespace habitat::mlp
