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
#include "habitat/predict/datapath.hpp"
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

// The share of a kernel's time beyond its fixed part that its throughput (math or DRAM traffic) explains,
// time-weighted median over the kernels of the H100 fixtures whose work is estimated: 0.49 for memory-bound
// kernels, 0.32 (TF32) to 0.66 (FP32) for matmuls and convolutions. Used where a trace recorded no shapes.
inline constexpr double unknown_work_share = 0.5;
// For matmuls and convolutions the share grows with the kernel's length (the same fixtures: 0.23 at 10 us, 0.44
// at 100 us, 0.75 at 1 ms): 0.23 + 0.26 per decade above 10 us, at most 1.
[[nodiscard]] inline double unknown_math_share(double t_us) {
  return std::clamp(0.23 + 0.26 * std::log10(std::max(t_us, 10.0) / 10.0), 0.23, 1.0);
}
// cuDNN's legacy SIMT engines (detail::is_legacy_conv_engine) are the exception: in the same fixtures their math
// explains 0.5-39% of their time, the time-weighted median 2% (10 kernels of 13-505 us, all in DCGAN's backward
// pass); taken at the matmuls' share they came out 1.4-1.5x slow on an A100 and an L4 (fixtures/track, DCGAN).
inline constexpr double legacy_engine_math_share = 0.02;

struct RooflineScaling {
  static constexpr const char* name = "roofline";

  [[nodiscard]] KernelPrediction predict(const Kernel& k, const KernelWork& w, const Device& o, const Device& d) const {
    return predict_on(k, w, o, d, datapath(w, o, d));
  }

