// The simulator on steps built by hand (every number known in advance) and on the recorded fixtures.
#include <catch2/catch.hpp>

#include <boost/json.hpp>

#include <fstream>
#include <limits>
#include <set>
#include <sstream>
#include <zlib.h>

#include "fixtures.hpp"
#include "gunzip.hpp"
#include "habitat/kineto/reader.hpp"
#include "habitat/sim/calibrate.hpp"
#include "habitat/sim/compose.hpp"

using namespace habitat;

namespace {

// One thread issues `n` launches, each `host_us` apart and `call_us` long, each of a kernel of `gpu_us`
// on stream 7; optionally a device synchronize at the end.
Trace synthetic(int n, double host_us, double call_us, double gpu_us, bool sync_at_end) {
  Trace t;
  t.source = "synthetic";
  double cpu = 0;
  for (int i = 0; i < n; ++i) {
    cpu += host_us;
    HostCall c{"cudaLaunchKernel", HostCallKind::launch, cpu, call_us, 1, i, -1, false};
    t.calls.push_back(c);
    Kernel k;
    k.name = "k" + std::to_string(i);
    k.stream = 7;
    k.call = i;
    k.correlation = i;
    k.start_us = cpu + call_us + 2;
    k.duration_us = gpu_us;
    t.kernels.push_back(k);
    cpu += call_us;
  }
  if (sync_at_end) {
    t.calls.push_back({"cudaDeviceSynchronize", HostCallKind::sync, cpu, 1, 1, n, -1, true});
    cpu += 1;
  }
  t.step_start_us = 0;
  t.step_duration_us = cpu;
  return t;
}

// One operation record `name` around each launch of t, starting 5 us before the call, `dur_us` long.
Trace with_op_records(Trace t, const std::string& name, double dur_us) {
  for (const auto& c : t.calls) {
    Operation op;
    op.name = name;
    op.start_us = c.start_us - 5;
    op.duration_us = dur_us;
    t.ops.push_back(op);
  }
  return t;
}

std::vector<double> recorded(const Trace& t) {
  std::vector<double> d;
  for (const auto& k : t.kernels) d.push_back(k.duration_us);
  return d;
}

using habitat::test::gunzip;

}  // namespace

TEST_CASE("a host-bound step runs at the host's pace, a GPU-bound one at the GPU's", "[sim]") {
  // 100 launches, 10 us of host work + 5 us call each: 1500 us of host per step.
  const Trace t = synthetic(100, 10, 5, 3, false);
  const auto p = sim::build_program(t, {});
  const auto host_bound = sim::simulate(t, p, recorded(t));
  CHECK(host_bound.period_us == Approx(1500).epsilon(1e-6));
  CHECK(host_bound.host_bound());
  CHECK(host_bound.gpu_busy_us == Approx(300).epsilon(1e-6));
  // Kernels of 40 us: the GPU needs 4000 us; back to back, the host runs ahead and the GPU sets the pace
  // (plus the queue gap between kernels, measured on the trace: none here, kernels never queued).
  std::vector<double> slow(t.kernels.size(), 40.0);
  const auto gpu_bound = sim::simulate(t, p, slow);
  CHECK_FALSE(gpu_bound.host_bound());
  CHECK(gpu_bound.period_us == Approx(100 * (40 + p.queue_gap_us)).epsilon(1e-6));
  CHECK(gpu_bound.gpu_active_us == Approx(4000));
  CHECK(gpu_bound.host_stall_us < 0.03 * gpu_bound.period_us);
}

TEST_CASE("a non-finite duration is an error naming the trace, not a NaN iteration", "[sim]") {
  const Trace t = synthetic(5, 10, 5, 3, false);
  const auto p = sim::build_program(t, {});
  std::vector<double> d(5, 3.0);
  d[2] = std::numeric_limits<double>::infinity();
  CHECK_THROWS_WITH(sim::simulate(t, p, d), Catch::Contains("synthetic") && Catch::Contains("not finite"));
}

