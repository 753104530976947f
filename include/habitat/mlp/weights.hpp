#pragma once
// One trained operation model as a backend needs it: standardization, the layer stack (ReLU between
// layers, none after the last), and how its output becomes milliseconds.
#include <cmath>
#include <string>
#include <vector>

#include "habitat/detail/csv.hpp"
#include "habitat/mlp/safetensors.hpp"
#include "habitat/ops/op_schema.hpp"

namespace habitat::mlp {

struct Layer {
  int in = 0, out = 0;
  std::vector<float> weight;  // out x in, row-major (PyTorch's nn.Linear layout)
  std::vector<float> bias;    // out
};

struct MlpWeights {
  std::string file;
  ops::OpKind op{};
  std::vector<std::string> features;
  std::vector<float> mean, stdev;
  std::vector<Layer> layers;
  bool residual = true;  // output is log(ms / (roofline + floor)); else ms directly
  double floor_ms = 0.01;
  std::string trained_on, label;
};

inline constexpr const char* mlp_schema = "habitat.mlp/1";

[[nodiscard]] inline MlpWeights load_weights(const std::string& path) {
  const auto f = read_safetensors(path);
  if (f.meta("schema") != mlp_schema)
    throw make_error(path, "__metadata__.schema", "'" + f.meta("schema") + "', expected " + mlp_schema);
  MlpWeights w;
  w.file = path;
  const auto op = ops::op_from_name(f.meta("op"));
  if (!op) throw make_error(path, "__metadata__.op", "unknown operation '" + f.meta("op") + "'");
  w.op = *op;
  w.features = habitat::detail::split(f.meta("features"), ',');
  w.residual = f.meta("target") == "residual";
  if (!w.residual && f.meta("target") != "direct") throw make_error(path, "__metadata__.target", "'" + f.meta("target") + "'");
  const auto floor = habitat::detail::parse_csv_number(f.meta("floor_ms"));
  if (!floor || !(*floor >= 0 && *floor < 1e6))
    throw make_error(path, "__metadata__.floor_ms", "'" + f.meta("floor_ms") + "' is not a time in ms (0 to 1e6)");
  w.floor_ms = *floor;
  w.trained_on = f.metadata.count("trained_on") ? f.meta("trained_on") : "";
  w.label = f.metadata.count("label") ? f.meta("label") : "";
  w.mean = f.tensor("input_mean").data;
  w.stdev = f.tensor("input_std").data;
  const auto nf = static_cast<int>(w.features.size());
  if (static_cast<int>(w.mean.size()) != nf || static_cast<int>(w.stdev.size()) != nf)
    throw make_error(path, "input_mean/input_std", "size differs from the " + std::to_string(nf) + " features");
  // Features are divided by their standard deviation: a zero, denormal or non-finite one is a broken model.
  for (int i = 0; i < nf; ++i)
    if (!std::isnormal(w.stdev[static_cast<std::size_t>(i)]) || w.stdev[static_cast<std::size_t>(i)] <= 0 ||
        !std::isfinite(w.mean[static_cast<std::size_t>(i)]))
      throw make_error(path, "input_std[" + std::to_string(i) + "] (" + w.features[static_cast<std::size_t>(i)] + ")",
                       "a feature's standard deviation must be a positive normal number, its mean finite");
  int in = nf;
  for (int l = 0;; ++l) {
    const std::string name = "layer" + std::to_string(l);
    if (!f.tensors.count(name + ".weight")) break;
    const auto& W = f.tensor(name + ".weight");
    const auto& b = f.tensor(name + ".bias");
    if (W.shape.size() != 2 || W.shape[1] != in || b.shape.size() != 1 || b.shape[0] != W.shape[0])
      throw make_error(path, name, "shape does not chain with the previous layer (expected [*, " + std::to_string(in) + "])");
    w.layers.push_back({in, static_cast<int>(W.shape[0]), W.data, b.data});
    in = static_cast<int>(W.shape[0]);
  }
  if (w.layers.empty() || in != 1) throw make_error(path, "layers", "expected layer0.. ending in one output");
  return w;
}

}  // namespace habitat::mlp
