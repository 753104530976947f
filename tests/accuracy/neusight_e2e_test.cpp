// Item 5c: H100 traces of NeuSight's five transformer forward passes (fixtures/neusight_e2e/h100, recorded
// as a user would: a plain loop under torch.profiler) predicted on P4, P100, T4 and A100 40GB, against
// NeuSight's measured latencies on those GPUs (../shared/data/neusight_e2e/labels, read, never copied).
// Prints the error per GPU next to the baselines; checks each GPU's mean error against a bound.
#include <catch2/catch.hpp>

#include <boost/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "habitat/habitat.hpp"
#include "habitat/kineto/reader.hpp"
#include "habitat/predict/gemm_tile_predictor.hpp"

using namespace habitat;
namespace fs = std::filesystem;

namespace {

std::optional<double> label_ms(const fs::path& file) {
  std::ifstream in(file);
  if (!in) return std::nullopt;
  std::stringstream ss;
  ss << in.rdbuf();
  const auto v = boost::json::parse(ss.str());
  return v.as_object().at("e2e_latency").to_number<double>();
}

struct Dest {
  const char* catalog;
  const char* label_dir;
};
constexpr Dest dests[] = {{"P4", "Tesla_P4"}, {"P100", "Tesla_P100-PCIE-16GB"}, {"T4", "Tesla_T4"}, {"A100 PCIe 40GB", "NVIDIA_A100-PCIE-40GB"}};

}  // namespace

TEST_CASE("H100 forward-pass traces predict P4, P100, T4 and A100 40GB (NeuSight's labels)", "[accuracy][e2e]") {
  const fs::path labels = fs::path(HABITAT_SHARED_DATA) / "neusight_e2e" / "labels";
  const fs::path traces = fs::path(HABITAT_FIXTURES) / "neusight_e2e" / "h100";
  REQUIRE(fs::is_directory(traces));
  if (!HABITAT_SHARED_PRESENT) {  // configured without ../shared: nothing to compare with (CI has it)
    WARN("skipped: " << labels << " is missing (the labels live in ../shared beside the checkout)");
    return;
  }
  REQUIRE(fs::is_directory(labels));
  const Catalog cat = Catalog::builtin();
  const Device& h100 = cat.at("H100 SXM");
  struct Acc {
    int n = 0;
    double habitat = 0, tile = 0, wave = 0, same = 0, flops = 0, bw = 0;
  };
  std::map<std::string, Acc> per_gpu;
  std::printf("\nH100 trace -> GPU: forward latency, ms (habitat = the default predictor; tile = the tile model for every GEMM;\n"
              "wave = the paper's wave scaling, Eq. 1 with the roofline-utilization gamma), signed errors\n");
  std::printf("%-26s %-15s %9s %9s %8s %8s %8s %8s %8s %8s\n", "workload", "GPU", "measured", "habitat", "error", "tile", "wave", "same", "FLOPSr", "BWr");
  for (const auto& e : fs::directory_iterator(traces)) {
    const std::string file = e.path().filename().string();
    if (!file.ends_with(".json.gz")) continue;
    const std::string name = file.substr(0, file.size() - 8);
    const auto origin_label = label_ms(labels / "NVIDIA_H100_80GB_HBM3" / (name + ".json"));
    if (!origin_label) continue;
    const Trace t = kineto::read_trace(e.path().string());
    const auto work = kernel_work(t);
    for (const Dest& d : dests) {
      const auto measured = label_ms(labels / d.label_dir / (name + ".json"));
      if (!measured) continue;
      const Device& g = cat.at(d.catalog);
      // The forward pass is GPU-bound on every destination (each is at least 3x slower than the H100): its
      // latency is the predicted GPU time.
      const double habitat_ms = predict_trace(t, work, h100, g, gemm::TilePredictor(RooflineScaling{}, t)).gpu_active_us / 1e3;
      const double tile_ms =
          predict_trace(t, work, h100, g, gemm::TilePredictor(RooflineScaling{}, t, gemm::TileUse::every_gemm)).gpu_active_us / 1e3;
      const double wave_ms = predict_trace(t, work, h100, g, DefaultWaveScaling{}).gpu_active_us / 1e3;
      const double same = *origin_label;
      const double flops = same * h100.fp32_tflops() / g.fp32_tflops();
      const double bw = same * h100.sustained_bandwidth_gbps() / g.sustained_bandwidth_gbps();
      auto err = [&](double p) { return p / *measured - 1; };
      Acc& a = per_gpu[d.catalog];
      ++a.n;
      a.habitat += std::abs(err(habitat_ms)), a.tile += std::abs(err(tile_ms)), a.wave += std::abs(err(wave_ms));
      a.same += std::abs(err(same));
      a.flops += std::abs(err(flops)), a.bw += std::abs(err(bw));
      std::printf("%-26s %-15s %9.1f %9.1f %+7.1f%% %+7.1f%% %+7.1f%% %+7.1f%% %+7.1f%% %+7.1f%%\n", name.c_str(), d.catalog, *measured,
                  habitat_ms, 100 * err(habitat_ms), 100 * err(tile_ms), 100 * err(wave_ms), 100 * err(same), 100 * err(flops), 100 * err(bw));
    }
  }
  REQUIRE(!per_gpu.empty());
  std::printf("\nmean absolute error per GPU: habitat | tile | wave scaling | same time | FLOPS ratio | bandwidth ratio\n");
  for (const auto& [gpu, a] : per_gpu) {
    std::printf("  %-15s n=%2d  %6.1f%% | %6.1f%% | %6.1f%% | %6.1f%% | %6.1f%% | %6.1f%%\n", gpu.c_str(), a.n, 100 * a.habitat / a.n,
                100 * a.tile / a.n, 100 * a.wave / a.n, 100 * a.same / a.n, 100 * a.flops / a.n, 100 * a.bw / a.n);
    // The bar, 8% on every GPU. It holds on the A100, the P4 (since GEMMs take the destination's layout
    // preference: gemm_tile_predictor.hpp), the T4 (with its clock derived from its power limit) and, since the
    // timed call's overhead per operation refit the tile model, the P100 at 7.5% (8.8% before; 2.6% before the
    // layout preference, which its forward passes do not show as its timed calls do: README).
    const double bound = 0.08;
    INFO(gpu << ": mean absolute error " << a.habitat / a.n << ", bound " << bound);
    CHECK(a.habitat / a.n <= bound);
    CHECK(a.habitat / a.n < a.wave / a.n);  // better than the paper's wave scaling
  }
}

