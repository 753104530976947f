#include <catch2/catch.hpp>

#include "habitat/predict/op_cost.hpp"

using namespace habitat;

namespace {
Operation op(std::string name, std::vector<TensorArg> inputs) {
  Operation o;
  o.name = std::move(name);
  o.inputs = std::move(inputs);
  return o;
}
TensorArg t(std::vector<std::int64_t> s, std::string dtype = "float") { return {std::move(s), std::move(dtype), ""}; }
TensorArg v(std::string value) { return {{}, "ScalarList", std::move(value)}; }
}  // namespace

TEST_CASE("matmul family: 2MNK FLOPs and operand bytes", "[cost]") {
  const auto mm = estimate_op_cost(op("aten::mm", {t({64, 128}), t({128, 32})}));
  REQUIRE(mm);
  CHECK(mm->flops == Approx(2.0 * 64 * 128 * 32));
  CHECK(mm->bytes == Approx(4.0 * (64 * 128 + 128 * 32 + 64 * 32)));
  CHECK(mm->math);
  const auto bmm = estimate_op_cost(op("aten::bmm", {t({8, 64, 128}, "c10::BFloat16"), t({8, 128, 32}, "c10::BFloat16")}));
  CHECK(bmm->flops == Approx(8 * 2.0 * 64 * 128 * 32));
  CHECK(bmm->bytes == Approx(8 * 2.0 * (64 * 128 + 128 * 32 + 64 * 32)));
  const auto addmm = estimate_op_cost(op("aten::addmm", {t({32}), t({64, 128}), t({128, 32})}));
  CHECK(addmm->flops == Approx(mm->flops));
  const auto linear = estimate_op_cost(op("aten::linear", {t({4, 16, 128}), t({32, 128}), t({32})}));
  CHECK(linear->flops == Approx(mm->flops));
}

TEST_CASE("convolution FLOPs follow the output size and stride and groups", "[cost]") {
  // ResNet stem: 3->64, 7x7, stride 2, padding 3 on 224x224 -> 112x112.
  const auto c = estimate_op_cost(op("aten::convolution", {t({1, 3, 224, 224}), t({64, 3, 7, 7}), t({}), v("[2, 2]"), v("[3, 3]"),
                                                           v("[1, 1]"), v("False"), v("[0, 0]"), v("1")}));
  REQUIRE(c);
  CHECK(c->flops == Approx(2.0 * 64 * 112 * 112 * 3 * 7 * 7));
  // Depthwise 3x3 (groups = channels): weight [32, 1, 3, 3].
  const auto dw = estimate_op_cost(op("aten::_convolution", {t({1, 32, 56, 56}), t({32, 1, 3, 3}), t({}), v("[1, 1]"), v("[1, 1]"),
                                                              v("[1, 1]"), v("False"), v("[0, 0]"), v("32")}));
  CHECK(dw->flops == Approx(2.0 * 32 * 56 * 56 * 9));
  // Transposed 4x4 stride 2 pad 1 doubles the spatial size: FLOPs counted on the input pixels.
  const auto tr = estimate_op_cost(op("aten::convolution", {t({2, 64, 8, 8}), t({64, 32, 4, 4}), t({}), v("[2, 2]"), v("[1, 1]"),
                                                            v("[1, 1]"), v("True"), v("[0, 0]"), v("1")}));
  CHECK(tr->flops == Approx(2.0 * 2 * 64 * 32 * 16 * 64));
  CHECK(tr->bytes == Approx(4.0 * (2 * 64 * 64 + 64 * 32 * 16 + 2 * 32 * 16 * 16)));
}

TEST_CASE("a convolution's floor counts the fewest FLOPs a fast algorithm needs: Winograd, FFT, unit stride only", "[cost]") {
  CHECK(ops::fast_conv_flops_share(9, true) == Approx(2.0 / 9));    // FFT's least, under Winograd F(4x4, 3x3)'s quarter
  CHECK(ops::fast_conv_flops_share(9, true) < ops::winograd_3x3_flops_share);
  CHECK(ops::fast_conv_flops_share(49, true) == Approx(2.0 / 49));  // FFT: 2 multiply-adds per output and channel pair at least
  // On cuDNN's grids: 3x3 on 14 x 14 in a 16 x 16 grid, 5x5 on 28 x 28 in a 32 x 32 one.
  CHECK(ops::fft_conv_flops_share(14, 3, 16) == Approx(4.0 * 16 * 9 / (196 * 9)));
  CHECK(ops::fft_conv_flops_share(28, 5, 32) == Approx(4.0 * 32 * 17 / (784 * 25)));
  CHECK(ops::fft_conv_flops_share(28, 5, 32) >= 2.0 / 25);
  CHECK(ops::fast_conv_flops_share(1, true) == 1);                   // 1x1: nothing is faster than the GEMM
  CHECK(ops::fast_conv_flops_share(9, false) == 1);                  // strided: direct only
  // From the ATen arguments: the ResNet stem (7x7, stride 2) keeps every FLOP, a 3x3 stride-1 layer 2/9.
  const auto stem = estimate_op_cost(op("aten::convolution", {t({1, 3, 224, 224}), t({64, 3, 7, 7}), t({}), v("[2, 2]"), v("[3, 3]"),
                                                              v("[1, 1]"), v("False"), v("[0, 0]"), v("1")}));
  const auto body = estimate_op_cost(op("aten::convolution", {t({1, 64, 56, 56}), t({64, 64, 3, 3}), t({}), v("[1, 1]"), v("[1, 1]"),
                                                              v("[1, 1]"), v("False"), v("[0, 0]"), v("1")}));
  REQUIRE((stem && body));
  CHECK(stem->floor_flops_share == 1);
  CHECK(body->floor_flops_share == Approx(2.0 / 9));
}

