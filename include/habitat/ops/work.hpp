#pragma once
// First-order work of GEMMs and convolutions, stated once: the learned models' features (ops::op_work)
// and the counter-free trace estimate (estimate_op_cost) both count through these functions. Every
// operand is read once and every result written once (no cache reuse, no recomputation).
#include <algorithm>
#include <cmath>

namespace habitat::ops {

struct Work {
  double flops = 0;  // floating-point operations of the pass
  double bytes = 0;  // compulsory DRAM traffic: every operand read once, every result written once
};

// batch x [m, k] @ [k, n]. weight_shared: one [k, n] operand for the whole batch (linear layers);
// otherwise each batch entry has its own (bmm).
[[nodiscard]] constexpr Work gemm_work(double batch, double m, double n, double k, double elem_bytes, bool weight_shared) {
  const double weight = weight_shared ? k * n : batch * k * n;
  return {2 * batch * m * n * k, elem_bytes * (batch * m * k + weight + batch * m * n)};
}

// The arithmetic of the fast convolution algorithms, against direct convolution's (a share of its FLOPs).
// Winograd F(4x4, 3x3): 36 multiplies per 16 outputs of a 3x3 kernel, where direct convolution does 144.
inline constexpr double winograd_3x3_flops_share = 36.0 / 144.0;
// FFT convolution on an F x F grid: F x (F/2 + 1) frequencies (a real transform; the rest are their conjugates),
// one complex multiply-add (4 real ones) per frequency, image and channel pair, where direct convolution does one
// per output pixel and tap.
[[nodiscard]] constexpr double fft_bins(double grid_side) { return grid_side * (grid_side / 2 + 1); }
[[nodiscard]] constexpr double fft_conv_flops_share(double out_side, double kernel_side, double grid_side) {
  const double direct = out_side * out_side * kernel_side * kernel_side;
  return direct > 0 ? std::min(1.0, 4 * fft_bins(grid_side) / direct) : 1.0;
}
// The fewest FLOPs any algorithm a library may run needs, as a share of the direct count, for a kernel of
// `kernel_area` taps: with unit stride, Winograd for 3x3, and FFT on any grid without wrap-around (at least as
// wide as the padded input, so as the output: F x (F/2 + 1) frequencies are at least half a frequency per output
// pixel, 2 real multiply-adds per output and channel pair; a 3-multiply complex product is not counted);
// otherwise all of them.
[[nodiscard]] constexpr double fast_conv_flops_share(double kernel_area, bool unit_stride) {
  if (!unit_stride || kernel_area <= 1) return 1.0;
  return std::min({1.0, kernel_area == 9 ? winograd_3x3_flops_share : 1.0, 2.0 / kernel_area});
}

// Output side of a convolution, or -1 when the configuration is invalid.
[[nodiscard]] inline double conv_out_size(double in, double k, double stride, double pad, double dilation = 1) {
  const double o = std::floor((in + 2 * pad - dilation * (k - 1) - 1) / stride) + 1;
  return o >= 1 ? o : -1;
}
[[nodiscard]] inline double conv_transpose_out_size(double in, double k, double stride, double pad, double dilation = 1,
                                                    double output_padding = 0) {
  const double o = (in - 1) * stride - 2 * pad + dilation * (k - 1) + output_padding + 1;
  return o >= 1 ? o : -1;
}

// A convolution over `batch` samples: weight_elems weights (groups already divided out), in_pixels and
// out_pixels spatial positions per sample, cin/cout channels. Each weight meets every output pixel of
// every sample; a transposed convolution does the work of the convolution it is the gradient of, so
// there each weight meets every input pixel.
[[nodiscard]] constexpr Work conv_work(double batch, double cin, double cout, double weight_elems, double in_pixels,
                                       double out_pixels, bool transposed, double elem_bytes) {
  return {2 * batch * weight_elems * (transposed ? in_pixels : out_pixels),
          elem_bytes * (batch * cin * in_pixels + weight_elems + batch * cout * out_pixels)};
}

}  // namespace habitat::ops
