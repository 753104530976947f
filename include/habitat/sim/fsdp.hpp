#pragma once
// Fully sharded data parallel (PyTorch FSDP2, `fully_shard`) on N GPUs, from the program of a one-GPU step.
// Each rank holds 1/N of every unit's parameters, gradients and optimizer state, and per step:
//  - before a unit's forward: copies its shard into a flat buffer, all-gathers the unit on a stream of its
//    own, and the compute stream copies the gathered parameters out (it waits for the all-gather); the host
//    runs ahead, so the next unit's all-gather overlaps this unit's compute;
//  - before a unit's backward, where parameters were freed after forward (full shard; not with
//    reshard_after_forward=False, "grad_op"): the same all-gather, issued one unit ahead (FSDP2's prefetch);
//  - when a unit's gradients are in: they are copied into a flat buffer and reduce-scattered on another
//    stream; at the end of the backward pass the compute stream waits for every reduce-scatter;
//  - the optimizer updates the shards: its kernels move 1/N of the bytes.
// FSDP2's hooks cost the host far more than the kernels they launch (fixtures/parallel: 1.6-5x the one-GPU
// step on 2 H200s, GPU mostly idle), so the host's cost per unit decides most steps.
#include <algorithm>
#include <cstdio>
#include <tuple>
#include <optional>
#include <string>
#include <vector>

#include "habitat/comm/allreduce.hpp"
#include "habitat/comm/fsdp_plan.hpp"
#include "habitat/sim/ddp.hpp"
#include "habitat/sim/program_edit.hpp"

