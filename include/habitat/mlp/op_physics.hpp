#pragma once
// The physics answer for one operation configuration, used where a learned model steps aside: the op's
// work at what the GPU sustains (datapath x SMs x sustained clock; measured bandwidth), divided by the
// share of that roofline such ops reach, plus the cost of one timed call. Convolutions reach a share that
// depends on their shape: a log-linear efficiency model of their implicit GEMM stands in for the share.
//
// Shares are medians over NeuSight's public FP32 timings on P4, P100, T4, V100 and A100 (sitar-lab/NeuSight,
// MIT; configurations whose sustained-roofline time exceeds 0.2 ms), derived once; the rows are not
// shipped. `habitat-gemm-study --part ops` re-derives them leaving one GPU out, with habitat's H100/H200
// measurements added. All are shared by every GPU, so the model has no per-GPU parameter that could be
// missing on an unseen one.
#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <optional>
#include <span>
#include <string_view>

#include "habitat/device/device.hpp"
#include "habitat/mlp/features.hpp"
#include "habitat/ops/dtype.hpp"
#include "habitat/predict/gemm_tile_fit.hpp"
#include "habitat/predict/roofline.hpp"

namespace habitat::mlp {

struct OpPhysicsShares {
  // Memory-bound shares are over the kernel time left after the call's lead (see timed_call_ms).
  double gemm = 0.65, norm = 0.66, softmax = 0.82, elementwise = 1.00;  // convolutions: conv_efficiency
  // One timed call's overhead (launch and events), NeuSight's protocol, for an op without a measured floor (a
  // convolution in predict-ops): F.linear's, the longer of the GEMMs' two, as a functional's call; NeuSight's
  // convolution floors start at 40-91 us along their files (opstudy::conv_floor_line).
  double call_ms = gemm::fitted_call_us / 1e3;
  // The shortest a kernel runs: the median `add` kernel of configurations under 20k elements on habitat's
  // H100 and H200 (data/opdata/*_neusight, CUPTI kernel durations: 1.25 and 1.0 us).
  double kernel_floor_ms = 0.0011;
  // Layer norm and softmax kernels have a longer fixed part, their block reductions' latency: the median kernel of
  // configurations under 1 MB on habitat's H100 and H200 (the same data; the public GPUs' timed calls hide it).
  // habitat-gemm-study --part ops derives them, leaving out the GPU under test. Taken in SM clocks instead, it
  // grows on the slow-clocked capped cards and measured worse there (P4 softmax 14.0% -> 15.6%, T4 layer norm
  // 11.1% -> 12.0%, leaving each out) where in time it leaves them within 0.5 point.
  double norm_floor_ms = 0.00310, softmax_floor_ms = 0.00182;
};
inline constexpr OpPhysicsShares op_physics_shares{};

// An elementwise op, a softmax or a layer norm called back to back on the same tensors finds its working set in
// L2 and streams it at the L2's rate, which scales with SMs and clock (its slices do), not with DRAM; softmax and
// layer norm are then held by their code (issue_costs). The older GPUs' rows hide it under the call.
struct L2Reuse {
  // Bytes per clock per SM from L2 where the whole working set stays there.
  double bytes_per_clk_per_sm = 37.5;
  // Not all of a set that fits stays: the share that hits falls as the set grows towards the L2's size, as
  // 1 - (set / L2)^exponent (0 beyond it). On the H100 and the H200 alike, add's rate falls from the L2's at a
  // third of L2 to the DRAM's at its full size (hits: 0.93 at 0.35x, 0.8 at 0.55x, 0.5 at 0.75x, 0.15-0.2 at
  // 0.95x). A step at the full size, before, left sets of 0.1-0.6x L2 15-45% too slow and larger ones too fast.
  // Both fitted together, least absolute relative error of the byte-bound operators' kernel-timed rows of
  // 0.1-1x L2 on habitat's H100 and H200 (data/opdata/*_neusight): `habitat-gemm-study --part ops` re-derives
  // them leaving one GPU out (from the H200 alone: 36.5 and 3.4; from the H100 alone: 34.5 and 2.8).
  double hit_exponent = 2.6;
};
inline constexpr L2Reuse l2_reuse{};
inline constexpr L2Reuse no_l2_reuse{0, 1};

// The share of a working set of `bytes` that back-to-back calls find in an L2 of `l2_bytes`.
[[nodiscard]] inline double l2_hit_share(double bytes, double l2_bytes, double exponent) {
  if (!(l2_bytes > 0) || !(bytes >= 0) || bytes >= l2_bytes) return 0;
  return 1 - std::pow(bytes / l2_bytes, exponent);
}

// One timed call of a memory-bound operation (NeuSight's protocol: CUDA events around one call from
// Python) lasts max(F, lead x F + kernel): part of the host's floor F passes before the kernel starts, the
// rest overlaps it. Fitted per GPU with the lead free, this form fits every elementwise operator within
// 0.5-4.6% (a floor added to the kernel: 6-12%); the lead is about half the floor for elementwise ops and
// softmax, 0.83 for layer norm (medians of the five per-GPU fits). F depends on the operator's Python path
// and on the host, not on the GPU: the median over the five (5th-percentile latency of each; P100's and
// V100's hosts are 20-70% slower), in ms.
struct CallFloor {
  std::string_view op;  // NeuSight's operator name
  double ms, lead;
};
inline constexpr std::array<CallFloor, 13> call_floors{{{"add", 0.0262, 0.5},
                                                        {"mul", 0.0260, 0.5},
                                                        {"div", 0.0261, 0.5},
                                                        {"pow", 0.0266, 0.5},
                                                        {"addu", 0.0312, 0.5},
                                                        {"mulu", 0.0310, 0.5},
                                                        {"divu", 0.0314, 0.5},
                                                        {"powu", 0.0292, 0.5},
                                                        {"relu", 0.0327, 0.5},
                                                        {"tanh", 0.0257, 0.5},
                                                        {"gelu", 0.0300, 0.5},
                                                        {"ln", 0.0477, 0.83},
                                                        {"softmax", 0.0337, 0.52}}};

// NeuSight's name for a memory-bound query (elementwise by operator and operand count); empty for others.
[[nodiscard]] inline std::string_view floor_op_name(const OpQuery& q) {
  using ops::OpKind;
  switch (q.op) {
    case OpKind::batch_norm:
    case OpKind::layer_norm: return "ln";
    case OpKind::softmax: return "softmax";
    case OpKind::elementwise:
      for (const auto& e : ops::elementwise_ops)
        if (e.operands == q.dims[2] && e.code == q.dims[3]) return e.name;
      return "add";
    default: return {};
  }
}

// The timed-call floor of a memory-bound query; nullopt for the matrix-math ops, whose call overhead is
// the tile model's additive one.
[[nodiscard]] inline std::optional<CallFloor> call_floor(const OpQuery& q) {
  const auto name = floor_op_name(q);
  for (const auto& f : call_floors)
    if (f.op == name) return f;
  return std::nullopt;
}

// A timed call around a kernel of `kernel_ms` (with floor_ms the call's floor): the overlap form where the
// op has a floor, else additive.
[[nodiscard]] inline double timed_call_ms(std::optional<CallFloor> f, double kernel_ms) {
  return f ? std::max(f->ms, f->lead * f->ms + kernel_ms) : op_physics_shares.call_ms + kernel_ms;
}

// FP32 stays on the SIMT lanes, convolutions included: NeuSight's protocol turns TF32 off (their A100
// convolutions ran FP32 kernels), and these shares were derived under it. (The MLP features assume cuDNN's
// TF32 default instead; the roofline bound allows either.)
[[nodiscard]] inline Precision op_precision(const OpQuery& q) {
  return q.dtype == ops::DataType::bf16 && gemm_like(q.op) ? Precision::bf16 : Precision::fp32;
}

[[nodiscard]] inline double roofline_share(ops::OpKind k) {
  using ops::OpKind;
  switch (k) {
    case OpKind::linear:
    case OpKind::bmm:
    case OpKind::lstm:
    case OpKind::sdpa: return op_physics_shares.gemm;
    case OpKind::conv2d:
    case OpKind::conv_transpose2d: return 1.0;  // not used: physics_kernel_ms times them by conv_work_ms
    case OpKind::batch_norm:
    case OpKind::layer_norm: return op_physics_shares.norm;
    case OpKind::softmax: return op_physics_shares.softmax;
    case OpKind::elementwise: return op_physics_shares.elementwise;
  }
  return op_physics_shares.gemm;
}

// Bytes as DRAM sees them: the share of an elementwise op's, a softmax's or a layer norm's working set found in L2 moves at the
// L2's rate (where that is faster), so it counts as bytes x DRAM rate / L2 rate.
[[nodiscard]] inline double dram_bytes(const OpQuery& q, double bytes, const Device& g, const L2Reuse& l2) {
  if ((q.op != ops::OpKind::elementwise && q.op != ops::OpKind::softmax && q.op != ops::OpKind::layer_norm) || l2.bytes_per_clk_per_sm <= 0) return bytes;
  const double hit = l2_hit_share(bytes, g.l2_mib * 1024 * 1024, l2.hit_exponent);
  if (hit <= 0) return bytes;
  const double l2_gbps = l2.bytes_per_clk_per_sm * g.sms * g.load_clock_mhz(Precision::fp32) * 1e-3;
  return bytes * (1 - hit + hit * std::min(1.0, g.sustained_bandwidth_gbps() / l2_gbps));
}

// The op's work at what g sustains (ms): the numerator of every physics op time.
[[nodiscard]] inline double sustained_roofline_ms(const OpQuery& q, const Device& g, const L2Reuse& l2 = no_l2_reuse) {
  const auto w = ops::op_work(q.op, q.dims, q.dtype, q.pass);
  return roofline_sustained(w.flops, dram_bytes(q, w.bytes, g, l2), op_precision(q), g).bound_us() / 1e3;
}

// Convolutions as the implicit GEMM cuDNN runs them: M = batch x the pixels each weight meets (output
// pixels; a transposed convolution's input pixels, as in ops::conv_work), N = output channels, K = input
// channels x kernel area; so 2MNK is the op's FLOPs.
struct ImplicitGemm {
  double m = 1, n = 1, k = 1;
};

[[nodiscard]] inline ImplicitGemm implicit_gemm(const OpQuery& q) {
  const auto& d = q.dims;
  const double b = d[0], ci = d[1], co = d[2], ks = d[3], in = d[4], s = d[5], pad = d[6];
  const bool transposed = q.op == ops::OpKind::conv_transpose2d;
  const double side = transposed ? in : ops::conv_out_size(in, ks, s, pad);
  return {std::max(b * side * side, 1.0), std::max(co, 1.0), std::max(ci * ks * ks, 1.0)};
}

// Whether cuDNN runs FP32 convolutions as Winograd on g. It picks Winograd for 60-80% of NeuSight's 3x3
// convolutions on every public GPU (Pascal to Ampere: their timings name the kernels) and for none of the same
// convolutions on the H100 (cuDNN 9.19, cudnn.benchmark: implicit GEMM for 84%, FFT for the rest;
// data/opdata/h100_neusight/kernels.tsv). Hopper and later: taken as Hopper (measured on Hopper only). AMD: MIOpen
// has FP32 Winograd solvers for gfx9 (its documented solver list; unmeasured here).
[[nodiscard]] inline bool fp32_winograd(const Device& g) { return !g.nvidia() || g.cc_major < 9; }

// Whether a library may run this convolution as FP32 Winograd F(4x4, 3x3): FP32, 3x3, stride 1.
[[nodiscard]] inline bool winograd_shape(const OpQuery& q) {
  return q.op == ops::OpKind::conv2d && q.dtype == ops::DataType::fp32 && q.dims[3] == 3 && q.dims[5] == 1;
}

// Whether g's cuDNN may run it so: that shape, on a GPU that has it.
[[nodiscard]] inline bool winograd_applies(const OpQuery& q, const Device& g) { return winograd_shape(q) && fp32_winograd(g); }

// cuDNN's FFT convolution (CUDNN_CONVOLUTION_FWD_ALGO_FFT): the padded input and the filters go to the frequency
// domain on an F x F grid (F a power of two, 16 to 64: its fft2d_r2c_16x16 / 32x32 / 64x64 kernels), each of the
// F x (F/2 + 1) frequencies multiplies a batch x input-channel matrix by an input x output-channel one in complex
// arithmetic (a cgemm, gemm_cf32cf32), and the products come back to pixels (c2r). FP32, stride 1, a filter
// larger than the padding (cuDNN's condition), the padded input within 64 (cuDNN's FFT goes to 256; NeuSight's
// rows run it up to 64 but for a handful). On the H100 and the H200 (cuDNN 9.19, cudnn.benchmark) it runs 15-17%
// of NeuSight's convolutions, nearly all with inputs of 9-32 pixels, where the model, with the implicit GEMM
// alone, had them 29-32% too slow (data/opdata/h100_neusight, h200_neusight: kernels.tsv names them); the public
// GPUs' cuDNN 8 runs 0.2-4% so (their Winograd is faster). A trace's query squares a non-square input and drops
// dilation (ops/trace_ops.hpp): such convolutions are taken as the square, undilated one.
inline constexpr double fft_conv_min_side = 16, fft_conv_max_side = 64;

// The share of the ideal rate (fft_conv_ideal_us) cuDNN's FFT kernels reach: the median over the H100's and the
// H200's convolutions that cuDNN ran as FFT of the ideal time over the kernels' (less the fixed part; CUPTI
// kernel sums). Derived once, the rows are not shipped; `habitat-gemm-study --part ops` re-derives it leaving
// each GPU out (opstudy::fft_efficiency: 0.742 from the H100 alone, 0.730 from the H200).
inline constexpr double fft_conv_efficiency = 0.736;

// The FFT grid's side for the op, or 0 where cuDNN has no FFT convolution for it.
[[nodiscard]] inline double fft_conv_side(const OpQuery& q) {
  const auto& d = q.dims;
  if (q.op != ops::OpKind::conv2d || q.dtype != ops::DataType::fp32 || d[5] != 1 || d[3] <= d[6]) return 0;
  if (ops::conv_out_size(d[4], d[3], d[5], d[6]) < 1) return 0;
  const double padded = d[4] + 2 * d[6];
  double side = fft_conv_min_side;
  while (side < padded) side *= 2;
  return side <= fft_conv_max_side ? side : 0;
}

// The FFT convolution's FLOPs as a share of direct convolution's on cuDNN's grid (1 where it does not apply).
[[nodiscard]] inline double fft_conv_flops_share(const OpQuery& q) {
  const double f = fft_conv_side(q);
  return f > 0 ? ops::fft_conv_flops_share(ops::conv_out_size(q.dims[4], q.dims[3], q.dims[5], q.dims[6]), q.dims[3], f) : 1.0;
}

// The fewest FLOPs an algorithm the library may pick on g does for the op: the op's own, except that Winograd
// F(4x4, 3x3) multiplies 36 times per 16 outputs where direct convolution does 144 (a quarter). The public
// timings run 7-22% of their 3x3 convolutions below the direct FLOPs' roofline on every GPU before Hopper
// (down to 0.45 of it), and 0.3% on Hopper: the bound must not raise them. FFT convolution, where cuDNN has it,
// does its cgemm's FLOPs (fft_conv_flops_share), under direct convolution's for large kernels on small inputs.
[[nodiscard]] inline double bound_flops(const OpQuery& q, const Device& g, double flops) {
  return flops * std::min(fft_conv_flops_share(q), winograd_applies(q, g) ? ops::winograd_3x3_flops_share : 1.0);
}

// The op's lower bound on g (ms): those fewest FLOPs and `bytes` of DRAM traffic at the fastest datapath its
// precision allows. The one bound of the physics model, predict-ops and their guard test.
[[nodiscard]] inline double op_bound_ms(const OpQuery& q, const Device& g, double flops, double bytes) {
  return roofline_bound(bound_flops(q, g, flops), bytes, fastest_datapath(op_precision(q), g), g).bound_us() / 1e3;
}

// The op's pass in forward passes of work (a convolution's backward, its data and weight gradients: 2, as
// ops::op_work counts it); 1 where the forward pass has no FLOPs.
[[nodiscard]] inline double forward_passes(const OpQuery& q) {
  const double forward = ops::op_work(q.op, q.dims, q.dtype, ops::Pass::forward).flops;
  return forward > 0 ? ops::op_work(q.op, q.dims, q.dtype, q.pass).flops / forward : 1.0;
}

// Its time on g at the ideal rate (us; infinity where it does not apply): the frequencies' cgemms through the GEMM
// tile model as the real GEMM of the same FLOPs and operand bytes (batch x input channels of complex numbers as
// 2 x batch rows of real ones, the filters' input x output channels as input x 2 x output: 4 real multiply-adds
// per complex one; only the output, 2 x batch x 2 x output channels, counts twice its bytes), plus the transforms'
// own traffic at sustained bandwidth (each real tensor read or written once; the input's and the filters' spectra
// written, the output's read: the cgemm's reads and write are the tile model's). A backward pass as many times
// the forward's as its FLOPs (ops::op_work).
[[nodiscard]] inline double fft_conv_ideal_us(const OpQuery& q, const Device& g) {
  const double f = fft_conv_side(q);
  if (f <= 0) return std::numeric_limits<double>::infinity();
  const auto& d = q.dims;
  const double b = std::max(d[0], 1.0), ci = std::max(d[1], 1.0), co = std::max(d[2], 1.0), ks = d[3], in = d[4];
  const double side = ops::conv_out_size(in, ks, d[5], d[6]), bins = ops::fft_bins(f);
  const double real = ops::dtype_bytes(q.dtype), complex = 2 * real;
  const double bytes = real * (b * ci * in * in + co * ci * ks * ks + b * co * side * side) + complex * bins * (b * ci + co * ci + b * co);
  gemm::Shape cgemm{bins, 2 * b, 2 * co, ci, false, false};
  cgemm.blas = false;
  return forward_passes(q) * (gemm::estimate(cgemm, g, gemm::fitted).us + bytes / (g.sustained_bandwidth_gbps() * 1e3));
}

// Its time on g as cuDNN's kernels run it (us): the ideal at their share of its rate.
[[nodiscard]] inline double fft_conv_us(const OpQuery& q, const Device& g, double efficiency = fft_conv_efficiency) {
  return fft_conv_ideal_us(q, g) / efficiency;
}

// cuDNN's fused FP32 Winograd kernels (cudnn_*_scudnn_winograd_128x128_*: one kernel, its transforms inside, taken
// to add no traffic of their own): the public timings run them at a rate that tracks Winograd's FLOPs on output channels
// padded to 32 and output sides padded to 8 (log spread of the calls over 2 ms per GPU 0.17-0.30 so, 0.50-0.69
// unpadded). The share of the sustained rate they reach on those FLOPs: the median over the public calls cuDNN ran so
// (off their floor, kernels over 1 ms) of ideal time over kernel time, 0.347-0.395 leaving each GPU out
// (opstudy::fused_winograd_share).
struct FusedWinogradTiles {
  double out_channels = 32, side = 8;
};
inline constexpr FusedWinogradTiles fused_winograd_tiles{};
inline constexpr double fused_winograd_efficiency = 0.379;

// The fused Winograd kernel's time at its share of 1 (us): its padded Winograd FLOPs at g's sustained FP32 rate.
[[nodiscard]] inline double fused_winograd_ideal_us(const OpQuery& q, const Device& g) {
  const auto& d = q.dims;
  const auto& t = fused_winograd_tiles;
  const double side = std::ceil(std::max(ops::conv_out_size(d[4], d[3], d[5], d[6]), 1.0) / t.side) * t.side;
  const double co = std::ceil(std::max(d[2], 1.0) / t.out_channels) * t.out_channels;
  const double flops = 2 * std::max(d[0], 1.0) * side * side * co * std::max(d[1], 1.0) * d[3] * d[3] * ops::winograd_3x3_flops_share;
  return roofline_sustained(flops, 0, op_precision(q), g).compute_us;
}

// The convolution as cuDNN's algorithms would run it, timed by the GEMM tile model on g (us): the implicit
// GEMM, or for a 3x3 stride-1 convolution Winograd F(4x4, 3x3) where g has it and it is faster: 36 GEMMs of
// (4x4 output tiles) x input channels x output channels, plus the transforms' traffic, each tensor once
// at sustained bandwidth (input in, 36/16 of it out and back in; the same for the output). The implicit GEMM is a
// single GEMM and may split its K like cuBLAS's (cuDNN has split-K kernels too: a public V100 ResNet trace runs
// cudnn_train_volta_scudnn_128x128_stridedB_splitK_medium_nn); the Winograd GEMMs are batched and do not. Where g
// has Winograd, its fused kernel is the third candidate (fused_winograd_ideal_us at the share `fused`).
// `fused`: the fused Winograd kernels' share of their ideal rate (ConvCoefSets::fused_winograd).
[[nodiscard]] inline double conv_algorithm_us(const OpQuery& q, const Device& g, double fused) {
  const auto ig = implicit_gemm(q);
  // cuDNN's kernels, not cuBLAS's: any tile (gemm::library_tiles' lists are cuBLAS's).
  gemm::Shape implicit_shape{1, ig.m, ig.n, ig.k, true, false};
  implicit_shape.blas = false;
  const double implicit = gemm::estimate(implicit_shape, g, gemm::fitted).us;
  const auto& d = q.dims;
  const double b = d[0], ci = d[1], co = d[2], ks = d[3], in = d[4], stride = d[5], pad = d[6];
  if (!winograd_applies(q, g)) return implicit;
  const double side = std::max(ops::conv_out_size(in, ks, stride, pad), 1.0), tiles = std::max(b * std::ceil(side / 4) * std::ceil(side / 4), 1.0);
  const double bytes = ops::dtype_bytes(q.dtype) * std::max(b * ci * in * in + 2 * 36 * tiles * (ci + co) + b * co * side * side, 0.0);
  gemm::Shape wino_gemm{36, tiles, std::max(co, 1.0), std::max(ci, 1.0), false, false};
  wino_gemm.blas = false;
  const double winograd = gemm::estimate(wino_gemm, g, gemm::fitted).us +
                          bytes / (g.sustained_bandwidth_gbps() * 1e3);
  return std::min({implicit, winograd, fused_winograd_ideal_us(q, g) / fused});
}

// The share of the sustained FP32 roofline a convolution reaches, exp(coefs . features), log-linear in
// facts of its implicit GEMM and of its algorithm (NeuSight's convolutions are all 3x3, stride 1: one shared
// share fits them within ~40% even on their own GPU; the shape is what varies):
//   log q               tile quantization: the share of the tile-waves the GPU runs that is the GEMM's
//                       (q = MN / (ceil(waves) x SMs x 128 x 128): edge tiles and the last wave part-full);
//   log K/(K + k_half)  reduction depth: a tile's prologue and epilogue amortize over its K loop;
//   log(1 + waves)      the waves the GPU runs, ceil(tiles / SMs): more waves hide more latency, and the
//                       ramp and tail are a smaller share;
//   log(compute / alg)  the FLOPs' time at the sustained rate over conv_algorithm_us, the fastest of the
//                       implicit GEMM and Winograd through the GEMM tile model (Winograd's quarter of the
//                       multiplications and its transforms' traffic; the tiles' waves on this GPU) and the
//                       fused Winograd kernel;
//   log(N / 128)        where g's library may run the convolution as Winograd (winograd_applies): its output
//                       channels. Against the kernels the public calls leave, the model had the older GPUs'
//                       convolutions with few output channels up to 1.5x too slow and those with many 1.2-1.3x
//                       too fast (cuDNN's pick among its Winograd and GEMM kernels moves with them; the tile
//                       model's Winograd time does not follow); Hopper's rows, without Winograd, showed no trend;
// Every fitted row is an FP32 3x3 stride-1 convolution: other kernels, strides and precisions take the terms as
// fitted on the five public GPUs, an extrapolation (the Winograd term 0 there, as at N = 128 on an older GPU), on
// Hopper too (cudnn9_implicit covers its FP32 3x3 stride-1 convolutions only).
// It replaced an operand-traffic term log(1 + 8 mem/compute), whose sign turned unphysical beside it (the
// algorithm's time carries the traffic), at the same accuracy. Tried and left out (README gives the
// numbers): q as the last wave's fill alone (not the empty edge tiles) and fractional waves, with which a
// larger batch could run faster (a quantization step rewarded more than the work it adds); a spatial halo
// term log Ho/(Ho + kernel - 1) and log Ho (under a point of gain, the halo term with the unphysical sign);
// the algorithm's time alone as the model (P4 76%, T4 42% leaving each out).
// Coefficients: least squares on log(efficiency) of NeuSight's public FP32 convolution timings on P4, P100, T4,
// V100 and A100 80GB, the library with FP32 Winograd (sitar-lab/NeuSight, MIT; kernel time: the timed call less its
// lead on a floor that grows along each file, the measuring host's; calls on that floor left out); the q and
// algorithm terms tied to sum to at most opstudy::conv_q_alg_max. Derived once, the rows are not shipped.
// `habitat-gemm-study --part ops` re-derives them and validates them leaving one GPU out (opstudy::conv_coefs,
// README). Pooled into one least squares, habitat's Hopper rows raised the public GPUs' leave-one-out error; the
// library without FP32 Winograd has a model of its own (cudnn9_implicit_us).
inline constexpr std::size_t conv_feature_count = 6;
using ConvCoefs = std::array<double, conv_feature_count>;
using ConvFeatures = std::array<double, conv_feature_count>;

// cuDNN 9's FP32 implicit-GEMM convolutions on Hopper (sm80_xmma_fprop_implicit_gemm_f32f32_..._ffma, the library
// without FP32 Winograd: fp32_winograd) come in three tiles of output pixels by output channels, 256x64, 128x32 and
// 32x32 (all 8,283 such xmma kernels in habitat's H100/H200 sums, data/opdata/*_neusight/kernels.tsv), and
// cudnn.benchmark keeps the fastest it times. So the model times the implicit GEMM as the GEMM tile model does a
// library's GEMM, the fastest of those three tiles (it names cuDNN's tile for 82-83% of the convolutions), at one
// share of the tile model's rate (cudnn9_implicit_share). Against the log-linear efficiency it replaced (five
// coefficients fitted on the same rows, with a 128x128 tile's waves and fill), Hopper's convolutions leaving each GPU
// out went from 14.6% / 15.2% to the figures in README ("Convolutions on Hopper: cuDNN 9's tiles").
inline constexpr std::array<gemm::Tile, 3> cudnn9_implicit_tiles{{{256, 64}, {128, 32}, {32, 32}}};

// Whether the convolution is one cuDNN 9 runs on those kernels on g: a library without FP32 Winograd, and the
// shape the share was derived on (FP32 3x3 stride 1, winograd_shape); others keep the log-linear efficiency.
[[nodiscard]] inline bool cudnn9_implicit(const OpQuery& q, const Device& g) { return !fp32_winograd(g) && winograd_shape(q); }

// The tile model's time of the convolution's implicit GEMM on cuDNN 9's tiles (us). A backward pass takes as many
// forward passes' time as its FLOPs (forward_passes), an extrapolation: the tiles and the share are the forward
// (fprop) kernels'.
[[nodiscard]] inline double cudnn9_implicit_us(const OpQuery& q, const Device& g) {
  const auto ig = implicit_gemm(q);
  gemm::Shape s{1, ig.m, ig.n, ig.k, true, false};
  s.blas = false;
  s.tiles = cudnn9_implicit_tiles;
  s.split_k = false;  // one kernel per call in every such row
  return forward_passes(q) * gemm::estimate(s, g, gemm::fitted).us;
}

// The log-linear efficiency's coefficients (the library with FP32 Winograd: cuDNN 8 on Pascal to Ampere, NeuSight's
// public timings; convolutions of other shapes on Hopper too), the fused Winograd kernels' share, and cuDNN 9's
// implicit GEMM share on Hopper. One log-linear set over both libraries, the second a constant factor, had left
// Hopper's convolutions 18.8% / 19.4% off leaving each out, and a set of its own 14.6% / 15.2% (README).
struct ConvCoefSets {
  ConvCoefs winograd;
  double fused_winograd;  // the fused Winograd kernels' share in the algorithm's time (conv_algorithm_us)
  double cudnn9_implicit_share;  // cuDNN 9's implicit GEMM kernels' share of the tile model's rate (cudnn9_implicit_us)
};

struct ConvModel {
  double tile = 128;      // output tile side (M and N) of cuDNN's FP32 implicit-GEMM kernels
  double k_half = 256;    // reduction depth at which the K loop is half the tile's time (LOGO flat at 64-1024)
  // A log-linear model runs away beyond its data: waves are clamped to the fitted range (public rows: at most 2600).
  double max_waves = 2600;
  // And the output channels of the Winograd term to the public rows' range.
  double winograd_n_min = 3, winograd_n_max = 2048;
  // intercept, q, depth, waves, algorithm, Winograd's N
  ConvCoefSets coefs{{0.109, 0.548, 0.770, 0.146, 0.402, -0.140}, fused_winograd_efficiency, 0.892};
};
inline constexpr ConvModel conv_model{};

[[nodiscard]] constexpr bool conv_like(ops::OpKind k) { return k == ops::OpKind::conv2d || k == ops::OpKind::conv_transpose2d; }

// The op's FLOPs at g's sustained rate (ms): the numerator of a convolution's time.
[[nodiscard]] inline double sustained_compute_ms(const OpQuery& q, const Device& g) {
  return roofline_sustained(ops::op_work(q.op, q.dims, q.dtype, q.pass).flops, 0, op_precision(q), g).compute_us / 1e3;
}

// The efficiency model's features of a convolution on g (finite for any dims: the GEMM's sides are at least 1).
[[nodiscard]] inline ConvFeatures conv_features(const OpQuery& q, const Device& g, double fused) {
  const auto gemm = implicit_gemm(q);
  const double sms = std::max(g.sms, 1), tile_area = conv_model.tile * conv_model.tile;
  const double waves = std::ceil(gemm.m / conv_model.tile) * std::ceil(gemm.n / conv_model.tile) / sms;
  const double quantization = std::min(gemm.m * gemm.n / (std::ceil(waves) * sms * tile_area), 1.0);
  return {1.0, std::log(quantization), std::log(gemm.k / (gemm.k + conv_model.k_half)),
          std::log1p(std::min(std::ceil(waves), conv_model.max_waves)), std::log(sustained_compute_ms(q, g) * 1e3 / conv_algorithm_us(q, g, fused)),
          winograd_applies(q, g) ? std::log(std::clamp(gemm.n, conv_model.winograd_n_min, conv_model.winograd_n_max) / conv_model.tile) : 0.0};
}

[[nodiscard]] inline double conv_efficiency(const OpQuery& q, const Device& g, const ConvCoefSets& sets = conv_model.coefs) {
  if (cudnn9_implicit(q, g)) return sets.cudnn9_implicit_share * sustained_compute_ms(q, g) * 1e3 / cudnn9_implicit_us(q, g);
  const auto f = conv_features(q, g, sets.fused_winograd);
  double s = 0;
  for (std::size_t i = 0; i < f.size(); ++i) s += sets.winograd[i] * f[i];
  return std::exp(s);
}

// A softmax row of up to softmax_warp_max_h elements runs on one warp (ATen's softmax_warp_forward; longer rows
// take a block each): with fewer rows than the GPU holds warps, the kernel lasts one row's latency, which grows
// with the row's length in SM clocks. On the H100 and the H200 (torch 2.11: warp rows up to 2,048; torch 2.1's
// public data: 1,024, hidden under its timed calls), 1.1 us plus 5.6 clocks per element: 6.0 us for a row of
// 1,745 elements, where its bytes take well under a microsecond. Least squares over the Hopper rows of at most one
// row per SM and 256-2,048 elements (data/opdata/*_neusight, CUPTI kernel times); `habitat-gemm-study --part
// ops` re-derives it leaving one GPU out.
struct RowLatency {
  double base_ms = 0.00111, clk_per_element = 5.59;
};
inline constexpr double softmax_warp_max_h = 2048;
inline constexpr RowLatency softmax_row_latency{};
// Layer norm runs a block per row, so a batch of at most one row per SM lasts one row's latency too: on both
// Hopper GPUs 2.7 us for 384 elements, 3.3 for 768, 3.9 for 1,536 and 5-8 for 2,560-3,584, where the model had
// the family's 3.1 us fixed part and left such rows 24-45% too fast. The same least squares over the rows of at
// most one row per SM and over 256 elements: 2.4 us plus 2.7 clocks per element.
inline constexpr RowLatency norm_row_latency{0.00239, 2.66};

// The row latency of the op's family, where its rows have one (a softmax's where one warp runs a row).
[[nodiscard]] inline std::optional<RowLatency> family_row_latency(const OpQuery& q) {
  if (q.op == ops::OpKind::softmax && q.dims[1] <= softmax_warp_max_h) return softmax_row_latency;
  if (q.op == ops::OpKind::layer_norm) return norm_row_latency;
  return std::nullopt;
}

// Elementwise operators whose per-element code, not their bytes, bounds them once their working set sits in
// L2: FP32 pow and division run at 1.07 (pow), 1.11 (pow with a scalar exponent) and 1.28 (div) elements per
// clock per SM on both the H100 and the H200 with 8-32 MB working sets (the same SMs and clock, 1.4x the
// DRAM rate: the cap is the SM's; kernel time with its fixed part), and the unary ops 2.2-2.6, where the L2's
// rate (l2_reuse) would stream 4.7 (8 bytes each) and add reaches it. Taken as thread-instructions at the SM's
// issue rate (Device::issue_threads_per_clk_per_sm), the cost transfers by SMs x clock. On the older GPUs'
// DRAM-bound sizes it does not bind (A100 pow: 96 G elements/s measured against a 163 G cap), except on the P100,
// whose SM issues for two warp schedulers: pow with a scalar exponent is held to 461 GB/s there, below its DRAM's
// 534 (its own host's floor: 12.1% -> 3.5% leaving it out). Thread-instructions
// per element: the median over habitat's H100/H200 rows (data/opdata/*_neusight, CUPTI kernel times, 0.1-0.9x
// L2, the fixed part taken off); `habitat-gemm-study --part ops` re-derives them leaving one GPU out.
// Pow and division also last longer when small (1.9-2.3 us for a few thousand elements, where add takes 1.0-1.3
// and the unary ops 1.1-1.5, within the hosts' spread): one thread's chain of loads, its long code and its store.
// Their fixed part is the median kernel of their configurations under 1 MB (0: the family's, fixed_ms). Leaving
// each Hopper GPU out, it took their errors from 13-19% to 4-9%.
// Layer norm is held by its code on Hopper too, at a cost that grows as rows get shorter: each row pays its
// reductions (per_row, thread-instructions) besides its elements' work. With 5-25 MB working sets both Hopper GPUs
// run rows of 256-512 elements at 0.7-0.9 elements per clock per SM, 1,024 at 1.2-1.3 and 4,096 at 1.4 (the same
// on 1.4x the DRAM rate: the SM's limit); beyond L2 the H100 falls to its DRAM (1.0-1.1) and the H200 stays near
// the cap (1.2-1.4). Least squares of issue slots per element on 1 / row length over the rows of 0.1-0.5x L2.
struct IssueCost {
  std::string_view op;  // NeuSight's operator name
  double per_element;
  double fixed_ms = 0;
  double per_row = 0;
};
// Softmax on the Hopper parts is held by its code too. A row that one warp takes (softmax_warp_max_h) runs at
// 1.6-1.9 elements per clock per SM with a 16-50 MB working set on both (streamed from L2, 12-14 bytes per clock
// per SM of input and output, where add reaches 37.5); a longer row runs on a block, whose passes over it (its
// maximum, its sum, its output) hold it to 0.95-1.0 at every size from 10 MB to 512 MB (2.0 and 2.1 TB/s; warp
// rows reach 2.6 and 3.4 from DRAM). They bind on the Hopper parts, whose L2 and DRAM outrun them, and of the public
// GPUs' DRAM-bound sizes only on the P100's block rows (two warp schedulers per SM: about 314 GB/s); the A100 would
// cap block rows at 1.3 TB/s and runs them at 0.96.
inline constexpr std::array<IssueCost, 9> issue_costs{{{"pow", 75, 0.00192},
                                                        {"powu", 81, 0.00211},
                                                        {"div", 53, 0.00205},
                                                        {"relu", 34},
                                                        {"tanh", 37.3},
                                                        {"gelu", 43.8},
                                                        {"ln", 90.6, 0, 22400},
                                                        {"softmax", 71},
                                                        {"softmax_block", 119}}};

// The name the op's issue cost goes by: NeuSight's operator name; a softmax's by the kernel its rows take.
[[nodiscard]] inline std::string_view issue_name(const OpQuery& q) {
  if (q.op == ops::OpKind::softmax) return q.dims[1] > softmax_warp_max_h ? "softmax_block" : "softmax";
  if (q.op == ops::OpKind::layer_norm) return "ln";
  return q.op == ops::OpKind::elementwise ? floor_op_name(q) : std::string_view{};
}

// The entry of a table of issue costs by its name; nullptr where there is none.
[[nodiscard]] inline const IssueCost* find_issue_cost(std::string_view name, std::span<const IssueCost> table = issue_costs) {
  if (name.empty()) return nullptr;
  for (const auto& c : table)
    if (c.op == name) return &c;
  return nullptr;
}

// The op's issue cost per element in a table of them, its rows' share included (0: its bytes bound it).
[[nodiscard]] inline double issue_cost(const OpQuery& q, std::span<const IssueCost> table = issue_costs) {
  const auto* c = find_issue_cost(issue_name(q), table);
  return c ? c->per_element + c->per_row / std::max(q.dims[1], 1.0) : 0;
}

// Milliseconds the op's per-element code takes at g's issue rate (per_element < 0: the op's constant).
[[nodiscard]] inline double issue_ms(const OpQuery& q, const Device& g, double per_element = -1) {
  const double cost = per_element >= 0 ? per_element : issue_cost(q);
  if (!(cost > 0)) return 0;
  const double elements = q.dims[0] * q.dims[1] * (q.pass == ops::Pass::backward ? 2 : 1);
  return elements * cost / (g.issue_threads_per_clk_per_sm() * std::max(g.sms, 1) * g.load_clock_mhz(Precision::fp32) * 1e3);
}

// The fixed part of the op's kernels (ms): a reduction's, else the shortest kernel's.
[[nodiscard]] inline double fixed_ms(ops::OpKind k) {
  switch (k) {
    case ops::OpKind::batch_norm:
    case ops::OpKind::layer_norm: return op_physics_shares.norm_floor_ms;
    case ops::OpKind::softmax: return op_physics_shares.softmax_floor_ms;
    default: return op_physics_shares.kernel_floor_ms;
  }
}

// The fixed part of the op's kernels (ms): its operator's where a table of issue costs gives one, else its family's.
[[nodiscard]] inline double fixed_ms(const OpQuery& q, std::span<const IssueCost> table = issue_costs) {
  const auto* c = find_issue_cost(issue_name(q), table);
  return c && c->fixed_ms > 0 ? c->fixed_ms : fixed_ms(q.op);
}

// The latency of the op's longest row (ms) with the given constants, or its family's; 0 for ops and rows that
// have none (family_row_latency).
[[nodiscard]] inline double row_latency_ms(const OpQuery& q, const Device& g, std::optional<RowLatency> r = std::nullopt) {
  const auto family = family_row_latency(q);
  if (!family) return 0;
  const RowLatency& c = r ? *r : *family;
  return c.base_ms + std::max(q.dims[1], 0.0) * c.clk_per_element / (g.load_clock_mhz(Precision::fp32) * 1e3);
}

// A convolution's time on g without the kernels' fixed part (ms): what its efficiency leaves of the sustained
// rate (on cuDNN 9, its implicit GEMM's tile time at the library's share, cudnn9_implicit_us), or FFT convolution's
// time where that is shorter: cuDNN's benchmark keeps the faster algorithm it times. On the H100 and the H200
// (data/opdata/*_neusight, CUPTI kernel sums) the rows cuDNN ran as FFT, 29-32% too slow with the efficiency alone,
// came to 14.6% / 15.0%, and every Hopper convolution from 22.2% / 23.3% to 18.8% / 19.4% (README; 13.1% / 13.6%
// since cuDNN 9's tiles). The FFT's time with its traffic counted twice (the tile model's operand bytes and the
// transforms' again) and no efficiency did as well (18.5% / 19.2%), by that double count; the no-Winograd term
// refitted without the rows the model runs as FFT did worse.
enum class ConvPath { efficiency, fft };

// `fft`: FFT convolution's share of its ideal rate (fft_conv_efficiency unless a study derives it).
[[nodiscard]] inline double conv_path_ms(const OpQuery& q, const Device& g, const ConvCoefSets& conv, ConvPath p,
                                         double fft = fft_conv_efficiency) {
  if (p == ConvPath::fft && fft_conv_side(q) > 0) return fft_conv_us(q, g, fft) / 1e3;
  // cuDNN 9's implicit GEMM directly: through its efficiency the FLOPs would cancel only to rounding, and a larger
  // batch in the same waves could come out a hair faster.
  if (cudnn9_implicit(q, g)) return cudnn9_implicit_us(q, g) / 1e3 / conv.cudnn9_implicit_share;
  return sustained_compute_ms(q, g) / conv_efficiency(q, g, conv);
}

// The path the model takes for a convolution on g: the shorter (the efficiency where the FFT does not apply,
// and for every other op, where it is unused).
[[nodiscard]] inline ConvPath conv_path(const OpQuery& q, const Device& g, const ConvCoefSets& conv = conv_model.coefs,
                                        double fft = fft_conv_efficiency) {
  if (!conv_like(q.op) || fft_conv_side(q) <= 0) return ConvPath::efficiency;
  return conv_path_ms(q, g, conv, ConvPath::fft, fft) < conv_path_ms(q, g, conv, ConvPath::efficiency, fft) ? ConvPath::fft : ConvPath::efficiency;
}

// `path`: that one, where a ratio of like for like is wanted (physics_ratio); otherwise the shorter.
[[nodiscard]] inline double conv_work_ms(const OpQuery& q, const Device& g, const ConvCoefSets& conv = conv_model.coefs,
                                         std::optional<ConvPath> path = std::nullopt, double fft = fft_conv_efficiency) {
  if (path) return conv_path_ms(q, g, conv, *path, fft);
  return std::min(conv_path_ms(q, g, conv, ConvPath::efficiency, fft), fft_conv_us(q, g, fft) / 1e3);
}

// Milliseconds of the op's kernels on g at a given share of the sustained roofline (a convolution: at its
// efficiency under `conv` or as FFT at `fft` of its ideal rate, the shorter, or on `path` where given), or at its issue cost where that is longer, or one row's latency where that is
// longer still (`row`: the family's constants unless given); never below its bound (at L2 rates for a working set that stays there).
[[nodiscard]] inline double physics_kernel_ms(const OpQuery& q, const Device& g, double share,
                                              const L2Reuse& l2 = l2_reuse,
                                              const ConvCoefSets& conv = conv_model.coefs, double fixed = -1, double issue = -1,
                                              std::optional<RowLatency> row = std::nullopt, std::optional<ConvPath> path = std::nullopt,
                                              double fft = fft_conv_efficiency) {
  const auto w = ops::op_work(q.op, q.dims, q.dtype, q.pass);
  const double bytes = dram_bytes(q, w.bytes, g, l2);
  const double bound = op_bound_ms(q, g, w.flops, bytes);
  const double work = conv_like(q.op) ? conv_work_ms(q, g, conv, path, fft)
                                      : std::max(roofline_sustained(w.flops, bytes, op_precision(q), g).bound_us() / 1e3 / share,
                                                 issue_ms(q, g, issue));
  return std::max({bound, (fixed >= 0 ? fixed : fixed_ms(q)) + work, row_latency_ms(q, g, row)});
}

// Milliseconds of one timed call of the operation on g (kernels plus the call's overhead).
[[nodiscard]] inline double physics_op_ms(const OpQuery& q, const Device& g, std::optional<ConvPath> path = std::nullopt) {
  return timed_call_ms(call_floor(q), physics_kernel_ms(q, g, roofline_share(q.op), l2_reuse, conv_model.coefs, -1, -1, std::nullopt, path));
}

// How much longer the operation takes on dest than on origin, like for like: a convolution on the path the model
// takes on dest, on both (the origin's measurement may be an FFT where dest's library would not pick one, or the
// reverse; a ratio across paths turned a tie between two paths into a jump). Leaving each public GPU out and
// scaling the H100's measurements, the ratio across paths had V100/P4/T4 convolutions 3-6 points worse (README).
[[nodiscard]] inline double physics_ratio(const OpQuery& q, const Device& dest, const Device& origin) {
  const auto path = conv_path(q, dest);
  return physics_op_ms(q, dest, path) / physics_op_ms(q, origin, path);
}

}  // namespace habitat::mlp