TEST_CASE("a synchronize at the end of the step serializes steps: the period is one step from an idle GPU", "[sim]") {
  const Trace t = synthetic(50, 10, 5, 40, true);
  const auto p = sim::build_program(t, {});
  const auto tl = sim::simulate(t, p, recorded(t));
  CHECK(tl.period_us == Approx(tl.first_step_us).epsilon(1e-9));
  CHECK(tl.sync_wait_us > 0);
  // The last kernel can start only after the last launch: host 50 x 15 us, then the GPU's backlog.
  CHECK(tl.period_us >= 50 * 40);
}

TEST_CASE("the profiler's cost is removed from the host time, per record and per call", "[sim]") {
  Trace t = with_op_records(synthetic(10, 10, 5, 1, false), "aten::add", 9);
  const auto plain = sim::build_program(t, {});
  sim::HostModel h;
  h.profiler = {2, 1, 1};
  const auto less = sim::build_program(t, h);
  CHECK(plain.host_us == Approx(150));
  CHECK(less.host_us == Approx(150 - 10 * (2 + 1)));
  h.profiler.slowdown = 2;
  CHECK(sim::build_program(t, h).host_us == Approx((150 - 30) / 2.0));
  h.profiler = {};
  h.speed_ratio = 0.5;  // a destination host twice as fast
  CHECK(sim::build_program(t, h).host_us == Approx(75));
}

TEST_CASE("a launch call's own work beyond the profiler's most per record keeps its time: a driver loading code is not the profiler", "[sim]") {
  // Ten launches of 5 us; the second takes 6.5 ms instead, with the GPU idle (a public ROCm trace's hipLaunchKernel
  // loading code). The first kernel has started, so the call waits on no launch queue.
  Trace t = synthetic(10, 10, 5, 1, false);
  const double extra = 6500 - 5;
  t.calls[1].duration_us += extra;
  for (std::size_t i = 1; i < t.calls.size(); ++i) {
    if (i > 1) t.calls[i].start_us += extra;
    t.kernels[i].start_us += extra;
  }
  t.step_duration_us += extra;
  sim::HostModel h;
  h.profiler = {2, 1, 2};  // the slowdown halves what the records leave
  const auto p = sim::build_program(t, h);
  REQUIRE(p.queue_waits == 0);
  const double over = 6500 - sim::ProfilerCost::max_record_us;  // the call's own work, kept whole
  // The rest is halved as before: 10 gaps of 10 us, nine calls of 5 us and the long call's 90 us, less 10 x 1 us per call.
  CHECK(p.host_us == Approx(over + (100 + 45 + sim::ProfilerCost::max_record_us - 10) / 2.0));
  // Without the long call the step is the plain one, halved.
  CHECK(sim::build_program(synthetic(10, 10, 5, 1, false), h).host_us == Approx((150 - 10) / 2.0));
}

TEST_CASE("a kernel that waited for another stream keeps waiting for it when times change", "[sim]") {
  Trace t = synthetic(2, 10, 5, 100, false);
  // Kernel 1 on another stream started only when kernel 0 ended, well after its own launch.
  t.kernels[1].stream = 8;
  t.kernels[1].start_us = t.kernels[0].start_us + t.kernels[0].duration_us;
  const auto p = sim::build_program(t, {});
  REQUIRE(p.waits_for[1] == std::vector<int>{0});
  const auto tl = sim::simulate(t, p, {300, 10});
  // From an idle GPU kernel 1 ends 10 us after kernel 0; back to back, the next step's kernel 0 overlaps it.
  CHECK(tl.first_step_us == Approx(15 + p.launch_latency_us + 300 + 10));
  CHECK(tl.period_us == Approx(300 + p.queue_gap_us));
}

