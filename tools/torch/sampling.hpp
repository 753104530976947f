#pragma once
// Configuration sampling for habitat-collect: the ranges of the paper (section 4.3.1) widened to
// today's sizes, log-uniform so small and large shapes are both well covered. The generator is
// seeded per operation only, so every GPU (and both precisions) measure the same configurations.
#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include "habitat/ops/op_schema.hpp"

namespace habitat::collect {

class Sampler {
 public:
  Sampler(std::uint64_t seed, ops::OpKind k) : rng_(seed * 1000003ULL + static_cast<std::uint64_t>(k)) {}

  // The next valid configuration; rejection depends only on the dims, never on the GPU.
  ops::Dims next(ops::OpKind k) {
    for (;;) {
      ops::Dims d{};
      if (draw(k, d) && within_budget(k, d)) return d;
    }
  }

 private:
  std::mt19937_64 rng_;

  double log_uniform(double lo, double hi) {
    std::uniform_real_distribution<double> u(std::log(lo), std::log(hi + 1));
    return std::min(hi, std::floor(std::exp(u(rng_))));
  }
  double uniform(int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng_); }
  double pick(std::initializer_list<double> v) {
    return *(v.begin() + std::uniform_int_distribution<std::size_t>(0, v.size() - 1)(rng_));
  }

  bool draw(ops::OpKind k, ops::Dims& d) {
    using ops::OpKind;
    switch (k) {
      case OpKind::linear: d = {1, log_uniform(1, 16384), log_uniform(1, 32768), log_uniform(1, 32768)}; return true;
      case OpKind::bmm: d = {log_uniform(1, 1024), log_uniform(1, 2048), log_uniform(1, 2048), log_uniform(1, 2048)}; return true;
      case OpKind::conv2d: {
        d = {log_uniform(1, 64), log_uniform(3, 2048), log_uniform(16, 2048), pick({1, 1, 3, 3, 3, 5, 7, 11}),
             log_uniform(1, 256), uniform(1, 4), uniform(0, 3)};
        return d[3] <= d[4] + 2 * d[6] && ops::conv_out_size(d[4], d[3], d[5], d[6]) > 0;
      }
      case OpKind::conv_transpose2d: {
        d = {log_uniform(1, 64), log_uniform(16, 1024), log_uniform(3, 1024), pick({1, 2, 3, 4, 5}),
             log_uniform(1, 128), uniform(1, 2), uniform(0, 2)};
        return d[6] < d[3] && ops::conv_transpose_out_size(d[4], d[3], d[5], d[6]) > 0;
      }
      case OpKind::batch_norm: d = {log_uniform(1, 128), log_uniform(3, 2048), log_uniform(1, 256)}; return true;
      case OpKind::layer_norm: d = {log_uniform(1, 65536), log_uniform(16, 16384)}; return true;
      case OpKind::lstm:
        d = {log_uniform(1, 128), log_uniform(1, 64), log_uniform(1, 1280), log_uniform(1, 1280), uniform(1, 6), uniform(0, 1)};
        return true;
      case OpKind::sdpa:
        d = {log_uniform(1, 64), log_uniform(1, 32), log_uniform(16, 4096), pick({32, 64, 64, 128}), uniform(0, 1)};
        return true;
      default: throw std::logic_error("no sampling ranges for this operation");
    }
  }

  // Keeps one measurement under ~50 ms on an H100 and tensors well inside memory.
  static bool within_budget(ops::OpKind k, const ops::Dims& d) {
    const auto w = ops::op_work(k, d, ops::DataType::fp32, ops::Pass::forward);
    return w.flops <= 1.5e12 && w.bytes <= 8e9;
  }
};

}  // namespace habitat::collect
