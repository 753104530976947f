// The learned models' configurations read argument positions through ops/aten_signatures.hpp, as the
// counter-free estimate does: both agree on attention causality and on the GEMM/convolution work.
#include <catch2/catch.hpp>

#include "habitat/ops/trace_ops.hpp"
#include "habitat/ops/op_schema.hpp"
#include "habitat/predict/op_cost.hpp"

using namespace habitat;

namespace {
TensorArg t(std::vector<std::int64_t> s, std::string dtype = "float") { return {std::move(s), std::move(dtype), ""}; }
TensorArg v(std::string value) { return {{}, "Scalar", std::move(value)}; }
TensorArg none() { return {{}, "", ""}; }
Operation op(std::string name, std::vector<TensorArg> inputs) {
  Operation o;
  o.name = std::move(name);
  o.inputs = std::move(inputs);
  return o;
}
std::optional<ops::OpQuery> query_of(Operation o) {
  Trace tr;
  tr.ops.push_back(std::move(o));
  return ops::op_queries(tr)[0];
}
// _scaled_dot_product_cudnn_attention(query, key, value, attn_bias, compute_log_sumexp, dropout_p, is_causal,
// return_debug_mask, *, scale)
Operation cudnn_attention(bool log_sumexp, bool causal) {
  const TensorArg q = t({2, 8, 256, 64}, "c10::BFloat16");
  return op("aten::_scaled_dot_product_cudnn_attention", {q, q, q, none(), v(log_sumexp ? "True" : "False"), v("0."),
                                                          v(causal ? "True" : "False"), v("False"), none()});
}
}  // namespace

TEST_CASE("trace rules: training cuDNN attention is causal only by is_causal", "[mlp][aten]") {
  const auto train = query_of(cudnn_attention(true, false));
  REQUIRE(train);
  CHECK(train->op == ops::OpKind::sdpa);
  CHECK(train->dims[4] == 0);
  const auto causal = query_of(cudnn_attention(true, true));
  REQUIRE(causal);
  CHECK(causal->dims[4] == 1);
  // The cost estimate reads the same flag.
  CHECK(estimate_op_cost(cudnn_attention(true, true))->flops == Approx(estimate_op_cost(cudnn_attention(true, false))->flops / 2));
}

TEST_CASE("trace rules: attention backward carries its is_causal and reads query, not grad_out", "[mlp][aten]") {
  const TensorArg q = t({2, 8, 256, 64});
  const TensorArg g = t({2, 8, 256, 32});  // grad_out with another head dim, to tell the two apart
  // _scaled_dot_product_flash_attention_backward(grad_out, query, key, value, out, logsumexp, cum_seq_q, cum_seq_k,
  // max_q, max_k, dropout_p, is_causal, philox_seed, philox_offset, *, scale)
  const auto b = query_of(op("aten::_scaled_dot_product_flash_attention_backward",
                             {g, q, q, q, g, t({2, 8, 256}), none(), none(), v("256"), v("256"), v("0."), v("True"),
                              t({}), t({}), none()}));
  REQUIRE(b);
  CHECK(b->pass == ops::Pass::backward);
  CHECK(b->dims[3] == 64);
  CHECK(b->dims[4] == 1);
}

TEST_CASE("trace rules: cudnn_convolution_transpose and convolution_backward by name", "[mlp][aten]") {
  // cudnn_convolution_transpose(self, weight, padding, output_padding, stride, dilation, groups, ...)
  const auto tr = query_of(op("aten::cudnn_convolution_transpose", {t({4, 64, 8, 8}), t({64, 32, 4, 4}), v("[1, 1]"),
                                                                    v("[0, 0]"), v("[2, 2]"), v("[1, 1]"), v("1")}));
  REQUIRE(tr);
  CHECK(tr->op == ops::OpKind::conv_transpose2d);
  CHECK(tr->dims == ops::Dims{4, 64, 32, 4, 8, 2, 1, 0});
  // Grouped convolutions have no model.
  CHECK_FALSE(query_of(op("aten::cudnn_convolution", {t({4, 64, 8, 8}), t({64, 1, 3, 3}), v("[1, 1]"), v("[1, 1]"),
                                                       v("[1, 1]"), v("64")})));
}

