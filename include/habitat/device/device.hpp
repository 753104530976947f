#pragma once
// A GPU's specification: per-SM throughput of each datapath, clocks, memory, price and provenance. Peaks
// are derived from the per-SM facts (lanes x 2 x SMs x clock), never stored twice.
#include <algorithm>
#include <cctype>
#include <cmath>
#include <map>
#include <optional>
#include <string_view>
#include <string>
#include <vector>

#include "habitat/detail/number_text.hpp"
#include "habitat/detail/quantile.hpp"

namespace habitat {

enum class Precision { fp32, tf32, fp16, bf16 };

// Who makes the GPU: the per-SM facts of the two differ in kind (NVIDIA SMs issue 32-thread warps, AMD compute
// units 64-thread wavefronts; an AMD GPU's compute capability is HIP's gfx number, 9.0 for gfx90a as for Hopper),
// so a rule written for an NVIDIA generation names its vendor.
enum class Vendor { nvidia, amd };

[[nodiscard]] constexpr const char* to_string(Precision p) {
  switch (p) {
    case Precision::fp32: return "fp32";
    case Precision::tf32: return "tf32";
    case Precision::fp16: return "fp16";
    case Precision::bf16: return "bf16";
  }
  return "?";
}
// The precision a name (to_string's) stands for; nothing for another name.
[[nodiscard]] inline std::optional<Precision> precision_named(std::string_view s) {
  for (const Precision p : {Precision::fp32, Precision::tf32, Precision::fp16, Precision::bf16})
    if (s == to_string(p)) return p;
  return std::nullopt;
}

// Per-SM resources that decide occupancy (names follow cudaDeviceProp).
struct OccupancyLimits {
  int max_threads_per_block = 1024;
  int max_threads_per_sm = 2048;
  int regs_per_block = 65536;
  int regs_per_sm = 65536;
  int warp_size = 32;
  long shared_mem_per_block = 49152;
  long shared_mem_per_sm = 65536;
  long shared_mem_per_block_optin = 49152;
  long reserved_shared_mem_per_block = 0;
};

struct Price {
  double usd_per_hour = 0;
  std::string date;    // when the price was read
  std::string source;  // who charges it
};

// Dense tensor-core FLOP per clock per SM, FP32 accumulate; 0 where the GPU has no such datapath.
struct TensorRates {
  double tf32 = 0, fp16 = 0, bf16 = 0, fp8 = 0;
};

// How GPUs of this type are connected in the node they usually come in, and that node to others. All
// bandwidths are GB/s per direction per GPU; 0 means none or unknown.
struct Interconnect {
  int nvlink_generation = 0, nvlink_links = 0;
  double nvlink_gbps = 0;
  bool nvswitch = false;  // every GPU pair at full NVLink bandwidth; without it NVLink joins pairs or a mesh
  int pcie_generation = 0, pcie_lanes = 0;
  double pcie_gbps = 0;
  int node_gpus = 1;       // GPUs in the typical node
  std::string node_shape;  // e.g. "HGX H100 8-GPU, NVSwitch"
  double network_gbps = 0;  // between nodes, per GPU
  std::string network;      // what that figure is (e.g. "InfiniBand NDR 400 Gb/s per GPU")
  std::string source;
  // Bandwidth between GPUs of one node: NVLink where it joins them all, else PCIe.
  [[nodiscard]] double intra_node_gbps(int gpus) const {
    if (nvlink_gbps > 0 && (nvswitch || gpus <= 2)) return nvlink_gbps;
    return pcie_gbps;
  }
};

struct Device {
  std::string name;
  std::vector<std::string> aliases;
  Vendor vendor = Vendor::nvidia;
  std::string isa;  // AMD: the gfx target ("gfx90a"), which keys its architecture's limits; empty on NVIDIA
  int cc_major = 0, cc_minor = 0;  // AMD: as HIP reports it (gfx90a: 9.0, gfx942: 9.4)
  int sms = 0;
  double base_clock_mhz = 0, boost_clock_mhz = 0;
  double tensor_clock_mhz = 0;     // clock the vendor quotes tensor peaks at (0: boost)
  // SM clock tensor-core kernels run at under a model step, measured (0: tensor_clock_mhz). The datasheet's is
  // what a tensor-core GEMM loop holds at the power limit; a step mixes them with lighter work (fixtures/clocks).
  double tensor_step_clock_mhz = 0;
  std::string tensor_step_clock_source;
  double sustained_clock_mhz = 0;  // SM clock under a model step's load where it is below boost, measured (0: see below)
  std::string sustained_clock_source;
  // A power-capped card without a measured clock names a card of its process that holds boost at its TDP;
  // the catalog derives its clock under load from it (power_limited_clock_mhz) into power_clock_mhz.
  std::string power_reference;
  double power_clock_mhz = 0;
  std::string power_clock_source;
  // SM clock of one large SGEMM timed back to back on its own for long (per-operation sweeps such as
  // NeuSight's), where it is below the clock under a model step's load: the hottest work there is.
  double loop_clock_mhz = 0;
  std::string loop_clock_source;
  std::string loop_clock_peer;  // where the catalog derived loop_clock_mhz from another card's (loop_clock_from_peer): its name
  // Foundry process family ("TSMC 16/12 nm"), where known: power-capped cards of one family share an SGEMM loop's energy
  // per FP32 lane-clock (loop_clock_from_peer).
  std::string process_family;
  // The same for a tensor-core GEMM loop, where measured: the densest work there is, held at the board's power limit
  // below the clock tensor peaks are quoted at (an H100 SXM's BF16 and TF32 8192^3 loops at 1365-1395 MHz).
  double tensor_loop_clock_mhz = 0;
  std::string tensor_loop_clock_source;
  // Where none was measured: the same clock derived from the board's power limit (tensor_power_clock_mhz), 0 where
  // the board holds its tensor clock; set by the catalog.
  double tensor_power_clock_mhz = 0;
  std::string tensor_power_clock_source;
  std::string tensor_power_twin;  // the catalog GPU whose measured loop clock that is (power_twins); empty: the law's
  double memory_gib = 0;
  double bandwidth_spec_gbps = 0;
  std::optional<double> bandwidth_measured_gbps;  // sustained DRAM bandwidth (measured, derived or estimated)
  std::string bandwidth_measured_source;
  std::string memory;  // DRAM technology ("GDDR6", "HBM3", ...; empty: unknown)
  [[nodiscard]] bool hbm() const { return memory.rfind("HBM", 0) == 0; }
  // The memory's generation: its technology without the speed-grade suffix that follows the generation's digit
  // (HBM2e -> HBM2, HBM3E -> HBM3, GDDR6X -> GDDR6; "" where unknown). Taken to sustain a similar share of its spec
  // (the leave-one-GPU-out studies' estimate for a GPU they never measured: studies/unseen_gpu.hpp).
  [[nodiscard]] std::string memory_generation() const {
    std::string m = memory;
    auto suffix = [](char c) { return c == 'e' || c == 'E' || c == 'x' || c == 'X'; };
    while (m.size() >= 2 && suffix(m.back()) && std::isdigit(static_cast<unsigned char>(m[m.size() - 2]))) m.pop_back();
    return m;
  }
  // Whether the sustained bandwidth was measured or derived from measurements of this GPU, not estimated from others.
  [[nodiscard]] bool bandwidth_measured_here() const {
    return bandwidth_measured_gbps && bandwidth_measured_source.rfind("estimate", 0) != 0;
  }
  double fp32_lanes_per_sm = 0, fp64_lanes_per_sm = 0;
  TensorRates tensor;
  double tdp_w = 0;
  double l2_mib = 0;
  std::map<std::string, double> datasheet;  // vendor peak TFLOPS by key ("fp32_tflops", ...): checked, not used
  std::optional<Price> price;
  std::string validation;  // what real measurements of this GPU habitat was checked against, with the error
  std::string reference_host;  // host profile (data/hosts) of the machine this GPU usually comes in, if known
  Interconnect interconnect;
  std::string source;
  OccupancyLimits limits;

