#pragma once
// A trained operation model on some backend: computes the features its weight file names, runs the
// network, and turns the output into milliseconds. ModelSet holds one model per operation.
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "habitat/mlp/backend.hpp"
#include "habitat/mlp/features.hpp"

namespace habitat::mlp {

// Beyond this many standard deviations from the training mean a feature is outside the training range (a
// uniform or log-uniform sample spans about +-1.7 sd; 4 leaves room for the tails without extrapolating far).
inline constexpr double max_abs_z = 4.0;
// Standardization deviations at or below this mean the feature did not vary in training.
inline constexpr double min_trained_spread = 1e-3;

template <MlpBackend B>
class OpModel {
 public:
  explicit OpModel(MlpWeights w) : w_(std::move(w)), backend_(w_) {
    const auto all = feature_names(w_.op);
    for (const auto& f : w_.features) {
      const auto it = std::find(all.begin(), all.end(), f);
      if (it == all.end())
        throw make_error(w_.file, "__metadata__.features", "feature '" + f + "' is unknown to this habitat for " +
                                                               std::string(ops::schema(w_.op).name));
      index_.push_back(static_cast<std::size_t>(it - all.begin()));
    }
  }

  [[nodiscard]] const MlpWeights& weights() const { return w_; }

  // Why a query lies outside what the network was trained on, or nothing. A feature that did not vary in
  // training (a GPU property equal on every training GPU) and differs now, or a standardized feature
  // beyond max_abs_z, means the network would extrapolate blindly: it must step aside.
  [[nodiscard]] std::optional<std::string> outside_training(const OpQuery& q, const Device& g) const {
    return outside(feature_values(q, g), g);
  }

  // Milliseconds for each query, or nothing where the query is outside the training domain or the
  // network's answer is not a finite positive time. Out-of-domain queries never reach the network.
  [[nodiscard]] std::vector<std::optional<double>> predict_checked(std::span<const OpQuery> qs, const Device& g) const {
    std::vector<float> rows;
    std::vector<std::size_t> inside;
    for (std::size_t i = 0; i < qs.size(); ++i) {
      const auto v = features_of(qs[i], g);
      if (outside(v, g)) continue;
      inside.push_back(i);
      append_row(v, rows);
    }
    std::vector<std::optional<double>> out(qs.size());
    if (inside.empty()) return out;
    const auto net = backend_.forward(rows, inside.size());
    for (std::size_t j = 0; j < inside.size(); ++j)
      if (const double ms = to_ms(net[j], qs[inside[j]], g); std::isfinite(ms) && ms > 0) out[inside[j]] = ms;
    return out;
  }

  // Milliseconds of one query on GPU g.
  [[nodiscard]] double predict_ms(const OpQuery& q, const Device& g) const { return predict_ms(std::span(&q, 1), g).front(); }

  // Milliseconds for each query on GPU g (the queries must be of this model's operation).
  [[nodiscard]] std::vector<double> predict_ms(std::span<const OpQuery> qs, const Device& g) const {
    std::vector<float> rows;
    rows.reserve(qs.size() * index_.size());
    for (const auto& q : qs) append_row(features_of(q, g), rows);
    const auto net = backend_.forward(rows, qs.size());
    std::vector<double> ms(qs.size());
    for (std::size_t i = 0; i < qs.size(); ++i) ms[i] = to_ms(net[i], qs[i], g);
    return ms;
  }

 private:
  // All features habitat computes for the query (the model uses the subset index_ names).
  [[nodiscard]] std::vector<double> features_of(const OpQuery& q, const Device& g) const {
    if (q.op != w_.op) throw make_error(w_.file, "", "asked to predict " + std::string(ops::schema(q.op).name));
    return feature_values(q, g);
  }

  void append_row(const std::vector<double>& v, std::vector<float>& rows) const {
    for (auto i : index_) rows.push_back(static_cast<float>(v[i]));
  }

  // The network's output as milliseconds.
  [[nodiscard]] double to_ms(double o, const OpQuery& q, const Device& g) const {
    return w_.residual ? std::exp(std::clamp(o, -20.0, 20.0)) * (roofline(q, g).ms() + w_.floor_ms) : std::max(o, 1e-6);
  }

  [[nodiscard]] std::optional<std::string> outside(const std::vector<double>& v, const Device& g) const {
    for (std::size_t j = 0; j < index_.size(); ++j) {
      const double x = v[index_[j]], mean = w_.mean[j], sd = w_.stdev[j];
      const bool flat = !(sd > min_trained_spread);
      if (flat ? std::abs(x - mean) > min_trained_spread : std::abs(x - mean) / sd > max_abs_z)
        return w_.features[j] + (flat ? " did not vary in training" : " is " + std::to_string(std::abs(x - mean) / sd).substr(0, 5) +
                                                                        " deviations from its training mean") +
               " (" + std::string(ops::schema(w_.op).name) + " on " + g.name + ")";
    }
    return std::nullopt;
  }

  MlpWeights w_;
  B backend_;
  std::vector<std::size_t> index_;
};

template <MlpBackend B>
class ModelSet {
 public:
  // Every *.safetensors in dir; a missing folder is an empty set (prediction then falls back to wave scaling).
  [[nodiscard]] static ModelSet load_dir(const std::filesystem::path& dir) {
    ModelSet s;
    std::error_code ec;
    if (!std::filesystem::is_directory(dir, ec)) return s;
    std::vector<std::filesystem::path> files;
    for (const auto& e : std::filesystem::directory_iterator(dir))
      if (e.path().extension() == ".safetensors") files.push_back(e.path());
    std::sort(files.begin(), files.end());
    for (const auto& f : files) s.add(load_weights(f.string()));
    return s;
  }
  void add(MlpWeights w) {
    const auto op = w.op;
    models_.insert_or_assign(op, OpModel<B>(std::move(w)));
  }
  [[nodiscard]] const OpModel<B>* find(ops::OpKind op) const {
    auto it = models_.find(op);
    return it == models_.end() ? nullptr : &it->second;
  }
  [[nodiscard]] bool empty() const { return models_.empty(); }
  [[nodiscard]] std::size_t size() const { return models_.size(); }

 private:
  std::map<ops::OpKind, OpModel<B>> models_;
};

}  // namespace habitat::mlp
