#pragma once
// A tile/wave model of GEMM kernels (linear, mm, addmm, bmm) that transfers to GPUs it was not fitted on.
// The library tiles the output into tm x tn tiles; each SM holds a few tiles at once and works through its
// share wave by wave; a tile's main loop runs at a share of the SM's datapath peak (SIMT FP32 lanes or
// tensor cores at the precision) that grows with K (prologue/epilogue amortised) and with the tile's
// arithmetic intensity; the whole GEMM cannot beat its compulsory DRAM traffic. The library's choice of
// tile (and, for a single GEMM too small to fill the GPU, how many slices of K to split it into) is modelled
// as the fastest of the tiles the library has for the architecture and precision (library_tiles), as cuBLAS's
// heuristics aim to pick. Every parameter is shared by all GPUs; a GPU enters only through its catalog facts
// (SMs, per-SM rate, sustained clock and bandwidth, compute capability), so an unseen GPU needs nothing fitted. In the spirit of NeuSight (tile waves with a learned
// utilisation), with a closed-form utilisation instead of an MLP. No code of theirs is used.
#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <span>
#include <string_view>

#include "habitat/device/device.hpp"
#include "habitat/ops/work.hpp"
#include "habitat/predict/roofline.hpp"

namespace habitat::gemm {

struct Tile {
  double tm, tn;
};

struct Shape {
  double batch = 1, m = 1, n = 1, k = 1;
  bool shared_weight = true;  // linear/mm: one [K,N] operand for all rows; bmm: one per batch
  bool transposed_b = false;  // x @ W^T (linear's "tn" layout)
  bool timed_alone = false;   // timed on its own, call after call (per-operation sweeps): see estimate()
  Precision precision = Precision::fp32;
  double elem_bytes = 4;
  bool blas = true;  // run by cuBLAS, whose tile lists library_tiles knows; false: another library's (cuDNN's), any tile unless `tiles`
  // The tiles its library has where the caller knows them (cuDNN 9's implicit GEMMs), else library_tiles'; it must
  // view storage that outlives the shape (a namespace-scope constexpr array).
  std::span<const Tile> tiles{};
  bool split_k = true;  // whether its library may split a single GEMM's K (cuBLAS; cuDNN 9's implicit GEMMs do not)

