#pragma once
// The predicted step of one rank as a graph of Chakra execution-trace nodes, for ASTRA-sim: no protobuf
// here (et_file.hpp writes the graph in Chakra's format).
//
// The graph is the step program the simulator replays (sim/step_program.hpp), with a parallel plan's work
// inserted by the same function `habitat predict --world-size [--parallel]` uses (sim::ddp_step, fsdp_step,
// tp_step):
//  - one compute node per GPU kernel (or copy), carrying its predicted time on the destination GPU. A
//    kernel is the unit both of habitat's prediction and of Chakra's PyTorch traces, and ASTRA-sim runs
//    one GPU compute node at a time, so nodes finer than the GPU's own order would add nothing and coarser
//    ones would hide where a bucket's all-reduce can start;
//  - one host node (is_cpu_op) per launch: the host's work up to it on the destination host, so that a
//    host-bound step stays host-bound in ASTRA-sim (GraphOptions::host; off: GPU and collectives only);
//  - one collective node per collective of the plan (DDP: a bucket's all-reduce, after the gradient hook of
//    its last gradient, and the broadcast of BatchNorm's buffers; FSDP: a unit's all-gather (comm_size: the
//    gathered tensor) and reduce-scatter (the full tensor); TP: the all-reduces of the split blocks), with
//    Chakra's comm_type and the message in bytes, where the plan starts it. Pipeline parallel's ranks differ:
//    pipeline_graph.hpp builds one graph per stage, with sends and receives.
// Dependencies (data_deps, always on nodes written earlier): a kernel on the previous node of its
// stream, on the kernels of other streams it waits for, and on the host node that launched it; a host
// node on the previous host node and, after a synchronizing call, on the GPU work that call waited for.
// GraphOptions::steps repeats the step back to back, the chains running on from one step into the next (a
// training loop's steady state, where the host runs ahead into the next step while the GPU finishes one).
//
// Durations: Chakra's are whole microseconds. Each chain (host, compute, collectives) is rounded
// cumulatively, so every node is within 1 us of habitat's time and each chain's sum within 0.5 us.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <variant>
#include <vector>

#include "habitat/comm/allreduce.hpp"
#include "habitat/comm/ddp_plan.hpp"
#include "habitat/error.hpp"
#include "habitat/sim/ddp.hpp"
#include "habitat/sim/fsdp.hpp"
#include "habitat/sim/tensor_parallel.hpp"
#include "habitat/sim/step_program.hpp"
#include "habitat/trace/trace.hpp"

