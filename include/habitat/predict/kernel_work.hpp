#pragma once
// Work of each kernel of a trace: measured counters where a kernel has them, else the counter-free
// estimate of its operation spread over the operation's kernels in proportion to their durations (FLOPs
// go to the math kernels only: layout transforms inside a convolution do no math).
#include <algorithm>
#include <array>
#include <string_view>
#include <vector>

#include "habitat/predict/datapath.hpp"
#include "habitat/predict/op_cost.hpp"
#include "habitat/trace/trace.hpp"

namespace habitat {

enum class WorkSource { measured, estimated, unknown };

[[nodiscard]] constexpr const char* to_string(WorkSource s) {
  switch (s) {
    case WorkSource::measured: return "measured";
    case WorkSource::estimated: return "estimated";
    case WorkSource::unknown: return "unknown";
  }
  return "?";
}

struct KernelWork {
  double flops = 0;
  double bytes = 0;
  Precision precision = Precision::fp32;  // the datapath it ran on where it was traced
  WorkSource source = WorkSource::unknown;
  MathFamily family = MathFamily::none;  // the library that ran its math (none: not a math kernel)
  bool tf32_allowed = false;             // the framework's settings let this FP32 math use TF32 (predict/datapath.hpp)
  double floor_flops_share = 1;          // of `flops`, what the fewest-arithmetic algorithm needs (a convolution's
                                         // Winograd or FFT): the roofline floor counts only these
  [[nodiscard]] double floor_flops() const { return flops * floor_flops_share; }
};

// The datapath of w on GPU g, for a trace recorded on traced_on (predict/datapath.hpp).
[[nodiscard]] inline Precision datapath(const KernelWork& w, const Device& traced_on, const Device& g) {
  return datapath(w.precision, w.tf32_allowed, traced_on, g);
}

namespace detail {

[[nodiscard]] inline bool contains_any(std::string_view s, std::initializer_list<std::string_view> parts) {
  return std::any_of(parts.begin(), parts.end(), [&](std::string_view p) { return s.find(p) != std::string_view::npos; });
}

// A kernel's function name without its return type, template arguments and parameters:
// "void ns::(anonymous namespace)::f<T>(int)" -> "ns::(anonymous namespace)::f".
[[nodiscard]] inline std::string_view function_name(std::string_view name) {
  if (name.starts_with("void ")) name.remove_prefix(5);
  constexpr std::string_view anonymous = "(anonymous namespace)";
  std::size_t end = 0;
  while ((end = name.find_first_of("<(", end)) != std::string_view::npos && name.substr(end).starts_with(anonymous)) end += anonymous.size();
  return name.substr(0, end);
}

// Kernels that run on tensor cores (or are the FMA core of a GEMM/convolution), by the names the vendor
// libraries and PyTorch give them (AMD's Tensile GEMMs of rocBLAS and hipBLASLt: Cijk_...). The libraries' own pointwise and reduction helpers carry the same names
// (cuDNN's LSTM_elementWise_bp1 and reduce_wgrad_nchw_helper, cuBLASLt's splitKreduce_kernel, ATen's layer-norm
// GammaBetaBackward, whose "mma" is in "Gamma") but move data: not math.
[[nodiscard]] inline bool is_math_kernel(std::string_view name) {
  if (contains_any(function_name(name), {"elementWise", "elemWise", "GammaBeta", "reduce", "Reduce"})) return false;
  return contains_any(name, {"gemm", "xmma", "wgmma", "nvjet", "cutlass", "Kernel2", "mma", "fmha", "flash", "sdpa",
                             "attention", "conv", "winograd", "wgrad", "dgrad", "fprop", "implicit", "cudnn::rnn",
                             "LSTM", "lstm", "gemv", "dot_kernel", "sm80_", "sm90_", "sm100_", "cublas", "Cijk_"});
}

// cuDNN's legacy SIMT convolution engines (dgrad_engine, wgrad_alg0_engine, wgrad_alg1_engine): not tiled GEMMs,
// they spend most of their time neither on math nor on DRAM traffic (below, roofline_scaling.hpp).
[[nodiscard]] inline bool is_legacy_conv_engine(std::string_view name) {
  return contains_any(function_name(name), {"dgrad_engine", "wgrad_alg0_engine", "wgrad_alg1_engine"});
}

// cuDNN's layout transpositions (NCHW <-> NHWC, folded or generic) before and after its NHWC kernels.
[[nodiscard]] inline bool is_layout_transform(std::string_view name) {
  return contains_any(function_name(name), {"ToNhwc", "ToNchw", "ToFoldedNhwc", "tensorTransform"});
}

[[nodiscard]] inline Precision kernel_precision(const Kernel& k, bool math, const Operation* op) {
  if (!math) return Precision::fp32;  // vector units: FP32 ALUs whatever the storage type
  bool bf16 = contains_any(k.name, {"bf16", "bfloat16", "BFloat16"});
  bool fp16 = contains_any(k.name, {"f16f16", "fp16", "_h_", "half", "Half"});
  if (op)
    for (const auto& t : op->inputs) {
      bf16 |= t.dtype == "c10::BFloat16";
      fp16 |= t.dtype == "c10::Half";
    }
  if (bf16) return Precision::bf16;
  if (fp16) return Precision::fp16;
  // TF32 tensor ops: cuDNN runs FP32 convolutions on them by default (cutlass "tensorop_s1688"/"s16816").
  if (contains_any(k.name, {"tf32", "tensorop_s1688", "tensorop_s16816", "tensorop_s168"})) return Precision::tf32;
  return Precision::fp32;
}

// The tensor lists a multi_tensor_apply kernel reads, from its name where no operation records them (the CUPTI
// tracker's traces): ATen's functors are Functor<T, depth, r_args_depth, res_arg_index>, r_args_depth the lists
// read (UnaryOpFunctor<float, 2, 1, 1>: a list read, its result in a second one); else the metadata's depth
// (TensorListMetadata<3>). Checked against the operations' TensorList inputs in the fixtures (fixtures/track).
[[nodiscard]] inline double foreach_lists_read(std::string_view name) {
  auto whole = [](std::string_view s, std::size_t& at) {
    std::size_t n = 0, start = at;
    while (at < s.size() && s[at] >= '0' && s[at] <= '9') n = n * 10 + static_cast<std::size_t>(s[at++] - '0');
    return at > start && at - start < 4 ? static_cast<double>(n) : 0.0;
  };
  for (std::size_t f = name.find("Functor<"); f != std::string_view::npos; f = name.find("Functor<", f + 1)) {
    std::size_t at = name.find(", ", f);  // past the element type
    if (at == std::string_view::npos || name.find('>', f) < at) continue;
    at += 2;
    if (whole(name, at) <= 0 || name.substr(at, 2) != ", ") continue;
    at += 2;
    if (const double read = whole(name, at); read > 0) return read;
  }
  if (const std::size_t m = name.find("Metadata<"); m != std::string_view::npos) {
    const std::size_t close = name.find('>', m);
    std::size_t at = name.rfind(' ', close);
    at = at == std::string_view::npos || at < m ? m + 9 : at + 1;  // TensorListScalarListMetadata<float, 3>
    if (const double depth = whole(name, at); depth > 0 && at == close) return depth;
  }
  return 0;
}

// PyTorch's multi_tensor_apply (foreach / fused optimizers) gives each block one chunk of 65536 elements
// of one tensor; the traces record no shapes for tensor lists, so the grid is the best size we have
// (an upper bound: the last chunk of each tensor is partial). FP32 parameters assumed. The lists read come from
// the operation's TensorList inputs, else from the kernel's name.
[[nodiscard]] inline std::optional<double> foreach_bytes(const Kernel& k, const Operation* op) {
  if (k.name.find("multi_tensor_apply") == std::string::npos || !k.launch_recorded) return std::nullopt;
  double lists = 0;
  if (op)
    for (const auto& t : op->inputs) lists += t.dtype == "TensorList" ? 1 : 0;
  if (lists == 0) lists = foreach_lists_read(k.name);
  if (lists == 0) lists = 2;
  lists += 1;  // the written list: in place (read and written) or a fresh output
  return double(k.grid.x) * 65536.0 * 4.0 * lists;
}

// Tensor cores take a convolution's channels in groups of 16 bytes (8 BF16/FP16 values, 4 TF32 ones); cuDNN pads
// fewer (NVIDIA, Deep Learning Performance Guide, "Convolutional Layers": channels a multiple of 8 for FP16).
inline constexpr std::int64_t tensor_core_channel_group = 8;

// A convolution with fewer channels on one side than tensor cores take at once (an image's 3 colours, a
// discriminator's one output): mostly padding on tensor cores, so cuDNN keeps it on FP32 lanes with TF32 allowed
// (fixtures/tf32: DCGAN's and VGG-16's first layers).
[[nodiscard]] inline bool few_channels(const Trace& t, int op) {
  for (int o = op; o >= 0; o = t.ops[static_cast<std::size_t>(o)].parent) {
    const Operation& x = t.ops[static_cast<std::size_t>(o)];
    const auto* sig = ops::aten::find_signature(x.name);
    if (!sig || x.name.find("conv") == std::string::npos || !sig->find("weight")) continue;
    const std::size_t wi = ops::aten::conv_args(*sig).weight;
    if (wi >= x.inputs.size() || x.inputs[wi].shape.size() < 2) return false;
    const auto& w = x.inputs[wi].shape;
    return std::min(w[0], w[1]) < tensor_core_channel_group;
  }
  return false;
}
}  // namespace detail

[[nodiscard]] inline std::vector<KernelWork> kernel_work(const Trace& t, const Tf32Settings& tf32) {
  std::vector<KernelWork> work(t.kernels.size());
  // Duration of each op's kernels, all and math-only, to spread the op's work.
  // Name matching is the costly part: classify each kernel once.
  std::vector<char> math(t.kernels.size());
  for (std::size_t i = 0; i < t.kernels.size(); ++i) math[i] = detail::is_math_kernel(t.kernels[i].name);
  std::vector<double> op_all(t.ops.size(), 0), op_math(t.ops.size(), 0);
  for (std::size_t i = 0; i < t.kernels.size(); ++i) {
    const Kernel& k = t.kernels[i];
    if (k.op >= 0 && k.kind == GpuWorkKind::kernel) {
      op_all[k.op] += k.duration_us;
      if (math[i]) op_math[k.op] += k.duration_us;
    }
  }
  std::vector<std::optional<OpCost>> op_cost(t.ops.size());
  std::vector<char> few(t.ops.size(), 0);  // per op, once: a convolution too narrow for tensor cores
  for (std::size_t i = 0; i < t.ops.size(); ++i)
    if (op_all[i] > 0) op_cost[i] = estimate_op_cost(t.ops[i]), few[i] = detail::few_channels(t, static_cast<int>(i));

  for (std::size_t i = 0; i < t.kernels.size(); ++i) {
    const Kernel& k = t.kernels[i];
    KernelWork& w = work[i];
    const Operation* op = k.op >= 0 ? &t.ops[k.op] : nullptr;
    w.precision = detail::kernel_precision(k, math[i], op);
    if (math[i] && op) w.family = op_cost[k.op] ? op_cost[k.op]->family : math_family_by_name(op->name);
    w.tf32_allowed = tf32.allows(w.family) && !(w.family == MathFamily::convolution && few[static_cast<std::size_t>(k.op)]);
    if (k.metrics) {
      w.flops = k.metrics->flops;
      w.bytes = k.metrics->dram_bytes;
      w.precision = k.metrics->precision;
      w.source = WorkSource::measured;
      continue;
    }
    if (k.kind != GpuWorkKind::kernel) {  // copies and fills: the trace records their size
      w.bytes = k.bytes * (k.kind == GpuWorkKind::memcpy ? 2 : 1);
      w.source = k.bytes > 0 ? WorkSource::estimated : WorkSource::unknown;
      continue;
    }
    if (auto b = detail::foreach_bytes(k, op)) {
      w.bytes = *b;
      w.flops = *b / 4;
      w.source = WorkSource::estimated;
      continue;
    }
    if (!op) continue;
    const auto& c = op_cost[k.op];
    if (!c || op_all[k.op] <= 0) continue;
    const double share = k.duration_us / op_all[k.op];
    w.bytes = c->bytes * share;
    if (c->math && op_math[k.op] > 0) w.flops = math[i] ? c->flops * k.duration_us / op_math[k.op] : 0;
    else w.flops = c->flops * share;
    w.floor_flops_share = c->floor_flops_share;
    w.source = WorkSource::estimated;
  }
  return work;
}

// With the settings the trace records (PyTorch's defaults where it records none).
[[nodiscard]] inline std::vector<KernelWork> kernel_work(const Trace& t) { return kernel_work(t, tf32_settings(t)); }

}  // namespace habitat
