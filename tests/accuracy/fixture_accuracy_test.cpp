// H100 <-> H200 on the recorded fixtures: mean absolute error of predicted GPU active time at most 5% in
// each direction, and below every baseline. Prints the table it checks.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdio>

#include "fixtures.hpp"
#include "habitat/habitat.hpp"
#include "habitat/kineto/reader.hpp"

using namespace habitat;

TEST_CASE("H100 <-> H200 GPU active time within 5% MAE and better than the baselines", "[accuracy]") {
  const Catalog cat = Catalog::builtin();
  for (auto [from, to] : {std::pair{"h100", "h200"}, std::pair{"h200", "h100"}}) {
    std::vector<double> sum(1 + baselines.size(), 0.0);
    std::printf("\n%s -> %s: GPU active time error (habitat | same time | FP32 FLOPS ratio | bandwidth ratio)\n", from, to);
    for (const char* w : test::workloads) {
      const Trace o = kineto::read_trace(test::fixture(from, w));
      const Trace d = kineto::read_trace(test::fixture(to, w));
      const Device od = resolve_origin(cat, o, std::nullopt);
      const Device dd = resolve_origin(cat, d, std::nullopt);
      const auto p = predict_trace(o, kernel_work(o), od, dd, DefaultWaveScaling{});
      const Evaluation ev = evaluate(o, d, p, od, dd);
      std::printf("  %-22s", w);
      for (std::size_t i = 0; i < ev.rows.size(); ++i) {
        std::printf(" %+7.2f%%", 100 * ev.rows[i].gpu_active_error);
        sum[i] += std::abs(ev.rows[i].gpu_active_error);
      }
      std::printf("\n");
    }
    const double n = double(std::size(test::workloads));
    std::printf("  %-22s", "MAE");
    for (double s : sum) std::printf(" %7.2f%%", 100 * s / n);
    std::printf("\n");
    INFO(from << " -> " << to);
    CHECK(sum[0] / n <= 0.05);
    for (std::size_t i = 1; i < sum.size(); ++i) CHECK(sum[0] < sum[i]);
  }
}

TEST_CASE("predictions are deterministic and finite on every catalog GPU", "[accuracy]") {
  const Catalog cat = Catalog::builtin();
  const Trace o = kineto::read_trace(test::fixture("h100", "resnet50_fp32_b32"));
  const Device od = resolve_origin(cat, o, std::nullopt);
  const auto work = kernel_work(o);
  for (const auto& d : cat.devices()) {
    INFO(d.name);
    const auto a = predict_trace(o, work, od, d, DefaultWaveScaling{}, {32});
    const auto b = predict_trace(o, work, od, d, DefaultWaveScaling{}, {32});
    CHECK(a.gpu_active_us == b.gpu_active_us);
    CHECK(std::isfinite(a.gpu_active_us));
    CHECK(a.gpu_active_us > 0);
    CHECK(a.throughput);
    CHECK(std::isfinite(*a.throughput));
  }
}
