// The Eigen and LibTorch backends give the same outputs for every shipped model (built only with LibTorch).
#include <catch2/catch.hpp>

#include <random>

#include "habitat/libtorch/torch_backend.hpp"
#include "habitat/mlp/eigen_backend.hpp"
#include "habitat/mlp/op_model.hpp"

using namespace habitat;

TEST_CASE("Eigen and LibTorch backends agree on every shipped model", "[mlp][libtorch]") {
  const std::string dir = std::string(HABITAT_FIXTURES) + "/../models";
  int models = 0;
  for (const auto& s : ops::op_schemas) {
    const auto w = mlp::load_weights(dir + "/" + std::string(s.name) + ".safetensors");
    const mlp::EigenBackend eigen(w);
    const libtorch::TorchBackend torch(w);
    std::mt19937 rng(7);
    std::vector<float> rows;
    const std::size_t n = 257;
    for (std::size_t r = 0; r < n; ++r)
      for (std::size_t f = 0; f < w.features.size(); ++f)
        rows.push_back(w.mean[f] + w.stdev[f] * std::normal_distribution<float>(0, 1.5f)(rng));
    const auto a = eigen.forward(rows, n), b = torch.forward(rows, n);
    REQUIRE(a.size() == n);
    REQUIRE(b.size() == n);
    for (std::size_t i = 0; i < n; ++i) CHECK(a[i] == Approx(b[i]).margin(1e-4).epsilon(1e-4));
    ++models;
  }
  CHECK(models == static_cast<int>(ops::op_schemas.size()));
}
