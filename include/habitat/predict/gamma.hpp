#pragma once
// Gamma sources: how memory-bound a kernel is on the destination GPU (Eq. 3 of the paper and friends).
// Each is a policy type with `static double gamma(const GammaInput&)`.
#include <algorithm>

#include "habitat/device/device.hpp"
#include "habitat/predict/kernel_work.hpp"
#include "habitat/predict/roofline.hpp"
#include "habitat/trace/trace.hpp"

namespace habitat {

struct GammaInput {
  const Kernel& kernel;
  const KernelWork& work;
  const Device& origin;
  const Device& dest;
  const BandwidthPair& bandwidth;
};

// Eq. 3: gamma falls linearly from 1 to 0.5 as the arithmetic intensity x rises to the ridge point R of the
// destination, then as 0.5 R / x beyond it.
[[nodiscard]] constexpr double gamma_from_intensity(double x, double ridge) {
  if (!(ridge > 0)) return 1.0;
  if (x < ridge) return std::clamp(1.0 - 0.5 * x / ridge, 0.5, 1.0);
  return std::clamp(0.5 * ridge / x, 0.0, 0.5);
}

namespace gamma {

// A constant gamma: Fixed<1> is the paper's fallback for kernels without metrics.
template <int Num, int Den = 1>
struct Fixed {
  static_assert(Den > 0 && Num >= 0 && Num <= Den, "gamma must lie in [0, 1]");
  static constexpr const char* name = "fixed";
  [[nodiscard]] static constexpr double gamma(const GammaInput&) { return double(Num) / double(Den); }
};

// The paper's rule: Eq. 3 on the kernel's arithmetic intensity; gamma = 1 where the work is unknown.
struct Roofline {
  static constexpr const char* name = "roofline";
  [[nodiscard]] static double gamma(const GammaInput& in) {
    if (in.work.source == WorkSource::unknown || in.work.bytes <= 0) return 1.0;
    return gamma_from_intensity(in.work.flops / in.work.bytes, ridge_point(in.dest, in.work.precision, in.bandwidth.dest_gbps));
  }
};

// Roofline gamma weighted by how much of the origin time DRAM traffic explains: u = bytes / (bandwidth x
// time). A kernel that moves little data for its duration (launch latency, L2-resident tensors, a short
// grid) gains little from more bandwidth, whatever its intensity. Unknown work keeps the paper's gamma = 1.
struct RooflineUtilization {
  static constexpr const char* name = "roofline-utilization";
  [[nodiscard]] static double gamma(const GammaInput& in) {
    const double g = Roofline::gamma(in);
    if (in.work.source == WorkSource::unknown || in.work.bytes <= 0 || in.kernel.duration_us <= 0) return g;
    // Estimated bytes are tensor sizes; measured ones were counted at DRAM under kernel replay, which starts
    // each kernel with a cold L2. In the real step, inputs the previous kernel just wrote come from L2
    // either way, so both get the same reuse share (without it measured metrics give 5.0% / 4.0% MAE).
    const double at_dram = dram_fraction(in.work.bytes, in.origin.l2_mib);
    const double dram_us = in.work.bytes * at_dram / (in.bandwidth.origin_gbps * 1e3);
    return g * std::clamp(dram_us / in.kernel.duration_us, 0.0, 1.0);
  }
};

}  // namespace gamma
}  // namespace habitat
