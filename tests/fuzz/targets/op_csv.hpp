#pragma once
// predict-ops' CSV reader and, on what it accepts, the prediction itself (learned models from models/,
// the tile model and the physics fallback): refusals only as habitat::error, every dimension read finite,
// and every prediction either absent or a finite positive time.
#include "fuzz_common.hpp"
#include "habitat/mlp/eigen_backend.hpp"
#include "habitat/mlp/predict_rows.hpp"

namespace habitat::fuzz {

inline void op_csv(const std::uint8_t* data, std::size_t size) {
  static const Catalog catalog = Catalog::builtin();
  static const auto models = mlp::ModelSet<mlp::EigenBackend>::load_dir(HABITAT_MODELS);
  const ScratchFile input(data, size, ".csv");
  // The first byte picks options, as the CLI's flags would: a GPU for files without a Device column, an
  // operation for files without OPName, and the ratio method from a measured latency on a T4.
  const std::uint8_t mode = size ? data[0] : 0;
  mlp::OpCsvOptions opt;
  if (mode & 1) opt.device = "H100 SXM";
  if (mode & 2) opt.op = ops::OpKind::linear;
  opt.skip_failed = mode & 4;
  try {
    const auto csv = mlp::read_op_csv(input.path(), opt);
    for (const auto& r : csv.rows) {
      for (double d : r.dims) require_finite(d, "an op dimension");
      if (r.latency_ms) require_finite(*r.latency_ms, "a latency");
    }
    std::optional<mlp::RatioSource> ratio;
    if (mode & 8) ratio = mlp::RatioSource{&catalog.at("T4"), "Latency"};
    for (const auto& p : mlp::predict_rows(csv, models, catalog, ratio))
      if (p.ms) require(std::isfinite(*p.ms) && *p.ms > 0, "a prediction that is not a finite positive time");
  } catch (const habitat::error&) {
  }
}

}  // namespace habitat::fuzz
