#pragma once
// The mixed-precision what-if: an FP32 step as it would run under torch.autocast (BF16 or FP16) on the GPU
// it was traced on. PyTorch's autocast rules, stated once here: the operations of its lower-precision list
// (matrix products, convolutions, attention, RNNs) run at the lower precision, on tensor cores; those of its
// FP32 list (reductions, norms, losses, softmax, pointwise transcendental functions) stay FP32; the rest run
// in their inputs' type, the lower one where a lower-precision operation produced them. Casts are added: each
// parameter a lower-precision operation uses is cast to it in the forward pass and its gradient cast back in
// the backward pass. FP16 adds GradScaler's per-step unscale-and-check over all gradients.
//
// The times: a math kernel's by roofline scaling onto the same GPU with the new datapath (tensor cores at the
// precision) and half the bytes, the decomposition a change of GPU uses (roofline_scaling.hpp); a memory-bound
// kernel that moves lower-precision data by half its bytes above the fixed part of kernel_resize.hpp. The TF32
// what-if (tf32() below) moves FP32 library math to TF32 the same way. Cast kernels are folded into the kernel they feed
// (they run just before it, on its stream) and their host calls into its launch.
#include <algorithm>
#include <array>
#include <cstdio>
#include <string>
#include <string_view>
#include <vector>

#include "habitat/predict/kernel_work.hpp"
#include "habitat/predict/roofline.hpp"
#include "habitat/predict/roofline_scaling.hpp"
#include "habitat/whatif/batch.hpp"

