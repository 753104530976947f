#pragma once
// Where ATen operations keep their arguments, stated once. torch.profiler records an operation's
// arguments positionally, in the order of its ATen schema (keyword-only arguments after the `*` keep
// counting), so a rule that reads "is_causal" must know its position in that operation's schema. Both
// the counter-free work estimate (predict/op_cost.hpp) and the learned models' configurations
// (ops/trace_ops.hpp) read positions through this table, by argument name, never by a literal index.
//
// Transcribed from pytorch/pytorch aten/src/ATen/native/native_functions.yaml (PyTorch 2.x, the
// `- func:` line of each operation: argument names in order, types and defaults dropped).
// tests/ops/aten_signatures_test.cpp keeps the schema text and checks every position against it.
#include <array>
#include <cstddef>
#include <initializer_list>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>

namespace habitat::ops::aten {

struct Signature {
  std::string_view op;    // "aten::mm"
  std::string_view args;  // argument names in schema order, ", "-separated

  // Position of a named argument, or nullopt where the schema has no such argument.
  [[nodiscard]] constexpr std::optional<std::size_t> find(std::string_view name) const {
    std::size_t i = 0, from = 0;
    while (from <= args.size()) {
      const std::size_t comma = args.find(',', from);
      std::string_view a = args.substr(from, comma == std::string_view::npos ? std::string_view::npos : comma - from);
      while (!a.empty() && a.front() == ' ') a.remove_prefix(1);
      if (a == name) return i;
      if (comma == std::string_view::npos) break;
      from = comma + 1;
      ++i;
    }
    return std::nullopt;
  }
  // Position of an argument the schema must have; throws (or fails to compile in a constant expression)
  // for a name the schema lacks.
  [[nodiscard]] constexpr std::size_t at(std::string_view name) const {
    if (const auto i = find(name)) return *i;
    throw std::out_of_range(std::string(op) + " has no argument " + std::string(name));
  }
  // The first of several names the schema has (operand spellings differ between operations: the
  // convolution input is "input" in convolution and "self" in cudnn_convolution).
  [[nodiscard]] constexpr std::size_t first_of(std::initializer_list<std::string_view> names) const {
    for (auto n : names)
      if (const auto i = find(n)) return *i;
    throw std::out_of_range(std::string(op) + " has none of the arguments asked for");
  }
};

inline constexpr std::array signatures{
    // Matrix products.
    Signature{"aten::mm", "self, mat2"},
    Signature{"aten::bmm", "self, mat2"},
    Signature{"aten::addmm", "self, mat1, mat2, beta, alpha"},
    Signature{"aten::baddbmm", "self, batch1, batch2, beta, alpha"},
    Signature{"aten::addbmm", "self, batch1, batch2, beta, alpha"},
    Signature{"aten::linear", "input, weight, bias"},
    // Convolutions.
    Signature{"aten::_convolution", "input, weight, bias, stride, padding, dilation, transposed, output_padding, groups, "
                                    "benchmark, deterministic, cudnn_enabled, allow_tf32"},
    Signature{"aten::convolution", "input, weight, bias, stride, padding, dilation, transposed, output_padding, groups"},
    Signature{"aten::cudnn_convolution", "self, weight, padding, stride, dilation, groups, benchmark, deterministic, allow_tf32"},
    Signature{"aten::cudnn_convolution_transpose",
              "self, weight, padding, output_padding, stride, dilation, groups, benchmark, deterministic, allow_tf32"},
    Signature{"aten::_conv_depthwise2d", "self, weight, kernel_size, bias, stride, padding, dilation"},
    Signature{"aten::convolution_backward", "grad_output, input, weight, bias_sizes, stride, padding, dilation, transposed, "
                                            "output_padding, groups, output_mask"},
    // Scaled dot-product attention: the dispatching ops and the kernels they call.
    Signature{"aten::_scaled_dot_product_flash_attention", "query, key, value, dropout_p, is_causal, return_debug_mask, scale"},
    Signature{"aten::_scaled_dot_product_flash_attention_backward",
              "grad_out, query, key, value, out, logsumexp, cum_seq_q, cum_seq_k, max_q, max_k, dropout_p, is_causal, "
              "philox_seed, philox_offset, scale"},
    Signature{"aten::_scaled_dot_product_efficient_attention",
              "query, key, value, attn_bias, compute_log_sumexp, dropout_p, is_causal, scale"},
    Signature{"aten::_scaled_dot_product_efficient_attention_backward",
              "grad_out_, query, key, value, attn_bias, out, logsumexp, philox_seed, philox_offset, dropout_p, "
              "grad_input_mask, is_causal, scale"},
    Signature{"aten::_scaled_dot_product_cudnn_attention",
              "query, key, value, attn_bias, compute_log_sumexp, dropout_p, is_causal, return_debug_mask, scale"},
    Signature{"aten::_scaled_dot_product_cudnn_attention_backward",
              "grad_out, query, key, value, out, logsumexp, philox_seed, philox_offset, attn_bias, cum_seq_q, cum_seq_k, "
              "max_q, max_k, dropout_p, is_causal, scale"},
    Signature{"aten::_flash_attention_forward",
              "query, key, value, cum_seq_q, cum_seq_k, max_q, max_k, dropout_p, is_causal, return_debug_mask, scale, "
              "window_size_left, window_size_right, seqused_k, alibi_slopes"},
    Signature{"aten::_flash_attention_backward",
              "grad_out, query, key, value, out, logsumexp, cum_seq_q, cum_seq_k, max_q, max_k, dropout_p, is_causal, "
              "rng_state, unused, scale, window_size_left, window_size_right"},
    Signature{"aten::_efficient_attention_forward",
              "query, key, value, bias, cu_seqlens_q, cu_seqlens_k, max_seqlen_q, max_seqlen_k, dropout_p, "
              "custom_mask_type, compute_log_sumexp, scale, seqlen_k, window_size"},
    Signature{"aten::_efficient_attention_backward",
              "grad_out_, query, key, value, bias, out, cu_seqlens_q, cu_seqlens_k, max_seqlen_q, max_seqlen_k, logsumexp, "
              "dropout_p, philox_seed, philox_offset, custom_mask_type, bias_requires_grad, scale, num_splits_key, "
              "window_size, shared_storage_dqdkdv"},
    Signature{"aten::_cudnn_attention_forward",
              "query, key, value, attn_bias, cum_seq_q, cum_seq_k, max_q, max_k, compute_log_sumexp, dropout_p, is_causal, "
              "return_debug_mask, scale"},
    Signature{"aten::_cudnn_attention_backward",
              "grad_out, query, key, value, out, logsumexp, philox_seed, philox_offset, attn_bias, cum_seq_q, cum_seq_k, "
              "max_q, max_k, dropout_p, is_causal, scale"},
    // Recurrent networks.
    Signature{"aten::_cudnn_rnn", "input, weight, weight_stride0, weight_buf, hx, cx, mode, hidden_size, proj_size, "
                                  "num_layers, batch_first, dropout, train, bidirectional, batch_sizes, dropout_state"},
    Signature{"aten::_cudnn_rnn_backward",
              "input, weight, weight_stride0, weight_buf, hx, cx, output, grad_output, grad_hy, grad_cy, mode, hidden_size, "
              "proj_size, num_layers, batch_first, dropout, train, bidirectional, batch_sizes, dropout_state, reserve, "
              "output_mask"},
    // Embeddings.
    Signature{"aten::embedding", "weight, indices, padding_idx, scale_grad_by_freq, sparse"},
    Signature{"aten::embedding_dense_backward", "grad_output, indices, num_weights, padding_idx, scale_grad_by_freq"},
    // Normalizations.
    Signature{"aten::native_layer_norm", "input, normalized_shape, weight, bias, eps"},
    Signature{"aten::native_layer_norm_backward", "grad_out, input, normalized_shape, mean, rstd, weight, bias, output_mask"},
    Signature{"aten::native_batch_norm", "input, weight, bias, running_mean, running_var, training, momentum, eps"},
    Signature{"aten::native_batch_norm_backward",
              "grad_out, input, weight, running_mean, running_var, save_mean, save_invstd, train, eps, output_mask"},
    Signature{"aten::cudnn_batch_norm",
              "input, weight, bias, running_mean, running_var, training, exponential_average_factor, epsilon"},
    Signature{"aten::cudnn_batch_norm_backward",
              "input, grad_output, weight, running_mean, running_var, save_mean, save_var, epsilon, reserveSpace"},
    Signature{"aten::_batch_norm_impl_index",
              "input, weight, bias, running_mean, running_var, training, momentum, eps, cudnn_enabled"},
    Signature{"aten::native_group_norm", "input, weight, bias, N, C, HxW, group, eps"},
    Signature{"aten::native_group_norm_backward", "grad_out, input, mean, rstd, weight, N, C, HxW, group, output_mask"},
};

[[nodiscard]] constexpr const Signature* find_signature(std::string_view op) {
  for (const auto& s : signatures)
    if (s.op == op) return &s;
  return nullptr;
}

[[nodiscard]] constexpr const Signature& signature(std::string_view op) {
  if (const Signature* s = find_signature(op)) return *s;
  throw std::out_of_range("no ATen signature for " + std::string(op));
}

// The roles the rules read, by name, for each family of operations.

// A matrix product a @ b (+ bias): mm/bmm (self, mat2), addmm (mat1, mat2, bias self), baddbmm/addbmm
// (batch1, batch2, bias self), linear (input, weight^T, bias).
struct GemmArgs {
  std::size_t a, b;
  std::optional<std::size_t> bias;
};
[[nodiscard]] constexpr GemmArgs gemm_args(const Signature& s) {
  if (const auto m1 = s.find("mat1")) return {*m1, s.at("mat2"), s.at("self")};
  if (const auto b1 = s.find("batch1")) return {*b1, s.at("batch2"), s.at("self")};
  if (const auto w = s.find("weight")) return {s.at("input"), *w, s.at("bias")};
  return {s.at("self"), s.at("mat2"), std::nullopt};
}

// A convolution, forward or backward: where its input, weight and geometry are.
struct ConvArgs {
  std::size_t input, weight, stride, padding;
  std::optional<std::size_t> dilation, transposed, output_padding, groups;
  bool always_transposed = false;  // cudnn_convolution_transpose: transposed by name, no flag
};
[[nodiscard]] constexpr ConvArgs conv_args(const Signature& s) {
  return {s.first_of({"input", "self"}),
          s.at("weight"),
          s.at("stride"),
          s.at("padding"),
          s.find("dilation"),
          s.find("transposed"),
          s.find("output_padding"),
          s.find("groups"),
          s.op.ends_with("_transpose")};
}

// Whether an operation's name alone says it is a transposed convolution: conv_transposeNd calls convolution with
// the flag set, cudnn_convolution_transpose has no flag.
[[nodiscard]] constexpr bool named_transposed_convolution(std::string_view op) {
  return op.starts_with("aten::conv_transpose") || op == "aten::cudnn_convolution_transpose";
}

// Attention over query [B, H, L, D] and key [B, H, S, D]. is_causal is the flag where the schema has
// one; the mem-efficient kernels have custom_mask_type instead (0: none, 1/2: causal from the top-left
// or bottom-right).
struct AttentionArgs {
  std::size_t query, key;
  std::optional<std::size_t> is_causal, custom_mask_type;
};
[[nodiscard]] constexpr AttentionArgs attention_args(const Signature& s) {
  return {s.at("query"), s.at("key"), s.find("is_causal"), s.find("custom_mask_type")};
}

}  // namespace habitat::ops::aten
