#pragma once
// Pipeline parallelism over S GPUs from the program of a one-GPU step, as torch.distributed.pipelining runs
// it (one PipelineStage per rank, ScheduleGPipe or Schedule1F1B over M micro-batches of the batch):
//  - the model's repeated blocks (found as FSDP's units are, comm/fsdp_plan.hpp) are cut into S stages of
//    equal block count; the first stage also runs what comes before the first block (embeddings), the last
//    what comes after the last (the head and the loss);
//  - each stage's forward and backward of one micro-batch is the stretch of the one-GPU step between the
//    stage's cuts: its host work in full (a micro-batch dispatches every operator once; from the stretch's
//    record counts where the host's cost per record is known) plus the schedule's own host cost per action
//    (send/receive set-up, Python), and its kernels shrunk to 1/M of their work (never below the shortest);
//  - between stages the activation of a micro-batch (the first block's input) goes forward and its
//    gradient back, point to point;
//  - each rank's host runs the schedule's actions in order; each action's kernels run when issued and
//    their input has arrived (pp_step); then the rank's optimizer updates its stage's parameters (the
//    parameters outside the blocks go with the first).
// One batch per pipeline: samples per step are the one-GPU step's.
#include <algorithm>
#include <cmath>
#include <optional>
#include <string>
#include <vector>

#include "habitat/comm/allreduce.hpp"
#include "habitat/comm/fsdp_plan.hpp"
#include "habitat/ops/dtype.hpp"
#include "habitat/sim/ddp.hpp"
#include "habitat/sim/host_model.hpp"
#include "habitat/sim/program_edit.hpp"
#include "habitat/whatif/batch.hpp"

