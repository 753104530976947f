// H100 <-> H200 on the recorded fixtures with roofline scaling (the default): mean absolute error of predicted GPU active time at most 2.5% in
// each direction, and below every baseline. Prints the table it checks.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdio>

#include "fixtures.hpp"
#include "habitat/habitat.hpp"
#include "habitat/kineto/reader.hpp"
#include "habitat/sim/compose.hpp"

using namespace habitat;

namespace {
// Prints the per-workload errors and returns the mean absolute error per predictor (habitat, baselines...).
template <class Names>
std::vector<double> mean_abs_errors(const Catalog& cat, const char* from, const char* to, const Names& names, const char* set) {
  std::vector<double> sum(1 + baselines.size(), 0.0);
  std::printf("\n%s %s -> %s: GPU active time error (habitat | same time | FP32 FLOPS ratio | bandwidth ratio)\n", set, from, to);
  for (const char* w : names) {
    const Trace o = kineto::read_trace(test::fixture(from, w, set));
    const Trace d = kineto::read_trace(test::fixture(to, w, set));
    const Device od = resolve_origin(cat, o, std::nullopt);
    const Device dd = resolve_origin(cat, d, std::nullopt);
    const auto p = predict_trace(o, kernel_work(o), od, dd, RooflineScaling{});
    const Evaluation ev = evaluate(o, d, p, od, dd);
    std::printf("  %-26s", w);
    for (std::size_t i = 0; i < ev.rows.size(); ++i) {
      std::printf(" %+7.2f%%", 100 * ev.rows[i].gpu_active_error);
      sum[i] += std::abs(ev.rows[i].gpu_active_error);
    }
    std::printf("\n");
  }
  for (double& s : sum) s /= double(std::size(names));
  std::printf("  %-26s", "MAE");
  for (double s : sum) std::printf(" %7.2f%%", 100 * s);
  std::printf("\n");
  return sum;
}
}  // namespace

// Both directions: MAE at most 5% and below every baseline.
template <class Names>
void check_both_directions(const Names& names, const char* set) {
  const Catalog cat = Catalog::builtin();
  for (auto [from, to] : {std::pair{"h100", "h200"}, std::pair{"h200", "h100"}}) {
    INFO(set << ": " << from << " -> " << to);
    const auto mae = mean_abs_errors(cat, from, to, names, set);
    CHECK(mae[0] <= 0.025);
    for (std::size_t i = 1; i < mae.size(); ++i) CHECK(mae[0] < mae[i]);
  }
}

TEST_CASE("H100 <-> H200 GPU active time within 2.5% MAE and better than the baselines", "[accuracy]") {
  check_both_directions(test::workloads, "kineto");
}

TEST_CASE("held-out workloads stay within 2.5% MAE and better than the baselines", "[accuracy]") {
  check_both_directions(test::heldout_workloads, "heldout");
}

TEST_CASE("predictions are deterministic and finite on every catalog GPU", "[accuracy]") {
  const Catalog cat = Catalog::builtin();
  const Trace o = kineto::read_trace(test::fixture("h100", "resnet50_fp32_b32"));
  const Device od = resolve_origin(cat, o, std::nullopt);
  const auto work = kernel_work(o);
  const auto hosts = sim::HostRegistry::builtin();
  for (const auto& d : cat.devices()) {
    INFO(d.name);
    const auto program = sim::build_program(o, sim::host_model(hosts, od, d, sim::HostChoice::reference()));
    auto a = predict_trace(o, work, od, d, RooflineScaling{});
    auto b = predict_trace(o, work, od, d, RooflineScaling{});
    sim::compose(a, o, program, d, 32);
    sim::compose(b, o, program, d, 32);
    CHECK(a.gpu_active_us == b.gpu_active_us);
    CHECK(a.iteration_us == b.iteration_us);
    CHECK(std::isfinite(a.iteration_us));
    CHECK(a.iteration_us >= a.timeline->gpu_busy_us);
    CHECK(std::isfinite(a.gpu_active_us));
    CHECK(a.gpu_active_us > 0);
    CHECK(a.throughput);
    CHECK(std::isfinite(*a.throughput));
  }
}
