#pragma once
// Hardware counters that make up a MeasuredKernel, by their Nsight Compute / CUPTI names (Hopper and
// Ampere spellings), and the units they may come in. Both the ncu importer and the CUPTI collector use
// this one table, so the two agree by construction on what a counter means.
#include <array>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "habitat/error.hpp"
#include "habitat/metrics/measured_kernel.hpp"

namespace habitat::counters {

enum class Quantity { bytes, time, count };
enum class Target { dram_read, dram_write, flops, duration };

struct Rule {
  std::string_view metric;  // without the ".sum" roll-up
  Target target;
  FlopKind kind = FlopKind::fp32;
  double flops_per_unit = 0;  // FLOPs per counted instruction or op
  int min_cc = 0, max_cc = 99;  // compute capability majors that spell the counter this way
  bool extended = false;  // FP16/FP64 vector-unit counts: rare in training, and each op type costs replay passes

  [[nodiscard]] constexpr Quantity quantity() const {
    return target == Target::duration ? Quantity::time
           : (target == Target::flops) ? Quantity::count
                                       : Quantity::bytes;
  }
};

// Tensor-core ops_path counters count floating-point operations (an MMA's multiply and add count twice),
// checked on the H100 against 2*M*N*K of cuBLAS GEMMs (tests/cupti, README).
inline constexpr double tensor_flops_per_op = 1.0;

inline constexpr std::array rules{
    Rule{"dram__bytes_read", Target::dram_read},
    Rule{"dram__bytes_write", Target::dram_write},
    Rule{"gpu__time_duration", Target::duration},
    Rule{"sm__sass_thread_inst_executed_op_fadd_pred_on", Target::flops, FlopKind::fp32, 1},
    Rule{"sm__sass_thread_inst_executed_op_fmul_pred_on", Target::flops, FlopKind::fp32, 1},
    Rule{"sm__sass_thread_inst_executed_op_ffma_pred_on", Target::flops, FlopKind::fp32, 2},
    Rule{"sm__sass_thread_inst_executed_op_hadd_pred_on", Target::flops, FlopKind::fp16, 1, 0, 99, true},
    Rule{"sm__sass_thread_inst_executed_op_hmul_pred_on", Target::flops, FlopKind::fp16, 1, 0, 99, true},
    Rule{"sm__sass_thread_inst_executed_op_hfma_pred_on", Target::flops, FlopKind::fp16, 2, 0, 99, true},
    Rule{"sm__sass_thread_inst_executed_op_dadd_pred_on", Target::flops, FlopKind::fp64, 1, 0, 99, true},
    Rule{"sm__sass_thread_inst_executed_op_dmul_pred_on", Target::flops, FlopKind::fp64, 1, 0, 99, true},
    Rule{"sm__sass_thread_inst_executed_op_dfma_pred_on", Target::flops, FlopKind::fp64, 2, 0, 99, true},
    // Hopper spells FP16 tensor work without the accumulator type; Ampere splits it by accumulator.
    Rule{"sm__ops_path_tensor_src_fp16", Target::flops, FlopKind::tensor_fp16, tensor_flops_per_op, 9},
    Rule{"sm__ops_path_tensor_src_fp16_dst_fp16", Target::flops, FlopKind::tensor_fp16, tensor_flops_per_op, 0, 8},
    Rule{"sm__ops_path_tensor_src_fp16_dst_fp32", Target::flops, FlopKind::tensor_fp16, tensor_flops_per_op, 0, 8},
    Rule{"sm__ops_path_tensor_src_bf16_dst_fp32", Target::flops, FlopKind::tensor_bf16, tensor_flops_per_op},
    Rule{"sm__ops_path_tensor_src_tf32_dst_fp32", Target::flops, FlopKind::tensor_tf32, tensor_flops_per_op},
    Rule{"sm__ops_path_tensor_src_fp8", Target::flops, FlopKind::tensor_fp8, tensor_flops_per_op, 9},
    Rule{"sm__ops_path_tensor_src_int8", Target::flops, FlopKind::tensor_int8, tensor_flops_per_op},
    Rule{"sm__ops_path_tensor_src_fp64", Target::flops, FlopKind::tensor_fp64, tensor_flops_per_op},
};

// "dram__bytes_read.sum" -> the rule for "dram__bytes_read"; other roll-ups (.avg, .max) are not totals.
[[nodiscard]] inline const Rule* find_rule(std::string_view metric) {
  constexpr std::string_view sum = ".sum";
  if (metric.size() > sum.size() && metric.substr(metric.size() - sum.size()) == sum)
    metric.remove_suffix(sum.size());
  else if (metric.find('.') != std::string_view::npos)
    return nullptr;
  for (const auto& r : rules)
    if (r.metric == metric) return &r;
  return nullptr;
}

// Factor from a printed unit to the rule's base unit (bytes, nanoseconds, plain counts); nullopt when the
// unit does not measure that quantity. Nsight Compute prints SI prefixes ("Kbyte" = 1000 bytes).
[[nodiscard]] inline std::optional<double> unit_factor(std::string_view unit, Quantity q) {
  auto prefixed = [&](std::string_view base) -> std::optional<double> {
    if (unit.size() < base.size() || unit.substr(unit.size() - base.size()) != base) return std::nullopt;
    const std::string_view p = unit.substr(0, unit.size() - base.size());
    if (p.empty()) return 1.0;
    if (p == "K" || p == "k") return 1e3;
    if (p == "M") return 1e6;
    if (p == "G") return 1e9;
    if (p == "T") return 1e12;
    if (p == "m") return 1e-3;
    if (p == "u") return 1e-6;
    if (p == "n") return 1e-9;
    return std::nullopt;
  };
  switch (q) {
    case Quantity::bytes: return prefixed("byte");
    case Quantity::time:
      if (auto f = prefixed("second")) return *f * 1e9;  // to ns
      if (unit == "ns") return 1.0;
      if (unit == "us") return 1e3;
      if (unit == "ms") return 1e6;
      return std::nullopt;
    case Quantity::count:
      if (unit.empty()) return 1.0;
      for (std::string_view base : {"inst", "op", "ops", "flop"})
        if (auto f = prefixed(base)) return f;
      return std::nullopt;
  }
  return std::nullopt;
}

[[nodiscard]] constexpr const char* to_string(Quantity q) {
  switch (q) {
    case Quantity::bytes: return "bytes";
    case Quantity::time: return "time";
    case Quantity::count: return "a count";
  }
  return "?";
}

// Adds one counter value (already in the rule's base unit) to a kernel.
inline void apply(MeasuredKernel& m, const Rule& r, double value) {
  switch (r.target) {
    case Target::dram_read: m.dram_read_bytes += value; break;
    case Target::dram_write: m.dram_write_bytes += value; break;
    case Target::duration: m.duration_ns += value; break;
    case Target::flops: m.flops[r.kind] += value * r.flops_per_unit; break;
  }
}

// Counter names to ask a profiler for on a GPU of compute capability major `cc` (with the ".sum" roll-up).
// Counter names (with the ".sum" roll-up) for a GPU of compute capability major `cc`, or every spelling
// when cc is not known (the CUPTI collector drops what the chip lacks). The default set leaves out the
// extended counters (FP16/FP64 vector units); on an H100 it still took 7 replay passes.
[[nodiscard]] inline std::vector<std::string> metric_names(std::optional<int> cc, bool extended = false) {
  std::vector<std::string> out;
  for (const auto& r : rules)
    if ((!cc || (*cc >= r.min_cc && *cc <= r.max_cc)) && (extended || !r.extended)) out.push_back(std::string(r.metric) + ".sum");
  return out;
}

// The same as one comma-separated list, for ncu's --metrics.
[[nodiscard]] inline std::string metric_list(int cc, bool extended = false) {
  std::string out;
  for (const auto& m : metric_names(cc, extended)) out += (out.empty() ? "" : ",") + m;
  return out;
}

}  // namespace habitat::counters