  // Dense FLOP per clock per SM on the datapath a kernel of precision p runs on: tensor cores where the GPU
  // has them for p, else the FP32 SIMT lanes (PyTorch runs BF16 GEMMs on FP32 units on pre-Ampere GPUs).
  [[nodiscard]] double flops_per_clk_per_sm(Precision p) const {
    const double simt = 2 * fp32_lanes_per_sm;
    switch (p) {
      case Precision::fp32: return simt;
      case Precision::tf32: return tensor.tf32 > 0 ? tensor.tf32 : simt;
      case Precision::fp16: return tensor.fp16 > 0 ? tensor.fp16 : simt;
      case Precision::bf16: return tensor.bf16 > 0 ? tensor.bf16 : simt;
    }
    return simt;
  }
  // BF16 GEMMs without BF16 tensor cores (before Ampere) convert each operand to FP32 as they load it: PyTorch's
  // torch.mm in BF16 reaches 0.56-0.74 of the same GPU's FP32 rate on the P4, P100, RTX 2070, RTX 2080 Ti and V100
  // (public table, fixtures/published/torch_mm.json; the median 0.61, 0.59-0.63 leaving any one of them out).
  static constexpr double bf16_converted_share = 0.61;
  // FLOP per clock per SM of PyTorch's cuBLAS GEMMs (torch.mm, linear, bmm) at precision p, which is not always the
  // datapath's peak: half-precision GEMMs accumulate in FP32 (cublasGemmEx with FP32 compute), so without tensor
  // cores (cc < 7) FP16 ones run on the FP32 lanes and a P100's FP16x2 rate goes unused (public torch.mm: 8.8
  // TFLOPS in FP16 against 9.5 in FP32); BF16 ones without BF16 tensor cores run at the converted share.
  [[nodiscard]] double gemm_flops_per_clk_per_sm(Precision p) const {
    const double simt = 2 * fp32_lanes_per_sm;
    const double datapath = flops_per_clk_per_sm(p);  // never above the datapath's own rate (the roofline bounds use it)
    if (p == Precision::fp16 && nvidia() && cc_major < 7) return std::min(simt, datapath);
    if (p == Precision::bf16 && tensor.bf16 <= 0) return std::min(simt * bf16_converted_share, datapath);
    return datapath;
  }
  // Whether one warp scheduler feeds 32 FP32 lanes with one instruction per clock (Volta onwards issue one
  // instruction per clock; Maxwell and Pascal could pair an FFMA with a load): with 128 lanes per SM
  // (GA10x, AD10x, Hopper, Blackwell) every issue slot an FFMA-bound loop spends on loads and addressing
  // is a lane-clock lost, so such loops stay further below the lanes' peak than on 64-lane SMs.
  [[nodiscard]] bool fp32_issue_limited() const { return nvidia() && cc_major >= 7 && fp32_lanes_per_sm >= 128; }
  [[nodiscard]] bool nvidia() const { return vendor == Vendor::nvidia; }
  [[nodiscard]] bool hopper() const { return nvidia() && cc_major == 9; }
  // Threads whose instruction an SM issues per clock: warp schedulers x 32. Every NVIDIA SM since Maxwell has 4,
  // but GP100's (compute capability 6.0: P100) has 2, one per 32-lane processing block (NVIDIA Tesla P100
  // whitepaper); an AMD CDNA compute unit has 4 SIMD16 units, each taking 4 clocks over a 64-thread wavefront
  // (AMD CDNA ISA guides).
  [[nodiscard]] double issue_threads_per_clk_per_sm() const {
    if (!nvidia()) return 64;
    return cc_major == 6 && cc_minor == 0 ? 64 : 128;
  }
  [[nodiscard]] bool on_tensor_cores(Precision p) const {
    switch (p) {
      case Precision::fp32: return false;
      case Precision::tf32: return tensor.tf32 > 0;
      case Precision::fp16: return tensor.fp16 > 0;
      case Precision::bf16: return tensor.bf16 > 0;
    }
    return false;
  }

