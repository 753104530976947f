#pragma once
// A kernel's time on the GPU it ran on when its work grows or shrinks by a ratio: a fixed part (launch,
// ramp, tail) stays, the rest scales with the work. The grid's largest dimension is rescaled with the work,
// so that predictions for other GPUs see the waves of the new size.
//
// Chosen on the FP32 batch sweeps of fixtures/whatif (8 models x 3 batches x 2 GPUs, 96 pairs): linear
// above a fixed 5 us gave a mean GPU-time error of 5.4%; scaling by the waves the grid fills (occupancy
// or one block per SM) 19.5-25%, since many kernels loop over the batch inside a fixed grid (batch
// normalization, reductions); a fixed part of 1.5 us 10%, 3 us 7.3%, 8 us 9.2%.
#include <algorithm>
#include <cmath>

#include "habitat/predict/roofline.hpp"
#include "habitat/trace/trace.hpp"

namespace habitat::whatif {

using habitat::fixed_kernel_us;

// The kernel's time at `ratio` times its work.
[[nodiscard]] inline double rescaled_us(double us, double ratio, double fixed_us = fixed_kernel_us) {
  if (!(ratio > 0) || !std::isfinite(ratio)) return us;
  const double fixed = std::min(us, fixed_us);
  return fixed + (us - fixed) * ratio;
}

// The launch of the kernel at `ratio` times its work.
[[nodiscard]] inline Dim3 rescaled_grid(Dim3 g, double ratio) {
  if (!(ratio > 0) || !std::isfinite(ratio)) return g;
  std::int64_t* big = &g.x;
  if (g.y > *big) big = &g.y;
  if (g.z > *big) big = &g.z;
  *big = std::clamp<std::int64_t>(static_cast<std::int64_t>(std::ceil(static_cast<double>(*big) * ratio)), 1, 2147483647);
  return g;
}

}  // namespace habitat::whatif