TEST_CASE("attention: 4 B H L S D FLOPs and halved when causal and x2.5 backward", "[cost]") {
  const TensorArg q = t({2, 4, 128, 64}, "c10::BFloat16");
  const auto f = estimate_op_cost(op("aten::_scaled_dot_product_flash_attention", {q, q, q, v("0."), v("False")}));
  CHECK(f->flops == Approx(4.0 * 2 * 4 * 128 * 128 * 64));
  const auto causal = estimate_op_cost(op("aten::_scaled_dot_product_flash_attention", {q, q, q, v("0."), v("True")}));
  CHECK(causal->flops == Approx(f->flops / 2));
  const auto b = estimate_op_cost(op("aten::_flash_attention_backward", {q, q, q, q, q}));
  CHECK(b->flops == Approx(f->flops * 2.5));
}

TEST_CASE("element-wise traffic: in-place and copies and fills are counted once", "[cost]") {
  const TensorArg x = t({1000});
  CHECK(estimate_op_cost(op("aten::add", {x, x, v("1")}))->bytes == Approx(3 * 4000.0));
  CHECK(estimate_op_cost(op("aten::add_", {x, x, v("1")}))->bytes == Approx(3 * 4000.0));
  CHECK(estimate_op_cost(op("aten::copy_", {t({1000}, "c10::BFloat16"), x}))->bytes == Approx(2000.0 + 4000.0));
  CHECK(estimate_op_cost(op("aten::fill_", {x, v("0")}))->bytes == Approx(4000.0));
  CHECK(estimate_op_cost(op("aten::sum", {x}))->bytes == Approx(4000.0));
  CHECK_FALSE(estimate_op_cost(op("aten::_foreach_add_", {{{}, "TensorList", ""}})));  // no shapes recorded
}

// Regression: is_causal of _scaled_dot_product_cudnn_attention is argument 6; argument 4 is
// compute_log_sumexp, true in training, which used to halve every training attention's FLOPs.
TEST_CASE("cuDNN attention in training: full FLOPs unless is_causal, by the ATen signature", "[cost][aten]") {
  const TensorArg q = t({2, 4, 128, 64}, "c10::BFloat16");
  const TensorArg none{{}, "", ""};
  const double full = 4.0 * 2 * 4 * 128 * 128 * 64;
  // (query, key, value, attn_bias, compute_log_sumexp, dropout_p, is_causal, return_debug_mask, *, scale)
  const auto train = estimate_op_cost(
      op("aten::_scaled_dot_product_cudnn_attention", {q, q, q, none, v("True"), v("0."), v("False"), v("False"), none}));
  REQUIRE(train);
  CHECK(train->flops == Approx(full));
  const auto causal = estimate_op_cost(
      op("aten::_scaled_dot_product_cudnn_attention", {q, q, q, none, v("True"), v("0."), v("True"), v("False"), none}));
  CHECK(causal->flops == Approx(full / 2));
  // _cudnn_attention_forward(query, key, value, attn_bias, cum_seq_q, cum_seq_k, max_q, max_k, compute_log_sumexp,
  // dropout_p, is_causal, ...): is_causal is 10, not 8.
  const auto fwd = estimate_op_cost(op("aten::_cudnn_attention_forward", {q, q, q, none, none, none, v("128"), v("128"),
                                                                          v("True"), v("0."), v("False"), v("False"), none}));
  CHECK(fwd->flops == Approx(full));
  // _flash_attention_forward(query, key, value, cum_seq_q, cum_seq_k, max_q, max_k, dropout_p, is_causal, ...): 8, not 7.
  const auto flash = estimate_op_cost(op("aten::_flash_attention_forward",
                                         {q, q, q, none, none, v("128"), v("128"), v("0.1"), v("True"), v("False"), none}));
  CHECK(flash->flops == Approx(full / 2));
  // _efficient_attention_forward: custom_mask_type (argument 9) 1 is causal from the top-left.
  const auto eff = estimate_op_cost(op("aten::_efficient_attention_forward",
                                       {q, q, q, none, none, none, none, none, v("0."), v("1"), v("True"), none}));
  CHECK(eff->flops == Approx(full / 2));
}
