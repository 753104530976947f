#pragma once
// Roofline scaling: a kernel's origin time split into the part its DRAM traffic explains, the part its math
// explains, and the rest (latency, launch, synchronization), each scaled by the physics of its own resource:
//   T_d = T_o x ( max(u x S_mem, c x S_math) + (1 - max(u, c)) x S_lat )
// u, c: shares of T_o that the kernel's bytes at sustained bandwidth and FLOPs at sustained throughput take
// on the origin; S_mem: ratio of sustained bandwidths; S_math: per-SM throughput of the kernel's datapath
// (SIMT FP32 lanes or tensor cores at its precision) x sustained clock, with the per-SM load of its waves;
// S_lat: clock ratio x wave count ratio. Throughput parts overlap (max, as the roofline says); latency adds.
// Unlike Eq. 1/2, an SM of another generation is not assumed to do what an origin SM does per clock.
#include <algorithm>
#include <cmath>
#include <optional>

#include "habitat/device/occupancy.hpp"
#include "habitat/predict/kernel_work.hpp"
#include "habitat/predict/roofline.hpp"
#include "habitat/predict/wave_scaling.hpp"

namespace habitat {

namespace detail {

// Blocks the busiest SM runs, over the whole grid: full waves put wave/sms blocks on each SM, the last
// partial wave ceil(rest/sms).
[[nodiscard]] inline double per_sm_load(std::int64_t blocks, std::int64_t wave, int sms) {
  const std::int64_t full = blocks / wave, rest = blocks % wave;
  return double(full) * double(wave) / sms + std::ceil(double(rest) / sms);
}

}  // namespace detail

struct RooflineScaling {
  static constexpr const char* name = "roofline";

  [[nodiscard]] KernelPrediction predict(const Kernel& k, const KernelWork& w, const Device& o, const Device& d) const {
    if (k.kind == GpuWorkKind::memcpy && k.copy_kind != "DtoD") return {k.duration_us, Method::host_transfer, 0};
    const double t_o = std::max(k.duration_us, 0.0);
    const bool known = w.source != WorkSource::unknown;
    const double dram_bytes = known ? w.bytes * dram_fraction(w.bytes, o.l2_mib) : 0;
    const RooflineTime busy_o = roofline_sustained(known ? w.flops : 0, dram_bytes, w.precision, o);
    const double u = t_o > 0 ? std::clamp(busy_o.memory_us / t_o, 0.0, 1.0) : 0;
    const double c = t_o > 0 ? std::clamp(busy_o.compute_us / t_o, 0.0, 1.0) : 0;
    const double s_mem = o.sustained_bandwidth_gbps() / d.sustained_bandwidth_gbps();
    const double rate_o = o.flops_per_clk_per_sm(w.precision) * o.load_clock_mhz(w.precision);
    const double rate_d = d.flops_per_clk_per_sm(w.precision) * d.load_clock_mhz(w.precision);
    const double clock = o.load_clock_mhz(Precision::fp32) / d.load_clock_mhz(Precision::fp32);

    Method method = Method::roofline_scaling;
    double load_ratio = 1, wave_ratio = 1;
    if (k.kind == GpuWorkKind::kernel && k.in_graph && w.source != WorkSource::measured) {
      // A CUDA graph's kernel has no framework op of its own to estimate its work from (and CUPTI may report its launch
      // as 1x1): it is taken to fill the GPU, a matmul or convolution (by its library's name) at the whole
      // GPU's math rate, anything else at DRAM bandwidth.
      const bool matmul = k.name.find("gemm") != std::string::npos || k.name.find("xmma") != std::string::npos ||
                          k.name.find("cutlass") != std::string::npos || k.name.find("conv") != std::string::npos;
      const double s_gpu = matmul ? (rate_o * o.sms) / (rate_d * d.sms) : s_mem;
      return {t_o * s_gpu, Method::unrecorded_launch, matmul ? 0.0 : 1.0};
    }
    if (k.kind == GpuWorkKind::kernel) {
      const LaunchConfig lc{k.threads_per_block(), k.registers_per_thread, k.shared_mem_bytes};
      const std::int64_t blocks = std::max<std::int64_t>(k.blocks(), 1);
      const auto wave_o = try_wave_size(o, lc), wave_d = try_wave_size(d, lc);
      if (wave_o && wave_d) {
        load_ratio = detail::per_sm_load(blocks, *wave_d, d.sms) / detail::per_sm_load(blocks, *wave_o, o.sms);
        wave_ratio = std::ceil(double(blocks) / double(*wave_d)) / std::ceil(double(blocks) / double(*wave_o));
      } else {
        // The library would pick another kernel for this operation: its work spread evenly over the SMs.
        method = Method::roofline_operation;
        load_ratio = std::max(1.0, double(blocks) / d.sms) / std::max(1.0, double(blocks) / o.sms);
        wave_ratio = load_ratio;
      }
    } else {
      method = Method::bandwidth_scaling;  // copies and fills: DRAM traffic and a fixed latency
    }
    const double s_math = load_ratio * rate_o / rate_d;
    const double s_lat = clock * wave_ratio;
    const double t_d = t_o * (std::max(u * s_mem, c * s_math) + (1 - std::max(u, c)) * s_lat);
    return {t_d, method, u};  // predict_trace's guard applies the roofline floor
  }
};

}  // namespace habitat
