// The argument table of ops/aten_signatures.hpp against the schemas it was transcribed from. The
// `- func:` lines below are copied from pytorch/pytorch aten/src/ATen/native/native_functions.yaml
// (PyTorch 2.x; the SDPA entries as of the 2.5+ layout with _scaled_dot_product_cudnn_attention and
// _cudnn_attention_forward/backward). Every argument's position in the table must be its position here.
#include <catch2/catch.hpp>

#include <algorithm>
#include <string>
#include <string_view>
#include <vector>

#include "habitat/ops/aten_signatures.hpp"

using namespace habitat::ops;

namespace {

constexpr std::string_view schemas[] = {
    "mm(Tensor self, Tensor mat2) -> Tensor",
    "bmm(Tensor self, Tensor mat2) -> Tensor",
    "addmm(Tensor self, Tensor mat1, Tensor mat2, *, Scalar beta=1, Scalar alpha=1) -> Tensor",
    "baddbmm(Tensor self, Tensor batch1, Tensor batch2, *, Scalar beta=1, Scalar alpha=1) -> Tensor",
    "addbmm(Tensor self, Tensor batch1, Tensor batch2, *, Scalar beta=1, Scalar alpha=1) -> Tensor",
    "linear(Tensor input, Tensor weight, Tensor? bias=None) -> Tensor",
    "_convolution(Tensor input, Tensor weight, Tensor? bias, SymInt[] stride, SymInt[] padding, SymInt[] dilation, bool "
    "transposed, SymInt[] output_padding, SymInt groups, bool benchmark, bool deterministic, bool cudnn_enabled, bool "
    "allow_tf32) -> Tensor",
    "convolution(Tensor input, Tensor weight, Tensor? bias, SymInt[] stride, SymInt[] padding, SymInt[] dilation, bool "
    "transposed, SymInt[] output_padding, SymInt groups) -> Tensor",
    "cudnn_convolution(Tensor self, Tensor weight, SymInt[] padding, SymInt[] stride, SymInt[] dilation, SymInt groups, bool "
    "benchmark, bool deterministic, bool allow_tf32) -> Tensor",
    "cudnn_convolution_transpose(Tensor self, Tensor weight, SymInt[] padding, SymInt[] output_padding, SymInt[] stride, "
    "SymInt[] dilation, SymInt groups, bool benchmark, bool deterministic, bool allow_tf32) -> Tensor",
    "_conv_depthwise2d(Tensor self, Tensor weight, SymInt[2] kernel_size, Tensor? bias, SymInt[2] stride, SymInt[2] padding, "
    "SymInt[2] dilation) -> Tensor",
    "convolution_backward(Tensor grad_output, Tensor input, Tensor weight, SymInt[]? bias_sizes, SymInt[] stride, SymInt[] "
    "padding, SymInt[] dilation, bool transposed, SymInt[] output_padding, SymInt groups, bool[3] output_mask) -> (Tensor, "
    "Tensor, Tensor)",
    "_scaled_dot_product_flash_attention(Tensor query, Tensor key, Tensor value, float dropout_p=0.0, bool is_causal=False, "
    "bool return_debug_mask=False, *, float? scale=None) -> (Tensor output, Tensor logsumexp, Tensor cum_seq_q, Tensor "
    "cum_seq_k, SymInt max_q, SymInt max_k, Tensor rng_state, Tensor unused, Tensor debug_attn_mask)",
    "_scaled_dot_product_flash_attention_backward(Tensor grad_out, Tensor query, Tensor key, Tensor value, Tensor out, Tensor "
    "logsumexp, Tensor cum_seq_q, Tensor cum_seq_k, SymInt max_q, SymInt max_k, float dropout_p, bool is_causal, Tensor "
    "philox_seed, Tensor philox_offset, *, float? scale=None) -> (Tensor grad_query, Tensor grad_key, Tensor grad_value)",
    "_scaled_dot_product_efficient_attention(Tensor query, Tensor key, Tensor value, Tensor? attn_bias, bool "
    "compute_log_sumexp, float dropout_p=0.0, bool is_causal=False, *, float? scale=None) -> (Tensor output, Tensor "
    "log_sumexp, Tensor philox_seed, Tensor philox_offset)",
    "_scaled_dot_product_efficient_attention_backward(Tensor grad_out_, Tensor query, Tensor key, Tensor value, Tensor "
    "attn_bias, Tensor out, Tensor logsumexp, Tensor philox_seed, Tensor philox_offset, float dropout_p, bool[4] "
    "grad_input_mask, bool is_causal=False, *, float? scale=None) -> (Tensor, Tensor, Tensor, Tensor)",
    "_scaled_dot_product_cudnn_attention(Tensor query, Tensor key, Tensor value, Tensor? attn_bias, bool compute_log_sumexp, "
    "float dropout_p=0.0, bool is_causal=False, bool return_debug_mask=False, *, float? scale=None) -> (Tensor output, Tensor "
    "logsumexp, Tensor cum_seq_q, Tensor cum_seq_k, SymInt max_q, SymInt max_k, Tensor philox_seed, Tensor philox_offset, "
    "Tensor debug_attn_mask)",
    "_scaled_dot_product_cudnn_attention_backward(Tensor grad_out, Tensor query, Tensor key, Tensor value, Tensor out, Tensor "
    "logsumexp, Tensor philox_seed, Tensor philox_offset, Tensor attn_bias, Tensor cum_seq_q, Tensor cum_seq_k, SymInt max_q, "
    "SymInt max_k, float dropout_p, bool is_causal, *, float? scale=None) -> (Tensor, Tensor, Tensor)",
    "_flash_attention_forward(Tensor query, Tensor key, Tensor value, Tensor? cum_seq_q, Tensor? cum_seq_k, SymInt max_q, "
    "SymInt max_k, float dropout_p, bool is_causal, bool return_debug_mask, *, float? scale=None, SymInt? "
    "window_size_left=None, SymInt? window_size_right=None, Tensor? seqused_k=None, Tensor? alibi_slopes=None) -> (Tensor "
    "output, Tensor softmax_logsumexp, Tensor rng_state, Tensor unused, Tensor debug_attn_mask)",
    "_flash_attention_backward(Tensor grad_out, Tensor query, Tensor key, Tensor value, Tensor out, Tensor logsumexp, Tensor "
    "cum_seq_q, Tensor cum_seq_k, SymInt max_q, SymInt max_k, float dropout_p, bool is_causal, Tensor rng_state, Tensor "
    "unused, *, float? scale=None, SymInt? window_size_left=None, SymInt? window_size_right=None) -> (Tensor, Tensor, Tensor)",
    "_efficient_attention_forward(Tensor query, Tensor key, Tensor value, Tensor? bias, Tensor? cu_seqlens_q, Tensor? "
    "cu_seqlens_k, SymInt? max_seqlen_q, SymInt? max_seqlen_k, float dropout_p, int custom_mask_type, bool "
    "compute_log_sumexp=False, *, float? scale=None, Tensor? seqlen_k=None, int? window_size=None) -> (Tensor output, Tensor "
    "logsumexp, Tensor philox_seed, Tensor philox_offset, SymInt max_seqlen_batch_q, SymInt max_seqlen_batch_k)",
    "_efficient_attention_backward(Tensor grad_out_, Tensor query, Tensor key, Tensor value, Tensor? bias, Tensor out, "
    "Tensor? cu_seqlens_q, Tensor? cu_seqlens_k, SymInt max_seqlen_q, SymInt max_seqlen_k, Tensor logsumexp, float "
    "dropout_p, Tensor philox_seed, Tensor philox_offset, int custom_mask_type, bool bias_requires_grad, *, float? "
    "scale=None, int? num_splits_key=None, int? window_size=None, bool shared_storage_dqdkdv=False) -> (Tensor, Tensor, "
    "Tensor, Tensor)",
    "_cudnn_attention_forward(Tensor query, Tensor key, Tensor value, Tensor? attn_bias, Tensor? cum_seq_q, Tensor? "
    "cum_seq_k, SymInt max_q, SymInt max_k, bool compute_log_sumexp, float dropout_p=0.0, bool is_causal=False, bool "
    "return_debug_mask=False, *, float? scale=None) -> (Tensor output, Tensor logsumexp, Tensor cum_seq_q, Tensor cum_seq_k, "
    "SymInt max_q, SymInt max_k, Tensor philox_seed, Tensor philox_offset, Tensor debug_attn_mask)",
    "_cudnn_attention_backward(Tensor grad_out, Tensor query, Tensor key, Tensor value, Tensor out, Tensor logsumexp, Tensor "
    "philox_seed, Tensor philox_offset, Tensor attn_bias, Tensor cum_seq_q, Tensor cum_seq_k, SymInt max_q, SymInt max_k, "
    "float dropout_p, bool is_causal, *, float? scale=None) -> (Tensor, Tensor, Tensor)",
    "_cudnn_rnn(Tensor input, Tensor[] weight, int weight_stride0, Tensor? weight_buf, Tensor hx, Tensor? cx, int mode, "
    "SymInt hidden_size, SymInt proj_size, int num_layers, bool batch_first, float dropout, bool train, bool bidirectional, "
    "SymInt[] batch_sizes, Tensor? dropout_state) -> (Tensor, Tensor, Tensor, Tensor, Tensor)",
    "_cudnn_rnn_backward(Tensor input, Tensor[] weight, int weight_stride0, Tensor weight_buf, Tensor hx, Tensor? cx, Tensor "
    "output, Tensor? grad_output, Tensor? grad_hy, Tensor? grad_cy, int mode, SymInt hidden_size, SymInt proj_size, int "
    "num_layers, bool batch_first, float dropout, bool train, bool bidirectional, SymInt[] batch_sizes, Tensor? "
    "dropout_state, Tensor reserve, bool[4] output_mask) -> (Tensor, Tensor, Tensor, Tensor[])",
    "embedding(Tensor weight, Tensor indices, SymInt padding_idx=-1, bool scale_grad_by_freq=False, bool sparse=False) -> "
    "Tensor",
    "embedding_dense_backward(Tensor grad_output, Tensor indices, SymInt num_weights, SymInt padding_idx, bool "
    "scale_grad_by_freq) -> Tensor",
    "native_layer_norm(Tensor input, SymInt[] normalized_shape, Tensor? weight, Tensor? bias, float eps) -> (Tensor, Tensor, "
    "Tensor)",
    "native_layer_norm_backward(Tensor grad_out, Tensor input, SymInt[] normalized_shape, Tensor mean, Tensor rstd, Tensor? "
    "weight, Tensor? bias, bool[3] output_mask) -> (Tensor, Tensor, Tensor)",
    "native_batch_norm(Tensor input, Tensor? weight, Tensor? bias, Tensor? running_mean, Tensor? running_var, bool training, "
    "float momentum, float eps) -> (Tensor, Tensor, Tensor)",
    "native_batch_norm_backward(Tensor grad_out, Tensor input, Tensor? weight, Tensor? running_mean, Tensor? running_var, "
    "Tensor? save_mean, Tensor? save_invstd, bool train, float eps, bool[3] output_mask) -> (Tensor, Tensor, Tensor)",
    "cudnn_batch_norm(Tensor input, Tensor weight, Tensor? bias, Tensor? running_mean, Tensor? running_var, bool training, "
    "float exponential_average_factor, float epsilon) -> (Tensor, Tensor, Tensor, Tensor)",
    "cudnn_batch_norm_backward(Tensor input, Tensor grad_output, Tensor weight, Tensor? running_mean, Tensor? running_var, "
    "Tensor? save_mean, Tensor? save_var, float epsilon, Tensor reserveSpace) -> (Tensor, Tensor, Tensor)",
    "_batch_norm_impl_index(Tensor input, Tensor? weight, Tensor? bias, Tensor? running_mean, Tensor? running_var, bool "
    "training, float momentum, float eps, bool cudnn_enabled) -> (Tensor, Tensor, Tensor, Tensor, int)",
    "native_group_norm(Tensor input, Tensor? weight, Tensor? bias, SymInt N, SymInt C, SymInt HxW, int group, float eps) -> "
    "(Tensor, Tensor, Tensor)",
    "native_group_norm_backward(Tensor grad_out, Tensor input, Tensor mean, Tensor rstd, Tensor? weight, SymInt N, SymInt C, "
    "SymInt HxW, int group, bool[3] output_mask) -> (Tensor, Tensor, Tensor)",
};

struct Parsed {
  std::string op;
  std::vector<std::string> args;  // names in order, the keyword-only marker dropped
};

// "name(Type a, Type b=dflt, *, Type c) -> ..." -> {"aten::name", {a, b, c}}
Parsed parse(std::string_view schema) {
  Parsed p;
  const auto open = schema.find('(');
  p.op = "aten::" + std::string(schema.substr(0, open));
  int depth = 0;
  std::string cur;
  auto flush = [&] {
    std::string a = cur.substr(0, cur.find('='));  // drop the default
    while (!a.empty() && a.back() == ' ') a.pop_back();
    const auto space = a.rfind(' ');
    const std::string name = space == std::string::npos ? a : a.substr(space + 1);
    if (!name.empty() && name != "*") p.args.push_back(name);
    cur.clear();
  };
  for (std::size_t i = open + 1; i < schema.size(); ++i) {
    const char c = schema[i];
    if (c == '(' || c == '[') ++depth;
    if (c == ']') --depth;
    if (c == ')' && depth-- == 0) break;
    if (c == ',' && depth == 0) flush();
    else cur += c;
  }
  flush();
  return p;
}

}  // namespace