  // The same with the destination's datapath given, and its DRAM bytes `byte_ratio` times the origin's: what a
  // change of precision does (the precision what-if, o == d) goes through the same decomposition as a change of GPU.
  [[nodiscard]] KernelPrediction predict_on(const Kernel& k, const KernelWork& w, const Device& o, const Device& d, Precision pd,
                                            double byte_ratio = 1, double fixed_us = fixed_kernel_us) const {
    if (k.kind == GpuWorkKind::memcpy && k.copy_kind != "DtoD") return {k.duration_us, Method::host_transfer, 0};
    const double t_o = std::max(k.duration_us, 0.0);
    const bool known = w.source != WorkSource::unknown;
    const double dram_bytes = known ? w.bytes * dram_fraction(w.bytes, o.l2_mib) : 0;
    const RooflineTime busy_o = roofline_sustained(known ? w.flops : 0, dram_bytes, w.precision, o);
    // A library's math kernel by its name (kernel_work.hpp's one list: cuDNN's dgrad/wgrad engines included), asked
    // only where the work is unknown or the kernel replays in a graph: elsewhere the work says what it is.
    const bool matmul = (!known || k.in_graph) && detail::is_math_kernel(k.name);
    // Work unknown (no recorded shapes): of a kernel's time beyond its fixed part, the share that throughput
    // explains in the fixtures whose work is known (unknown_work_share) is taken as math for a matmul or
    // convolution (by its library's name), as DRAM traffic for any other kernel; the rest is latency.
    const double unknown_share = !known && k.kind == GpuWorkKind::kernel && t_o > 0
                                     ? (!matmul                                ? unknown_work_share
                                        : detail::is_legacy_conv_engine(k.name) ? legacy_engine_math_share
                                                                                : unknown_math_share(t_o)) *
                                           std::max(t_o - fixed_us, 0.0) / t_o
                                     : 0.0;
    const double u = t_o <= 0 ? 0 : known ? std::clamp(busy_o.memory_us / t_o, 0.0, 1.0) : (matmul ? 0.0 : unknown_share);
    // A library's matmul, convolution, attention or RNN kernel that moves to another datapath (FP32 lanes to TF32
    // or BF16 tensor cores) is replaced by the library's kernel for that datapath: what its DRAM traffic and its
    // fixed part do not explain is its math, at the library's efficiency, and moves with the datapath (measured
    // on the H100 with the same FP32 steps on FP32 lanes and on TF32, fixtures/tf32: counting that time as latency
    // kept 35-200% of the gain away). On the same datapath the kernel's efficiency is its architecture's (an A100's
    // FP32 GEMMs reach a larger share of its peak than an H100's), so the decomposition stays as measured. From
    // tensor cores to FP32 lanes (an Ampere+ trace on a V100 or T4) moving all of it over-predicts (+9% to +51% on
    // fixtures/tf32), moving none under-predicts (-19% to -46%): half moves (-13% to +29%, mean 9%).
    const bool switches = o.on_tensor_cores(w.precision) != d.on_tensor_cores(pd) || (pd != w.precision && d.on_tensor_cores(pd));
    const bool library_math = (known || matmul) && switches &&
                              (w.family == MathFamily::matmul || w.family == MathFamily::convolution ||
                               w.family == MathFamily::attention || w.family == MathFamily::rnn);
    // A legacy tensor-core kernel on Hopper runs at mma.sync's share of the peak (datapath.hpp): its math takes
    // longer at the origin, and where the library's own kernel replaces it, that one runs at the full rate of its
    // operands' layout.
    const double share_o = instruction_share(k.name, o, w.precision),
                 share_d = switches ? layout_share(k.name, d, pd) : instruction_share(k.name, d, pd);
    const double c_roof = t_o <= 0 ? 0 : known ? std::clamp(busy_o.compute_us / share_o / t_o, 0.0, 1.0) : (matmul ? unknown_share : 0.0);
    const double c_all = t_o > 0 ? std::max(c_roof, 1 - u - std::min(fixed_us, t_o) / t_o) : c_roof;
    const bool to_lanes = o.on_tensor_cores(w.precision) && !d.on_tensor_cores(pd);
    const double c = !library_math ? c_roof : to_lanes ? c_roof + 0.5 * (c_all - c_roof) : c_all;
    const double s_mem = byte_ratio * o.sustained_bandwidth_gbps() / d.sustained_bandwidth_gbps();
    const double rate_o = o.flops_per_clk_per_sm(w.precision) * o.load_clock_mhz(w.precision) * share_o;
    const double rate_d = d.flops_per_clk_per_sm(pd) * d.load_clock_mhz(pd) * share_d;
    const double clock = o.load_clock_mhz(Precision::fp32) / d.load_clock_mhz(Precision::fp32);

    Method method = Method::roofline_scaling;
    double load_ratio = 1, wave_ratio = 1;
    if (k.kind == GpuWorkKind::kernel && k.in_graph && w.source != WorkSource::measured) {
      // A CUDA graph's kernel has no framework op of its own to estimate its work from (and CUPTI may report its launch
      // as 1x1): it is taken to fill the GPU, a matmul or convolution (by its library's name) at the whole
      // GPU's math rate, anything else at DRAM bandwidth.
      const double s_gpu = matmul ? (rate_o * o.sms) / (rate_d * d.sms) : s_mem;
      return {t_o * s_gpu, Method::unrecorded_launch, matmul ? 0.0 : 1.0};
    }
    if (k.kind == GpuWorkKind::kernel && !k.launch_recorded) {
      // No launch recorded (ROCm): the math is taken to spread over every SM of both GPUs; what neither its math
      // nor its traffic explains is latency, which SMs do not shorten.
      method = Method::no_launch;
      load_ratio = double(o.sms) / double(d.sms);
    } else if (k.kind == GpuWorkKind::kernel) {
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
    // Where a library kernel's math is taken as all the time its traffic and fixed part leave, the three add up to
    // the kernel (u + c + fixed = 1), and each scales by its own resource: counting the traffic's share as latency
    // kept ViT-B/16's BF16 what-if 13% slow (held out, fixtures/whatif_heldout). Elsewhere traffic and math overlap,
    // as the roofline says, and what neither explains is latency.
    const bool parts_add = library_math && !to_lanes && c > c_roof && u + c <= 1;
    const double t_d = parts_add ? t_o * (u * s_mem + c * s_math + (1 - u - c) * s_lat)
                                 : t_o * (std::max(u * s_mem, c * s_math) + (1 - std::max(u, c)) * s_lat);
    if (!known && matmul && k.kind == GpuWorkKind::kernel && method == Method::roofline_scaling) method = Method::unknown_math;
    return {t_d, method, u};  // predict_trace's guard applies the roofline floor
  }
};

}  // namespace habitat
