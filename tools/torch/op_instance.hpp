#pragma once
// One operation instance on the GPU: its module or operands, built from a configuration, with the
// forward call and the tensors whose gradients a backward pass produces.
#include <torch/torch.h>

#include <functional>
#include <stdexcept>
#include <vector>

#include "habitat/ops/op_schema.hpp"

namespace habitat::collect {

struct OpInstance {
  std::function<torch::Tensor()> forward;
  std::vector<torch::Tensor> grads_of;  // leaves: inputs and parameters

  void reset_grads() {
    for (auto& t : grads_of) t.mutable_grad().reset();
  }
};

inline OpInstance make_instance(ops::OpKind k, const ops::Dims& d, ops::DataType t, const torch::Device& dev) {
  const auto opts = torch::TensorOptions().device(dev).dtype(t == ops::DataType::bf16 ? torch::kBFloat16 : torch::kFloat32);
  const auto i = [&](int idx) { return static_cast<std::int64_t>(d[idx]); };
  auto input = [&](std::vector<std::int64_t> shape) { return torch::randn(shape, opts).requires_grad_(true); };
  OpInstance op;
  auto adopt = [&](auto m) {
    m->to(dev, opts.dtype().toScalarType());
    for (auto& p : m->parameters()) op.grads_of.push_back(p);
    return m;
  };
  // A module applied to one input of the given shape: the common case.
  auto module_on = [&](auto m, std::vector<std::int64_t> shape) {
    auto x = input(std::move(shape));
    adopt(m)->train();
    op.grads_of.push_back(x);
    op.forward = [m, x]() mutable { return m->forward(x); };
  };
  using ops::OpKind;
  switch (k) {
    case OpKind::linear: module_on(torch::nn::Linear(i(3), i(2)), {i(0) * i(1), i(3)}); break;
    case OpKind::bmm: {
      auto a = input({i(0), i(1), i(3)}), b = input({i(0), i(3), i(2)});
      op.grads_of = {a, b};
      op.forward = [a, b] { return torch::bmm(a, b); };
      break;
    }
    case OpKind::conv2d:
      module_on(torch::nn::Conv2d(torch::nn::Conv2dOptions(i(1), i(2), i(3)).stride(i(5)).padding(i(6))), {i(0), i(1), i(4), i(4)});
      break;
    case OpKind::conv_transpose2d:
      module_on(torch::nn::ConvTranspose2d(torch::nn::ConvTranspose2dOptions(i(1), i(2), i(3)).stride(i(5)).padding(i(6))),
                {i(0), i(1), i(4), i(4)});
      break;
    case OpKind::batch_norm: module_on(torch::nn::BatchNorm2d(i(1)), {i(0), i(1), i(2), i(2)}); break;
    case OpKind::layer_norm: module_on(torch::nn::LayerNorm(torch::nn::LayerNormOptions({i(1)})), {i(0), i(1)}); break;
    case OpKind::lstm: {
      auto x = input({i(1), i(0), i(2)});  // [T, B, I]
      auto m = adopt(torch::nn::LSTM(torch::nn::LSTMOptions(i(2), i(3)).num_layers(i(4)).bidirectional(i(5) > 0)));
      m->flatten_parameters();
      op.grads_of.push_back(x);
      op.forward = [m, x]() mutable { return std::get<0>(m->forward(x)); };
      break;
    }
    case OpKind::sdpa: {
#if TORCH_VERSION_MAJOR >= 2
      auto q = input({i(0), i(1), i(2), i(3)}), kk = input({i(0), i(1), i(2), i(3)}), v = input({i(0), i(1), i(2), i(3)});
      op.grads_of = {q, kk, v};
      const bool causal = i(4) > 0;
      op.forward = [q, kk, v, causal] { return at::scaled_dot_product_attention(q, kk, v, {}, 0.0, causal); };
#else
      throw std::runtime_error("scaled dot-product attention needs LibTorch 2.0 or newer");
#endif
      break;
    }
    default: throw std::runtime_error(std::string(ops::schema(k).name) + " is not measured by habitat-collect");
  }
  return op;
}

}  // namespace habitat::collect