TEST_CASE("an event recorded on one stream and waited on by another orders their kernels, even where a slow host hid it", "[sim]") {
  // Launch k0 on stream 7, record an event, make stream 8 wait on it, launch k1 on stream 8. The host was
  // slow: k1 launched long after k0 ended, so the timing alone shows no wait.
  Trace t;
  t.source = "synthetic";
  t.calls = {{"cudaLaunchKernel", HostCallKind::launch, 10, 5, 1, 0, -1, false},
             {"cudaEventRecord", HostCallKind::event, 20, 1, 1, 1, -1, false},
             {"cudaStreamWaitEvent", HostCallKind::event, 30, 1, 1, 2, -1, false},
             {"cudaLaunchKernel", HostCallKind::launch, 200, 5, 1, 3, -1, false}};
  Kernel k0, k1;
  k0.stream = 7, k0.call = 0, k0.start_us = 17, k0.duration_us = 20;
  k1.stream = 8, k1.call = 3, k1.start_us = 207, k1.duration_us = 20;
  t.kernels = {k0, k1};
  t.step_duration_us = 210;
  const auto p = sim::build_program(t, {});
  REQUIRE(p.waits_for[1] == std::vector<int>{0});
  // A kernel 0 that now takes 500 us holds kernel 1 back, from an idle GPU.
  const auto tl = sim::simulate(t, p, {500, 20});
  CHECK(tl.first_step_us >= 15 + 500 + 20);
}

TEST_CASE("a wait the trace does not explain is kept as far as the recorded step needs it, and said", "[sim]") {
  // Kernel 2 started 5 ms after its launch, its stream and every other kernel allowed (a wait for another rank),
  // and a device synchronize waited for it: the host recorded a step of about 5.2 ms.
  Trace t = synthetic(4, 10, 5, 20, true);
  for (int i = 2; i < 4; ++i) t.kernels[i].start_us += 5000;
  t.step_duration_us = t.kernels[3].start_us + t.kernels[3].duration_us + 1;
  const auto unfitted = sim::build_program_unfitted(t, {});
  REQUIRE(unfitted.external_delay(2) == Approx(5000).margin(10));
  CHECK(unfitted.external_delay(3) == 0);  // it waited for kernel 2, on its stream
  std::vector<double> d;
  for (const auto& k : t.kernels) d.push_back(k.duration_us);
  CHECK(sim::simulate(t, unfitted, d).period_us > 5000);  // as found: every delay kept
  const auto p = sim::build_program(t, {});
  CHECK(sim::simulate(t, p, d).period_us == Approx(t.step_duration_us).epsilon(0.01));
  CHECK(p.external_note.find("1 GPU operation(s) started later") != std::string::npos);
  // Steps that overlap (a pipelined loop) are as long as the loop's period, not as their annotations.
  t.step_period_us = 100;
  CHECK(sim::build_program(t, {}).external_delay(2) == 0);
  t.step_period_us = 0;
  // A recorded step that does not need the delay (its kernels explain it) keeps none of it.
  t.step_duration_us = 100;
  const auto none = sim::build_program(t, {});
  CHECK(none.external_delay(2) == 0);
  CHECK(sim::simulate(t, none, d).period_us < 200);
  // Without a delay, no note and no change.
  const Trace plain = synthetic(4, 10, 5, 20, true);
  CHECK(sim::build_program(plain, {}).external_note.empty());
}

TEST_CASE("a full launch queue blocks the host", "[sim]") {
  const Trace t = synthetic(20, 1, 1, 100, false);
  const auto p = sim::build_program(t, {});
  sim::SimOptions shallow;
  shallow.queue_depth = 2;
  const auto tl = sim::simulate(t, p, recorded(t), shallow);
  CHECK(tl.queue_wait_us > 0);
  CHECK(sim::simulate(t, p, recorded(t)).queue_wait_us == 0);
}

TEST_CASE("Lin et al.'s five host overheads add up to the host time", "[sim]") {
  const Trace t = kineto::read_trace(test::fixture("h100", "resnet50_fp32_b32"));
  const auto p = sim::build_program(t, {});
  double sum = 0;
  for (double x : p.by_type) {
    CHECK(x >= 0);
    sum += x;
  }
  CHECK(sum == Approx(p.host_us).epsilon(1e-6));
  CHECK(p.by_type[static_cast<int>(sim::HostTime::launch_call)] > 0);
  CHECK(p.by_type[static_cast<int>(sim::HostTime::between_launches)] > 0);
}