TEST_CASE("one work model: op_work and estimate_op_cost agree on GEMMs and convolutions", "[cost][aten]") {
  // linear: x[B*M, K] @ W[N, K]^T; op_cost counts the bias on top.
  const auto lin = estimate_op_cost(op("aten::linear", {t({4, 16, 128}), t({32, 128}), none()}));
  const auto lw = ops::op_work(ops::OpKind::linear, {1, 64, 32, 128}, ops::DataType::fp32, ops::Pass::forward);
  CHECK(lin->flops == Approx(lw.flops));
  CHECK(lin->bytes == Approx(lw.bytes));
  const auto bmm = estimate_op_cost(op("aten::bmm", {t({8, 64, 128}, "c10::BFloat16"), t({8, 128, 32}, "c10::BFloat16")}));
  const auto bw = ops::op_work(ops::OpKind::bmm, {8, 64, 32, 128}, ops::DataType::bf16, ops::Pass::forward);
  CHECK(bmm->flops == Approx(bw.flops));
  CHECK(bmm->bytes == Approx(bw.bytes));
  // conv2d 64->128, 3x3, stride 2, pad 1 on 56x56 and its transposed counterpart.
  const auto conv = estimate_op_cost(op("aten::convolution", {t({8, 64, 56, 56}), t({128, 64, 3, 3}), none(), v("[2, 2]"),
                                                              v("[1, 1]"), v("[1, 1]"), v("False"), v("[0, 0]"), v("1")}));
  const auto cw = ops::op_work(ops::OpKind::conv2d, {8, 64, 128, 3, 56, 2, 1}, ops::DataType::fp32, ops::Pass::forward);
  CHECK(conv->flops == Approx(cw.flops));
  CHECK(conv->bytes == Approx(cw.bytes));
  const auto tconv = estimate_op_cost(op("aten::convolution", {t({8, 64, 28, 28}), t({64, 32, 4, 4}), none(), v("[2, 2]"),
                                                               v("[1, 1]"), v("[1, 1]"), v("True"), v("[0, 0]"), v("1")}));
  const auto tw = ops::op_work(ops::OpKind::conv_transpose2d, {8, 64, 32, 4, 28, 2, 1}, ops::DataType::fp32, ops::Pass::forward);
  CHECK(tconv->flops == Approx(tw.flops));
  CHECK(tconv->bytes == Approx(tw.bytes));
}

TEST_CASE("one dtype table: DataType sizes and profiler names go through it", "[aten]") {
  CHECK(ops::dtype_bytes(ops::DataType::fp32) == 4);
  CHECK(ops::dtype_bytes(ops::DataType::bf16) == 2);
  CHECK(ops::data_type("float") == ops::DataType::fp32);
  CHECK(ops::data_type("c10::BFloat16") == ops::DataType::bf16);
  CHECK_FALSE(ops::data_type("c10::Half"));
  for (auto d : {ops::DataType::fp32, ops::DataType::bf16}) CHECK(ops::data_type(ops::profiler_name(d)) == d);
  CHECK(cost::dtype_bytes("double") == 8);
  CHECK(cost::dtype_bytes("long int") == 8);
  CHECK(cost::dtype_bytes("c10::Half") == 2);
  CHECK(cost::dtype_bytes("c10::Float8_e4m3fn") == 1);
  CHECK(cost::dtype_bytes("c10::Float8_e5m2") == 1);
  CHECK(cost::dtype_bytes("bool") == 1);
  CHECK(cost::dtype_bytes("unsigned char") == 1);
  CHECK(cost::dtype_bytes("c10::complex<float>") == 8);
  CHECK(cost::dtype_bytes("") == 4);
}

TEST_CASE("every rule of both tables names only arguments its signature has", "[aten]") {
  const Operation empty;
  for (const auto& r : cost::rules) {
    INFO(std::string(r.name));
    REQUIRE(ops::aten::find_signature(r.name));
    Operation o = empty;
    o.name = std::string(r.name);
    CHECK_NOTHROW(r.rule(o, ops::aten::signature(r.name)));
  }
  for (const auto& r : ops::trace_rules::rules()) {
    INFO(std::string(r.name));
    REQUIRE(ops::aten::find_signature(r.name));
    Operation o = empty;
    o.name = std::string(r.name);
    CHECK_NOTHROW(r.query(o, ops::aten::signature(r.name), r.pass));
  }
}
