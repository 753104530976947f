#pragma once
// Inputs of the operation MLPs. Names carry their family: "p:" are the paper's features (the op's
// dimensions, pass, precision, and the GPU's memory size, bandwidth, SMs and peak FLOPS); "x:" are the
// physics habitat adds (FLOPs, bytes, roofline times, waves, L2, clock). A weight file lists the names
// it was trained on, so the predictor computes exactly those.
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "habitat/device/device.hpp"
#include "habitat/ops/op_query.hpp"
#include "habitat/ops/op_schema.hpp"
#include "habitat/predict/roofline.hpp"

namespace habitat::mlp {

using ops::gemm_like;
using ops::OpQuery;

// The peak the op's main kernels can reach: GEMM-like ops in BF16 use tensor cores; FP32
// convolutions use TF32 where cuDNN allows it by default (PyTorch's allow_tf32 for cuDNN is on).
[[nodiscard]] inline double peak_tflops(const OpQuery& q, const Device& g) {
  using ops::OpKind;
  if (q.dtype == ops::DataType::bf16 && gemm_like(q.op)) return g.peak_tflops(Precision::bf16);
  if (q.op == OpKind::conv2d || q.op == OpKind::conv_transpose2d) return g.peak_tflops(Precision::tf32);
  return g.fp32_tflops();
}

struct Roofline {
  double compute_ms, memory_ms;
  [[nodiscard]] double ms() const { return std::max(compute_ms, memory_ms); }
};

// The op's roofline bound in ms: its FLOPs at the peak its kernels can reach, its bytes at the spec bandwidth.
[[nodiscard]] inline Roofline roofline(const OpQuery& q, const Device& g) {
  const auto w = ops::op_work(q.op, q.dims, q.dtype, q.pass);
  return {w.flops / (peak_tflops(q, g) * 1e9), w.bytes / (g.bandwidth_spec_gbps * 1e6)};
}

// Independent units of work the op's main kernel spreads over the SMs (128x128 output tiles for
// GEMM-like ops, 2048 elements otherwise): with the SM count it gives the wave count.
[[nodiscard]] inline double work_tiles(const OpQuery& q) {
  const auto& d = q.dims;
  const auto tiles = [](double m, double n) { return std::ceil(m / 128) * std::ceil(n / 128); };
  switch (q.op) {
    case ops::OpKind::linear: return tiles(d[0] * d[1], d[2]);
    case ops::OpKind::bmm: return d[0] * tiles(d[1], d[2]);
    case ops::OpKind::conv2d: {
      const double o = std::max(1.0, ops::conv_out_size(d[4], d[3], d[5], d[6]));
      return tiles(d[0] * o * o, d[2]);
    }
    case ops::OpKind::conv_transpose2d: {
      const double o = std::max(1.0, ops::conv_transpose_out_size(d[4], d[3], d[5], d[6]));
      return tiles(d[0] * o * o, d[2]);
    }
    case ops::OpKind::batch_norm: return std::ceil(d[0] * d[1] * d[2] * d[2] / 2048);
    case ops::OpKind::layer_norm:
    case ops::OpKind::softmax:
    case ops::OpKind::elementwise: return std::ceil(d[0] * d[1] / 2048);
    case ops::OpKind::lstm: return tiles(d[0], 4 * d[3]) * (d[5] > 0 ? 2 : 1);
    case ops::OpKind::sdpa: return d[0] * d[1] * std::ceil(d[2] / 128);
  }
  return 1;
}

[[nodiscard]] inline std::vector<std::string> feature_names(ops::OpKind op) {
  std::vector<std::string> n;
  const auto& s = ops::schema(op);
  for (int i = 0; i < s.ndims; ++i) n.push_back("p:log2_" + std::string(s.dims[i]));
  for (const char* f : {"p:backward", "p:bf16", "p:log_memory_gib", "p:log_bandwidth", "p:log_sms", "p:log_peak_tflops",
                        "x:log_l2_mib", "x:log_clock_mhz", "x:log_flops", "x:log_bytes", "x:log_compute_ms",
                        "x:log_memory_ms", "x:log_roofline_ms", "x:log_intensity_over_ridge", "x:log_waves"})
    n.emplace_back(f);
  return n;
}

// Values in the order of feature_names(q.op); every value is finite for a valid configuration.
[[nodiscard]] inline std::vector<double> feature_values(const OpQuery& q, const Device& g) {
  std::vector<double> v;
  const auto& s = ops::schema(q.op);
  for (int i = 0; i < s.ndims; ++i) v.push_back(std::log2(1 + std::max(0.0, q.dims[i])));
  const auto w = ops::op_work(q.op, q.dims, q.dtype, q.pass);
  const auto r = roofline(q, g);
  const double peak = peak_tflops(q, g);
  const auto lg = [](double x) { return std::log(std::max(x, 1e-12)); };
  const double ridge = ridge_point(peak, g.bandwidth_spec_gbps);
  v.insert(v.end(), {q.pass == ops::Pass::backward ? 1.0 : 0.0, q.dtype == ops::DataType::bf16 ? 1.0 : 0.0,
                     lg(g.memory_gib), lg(g.bandwidth_spec_gbps), lg(g.sms), lg(peak), lg(g.l2_mib), lg(g.boost_clock_mhz),
                     lg(w.flops), lg(w.bytes), lg(r.compute_ms), lg(r.memory_ms), lg(r.ms()),
                     lg(w.flops / std::max(w.bytes, 1.0) / ridge), lg(work_tiles(q) / g.sms)});
  return v;
}

}  // namespace habitat::mlp
