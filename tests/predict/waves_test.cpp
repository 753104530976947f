#include <catch2/catch.hpp>

#include <cmath>

#include "habitat/concepts.hpp"
#include "habitat/device/catalog.hpp"
#include "habitat/predict/wave_scaling.hpp"

using namespace habitat;

static_assert(WaveFormula<waves::Exact> && WaveFormula<waves::Many>);
static_assert(GammaSource<gamma::Fixed<1>> && GammaSource<gamma::Roofline> && GammaSource<gamma::RooflineUtilization>);
static_assert(KernelPredictor<DefaultWaveScaling> && KernelPredictor<PaperWaveScaling>);

namespace {
Kernel kernel(std::int64_t blocks, double us) {
  Kernel k;
  k.name = "k";
  k.grid = {blocks, 1, 1};
  k.block = {256, 1, 1};
  k.registers_per_thread = 32;
  k.duration_us = us;
  return k;
}
}  // namespace

TEST_CASE("same GPU gives the same time for every formula and gamma", "[wave]") {
  const Catalog c = Catalog::builtin();
  const Device& d = c.at("V100");
  for (std::int64_t b : {1, 80, 641, 100000}) {
    const Kernel k = kernel(b, 123.0);
    for (WorkSource src : {WorkSource::unknown, WorkSource::estimated}) {
      const KernelWork w{1e9, 1e8, Precision::fp32, src};
      CHECK(DefaultWaveScaling{}.predict(k, w, d, d).duration_us == Approx(123.0));
      CHECK(PaperWaveScaling{}.predict(k, w, d, d).duration_us == Approx(123.0));
    }
  }
}

TEST_CASE("gamma 1 scales by bandwidth and waves and gamma 0 by clock and waves", "[wave]") {
  const WaveInput mem{1000000, 1000, 2000, 0.5, 0.8, 1.0};
  CHECK(waves::Many::scale(mem) == Approx(0.5));
  WaveInput compute = mem;
  compute.gamma = 0;
  CHECK(waves::Many::scale(compute) == Approx(0.5 * 0.8));  // (W_o/W_d) (C_o/C_d)
  CHECK(waves::Exact::scale(compute) == Approx(0.5 * 0.8));
}

TEST_CASE("Eq. 1 tends to Eq. 2 as the number of waves grows", "[wave]") {
  for (double g : {0.0, 0.3, 0.7, 1.0}) {
    const WaveInput few{1500, 1000, 1320, 0.7, 1.1, g};
    const WaveInput many{150000007, 1000, 1320, 0.7, 1.1, g};
    CHECK(std::abs(waves::Exact::scale(few) / waves::Many::scale(few) - 1) > 0.05);  // ceil() matters with 2 waves
    CHECK(waves::Exact::scale(many) == Approx(waves::Many::scale(many)).epsilon(1e-4));
  }
}

TEST_CASE("a grid smaller than one wave on both GPUs scales by bandwidth and clock only", "[wave]") {
  const WaveInput small{50, 1000, 2000, 0.5, 0.8, 0.5};
  CHECK(waves::Exact::scale(small) == Approx(std::pow(0.5, 0.5) * std::pow(0.8, 0.5)));
}

TEST_CASE("Eq. 3 gamma: 1 at zero intensity and 0.5 at the ridge and towards 0 beyond", "[gamma]") {
  CHECK(gamma_from_intensity(0, 10) == Approx(1.0));
  CHECK(gamma_from_intensity(5, 10) == Approx(0.75));
  CHECK(gamma_from_intensity(10, 10) == Approx(0.5));
  CHECK(gamma_from_intensity(1000, 10) == Approx(0.005));
}

TEST_CASE("utilization gamma: a kernel moving little data for its time is not memory-bound", "[gamma]") {
  const Catalog c = Catalog::builtin();
  const Device& o = c.at("H100 SXM");
  const Device& d = c.at("H200");
  const BandwidthPair bw = bandwidths(o, d);
  Kernel k = kernel(10000, 1000.0);  // 1 ms
  const double streaming = bw.origin_gbps * 1e3 * 1000.0;  // bytes DRAM moves in 1 ms
  const KernelWork busy{0, streaming * 2, Precision::fp32, WorkSource::estimated};
  const KernelWork idle{0, streaming * 0.01, Precision::fp32, WorkSource::estimated};
  const KernelWork unknown{0, 0, Precision::fp32, WorkSource::unknown};
  CHECK(gamma::RooflineUtilization::gamma({k, busy, o, d, bw}) == Approx(1.0));
  CHECK(gamma::RooflineUtilization::gamma({k, idle, o, d, bw}) < 0.01);
  CHECK(gamma::RooflineUtilization::gamma({k, unknown, o, d, bw}) == Approx(1.0));  // the paper's fallback
  // H100 -> H200: same SMs and clocks, so a streaming kernel scales by the measured bandwidth ratio.
  CHECK(DefaultWaveScaling{}.predict(k, busy, o, d).duration_us == Approx(1000.0 * bw.origin_gbps / bw.dest_gbps));
}

TEST_CASE("copies between host and device keep their time and device copies scale with bandwidth", "[wave]") {
  const Catalog c = Catalog::builtin();
  Kernel k = kernel(1, 10.0);
  k.kind = GpuWorkKind::memcpy;
  k.copy_kind = "HtoD";
  const KernelWork w{0, 1e9, Precision::fp32, WorkSource::estimated};
  CHECK(DefaultWaveScaling{}.predict(k, w, c.at("T4"), c.at("H200")).duration_us == Approx(10.0));
  k.copy_kind = "DtoD";
  CHECK(DefaultWaveScaling{}.predict(k, w, c.at("T4"), c.at("H200")).duration_us < 10.0);
}
