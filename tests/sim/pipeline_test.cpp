// Pipeline parallel from a one-GPU trace: the stages cut from the trace, the schedules' order and bubble, and the
// predicted step against torch.distributed.pipelining's steps measured on 2 and 4 H100s
// (fixtures/parallel/h100x4pp), next to the single-GPU and single-GPU / N baselines.
#include <catch2/catch.hpp>

#include <cstdio>

#include "builtin_data.hpp"
#include "habitat/studies/parallel_study.hpp"

using namespace habitat;

namespace {

const std::string parallel_dir = std::string(HABITAT_FIXTURES) + "/parallel";

const report::ParallelFixture& fixture() {
  static const report::ParallelFixture f = report::ParallelFixture::h100pp(parallel_dir, test::catalog(), test::hosts());
  return f;
}

}  // namespace

TEST_CASE("pipeline stages from a one-GPU trace: equal blocks, all the work once, the bubble of each schedule", "[comm][pp]") {
  const auto& c = fixture().cases.at("gpt1024_bf16_b8");
  sim::PpOptions o;
  o.world_size = 2;
  o.microbatches = 1;
  const auto plan = sim::pp_plan(c.trace, c.program, c.us, o);
  REQUIRE(plan.blocks == 8);
  REQUIRE(plan.stage.size() == 2);
  CHECK(plan.stage[0].blocks == 4);
  CHECK(plan.stage[1].first_block == 4);
  // One micro-batch: the stages' work together is the one-GPU step's, once (host and kernels).
  double host = plan.before_us, gpu = 0;
  for (const auto& st : plan.stage)
    host += st.forward_host_us + st.backward_host_us + st.optimizer_host_us, gpu += st.forward_gpu_us + st.backward_gpu_us + st.optimizer_gpu_us;
  double program_host = 0;
  for (const auto& item : c.program.items) program_host += item.work_us + item.call_us;
  double kernels = 0;
  for (const double k : c.us) kernels += k;
  CHECK(host == Approx(program_host).epsilon(0.35));  // before_us counts max(host, kernels) of the first items
  CHECK(gpu <= kernels * 1.0001);
  CHECK(gpu >= 0.9 * kernels);
  // Both stages do real work; the activation crossing the cut is the residual stream of one micro-batch (fp32).
  for (const auto& st : plan.stage) {
    CHECK(st.forward_gpu_us > 0);
    CHECK(st.backward_gpu_us > st.forward_gpu_us);
  }
  CHECK(plan.activation_bytes == Approx(8.0 * 1024 * 1024 * 4));

  // The schedules on equal stages without host cost: GPipe and 1F1B both take (M + S - 1) stage times.
  sim::PpPlan even;
  even.stages = 4;
  even.microbatches = 8;
  even.stage.assign(4, sim::PpStage{});
  for (auto& st : even.stage) st.forward_gpu_us = 100, st.backward_gpu_us = 200;
  comm::Topology topo;
  topo.ranks = 4;
  topo.intra_gbps = 1e9;  // free links, but the latency
  for (const auto sched : {sim::PpSchedule::gpipe, sim::PpSchedule::one_f_one_b}) {
    const auto s = sim::pp_step(even, topo, sched, 0);
    INFO(sim::schedule_name(sched));
    CHECK(s.period_us >= (8 + 3) * 300.0);
    CHECK(s.period_us <= (8 + 3) * 300.0 + 2 * 3 * 8 * (sim::p2p_latency_us + 1));
    CHECK(s.bubble_share == Approx(1 - 8 * 300.0 / s.period_us));
  }
  // Host-bound stages: a rank's host never waits for another rank (received tensors are waited for on the
  // GPU), so the steady step is the busiest rank's own host time, with no bubble.
  sim::PpPlan host_bound = even;
  for (auto& st : host_bound.stage) st.forward_host_us = 100, st.backward_host_us = 200, st.forward_gpu_us = st.backward_gpu_us = 10;
  for (const auto sched : {sim::PpSchedule::gpipe, sim::PpSchedule::one_f_one_b}) {
    const auto s = sim::pp_step(host_bound, topo, sched, 50);
    INFO(sim::schedule_name(sched));
    CHECK(s.period_us == Approx(8 * (300.0 + 2 * 50)));
    CHECK(s.bubble_share < 0.01);
  }
  // Fewer stages than blocks is refused with the reason.
  sim::PpOptions too_many = o;
  too_many.world_size = 16;
  CHECK_THROWS_WITH(sim::pp_plan(c.trace, c.program, c.us, too_many), Catch::Contains("too few to cut into 16 pipeline stages"));
}

TEST_CASE("pipeline parallel on 2 and 4 H100s from the one-GPU H200 trace", "[comm][pp][accuracy]") {
  const auto& fx = fixture();
  const auto s = report::pp_study(fx);
  REQUIRE(s.rows.size() == 16);  // 2 workloads x {1F1B, GPipe} x {4, 8 micro-batches} x {2, 4 GPUs}
  std::printf("\nPipeline parallel (torch.distributed.pipelining) on 2 and 4 H100s from the one-GPU H200 traces; the H100 machine's host at "
              "%.2fx the recording host's time. Host cost per action: shipped %.0f us, fitted on all %.0f us. ms: measured median of runs "
              "[lowest, highest]\n",
              fx.host_ratio, sim::torch_pp_costs.per_action_us, s.median_action_us());
  std::printf("  %-16s %-12s %4s %8s %17s %8s %7s %8s %7s %8s %6s %8s\n", "workload", "plan", "GPUs", "measured", "[runs]", "habitat", "error",
              "LOO", "error", "1 GPU", "error", "bubble");
  for (const auto& r : s.rows)
    std::printf("  %-16s %-12s %4d %8.2f [%6.2f, %6.2f] %8.2f %+6.1f%% %8.2f %+6.1f%% %8.2f %+5.0f%% %7.0f%%\n", r.workload.c_str(), r.plan.c_str(),
                r.gpus, r.measured_ms, r.measured_lo_ms, r.measured_hi_ms, r.predicted_ms, 100 * r.error(), r.loo_ms, 100 * r.loo_error(),
                r.measured_single_ms, 100 * r.single_gpu_error(), 100 * r.bubble);
  std::printf("  mean |error|: habitat %.1f%% (leaving the workload out %.1f%%), single GPU %.1f%%, single GPU / N %.1f%%\n",
              100 * s.mean_abs(&report::PpRow::error), 100 * s.mean_abs(&report::PpRow::loo_error), 100 * s.mean_abs(&report::PpRow::single_gpu_error),
              100 * s.mean_abs(&report::PpRow::ideal_error));
  // The shipped constant is the fit's (rounded); the model beats both baselines, also leaving the workload out.
  CHECK(sim::torch_pp_costs.per_action_us == Approx(s.median_action_us()).epsilon(0.05));
  CHECK(s.mean_abs(&report::PpRow::loo_error) < 0.5 * s.mean_abs(&report::PpRow::single_gpu_error));
  CHECK(s.mean_abs(&report::PpRow::loo_error) < 0.5 * s.mean_abs(&report::PpRow::ideal_error));
  for (const auto& r : s.rows) {
    INFO(r.workload << " " << r.plan << " on " << r.gpus);
    CHECK(std::isfinite(r.predicted_ms));
    CHECK(r.predicted_ms >= r.predicted_single_ms / r.gpus);
  }
}