namespace habitat::chakra {

// Chakra's NodeType and CollectiveCommType values (et_def.proto) that habitat writes.
enum class NodeType : int { comp = 4, comm_send = 5, comm_recv = 6, comm_coll = 7 };
enum class CommType : int { all_reduce = 0, all_gather = 2, broadcast = 5, reduce_scatter = 7 };

struct EtNode {
  std::uint64_t id = 0;
  std::string name;
  NodeType type = NodeType::comp;
  bool on_cpu = false;               // the host's work (is_cpu_op), else the GPU's
  std::vector<std::uint64_t> deps;   // data_deps
  double us = 0;                     // habitat's duration
  std::uint64_t duration_micros = 0; // rounded (see the top of this file)
  std::int64_t stream = -1;          // GPU nodes: the CUDA stream
  std::string op;                    // the operation it belongs to
  std::optional<CommType> comm;      // collectives
  double comm_bytes = 0;             // collectives and point to point
  int src = -1, dst = -1;            // point to point: the sending and the receiving rank
  std::int64_t tag = -1;             // point to point: pairs a send with its receive
};

struct StepGraph {
  std::vector<EtNode> nodes;
  double gpu_us = 0, host_us = 0, comm_us = 0;  // habitat's times, per kind of node (all steps)
  int gpu_nodes = 0, host_nodes = 0, comm_nodes = 0;
  double allreduce_bytes = 0;       // the buckets' sum over the steps: the gradients, once a step
  int buckets = 0;                  // all-reduces, all steps
  int all_gathers = 0, reduce_scatters = 0;  // FSDP's, all steps
  double all_gather_bytes = 0, reduce_scatter_bytes = 0;
  int sends = 0, recvs = 0;         // pipeline parallel's point to point, all steps
  double send_bytes = 0;
  comm::Topology topology;
  comm::DdpPlan plan;               // DDP's; empty on one GPU and for the other plans
  int steps = 1;
  int dropped_waits = 0;            // per step: cross-stream waits on work launched later, left out as the simulator
                                    // leaves them out (their end is not known when the kernel is launched)
  int unlaunched_kernels = 0;       // per step: kernels no host call launched (appended in stream order)
};

struct GraphOptions {
  bool host = true;  // host nodes; false: the GPU's kernels and the collectives only
  int steps = 1;     // the step repeated back to back, as a training loop runs it
};

// A named value of GlobalMetadata, as et_file.hpp writes it.
struct Attr {
  std::string name;
  std::variant<std::string, std::int64_t, double, bool, std::vector<std::string>> value;
};

namespace detail {

// Which collective a kernel the plan added is, and habitat's time for it (the same model on the same
// message: a check that the node carries the message of its kernel).
[[nodiscard]] inline std::optional<CommType> collective_of(const Kernel& k) {
  if (!k.collective) return std::nullopt;
  const std::string& n = k.collective->name;
  if (n == "allreduce") return CommType::all_reduce;
  if (n == "broadcast") return CommType::broadcast;
  if (n == "allgather") return CommType::all_gather;
  if (n == "reduce_scatter") return CommType::reduce_scatter;
  return std::nullopt;
}
[[nodiscard]] inline double model_us(CommType c, double bytes, const comm::Topology& t) {
  switch (c) {
    case CommType::all_reduce: return comm::allreduce(bytes, t).us;
    case CommType::broadcast: return comm::broadcast_us(bytes, t);
    case CommType::all_gather: return comm::all_gather_us(bytes, t);
    case CommType::reduce_scatter: return comm::reduce_scatter_us(bytes, t);
  }
  return 0;
}

inline void check_inputs(const Trace& t, const std::vector<double>& kernel_us, const GraphOptions& options) {
  if (kernel_us.size() != t.kernels.size()) throw make_error(t.source, "export-et", "one predicted duration per kernel is needed");
  if (options.steps < 1) throw make_error(t.source, "--steps", "must be at least 1");
}

}  // namespace detail

inline void finish(StepGraph& g, const std::string& source);

// The graph of a step as edited by a plan (or the one-GPU step): `us` one duration per kernel of `tt`.
[[nodiscard]] inline StepGraph graph_of(const Trace& tt, const sim::StepProgram& p, const std::vector<double>& us, StepGraph g,
                                        const GraphOptions& options) {
  g.steps = options.steps;
  const int n = static_cast<int>(tt.kernels.size());
  std::vector<std::int64_t> node_of(n, -1);
  std::map<std::int64_t, std::uint64_t> stream_last;
  std::optional<std::uint64_t> host_last;
  std::vector<std::uint64_t> host_waits;  // GPU nodes the next host node waits for (a synchronizing call)
  double host_pending = 0;
  bool first_step = true;
  auto add = [&](EtNode node) {
    node.id = g.nodes.size();
    g.nodes.push_back(std::move(node));
    return g.nodes.back().id;
  };
  auto add_dep = [](EtNode& node, std::uint64_t d) {
    if (std::find(node.deps.begin(), node.deps.end(), d) == node.deps.end()) node.deps.push_back(d);
  };
  auto gpu_node = [&](int k, std::optional<std::uint64_t> launched_by) {
    const Kernel& kernel = tt.kernels[k];
    EtNode node;
    node.name = kernel.name;
    node.op = operation_label(tt, kernel.op);
    node.stream = kernel.stream;
    node.us = us[k];
    if (auto it = stream_last.find(kernel.stream); it != stream_last.end()) add_dep(node, it->second);
    for (const int w : p.waits_for[k]) {
      if (w < 0) continue;  // the previous step's work: not in this graph
      if (node_of[w] >= 0) add_dep(node, static_cast<std::uint64_t>(node_of[w]));
      else if (first_step) ++g.dropped_waits;
    }
    if (launched_by) add_dep(node, *launched_by);
    if (p.is_comm(k)) {
      const auto type = detail::collective_of(kernel);
      if (!type) throw std::logic_error("export-et: a communication kernel of the plan has no collective: " + kernel.name);
      node.type = NodeType::comm_coll;
      node.comm = type;
      node.comm_bytes = kernel.collective->bytes;
      // The kernel's time is the model's for its message, unless the plan stretched it where compute overlaps.
      if (!(node.us >= detail::model_us(*type, node.comm_bytes, g.topology) * (1 - 1e-9)))
        throw std::logic_error("export-et: a collective's message does not match its kernel in the plan's step: " + kernel.name);
    }
    const std::uint64_t id = add(std::move(node));
    node_of[k] = static_cast<std::int64_t>(id);
    stream_last[kernel.stream] = id;
    return id;
  };

  // The step, `steps` times back to back: each host node after the previous one, each kernel after the
  // one before it on its stream, across steps as within one.
  for (int step = 0; step < options.steps; ++step) {
    first_step = step == 0;
    std::fill(node_of.begin(), node_of.end(), -1);
    host_pending = 0;
    for (const auto& item : p.items) {
      host_pending += item.work_us + item.call_us;
      if (item.kernels.empty() && !item.blocking) continue;
      std::optional<std::uint64_t> launcher;
      if (options.host) {
        EtNode h;
        const int op = item.call >= 0 ? tt.calls[item.call].op : (item.kernels.empty() ? -1 : tt.kernels[item.kernels.front()].op);
        const std::string label = op < 0 ? std::string("between operations") : operation_label(tt, op);
        h.name = "host: " + label;
        h.op = label;
        h.on_cpu = true;
        h.us = host_pending;
        if (host_last) add_dep(h, *host_last);
        for (const auto w : host_waits) add_dep(h, w);
        host_waits.clear();
        launcher = host_last = add(std::move(h));
        host_pending = 0;
      }
      std::optional<std::uint64_t> own_last;
      for (const int k : item.kernels)
        if (k >= 0 && k < n && node_of[k] < 0) own_last = gpu_node(k, launcher);
      if (item.blocking && options.host) {
        if (item.device_wide)
          for (const auto& [stream, id] : stream_last) host_waits.push_back(id);
        else if (own_last)
          host_waits.push_back(*own_last);
      }
    }
    // Kernels no host call launched: in stream order, after what came before them on their stream.
    for (int k = 0; k < n; ++k)
      if (node_of[k] < 0) {
        gpu_node(k, std::nullopt);
        if (first_step) ++g.unlaunched_kernels;
      }
    if (p.tail_waits_for_gpu && options.host)  // a host callback's wait for all GPU work (StepProgram), as predict has it
      for (const auto& [stream, id] : stream_last) host_waits.push_back(id);
    host_pending += p.tail_us;
    if (options.host && (host_pending > 0 || !host_waits.empty())) {
      EtNode h;
      h.name = "host: end of step";
      h.op = "end of step";
      h.on_cpu = true;
      h.us = host_pending;
      if (host_last) add_dep(h, *host_last);
      for (const auto w : host_waits) add_dep(h, w);
      host_last = add(std::move(h));
      host_waits.clear();
    }
  }

  finish(g, tt.source);
  return g;
}

// Whole microseconds, rounded along each chain (host, compute, communication); the totals.
inline void finish(StepGraph& g, const std::string& source) {
  double exact[3] = {0, 0, 0};
  long long rounded[3] = {0, 0, 0};
  for (auto& node : g.nodes) {
    if (!std::isfinite(node.us) || node.us < 0)
      throw make_error(source, node.name, "the predicted duration is not a finite, non-negative number");
    const int chain = node.on_cpu ? 0 : node.type == NodeType::comp ? 1 : 2;
    exact[chain] += node.us;
    const long long r = std::llround(exact[chain]);
    node.duration_micros = static_cast<std::uint64_t>(r - rounded[chain]);
    rounded[chain] = r;
    if (chain == 0) ++g.host_nodes, g.host_us += node.us;
    else if (chain == 1) ++g.gpu_nodes, g.gpu_us += node.us;
    else {
      ++g.comm_nodes;
      g.comm_us += node.us;
      if (node.comm == CommType::all_reduce) g.allreduce_bytes += node.comm_bytes, ++g.buckets;
      if (node.comm == CommType::all_gather) g.all_gather_bytes += node.comm_bytes, ++g.all_gathers;
      if (node.comm == CommType::reduce_scatter) g.reduce_scatter_bytes += node.comm_bytes, ++g.reduce_scatters;
      if (node.type == NodeType::comm_send) g.send_bytes += node.comm_bytes, ++g.sends;
      if (node.type == NodeType::comm_recv) ++g.recvs;
    }
  }
}

// `kernel_us`: one predicted duration per kernel of `t` on `dest`; `program`: the step program built for
// the destination's host; `host_scale`: sim::ddp_host_scale for that host. opt.world_size > 1 adds DDP.
[[nodiscard]] inline StepGraph step_graph(const Trace& t, const sim::StepProgram& program, const std::vector<double>& kernel_us,
                                          const Device& dest, double host_scale, const sim::DdpOptions& opt,
                                          const GraphOptions& options = {}) {
  detail::check_inputs(t, kernel_us, options);
  StepGraph g;
  g.topology = sim::ddp_topology(dest, opt);
  if (g.topology.ranks <= 1) {
    for (const auto& k : t.kernels)
      if (k.collective || nccl_kernel_name(k.name))
        throw make_error(t.source, t.step_name,
                         "the trace is one rank of a multi-GPU step (NCCL kernels): give the one-GPU trace of the same step and --world-size");
    return graph_of(t, program, kernel_us, std::move(g), options);
  }
  g.plan = comm::ddp_plan(t, opt.caps);
  if (g.plan.already_ddp)
    throw make_error(t.source, "--world-size", "the trace is already one rank of a DDP step: give the one-GPU trace of the same step");
  const sim::DdpStep s = sim::ddp_step(t, program, g.plan, dest, g.topology, host_scale, opt);
  return graph_of(s.trace, s.program, sim::ddp_durations(kernel_us, s), std::move(g), options);
}

// FSDP (sim::fsdp_step) on opt.world_size ranks.
[[nodiscard]] inline StepGraph step_graph(const Trace& t, const sim::StepProgram& program, const std::vector<double>& kernel_us,
                                          const Device& dest, double host_scale, const sim::FsdpOptions& opt,
                                          const GraphOptions& options = {}) {
  detail::check_inputs(t, kernel_us, options);
  StepGraph g;
  g.topology = sim::fsdp_topology(dest, opt);
  const sim::FsdpStep s = sim::fsdp_step(t, program, comm::fsdp_plan(t, opt.units), dest, g.topology, host_scale, opt);
  return graph_of(s.edit.trace, s.edit.program, s.durations(kernel_us), std::move(g), options);
}

// Tensor parallel (sim::tp_step) over opt.world_size ranks.
[[nodiscard]] inline StepGraph step_graph(const Trace& t, const sim::StepProgram& program, const std::vector<double>& kernel_us,
                                          const Device& dest, double host_scale, const sim::TpOptions& opt,
                                          const GraphOptions& options = {}) {
  detail::check_inputs(t, kernel_us, options);
  StepGraph g;
  g.topology = sim::tp_topology(dest, opt);
  const sim::TpStep s = sim::tp_step(t, program, sim::tp_plan(t), dest, g.topology, host_scale, opt);
  return graph_of(s.edit.trace, s.edit.program, s.durations(kernel_us), std::move(g), options);
}

}  // namespace habitat::chakra
