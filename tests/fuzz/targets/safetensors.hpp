#pragma once
// The safetensors reader and the model loader behind it: refusals only as habitat::error; a model that
// loads predicts a finite positive time (or steps aside) for an ordinary query.
#include "fuzz_common.hpp"
#include "habitat/device/catalog.hpp"
#include "habitat/mlp/eigen_backend.hpp"
#include "habitat/mlp/op_model.hpp"

namespace habitat::fuzz {

inline void safetensors(const std::uint8_t* data, std::size_t size) {
  static const Catalog catalog = Catalog::builtin();
  const ScratchFile input(data, size, ".safetensors");
  try {
    const auto file = mlp::read_safetensors(input.path());
    for (const auto& [name, t] : file.tensors)
      for (float x : t.data) require_finite(x, "a weight");
    const mlp::OpModel<mlp::EigenBackend> model(mlp::load_weights(input.path()));
    mlp::OpQuery q{model.weights().op, ops::Pass::forward, ops::DataType::fp32, {}};
    q.dims.fill(64);
    for (const char* gpu : {"H100 SXM", "T4"})
      for (const auto& ms : model.predict_checked(std::span(&q, 1), catalog.at(gpu)))
        if (ms) require(std::isfinite(*ms) && *ms > 0, "a prediction that is not a finite positive time");
  } catch (const habitat::error&) {
  }
}

}  // namespace habitat::fuzz