// Issue 22, item 3: the same H100 traces predicted on three AMD Instinct GPUs (one GCD of the MI250), against
// NeuSight's published AMD latencies (fixtures/neusight_e2e/amd_labels.json, with their source). Validation
// only: no constant of habitat is fitted to these rows. The H100's own time for the "same time" and ratio
// baselines is the un-profiled CUDA-event median stored beside the traces (manifest.json), so this test
// needs nothing outside the repository.
TEST_CASE("H100 forward-pass traces predict MI100, MI210 and an MI250 GCD (NeuSight's AMD labels)", "[accuracy][e2e][amd]") {
  const fs::path dir = fs::path(HABITAT_FIXTURES) / "neusight_e2e";
  auto read_json = [](const fs::path& p) {
    std::ifstream in(p);
    REQUIRE(in);
    std::stringstream ss;
    ss << in.rdbuf();
    return boost::json::parse(ss.str());
  };
  const auto labels = read_json(dir / "amd_labels.json").as_object().at("ms").as_object();
  std::map<std::string, double> h100_ms;  // the H100's own un-profiled forward time per workload
  const auto manifest = read_json(dir / "h100" / "manifest.json");  // kept: the loop below walks into it
  for (const auto& w : manifest.as_object().at("workloads").as_array()) {
    const auto& o = w.as_object();
    h100_ms[std::string(o.at("workload").as_string())] = o.at("forward_ms").as_object().at("median").to_number<double>();
  }
  const Catalog cat = Catalog::builtin();
  const Device& h100 = cat.at("H100 SXM");
  struct Acc {
    int n = 0;
    double habitat = 0, wave = 0, same = 0, flops = 0, bw = 0;
  };
  std::map<std::string, Acc> per_gpu;
  std::printf("\nH100 trace -> AMD GPU: forward latency, ms (NeuSight's published AMD labels), signed errors\n");
  std::printf("%-26s %-7s %9s %9s %8s %8s %8s %8s %8s\n", "workload", "GPU", "measured", "habitat", "error", "wave", "same", "FLOPSr", "BWr");
  for (const auto& [name, origin_ms] : h100_ms) {
    const fs::path file = dir / "h100" / (name + ".json.gz");
    if (!fs::exists(file)) continue;
    const Trace t = kineto::read_trace(file.string());
    const auto work = kernel_work(t);
    for (const auto& [gpu, rows] : labels) {
      const auto* measured = rows.as_object().if_contains(name);
      if (!measured) continue;
      const double m = measured->to_number<double>();
      const Device& g = cat.at(std::string(gpu));
      const double habitat_ms = predict_trace(t, work, h100, g, gemm::TilePredictor(RooflineScaling{}, t)).gpu_active_us / 1e3;
      const double wave_ms = predict_trace(t, work, h100, g, DefaultWaveScaling{}).gpu_active_us / 1e3;
      REQUIRE(std::isfinite(habitat_ms));
      const double flops = origin_ms * h100.fp32_tflops() / g.fp32_tflops();
      const double bw = origin_ms * h100.sustained_bandwidth_gbps() / g.sustained_bandwidth_gbps();
      auto err = [&](double p) { return p / m - 1; };
      Acc& a = per_gpu[std::string(gpu)];
      ++a.n;
      a.habitat += std::abs(err(habitat_ms)), a.wave += std::abs(err(wave_ms)), a.same += std::abs(err(origin_ms));
      a.flops += std::abs(err(flops)), a.bw += std::abs(err(bw));
      std::printf("%-26s %-7s %9.1f %9.1f %+7.1f%% %+7.1f%% %+7.1f%% %+7.1f%% %+7.1f%%\n", name.c_str(), std::string(gpu).c_str(), m,
                  habitat_ms, 100 * err(habitat_ms), 100 * err(wave_ms), 100 * err(origin_ms), 100 * err(flops), 100 * err(bw));
    }
  }
  REQUIRE(per_gpu.size() == 3);
  std::printf("\nmean absolute error per AMD GPU: habitat | wave scaling | same time | FLOPS ratio | bandwidth ratio\n");
  for (const auto& [gpu, a] : per_gpu) {
    std::printf("  %-7s n=%2d  %6.1f%% | %6.1f%% | %6.1f%% | %6.1f%% | %6.1f%%\n", gpu.c_str(), a.n, 100 * a.habitat / a.n, 100 * a.wave / a.n,
                100 * a.same / a.n, 100 * a.flops / a.n, 100 * a.bw / a.n);
    // Measured 3.4% (MI100), 8.0% (MI210), 5.9% (MI250) when this test was written (2026-11-28). The bound
    // catches a regression of the AMD physics; it was not reached by tuning to these rows.
    INFO(gpu << ": mean absolute error " << a.habitat / a.n);
    CHECK(a.habitat / a.n <= 0.10);
    CHECK(a.habitat / a.n < std::min({a.wave, a.flops, a.bw}) / a.n);  // better than every baseline
  }
}
