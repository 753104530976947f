// ROCm traces (fixtures/wild, public): read without their launch dimensions, the origin described as an AMD GPU
// (never as Hopper, whose compute capability HIP's gfx90a shares), and predicted on every catalog GPU.
#include <catch2/catch.hpp>

#include <cmath>
#include <sstream>

#include "habitat/device/resolve.hpp"
#include "habitat/habitat.hpp"
#include "habitat/kineto/reader.hpp"

using namespace habitat;

namespace {
std::string wild(const std::string& f) { return std::string(HABITAT_FIXTURES) + "/wild/" + f; }
}  // namespace

TEST_CASE("an MI250 trace reads as an AMD GPU's, its kernels without launches", "[kineto][amd]") {
  const Trace t = kineto::read_trace(wild("hta_mi250_minitoy_train_rocm6.2.json.gz"));
  REQUIRE(t.device_props);
  CHECK(t.device_props->vendor == Vendor::amd);
  CHECK(t.device_props->sms == 104);
  CHECK(t.device_props->limits.warp_size == 64);
  REQUIRE(!t.kernels.empty());
  for (const auto& k : t.kernels)
    if (k.kind == GpuWorkKind::kernel) CHECK(!k.launch_recorded);
  const Catalog cat = Catalog::builtin();
  std::ostringstream warnings;
  const Device o = resolve_origin(cat, t, std::nullopt, &warnings);
  // 'AMD Radeon Graphics' is no catalog name: an AMD sibling of its gfx number and CU count, never the H100 (also 9.0).
  CHECK(o.vendor == Vendor::amd);
  CHECK(o.sms == 104);
  CHECK(warnings.str().find("104 CUs") != std::string::npos);
  CHECK(warnings.str().find("MI2") != std::string::npos);
}

TEST_CASE("ROCm kernels predict on every catalog GPU: unchanged on their own, finite and above the roofline elsewhere", "[kineto][amd]") {
  const Catalog cat = Catalog::builtin();
  kineto::ReadOptions whole;
  whole.whole_trace = true;
  for (const auto& [file, options] : {std::pair{"hta_mi250_minitoy_train_rocm6.2.json.gz", kineto::ReadOptions{}}, {"tracelens_mi210_gpu_only.json.gz", whole}}) {
    const Trace t = kineto::read_trace(wild(file), options);
    const auto work = kernel_work(t);
    const Device o = resolve_origin(cat, t, std::nullopt);
    INFO(file);
    const auto same = predict_trace(t, work, o, o, RooflineScaling{});
    CHECK(same.gpu_active_us == Approx(t.gpu_active_us()).epsilon(1e-9));
    for (const auto& d : cat.devices()) {
      INFO(d.name);
      for (const auto& r : {predict_trace(t, work, o, d, RooflineScaling{}), predict_trace(t, work, o, d, DefaultWaveScaling{})}) {
        CHECK(std::isfinite(r.gpu_active_us));
        CHECK(r.gpu_active_us > 0);
        CHECK(r.gpu_active_us < 20 * t.gpu_active_us());
        for (std::size_t i = 0; i < t.kernels.size(); ++i) {
          const auto& w = work[i];
          // The guard holds where the work estimate is consistent with the origin's own time (as predict_trace's).
          const bool consistent = work_floor_us(w.floor_flops(), w.bytes, w.precision, o) <= 1.1 * t.kernels[i].duration_us;
          if (t.kernels[i].kind == GpuWorkKind::kernel && w.source != WorkSource::unknown && consistent)
            CHECK(r.kernels[i].duration_us >= work_floor_us(w.floor_flops(), w.bytes, w.precision, d) * (1 - 1e-9));
        }
      }
    }
    // The MI300X has 2.9x the CUs, 1.2x the clock and 3.2x the bandwidth of an MI210 GCD: never slower.
    CHECK(predict_trace(t, work, o, cat.at("MI300X"), RooflineScaling{}).gpu_active_us <
          predict_trace(t, work, o, cat.at("MI210"), RooflineScaling{}).gpu_active_us);
  }
}
