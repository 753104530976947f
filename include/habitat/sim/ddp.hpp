#pragma once
// Data-parallel training (PyTorch DistributedDataParallel) on N GPUs, from the program of a one-GPU step.
// DDP adds, per step, on every rank (ranks run the same step, so one rank's timeline is the step's):
//  - each forward: the buffers (BatchNorm statistics) flattened, broadcast from rank 0 and copied back;
//  - in the backward pass, after each gradient is ready (its AccumulateGrad record): an autograd hook that
//    copies the gradient, divided by N, into its bucket (one kernel);
//  - when a bucket's last gradient is in: the bucket's all-reduce, on a communication stream that first
//    waits for the compute stream's work so far; it overlaps the rest of the backward pass;
//  - at the end of the backward pass: the compute stream waits for the all-reduces, and each reduced
//    bucket is copied back into the gradients (one kernel per gradient); the optimizer follows.
// The added work goes into the step program and the simulator replays it; what the communication leaves
// exposed falls out of the timeline.
#include <algorithm>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "habitat/comm/allreduce.hpp"
#include "habitat/comm/ddp_plan.hpp"
#include "habitat/predict/roofline.hpp"
#include "habitat/sim/compose.hpp"
#include "habitat/sim/host_profile.hpp"
#include "habitat/sim/program_edit.hpp"
#include "habitat/sim/simulator.hpp"

