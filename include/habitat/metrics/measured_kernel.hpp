#pragma once
// Measured counters of one kernel launch configuration (section 4.2 of the paper: FLOPs and DRAM bytes
// decide gamma), keyed the way the paper caches them: kernel name and launch configuration.
#include <algorithm>
#include <cmath>
#include <array>
#include <cctype>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "habitat/trace/trace.hpp"

namespace habitat {

// Names as profilers print them differ in spacing ("Array<char*, 1> >" vs "Array<char*,1>>"): compare
// without whitespace.
[[nodiscard]] inline std::string normalize_kernel_name(std::string_view name) {
  std::string out;
  out.reserve(name.size());
  for (char c : name)
    if (!std::isspace(static_cast<unsigned char>(c))) out.push_back(c);
  return out;
}

namespace detail {
[[nodiscard]] inline std::string launch_id(std::string_view normalized_name, const Dim3& g, const Dim3& b) {
  auto d = [](const Dim3& v) { return std::to_string(v.x) + "," + std::to_string(v.y) + "," + std::to_string(v.z); };
  return std::string(normalized_name) + "|" + d(g) + "|" + d(b);
}
}  // namespace detail

struct KernelKey {
  std::string name;  // normalized
  Dim3 grid, block;
  long smem_dynamic = 0;
  std::optional<long> smem_static;  // Kineto records static + dynamic; where known, match on the sum

  // Name and launch dimensions only: what a trace kernel is looked up by.
  [[nodiscard]] std::string launch() const { return detail::launch_id(name, grid, block); }
  // Kineto records static + dynamic shared memory as one number: compare with the sum where the static
  // part is known, else with the dynamic part.
  [[nodiscard]] bool matches_trace_smem(long trace_smem) const {
    return (smem_static ? *smem_static + smem_dynamic : smem_dynamic) == trace_smem;
  }
  [[nodiscard]] std::string id() const { return launch() + "|" + std::to_string(smem_dynamic); }
};

// FLOPs by where they ran. Vector-unit FP32/FP16/FP64 count an FMA as two; tensor-core operations are
// counted as the profiler's ops_path metrics report them (FLOPs, see counters.hpp).
enum class FlopKind { fp32, fp16, fp64, tensor_fp16, tensor_bf16, tensor_tf32, tensor_fp8, tensor_int8, tensor_fp64 };
inline constexpr std::array<FlopKind, 9> all_flop_kinds{FlopKind::fp32,        FlopKind::fp16,        FlopKind::fp64,
                                                        FlopKind::tensor_fp16, FlopKind::tensor_bf16, FlopKind::tensor_tf32,
                                                        FlopKind::tensor_fp8,  FlopKind::tensor_int8, FlopKind::tensor_fp64};

[[nodiscard]] constexpr const char* to_string(FlopKind k) {
  switch (k) {
    case FlopKind::fp32: return "fp32";
    case FlopKind::fp16: return "fp16";
    case FlopKind::fp64: return "fp64";
    case FlopKind::tensor_fp16: return "tensor_fp16";
    case FlopKind::tensor_bf16: return "tensor_bf16";
    case FlopKind::tensor_tf32: return "tensor_tf32";
    case FlopKind::tensor_fp8: return "tensor_fp8";
    case FlopKind::tensor_int8: return "tensor_int8";
    case FlopKind::tensor_fp64: return "tensor_fp64";
  }
  return "?";
}

// Which peak bounds this kind of work: tensor-core work at its input type's peak, vector work at FP32
// (the catalog has no separate FP16/FP64 vector peaks; DL kernels do almost no FP64).
[[nodiscard]] constexpr Precision ridge_precision(FlopKind k) {
  switch (k) {
    case FlopKind::tensor_fp16: return Precision::fp16;
    case FlopKind::tensor_bf16: return Precision::bf16;
    case FlopKind::tensor_tf32: return Precision::tf32;
    case FlopKind::tensor_fp8: return Precision::fp16;  // no FP8 peak in the catalog: the FP16 ridge is the nearer one
    case FlopKind::tensor_int8: return Precision::fp16;
    default: return Precision::fp32;
  }
}

struct FlopCounts {
  std::array<double, all_flop_kinds.size()> by_kind{};
  [[nodiscard]] double& operator[](FlopKind k) { return by_kind[static_cast<std::size_t>(k)]; }
  [[nodiscard]] double operator[](FlopKind k) const { return by_kind[static_cast<std::size_t>(k)]; }
  [[nodiscard]] double total() const {
    double t = 0;
    for (double v : by_kind) t += v;
    return t;
  }
  // The kind that did most of the work decides the ridge point.
  [[nodiscard]] FlopKind dominant() const {
    return static_cast<FlopKind>(std::max_element(by_kind.begin(), by_kind.end()) - by_kind.begin());
  }
};

// Bounds of one kernel's counters as read from a file: a kernel that moves an exabyte or does 1e21 FLOPs
// (a million seconds on a petaFLOPS GPU) means a corrupt file. Within them, the mean over a billion folded
// launches cannot overflow.
inline constexpr double max_kernel_bytes = 1e18, max_kernel_flops = 1e21, max_kernel_ns = 1e15;
inline constexpr int max_folded_launches = 1000000000;

struct MeasuredKernel {
  KernelKey key;
  std::string name;  // as the profiler printed it
  double dram_read_bytes = 0, dram_write_bytes = 0;
  FlopCounts flops;
  double duration_ns = 0;  // under the profiler (serialized, caches flushed by replay): for reference only
  int launches = 1;        // profiled launches folded into this entry (values are their mean)
  double flops_spread = 0; // (max - min) / mean of total FLOPs across them: > 0 means the key hides different work

