#pragma once
// Tensor parallelism in the Megatron style over N GPUs, from the program of a one-GPU step: in every repeated
// block (found as FSDP's units are, comm/fsdp_plan.hpp) the linear layers alternate column-parallel (output
// features split: q/k/v, the MLP's first) and row-parallel (input features split: the attention's output
// projection, the MLP's second), as torch.distributed.tensor.parallel's ColwiseParallel / RowwiseParallel
// do. So per block and step:
//  - the block's kernels between its first and last linear do 1/N of the work (GEMMs, attention by heads,
//    the activation between the two MLP linears), except LayerNorm and the residual adds (replicated);
//  - each row-parallel linear's output is all-reduced in forward, each column-parallel linear's input
//    gradient in backward (the compute stream waits for each);
//  - the optimizer updates 1/N of the split weights;
//  - the host dispatches every split linear through DTensor, forward and backward: a cost per split linear.
// One batch per tensor-parallel group: samples per step are the one-GPU step's.
#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include "habitat/comm/allreduce.hpp"
#include "habitat/comm/fsdp_plan.hpp"
#include "habitat/ops/dtype.hpp"
#include "habitat/sim/ddp.hpp"
#include "habitat/sim/program_edit.hpp"

namespace habitat::sim {

// DTensor's host cost per split linear per step (forward and backward together), on the host of
// `measured_on`: fitted to the un-profiled tensor-parallel steps of the two GPT fixtures on 2 H200s
// (fixtures/parallel/h200x2, torch 2.11, the median of 7 runs on 3 machines; report::tp_study re-derives it
// and predicts each left out).
struct TpHostCosts {
  double per_linear_us = 2113;
  const char* measured_on = "h200-testbed";
};
inline constexpr TpHostCosts torch_tp_costs{};

// Who dispatches the split linears. torch's tensor parallel (ColwiseParallel / RowwiseParallel) runs each
// through DTensor, whose host cost is measured (above); Megatron-LM's ColumnParallelLinear / RowParallelLinear
// call plain tensors and NCCL, costing the host about what the one-GPU linear did, so nothing is added.
enum class TpLayers { dtensor, megatron };

struct TpOptions : PlanGpus {
  std::optional<double> per_linear_us;  // replaces the fitted host cost (the study's fit)
  TpLayers layers = TpLayers::dtensor;
};

[[nodiscard]] inline comm::Topology tp_topology(const Device& dest, const TpOptions& opt) { return plan_topology(dest, opt); }

struct SplitLinear {
  int op = -1;           // the forward linear (top level)
  int backward_op = -1;  // its backward op with the GEMMs (top level), -1 if none
  bool row = false;      // row-parallel: output all-reduced in forward; else its input gradient in backward
  double output_bytes = 0, input_bytes = 0;
};

struct TpPlan {
  int blocks = 0;
  std::vector<SplitLinear> linears;
  std::vector<char> split;  // per kernel of the trace: does 1/N of its work
  double split_parameter_share = 0;  // of the parameters' bytes, the split weights'
};

namespace detail {

[[nodiscard]] inline bool is_linear_op(const std::string& n) {
  return n == "aten::linear" || n == "aten::addmm" || n == "aten::mm" || n == "aten::matmul";
}
[[nodiscard]] inline bool replicated_op(const std::string& n) {
  return n.find("layer_norm") != std::string::npos || n.find("LayerNorm") != std::string::npos || n == "aten::add" || n == "aten::add_" ||
         n.ends_with("AddBackward0");
}
// The forward op a kernel's work belongs to: its top-level op, or for backward work the forward op its
// autograd node links to.
[[nodiscard]] inline int forward_top(const Trace& t, int op) {
  for (int o = op; o >= 0; o = t.ops[o].parent)
    if (t.ops[o].forward >= 0) return top_level_op(t, t.ops[o].forward);
  return top_level_op(t, op);
}

}  // namespace detail

[[nodiscard]] inline TpPlan tp_plan(const Trace& t) {
  const comm::FsdpPlan blocks = comm::fsdp_plan(t);  // throws without repeated blocks
  TpPlan plan;
  plan.split.assign(t.kernels.size(), 0);
  std::vector<int> top_ops;  // forward top-level ops by start
  for (int i = 0; i < static_cast<int>(t.ops.size()); ++i)
    if (t.ops[i].parent < 0 && !t.ops[i].backward) top_ops.push_back(i);
  std::stable_sort(top_ops.begin(), top_ops.end(), [&](int a, int b) { return t.ops[a].start_us < t.ops[b].start_us; });
  double split_bytes = 0;
  std::vector<std::pair<double, double>> ranges;  // per block: first and last forward op start
  for (const auto& u : blocks.units) {
    std::vector<int> linears;
    for (const int g : u.gradients) {
      if (blocks.gradients[g].shape.size() < 2 || blocks.forward_op[g] < 0) continue;
      // The linear that uses the weight: its forward op, or the first linear after its cast (autocast).
      const double from = t.ops[blocks.forward_op[g]].start_us;
      auto it = std::lower_bound(top_ops.begin(), top_ops.end(), from, [&](int o, double s) { return t.ops[o].start_us < s; });
      for (; it != top_ops.end() && !detail::is_linear_op(t.ops[*it].name); ++it) {}
      if (it == top_ops.end() || std::find(linears.begin(), linears.end(), *it) != linears.end()) continue;
      linears.push_back(*it);
      split_bytes += blocks.gradients[g].bytes;
    }
    if (linears.size() < 2) continue;  // a block without a column/row pair is not split
    std::sort(linears.begin(), linears.end(), [&](int a, int b) { return t.ops[a].start_us < t.ops[b].start_us; });
    for (int i = 0; i < static_cast<int>(linears.size()); ++i) {
      SplitLinear l;
      l.op = linears[i];
      l.row = i % 2 == 1;
      const Operation& op = t.ops[l.op];
      if (!op.inputs.empty() && !op.inputs[0].shape.empty() && op.inputs.size() >= 2 && op.inputs[1].shape.size() == 2) {
        const double in = static_cast<double>(op.inputs[0].shape.back()), elem = ops::dtype_bytes(op.inputs[0].dtype.empty() ? "float" : op.inputs[0].dtype);
        const double rows = comm::elements(op.inputs[0].shape) / std::max(1.0, in);
        // aten::linear's weight is [out, in]; mm/addmm's second operand is [in, out].
        const auto& w = op.inputs[1].shape;
        const double out = static_cast<double>(op.name == "aten::linear" ? w[0] : w[1]);
        l.input_bytes = rows * in * elem;
        l.output_bytes = rows * out * elem;
      }
      plan.linears.push_back(l);
    }
    ranges.emplace_back(t.ops[linears.front()].start_us, t.ops[linears.back()].start_us);
    ++plan.blocks;
  }
  if (plan.blocks == 0)
    throw make_error(t.source, "--parallel", "tensor parallel needs repeated blocks with pairs of linear layers (Megatron's column/row split); none found");
  // The activations cross in the GEMM's dtype (autocast casts inside aten::linear: its input may be fp32
  // while the GEMM and the tensors tensor parallel all-reduces are bf16, as the rank traces show).
  std::map<int, double> gemm_elem;  // linear op -> element size of its GEMM's operands
  for (const auto& op : t.ops)
    if ((op.name == "aten::addmm" || op.name == "aten::mm" || op.name == "aten::bmm") && op.inputs.size() > (op.name == "aten::addmm" ? 1u : 0u) && !op.inputs[op.name == "aten::addmm"].dtype.empty())
      if (const int top = top_level_op(t, op.parent); top >= 0) gemm_elem.emplace(top, ops::dtype_bytes(op.inputs[op.name == "aten::addmm"].dtype));
  for (auto& l : plan.linears)
    if (auto it = gemm_elem.find(l.op); it != gemm_elem.end() && t.ops[l.op].name == "aten::linear" && !t.ops[l.op].inputs.empty()) {
      const double was = ops::dtype_bytes(t.ops[l.op].inputs[0].dtype.empty() ? "float" : t.ops[l.op].inputs[0].dtype);
      l.input_bytes *= it->second / was;
      l.output_bytes *= it->second / was;
    }
  // Each split linear's backward op: the latest-ending backward op with GPU work that links to it.
  for (int k = 0; k < static_cast<int>(t.kernels.size()); ++k) {
    const int op = t.kernels[k].op;
    if (op < 0) continue;
    const int top = top_level_op(t, op), fwd = detail::forward_top(t, op);
    const std::string& name = t.ops[top].name;
    const double at = t.ops[fwd].start_us;
    for (const auto& [lo, hi] : ranges)
      if (at >= lo && at <= hi && !detail::replicated_op(name) && !detail::replicated_op(t.ops[fwd].name)) plan.split[k] = 1;
    if (t.ops[top].backward)
      for (auto& l : plan.linears)
        if (fwd == l.op && (l.backward_op < 0 || t.ops[top].start_us > t.ops[l.backward_op].start_us)) l.backward_op = top;
  }
  plan.split_parameter_share = blocks.parameter_bytes() > 0 ? split_bytes / blocks.parameter_bytes() : 0;
  return plan;
}

struct TpStep {
  ProgramEdit edit;  // its kernel_scale: the split kernels and the split weights' optimizer work on 1/N
  TpPlan plan;
  [[nodiscard]] std::vector<double> durations(std::vector<double> one_gpu) const { return edit.durations(std::move(one_gpu)); }
};

[[nodiscard]] inline TpStep tp_step(const Trace& t, const StepProgram& p, const TpPlan& plan, const Device& /*dest: its links are in topo*/, const comm::Topology& topo,
                                    double host_scale, const TpOptions& opt, const TpHostCosts& cost = torch_tp_costs) {
  TpStep out{ProgramEdit(t, p), plan};
  if (topo.ranks <= 1) return out;
  ProgramEdit& e = out.edit;
  const double n = topo.ranks;
  for (std::size_t k = 0; k < t.kernels.size(); ++k)
    if (plan.split[k]) e.kernel_scale[k] = 1.0 / n;
  // The optimizer's kernels: the split weights' share of them is done on 1/N.
  if (!t.optimizer_steps.empty()) {
    const double start = t.optimizer_steps.back().start_us, end = start + t.optimizer_steps.back().duration_us;
    for (const int k : kernels_launched_in(t, start, end)) e.kernel_scale[k] = 1 - plan.split_parameter_share * (1 - 1 / n);
  }
  const std::int64_t compute = e.compute_stream, comm_stream = e.new_stream();
  const int op_ar = e.add_op("TP: all-reduce (NCCL)");
  const double fitted = opt.layers == TpLayers::megatron ? 0.0 : cost.per_linear_us;
  const double per_linear = (opt.per_linear_us ? *opt.per_linear_us : fitted) * host_scale;
  std::vector<int> last_kernel(t.ops.size(), -1);  // per top-level op: its last kernel
  for (int k = 0; k < static_cast<int>(t.kernels.size()); ++k)
    if (t.kernels[k].op >= 0) last_kernel[top_level_op(t, t.kernels[k].op)] = k;
  auto all_reduce = [&](int after_op, double bytes) {
    const Operation& op = t.ops[after_op];
    const int ar = e.add_kernel("ncclDevKernel_AllReduce (modelled)", comm_stream, op_ar, comm::allreduce(bytes, topo).us, true,
                                Collective{"allreduce", bytes, topo.ranks});
    if (last_kernel[after_op] >= 0) e.wait(ar, {last_kernel[after_op]});
    const int wait = e.add_kernel("TP: wait for the all-reduce", compute, op_ar, ddp_small_kernel_us, false);
    e.wait(wait, {ar});
    e.insert(e.position(op.start_us + op.duration_us), 0, {ar, wait});
  };
  for (const auto& l : plan.linears) {
    e.insert(e.position(t.ops[l.op].start_us), per_linear / 2, {});
    if (l.row) all_reduce(l.op, l.output_bytes);
    if (l.backward_op >= 0) {
      e.insert(e.position(t.ops[l.backward_op].start_us), per_linear / 2, {});
      if (!l.row) all_reduce(l.backward_op, l.input_bytes);
    }
  }
  e.merge();
  return out;
}

struct TpPrediction {
  Timeline single, step;
  TpPlan plan;
  comm::Topology topology;
  std::vector<std::string> assumptions;
};

[[nodiscard]] inline TpPrediction predict_tp(const Trace& t, const StepProgram& program, const std::vector<double>& kernel_us, const Device& dest,
                                             double host_scale, const TpOptions& opt, const SimOptions& sim = {}) {
  TpPrediction out;
  out.topology = tp_topology(dest, opt);
  out.plan = tp_plan(t);
  out.single = simulate(t, program, kernel_us, sim);
  const TpStep s = tp_step(t, program, out.plan, dest, out.topology, host_scale, opt);
  out.step = out.topology.ranks <= 1 ? out.single : simulate_shared(s.edit.trace, s.edit.program, s.durations(kernel_us), sim);
  out.assumptions = s.edit.program.assumptions;
  out.assumptions.push_back("tensor parallel (Megatron column/row split, no sequence parallelism): " + std::to_string(out.plan.blocks) +
                            " repeated blocks, " + std::to_string(out.plan.linears.size()) +
                            " split linears; " +
                            (opt.layers == TpLayers::megatron
                                 ? std::string("Megatron-LM's parallel linears: no host cost beyond the one-GPU step's (not measured)")
                                 : std::string("DTensor's host cost per linear as measured with torch 2.11 on the H200 test machine")));
  if (out.topology.nodes() > 1 || out.topology.ranks > 4)
    out.assumptions.push_back("extrapolated: tensor parallel was validated on 2 and 4 GPUs of one NVLink node only");
  return out;
}

inline std::vector<std::string> compose_tp(PredictedTrace& p, const Trace& t, const StepProgram& program, const Device& dest, double host_scale,
                                           const TpOptions& opt, std::optional<int> batch = {}) {
  const TpPrediction f = predict_tp(t, program, kernel_durations(p), dest, host_scale, opt);
  DataParallel& dp = set_plan_step(p, f.single, f.step, f.topology);
  dp.plan = "Tensor parallel (" + std::to_string(f.plan.blocks) + " blocks, " + std::to_string(f.plan.linears.size()) + " split linears)";
  dp.data_replicas = 1;  // one batch per group of N
  dp.counted = "split linears";
  dp.buckets = static_cast<int>(f.plan.linears.size());
  set_throughput(p, dest, batch);
  return f.assumptions;
}

}  // namespace habitat::sim
