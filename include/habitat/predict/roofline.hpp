#pragma once
// The roofline of a GPU, in one place: ridge points, the share of traffic that reaches DRAM, and the lower
// bound no prediction may fall below (FLOPs at peak, DRAM bytes at bandwidth).
#include <algorithm>

#include "habitat/device/device.hpp"

namespace habitat {

// Ridge point in FLOP/byte at the work's precision (a BF16 tensor-core GEMM's ridge lies far to the right
// of an FP32 kernel's).
[[nodiscard]] constexpr double ridge_point(double peak_tflops, double bandwidth_gbps) { return peak_tflops * 1e12 / (bandwidth_gbps * 1e9); }
[[nodiscard]] inline double ridge_point(const Device& d, Precision p, double bandwidth_gbps) {
  return ridge_point(d.peak_tflops(p), bandwidth_gbps);
}

// Share of a kernel's traffic that reaches DRAM. Tensors that fit in L2 were usually just written by the
// previous kernel and are read from L2; traffic beyond the L2's capacity must stream from DRAM. Only half
// the L2 counts: A100/H100-class L2s are two partitions and an SM sees its near half at full speed (not a
// fitted value; README gives the sensitivity).
inline constexpr double l2_reuse_share = 0.5;

[[nodiscard]] inline double dram_fraction(double bytes, double l2_mib) {
  if (!(l2_mib > 0) || bytes <= 0) return 1.0;
  return std::clamp(1.0 - l2_reuse_share * l2_mib * 1048576.0 / bytes, 0.0, 1.0);
}

// The part of a kernel's time that does not grow with its work (launch, ramp, tail): 5 us, chosen on the FP32
// batch sweeps of fixtures/whatif (whatif/kernel_resize.hpp says how).
inline constexpr double fixed_kernel_us = 5;

struct RooflineTime {
  double compute_us = 0, memory_us = 0;
  [[nodiscard]] double bound_us() const { return std::max(compute_us, memory_us); }
};

// Microseconds of `flops` at `tflops` and `dram_bytes` at `gbps`.
[[nodiscard]] inline RooflineTime roofline_time(double flops, double dram_bytes, double tflops, double gbps) {
  return {std::max(flops, 0.0) / (tflops * 1e6), std::max(dram_bytes, 0.0) / (gbps * 1e3)};
}

// Time of `flops` at the datasheet peak and `dram_bytes` at the spec bandwidth: a hard lower bound.
[[nodiscard]] inline RooflineTime roofline_bound(double flops, double dram_bytes, Precision p, const Device& d) {
  return roofline_time(flops, dram_bytes, d.peak_tflops(p), d.bandwidth_spec_gbps);
}

// The lower bound of a kernel from its work: FLOPs at peak and half its DRAM bytes at bandwidth. First-order
// byte estimates can overcount up to 2x (a normalization's backward counts x twice), counters under kernel
// replay start each kernel with a cold L2, and a floor above the truth would be worse than none; FLOP counts
// of GEMMs, convolutions and attention are exact.
inline constexpr double floor_bytes_share = 0.5;

// FP32 math may run on TF32 tensor cores (cuDNN's default for convolutions, allow_tf32 for matmuls): a bound
// must hold for either, so FP32 work is bounded at the faster of the two peaks.
[[nodiscard]] inline Precision fastest_datapath(Precision p, const Device& d) {
  return p == Precision::fp32 && d.peak_tflops(Precision::tf32) > d.peak_tflops(Precision::fp32) ? Precision::tf32 : p;
}

[[nodiscard]] inline double work_floor_us(double flops, double est_bytes, Precision p, const Device& d) {
  return roofline_bound(flops, floor_bytes_share * est_bytes * dram_fraction(est_bytes, d.l2_mib), fastest_datapath(p, d), d).bound_us();
}

// The same work at what the GPU sustains under load (sustained clock, measured bandwidth).
[[nodiscard]] inline RooflineTime roofline_sustained(double flops, double dram_bytes, Precision p, const Device& d) {
  return roofline_time(flops, dram_bytes, d.sustained_tflops(p), d.sustained_bandwidth_gbps());
}

}  // namespace habitat
