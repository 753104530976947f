#pragma once
// What an MLP backend is: built from MlpWeights, it maps a batch of raw feature rows (row-major,
// features.size() columns) to the network's raw outputs, one per row. Standardization is the
// backend's job so each can fuse it.
#include <concepts>
#include <span>
#include <vector>

#include "habitat/mlp/weights.hpp"

namespace habitat {

template <class B>
concept MlpBackend = std::constructible_from<B, const mlp::MlpWeights&> &&
                     requires(const B& b, std::span<const float> rows, std::size_t n) {
                       { b.forward(rows, n) } -> std::same_as<std::vector<float>>;
                       { B::name } -> std::convertible_to<const char*>;
                     };

}  // namespace habitat
