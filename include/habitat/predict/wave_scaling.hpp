#pragma once
// Wave scaling (section 3.3): one template, the wave formula and the gamma source are its policies.
#include <algorithm>
#include <iterator>
#include <string>

#include "habitat/concepts.hpp"
#include "habitat/device/occupancy.hpp"
#include "habitat/predict/gamma.hpp"
#include "habitat/predict/kernel_work.hpp"
#include "habitat/predict/waves.hpp"

namespace habitat {

enum class Method {
  wave_scaling,
  wave_scaling_sm_ratio,
  bandwidth_scaling,
  host_transfer,
  mlp_ratio,
  roofline_scaling,
  roofline_operation,
  unrecorded_launch,
  tile_model,
  unknown_math,
  no_launch,
  collective,
};

[[nodiscard]] constexpr const char* to_string(Method m) {
  switch (m) {
    case Method::wave_scaling: return "wave scaling";
    case Method::wave_scaling_sm_ratio: return "wave scaling (launch does not fit destination; SM ratio)";
    case Method::bandwidth_scaling: return "bandwidth scaling (copy/fill)";
    case Method::host_transfer: return "host transfer (kept)";
    case Method::mlp_ratio: return "MLP ratio (kernel-varying op)";
    case Method::roofline_scaling: return "roofline scaling (per-SM datapath, waves, bandwidth)";
    case Method::roofline_operation: return "roofline scaling of the operation (launch does not fit destination)";
    case Method::unrecorded_launch: return "throughput scaling (CUDA graph kernel: work unknown)";
    case Method::tile_model: return "GEMM tile model (kernel-varying op)";
    case Method::unknown_math: return "math throughput scaling (matmul/convolution kernel, no recorded shapes)";
    case Method::no_launch: return "roofline scaling, spread over the GPU (launch not recorded: ROCm)";
    case Method::collective: return "collective model (NCCL kernel: message size, ranks, links)";
  }
  return "?";
}

inline constexpr Method all_methods[] = {Method::wave_scaling,     Method::wave_scaling_sm_ratio, Method::bandwidth_scaling,
                                         Method::host_transfer,    Method::mlp_ratio,             Method::roofline_scaling,
                                         Method::roofline_operation, Method::unrecorded_launch, Method::tile_model, Method::unknown_math, Method::no_launch,
                                         Method::collective};
static_assert(std::size(all_methods) == static_cast<std::size_t>(Method::collective) + 1, "list every Method (collective is the last)");

// A word or two for tables ("roofline 81%, tile 19%").
[[nodiscard]] constexpr const char* short_name(Method m) {
  switch (m) {
    case Method::wave_scaling: return "wave";
    case Method::wave_scaling_sm_ratio: return "wave-SM-ratio";
    case Method::bandwidth_scaling: return "bandwidth";
    case Method::host_transfer: return "host-copy";
    case Method::mlp_ratio: return "MLP";
    case Method::roofline_scaling: return "roofline";
    case Method::roofline_operation: return "roofline-op";
    case Method::unrecorded_launch: return "graph";
    case Method::tile_model: return "tile";
    case Method::unknown_math: return "math-rate";
    case Method::no_launch: return "no-launch";
    case Method::collective: return "collective";
  }
  return "?";
}

struct KernelPrediction {
  double duration_us = 0;
  Method method = Method::wave_scaling;
  double gamma = 1;
  bool floored = false;  // raised to the destination's roofline bound
};

template <WaveFormula Waves, GammaSource Gamma>
struct WaveScaling {
  using waves_policy = Waves;
  using gamma_policy = Gamma;

  [[nodiscard]] KernelPrediction predict(const Kernel& k, const KernelWork& w, const Device& origin, const Device& dest) const {
    const BandwidthPair bw = bandwidths(origin, dest);
    const double bw_ratio = bw.origin_gbps / bw.dest_gbps;
    const double gamma = std::clamp(Gamma::gamma(GammaInput{k, w, origin, dest, bw}), 0.0, 1.0);
    if (k.kind == GpuWorkKind::memcpy && k.copy_kind != "DtoD")  // crosses PCIe/NVLink-C2C, not DRAM
      return {k.duration_us, Method::host_transfer, 0};
    if (k.kind != GpuWorkKind::kernel)  // copies and fills run at DRAM speed on no particular grid
      return {k.duration_us * std::pow(bw_ratio, gamma), Method::bandwidth_scaling, gamma};
    WaveInput in{k.blocks(), 0, 0, bw_ratio, origin.boost_clock_mhz / dest.boost_clock_mhz, gamma};
    if (!k.launch_recorded) {
      // Taken to fill both GPUs: as many blocks as one per SM on each, several times over.
      in.blocks = std::int64_t{origin.sms} * dest.sms;
      in.wave_origin = origin.sms;
      in.wave_dest = dest.sms;
      return {k.duration_us * Waves::scale(in), Method::no_launch, gamma};
    }
    const LaunchConfig lc{k.threads_per_block(), k.registers_per_thread, k.shared_mem_bytes};
    const auto wave_o = try_wave_size(origin, lc);
    const auto wave_d = try_wave_size(dest, lc);
    if (wave_o && wave_d) {
      in.wave_origin = *wave_o;
      in.wave_dest = *wave_d;
      return {k.duration_us * Waves::scale(in), Method::wave_scaling, gamma};
    }
    // The launch cannot run unchanged on one of the GPUs (e.g. more shared memory than it has): the
    // library would pick another kernel. Scale by SMs, one block per SM, and say so.
    in.wave_origin = origin.sms;
    in.wave_dest = dest.sms;
    return {k.duration_us * Waves::scale(in), Method::wave_scaling_sm_ratio, gamma};
  }
};

// The default predictor: whole waves (Eq. 1) and the counter-free roofline-utilization gamma.
using DefaultWaveScaling = WaveScaling<waves::Exact, gamma::RooflineUtilization>;
// The paper's configuration: Eq. 2 and Eq. 3 gamma (1 where metrics are missing).
using PaperWaveScaling = WaveScaling<waves::Many, gamma::Roofline>;

}  // namespace habitat
