// Speed of parsing and prediction, as ratios within one run (see README): parsing a fixture trace, and
// predicting it onto one GPU and onto the whole catalog.
#include <benchmark/benchmark.h>

#include "habitat/habitat.hpp"
#include "habitat/kineto/reader.hpp"
#include "habitat/mlp/eigen_backend.hpp"
#include "habitat/mlp/hybrid.hpp"
#include "habitat/predict/gemm_tile_predictor.hpp"
#if HABITAT_HAS_TORCH
#include "habitat/libtorch/torch_backend.hpp"
#endif

namespace {
const std::string kTrace = std::string(HABITAT_FIXTURES) + "/kineto/h100/resnet50_fp32_b32.json.gz";

void BM_ParseKineto(benchmark::State& s) {
  for (auto _ : s) benchmark::DoNotOptimize(habitat::kineto::read_trace(kTrace));
}
BENCHMARK(BM_ParseKineto)->Unit(benchmark::kMillisecond);

void BM_KernelWork(benchmark::State& s) {
  const auto t = habitat::kineto::read_trace(kTrace);
  for (auto _ : s) benchmark::DoNotOptimize(habitat::kernel_work(t));
}
BENCHMARK(BM_KernelWork)->Unit(benchmark::kMicrosecond);

// What every prediction benchmark starts from: the catalog, the trace, its origin GPU and its work.
struct Loaded {
  habitat::Catalog cat = habitat::Catalog::builtin();
  habitat::Trace t = habitat::kineto::read_trace(kTrace);
  habitat::Device origin = habitat::resolve_origin(cat, t, std::nullopt);
  std::vector<habitat::KernelWork> work = habitat::kernel_work(t);
};

template <class Predictor>
void BM_PredictOne(benchmark::State& s) {
  const Loaded l;
  const auto& dest = l.cat.at("H200");
  for (auto _ : s) benchmark::DoNotOptimize(habitat::predict_trace(l.t, l.work, l.origin, dest, Predictor{}));
  s.counters["kernels"] = double(l.t.kernels.size());
}
BENCHMARK(BM_PredictOne<habitat::RooflineScaling>)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_PredictOne<habitat::DefaultWaveScaling>)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_PredictOne<habitat::PaperWaveScaling>)->Unit(benchmark::kMicrosecond);

// The GEMM tile model for every matmul (nine candidate tiles, origin and destination, per GEMM kernel).
void BM_PredictOneTile(benchmark::State& s) {
  const Loaded l;
  const auto& dest = l.cat.at("A100 SXM4 80GB");
  for (auto _ : s) {
    const habitat::gemm::TilePredictor p(habitat::RooflineScaling{}, l.t, habitat::gemm::TileUse::every_gemm);
    benchmark::DoNotOptimize(habitat::predict_trace(l.t, l.work, l.origin, dest, p));
  }
}
BENCHMARK(BM_PredictOneTile)->Unit(benchmark::kMicrosecond);

void BM_PredictCatalog(benchmark::State& s) {
  const Loaded l;
  for (auto _ : s)
    for (const auto& d : l.cat.devices()) benchmark::DoNotOptimize(habitat::predict_trace(l.t, l.work, l.origin, d, habitat::RooflineScaling{}));
  s.counters["devices"] = double(l.cat.devices().size());
}
BENCHMARK(BM_PredictCatalog)->Unit(benchmark::kMillisecond);

// The hybrid predictor onto every catalog GPU: features, the MLPs (batched per operation kind) for
// origin and destination, then wave scaling for the other kernels. Same work for both backends.
template <class Backend>
void BM_PredictCatalogHybrid(benchmark::State& s) {
  const Loaded l;
  const auto& [cat, t, origin, work] = l;
  const auto models = habitat::mlp::ModelSet<Backend>::load_dir(std::string(HABITAT_FIXTURES) + "/../models");
  for (auto _ : s)
    for (const auto& d : cat.devices()) {
      const habitat::mlp::HybridPredictor h(habitat::DefaultWaveScaling{}, models, t, origin, d);
      benchmark::DoNotOptimize(habitat::predict_trace(t, work, origin, d, h));
    }
  s.counters["devices"] = double(cat.devices().size());
}
BENCHMARK(BM_PredictCatalogHybrid<habitat::mlp::EigenBackend>)->Unit(benchmark::kMillisecond);
#if HABITAT_HAS_TORCH
BENCHMARK(BM_PredictCatalogHybrid<habitat::libtorch::TorchBackend>)->Unit(benchmark::kMillisecond);
#endif
}  // namespace

BENCHMARK_MAIN();