namespace habitat::sim {

// The schedule's host cost per action (one stage's forward or backward of one micro-batch), in the time of
// the host `measured_on` (scaled to others as DDP's costs are): fitted to the un-profiled pipeline steps of
// the two GPT fixtures on 2 and 4 H100s, whose host ran at 1.11x its time (fixtures/parallel/h100x4pp,
// torch 2.11; report::pp_study re-derives it and predicts each workload with the other's).
struct PpHostCosts {
  double per_action_us = 380;
  const char* measured_on = "h200-testbed";
};
inline constexpr PpHostCosts torch_pp_costs{};

enum class PpSchedule { one_f_one_b, gpipe };

struct PpOptions : PlanGpus {  // world_size: the stages, one GPU each
  int microbatches = 0;  // 0: twice the stages
  PpSchedule schedule = PpSchedule::one_f_one_b;
  std::optional<double> per_action_us;  // replaces the fitted host cost (the study's fit)
  // The destination host's count of records (HostModel::step_cost, scaled to that host): a stage's host time
  // per micro-batch from what it records. Without it, the trace's own stretches (which a GPU-bound step's
  // recording stretches with the GPU: README, "Pipeline parallel").
  std::optional<StepCost> step_cost;
  // The trace's batch (--batch): a micro-batch's kernels are the batch what-if's at batch / M where M divides it.
  std::optional<int> batch;
  [[nodiscard]] int micro() const { return microbatches > 0 ? microbatches : 2 * world_size; }
};

// Time of one send between GPUs of a node beyond its bytes over the link: NCCL send/recv pairs of 1 KiB to
// 16 MiB issued back to back took 49-59 us on 2 H200s (fixtures/parallel/h200x2/collectives.json, "sendrecv").
inline constexpr double p2p_latency_us = 50;

struct PpStage {
  int first_block = 0, blocks = 0;
  double forward_host_us = 0, forward_gpu_us = 0;    // per micro-batch
  double backward_host_us = 0, backward_gpu_us = 0;  // per micro-batch
  double optimizer_host_us = 0, optimizer_gpu_us = 0;
  double parameter_bytes = 0;
};

struct PpPlan {
  int stages = 1, microbatches = 1, blocks = 0;
  std::vector<PpStage> stage;
  double before_us = 0;              // each step, on every rank, before the first forward (zero_grad, inputs)
  double activation_bytes = 0;       // one micro-batch's activation crossing a cut (its gradient the same)
  std::vector<double> cuts_us;       // trace times: forward cuts, then backward cuts (for the record)
};

namespace detail {

// The bytes of the first tensor input of the first op that starts at or after `at` (the activation entering a block).
[[nodiscard]] inline double input_bytes_at(const Trace& t, double at) {
  const Operation* best = nullptr;
  for (const auto& op : t.ops)
    if (op.parent < 0 && !op.backward && op.start_us >= at && (!best || op.start_us < best->start_us) && !op.inputs.empty() &&
        !op.inputs[0].shape.empty())
      best = &op;
  if (!best) return 0;
  return comm::elements(best->inputs[0].shape) * ops::dtype_bytes(best->inputs[0].dtype.empty() ? "float" : best->inputs[0].dtype);
}

}  // namespace detail

// Each kernel's time for one micro-batch over its time for the whole batch: the batch what-if's (whatif/batch.hpp)
// at batch / M, where the trace's batch is known and M divides it. Operations none of whose operands carries the
// batch keep their whole time in every micro-batch: autocast's casts of the weights before each forward and of
// their gradients after each backward (about a third of the extra time 8 micro-batches took on 2 H100s,
// fixtures/parallel/h100x2_gpu_bound). Empty: unknown (pp_plan divides by M).
[[nodiscard]] inline std::vector<double> micro_batch_ratios(const Trace& t, const Device& g, const PpOptions& opt) {
  const int M = opt.micro();
  if (!opt.batch || *opt.batch < M || *opt.batch % M != 0) return {};
  const auto x = whatif::scale_batch(t, g, *opt.batch, *opt.batch / M);  // g: for its notes only
  std::vector<double> r(t.kernels.size(), 1.0);
  for (std::size_t k = 0; k < r.size(); ++k)
    if (t.kernels[k].duration_us > 0) r[k] = x.trace.kernels[k].duration_us / t.kernels[k].duration_us;
  return r;
}

// Gradient accumulation over micro-batches: from the second micro-batch on, each backward adds its gradients
// into those of the micro-batches before (AccumulateGrad's in-place add: the stored gradient and the new one
// read, the sum written, in the parameters' type), which the one-GPU step never does.
[[nodiscard]] inline double accumulation_us(double parameter_bytes, const Device& d) {
  return roofline_sustained(0, 3 * parameter_bytes, Precision::fp32, d).memory_us;
}

// Cuts the step into stages and sums each stage's host work and (shrunk) kernel time per micro-batch.
// `kernel_us`: one duration per kernel of `t` on the destination; `micro_ratio`: micro_batch_ratios (empty:
// every kernel's time over M, no shorter than a small kernel's). Throws habitat::error where the model has
// fewer repeated blocks than stages.
[[nodiscard]] inline PpPlan pp_plan(const Trace& t, const StepProgram& p, const std::vector<double>& kernel_us, const PpOptions& opt,
                                    const std::vector<double>& micro_ratio = {}) {
  const comm::FsdpPlan blocks = comm::fsdp_plan(t);  // throws without repeated blocks
  const int S = opt.world_size, B = static_cast<int>(blocks.units.size()), M = opt.micro();
  if (S < 2) throw make_error(t.source, "--parallel", "pipeline parallel needs --world-size of 2 or more GPUs (one stage each)");
  if (B < S)
    throw make_error(t.source, "--parallel",
                     "the model has " + std::to_string(B) + " repeated blocks, too few to cut into " + std::to_string(S) + " pipeline stages");
  if (M < 1 || M > 4096) throw make_error(t.source, "--parallel", "microbatches must be from 1 to 4096");
  PpPlan plan;
  plan.stages = S;
  plan.microbatches = M;
  plan.blocks = B;
  plan.stage.resize(S);
  for (int s = 0, b = 0; s < S; ++s) {  // equal block counts, the remainder to the first stages
    plan.stage[s].first_block = b;
    plan.stage[s].blocks = B / S + (s < B % S ? 1 : 0);
    b += plan.stage[s].blocks;
  }
  // Trace times of the cuts. Forward: the first parameter's use starts stage 0, each stage's first block the
  // next. Backward (in reverse): it starts where forward ends; a stage's backward ends when the block before
  // its first has all its gradients; the optimizer follows stage 0's.
  const double forward_from = *std::min_element(blocks.forward_us.begin(), blocks.forward_us.end());
  std::vector<double> fwd(S + 1), bwd(S + 1);  // stage s: [fwd[s], fwd[s+1]) and [bwd[s+1], bwd[s])
  fwd[0] = forward_from;
  for (int s = 1; s < S; ++s) fwd[s] = blocks.units[plan.stage[s].first_block].forward_us;
  fwd[S] = bwd[S] = blocks.backward_start_us;
  for (int s = 1; s < S; ++s) bwd[s] = blocks.units[plan.stage[s].first_block - 1].backward_us;
  const double optimizer_from = t.optimizer_steps.empty() ? 1e300 : t.optimizer_steps.back().start_us;
  bwd[0] = std::min(optimizer_from, 1e300);
  plan.cuts_us.assign(fwd.begin(), fwd.end());
  plan.cuts_us.insert(plan.cuts_us.end(), bwd.begin(), bwd.end());

  // Each stage's parameters: its blocks', and the rest with the first stage.
  double total_bytes = blocks.parameter_bytes();
  for (int s = 0; s < S; ++s)
    for (int b = plan.stage[s].first_block; b < plan.stage[s].first_block + plan.stage[s].blocks; ++b)
      plan.stage[s].parameter_bytes += blocks.units[b].bytes;
  double in_blocks = 0;
  for (const auto& st : plan.stage) in_blocks += st.parameter_bytes;
  plan.stage[0].parameter_bytes += total_bytes - in_blocks;

  // Where a moment of the trace falls: -1 before the first forward, s in [0, S) stage s's forward, S + s its
  // backward, 2S the optimizer and after.
  auto region = [&](double at) {
    if (at < fwd[0]) return -1;
    if (at < fwd[S]) return static_cast<int>(std::upper_bound(fwd.begin(), fwd.end(), at) - fwd.begin()) - 1;
    if (at >= bwd[0]) return 2 * S;
    int s = S - 1;  // bwd falls with s: the stage whose [bwd[s+1], bwd[s]) holds it
    while (s > 0 && at >= bwd[s]) --s;
    return S + s;
  };
  auto share = [&](const PpStage& st) { return total_bytes > 0 ? st.parameter_bytes / total_bytes : 1.0 / S; };
  auto add = [&](int r, double host, double gpu, double whole) {
    if (r < 0) {
      plan.before_us += std::max(host, whole);
    } else if (r < S) {
      plan.stage[r].forward_host_us += host, plan.stage[r].forward_gpu_us += gpu;
    } else if (r < 2 * S) {
      plan.stage[r - S].backward_host_us += host, plan.stage[r - S].backward_gpu_us += gpu;
    } else {  // the optimizer and what follows it: each stage's share of the parameters
      for (auto& st : plan.stage) st.optimizer_host_us += host * share(st), st.optimizer_gpu_us += whole * share(st);
    }
  };
  auto shrunk = [&](int k) {
    return micro_ratio.empty() ? std::max(std::min(kernel_us[k], ddp_small_kernel_us), kernel_us[k] / M) : kernel_us[k] * micro_ratio[k];
  };
  for (const auto& item : p.items) {
    double gpu = 0, whole = 0;
    for (const int k : item.kernels) gpu += shrunk(k), whole += kernel_us[k];
    add(region(item_time(t, p, item)), opt.step_cost ? 0 : item.work_us + item.call_us, gpu, whole);
  }
  if (opt.step_cost) {  // each region's records at the host's cost per record (the step's constant once, before)
    std::vector<StepCounts> counts(2 * S + 2);
    for (const auto& op : t.ops) count_record(counts[region(op.start_us) + 1], op);
    for (const auto& call : t.calls) count_record(counts[region(call.start_us) + 1], call);
    const RecordCount& rc = opt.step_cost->unprofiled;
    for (int r = -1; r <= 2 * S; ++r) add(r, rc.at(counts[r + 1]) - (r < 0 ? 0 : rc.per_step_us), 0, 0);
  }
  plan.activation_bytes = S > 1 ? detail::input_bytes_at(t, fwd[1]) / M : 0;
  return plan;
}

struct PpStepTimes {
  double period_us = 0;
  double busiest_gpu_us = 0, busiest_host_us = 0, p2p_us = 0, bubble_share = 0;
  std::vector<double> step_end_us;  // when each simulated step's last GPU work ends, from an idle start
};

// One micro-batch's activation (or its gradient) sent from one stage to the next: the link's latency and its bytes.
[[nodiscard]] inline double pp_send_us(const PpPlan& plan, const comm::Topology& topo) {
  const double gbps = topo.nodes() > 1 ? std::min(topo.intra_gbps, topo.inter_gbps > 0 ? topo.inter_gbps : topo.intra_gbps) : topo.intra_gbps;
  return p2p_latency_us + (gbps > 0 ? plan.activation_bytes / (gbps * 1e3) : 0);
}

// The schedule's host cost of one action on the destination host.
[[nodiscard]] inline double pp_action_us(const PpOptions& opt, double host_scale) {
  return (opt.per_action_us ? *opt.per_action_us : torch_pp_costs.per_action_us) * host_scale;
}

struct PpAction {
  bool forward;
  int micro;
};

// Each stage's actions in the order its host issues them (GPipe: every forward, then every backward; 1F1B:
// S - s forwards, then one backward and one forward in turn, then the remaining backwards).
[[nodiscard]] inline std::vector<std::vector<PpAction>> pp_order(int S, int M, PpSchedule schedule) {
  std::vector<std::vector<PpAction>> order(S);
  for (int s = 0; s < S; ++s) {
    auto& o = order[s];
    if (schedule == PpSchedule::gpipe) {
      for (int m = 0; m < M; ++m) o.push_back({true, m});
      for (int m = 0; m < M; ++m) o.push_back({false, m});
    } else {
      const int warm = std::min(M, S - s);
      int f = 0, b = 0;
      for (; f < warm; ++f) o.push_back({true, f});
      while (b < M) {
        o.push_back({false, b++});
        if (f < M) o.push_back({true, f++});
      }
    }
  }
  return order;
}

// The schedule played out over back-to-back steps. Each rank's host runs its actions in order (pp_order)
// without waiting for other ranks: a received tensor is waited for on the GPU stream
// (NCCL's wait), not on the host. An action's kernels start once its host has begun issuing them, the
// rank's GPU is free and its input has arrived, and end no sooner than its host has issued the last of them.
// After its last backward a rank runs its optimizer and starts the next step, with no barrier between ranks,
// so one step's drain overlaps the next one's fill. The period is the steady state's: the last of several
// steps, from the rank whose GPU ends it last (what CUDA events on the stream measure).
[[nodiscard]] inline PpStepTimes pp_step(const PpPlan& plan, const comm::Topology& topo, PpSchedule schedule, double action_us, int steps = 4) {
  const int S = plan.stages, M = plan.microbatches;
  const double send = pp_send_us(plan, topo);
  const auto order = pp_order(S, M, schedule);
  std::vector<double> host(S, 0), gpu(S, 0), step_end(std::max(steps, 2), 0);
  for (int step = 0; step < static_cast<int>(step_end.size()); ++step) {
    for (int s = 0; s < S; ++s) host[s] += plan.before_us, gpu[s] = std::max(gpu[s], host[s]);
    std::vector<std::vector<double>> f_end(S, std::vector<double>(M, -1)), b_end(S, std::vector<double>(M, -1));
    std::vector<std::size_t> next(S, 0);
    for (bool progress = true; progress;) {
      progress = false;
      for (int s = 0; s < S; ++s) {
        while (next[s] < order[s].size()) {
          const PpAction a = order[s][next[s]];
          double input = 0;  // when its input is on this GPU
          if (a.forward && s > 0) {
            if (f_end[s - 1][a.micro] < 0) break;
            input = f_end[s - 1][a.micro] + send;
          } else if (!a.forward) {
            if (f_end[s][a.micro] < 0) break;
            if (s + 1 < S) {
              if (b_end[s + 1][a.micro] < 0) break;
              input = b_end[s + 1][a.micro] + send;
            }
          }
          const PpStage& st = plan.stage[s];
          const double issued_from = host[s];
          host[s] += (a.forward ? st.forward_host_us : st.backward_host_us) + action_us;
          const double start = std::max({gpu[s], issued_from, input});
          gpu[s] = std::max(start + (a.forward ? st.forward_gpu_us : st.backward_gpu_us), host[s]);
          (a.forward ? f_end : b_end)[s][a.micro] = gpu[s];
          ++next[s];
          progress = true;
        }
      }
    }
    for (int s = 0; s < S; ++s) {
      const double from = host[s];
      host[s] += plan.stage[s].optimizer_host_us;
      gpu[s] = std::max(std::max(gpu[s], from) + plan.stage[s].optimizer_gpu_us, host[s]);
      step_end[step] = std::max(step_end[step], gpu[s]);
    }
  }
  PpStepTimes out;
  out.period_us = step_end.back() - step_end[step_end.size() - 2];
  out.step_end_us = step_end;
  double work = 0;  // the busiest rank's own time, host and GPU overlapping
  for (const auto& st : plan.stage) {
    out.busiest_gpu_us = std::max(out.busiest_gpu_us, M * (st.forward_gpu_us + st.backward_gpu_us) + st.optimizer_gpu_us);
    out.busiest_host_us = std::max(out.busiest_host_us, M * (st.forward_host_us + st.backward_host_us + 2 * action_us) + st.optimizer_host_us);
    work = std::max(work, plan.before_us + M * (std::max(st.forward_host_us + action_us, st.forward_gpu_us) +
                                                std::max(st.backward_host_us + action_us, st.backward_gpu_us)) +
                              std::max(st.optimizer_host_us, st.optimizer_gpu_us));
  }
  out.p2p_us = S > 1 ? 2.0 * M * send : 0;
  out.bubble_share = out.period_us > 0 ? 1 - work / out.period_us : 0;
  if (out.bubble_share < 1e-9) out.bubble_share = 0;  // no bubble (rounding: the busiest rank's work is the period)
  return out;
}

struct PpPrediction {
  Timeline single, step;
  PpPlan plan;
  PpStepTimes times;
  comm::Topology topology;
  std::vector<std::string> assumptions;
};

[[nodiscard]] inline const char* schedule_name(PpSchedule s) { return s == PpSchedule::gpipe ? "GPipe" : "1F1B"; }

[[nodiscard]] inline PpPrediction predict_pp(const Trace& t, const StepProgram& program, const std::vector<double>& kernel_us, const Device& dest,
                                             double host_scale, const PpOptions& opt, const SimOptions& sim = {}) {
  PpPrediction out;
  out.topology = plan_topology(dest, opt);
  out.single = simulate(t, program, kernel_us, sim);
  out.plan = pp_plan(t, program, kernel_us, opt, micro_batch_ratios(t, dest, opt));
  const int M = out.plan.microbatches;
  for (auto& st : out.plan.stage) st.backward_gpu_us += (M - 1.0) / M * accumulation_us(st.parameter_bytes, dest);
  out.times = pp_step(out.plan, out.topology, opt.schedule, pp_action_us(opt, host_scale));
  out.step = out.single;
  out.step.period_us = out.step.first_step_us = out.times.period_us;
  out.step.gpu_active_us = out.step.gpu_busy_us = out.times.busiest_gpu_us;
  out.step.host_us = out.times.busiest_host_us;
  out.step.host_stall_us = std::max(0.0, out.times.period_us - out.times.busiest_gpu_us);
  out.step.comm_us = out.times.p2p_us;
  // Sends on the critical path leave their rank idle: no more of them is exposed than the bubble.
  out.step.comm_exposed_us = std::min(out.times.p2p_us, out.times.bubble_share * out.times.period_us);
  out.step.last_step.clear();
  out.step.critical_path.clear();
  out.assumptions = program.assumptions;
  out.assumptions.push_back("pipeline parallel (torch.distributed.pipelining, " + std::string(schedule_name(opt.schedule)) + "): " +
                            std::to_string(out.plan.blocks) + " repeated blocks in " + std::to_string(out.plan.stages) + " stages, " +
                            std::to_string(out.plan.microbatches) + " micro-batches" +
                            (opt.microbatches > 0 ? "" : " (the default: twice the stages; give microbatches=M)") +
                            "; the schedule's host cost per action as measured with torch 2.11 (on 2 and 4 H100s)");
  if (out.topology.nodes() > 1 || out.topology.ranks > 4)
    out.assumptions.push_back("extrapolated: pipeline parallel was validated on 2 and 4 GPUs of one NVLink node only");
  return out;
}

inline std::vector<std::string> compose_pp(PredictedTrace& p, const Trace& t, const StepProgram& program, const Device& dest, double host_scale,
                                           const PpOptions& opt, std::optional<int> batch = {}) {
  const PpPrediction f = predict_pp(t, program, kernel_durations(p), dest, host_scale, opt);
  DataParallel& dp = set_plan_step(p, f.single, f.step, f.topology);
  dp.plan = "Pipeline parallel (" + std::to_string(f.plan.stages) + " stages, " + std::to_string(f.plan.microbatches) + " micro-batches, " +
            schedule_name(opt.schedule) + ", bubble " + std::to_string(static_cast<int>(std::lround(100 * f.times.bubble_share))) + "%)";
  dp.data_replicas = 1;  // one batch per pipeline
  dp.collectives = "point-to-point sends";
  dp.counted = "stages";
  dp.buckets = f.plan.stages;
  set_throughput(p, dest, batch);
  return f.assumptions;
}

}  // namespace habitat::sim
