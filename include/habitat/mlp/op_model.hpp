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

  // Milliseconds of one query on GPU g.
  [[nodiscard]] double predict_ms(const OpQuery& q, const Device& g) const { return predict_ms(std::span(&q, 1), g).front(); }

  // Milliseconds for each query on GPU g (the queries must be of this model's operation).
  [[nodiscard]] std::vector<double> predict_ms(std::span<const OpQuery> qs, const Device& g) const {
    std::vector<float> rows;
    rows.reserve(qs.size() * index_.size());
    for (const auto& q : qs) {
      if (q.op != w_.op) throw make_error(w_.file, "", "asked to predict " + std::string(ops::schema(q.op).name));
      const auto v = feature_values(q, g);
      for (auto i : index_) rows.push_back(static_cast<float>(v[i]));
    }
    const auto out = backend_.forward(rows, qs.size());
    std::vector<double> ms(qs.size());
    for (std::size_t i = 0; i < qs.size(); ++i) {
      const double o = out[i];
      ms[i] = w_.residual ? std::exp(std::clamp(o, -20.0, 20.0)) * (roofline(qs[i], g).ms() + w_.floor_ms) : std::max(o, 1e-6);
    }
    return ms;
  }

 private:
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