  // FLOPs and compulsory bytes: the project's one GEMM work model.
  [[nodiscard]] constexpr ops::Work work() const { return ops::gemm_work(batch, m, n, k, elem_bytes, shared_weight); }
};

// A value that differs between the two GEMM operations, chosen for the shape: linear's (one shared weight) or bmm's.
[[nodiscard]] constexpr double per_operation(const Shape& s, double linear, double bmm) { return s.shared_weight ? linear : bmm; }

struct Params {
  double e_max = 0.85;    // share of the datapath's sustained peak a 128x128 tile's main loop reaches at long K
  double k_half = 64;     // K at which the main loop reaches half of that (fixed per-tile prologue/epilogue)
  double alpha = 0.5;     // a tile of lower intensity tm*tn/(tm+tn) loses (I/I_128x128)^alpha of it
  double e_mem = 0.85;    // share of sustained bandwidth the compulsory traffic reaches
  double fixed_cycles = 6000;  // per-kernel fixed time in SM cycles (launch ramp, tail)
  double legacy_tn = 1.0;  // main-loop share of the "tn" (x @ W^T) kernels on pre-Volta GPUs, relative to "nn"
  double resident = 32768;  // output elements an SM holds at once (CTAs per SM = resident / (tm*tn))
  double clock_fall_us = 700;  // time constant of a capped card's fall from boost to its loop clock in one call
  double issue_share = 1;  // main-loop share left on SIMT lanes where issue, not lanes, limits (fp32_issue_limited)
  // Pre-Volta `tn` kernels slow down as K grows past legacy_long_k: their main loop takes (1 + legacy_long_k_loss
  // x log2(K / legacy_long_k)) times as long (not their traffic or fixed time). Both operands are read along K,
  // so a tile's rows lie K x 4 bytes apart and one K step of a 128-row tile spans 128 such rows. The same
  // maxwell_sgemm_32x128_tn runs at 6.1 TFLOPS on the P100 at K under 8K and 2.7 at K over 16K in NeuSight's
  // timings, the P4 likewise; the V100's and T4's kernels at the same shapes do not (README, "Deep K on Pascal").
  double legacy_long_k = 1e9;
  double legacy_long_k_loss = 0;
  // Main-loop share of a split-K GEMM's kernels relative to the library's unsplit ones, where its split kernels run
  // slower (slow_split_kernels): on Hopper, cuBLAS 13 splits FP32 GEMMs on CUTLASS's sm80 SIMT SGEMMs, sm80_xmma
  // 32x32 tiles or sgemm_largek (each with a memset), at a fraction of its unsplit kernels' rate (README, "Hopper's
  // split-K kernels"). Fitted after the shared constants (habitat-gemm-study).
  double split_share = 1;
};

// The most slices a split-K GEMM cuts K into, and the bytes of one partial output element (the slices accumulate
// in FP32 whatever the operands' precision). No shortest slice: a gate on K (there was one at 256) made a deeper
// GEMM faster where it crossed it (16x64 tiles, K 1023 -> 1024: 22%); a short slice pays through the main loop's
// efficiency (k_half) instead.
inline constexpr double split_k_max = 8, split_k_partial_bytes = 4;

inline constexpr std::array<Tile, 9> candidate_tiles{{{256, 128}, {128, 256}, {128, 128}, {128, 64}, {64, 128}, {64, 64}, {128, 32}, {32, 128}, {32, 32}}};

// What the library picks from. cuBLAS chooses its kernel by architecture and shape, not always the fastest tile:
// the kernel names of NeuSight's public FP32 timings (cuBLAS 12.1, PyTorch 2.1; a kernel "sgemm_AxB" covers A
// output columns by B rows, as their grids show) say which SIMT SGEMM tiles it runs on each architecture:
//   * sm_80 (A100) runs every batched `nn` GEMM with the 128x128 kernel (16,588 of 16,661 bmm rows), however
//     small its outputs: a 27 x 390 product per batch takes four 128x128 tiles;
//   * Pascal (P100, P4) runs every batched `nn` GEMM with the 128x64 kernel (17,720 and 17,713 of ~17,800). Its
//     single `nn` GEMMs (GPT-2's Conv1D) were not timed: taken as the same kernel (NeuSight's Pascal forward
//     passes: 8.8% / 6.2% mean error on the P100 / P4, 12.1% / 6.6% with a free choice). Its
//     `x @ W^T` ran three tiles of 4,096 outputs (32x128, 64x64, 128x32), but holding the model to them changed
//     nothing leaving a GPU out (the pre-Volta `tn` share and the architecture's residual carry that layout);
//   * no SIMT SGEMM before Hopper is larger than 128x128 (Volta, Turing and Ampere alike): every other FP32 GEMM
//     before Hopper, sm_86 and sm_89 included (no public row; unmeasured), chooses among those.
// Every public bmm row is `nn`: batched `tn` GEMMs (attention's q @ k^T) take the last rule. Hopper (cuBLAS 13
// in habitat's own H100/H200 timings) picks freely among all nine, CUTLASS's 256x128 included; so do other
// precisions than FP32 (half precisions without tensor cores convert as they load, in kernels not in the data),
// AMD GPUs and cuDNN's convolution kernels (Shape::blas false, unless the caller gives their tiles: Shape::tiles).
inline constexpr std::array<Tile, 1> ampere_batched_tiles{{{128, 128}}};
inline constexpr std::array<Tile, 1> pascal_nn_tiles{{{64, 128}}};
inline constexpr auto simt_legacy_tiles = std::span(candidate_tiles).subspan<2>();  // up to 128x128
static_assert(candidate_tiles[0].tm * candidate_tiles[0].tn > 128 * 128 && candidate_tiles[1].tm * candidate_tiles[1].tn > 128 * 128 &&
              std::ranges::all_of(simt_legacy_tiles, [](const Tile& t) { return t.tm * t.tn <= 128 * 128; }));

// Whether cuBLAS runs s on g as an FP32 SGEMM on the SIMT lanes (TF32 allowed on a GPU without TF32 tensor cores
// runs them too): the kernels whose tile lists and split-K kernels the public and habitat's timings name.
[[nodiscard]] inline bool blas_sgemm(const Shape& s, const Device& g) {
  const bool fp32 = s.precision == Precision::fp32 || (s.precision == Precision::tf32 && !g.on_tensor_cores(s.precision));
  return s.blas && fp32 && g.nvidia();
}

// cuBLAS 13's SGEMMs on Hopper (habitat's H100/H200 timings): any of the nine tiles, and split-K kernels slower than
// the unsplit ones. Later NVIDIA GPUs are taken as Hopper (no measurement).
[[nodiscard]] inline bool hopper_sgemms(const Device& g) { return g.cc_major >= 9; }

// Rows or output columns below which cuBLAS may run a GEMM on its thin-matrix kernels (gemv, gemmSN, dot), which
// split K their own way: every shape of habitat's fresh H200 set (fixtures/gemm_fresh) that ran on one has a side
// under 16.
inline constexpr double thin_gemm_side = 16;

// Whether its split-K kernels run below its unsplit ones (Params::split_share): cuBLAS's FP32 SGEMMs on Hopper
// (hopper_sgemms), not thin ones.
[[nodiscard]] inline bool slow_split_kernels(const Shape& s, const Device& g) {
  return blas_sgemm(s, g) && hopper_sgemms(g) && std::min(s.batch * s.m, s.n) >= thin_gemm_side;
}

// The tiles the library picks from for s on g (split-K, for single GEMMs, is estimate_at's).
[[nodiscard]] inline std::span<const Tile> library_tiles(const Shape& s, const Device& g) {
  if (!s.tiles.empty()) return s.tiles;
  if (!blas_sgemm(s, g) || hopper_sgemms(g)) return candidate_tiles;
  if (g.cc_major == 6 && !s.transposed_b) return pascal_nn_tiles;
  if (!s.shared_weight && !s.transposed_b && g.cc_major == 8 && g.cc_minor == 0) return ampere_batched_tiles;
  return simt_legacy_tiles;
}

// A GPU's library efficiency for large GEMMs relative to the shared constants, by layout (fitted where the
// GPU was measured; 1 elsewhere).
struct Calibration {
  std::string_view gpu;
  double nn = 1, tn = 1;
};

struct Estimate {
  double us = std::numeric_limits<double>::infinity();
  Tile tile{0, 0};
  double waves = 0;
};

// Pre-Volta `x @ W^T` GEMMs: the layout that runs below the shared constants and slows with a deep reduction.
[[nodiscard]] inline bool pre_volta_tn(const Shape& s, const Device& g) { return s.transposed_b && g.nvidia() && g.cc_major < 7; }

// Kernel time at one SM clock; kappa scales the main loop's share of peak (a GPU's library efficiency).
[[nodiscard]] inline Estimate estimate_at(const Shape& s, const Device& g, const Params& p, double clock_mhz, double kappa = 1) {
  const double rate_sm = g.gemm_flops_per_clk_per_sm(s.precision) * clock_mhz;  // FLOP per us per SM
  const double t_mem = s.work().bytes / (g.sustained_bandwidth_gbps() * 1e3 * p.e_mem);
  const double i_ref = 128.0 * 128.0 / 256.0;
  const double issue = !g.on_tensor_cores(s.precision) && g.fp32_issue_limited() ? p.issue_share : 1.0;
  Estimate best;
  const double layout = pre_volta_tn(s, g)
                            ? p.legacy_tn / (1 + p.legacy_long_k_loss * std::max(0.0, std::log2(s.k / p.legacy_long_k)))
                            : 1.0;
  const bool may_split = s.shared_weight && s.split_k;  // a single GEMM (below)
  const double split_share = slow_split_kernels(s, g) ? p.split_share : 1.0;
  for (const Tile& t : library_tiles(s, g)) {
    const double tiles = s.batch * std::ceil(s.m / t.tm) * std::ceil(s.n / t.tn);
    const double per_sm = std::max(1.0, std::floor(p.resident / (t.tm * t.tn)));
    const double slots = per_sm * g.sms;
    const double intensity = std::pow((t.tm * t.tn / (t.tm + t.tn)) / i_ref, p.alpha);
    // Split-K: where the tiles of a single GEMM leave SMs idle, the library may cut K into `split` slices run as
    // tiles of their own (cuBLAS's sliced/splitK and largek kernels), each slice's partial output written and
    // summed by a second kernel: a shorter loop on more SMs, against that traffic and the second kernel's fixed
    // time. Batched GEMMs fill the GPU with their batch instead (no split kernels in the public bmm timings).
    for (double split = 1; split == 1 || (may_split && split <= split_k_max && tiles * split <= slots); split *= 2) {
      const double n = tiles * split, depth = s.k / split;
      // Tiles on the busiest SM: full waves of per_sm each, then the last partial wave spread over the SMs.
      const double full = std::floor(n / slots);
      const double load = full * per_sm + std::ceil((n - full * slots) / g.sms);
      const double eff = kappa * layout * issue * (split > 1 ? split_share : 1.0) * p.e_max * (depth / (depth + p.k_half)) * intensity;
      const double t_math = load * 2 * t.tm * t.tn * depth / (rate_sm * std::min(eff, 1.0));
      const double partials = split > 1 ? 2 * split * s.batch * s.m * s.n * split_k_partial_bytes : 0;
      const double kernels = split > 1 ? 2 : 1;
      const double us = std::max(t_math, t_mem) + partials / (g.sustained_bandwidth_gbps() * 1e3 * p.e_mem) + kernels * p.fixed_cycles / clock_mhz;
      if (us < best.us) best = {us, t, std::ceil(n / slots)};
    }
  }
  return best;
}

// The mean clock over a call of `us` microseconds of a card that starts it at `start` and falls towards
// `floor` with time constant tau: floor + (start - floor) tau/D (1 - exp(-D/tau)).
[[nodiscard]] inline double mean_clock_mhz(double us, double start, double floor, double tau_us) {
  if (!(us > 0) || !(tau_us > 0)) return start;
  return floor + (start - floor) * tau_us / us * -std::expm1(-us / tau_us);
}

// Kernel time in microseconds of the GEMM on g, and the tile the model expects the library to pick. Under a
// model step a GPU runs at its clock under load. A GEMM timed on its own, call after call, on a card whose
// SGEMM loops run below boost (the capped T4 and P4 in NeuSight's public timings) starts each call at boost
// and falls towards its loop clock as the call goes on: GEMMs of 0.3-1 ms imply 1311 MHz on the T4, of
// 10 ms and more 715-730 (README, "Clocks under load"). It runs at the mean clock over its own duration
// (the fixed point, by bisection).
[[nodiscard]] inline Estimate estimate(const Shape& s, const Device& g, const Params& p, double kappa = 1) {
  const double boost = g.peak_clock_mhz(s.precision);
  Estimate e = estimate_at(s, g, p, g.load_clock_mhz(s.precision), kappa);
  if (const double loop = g.loop_clock_mhz_at(s.precision); s.timed_alone && loop < boost) {
    double lo = loop, hi = boost;  // the mean clock lies between; a longer call has a lower one
    for (int i = 0; i < 24; ++i) {
      const double mid = 0.5 * (lo + hi);
      (mean_clock_mhz(estimate_at(s, g, p, mid, kappa).us, boost, loop, p.clock_fall_us) > mid ? lo : hi) = mid;
    }
    e = estimate_at(s, g, p, lo, kappa);
  }
  // Never below the roofline bound at the fastest datapath the precision allows.
  const auto w = s.work();
  e.us = std::max(e.us, roofline_bound(w.flops, w.bytes, fastest_datapath(s.precision, g), g).bound_us());
  return e;
}

}  // namespace habitat::gemm
