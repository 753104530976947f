#pragma once
// The datapath a kernel's math runs on, on a given GPU, as the framework would choose it. A kernel traced on
// a GPU with TF32 tensor cores shows in its name whether it ran on them; one traced on a GPU without them
// shows only its storage precision, and on a destination with TF32 the framework's settings decide:
//  - cuDNN (convolutions, RNNs) may use TF32: torch.backends.cudnn.allow_tf32, True by default since
//    PyTorch 1.7. Recorded with every aten::_convolution / cudnn_convolution (its allow_tf32 argument).
//  - cuBLAS (matmuls) may not: torch.backends.cuda.matmul.allow_tf32, False by default since PyTorch 1.12.
//    Not recorded (a trace from a GPU with TF32 shows it in its kernels, and there the kernels decide); the
//    TF32 what-if turns it on.
//  - Grouped (depthwise) convolutions and attention stay on FP32 lanes in FP32.
// Measured on the H100 (fixtures/tf32): the same FP32 steps with both settings off, the defaults and both on.
#include <array>
#include <optional>
#include <string>
#include <string_view>

#include "habitat/device/device.hpp"
#include "habitat/predict/op_cost.hpp"
#include "habitat/trace/trace.hpp"

namespace habitat {

struct Tf32Settings {
  bool cudnn = true;    // torch.backends.cudnn.allow_tf32 (PyTorch's default)
  bool matmul = false;  // torch.backends.cuda.matmul.allow_tf32 (PyTorch's default)
  bool cudnn_recorded = false;  // read from the trace rather than assumed