TEST_CASE("with the profiler left in, the replay reproduces every recorded step", "[sim]") {
  // Nothing removed and the recorded kernel times: the simulated step is the profiled step. Checks the
  // launch links, stream order, inferred waits and syncs together, on 36 real traces.
  for (const char* set : {"kineto", "heldout"})
    for (const char* gpu : {"h100", "h200"})
      for (const auto& m : sim::read_manifest(std::string(HABITAT_FIXTURES) + "/" + set + "/" + gpu)) {
        INFO(m.trace_path);
        const Trace t = kineto::read_trace(m.trace_path);
        const auto tl = sim::simulate(t, sim::build_program(t, {}), recorded(t));
        CHECK(tl.period_us == Approx(t.iteration_us()).epsilon(0.05));
        CHECK(tl.gpu_active_us == Approx(t.gpu_active_us()));
      }
}

TEST_CASE("traces with missing or unusual host events still predict, saying what was assumed", "[sim]") {
  const std::string text = gunzip(test::fixture("h100", "dcgan_fp32_b128"));
  auto doc = boost::json::parse(text).as_object();
  const auto predicts = [](const std::string& path) {
    const Trace t = kineto::read_trace(path);
    std::vector<double> d = recorded(t);
    const auto tl = sim::simulate(t, sim::build_program(t, {}), d);
    CHECK(std::isfinite(tl.period_us));
    CHECK(tl.period_us >= tl.gpu_busy_us);
    CHECK(tl.period_us > 0);
    return t;
  };
  SECTION("no runtime events") {
    boost::json::array kept;
    for (const auto& e : doc.at("traceEvents").as_array())
      if (!e.is_object() || !e.as_object().contains("cat") || !e.at("cat").is_string() || e.at("cat").as_string() != "cuda_runtime")
        kept.push_back(e);
    doc["traceEvents"] = kept;
    const Trace t = predicts(test::write_temp("no_runtime.json", boost::json::serialize(doc)));
    REQUIRE_FALSE(t.warnings.empty());
    CHECK(t.warnings.front().find("no CUDA runtime events") != std::string::npos);
    CHECK(t.calls.size() < 100);  // the driver calls are all that is left
  }
  SECTION("foreign events and a second thread") {
    auto& ev = doc["traceEvents"].as_array();
    double lo = 0, hi = 0;  // the last step's window
    for (const auto& e : ev)
      if (e.is_object() && e.as_object().contains("name") && e.at("name").is_string() && e.at("name").as_string().starts_with("ProfilerStep#") &&
          e.at("cat").as_string() == "user_annotation") {
        lo = e.at("ts").to_number<double>();
        hi = lo + e.at("dur").to_number<double>();
      }
    REQUIRE(hi > lo);
    for (int i = 0; i < 50; ++i) {
      const double ts = lo + (hi - lo) * i / 50.0;
      ev.push_back({{"ph", "X"}, {"cat", "python_function"}, {"name", "train.py(12): step"}, {"pid", 1}, {"tid", 999}, {"ts", ts}, {"dur", 1.0}});
      ev.push_back({{"ph", "X"}, {"cat", "my_own_category"}, {"name", "x"}, {"pid", 1}, {"tid", 998}, {"ts", ts}, {"dur", 2.0}});
      ev.push_back({{"ph", "i"}, {"cat", "cpu_instant_event"}, {"name", "[memory]"}, {"pid", 1}, {"tid", 999}, {"ts", ts}});
      // a second thread's runtime calls (a data loader's pinned-memory thread, say)
      ev.push_back({{"ph", "X"}, {"cat", "cuda_runtime"}, {"name", "cudaHostAlloc"}, {"pid", 1}, {"tid", 997}, {"ts", ts + 3}, {"dur", 4.0},
                    {"args", {{"correlation", 90000000 + i}}}});
    }
    // Python records are counted within the step: one whose 'ts' is a string too; none without 'ts' or outside it.
    ev.push_back({{"ph", "X"}, {"cat", "python_function"}, {"name", "a"}, {"pid", 1}, {"tid", 999}, {"ts", std::to_string(lo + 1)}, {"dur", 1.0}});
    ev.push_back({{"ph", "X"}, {"cat", "python_function"}, {"name", "b"}, {"pid", 1}, {"tid", 999}, {"dur", 1.0}});
    ev.push_back({{"ph", "X"}, {"cat", "python_function"}, {"name", "c"}, {"pid", 1}, {"tid", 999}, {"ts", hi + 1e6}, {"dur", 1.0}});
    const Trace t = predicts(test::write_temp("foreign.json", boost::json::serialize(doc)));
    CHECK(t.python_records == 51);
    std::set<std::int64_t> threads;
    for (const auto& c : t.calls) threads.insert(c.thread);
    CHECK(threads.size() >= 2);
    bool said = false;
    for (const auto& w : t.warnings) said |= w.find("'my_own_category'") != std::string::npos && w.find("ignored") != std::string::npos;
    CHECK(said);
  }
}