namespace habitat::sim {

// DDP's host costs per unit of work, as torch.profiler recorded them on the host of `measured_on`: medians
// over the 8 DDP rank traces of fixtures/ddp/h200x2 (torch 2.11, 2 H200s), each the rank's cost less the
// same work in the one-GPU trace where it exists. They are used as recorded, not divided by the
// profiler's slowdown as the rest of the host's time is: DDP costs the un-profiled step more host time than
// its records show (Python in DDP's forward, NCCL's proxy thread), and with the slowdown divided out the
// host-bound workloads' DDP overhead came out at half the measured (tests/comm/ddp_test.cpp).
struct DdpHostCosts {
  double per_gradient_us = 20;       // hook: gradient / N into its bucket (mul_out and its launch)
  double per_bucket_us = 100;        // c10d::allreduce_: the all-reduce's launch and its stream wait
  double per_gradient_back_us = 10.5;  // copy_bucket_to_grad, at the end of the backward pass
  double per_buffer_group_us = 100;  // c10d::broadcast_ of one dtype's buffers
  double per_buffer_flatten_us = 7;  // flatten_dense_tensors and unflatten_dense_tensors, per buffer
  double per_buffer_copy_us = 9;     // copying each broadcast buffer back
  const char* measured_on = "h200-testbed";
};
inline constexpr DdpHostCosts torch_ddp_costs{};

// Kernels that overlap communication share the SMs and the memory bandwidth with it: per unit of overlap,
// a compute kernel runs this much longer, and so does an all-reduce. Measured on the DDP rank traces of
// fixtures/ddp: all-reduces overlapped 90-100% by backward kernels took 1.19x the model's time (median of
// 12; 1.03x for the 45 barely overlapped), and VGG-16's convolution backward, a fifth of it overlapped,
// took 3.7% longer than in the one-GPU trace.
inline constexpr double comm_slowdown_overlapped = 0.19;
inline constexpr double compute_slowdown_overlapped = 0.2;

// The GPUs every parallel plan runs on, and the links the user gave in place of the catalog's.
struct PlanGpus {
  int world_size = 1;
  int gpus_per_node = 0;               // 0: the destination's typical node
  std::optional<double> intra_gbps;    // --interconnect: replaces the catalog's link inside a node
  std::optional<double> network_gbps;  // --network-gbps: replaces the catalog's network per GPU
};

struct DdpOptions : PlanGpus {
  comm::BucketCaps caps{};
  bool broadcast_buffers = true;         // DDP's default
};

struct DdpStep {
  Trace trace;           // the one-GPU trace with DDP's kernels and records appended
  StepProgram program;   // with DDP's host work and launches inserted
  std::vector<double> added_us;  // durations of the appended kernels, in order
  comm::Topology topology;
  comm::DdpPlan plan;
  std::vector<double> bucket_allreduce_us;
};

// Host time factor for DDP's recorded costs on the destination host: the speed of the host they were
// measured on against the destination's.
[[nodiscard]] inline double ddp_host_scale(const HostRegistry& reg, const std::string& runs_on, const DdpHostCosts& c = torch_ddp_costs) {
  const HostProfile* measured = reg.find(c.measured_on);
  if (!measured) return 1.0;
  double ratio = 1.0;
  if (const HostProfile* dest = reg.find(runs_on); dest && dest->name != measured->name)
    if (auto r = host_speed_ratio(*measured, *dest)) ratio = r->first;
  return ratio;
}

// An elementwise pass reading and writing `bytes` at the destination's sustained bandwidth.
[[nodiscard]] inline double copy_us(double bytes, const Device& d) {
  return std::max(ddp_small_kernel_us, 2 * bytes / (d.sustained_bandwidth_gbps() * 1e3));
}

[[nodiscard]] inline DdpStep ddp_step(const Trace& t, const StepProgram& p, const comm::DdpPlan& plan, const Device& dest,
                                      const comm::Topology& topo, double host_scale, const DdpOptions& opt = {},
                                      const DdpHostCosts& cost = torch_ddp_costs) {
  if (topo.ranks <= 1) {
    DdpStep out{t, p, {}, topo, plan, {}};
    out.program.comm.assign(t.kernels.size(), 0);
    return out;
  }
  ProgramEdit e(t, p);
  // DDP's copies go on PyTorch's current stream (the backward pass and the hooks use it too), its
  // collectives on a stream of their own.
  const std::int64_t compute = e.compute_stream, comm_stream = e.new_stream();
  const int op_hook = e.add_op("DDP: gradients into buckets"), op_allreduce = e.add_op("DDP: all-reduce (NCCL)"),
            op_back = e.add_op("DDP: buckets back into gradients"), op_broadcast = e.add_op("DDP: buffer broadcast (NCCL)");
  std::vector<double> bucket_allreduce_us;

  // Forward: the buffers' broadcast, before the step's first GPU work.
  if (opt.broadcast_buffers && !plan.buffers.empty()) {
    const int first = e.first_gpu_item();
    for (const auto& g : plan.buffers) {
      const int flat = e.add_kernel("DDP: flatten buffers (" + g.dtype + ")", compute, op_broadcast, copy_us(g.bytes, dest), false);
      const int bc = e.add_kernel("ncclDevKernel_Broadcast (modelled)", comm_stream, op_broadcast, comm::broadcast_us(g.bytes, topo), true,
                                  Collective{"broadcast", g.bytes, topo.ranks});
      e.wait(bc, {flat});
      e.insert(first, (cost.per_buffer_group_us + cost.per_buffer_flatten_us * g.count) * host_scale, {flat, bc});
      std::vector<int> copies;
      for (int i = 0; i < g.count; ++i)
        copies.push_back(e.add_kernel("DDP: buffer back", compute, op_broadcast, copy_us(g.bytes / g.count, dest), false));
      e.wait(copies.front(), {bc});
      e.insert(first, cost.per_buffer_copy_us * g.count * host_scale, std::move(copies));
    }
  }

  // Backward: per gradient its hook; per bucket its all-reduce once its last gradient is in.
  std::vector<int> bucket_of(plan.gradients.size(), -1);
  for (int b = 0; b < static_cast<int>(plan.buckets.size()); ++b)
    for (const int g : plan.buckets[b].gradients) bucket_of[g] = b;
  std::vector<int> filled(plan.buckets.size(), 0), allreduce_kernel(plan.buckets.size(), -1);
  double last_ready = t.step_start_us;
  for (int g = 0; g < static_cast<int>(plan.gradients.size()); ++g) {
    const Operation& ready = t.ops[plan.gradients[g].ready_op];
    const double at = ready.start_us + ready.duration_us;
    last_ready = std::max(last_ready, at);
    const int pos = e.position(at);
    const int hook = e.add_kernel("DDP: gradient / N into bucket", compute, op_hook, copy_us(plan.gradients[g].bytes, dest), false);
    e.insert(pos, cost.per_gradient_us * host_scale, {hook});
    const int b = bucket_of[g];
    if (++filled[b] == static_cast<int>(plan.buckets[b].gradients.size())) {
      const double us = comm::allreduce(plan.buckets[b].bytes, topo).us;
      bucket_allreduce_us.push_back(us);
      const int ar = e.add_kernel("ncclDevKernel_AllReduce (modelled)", comm_stream, op_allreduce, us, true,
                                  Collective{"allreduce", plan.buckets[b].bytes, topo.ranks});
      e.wait(ar, {hook});
      allreduce_kernel[b] = ar;
      e.insert(pos, cost.per_bucket_us * host_scale, {ar});
    }
  }
  // End of the backward pass: wait for each bucket's all-reduce, copy it back into the gradients.
  {
    const int pos = e.position(last_ready);
    for (int b = 0; b < static_cast<int>(plan.buckets.size()); ++b) {
      std::vector<int> copies;
      for (const int g : plan.buckets[b].gradients)
        copies.push_back(e.add_kernel("DDP: bucket back into gradient", compute, op_back, copy_us(plan.gradients[g].bytes, dest), false));
      e.wait(copies.front(), {allreduce_kernel[b]});
      e.insert(pos, cost.per_gradient_back_us * static_cast<double>(copies.size()) * host_scale, std::move(copies));
    }
  }
  e.merge();
  return {std::move(e.trace), std::move(e.program), std::move(e.added_us), topo, plan, std::move(bucket_allreduce_us)};
}

// The DDP step's kernel durations: the one-GPU kernels' (predicted) times, then the added kernels'.
[[nodiscard]] inline std::vector<double> ddp_durations(std::vector<double> one_gpu, const DdpStep& s) {
  one_gpu.insert(one_gpu.end(), s.added_us.begin(), s.added_us.end());
  return one_gpu;
}

// Simulates a step whose communication kernels share the GPU with compute: each kernel is stretched by
// its overlap with the other kind in the previous pass, three passes (the overlap settles by then).
[[nodiscard]] inline Timeline simulate_shared(const Trace& t, const StepProgram& p, const std::vector<double>& base, const SimOptions& sim = {}) {
  std::vector<double> d = base;
  Timeline tl = simulate(t, p, d, sim);
  std::vector<int> comm_k;
  for (int k = 0; k < static_cast<int>(base.size()); ++k)
    if (p.is_comm(k)) comm_k.push_back(k);
  if (comm_k.empty()) return tl;
  for (int pass = 0; pass < 3; ++pass) {
    std::vector<double> comm_overlap(base.size(), 0);
    for (int k = 0; k < static_cast<int>(base.size()); ++k) {
      if (p.is_comm(k)) continue;
      const auto [ks, ke] = tl.last_step[k];
      double ov = 0;
      for (const int c : comm_k) {
        const auto [cs, ce] = tl.last_step[c];
        const double o = std::max(0.0, std::min(ke, ce) - std::max(ks, cs));
        ov += o;
        comm_overlap[c] += o;
      }
      if (ke > ks) d[k] = base[k] * (1 + compute_slowdown_overlapped * std::min(1.0, ov / (ke - ks)));
    }
    for (const int c : comm_k) {
      const auto [cs, ce] = tl.last_step[c];
      if (ce > cs) d[c] = base[c] * (1 + comm_slowdown_overlapped * std::min(1.0, comm_overlap[c] / (ce - cs)));
    }
    tl = simulate(t, p, d, sim);
  }
  return tl;
}

// A DDP prediction: the one-GPU step and the DDP step simulated with the same kernel times and host.
struct DdpPrediction {
  Timeline single;  // one GPU, no DDP
  Timeline step;    // one rank of the DDP step: the step time of all of them
  comm::DdpPlan plan;
  comm::Topology topology;
  std::vector<double> bucket_allreduce_us;
  std::vector<std::string> assumptions;
  // Throughput of N GPUs over N times one GPU's (per-GPU batch unchanged).
  [[nodiscard]] double scaling_efficiency() const { return step.period_us > 0 ? single.period_us / step.period_us : 0; }
};

[[nodiscard]] inline comm::Topology ddp_topology(const Device& dest, const DdpOptions& opt) {
  Device d = dest;
  if (opt.network_gbps) d.interconnect.network_gbps = *opt.network_gbps;
  return comm::topology(d, opt.world_size, opt.gpus_per_node, opt.intra_gbps);
}

// Any plan's ranks (its options' world_size, gpus_per_node, intra_gbps, network_gbps) on the destination's nodes.
[[nodiscard]] inline comm::Topology plan_topology(const Device& dest, const PlanGpus& gpus) {
  DdpOptions d;
  static_cast<PlanGpus&>(d) = gpus;
  return ddp_topology(dest, d);
}

// `kernel_us`: one duration per kernel of `t` on the destination (predicted, or as recorded).
[[nodiscard]] inline DdpPrediction predict_ddp(const Trace& t, const StepProgram& program, const std::vector<double>& kernel_us,
                                               const Device& dest, double host_scale, const DdpOptions& opt, const SimOptions& sim = {}) {
  DdpPrediction out;
  out.topology = ddp_topology(dest, opt);
  out.plan = comm::ddp_plan(t, opt.caps);
  if (out.plan.already_ddp)
    throw make_error(t.source, t.step_name, "the trace is already one rank of a DDP step: give a one-GPU trace to predict DDP from");
  out.single = simulate(t, program, kernel_us, sim);
  const DdpStep s = ddp_step(t, program, out.plan, dest, out.topology, host_scale, opt);
  out.step = out.topology.ranks <= 1 ? out.single : simulate_shared(s.trace, s.program, ddp_durations(kernel_us, s), sim);
  out.bucket_allreduce_us = s.bucket_allreduce_us;
  out.assumptions = s.program.assumptions;
  if (out.topology.nodes() > 1 || out.topology.ranks > 4)
    out.assumptions.push_back("extrapolated: the collective model was validated on 2 and 4 GPUs of one NVLink node only");
  return out;
}

// What every data-parallel plan reports: ranks, where they are, the one-GPU step and the communication.
[[nodiscard]] inline DataParallel data_parallel_summary(const Timeline& single, const Timeline& step, const comm::Topology& topo) {
  DataParallel dp;
  dp.world_size = topo.ranks;
  dp.gpus_per_node = topo.gpus_per_node;
  dp.nodes = topo.nodes();
  dp.link = topo.intra_kind;
  dp.single_gpu_us = single.period_us;
  dp.comm_us = step.comm_us;
  dp.exposed_comm_us = step.comm_exposed_us;
  return dp;
}

// A plan's step becomes the iteration (never below 1/N of one GPU's: each rank runs at least its share);
// returns the summary every plan reports, for the plan to complete.
inline DataParallel& set_plan_step(PredictedTrace& p, const Timeline& single, const Timeline& step, const comm::Topology& topo) {
  p.timeline = step;
  p.iteration_us = std::max(step.period_us, single.period_us / std::max(1, topo.ranks));
  p.data_parallel = data_parallel_summary(single, step, topo);
  return *p.data_parallel;
}

// A prediction composed for DDP on several GPUs: the DDP step becomes the iteration, throughput counts
// every GPU. Returns the assumptions to say.
inline std::vector<std::string> compose_ddp(PredictedTrace& p, const Trace& t, const StepProgram& program, const Device& dest,
                                            double host_scale, const DdpOptions& opt, std::optional<int> batch = {}) {
  const DdpPrediction d = predict_ddp(t, program, kernel_durations(p), dest, host_scale, opt);
  DataParallel& dp = set_plan_step(p, d.single, d.step, d.topology);
  dp.buckets = static_cast<int>(d.plan.buckets.size());
  dp.gradient_bytes = d.plan.gradient_bytes();
  set_throughput(p, dest, batch);
  return d.assumptions;
}

}  // namespace habitat::sim