  [[nodiscard]] bool allows(MathFamily f) const {
    switch (f) {
      case MathFamily::convolution:
      case MathFamily::rnn: return cudnn;
      case MathFamily::matmul: return matmul;
      default: return false;
    }
  }
};

// Tensor-core kernels built for an older architecture (cutlass_80_tensorop_*, sm80_xmma_*: Ampere's warp-level
// mma.sync) run on Hopper at mma.sync's rate, not at the wgmma rate the datapath's peak is quoted for: a loop
// of independent mma.sync reached 0.60 of the H100's BF16 and TF32 peaks at 1980 MHz, where cuBLAS's own
// 8192^3 GEMMs reached 0.73 and 0.76 (fixtures/clocks/legacy_mma_h100.json, fixtures/record/legacy_mma.py).
// Measured on Hopper only; Blackwell, which also runs such kernels, keeps 1 (unmeasured).
inline constexpr double hopper_mma_sync_share = 0.60;
[[nodiscard]] inline bool legacy_tensor_kernel(std::string_view name) {
  for (const std::string_view mark : {"cutlass_80_tensorop", "cutlass_75_tensorop", "cutlass_70_tensorop", "sm80_xmma", "sm86_xmma", "sm75_xmma",
                                      "sm70_xmma", "ampere_", "turing_", "volta_"})
    if (name.find(mark) != std::string_view::npos) return true;
  return false;
}
// cuBLAS's own TF32 GEMMs on Hopper in the layout "nt" (both operands stored along M and N, neither along the
// reduction) run at 0.63 of the other three layouts' rate (median of 5 shapes, 0.59-0.70, all at 1980 MHz;
// fixtures/clocks/gemm_layouts_h200.json, fixtures/record/gemm_layouts.py): wgmma transposes 16-bit operands as it
// reads them, not 32-bit ones. BF16: the four layouts within 10% of each other. Unmeasured on other architectures.
inline constexpr double hopper_tf32_nt_share = 0.63;
[[nodiscard]] inline double layout_share(std::string_view kernel, const Device& g, Precision p) {
  return g.hopper() && p == Precision::tf32 && !legacy_tensor_kernel(kernel) && kernel.find("_nt_") != std::string_view::npos
             ? hopper_tf32_nt_share
             : 1.0;
}
// The share of g's tensor-core peak at precision p that a kernel of this name can reach by its instructions.
[[nodiscard]] inline double instruction_share(std::string_view kernel, const Device& g, Precision p) {
  return (g.hopper() && g.on_tensor_cores(p) && legacy_tensor_kernel(kernel) ? hopper_mma_sync_share : 1.0) * layout_share(kernel, g, p);
}

// The settings a trace was recorded with, where it shows them; PyTorch's defaults elsewhere.
[[nodiscard]] inline Tf32Settings tf32_settings(const Trace& t) {
  Tf32Settings s;
  for (const Operation& op : t.ops) {
    if (op.name != "aten::_convolution" && op.name != "aten::cudnn_convolution" && op.name != "aten::cudnn_convolution_transpose") continue;
    const auto at = ops::aten::signature(op.name).find("allow_tf32");
    if (!at || *at >= op.inputs.size() || op.inputs[*at].value.empty()) continue;
    s.cudnn = cost::flag(op, *at);
    s.cudnn_recorded = true;
    break;
  }
  return s;
}

// The datapath on GPU g of math that ran on `recorded` when traced on `traced_on`. The precision the kernel
// showed stands wherever the recording GPU could have shown TF32 (a SIMT kernel cuDNN picked there stays one);
// only FP32 math recorded on a GPU without TF32 moves to TF32, where the settings allowed it (tf32_allowed).
[[nodiscard]] inline Precision datapath(Precision recorded, bool tf32_allowed, const Device& traced_on, const Device& g) {
  if (recorded != Precision::fp32 || traced_on.on_tensor_cores(Precision::tf32)) return recorded;
  return tf32_allowed && g.on_tensor_cores(Precision::tf32) ? Precision::tf32 : Precision::fp32;
}

// What a destination's datapaths assume, said once per prediction: the origin GPU time of cuDNN's and of
// cuBLAS's FP32 math that moves to TF32 there.
// Said without the GPU's name, so that one line can name every GPU it holds for.
[[nodiscard]] inline std::string datapath_note(double cudnn_us, double matmul_us, double total_us, const Tf32Settings& s) {
  if (!(cudnn_us + matmul_us > 0) || !(total_us > 0)) return {};
  const int pct = static_cast<int>(100 * (cudnn_us + matmul_us) / total_us + 0.5);
  const std::string who = cudnn_us > 0 && matmul_us > 0 ? "convolutions, RNNs and matmuls" : cudnn_us > 0 ? "convolutions and RNNs" : "matmuls";
  std::string why;
  if (cudnn_us > 0) why = std::string("torch.backends.cudnn.allow_tf32 ") + (s.cudnn_recorded ? "as the trace records it" : "at PyTorch's default, True");
  if (matmul_us > 0) why += std::string(why.empty() ? "" : "; ") + "torch.backends.cuda.matmul.allow_tf32 True";
  return "FP32 " + who + " (" + std::to_string(pct) + "% of the origin's GPU time) run on TF32 tensor cores (" + why + ")";
}

// Lower-precision math that ran on tensor cores where it was traced and has none for its precision on the
// destination: it runs on the FP32 lanes there (cuBLAS and cuDNN take BF16 and TF32 on pre-Ampere GPUs without
// tensor cores, FP16 on pre-Volta ones), said once per prediction with the share of the origin's GPU time.
[[nodiscard]] inline std::string fallback_note(const std::array<double, 4>& us_by_precision, double total_us, const Device& dest) {  // dest: for the hint
  std::string out;
  for (const Precision p : {Precision::bf16, Precision::fp16, Precision::tf32}) {
    const double us = us_by_precision[static_cast<std::size_t>(p)];
    if (!(us > 0) || !(total_us > 0)) continue;
    const int pct = static_cast<int>(100 * us / total_us + 0.5);
    std::string hint;
    if (p == Precision::bf16 && dest.cc_major >= 7 && dest.on_tensor_cores(Precision::fp16)) hint = " (FP16 autocast would use the FP16 tensor cores)";
    out += std::string(out.empty() ? "" : "; ") + (p == Precision::tf32 ? "TF32" : p == Precision::bf16 ? "BF16" : "FP16") +
           " math (" + std::to_string(pct) + "% of the origin's GPU time) runs on FP32 lanes, for want of " +
           to_string(p) + " tensor cores" + hint;
  }
  return out;
}

}  // namespace habitat