  [[nodiscard]] double peak_clock_mhz(Precision p) const {
    return on_tensor_cores(p) && tensor_clock_mhz > 0 ? tensor_clock_mhz : boost_clock_mhz;
  }
  // The datasheet peak, derived: FLOP/clk/SM x SMs x clock.
  [[nodiscard]] double peak_tflops(Precision p) const { return flops_per_clk_per_sm(p) * sms * peak_clock_mhz(p) * 1e-6; }
  [[nodiscard]] double fp32_tflops() const { return peak_tflops(Precision::fp32); }
  // Clock under a model step's load: measured where known, else derived from the board's power limit for a
  // power-capped card, else the peak clock.
  [[nodiscard]] double load_clock_mhz(Precision p) const {
    const double peak = on_tensor_cores(p) && tensor_step_clock_mhz > 0 ? tensor_step_clock_mhz : peak_clock_mhz(p);
    const double capped = sustained_clock_mhz > 0 ? sustained_clock_mhz : power_clock_mhz;
    return capped > 0 ? std::min(capped, peak) : peak;
  }
  [[nodiscard]] const std::string& load_clock_source() const {
    return sustained_clock_mhz > 0 ? sustained_clock_source : power_clock_source;
  }
  // A tensor-core GEMM loop's clock: measured, else derived from the power limit, never above the SGEMM loop's (measured,
  // or derived from a peer: the denser work); 0 where neither applies. And where it comes from.
  [[nodiscard]] double tensor_loop_clock() const {
    if (tensor_loop_clock_mhz > 0) return tensor_loop_clock_mhz;
    return tensor_power_clock_mhz > 0 && loop_clock_mhz > 0 ? std::min(tensor_power_clock_mhz, loop_clock_mhz) : tensor_power_clock_mhz;
  }
  [[nodiscard]] const std::string& tensor_loop_clock_source_used() const {
    if (tensor_loop_clock_mhz > 0) return tensor_loop_clock_source;
    return loop_clock_mhz > 0 && loop_clock_mhz < tensor_power_clock_mhz ? loop_clock_source : tensor_power_clock_source;
  }
  // Whether a tensor-core GEMM loop at p runs at the clock derived from the power limit (not a measured or lower one).
  [[nodiscard]] bool tensor_loop_clock_from_power(Precision p) const {
    return on_tensor_cores(p) && !(tensor_loop_clock_mhz > 0) && tensor_power_clock_mhz > 0 && loop_clock_mhz_at(p) == tensor_power_clock_mhz;
  }
  // Its FP16 tensor-core TFLOPS at the tensor clock: the power law's demand (tensor_power_share).
  [[nodiscard]] double tensor_fp16_tflops_at_tensor_clock() const { return tensor.fp16 * sms * peak_clock_mhz(Precision::fp16) * 1e-6; }
  // The tensor loop clock (MHz) at `share` of the tensor clock; 0 where the share is 1 (the board holds its clock).
  [[nodiscard]] double tensor_clock_at_share(double share) const { return share < 1 ? share * peak_clock_mhz(Precision::fp16) : 0; }
  // Whether the tensor-core power law (tensor_power_share) covers this GPU: NVIDIA tensor cores and the facts it needs.
  [[nodiscard]] bool tensor_power_applies() const { return nvidia() && cc_major >= 7 && tensor.fp16 > 0 && tdp_w > 0 && sms > 0; }
  // Clock of one GEMM timed alone in a long loop (per-operation sweeps).
  [[nodiscard]] double loop_clock_mhz_at(Precision p) const {
    const double load = load_clock_mhz(p);
    if (const double tensor = tensor_loop_clock(); on_tensor_cores(p) && tensor > 0) return std::min(tensor, load);
    return loop_clock_mhz > 0 ? std::min(loop_clock_mhz, load) : load;
  }
  // What a kernel can sustain: FLOP/clk/SM x SMs x load clock.
  [[nodiscard]] double sustained_tflops(Precision p) const { return flops_per_clk_per_sm(p) * sms * load_clock_mhz(p) * 1e-6; }
  // Sustained DRAM bandwidth: measured (or derived/estimated, see the source) where known, else the spec
  // times the typical sustained share (so a user's GPU without a measurement is not compared at spec
  // against measured ones).
  static constexpr double typical_sustained_bandwidth_share = 0.82;  // median of measured/spec over the catalog's measured GPUs
  [[nodiscard]] double sustained_bandwidth_gbps() const {
    return bandwidth_measured_gbps.value_or(bandwidth_spec_gbps * typical_sustained_bandwidth_share);
  }
};

// The clock a power-capped card holds under a model step. Its FP32 lanes at boost would draw the power of a
// reference card of the same process (which holds boost at its TDP) scaled by lanes x clock; the board
// holds its TDP instead, and power falls as the clock squared (dynamic power f V^2, with the voltage
// between its floor, where power ~ f, and tracking the clock, where power ~ f^3). T4 from the V100 PCIe:
// 1108 MHz; P4 from the P100: 763 MHz (README, "Clocks under load", checked on NeuSight's end-to-end labels).
inline constexpr double power_clock_exponent = 2;
[[nodiscard]] inline double power_limited_clock_mhz(const Device& card, const Device& ref) {
  const double lanes_clock = card.fp32_lanes_per_sm * card.sms * card.boost_clock_mhz;
  const double ref_lanes_clock = ref.fp32_lanes_per_sm * ref.sms * ref.boost_clock_mhz;
  if (!(card.tdp_w > 0 && ref.tdp_w > 0 && ref_lanes_clock > 0)) return card.boost_clock_mhz;
  const double demand_w = ref.tdp_w * lanes_clock / ref_lanes_clock;
  return card.boost_clock_mhz * std::min(1.0, std::pow(card.tdp_w / demand_w, 1 / power_clock_exponent));
}

// The clock of one large SGEMM timed alone, call after call, on a power-capped card that has none measured, from a capped
// card of its process family that has: held at its power limit far below boost, the voltage sits at its floor and power
// goes as the clock (power_clock_exponent's lower end), so both draw the same energy per FP32 lane-clock and the clock
// is the TDP over lanes x that energy. The P4 (16FF+, 75 W) and the T4 (12FFN, a 16FF+ derivative, 70 W), whose loop
// clocks come from NeuSight's public timings, give each other 782 against 770 MHz and 719 against 730.
[[nodiscard]] inline bool loop_clock_peers(const Device& card, const Device& peer) {
  return card.name != peer.name && !card.power_reference.empty() && !peer.power_reference.empty() && !card.process_family.empty() &&
         card.process_family == peer.process_family && peer.loop_clock_mhz > 0 && peer.loop_clock_peer.empty() && card.tdp_w > 0 &&
         peer.tdp_w > 0 && card.fp32_lanes_per_sm * card.sms > 0 && peer.fp32_lanes_per_sm * peer.sms > 0;
}
[[nodiscard]] inline double loop_clock_from_peer(const Device& card, const Device& peer) {
  const double joules_per_lane_clock = peer.tdp_w / (peer.fp32_lanes_per_sm * peer.sms * peer.loop_clock_mhz);
  return std::min(card.boost_clock_mhz, card.tdp_w / (card.fp32_lanes_per_sm * card.sms * joules_per_lane_clock));
}
// Sets the card's loop clock from its peers among `gpus` (the median of what each gives), naming them; unchanged where none.
inline void derive_loop_clock_from_peers(Device& card, const std::vector<const Device*>& gpus) {
  std::vector<double> clocks;
  std::string names;
  for (const Device* peer : gpus) {
    if (!loop_clock_peers(card, *peer)) continue;
    clocks.push_back(loop_clock_from_peer(card, *peer));
    names += (names.empty() ? "" : " and the ") + peer->name;
  }
  if (clocks.empty()) return;
  card.loop_clock_mhz = detail::median_of_runs(std::move(clocks), 0);
  card.loop_clock_peer = names;
  card.loop_clock_source = "derived from the board's power limit (" + detail::number_text(card.tdp_w) + " W) and the energy per FP32 lane-clock of the " +
                           names + "'s SGEMM loop (" + card.process_family + ", power ~ clock at the voltage floor); an estimate, not a measurement";
}

// The clock of a dense tensor-core GEMM loop (torch.mm back to back, per-operation sweeps), the most power a board
// draws per clock: at its tensor clock many boards would draw more than their TDP, and the clock falls until the
// board fits. Per SM, a static part (W) and the tensor datapath's, `w_per_tflops` for each FP16 TFLOPS it runs at the
// tensor clock, falling as (f / f_tensor)^3 (dynamic power f V^2, the voltage tracking the clock). The share of the
// tensor clock is at least `tensor_power_min_share`. The two constants are shared by every GPU the law covers
// (Device::tensor_power_applies): fitted on public torch.mm throughput and checked leaving each GPU out
// (habitat-gemm-study --part power writes tensor_power_fit.hpp; README, "Tensor-core GEMM loops on every other board").
struct TensorPower {
  double static_w_per_sm = 1, w_per_tflops = 2;
};
inline constexpr double tensor_power_exponent = 3, tensor_power_min_share = 0.3;
[[nodiscard]] inline double tensor_power_share(const Device& d, const TensorPower& c) {
  if (!d.tensor_power_applies() || !(c.w_per_tflops > 0)) return 1;
  const double budget = d.tdp_w / d.sms - c.static_w_per_sm, demand = c.w_per_tflops * d.tensor_fp16_tflops_at_tensor_clock() / d.sms;
  return std::clamp(budget > 0 ? std::pow(budget / demand, 1 / tensor_power_exponent) : 0.0, tensor_power_min_share, 1.0);
}
// That clock in MHz where the law caps it, 0 where the board holds its tensor clock.
[[nodiscard]] inline double tensor_power_clock(const Device& d, const TensorPower& c) {
  return d.tensor_clock_at_share(tensor_power_share(d, c));
}

// Whether two GPUs draw the same power in the same tensor-core loop: one silicon configuration (SMs, tensor rate,
// clocks), one memory and one power limit, as the H800 SXM and the H100 SXM (they differ in NVLink and FP64 only,
// idle in a GEMM). A loop clock measured on one holds for the other; the law is only an estimate.
[[nodiscard]] inline bool power_twins(const Device& a, const Device& b) {
  return a.vendor == b.vendor && a.cc_major == b.cc_major && a.cc_minor == b.cc_minor && a.sms == b.sms && a.tensor.fp16 == b.tensor.fp16 &&
         a.peak_clock_mhz(Precision::fp16) == b.peak_clock_mhz(Precision::fp16) && a.boost_clock_mhz == b.boost_clock_mhz &&
         a.tdp_w == b.tdp_w && a.memory == b.memory && a.bandwidth_spec_gbps == b.bandwidth_spec_gbps;
}

// Bandwidths of two GPUs compared like with like: measured on both where both are measured, else the
// spec sheet on both (a measured/spec mix would bias every ratio by the measurement efficiency).
struct BandwidthPair {
  double origin_gbps, dest_gbps;
  bool measured;
};

[[nodiscard]] inline BandwidthPair bandwidths(const Device& origin, const Device& dest) {
  if (origin.bandwidth_measured_gbps && dest.bandwidth_measured_gbps)
    return {*origin.bandwidth_measured_gbps, *dest.bandwidth_measured_gbps, true};
  return {origin.bandwidth_spec_gbps, dest.bandwidth_spec_gbps, false};
}

}  // namespace habitat