TEST_CASE("every argument position in the ATen table matches native_functions.yaml", "[aten]") {
  for (std::string_view text : schemas) {
    const Parsed p = parse(text);
    INFO(p.op);
    const aten::Signature* sig = aten::find_signature(p.op);
    REQUIRE(sig);
    for (std::size_t i = 0; i < p.args.size(); ++i) {
      INFO(p.args[i]);
      CHECK(sig->find(p.args[i]) == std::optional<std::size_t>(i));
    }
    CHECK_FALSE(sig->find("no_such_argument"));
    // No extra names in the table beyond the schema.
    const auto commas = std::count(sig->args.begin(), sig->args.end(), ',');
    CHECK(std::size_t(commas + 1) == p.args.size());
  }
}

TEST_CASE("every op in the ATen table has its schema kept in this test", "[aten]") {
  for (const auto& sig : aten::signatures) {
    bool found = false;
    for (std::string_view text : schemas) found = found || parse(text).op == sig.op;
    INFO(std::string(sig.op));
    CHECK(found);
  }
}

TEST_CASE("the schema parser reads names, not types or defaults", "[aten]") {
  const Parsed p = parse("f(Tensor self, int[] dim=[-2,-1], *, float? scale=None) -> Tensor");
  CHECK(p.op == "aten::f");
  CHECK(p.args == std::vector<std::string>{"self", "dim", "scale"});
}

TEST_CASE("named positions the issue was about", "[aten]") {
  // is_causal of the cuDNN attention op is argument 6; 4 is compute_log_sumexp (true when training).
  static_assert(aten::signature("aten::_scaled_dot_product_cudnn_attention").at("is_causal") == 6);
  static_assert(aten::signature("aten::_scaled_dot_product_cudnn_attention").at("compute_log_sumexp") == 4);
  static_assert(aten::signature("aten::_cudnn_attention_forward").at("is_causal") == 10);
  static_assert(aten::signature("aten::_flash_attention_forward").at("is_causal") == 8);
  static_assert(aten::attention_args(aten::signature("aten::_flash_attention_backward")).query == 1);
  CHECK_THROWS_AS(aten::signature("aten::mm").at("is_causal"), std::out_of_range);
  CHECK_THROWS_AS(aten::signature("aten::no_such_op"), std::out_of_range);
}
