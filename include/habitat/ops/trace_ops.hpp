#pragma once
// Which operations of a trace a learned model covers, and their configurations, read from the shapes
// the profiler recorded (below both predict/, whose tile model reads GEMM shapes here, and mlp/). GEMMs are matched at the primitive (mm, addmm, bmm), so the GEMMs of a
// backward pass are predicted by their own shapes; convolution, normalization, attention and LSTM
// backward ops map to the model's backward pass.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

#include "habitat/ops/aten_signatures.hpp"
#include "habitat/ops/dtype.hpp"
#include "habitat/ops/op_args.hpp"
#include "habitat/ops/op_query.hpp"
#include "habitat/trace/trace.hpp"

namespace habitat::ops {

namespace trace_rules {

using cost::arg;
using cost::at_or;
using cost::flag;
using cost::ints;
using ops::aten::Signature;

// fp32 and bf16 have models; half, double and integers none.
[[nodiscard]] inline std::optional<ops::DataType> dtype_of(const TensorArg& t) { return ops::data_type(t.dtype); }

// Whether a matrix operand reaches BLAS transposed, from its recorded strides, as PyTorch decides before calling
// cuBLAS: row-major (last dimension unit-stride, rows at least a row apart) goes as it is; column-major (the one
// before it unit-stride, columns at least a column apart: a view such as W.t()) goes transposed; anything else
// (expanded, strided) is first copied to row-major. Nothing without strides.
[[nodiscard]] inline std::optional<bool> stored_transposed(const TensorArg& t) {
  const auto& st = t.strides;
  const auto& sh = t.shape;
  if (st.size() < 2 || st.size() != sh.size()) return std::nullopt;
  const auto n = st.size();
  const std::int64_t rows = std::max<std::int64_t>(sh[n - 2], 1), cols = std::max<std::int64_t>(sh[n - 1], 1);
  if (st[n - 1] == 1 && st[n - 2] >= cols) return false;
  if (st[n - 2] == 1 && st[n - 1] >= rows) return true;
  return false;
}

// GEMMs are forward ops at the primitive; the backward's GEMMs are mm/bmm calls of their own.
[[nodiscard]] inline std::optional<OpQuery> gemm(const Operation& op, const Signature& sig, ops::Pass) {
  const auto g = ops::aten::gemm_args(sig);
  const TensorArg* a = arg(op, g.a);
  const TensorArg* b = arg(op, g.b);
  if (!a || !b || a->shape.size() != b->shape.size() || a->shape.size() < 2 || a->shape.size() > 3) return std::nullopt;
  const auto t = dtype_of(*a);
  if (!t) return std::nullopt;
  const auto& s = a->shape;
  const double m = double(s[s.size() - 2]), k = double(s.back()), n = double(b->shape.back());
  if (s.size() == 3) return OpQuery{ops::OpKind::bmm, ops::Pass::forward, *t, {double(s[0]), m, n, k}, stored_transposed(*b)};
  return OpQuery{ops::OpKind::linear, ops::Pass::forward, *t, {1, m, n, k}, stored_transposed(*b)};
}

// Square-equivalent sizes: the models were trained on square images and kernels.
[[nodiscard]] inline double square(double a, double b) { return std::round(std::sqrt(a * b)); }

[[nodiscard]] inline std::optional<OpQuery> conv(const Operation& op, const Signature& sig, ops::Pass pass) {
  const auto ca = ops::aten::conv_args(sig);
  const TensorArg* x = arg(op, ca.input);
  const TensorArg* w = arg(op, ca.weight);
  if (!x || !w || x->shape.size() != 4 || w->shape.size() != 4) return std::nullopt;
  if (ca.groups && at_or(ints(op, *ca.groups), 0, 1) != 1) return std::nullopt;  // grouped/depthwise: no model
  const auto t = dtype_of(*x);
  if (!t) return std::nullopt;
  const bool transposed = cost::conv_transposed(op, ca);
  const auto st = ints(op, ca.stride), pd = ints(op, ca.padding);
  const double cin = double(x->shape[1]), cout = transposed ? double(w->shape[1]) : double(w->shape[0]);
  return OpQuery{transposed ? ops::OpKind::conv_transpose2d : ops::OpKind::conv2d, pass, *t,
                 {double(x->shape[0]), cin, cout, square(double(w->shape[2]), double(w->shape[3])),
                  square(double(x->shape[2]), double(x->shape[3])), double(at_or(st, 0, 1)), double(at_or(pd, 0, 0))}};
}

[[nodiscard]] inline std::optional<OpQuery> layer_norm(const Operation& op, const Signature& sig, ops::Pass pass) {
  const TensorArg* x = arg(op, sig.at("input"));
  if (!x || x->shape.empty()) return std::nullopt;
  const auto t = dtype_of(*x);
  if (!t) return std::nullopt;
  const double h = double(x->shape.back());
  return OpQuery{ops::OpKind::layer_norm, pass, *t, {cost::numel(x->shape) / std::max(h, 1.0), h}};
}

[[nodiscard]] inline std::optional<OpQuery> batch_norm(const Operation& op, const Signature& sig, ops::Pass pass) {
  const TensorArg* x = arg(op, sig.at("input"));
  if (!x || x->shape.size() != 4) return std::nullopt;
  const auto t = dtype_of(*x);
  if (!t) return std::nullopt;
  return OpQuery{ops::OpKind::batch_norm, pass, *t,
                 {double(x->shape[0]), double(x->shape[1]), square(double(x->shape[2]), double(x->shape[3]))}};
}

// The models were measured forward and backward through scaled_dot_product_attention with the same
// is_causal, so the backward ops carry their own is_causal flag into the query too.
[[nodiscard]] inline std::optional<OpQuery> attention(const Operation& op, const Signature& sig, ops::Pass pass) {
  const auto aa = ops::aten::attention_args(sig);
  const TensorArg* q = arg(op, aa.query);
  if (!q || q->shape.size() != 4) return std::nullopt;
  const auto t = dtype_of(*q);
  if (!t) return std::nullopt;
  const bool causal = cost::attention_causal(op, aa);
  return OpQuery{ops::OpKind::sdpa, pass, *t,
                 {double(q->shape[0]), double(q->shape[1]), double(q->shape[2]), double(q->shape[3]), causal ? 1.0 : 0.0}};
}

// cuDNN RNN: input [T, B, I] and hx [layers x directions, B, H] give the configuration.
[[nodiscard]] inline std::optional<OpQuery> lstm(const Operation& op, const Signature& sig, ops::Pass pass) {
  const TensorArg* x = arg(op, sig.at("input"));
  const TensorArg* hx = arg(op, sig.at("hx"));
  if (!x || !hx || x->shape.size() != 3 || hx->shape.size() != 3) return std::nullopt;
  const auto t = dtype_of(*x);
  if (!t) return std::nullopt;
  return OpQuery{ops::OpKind::lstm, pass, *t,
                 {double(hx->shape[1]), double(x->shape[0]), double(x->shape[2]), double(hx->shape[2]), double(hx->shape[0]), 0}};
}

// A rule reads the operation's arguments through the ATen signature of the op it is registered for.
using Query = std::optional<OpQuery> (*)(const Operation&, const Signature&, ops::Pass);

struct Rule {
  std::string_view name;
  Query query;
  ops::Pass pass = ops::Pass::forward;
};

inline const std::vector<Rule>& rules() {
  using P = ops::Pass;
  static const std::vector<Rule> r{
      {"aten::mm", gemm},
      {"aten::addmm", gemm},
      {"aten::bmm", gemm},
      {"aten::baddbmm", gemm},
      {"aten::cudnn_convolution", conv},
      {"aten::cudnn_convolution_transpose", conv},
      {"aten::convolution_backward", conv, P::backward},
      {"aten::native_layer_norm", layer_norm},
      {"aten::native_layer_norm_backward", layer_norm, P::backward},
      {"aten::cudnn_batch_norm", batch_norm},
      {"aten::native_batch_norm", batch_norm},
      {"aten::cudnn_batch_norm_backward", batch_norm, P::backward},
      {"aten::native_batch_norm_backward", batch_norm, P::backward},
      {"aten::_scaled_dot_product_flash_attention", attention},
      {"aten::_scaled_dot_product_efficient_attention", attention},
      {"aten::_scaled_dot_product_cudnn_attention", attention},
      {"aten::_scaled_dot_product_flash_attention_backward", attention, P::backward},
      {"aten::_scaled_dot_product_efficient_attention_backward", attention, P::backward},
      {"aten::_scaled_dot_product_cudnn_attention_backward", attention, P::backward},
      {"aten::_cudnn_rnn", lstm},
      {"aten::_cudnn_rnn_backward", lstm, P::backward},
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
        own[i] = r.query(t.ops[i], ops::aten::signature(r.name), r.pass);
        break;
      }
  for (std::size_t i = 0; i < t.ops.size(); ++i)
    for (int o = static_cast<int>(i); o >= 0 && !out[i]; o = t.ops[static_cast<std::size_t>(o)].parent) out[i] = own[static_cast<std::size_t>(o)];
  return out;
}

}  // namespace habitat::ops