namespace habitat::sim {

// FSDP2's host cost per unit (and for the root) per step, on the host of `measured_on`, by how the step
// shards: a cost per unit and one per parameter tensor in it, fitted to the un-profiled steps of
// fixtures/parallel (6 workloads, torch 2.11, 2 H200s, the median of 7 runs on 3 machines) by least squares
// over the host time each workload's measured step implies (report::fsdp_study; its test re-derives them and
// checks each workload left out). Where it lands in the step: the shares of FSDP's own records in the rank
// traces (pre_forward and post_forward; pre_backward; post_backward), medians over the workloads.
struct UnitCost {
  double per_unit_us = 0, per_tensor_us = 0;  // a unit's cost: per_unit + per_tensor x its parameter tensors
};
struct FsdpHostCosts {
  UnitCost full{3243, 65.6};    // reshard_after_forward=True, fp32 parameters
  UnitCost grad_op{2173, 72.5};  // reshard_after_forward=False
  UnitCost bf16{3986, 0};        // full shard, MixedPrecisionPolicy(param_dtype=bf16) (4 transformer workloads)
  double forward_share = 0.39, pre_backward_share = 0.32;  // full shard; the rest after the backward
  double grad_op_forward_share = 0.55, grad_op_pre_backward_share = 0.02;
  // The optimizer over sharded (DTensor) parameters: per parameter tensor, beyond the one-GPU step's
  // (Optimizer.step in the rank traces less in the one-GPU trace, per tensor, as recorded: median 30 us).
  double per_tensor_optimizer_us = 30;
  const char* measured_on = "h200-testbed";
};
inline constexpr FsdpHostCosts torch_fsdp_costs{};

struct FsdpOptions : PlanGpus {
  bool reshard_after_forward = true;   // full shard; false: "grad_op" (ZeRO-2-like)
  bool bf16_params = false;            // MixedPrecisionPolicy(param_dtype=bfloat16): half the gathered bytes
  comm::UnitChoice units;
  std::optional<UnitCost> unit_cost;   // replaces the fitted host cost per unit (the study's fit)
  [[nodiscard]] std::string label() const {
    return std::string("FSDP ") + (reshard_after_forward ? "full shard" : "shard-grad-op") + (bf16_params ? ", bf16 parameters" : "");
  }
};

[[nodiscard]] inline comm::Topology fsdp_topology(const Device& dest, const FsdpOptions& opt) { return plan_topology(dest, opt); }

[[nodiscard]] inline UnitCost fsdp_unit_cost(const FsdpOptions& opt, const FsdpHostCosts& c = torch_fsdp_costs) {
  if (opt.unit_cost) return *opt.unit_cost;
  return !opt.reshard_after_forward ? c.grad_op : opt.bf16_params ? c.bf16 : c.full;
}

// Memory per GPU for the model's state under the plan (activations are not in a trace and not counted).
struct FsdpMemory {
  double sharded_bytes = 0;    // parameters, gradients and optimizer state: 1/N each
  double unsharded_bytes = 0;  // gathered parameters alive at once, and one unit's full gradients
  int optimizer_states = 2;    // per parameter: Adam's two moments, SGD's momentum
  bool optimizer_known = false;
  [[nodiscard]] double total() const { return sharded_bytes + unsharded_bytes; }
};

// The optimizer's state per parameter, from the trace's Optimizer.step# record ("AdamW.step", "SGD.step").
[[nodiscard]] inline std::pair<int, bool> optimizer_states(const Trace& t) {
  for (const auto& o : t.optimizer_steps) {
    if (o.name.starts_with("Adam") || o.name.starts_with("NAdam") || o.name.starts_with("RAdam") || o.name.starts_with("AdamW")) return {2, true};
    if (o.name.starts_with("SGD") || o.name.starts_with("RMSprop") || o.name.starts_with("Adagrad")) return {1, true};
  }
  return {2, false};
}

[[nodiscard]] inline FsdpMemory fsdp_memory(const Trace& t, const comm::FsdpPlan& plan, const FsdpOptions& opt) {
  FsdpMemory m;
  std::tie(m.optimizer_states, m.optimizer_known) = optimizer_states(t);
  const double n = std::max(1, opt.world_size), p = plan.parameter_bytes();
  const double gathered = opt.bf16_params ? 0.5 : 1.0;  // the gradients' dtype is the parameters' (fp32)
  m.sharded_bytes = p * (2 + m.optimizer_states) / n;
  double units = 0;
  if (opt.reshard_after_forward) {
    units = 2 * plan.largest_unit_bytes();  // the unit running and the one prefetched
  } else {
    for (const auto& u : plan.units) units += u.bytes;  // gathered from forward to backward
  }
  m.unsharded_bytes = (units + plan.root.bytes) * gathered + plan.largest_unit_bytes();
  return m;
}

struct FsdpStep {
  ProgramEdit edit;  // its kernel_scale: the optimizer's kernels move 1/N of the bytes
  comm::FsdpPlan plan;
  comm::Topology topology;
  [[nodiscard]] std::vector<double> durations(std::vector<double> one_gpu) const { return edit.durations(std::move(one_gpu)); }
};

[[nodiscard]] inline FsdpStep fsdp_step(const Trace& t, const StepProgram& p, const comm::FsdpPlan& plan, const Device& dest,
                                        const comm::Topology& topo, double host_scale, const FsdpOptions& opt,
                                        const FsdpHostCosts& cost = torch_fsdp_costs) {
  FsdpStep out{ProgramEdit(t, p), plan, topo};
  if (topo.ranks <= 1) return out;
  ProgramEdit& e = out.edit;
  const std::int64_t compute = e.compute_stream, ag_stream = e.new_stream(), rs_stream = e.new_stream();
  const int op_ag = e.add_op("FSDP: all-gather (NCCL)"), op_rs = e.add_op("FSDP: reduce-scatter (NCCL)"),
            op_copy = e.add_op("FSDP hooks, flat-buffer copies");
  const double n = topo.ranks, gathered = opt.bf16_params ? 0.5 : 1.0;
  const UnitCost uc = fsdp_unit_cost(opt, cost);
  const auto unit_us = [&](const comm::FsdpUnit& u) {
    return (uc.per_unit_us + uc.per_tensor_us * static_cast<double>(u.gradients.size())) * host_scale;
  };
  const double fwd_share = opt.reshard_after_forward ? cost.forward_share : cost.grad_op_forward_share;
  const double bwd_share = opt.reshard_after_forward ? cost.pre_backward_share : cost.grad_op_pre_backward_share;

  // An all-gather of `bytes` of parameters: the shard into the flat buffer and the collective on the
  // all-gather stream; returns the collective.
  auto all_gather = [&](int pos, double bytes) {
    const int in = e.add_kernel("FSDP: all-gather copy-in", ag_stream, op_copy, copy_us(bytes * gathered / n, dest), false);
    const int ag = e.add_kernel("ncclDevKernel_AllGather (modelled)", ag_stream, op_ag, comm::all_gather_us(bytes * gathered, topo), true,
                                Collective{"allgather", bytes * gathered, topo.ranks});  // the gathered tensor
    e.insert(pos, 0, {in, ag});
    return ag;
  };
  // The compute stream waits for the gathered unit and copies its parameters out.
  auto copy_out = [&](int pos, int ag, double bytes, double host_us) {
    const int out_k = e.add_kernel("FSDP: all-gather copy-out", compute, op_copy, copy_us(bytes * gathered, dest), false);
    e.wait(out_k, {ag});
    e.insert(pos, host_us, {out_k});
  };
  std::vector<int> reduce_scatters;
  auto reduce_scatter = [&](int pos, double bytes, double host_us) {
    const int in = e.add_kernel("FSDP: reduce-scatter copy-in", compute, op_copy, copy_us(bytes, dest), false);
    const int rs = e.add_kernel("ncclDevKernel_ReduceScatter (modelled)", rs_stream, op_rs, comm::reduce_scatter_us(bytes, topo), true,
                                Collective{"reduce_scatter", bytes, topo.ranks});  // the full tensor each rank reduces
    e.wait(rs, {in});
    reduce_scatters.push_back(rs);
    e.insert(pos, host_us, {in, rs});
  };

  // The root: gathered once before the forward pass, kept to the end of backward, reduced last.
  if (plan.root.bytes > 0) {
    const int first = e.first_gpu_item();
    copy_out(first, all_gather(first, plan.root.bytes), plan.root.bytes, unit_us(plan.root) * fwd_share);
  }
  const int units = static_cast<int>(plan.units.size());
  for (const auto& u : plan.units) {
    const int pos = e.position(u.forward_us);
    copy_out(pos, all_gather(pos, u.bytes), u.bytes, unit_us(u) * fwd_share);
  }
  // Backward, in reverse: each unit gathered again (one ahead) unless kept from forward, then reduced.
  for (int i = units - 1; i >= 0; --i) {
    const auto& u = plan.units[i];
    if (opt.reshard_after_forward) {
      const int issue = e.position(i + 1 < units ? plan.units[i + 1].backward_us : u.backward_us);
      copy_out(e.position(u.backward_us), all_gather(issue, u.bytes), u.bytes, unit_us(u) * bwd_share);
    } else {
      e.insert(e.position(u.backward_us), unit_us(u) * bwd_share, {});
    }
    reduce_scatter(e.position(u.ready_us), u.bytes, unit_us(u) * (1 - fwd_share - bwd_share));
  }
  if (plan.root.bytes > 0) reduce_scatter(e.position(plan.root.ready_us), plan.root.bytes, unit_us(plan.root) * (1 - fwd_share));
  // End of backward: the compute stream waits for every reduce-scatter before the optimizer.
  {
    const int wait = e.add_kernel("FSDP: wait for the reduce-scatters", compute, op_rs, ddp_small_kernel_us, false);
    e.wait(wait, reduce_scatters);
    e.insert(e.position(plan.last_ready_us), 0, {wait});
  }
  // The optimizer on the shards: its kernels (launched within Optimizer.step#, else after the last
  // gradient) move 1/N of the bytes; dispatching over sharded tensors costs the host per tensor.
  double opt_start = plan.last_ready_us, opt_end = 1e300;
  if (!t.optimizer_steps.empty()) {
    opt_start = t.optimizer_steps.back().start_us;
    opt_end = opt_start + t.optimizer_steps.back().duration_us;
  }
  for (const int k : kernels_launched_in(t, opt_start, opt_end)) e.kernel_scale[k] = 1.0 / n;
  e.insert(e.position(opt_start), cost.per_tensor_optimizer_us * static_cast<double>(plan.gradients.size()) * host_scale, {});
  e.merge();
  return out;
}

struct FsdpPrediction {
  Timeline single;  // one GPU
  Timeline step;    // one rank of the FSDP step
  comm::FsdpPlan plan;
  comm::Topology topology;
  FsdpMemory memory;
  std::vector<std::string> assumptions;
};

// `kernel_us`: one duration per kernel of `t` on the destination (predicted, or as recorded).
[[nodiscard]] inline FsdpPrediction predict_fsdp(const Trace& t, const StepProgram& program, const std::vector<double>& kernel_us,
                                                 const Device& dest, double host_scale, const FsdpOptions& opt, const SimOptions& sim = {}) {
  FsdpPrediction out;
  out.topology = fsdp_topology(dest, opt);
  out.plan = comm::fsdp_plan(t, opt.units);
  out.memory = fsdp_memory(t, out.plan, opt);
  out.single = simulate(t, program, kernel_us, sim);
  const FsdpStep s = fsdp_step(t, program, out.plan, dest, out.topology, host_scale, opt);
  out.step = out.topology.ranks <= 1 ? out.single : simulate_shared(s.edit.trace, s.edit.program, s.durations(kernel_us), sim);
  out.assumptions = s.edit.program.assumptions;
  out.assumptions.push_back(opt.label() + ": " + out.plan.grouping + (out.plan.root.bytes > 0 ? " and the root" : "") +
                            " as units; FSDP2's host cost per unit as measured with torch 2.11 on the H200 test machine");
  if (!out.memory.optimizer_known)
    out.assumptions.push_back("FSDP memory: the trace names no optimizer (Optimizer.step#); two states per parameter assumed (Adam)");
  if (out.topology.nodes() > 1 || out.topology.ranks > 4)
    out.assumptions.push_back("extrapolated: FSDP was validated on 2 and 4 GPUs of one NVLink node only");
  return out;
}

[[nodiscard]] inline std::string gb_text(double bytes) {
  char b[32];
  std::snprintf(b, sizeof b, "%.1f GiB", bytes / (1024.0 * 1024 * 1024));
  return b;
}

// A prediction composed for FSDP on several GPUs. Returns the assumptions to say.
inline std::vector<std::string> compose_fsdp(PredictedTrace& p, const Trace& t, const StepProgram& program, const Device& dest,
                                             double host_scale, const FsdpOptions& opt, std::optional<int> batch = {}) {
  const FsdpPrediction f = predict_fsdp(t, program, kernel_durations(p), dest, host_scale, opt);
  DataParallel& dp = set_plan_step(p, f.single, f.step, f.topology);
  dp.plan = opt.label() + " (" + f.plan.grouping + (f.plan.root.bytes > 0 ? " + root" : "") + ")";
  dp.collectives = "all-gather and reduce-scatter";
  dp.counted = "units";
  dp.buckets = static_cast<int>(f.plan.units.size()) + (f.plan.root.bytes > 0 ? 1 : 0);
  dp.gradient_bytes = f.plan.parameter_bytes();
  dp.state_bytes_per_gpu = f.memory.total();
  dp.memory_bytes = dest.memory_gib * 1024.0 * 1024 * 1024;
  set_throughput(p, dest, batch);
  auto notes = f.assumptions;
  if (dp.memory_bytes > 0 && dp.state_bytes_per_gpu > dp.memory_bytes)
    notes.push_back(dest.name + ": does not fit: FSDP's model state alone takes " + gb_text(dp.state_bytes_per_gpu) + " per GPU of its " +
                    gb_text(dp.memory_bytes));
  return notes;
}

}  // namespace habitat::sim
