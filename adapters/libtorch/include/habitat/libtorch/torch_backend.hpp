#pragma once
// The optional LibTorch MLP backend (CPU inference through torch::nn). The header names no Torch type;
// LibTorch stays inside the compiled library (habitat::libtorch), built only where LibTorch is found.
#include <memory>
#include <span>
#include <vector>

#include "habitat/mlp/backend.hpp"

namespace habitat::libtorch {

class TorchBackend {
 public:
  static constexpr const char* name = "libtorch";
  explicit TorchBackend(const mlp::MlpWeights& w);
  ~TorchBackend();
  TorchBackend(TorchBackend&&) noexcept;
  TorchBackend& operator=(TorchBackend&&) noexcept;

  [[nodiscard]] std::vector<float> forward(std::span<const float> rows, std::size_t n) const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

static_assert(MlpBackend<TorchBackend>);

}  // namespace habitat::libtorch
