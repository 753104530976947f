#pragma once
// The default MLP backend: Eigen, header-only, the whole batch through each layer as one matrix product.
#include <Eigen/Dense>

#include <span>
#include <vector>

#include "habitat/error.hpp"
#include "habitat/mlp/backend.hpp"

namespace habitat::mlp {

class EigenBackend {
 public:
  static constexpr const char* name = "eigen";

  explicit EigenBackend(const MlpWeights& w) : nf_(static_cast<int>(w.features.size())) {
    mean_ = Eigen::Map<const Eigen::VectorXf>(w.mean.data(), nf_);
    inv_std_ = Eigen::Map<const Eigen::VectorXf>(w.stdev.data(), nf_).cwiseInverse();
    for (const auto& l : w.layers) {
      weights_.push_back(Eigen::Map<const RowMatrix>(l.weight.data(), l.out, l.in));
      biases_.push_back(Eigen::Map<const Eigen::VectorXf>(l.bias.data(), l.out));
    }
  }

  [[nodiscard]] std::vector<float> forward(std::span<const float> rows, std::size_t n) const {
    if (rows.size() != n * static_cast<std::size_t>(nf_)) throw error("EigenBackend: feature rows do not match the model's features");
    // Columns are samples: X is features x n.
    Eigen::MatrixXf x = Eigen::Map<const Eigen::MatrixXf>(rows.data(), nf_, static_cast<Eigen::Index>(n));
    x = ((x.colwise() - mean_).array().colwise() * inv_std_.array()).matrix();
    for (std::size_t l = 0; l < weights_.size(); ++l) {
      Eigen::MatrixXf y = weights_[l] * x;
      y.colwise() += biases_[l];
      x = l + 1 < weights_.size() ? Eigen::MatrixXf(y.cwiseMax(0.0f)) : y;
    }
    return {x.data(), x.data() + x.size()};
  }

 private:
  using RowMatrix = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
  int nf_;
  Eigen::VectorXf mean_, inv_std_;
  std::vector<Eigen::MatrixXf> weights_;
  std::vector<Eigen::VectorXf> biases_;
};

static_assert(MlpBackend<EigenBackend>);

}  // namespace habitat::mlp
