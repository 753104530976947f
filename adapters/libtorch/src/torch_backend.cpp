// LibTorch side of TorchBackend: the layers as a torch::nn::Sequential, evaluated without autograd.
#include "habitat/libtorch/torch_backend.hpp"

#include <torch/torch.h>

#include "habitat/error.hpp"

namespace habitat::libtorch {

struct TorchBackend::Impl {
  torch::nn::Sequential net;
  torch::Tensor mean, stdev;
  std::int64_t features = 0;
};

namespace {
torch::Tensor tensor_of(const std::vector<float>& v, std::vector<std::int64_t> shape) {
  return torch::from_blob(const_cast<float*>(v.data()), shape, torch::kFloat32).clone();
}
}  // namespace

TorchBackend::TorchBackend(const mlp::MlpWeights& w) : impl_(std::make_unique<Impl>()) {
  impl_->features = static_cast<std::int64_t>(w.features.size());
  impl_->mean = tensor_of(w.mean, {impl_->features});
  impl_->stdev = tensor_of(w.stdev, {impl_->features});
  for (std::size_t l = 0; l < w.layers.size(); ++l) {
    const auto& layer = w.layers[l];
    torch::nn::Linear lin(layer.in, layer.out);
    torch::NoGradGuard ng;
    lin->weight.copy_(tensor_of(layer.weight, {layer.out, layer.in}));
    lin->bias.copy_(tensor_of(layer.bias, {layer.out}));
    impl_->net->push_back(lin);
    if (l + 1 < w.layers.size()) impl_->net->push_back(torch::nn::ReLU());
  }
  impl_->net->eval();
}

TorchBackend::~TorchBackend() = default;
TorchBackend::TorchBackend(TorchBackend&&) noexcept = default;
TorchBackend& TorchBackend::operator=(TorchBackend&&) noexcept = default;

std::vector<float> TorchBackend::forward(std::span<const float> rows, std::size_t n) const {
  if (rows.size() != n * static_cast<std::size_t>(impl_->features))
    throw error("TorchBackend: feature rows do not match the model's features");
  torch::NoGradGuard ng;
  auto x = torch::from_blob(const_cast<float*>(rows.data()), {static_cast<std::int64_t>(n), impl_->features}, torch::kFloat32);
  auto y = impl_->net->forward((x - impl_->mean) / impl_->stdev).reshape({-1}).contiguous();
  return {y.data_ptr<float>(), y.data_ptr<float>() + y.numel()};
}

}  // namespace habitat::libtorch