namespace habitat::whatif {

// autocast's CUDA lower-precision list (torch/csrc/autograd/autocast / aten/src/ATen/autocast_mode.cpp,
// PyTorch 2.x), by ATen name; the RNN entries cover cuDNN's fused LSTM/GRU, which autocast runs in the
// lower precision through its RNN cell ops.
inline constexpr std::array<std::string_view, 24> autocast_lower{
    "aten::conv1d", "aten::conv2d", "aten::conv3d", "aten::conv_transpose1d", "aten::conv_transpose2d", "aten::conv_transpose3d",
    "aten::convolution", "aten::_convolution", "aten::prelu", "aten::addmm", "aten::addmv", "aten::addr", "aten::matmul",
    "aten::einsum", "aten::mm", "aten::mv", "aten::linear", "aten::addbmm", "aten::baddbmm", "aten::bmm",
    "aten::scaled_dot_product_attention", "aten::lstm", "aten::gru", "aten::_cudnn_rnn"};

// autocast's FP32 list (the same source), the entries that appear in training steps.
inline constexpr std::array<std::string_view, 33> autocast_fp32{
    "aten::acos", "aten::asin", "aten::cosh", "aten::erfinv", "aten::exp", "aten::expm1", "aten::log", "aten::log10",
    "aten::log2", "aten::log1p", "aten::reciprocal", "aten::rsqrt", "aten::sinh", "aten::tan", "aten::pow", "aten::softplus",
    "aten::layer_norm", "aten::group_norm", "aten::norm", "aten::nll_loss", "aten::mse_loss", "aten::l1_loss",
    "aten::smooth_l1_loss", "aten::binary_cross_entropy_with_logits", "aten::cross_entropy_loss", "aten::kl_div",
    "aten::sum", "aten::prod", "aten::cumsum", "aten::softmax", "aten::log_softmax", "aten::logsumexp", "aten::cdist"};

// The shortest cast kernel (a small parameter's): the ToCopyBackward0 kernels of the autocast traces.
inline constexpr double cast_kernel_min_us = 2;

// The part of a kernel's time a change of precision leaves: smaller than a change of size leaves
// (kernel_resize.hpp), since the launch and the grid stay. On the 9 autocast pairs of fixtures/whatif, 1.5 us
// gave a mean GPU-time error of 8.8% (H100) and 11.2% (H200), 5 us 12.9% and 14.8%.
inline constexpr double autocast_fixed_us = 1.5;

enum class Autocast { lower, fp32, promote };

[[nodiscard]] inline bool in_list(std::string_view name, auto const& list) {
  return std::find(list.begin(), list.end(), name) != list.end();
}

// The forward operation of a backward one (its autocast class and parameters are the forward's); itself else.
[[nodiscard]] inline const Operation& forward_of(const Trace& t, int op) {
  const Operation& o = t.ops[static_cast<std::size_t>(op)];
  return o.backward && o.forward >= 0 ? t.ops[static_cast<std::size_t>(o.forward)] : o;
}

// The class of a framework operation, found at the outermost operation autocast sees (the one a user's
// code called); backward operations take their forward's.
[[nodiscard]] inline Autocast autocast_class(const Trace& t, int op) {
  op = top_level_op(t, op);
  if (op < 0) return Autocast::promote;
  // The forward op a backward op maps to may itself sit inside a wrapper; look at it and its children's
  // names through the label: the first listed name in the subtree wins.
  const int root = static_cast<int>(&forward_of(t, op) - t.ops.data());
  for (std::size_t i = static_cast<std::size_t>(root); i < t.ops.size(); ++i) {
    if (i != static_cast<std::size_t>(root) && top_level_op(t, static_cast<int>(i)) != top_level_op(t, root)) break;
    if (in_list(t.ops[i].name, autocast_lower)) return Autocast::lower;
    if (in_list(t.ops[i].name, autocast_fp32)) return Autocast::fp32;
  }
  return Autocast::promote;
}

// Kernels that do not follow the rule above, measured on the FP32/autocast pairs of fixtures/whatif (H100 and
// H200, torch 2.11, cuDNN 9.19; medians over ResNet-50, MobileNetV2 and DCGAN):
//  - batch normalization under BF16 leaves cuDNN for ATen's native kernels: forward 1.55-2.3x, backward
//    1.03-1.23x the FP32 time; under FP16 cuDNN keeps it, at 0.83x forward and 0.68x backward;
//  - grouped (depthwise) convolutions run on CUDA cores at either precision, bound by their per-element work: their
//    kernels took 0.993x (H100) and 0.998x (H200) the FP32 time under BF16 in MobileNetV2 (summed over the grouped
//    convolutions' kernels alone; 0.93 before, from the whole step's convolution kernels);
//  - max pooling with indices (one output per thread, its int64 index written beside it) takes the FP32
//    time forward and 0.93-0.97x backward at either precision (ResNet-50; VGG-16's five pools, left out of
//    the median, agree: 0.97-1.00x and 0.94-0.97x).
struct MeasuredFactor {
  double bf16_forward, bf16_backward, fp16_forward, fp16_backward;
};
inline constexpr MeasuredFactor batch_norm_factor{1.65, 1.1, 0.83, 0.68};
inline constexpr MeasuredFactor grouped_conv_factor{1.0, 1.0, 1.0, 1.0};
inline constexpr MeasuredFactor max_pool_factor{1.0, 0.95, 1.0, 0.95};

// cuDNN 9 has a dedicated depthwise weight-gradient kernel (wgrad2d_c1_k1) at BF16 and FP16 only: in FP32 it runs a
// 7x7 depthwise weight gradient in channels-last with a generic grouped algorithm, 10-35x slower. Under autocast
// the dedicated kernel and its reduction took 0.37-0.43x the FP32 forward convolution's kernels of the same layer
// (7x7, 96-384 channels, channels-last, H200; fixtures/clocks/depthwise_precision_h200.json,
// fixtures/record/depthwise_precision.py). Held out: ConvNeXt-Tiny's 16.5 ms of such kernels.
inline constexpr double depthwise_wgrad_of_forward = 0.4;
[[nodiscard]] inline bool generic_grouped_wgrad(std::string_view kernel) {
  return kernel.find("wgrad2d_grouped_direct") != std::string_view::npos || kernel.find("wgrad_implicit_gemm_indexed") != std::string_view::npos;
}

[[nodiscard]] inline double factor(const MeasuredFactor& f, Precision p, bool backward) {
  return p == Precision::fp16 ? (backward ? f.fp16_backward : f.fp16_forward) : (backward ? f.bf16_backward : f.bf16_forward);
}

struct PrecisionOptions {
  Precision to = Precision::bf16;
  // Un-profiled host time autocast adds, measured on an H200's host (fixtures/record/autocast_host.py,
  // fixtures/clocks/autocast_host_h200.json: stacks of 8 and 32 tiny host-bound linear, convolution and
  // convolution + batch norm layers with and without biases, FP32 against BF16, 7 alternating repeats; least
  // squares of the added time on steps, layers and casts, both passes halved): per cast in each pass (its to,
  // _to_copy, empty_strided and copy_, and going back ToCopyBackward0 with the same), per lower-precision operation
  // in each pass (the autocast wrapper's checks of its arguments and the cache), and once per step (entering and
  // leaving the autocast region, and the script's own input and loss casts: a model's activation casts are also
  // charged below, about 30 us counted twice). Batch norm adds no more under BF16 (8 us per layer, both passes,
  // with a term of its own: within the noise). The split is loosely determined (standard errors about 127, 10 and
  // 6 us; the fastest repeats give 182, 26.8 and 9.9), their sum per layer less so. Not fitted to the what-if
  // pairs: their iteration errors went from 21.0% / 14.7% (H100 / H200 pairs of fixtures/whatif) and 8.9%
  // (fixtures/whatif_heldout) with 20 us per cast alone to 16.7% / 10.8% and 6.4%. The cast's share is charged per
  // parameter cast and per activation cast, and 4 times for GradScaler's own host ops (FP16).
  double cast_host_us = 14.9, op_host_us = 23.6, step_host_us = 157;
};

namespace detail {
// Operations that belong to the optimizer or to gradient accumulation: FP32 parameters and states.
[[nodiscard]] inline bool parameter_side(const Trace& t, int op) {
  for (int o = op; o >= 0; o = t.ops[static_cast<std::size_t>(o)].parent) {
    const std::string& n = t.ops[static_cast<std::size_t>(o)].name;
    if (n.starts_with("Optimizer.") || n.find("AccumulateGrad") != std::string::npos || n.starts_with("aten::_foreach") ||
        n.find("zero_grad") != std::string::npos)
      return true;
  }
  return false;
}
// The measured exception a kernel's operation falls under, if any.
[[nodiscard]] inline const MeasuredFactor* exception(const Trace& t, int op) {
  for (int o = op; o >= 0; o = t.ops[static_cast<std::size_t>(o)].parent) {
    const Operation& x = t.ops[static_cast<std::size_t>(o)];
    if (x.name.find("batch_norm") != std::string::npos || x.name.find("BatchNorm") != std::string::npos) return &batch_norm_factor;
    if (x.name.find("max_pool") != std::string::npos || x.name.find("MaxPool") != std::string::npos) return &max_pool_factor;
    if (const auto* sig = ops::aten::find_signature(x.name)) {
      const auto ca = x.name.find("conv") != std::string::npos && sig->find("weight") ? std::optional(ops::aten::conv_args(*sig)) : std::nullopt;
      if (ca && ca->groups && cost::at_or(cost::ints(x, *ca->groups), 0, 1) != 1) return &grouped_conv_factor;
    }
  }
  return nullptr;
}
}  // namespace detail

// The TF32 what-if: the FP32 step with torch.backends.cuda.matmul.allow_tf32 and torch.backends.cudnn.allow_tf32
// both on. FP32 matmuls, convolutions and RNNs that ran on FP32 lanes move to TF32 tensor cores (where the GPU
// has them); storage stays FP32, so nothing is cast. The kernels are marked so that a prediction for another
// GPU sees their new datapath.
[[nodiscard]] inline Transformed tf32(const Trace& t, const Device& origin) {
  Transformed out = Transformed::unchanged(t);
  if (!origin.on_tensor_cores(Precision::tf32)) {
    out.notes.push_back(origin.name + " has no TF32 tensor cores: the step is unchanged");
    return out;
  }
  // Only what the step's own settings kept off moves: where the trace records cuDNN already allowed TF32 and it
  // picked an FP32 kernel anyway, it would pick it again (a trace without convolutions records no setting).
  const Tf32Settings before = tf32_settings(t);
  Tf32Settings added;
  added.cudnn = !(before.cudnn && before.cudnn_recorded);
  added.matmul = !before.matmul;
  const auto work = kernel_work(t, added);
  double moved_us = 0;
  for (std::size_t i = 0; i < t.kernels.size(); ++i) {
    const KernelWork& w = work[i];
    if (w.precision != Precision::fp32 || !w.tf32_allowed || t.kernels[i].kind != GpuWorkKind::kernel) continue;
    Kernel& nk = out.trace.kernels[i];
    nk.duration_us = RooflineScaling{}.predict_on(t.kernels[i], w, origin, origin, Precision::tf32).duration_us;
    nk.name += " [tf32]";
    moved_us += t.kernels[i].duration_us;
    ++out.kernels_changed;
  }
  char ms[32];
  std::snprintf(ms, sizeof ms, "%.2f ms", moved_us / 1e3);
  out.notes.push_back(std::to_string(out.kernels_changed) + " FP32 matmul, convolution and RNN kernels (" + ms + " of GPU time) moved to TF32 tensor cores");
  return out;
}

[[nodiscard]] inline Transformed autocast(const Trace& t, const Device& origin, const PrecisionOptions& opt) {
  if (opt.to == Precision::tf32) return tf32(t, origin);
  Transformed out = Transformed::unchanged(t);
  const Tf32Settings tf32 = tf32_settings(t);
  const auto work = kernel_work(t, tf32);
  const auto params = parameter_shapes(t);
  const char* elem = opt.to == Precision::fp16 ? "c10::Half" : "c10::BFloat16";
  const double elem_bytes = ops::dtype_bytes(elem), fp32_bytes = ops::dtype_bytes("float");
  // A pass over `bytes` at the origin's sustained bandwidth, no shorter than the shortest cast.
  auto pass_us = [&](double bytes) { return std::max(cast_kernel_min_us, roofline_sustained(0, bytes, Precision::fp32, origin).memory_us); };
  std::vector<int> classes(t.ops.size(), -1);
  auto cls = [&](int op) {
    if (op < 0) return Autocast::promote;
    auto& c = classes[static_cast<std::size_t>(op)];
    if (c < 0) c = static_cast<int>(autocast_class(t, op));
    return static_cast<Autocast>(c);
  };
  // Casts: per lower-precision forward op, its parameters (weights, biases) once forward and once backward.
  std::vector<char> first_kernel_of_op(t.ops.size(), 1);
  int casts = 0;
  double cast_bytes = 0;
  // Activation casts: an FP32-list operation right after a lower-precision one gets that one's output in the lower
  // precision, and autocast casts it to FP32 (the logits before the loss: 336 of the 907 us of casts in the GPT
  // decoder's BF16 step, fixtures/whatif/h100), and its gradient back in the backward pass. Per forward operation:
  // the bytes of that cast (negated once the backward's cast is added too).
  std::vector<double> activation_cast(t.ops.size(), 0);
  // Each forward operation's math kernels at the origin (the forward convolution a depthwise weight gradient follows).
  std::vector<double> forward_math_us(t.ops.size(), 0);
  for (const auto& k : t.kernels)
    if (const int top = k.op >= 0 ? top_level_op(t, k.op) : -1; top >= 0 && !t.ops[static_cast<std::size_t>(top)].backward && habitat::detail::is_math_kernel(k.name))
      forward_math_us[static_cast<std::size_t>(top)] += k.duration_us;
  int forward_now = -1, forward_before = -1, activation_casts = 0;
  double activation_bytes = 0;
  for (std::size_t i = 0; i < t.kernels.size(); ++i) {
    const Kernel& k = t.kernels[i];
    Kernel& nk = out.trace.kernels[i];
    if (k.collective || k.op < 0 || detail::parameter_side(t, k.op)) continue;
    const Autocast c = cls(k.op);
    if (const int top = top_level_op(t, k.op); top >= 0 && !t.ops[static_cast<std::size_t>(top)].backward) {
      if (top != forward_now) forward_before = forward_now, forward_now = top;
      const auto& in = t.ops[static_cast<std::size_t>(top)].inputs;
      if (c == Autocast::fp32 && forward_before >= 0 && cls(forward_before) == Autocast::lower && activation_cast[static_cast<std::size_t>(top)] == 0 &&
          !in.empty() && in.front().dtype == "float" && !params.count(in.front().shape)) {
        const double bytes = numel(in.front().shape) * (fp32_bytes + elem_bytes);
        activation_cast[static_cast<std::size_t>(top)] = bytes;
        nk.duration_us += pass_us(bytes);
        out.extra_host_us[i] += opt.cast_host_us;
        ++activation_casts;
        activation_bytes += bytes;
      }
    } else if (top >= 0) {  // the gradient's cast back, before the first backward kernel of that operation
      const int f = top_level_op(t, static_cast<int>(&forward_of(t, top) - t.ops.data()));
      if (double& bytes = activation_cast[static_cast<std::size_t>(std::max(f, 0))]; f >= 0 && bytes > 0) {
        nk.duration_us += pass_us(bytes);
        out.extra_host_us[i] += opt.cast_host_us;
        activation_bytes += bytes;
        bytes = -bytes;
      }
    }
    if (c == Autocast::fp32) continue;
    const bool math = habitat::detail::is_math_kernel(k.name);
    double ratio = 0.5;  // lower-precision data: half the bytes
    bool decomposed = false;  // the ratio already keeps the kernel's latency share
    const int top = top_level_op(t, k.op);
    const bool backward = top >= 0 && t.ops[static_cast<std::size_t>(top)].backward;
    if (habitat::detail::is_layout_transform(k.name)) {
      // cuDNN's NCHW <-> NHWC transpositions keep their FP32 time: strided on one side, they move a memory
      // sector per element whatever its size (fixtures/whatif, ResNet-50 and VGG-16: 0.77-0.98x the FP32 time
      // under BF16 and FP16, where half the bytes gave 0.5x; -10.2% -> -3.9% for ResNet-50 FP16 on the H200).
      ratio = 1;
    } else if (const MeasuredFactor* f = detail::exception(t, k.op)) {
      ratio = factor(*f, opt.to, backward);
      if (f == &grouped_conv_factor && backward && k.duration_us > 0 && generic_grouped_wgrad(k.name))
        if (const int f_top = top_level_op(t, static_cast<int>(&forward_of(t, top) - t.ops.data()));
            f_top >= 0 && forward_math_us[static_cast<std::size_t>(f_top)] > 0)
          ratio = std::min(ratio, depthwise_wgrad_of_forward * forward_math_us[static_cast<std::size_t>(f_top)] / k.duration_us);
    } else if (math && c == Autocast::lower) {
      // The same decomposition as a change of GPU (roofline_scaling.hpp): the share of the kernel its math
      // explains moves to the new datapath, the share its DRAM traffic explains to half the bytes, the rest stays.
      // cuDNN, allowed TF32 on a GPU that has it, still picked a kernel on FP32 lanes for a convolution with fewer
      // channels than tensor cores take at once (DCGAN's first and last layers): they do not pay for it, so the lower
      // precision only halves its bytes. Other SIMT picks (DCGAN's 100-channel 1x1 transposed convolution: 204 us
      // FP32, 15 us BF16; its legacy weight-gradient engines) move to tensor cores under BF16 like any convolution.
      const bool simt_by_choice = work[i].family == MathFamily::convolution && work[i].precision == Precision::fp32 && tf32.cudnn &&
                                  tf32.cudnn_recorded && origin.on_tensor_cores(Precision::tf32) &&
                                  !work[i].tf32_allowed;  // cuDNN allowed TF32, so only few channels keep it off
      // What does not shrink: a kernel already on tensor cores (cuDNN's TF32 convolutions and RNN GEMMs) becomes
      // the same kind of kernel with operands of half the size, so only its launch and ramp stay
      // (autocast_fixed_us; LSTM on the H100: 10.2 us TF32 recurrent GEMMs run in 4.2 us under BF16); one that
      // leaves FP32 lanes for tensor cores keeps the fixed part a change of GPU keeps (fixed_kernel_us): a
      // tensor-core kernel reaches a smaller share of its 8-16x higher peak on the same tiles (1.5 us there put
      // the FP32 -> TF32 pairs of fixtures/tf32 at 8.0% instead of 6.2%).
      const double fixed = origin.on_tensor_cores(work[i].precision) ? autocast_fixed_us : fixed_kernel_us;
      const double now =
          RooflineScaling{}.predict_on(k, work[i], origin, origin, simt_by_choice ? Precision::fp32 : opt.to, elem_bytes / fp32_bytes, fixed)
              .duration_us;
      ratio = k.duration_us > 0 && now > 0 ? now / k.duration_us : 0.5;
      decomposed = true;
    } else if (math) {
      continue;  // a math kernel outside autocast's list keeps its precision
    }
    nk.duration_us = decomposed ? k.duration_us * ratio : rescaled_us(k.duration_us, ratio, autocast_fixed_us);
    if (k.kind != GpuWorkKind::kernel) nk.bytes = k.bytes * ratio;
    ++out.kernels_changed;
    // The casts of this op's parameters, before its first kernel, and autocast's own dispatch of the op.
    if (c == Autocast::lower && top >= 0 && first_kernel_of_op[static_cast<std::size_t>(top)]) {
      first_kernel_of_op[static_cast<std::size_t>(top)] = 0;
      out.extra_host_us[i] += opt.op_host_us;
      for (const auto& a : forward_of(t, top).inputs)
        if (params.count(a.shape)) {
          const double bytes = numel(a.shape) * (fp32_bytes + elem_bytes);
          nk.duration_us += pass_us(bytes);
          out.extra_host_us[i] += opt.cast_host_us;
          ++casts;
          cast_bytes += bytes;
        }
    }
    for (auto& a : out.trace.ops[static_cast<std::size_t>(k.op)].inputs)
      if (a.dtype == "float" && !params.count(a.shape)) a.dtype = elem;
  }
  // Entering and leaving the autocast region, once per step: before the step's first kernel.
  for (std::size_t i = 0; i < t.kernels.size(); ++i)
    if (t.kernels[i].op >= 0) {
      out.extra_host_us[i] += opt.step_host_us;
      break;
    }
  char host[160];
  std::snprintf(host, sizeof host, "; host time: %.0f us per cast, %.0f us per lower-precision operation, %.0f us per step, measured on an H200's host",
                opt.cast_host_us, opt.op_host_us, opt.step_host_us);
  out.notes.push_back(std::to_string(casts) + " parameter casts added (" + report_mb(cast_bytes) + host + ")");
  if (activation_casts > 0)
    out.notes.push_back(std::to_string(activation_casts) + " activation" + (activation_casts == 1 ? "" : "s") +
                        " cast to FP32 before FP32-list operations, and back in the backward pass (" + report_mb(activation_bytes) + ")");
  // FP16: GradScaler unscales and checks every gradient once per step (one multi-tensor pass over FP32
  // gradients, reading them and writing them), before the optimizer.
  if (opt.to == Precision::fp16) {
    const double grad_bytes = parameter_bytes(t);
    for (std::size_t i = 0; i < t.kernels.size(); ++i)
      if (t.kernels[i].op >= 0 && detail::parameter_side(t, t.kernels[i].op) && t.kernels[i].name.find("multi_tensor_apply") != std::string::npos) {
        out.trace.kernels[i].duration_us += 2 * cast_kernel_min_us + roofline_sustained(0, 2 * grad_bytes, Precision::fp32, origin).memory_us;
        out.extra_host_us[i] += 4 * opt.cast_host_us;  // scale, unscale_, update: a few small host ops
        out.notes.push_back("GradScaler's unscale and inf check over " + report_mb(grad_bytes) + " of gradients");
        break;
      }
  }
  return out;
}

}  // namespace habitat::whatif