TEST_CASE("the profiler's slowdown is bounded per record: an idle stretch is not the profiler's", "[sim]") {
  const sim::ProfilerCost p{2.0, 3.0, 1.6};
  // A short stretch between records: the per-record cost, then the slowdown divides what is left.
  CHECK(p.kept_share(100, 5, 2) == Approx((100 - 5) / 1.6 / 100));
  // Never below a tenth of the stretch before the slowdown.
  CHECK(p.kept_share(10, 50, 2) == Approx(1 / 1.6 / 10));
  // Eight seconds with three records (a Triton trace): at most the bound per record is taken.
  const double recorded = 8e6, kept = p.kept_share(recorded, 6, 3) * recorded;
  CHECK(recorded - kept <= 6 + 4 * sim::ProfilerCost::max_slowdown_us_per_record + 1e-6);
  CHECK(recorded - kept > 6);
  CHECK(p.kept_share(0, 0, 0) == 1.0);
}

TEST_CASE("the step's record counts pull a forward step's host time into their band, and leave training steps and idle stretches", "[sim]") {
  // 10 launches, each inside its own op record: 10 outermost ops and 10 enqueues, 150 us of host time.
  Trace t = with_op_records(synthetic(10, 10, 5, 1, false), "aten::add", 9);
  const auto n = sim::step_counts(t);
  CHECK(n.top_ops == 10);
  CHECK(n.nested_ops == 0);
  CHECK(n.enqueues == 10);
  CHECK(n.other_calls == 0);
  // Profiled, the host records 150 us; un-profiled such a step takes u us on the measured host: the estimate
  // is the geometric mean of u and 150 x u / p.
  auto cost = [](double u, double p) {
    sim::StepCost c;
    c.unprofiled = {0, u / 10, 0, 0, 0};
    c.profiled = {0, p / 10, 0, 0, 0};
    c.above = c.below = 0.2;
    return c;
  };
  CHECK(cost(40, 160).host_us(n, 150) == Approx(std::sqrt(40 * 150 * 40 / 160.0)));
  CHECK(cost(40, 20).host_us(n, 150) == Approx(std::sqrt(40 * 150.0)));  // the profiler never makes a step faster
  // A profiler session's first active step records more than the next ones (RecordCount::per_first_step_us): the
  // profiled count of a later step leaves that out; the un-profiled count has no such term.
  CHECK(n.first_steps == 1);  // a trace is read as its session's first step unless the reader saw one before it
  Trace later_step = t;
  later_step.first_of_session = false;
  const auto later = sim::step_counts(later_step);
  CHECK(later.first_steps == 0);
  auto first = cost(40, 160);
  first.profiled.per_first_step_us = 60;
  CHECK(first.profiled.at(n) == Approx(220));
  CHECK(first.profiled.at(later) == Approx(160));
  CHECK(first.unprofiled.at(later) == Approx(first.unprofiled.at(n)));
  CHECK(first.host_us(later, 150) == Approx(std::sqrt(40 * 150 * 40 / 160.0)));
  CHECK(first.host_us(n, 150) == Approx(std::sqrt(40 * 150 * 40 / 220.0)));
  sim::HostModel h;
  h.step_cost = cost(40, 160);  // estimate 38.7 us: the recorded 150 is pulled to 46.5
  auto p = sim::build_program(t, h);
  CHECK(p.counted_host_us == Approx(std::sqrt(40 * 150 * 0.25)));
  CHECK(p.host_us == Approx(1.2 * p.counted_host_us));
  CHECK(p.count_scale == Approx(p.host_us / 150));
  double by_type = 0;
  for (const double x : p.by_type) by_type += x;
  CHECK(by_type == Approx(p.host_us));  // Lin et al.'s overheads still add up
  h.step_cost = cost(150, 150);  // estimate 150 us: within the band, left alone
  CHECK(sim::build_program(t, h).host_us == Approx(150));
  h.step_cost = cost(400, 400);  // estimate 245 us: raised to 0.8 x 245
  CHECK(sim::build_program(t, h).host_us == Approx(0.8 * std::sqrt(400 * 150.0)));
  h.speed_ratio = 0.5;  // on a host twice as fast, half of it
  CHECK(sim::build_program(t, h).host_us == Approx(0.4 * std::sqrt(400 * 150.0)));
  h.speed_ratio = 1;

  // A long stretch with no record in it is the program's own work beyond the profiler's longest stall
  // (ProfilerCost::max_stall_us): kept as recorded, out of the estimate; the rest is scaled.
  Trace idle = t;
  for (std::size_t i = 5; i < idle.calls.size(); ++i) idle.calls[i].start_us += 5000;
  for (std::size_t i = 5; i < idle.ops.size(); ++i) idle.ops[i].start_us += 5000;
  for (std::size_t i = 5; i < idle.kernels.size(); ++i) idle.kernels[i].start_us += 5000;
  idle.step_duration_us += 5000;
  h.step_cost = cost(40, 160);
  const auto q = sim::build_program(idle, h);
  const double program = 5005 - sim::ProfilerCost::max_stall_us;
  // (the profiler's allowance of the stretch stays with the recorded time the estimate scales)
  CHECK(q.counted_host_us == Approx(std::sqrt(40 * (150 + 5000 - program) * 0.25)));
  CHECK(q.host_us == Approx(program + 1.2 * q.counted_host_us));

  // The same at the end of the step: a record-free tail is the program's own beyond the profiler's stall.
  Trace tail = t;
  tail.step_duration_us += 5000;
  const auto r = sim::build_program(tail, h);
  CHECK(r.host_us == Approx(5000 - sim::ProfilerCost::max_stall_us + 1.2 * r.counted_host_us));

  // A training step is not counted: its Python work that records nothing is not in the counts.
  Trace train = t;
  train.ops[9].name = "autograd::engine::evaluate_function: AddBackward0";
  train.ops[9].backward = true;
  CHECK_FALSE(sim::counted_step(train));
  CHECK(sim::build_program(train, h).host_us == Approx(150));
  // Nor a trace without records to count.
  Trace bare = t;
  bare.ops.clear();
  CHECK(sim::build_program(bare, h).host_us == Approx(150));
}

