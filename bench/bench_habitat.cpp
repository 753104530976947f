// Speed of parsing and prediction, as ratios within one run (see README): parsing a fixture trace, and
// predicting it onto one GPU and onto the whole catalog; the GEMM residual's networks; reading a large generated trace against only
// decompressing it; prediction cost per kernel and GPU as the step grows.
#include <benchmark/benchmark.h>
#include <zlib.h>

#include <cstdlib>
#include <filesystem>

#include "habitat/habitat.hpp"
#include "habitat/kineto/reader.hpp"
#include "habitat/mlp/eigen_backend.hpp"
#include "habitat/mlp/hybrid.hpp"
#include "habitat/predict/gemm_per_op.hpp"
#include "habitat/predict/gemm_tile_predictor.hpp"
#if HABITAT_HAS_TORCH
#include "habitat/libtorch/torch_backend.hpp"
#endif
#include "large_trace.hpp"

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

// The architecture residual's arithmetic per covered GEMM: one member network against the members' mean that a
// prediction pays (x @ W^T, M = N = 4096, K = 1024, A100 PCIe 40GB; both include the inputs' standardization).
struct ResidualInput {
  const habitat::gemm::ArchResidual* arch = habitat::gemm::arch_residual(habitat::Catalog::builtin().at("A100 PCIe 40GB"));
  std::array<double, habitat::gemm::residual_inputs + 1> raw = habitat::gemm::residual_inputs_of(1, 4096, 4096, 1024, true, true, 2.3, 2500);  // 2.5 ms: any time will do
};
void BM_GemmResidualOneNet(benchmark::State& s) {
  ResidualInput in;
  if (!in.arch) return s.SkipWithError("no sm_80 residual");
  for (auto _ : s) {
    benchmark::DoNotOptimize(in.raw);
    benchmark::DoNotOptimize(habitat::gemm::residual_net_log(in.arch->nets[0], habitat::gemm::residual_standardized(*in.arch, in.raw)));
  }
}
BENCHMARK(BM_GemmResidualOneNet)->Unit(benchmark::kNanosecond);
void BM_GemmResidualMembers(benchmark::State& s) {
  ResidualInput in;
  if (!in.arch) return s.SkipWithError("no sm_80 residual");
  for (auto _ : s) {
    benchmark::DoNotOptimize(in.raw);
    benchmark::DoNotOptimize(habitat::gemm::residual_log(*in.arch, in.raw));
  }
  s.counters["members"] = double(habitat::gemm::residual_members);
}
BENCHMARK(BM_GemmResidualMembers)->Unit(benchmark::kNanosecond);

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
// ---- a large trace: HABITAT_BENCH_STEPS copies (default 106, 300 MB of JSON) of a 3 MB recorded step ----
const std::string& large_trace() {
  static const std::string path = [] {
    const char* env = std::getenv("HABITAT_BENCH_STEPS");
    const int steps = env ? std::atoi(env) : 106;
    const auto p = std::filesystem::temp_directory_path() / ("habitat_bench_" + std::to_string(steps) + "_steps.json.gz");
    if (!std::filesystem::exists(p)) habitat::bench::repeat_step(std::string(HABITAT_FIXTURES) + "/kineto/h100/resnet50_bf16_b64.json.gz", p, steps);
    return p.string();
  }();
  return path;
}

// What `zcat` does: decompress the file and discard it. The reader's target is 1.5x this.
void BM_InflateOnly(benchmark::State& s) {
  std::vector<char> buf(1 << 20);
  std::size_t bytes = 0;
  for (auto _ : s) {
    gzFile in = gzopen(large_trace().c_str(), "rb");
    gzbuffer(in, 1 << 17);  // the reader's buffer: the same decompression, nothing else
    bytes = 0;
    for (int n; (n = gzread(in, buf.data(), static_cast<unsigned>(buf.size()))) > 0;) bytes += static_cast<std::size_t>(n);
    gzclose(in);
  }
  s.counters["MB"] = double(bytes) / 1e6;
}
BENCHMARK(BM_InflateOnly)->Unit(benchmark::kMillisecond)->Iterations(3);

void BM_ReadLargeTrace(benchmark::State& s) {
  for (auto _ : s) benchmark::DoNotOptimize(habitat::kineto::read_trace(large_trace()));
}
BENCHMARK(BM_ReadLargeTrace)->Unit(benchmark::kMillisecond)->Iterations(3);

// 100k ProfilerSteps that launch nothing, then a recorded one: step selection must stay near-linear.
void BM_ReadManyEmptySteps(benchmark::State& s) {
  static const std::string path = [] {
    const auto p = std::filesystem::temp_directory_path() / "habitat_bench_100k_empty_steps.json.gz";
    if (!std::filesystem::exists(p)) habitat::bench::many_empty_steps(kTrace, p, 100000);
    return p.string();
  }();
  for (auto _ : s) benchmark::DoNotOptimize(habitat::kineto::read_trace(path));
}
BENCHMARK(BM_ReadManyEmptySteps)->Unit(benchmark::kMillisecond)->Iterations(3);