  [[nodiscard]] double dram_bytes() const { return dram_read_bytes + dram_write_bytes; }
  [[nodiscard]] KernelMetrics to_kernel_metrics() const {
    return {dram_bytes(), flops.total(), ridge_precision(flops.dominant())};
  }
};

// Running mean of repeated launches of one key; spread records whether they did the same work.
inline void fold_launch(MeasuredKernel& into, const MeasuredKernel& m) {
  const double n = into.launches, tot_old = into.flops.total(), tot_new = m.flops.total();
  auto mix = [&](double a, double b) { return (a * n + b * m.launches) / (n + m.launches); };
  into.dram_read_bytes = mix(into.dram_read_bytes, m.dram_read_bytes);
  into.dram_write_bytes = mix(into.dram_write_bytes, m.dram_write_bytes);
  for (auto k : all_flop_kinds) into.flops[k] = mix(into.flops[k], m.flops[k]);
  into.duration_ns = mix(into.duration_ns, m.duration_ns);
  into.launches += m.launches;
  const double mean = into.flops.total();
  if (mean > 0) into.flops_spread = std::max(into.flops_spread, std::abs(tot_new - tot_old) / mean);
}

// Where and with what a set of metrics was measured: predictions must not mix GPUs silently.
struct MetricProvenance {
  std::string device;  // GPU name as CUDA reports it
  std::string chip;    // e.g. GH100
  std::string tool;    // "ncu" or "habitat-cupti-collect"
  std::string tool_version, cuda_version, driver_version;
  std::string workload, collected_at;
  std::optional<double> collection_seconds;
};

class MetricSet {
 public:
  MetricProvenance provenance;

  [[nodiscard]] const std::vector<MeasuredKernel>& kernels() const { return kernels_; }
  [[nodiscard]] const MeasuredKernel* find(const KernelKey& k) const {
    const auto it = index_.find(k.id());
    return it == index_.end() ? nullptr : &kernels_[it->second];
  }

  // Adds a measurement, folding it into an existing entry with the same key.
  void add(const MeasuredKernel& m) {
    auto [it, fresh] = index_.try_emplace(m.key.id(), kernels_.size());
    if (fresh) kernels_.push_back(m);
    else fold_launch(kernels_[it->second], m);
  }

 private:
  std::vector<MeasuredKernel> kernels_;
  std::unordered_map<std::string, std::size_t> index_;
};

}  // namespace habitat