TEST_CASE("the count is fitted by non-negative least squares", "[sim]") {
  // y = 2 a + 3 b exactly, and a column that would want a negative coefficient is dropped.
  std::vector<std::array<double, 3>> x;
  std::vector<double> y;
  for (int i = 1; i <= 6; ++i) {
    const double a = i, b = 7 - i;
    x.push_back({a, b, 0.0});
    y.push_back(2 * a + 3 * b);
  }
  auto b = sim::nonnegative_least_squares(x, y);
  REQUIRE(b);
  CHECK((*b)[0] == Approx(2));
  CHECK((*b)[1] == Approx(3));
  CHECK((*b)[2] == 0);
  for (std::size_t i = 0; i < y.size(); ++i) {  // y = 2 a + 3 b - c would fit exactly with c < 0: c is pinned to 0
    x[i][2] = x[i][0] * x[i][0];
    y[i] = 2 * x[i][0] + 3 * x[i][1] - x[i][2];
  }
  b = sim::nonnegative_least_squares(x, y);
  REQUIRE(b);
  CHECK((*b)[0] >= 0);
  CHECK((*b)[1] >= 0);
  CHECK((*b)[2] == 0);
}

TEST_CASE("the origin says whether its step trains or only runs forward", "[sim]") {
  Trace t = synthetic(3, 10, 5, 1, false);
  CHECK(sim::step_kind(t).empty());  // no operations: nothing to tell
  Operation op;
  op.name = "aten::add";
  op.start_us = 1;
  op.duration_us = 2;
  t.ops.push_back(op);
  CHECK(sim::step_kind(t) == "forward-only");
  CHECK(sim::origin_timeline(t, {}).step_kind == "forward-only");
  op.name = "autograd::engine::evaluate_function: AddBackward0";
  op.backward = true;
  t.ops.push_back(op);
  CHECK(sim::step_kind(t) == "training");
  CHECK(sim::origin_timeline(t, {}).step_kind == "training");
}

