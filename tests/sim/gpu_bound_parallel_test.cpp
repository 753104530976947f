// A GPU-bound step (gpt4096_bf16_b16) under pipeline, tensor and data parallelism on 2 H100s, predicted from
// its one-GPU trace (fixtures/parallel/h100x2_gpu_bound), next to the baselines a user has without habitat:
// the one-GPU step, and it / 2.
#include <catch2/catch.hpp>

#include <cstdio>
#include <map>
#include <string>

#include "builtin_data.hpp"
#include "habitat/studies/parallel_study.hpp"

using namespace habitat;

namespace {

// Each machine's step predicted from its own one-GPU trace.
const report::ParallelFixture& fixture(const std::string& machine) {
  static std::map<std::string, report::ParallelFixture> f;
  if (!f.count(machine))
    f.emplace(machine, report::ParallelFixture::h100x2_gpu_bound(std::string(HABITAT_FIXTURES) + "/parallel", test::catalog(), test::hosts(), machine));
  return f.at(machine);
}

// `split`: the plan splits one batch over the 2 GPUs (pipeline, tensor parallel); DDP and FSDP keep the batch per GPU,
// so their baseline is the one-GPU step alone.
void row(const char* plan, double predicted, double measured, double single, bool split = true) {
  std::printf("  %-22s %8.1f %8.1f %+7.1f%% %+8.1f%%", plan, measured, predicted, 100 * (predicted / measured - 1), 100 * (single / measured - 1));
  if (split) std::printf(" %+8.1f%%", 100 * (single / 2 / measured - 1));
  std::printf("\n");
}

}  // namespace

TEST_CASE("GPU-bound parallel steps on 2 H100s from the one-GPU trace: pipeline, tensor, data parallel and FSDP", "[comm][pp][tp][accuracy]") {
  const std::string machine = GENERATE(as<std::string>{}, "", "machine2");
  const auto& fx = fixture(machine);
  const auto& c = fx.cases.at("gpt4096_bf16_b16");
  REQUIRE(c.batch == 16);
  const double single = std::get<0>(fx.measured("gpt4096_bf16_b16", "n1"));
  const double predicted_single = sim::simulate(c.trace, c.program, c.us).period_us / 1e3;
  std::printf("gpt4096_bf16_b16 on 2 H100s%s (ms): measured | habitat | error | one GPU | one GPU / 2\n", machine.empty() ? "" : ", second machine");
  row("one GPU", predicted_single, single, single, false);
  CHECK(predicted_single == Approx(single).epsilon(0.03));
  // The recorded host waited for a full launch queue; none of that wait is host work.
  CHECK(c.program.queue_waits > 100);
  CHECK(c.program.host_us < 0.25 * single * 1e3);

  const auto pp = report::pp_study(fx);
  REQUIRE(pp.rows.size() == 4);
  for (const auto& r : pp.rows) {
    row(r.plan.c_str(), r.predicted_ms, r.measured_ms, r.measured_single_ms);
    INFO(r.plan);
    CHECK(std::abs(r.error()) < 0.06);
    CHECK(std::abs(r.error()) < std::abs(r.single_gpu_error()));
    CHECK(std::abs(r.error()) < std::abs(r.ideal_error()));
  }
  // GPU-bound, the schedules take the same time; 8 micro-batches more than 4 (parameter-sized work per micro-batch).
  auto pp_ms = [&](const std::string& plan) {
    for (const auto& r : pp.rows)
      if (r.plan == plan) return r.predicted_ms;
    FAIL("no row " << plan);
    return 0.0;
  };
  CHECK(pp_ms("pp_gpipe_m4") == Approx(pp_ms("pp_1f1b_m4")).epsilon(0.01));
  CHECK(pp_ms("pp_1f1b_m8") > pp_ms("pp_1f1b_m4"));

  const auto tp = report::tp_study(fx);
  REQUIRE(tp.rows.size() == 1);
  row("tensor parallel", tp.rows[0].predicted_ms, tp.rows[0].measured_ms, tp.rows[0].measured_single_ms);
  CHECK(std::abs(tp.rows[0].error()) < 0.06);

  sim::DdpOptions d;
  d.world_size = 2;
  const double ddp = sim::predict_ddp(c.trace, c.program, c.us, c.dest, c.host_scale, d).step.period_us / 1e3;
  const double ddp_measured = std::get<0>(fx.measured("gpt4096_bf16_b16", "ddp"));
  row("DDP", ddp, ddp_measured, single, false);
  CHECK(ddp == Approx(ddp_measured).epsilon(0.04));

  const auto fsdp = report::fsdp_study(fx);
  REQUIRE(fsdp.rows.size() == 1);
  row("FSDP full shard", fsdp.rows[0].predicted_ms, fsdp.rows[0].measured_ms, fsdp.rows[0].measured_single_ms, false);
  CHECK(std::abs(fsdp.rows[0].error()) < 0.08);
}