// ---- prediction cost per kernel and GPU as a step grows from about 1k to 32k kernels ----
// The fixture's step repeated `copies` times within one step: kernels, calls and operations with their
// links shifted, so every kernel is a real one with a real operation.
habitat::Trace repeated(const habitat::Trace& t, int copies) {
  habitat::Trace r = t;
  r.kernels.clear();
  r.calls.clear();
  r.ops.clear();
  const double period = t.iteration_us();
  for (int c = 0; c < copies; ++c) {
    const int ops = static_cast<int>(r.ops.size()), calls = static_cast<int>(r.calls.size());
    for (auto op : t.ops) {
      op.start_us += c * period;
      if (op.parent >= 0) op.parent += ops;
      if (op.forward >= 0) op.forward += ops;
      r.ops.push_back(std::move(op));
    }
    for (auto call : t.calls) {
      call.start_us += c * period;
      if (call.op >= 0) call.op += ops;
      r.calls.push_back(std::move(call));
    }
    for (auto k : t.kernels) {
      k.start_us += c * period;
      if (k.op >= 0) k.op += ops;
      if (k.call >= 0) k.call += calls;
      r.kernels.push_back(std::move(k));
    }
  }
  r.step_duration_us = copies * period;
  return r;
}

// `prepare(t, origin)` runs once per trace (what depends on the origin only); `make(...)` per GPU.
template <class Prepare, class Make>
void per_kernel_gpu(benchmark::State& s, Prepare prepare, Make make) {
  const Loaded l;
  const int copies = std::max<int>(1, static_cast<int>(s.range(0) / static_cast<std::int64_t>(l.t.kernels.size())));
  const habitat::Trace t = repeated(l.t, copies);
  const auto work = habitat::kernel_work(t);
  const auto& devices = l.cat.devices();
  for (auto _ : s) {
    const auto once = prepare(t, l.origin);
    for (const auto& d : devices) benchmark::DoNotOptimize(make(once, t, work, l.origin, d));
  }
  // Time per kernel and GPU: flat as the step grows when nothing per destination depends on its size twice.
  s.counters["ns_per_kernel_gpu"] = benchmark::Counter(double(t.kernels.size() * devices.size()),
                                                       benchmark::Counter::kIsIterationInvariantRate | benchmark::Counter::kInvert);
  s.counters["kernels"] = double(t.kernels.size());
}

const auto& shipped_models() {
  static const auto models = habitat::mlp::ModelSet<habitat::mlp::EigenBackend>::load_dir(std::string(HABITAT_FIXTURES) + "/../models");
  return models;
}

// Roofline scaling with the origin's labels computed once (as the CLI does).
void BM_PerKernelGpu_Roofline(benchmark::State& s) {
  per_kernel_gpu(
      s, [](const auto& t, const auto&) { return habitat::kernel_labels(t); },
      [](const auto& labels, const auto& t, const auto& w, const auto& o, const auto& d) {
        return habitat::predict_trace(t, w, labels, o, d, habitat::RooflineScaling{});
      });
}
BENCHMARK(BM_PerKernelGpu_Roofline)->RangeMultiplier(4)->Range(1 << 10, 1 << 15)->Unit(benchmark::kMillisecond);

// The CLI's hybrid predictor, origin-only work (labels, GEMM shapes, the MLPs' origin predictions) once...
struct HybridOnce {
  habitat::KernelLabels labels;
  std::vector<std::optional<habitat::gemm::Shape>> shapes;
  habitat::mlp::OriginPlan<habitat::mlp::EigenBackend> plan;
};
void BM_PerKernelGpu_Hybrid(benchmark::State& s) {
  per_kernel_gpu(
      s,
      [](const auto& t, const auto& o) {
        return HybridOnce{habitat::kernel_labels(t), habitat::gemm::op_shapes(t), habitat::mlp::OriginPlan(shipped_models(), t, o)};
      },
      [](const HybridOnce& once, const auto& t, const auto& w, const auto& o, const auto& d) {
        const habitat::mlp::HybridPredictor h(habitat::RooflineScaling{}, once.plan, d);
        return habitat::predict_trace(t, w, once.labels, o, d, habitat::gemm::TilePredictor(h, once.shapes));
      });
}
BENCHMARK(BM_PerKernelGpu_Hybrid)->RangeMultiplier(4)->Range(1 << 10, 1 << 15)->Unit(benchmark::kMillisecond);

// ...against redoing it for every destination (the one-destination API).
void BM_PerKernelGpu_HybridPerDestination(benchmark::State& s) {
  per_kernel_gpu(
      s, [](const auto&, const auto&) { return 0; },
      [](int, const auto& t, const auto& w, const auto& o, const auto& d) {
        const habitat::mlp::HybridPredictor h(habitat::RooflineScaling{}, shipped_models(), t, o, d);
        return habitat::predict_trace(t, w, o, d, habitat::gemm::TilePredictor(h, t));
      });
}
BENCHMARK(BM_PerKernelGpu_HybridPerDestination)->RangeMultiplier(4)->Range(1 << 10, 1 << 15)->Unit(benchmark::kMillisecond);
}  // namespace

BENCHMARK_MAIN();