TEST_CASE("the counts never pull a step below what the profiler can explain away", "[sim]") {
  // Three ops in 5 ms, one of them 5 ms long (an allocation inside it): the counts say 30 us, but the
  // profiler adds at most a bounded cost per record, and the rest of that record is the op's own work.
  Trace t = with_op_records(synthetic(3, 10, 5, 1, false), "aten::empty", 4);
  t.calls[2].start_us += 5000;  // the last op's 5 ms before its call, inside its record
  t.ops[2].start_us = t.calls[1].start_us + 10;
  t.ops[2].duration_us = 5000;
  t.kernels[2].start_us += 5000;
  t.step_duration_us += 5000;
  sim::HostModel h;
  sim::StepCost c;
  c.unprofiled = {0, 4, 0, 0, 0};
  c.profiled = {0, 16, 0, 0, 0};
  c.above = c.below = 0.2;
  h.step_cost = c;
  const auto p = sim::build_program(t, h);
  CHECK(p.record_work_us == Approx(5000 - sim::ProfilerCost::max_record_us));  // the record holds no other
  CHECK(p.host_us == Approx(p.record_work_us));
  CHECK(p.host_us > 10 * p.counted_host_us);
}

TEST_CASE("a CUDA graph starts running while its launch call still enqueues it (as the trace shows)", "[sim]") {
  // One cudaGraphLaunch of 1000 us at 100 us whose 10 kernels of 300 us start 100 us into the call, back to back,
  // then a synchronize: the step is 100 + 100 + 3000 us (+ the sync's 1 us), not the call's 1000 us before any kernel.
  Trace t;
  t.source = "synthetic graph";
  t.calls.push_back({"cudaGraphLaunch", HostCallKind::graph_launch, 100, 1000, 1, 0, -1, false});
  for (int i = 0; i < 10; ++i) {
    Kernel k;
    k.name = "graph_kernel" + std::to_string(i);
    k.stream = 7;
    k.call = 0;
    k.correlation = 0;
    k.start_us = 200 + 300 * i;
    k.duration_us = 300;
    t.kernels.push_back(k);
  }
  t.calls.push_back({"cudaDeviceSynchronize", HostCallKind::sync, 1100, 2100, 1, 1, -1, true});
  t.step_start_us = 0;
  t.step_duration_us = 3201;
  const auto p = sim::build_program(t, {});
  REQUIRE(p.items.front().gpu_lead_share == Approx(0.1));
  const auto tl = sim::simulate(t, p, recorded(t));
  CHECK(tl.period_us == Approx(3201 + 9 * p.queue_gap_us).margin(2));  // the stream's queue gap between its kernels
  CHECK(tl.period_us < 100 + 1000 + 3000);                            // not the whole call before the first kernel
  // A kernel launch returns before its kernel starts: its share stays 1 (the launch latency after the call).
  const Trace plain = synthetic(5, 10, 5, 3, false);
  for (const auto& item : sim::build_program(plain, {}).items) CHECK(item.gpu_lead_share == 1);
}
