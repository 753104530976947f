#pragma once
// Pipeline parallel as Chakra execution traces: one graph per stage (rank), since stages run different
// parts of the model. The graph is the schedule sim::pp_step plays, node for node, so that a replay of
// the files reproduces habitat's step:
//  - per action (one stage's forward or backward of one micro-batch, in pp_order): a host node (the
//    stretch's host work and the schedule's cost per action), a compute node (the stretch's kernels for
//    one micro-batch, predicted on the destination), and where the action takes or gives a tensor, a
//    receive before it and a send after it (COMM_RECV_NODE / COMM_SEND_NODE: the activation forward, its
//    gradient backward; comm_src, comm_dst, comm_size, and a tag that pairs them);
//  - the compute node depends on the host node before its own (the host has begun issuing it), on the
//    previous compute node (one stream) and on its receive; the send on the compute node and its host
//    node (an action's kernels end no sooner than its host has issued them);
//  - per step, a host node for the work before the first forward, and the optimizer's host and compute
//    nodes after the last backward.
// A stage's kernels are one compute node per action, not one per kernel: pp_step knows a stage's time per
// micro-batch, not the order of the micro-batch's kernels across stages.
#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <vector>

#include "habitat/chakra/step_graph.hpp"
#include "habitat/sim/pipeline.hpp"

namespace habitat::chakra {

// The tag of a micro-batch's tensor between two stages: unique per step, micro-batch and direction.
[[nodiscard]] inline std::int64_t pp_tag(int step, int micro, bool forward, int M) {
  return (static_cast<std::int64_t>(step) * M + micro) * 2 + (forward ? 0 : 1);
}

// One graph per stage of `plan` as scheduled by `schedule`; `action_us`: sim::pp_action_us. `source` names
// the trace in errors.
[[nodiscard]] inline std::vector<StepGraph> pp_graphs(const sim::PpPlan& plan, const comm::Topology& topo, sim::PpSchedule schedule,
                                                      double action_us, const GraphOptions& options, const std::string& source) {
  const int S = plan.stages, M = plan.microbatches;
  const double send_us = sim::pp_send_us(plan, topo);
  const auto order = sim::pp_order(S, M, schedule);
  std::vector<StepGraph> graphs(S);
  for (int s = 0; s < S; ++s) {
    StepGraph& g = graphs[s];
    g.topology = topo;
    g.steps = options.steps;
    const sim::PpStage& st = plan.stage[s];
    std::optional<std::uint64_t> host_last, gpu_last;
    auto add = [&](EtNode n) {
      n.id = g.nodes.size();
      g.nodes.push_back(std::move(n));
      return g.nodes.back().id;
    };
    // A micro-batch's tensor between stages `src` and `dst` (its activation forward, its gradient backward).
    auto p2p = [&](NodeType type, int src, int dst, int step, const sim::PpAction& a, const std::string& what,
                   std::initializer_list<std::optional<std::uint64_t>> deps) {
      EtNode n;
      const bool send = type == NodeType::comm_send;
      n.name = std::string(send ? "send " : "recv ") + (a.forward ? "activation" : "gradient") + (send ? " to stage " : " from stage ") +
               std::to_string(send ? dst : src) + ", micro-batch " + std::to_string(a.micro);
      n.op = what;
      n.type = type;
      n.src = src, n.dst = dst;
      n.tag = pp_tag(step, a.micro, a.forward, M);
      n.comm_bytes = plan.activation_bytes;
      n.us = send_us;
      for (const auto& d : deps)
        if (d) n.deps.push_back(*d);
      return n;
    };
    auto host_node = [&](const std::string& what, double us) {
      EtNode h;
      h.name = "host: " + what;
      h.op = what;
      h.on_cpu = true;
      h.us = us;
      if (host_last) h.deps.push_back(*host_last);
      return add(std::move(h));
    };
    for (int step = 0; step < options.steps; ++step) {
      if (options.host) host_last = host_node("before the first forward", plan.before_us);
      for (const sim::PpAction& a : order[s]) {
        const std::string what = std::string("stage ") + std::to_string(s) + (a.forward ? " forward" : " backward") + ", micro-batch " + std::to_string(a.micro);
        const std::optional<std::uint64_t> issued_after = host_last;  // the host begins issuing the action
        // Its input: the activation from the stage before, or the gradient from the stage after.
        const int from = a.forward ? s - 1 : s + 1;
        std::optional<std::uint64_t> recv;
        if (from >= 0 && from < S) recv = add(p2p(NodeType::comm_recv, from, s, step, a, what, {issued_after}));
        std::optional<std::uint64_t> host;
        if (options.host) host = host_last = host_node(what, (a.forward ? st.forward_host_us : st.backward_host_us) + action_us);
        EtNode c;
        c.name = what;
        c.op = what;
        c.stream = 0;
        c.us = a.forward ? st.forward_gpu_us : st.backward_gpu_us;
        if (gpu_last) c.deps.push_back(*gpu_last);
        if (issued_after) c.deps.push_back(*issued_after);
        if (recv) c.deps.push_back(*recv);
        const std::uint64_t compute = add(std::move(c));
        gpu_last = compute;
        const int to = a.forward ? s + 1 : s - 1;
        if (to >= 0 && to < S) add(p2p(NodeType::comm_send, s, to, step, a, what, {compute, host}));
      }
      // The optimizer on the stage's parameters, once its last backward is issued.
      const std::optional<std::uint64_t> issued_after = host_last;
      if (options.host) host_last = host_node("optimizer", st.optimizer_host_us);
      EtNode o;
      o.name = "stage " + std::to_string(s) + " optimizer";
      o.op = "optimizer";
      o.stream = 0;
      o.us = st.optimizer_gpu_us;
      if (gpu_last) o.deps.push_back(*gpu_last);
      if (issued_after) o.deps.push_back(*issued_after);
      gpu_last = add(std::move(o));
    }
    finish(g, source);
  }
  return graphs;
}

}  // namespace habitat::chakra
