#include <algorithm>
#include <catch2/catch.hpp>

#include <set>

#include "fixtures.hpp"
#include "gunzip.hpp"
#include "habitat/kineto/reader.hpp"
#include "habitat/predict/kernel_work.hpp"
#include "habitat/sim/step_program.hpp"

using namespace habitat;

TEST_CASE("every fixture yields one iteration with linked kernels", "[kineto]") {
  for (const char* w : test::workloads)
    for (const char* gpu : {"h100", "h200"}) {
      INFO(gpu << "/" << w);
      const Trace t = kineto::read_trace(test::fixture(gpu, w));
      CHECK(t.step_name == "ProfilerStep#3");
      CHECK(t.kernels.size() > 200);
      CHECK(t.device_props);
      CHECK(t.device_props->sms == 132);
      std::size_t linked = 0;
      for (const auto& k : t.kernels) {
        linked += k.op >= 0;
        // launched inside the step window; may finish after it
        CHECK(k.start_us >= t.step_start_us);
      }
      CHECK(linked >= t.kernels.size() * 95 / 100);
      CHECK(t.gpu_active_us() > 0);
      CHECK(t.iteration_us() >= t.step_duration_us - 0.01);  // timestamps are ~1e12 us: rounding
    }
}

TEST_CASE("kernels link to their innermost op and backward ops link to forward ops", "[kineto]") {
  const Trace t = kineto::read_trace(test::fixture("h100", "encoder_fp32_b16"));
  std::set<std::string> gemm_ops;
  for (const auto& k : t.kernels)
    if (k.name.find("gemm") != std::string::npos && k.op >= 0) gemm_ops.insert(t.ops[k.op].name);
  CHECK(gemm_ops.count("aten::addmm") + gemm_ops.count("aten::mm") + gemm_ops.count("aten::bmm") > 0);
  std::size_t backward_with_forward = 0, backward = 0;
  for (const auto& op : t.ops)
    if (op.backward && op.name.find("Backward") != std::string::npos && !op.name.starts_with("autograd::")) {
      ++backward;
      if (op.forward >= 0) {
        ++backward_with_forward;
        CHECK_FALSE(t.ops[op.forward].backward);
        CHECK(t.ops[op.forward].sequence == op.sequence);
      }
    }
  CHECK(backward > 10);
  CHECK(backward_with_forward >= backward * 9 / 10);
}

TEST_CASE("shapes and dtypes of operations are read", "[kineto]") {
  const Trace t = kineto::read_trace(test::fixture("h100", "encoder_bf16_b32"));
  bool found = false;
  for (const auto& op : t.ops)
    if (op.name == "aten::addmm" && op.inputs.size() >= 3 && op.inputs[1].dtype == "c10::BFloat16") {
      found = true;
      CHECK(op.inputs[1].shape.size() == 2);
    }
  CHECK(found);
  // Most of the GPU time gets a work estimate from shapes.
  const auto work = kernel_work(t);
  double covered = 0;
  for (std::size_t i = 0; i < t.kernels.size(); ++i) covered += work[i].source != WorkSource::unknown ? t.kernels[i].duration_us : 0;
  CHECK(covered / t.gpu_active_us() > 0.9);
}

TEST_CASE("a chosen step is used and a missing step is named", "[kineto]") {
  const std::string f = test::fixture("h200", "dcgan_fp32_b128");
  CHECK(kineto::read_trace(f, {3, {}}).step_name == "ProfilerStep#3");
  CHECK_THROWS_WITH(kineto::read_trace(f, {7, {}}), Catch::Contains("no ProfilerStep#7") && Catch::Contains("has 3"));
}

// Traces recorded without a profiler schedule (no ProfilerStep#N): the whole trace is one step, said in a
// warning. Our fixtures with their ProfilerStep annotation removed read the same kernels and operations, and
// simulate the same iteration within 2% (measured: 0.5-1.5% on the 18 H100 training fixtures).
#include <boost/json.hpp>
#include <zlib.h>

#include "builtin_data.hpp"
#include "habitat/sim/compose.hpp"

namespace {
using habitat::test::gunzip;
}  // namespace

TEST_CASE("a trace without ProfilerStep is read as one step (asked for) and predicts like the same trace with it") {
  for (const char* w : {"resnet50_fp32_b32", "encoder_bf16_b32", "dcgan_fp32_b128"}) {
    const std::string with = test::fixture("h100", w);
    auto doc = boost::json::parse(gunzip(with));
    auto& events = doc.as_object()["traceEvents"].as_array();
    const auto before = events.size();
    events.erase(std::remove_if(events.begin(), events.end(),
                                [](const boost::json::value& e) {
                                  const auto* n = e.as_object().if_contains("name");
                                  return n && n->is_string() && n->get_string().starts_with("ProfilerStep#");
                                }),
                 events.end());
    REQUIRE(events.size() < before);
    const std::string without = test::write_temp(std::string(w) + "_nostep.json", boost::json::serialize(doc));
    INFO(w);
    CHECK_THROWS_WITH(kineto::read_trace(without), Catch::Contains("--whole-trace"));
    const Trace a = kineto::read_trace(with), b = kineto::read_trace(without, {.whole_trace = true});
    CHECK(b.step_name == "the whole trace");
    CHECK(std::any_of(b.warnings.begin(), b.warnings.end(), [](const std::string& s) { return s.find("no ProfilerStep#N annotation") == 0; }));
    CHECK(a.kernels.size() == b.kernels.size());
    CHECK(a.ops.size() == b.ops.size());
    CHECK(b.gpu_active_us() == Approx(a.gpu_active_us()).epsilon(1e-9));
    const Device h100 = test::catalog().at("H100 SXM");
    const auto host = sim::host_model(test::hosts(), h100, h100);
    const double ia = sim::origin_timeline(a, host).timeline.period_us, ib = sim::origin_timeline(b, host).timeline.period_us;
    CHECK(ib == Approx(ia).epsilon(0.02));
  }
}

// PyTorch 1.9 and older wrote ProfilerStep#N as an operator (category "Operator"); a trace recorded without a
// schedule may still hold optimizer steps. Neither is taken silently: the error says what the trace has and the
// flag that reads it; with --infer-steps both are read as steps.
TEST_CASE("old-format ProfilerStep operators and optimizer-step iterations: refused with the fix, read with --infer-steps") {
  const std::string old_format = std::string(HABITAT_SHARED_DATA) + "/wild/kineto_v100dgxs_resnet50_w0.pt.trace.json.gz";
  const std::string no_steps = std::string(HABITAT_SHARED_DATA) + "/wild/param_rtx2080ti_resnet.json.gz";
  if (!std::filesystem::exists(old_format) || !std::filesystem::exists(no_steps)) {
    WARN("skipped: ../shared/data/wild is missing");
    return;
  }
  using Catch::Contains;
  CHECK_THROWS_WITH(kineto::read_trace(old_format), Contains("kineto_v100dgxs_resnet50_w0") && Contains("'Operator' events") &&
                                                         Contains("PyTorch 1.9") && Contains("--infer-steps"));
  CHECK_THROWS_WITH(kineto::read_trace(no_steps), Contains("no ProfilerStep#N annotation") && Contains("30 optimizer steps") &&
                                                      Contains("--infer-steps") && Contains("--whole-trace"));
  const Trace t = kineto::read_trace(old_format, {.infer_steps = true});
  CHECK(t.step_name.starts_with("ProfilerStep#"));
  CHECK(t.profiled_steps >= 2);
  CHECK(std::any_of(t.warnings.begin(), t.warnings.end(), [](const std::string& w) { return w.find("PyTorch 1.9") != std::string::npos; }));
  const Trace r = kineto::read_trace(no_steps, {.infer_steps = true});  // 30 Optimizer.step# annotations, no ProfilerStep
  CHECK(r.step_name.find("between optimizer steps") != std::string::npos);
  CHECK(r.profiled_steps == 29);
  CHECK(!r.kernels.empty());
  // --whole-trace takes all of it as one step, optimizer steps or not.
  const Trace w = kineto::read_trace(no_steps, {.whole_trace = true});
  CHECK(w.profiled_steps == 1);
  CHECK(w.kernels.size() > r.kernels.size());
}

namespace {
// Steps of one kernel each, 1000 us apart; the kernel of step i runs gpu_us[i], its annotation spans span_us[i] (900
// where not given). Each step is a ProfilerStep#N (N from `first`), or an annotation named `marker` where one is given.
std::string steps_trace(const std::vector<int>& gpu_us, const std::string& marker = "", std::size_t first = 1,
                        const std::vector<int>& span_us = {}) {
  std::string ev;
  for (std::size_t i = 0; i < gpu_us.size(); ++i) {
    const std::string t0 = std::to_string(1000 * i), corr = std::to_string(10 + i), n = std::to_string(i + first);
    if (i) ev += ",";
    ev += R"({"ph":"X","cat":"user_annotation","name":")" + (marker.empty() ? "ProfilerStep#" + n : marker) + R"(","pid":1,"tid":1,"ts":)" + t0 +
          R"(,"dur":)" + std::to_string(i < span_us.size() ? span_us[i] : 900) + "},";
    ev += R"({"ph":"X","cat":"cuda_runtime","name":"cudaLaunchKernel","pid":1,"tid":1,"ts":)" + std::to_string(1000 * i + 10) +
          R"(,"dur":5,"args":{"correlation":)" + corr + "}},";
    ev += R"({"ph":"X","cat":"kernel","name":"k","pid":0,"tid":7,"ts":)" + std::to_string(1000 * i + 20) + R"(,"dur":)" +
          std::to_string(gpu_us[i]) + R"(,"args":{"correlation":)" + corr + R"(,"grid":[1,1,1],"block":[128,1,1],"stream":7}})";
  }
  return R"({"traceEvents":[)" + ev + "]}";
}
}  // namespace

TEST_CASE("an outlier last step gives way to the most typical one, and says so", "[kineto]") {
  const auto path = test::write_temp("outlier_steps.json", steps_trace({200, 210, 190, 205, 400}));
  const Trace t = kineto::read_trace(path);
  CHECK(t.step_name == "ProfilerStep#4");  // 205 us: closest to the median (205), the last of the closest
  REQUIRE(!t.warnings.empty());
  CHECK(t.warnings.front().find("ProfilerStep#5, the last with GPU work") != std::string::npos);
  CHECK(t.warnings.front().find("--step 5") != std::string::npos);
  // Asked for, the last is read; a typical last step is read without a word.
  CHECK(kineto::read_trace(path, {.step = 5}).step_name == "ProfilerStep#5");
  const Trace typical = kineto::read_trace(test::write_temp("typical_steps.json", steps_trace({200, 210, 190, 205, 215})));
  CHECK(typical.step_name == "ProfilerStep#5");
  for (const auto& w : typical.warnings) CHECK(w.find("off the median") == std::string::npos);
}

// A host-bound step's one profiled sample can run slow all through (fixtures/steps/h200/run4): with three or more
// steps, a last step whose span on the host is an outlier gives way too, though its GPU work is typical.
TEST_CASE("a last step slow on the host gives way to the most typical one, and says so", "[kineto]") {
  // The session's first step (#1) is out of the median: it records the session's start.
  const auto path = test::write_temp("host_outlier_steps.json", steps_trace({50, 50, 50, 50, 50, 50}, "", 1, {300, 104, 96, 102, 99, 250}));
  const Trace t = kineto::read_trace(path);
  CHECK(t.step_name == "ProfilerStep#4");  // 102 us on the host: the median of #2-#6
  CHECK(t.step_duration_us == Approx(102));
  CHECK_FALSE(t.first_of_session);  // ProfilerStep#3 was recorded before it (sim::StepCounts::first_steps)
  REQUIRE(!t.warnings.empty());
  CHECK_THAT(t.warnings.front(), Catch::Contains("ProfilerStep#6, the last with GPU work, spans 250 us on the host") &&
                                     Catch::Contains("off the median of the 5 steps after their session's first (102 us)") &&
                                     Catch::Contains("--step 6"));
  CHECK(kineto::read_trace(path, {.step = 6}).step_name == "ProfilerStep#6");
  CHECK(kineto::read_trace(path, {.step = 1}).first_of_session);
  // Within 15% of the median span, the last is read without a word; with two steps after the first there is no
  // median to go by.
  const Trace close = kineto::read_trace(test::write_temp("host_close_steps.json", steps_trace({50, 50, 50, 50}, "", 1, {200, 100, 104, 112})));
  CHECK(close.step_name == "ProfilerStep#4");
  CHECK(kineto::read_trace(test::write_temp("host_three_steps.json", steps_trace({50, 50, 50}, "", 1, {200, 100, 160}))).step_name == "ProfilerStep#3");
  for (const auto& w : close.warnings) CHECK(w.find("off the median") == std::string::npos);
  CHECK(kineto::read_trace(test::write_temp("host_two_steps.json", steps_trace({50, 50}, "", 1, {100, 300}))).step_name == "ProfilerStep#2");
}

// ProfilerStep#0 is a profiler session's first step, which pays the profiler's start: said where it is the step read.
TEST_CASE("the profiler session's first step is read with a warning that it carries the profiler's start", "[kineto]") {
  const auto first_step = [](const Trace& t) {
    return std::any_of(t.warnings.begin(), t.warnings.end(), [](const std::string& w) { return w.find("session's first step") != std::string::npos; });
  };
  const Trace only = kineto::read_trace(test::write_temp("step0_only.json", steps_trace({200}, "", 0)));
  CHECK(only.step_name == "ProfilerStep#0");
  CHECK(first_step(only));
  const auto path = test::write_temp("step0_then_1.json", steps_trace({200, 205}, "", 0));
  const Trace later = kineto::read_trace(path);
  CHECK(later.step_name == "ProfilerStep#1");
  CHECK_FALSE(first_step(later));
  CHECK(first_step(kineto::read_trace(path, {.step = 0})));
  CHECK_FALSE(first_step(kineto::read_trace(test::write_temp("marker0.json", steps_trace({200}, "train_step", 0)), {.step_marker = "train_step"})));
}

// A user's own step annotation (--step-marker): our fixtures with ProfilerStep#N renamed to one name, as a
// record_function("train_step") around each iteration writes it, read the same step as the original.
TEST_CASE("a step marker of the user's names the steps: the same step as ProfilerStep, and a hint where it is missing", "[kineto]") {
  for (const char* w : {"resnet50_fp32_b32", "encoder_bf16_b32"}) {
    const std::string with = test::fixture("h100", w);
    auto doc = boost::json::parse(gunzip(with));
    std::size_t renamed = 0;
    for (auto& e : doc.as_object()["traceEvents"].as_array()) {
      auto* n = e.as_object().if_contains("name");
      if (n && n->is_string() && n->get_string().starts_with("ProfilerStep#")) *n = "train_step", ++renamed;
    }
    REQUIRE(renamed >= 1);
    const std::string marked = test::write_temp(std::string(w) + "_marked.json", boost::json::serialize(doc));
    INFO(w);
    // Without the flag the error names the recurring annotation and the flag that reads it.
    CHECK_THROWS_WITH(kineto::read_trace(marked), Catch::Contains("--step-marker") && Catch::Contains("'train_step' ("));
    const Trace a = kineto::read_trace(with), b = kineto::read_trace(marked, {.step_marker = "train_step"});
    CHECK(a.step_name == "ProfilerStep#3");
    CHECK(b.step_name == "'train_step' #1");  // the fixtures keep their one active step
    CHECK(b.profiled_steps == a.profiled_steps);
    CHECK(a.kernels.size() == b.kernels.size());
    CHECK(a.ops.size() == b.ops.size());
    CHECK(b.gpu_active_us() == Approx(a.gpu_active_us()).epsilon(1e-9));
    CHECK(b.step_duration_us == a.step_duration_us);
    CHECK(a.first_of_session);  // one active step: the session's first
    CHECK(b.first_of_session);
    // A marker the trace does not hold: the error says so and names what recurs.
    CHECK_THROWS_WITH(kineto::read_trace(marked, {.step_marker = "train"}),
                      Catch::Contains("no annotation or operator named 'train'") && Catch::Contains("'train_step' ("));
    // With a marker, the trace's own ProfilerStep#N are not steps.
    CHECK_THROWS_WITH(kineto::read_trace(with, {.step_marker = "ProfilerStep#2"}), Catch::Contains("no annotation or operator named 'ProfilerStep#2'"));
    const Trace c = kineto::read_trace(with, {.step_marker = "ProfilerStep#3"});
    CHECK(c.step_name == "'ProfilerStep#3' #1");
  }
  // Several occurrences: numbered in the file, the last with GPU work by default (a typical one where the last is
  // an outlier, said in the marker's words), --step picks one, and one the trace lacks names the marker.
  const auto path = test::write_temp("marker_steps.json", steps_trace({200, 210, 190, 205, 400}, "train_step"));
  const Trace t = kineto::read_trace(path, {.step_marker = "train_step"});
  CHECK(t.profiled_steps == 5);
  CHECK(t.step_name == "'train_step' #4");
  CHECK(std::any_of(t.warnings.begin(), t.warnings.end(), [](const std::string& w) { return w.starts_with("'train_step' #5, the last with GPU work"); }));
  const Trace first = kineto::read_trace(path, {.step = 1, .step_marker = "train_step"});
  CHECK(first.step_name == "'train_step' #1");
  CHECK(first.gpu_active_us() == Approx(200));
  CHECK_THROWS_WITH(kineto::read_trace(path, {.step = 9, .step_marker = "train_step"}), Catch::Contains("no 'train_step' #9"));
}

namespace {
// A loop without annotations: set-up operations, then `iterations` copies of the same top-level operations, each
// launching a kernel; `tail` adds operations after the loop.
std::string loop_trace(int iterations, const std::vector<std::string>& body, const std::vector<std::string>& tail = {}) {
  std::string ev = R"({"ph":"X","cat":"cpu_op","name":"aten::empty","pid":1,"tid":1,"ts":0,"dur":5},)"
                   R"({"ph":"X","cat":"cpu_op","name":"aten::uniform_","pid":1,"tid":1,"ts":10,"dur":5})";
  int t = 100, corr = 1;
  auto op = [&](const std::string& name) {
    const std::string c = std::to_string(corr++);
    ev += R"(,{"ph":"X","cat":"cpu_op","name":")" + name + R"(","pid":1,"tid":1,"ts":)" + std::to_string(t) + R"(,"dur":40})";
    ev += R"(,{"ph":"X","cat":"cuda_runtime","name":"cudaLaunchKernel","pid":1,"tid":1,"ts":)" + std::to_string(t + 10) +
          R"(,"dur":5,"args":{"correlation":)" + c + "}}";
    ev += R"(,{"ph":"X","cat":"kernel","name":"k","pid":0,"tid":7,"ts":)" + std::to_string(t + 20) +
          R"(,"dur":30,"args":{"correlation":)" + c + R"(,"grid":[1,1,1],"block":[128,1,1],"stream":7}})";
    t += 50;
  };
  for (int i = 0; i < iterations; ++i)
    for (const auto& name : body) op(name);
  for (const auto& name : tail) op(name);
  return R"({"traceEvents":[)" + ev + "]}";
}
}  // namespace

TEST_CASE("a loop without annotations: --infer-steps takes the repetitions of its top-level operations as steps", "[kineto]") {
  const auto path = test::write_temp("loop.json", loop_trace(4, {"aten::linear", "aten::relu", "aten::sum"}));
  CHECK_THROWS_WITH(kineto::read_trace(path), Catch::Contains("loop.json") && Catch::Contains("--infer-steps") &&
                                                  Catch::Contains("4 repetitions of its 3 top-level operations (from 'aten::linear')"));
  const Trace t = kineto::read_trace(path, {.infer_steps = true});
  CHECK(t.profiled_steps == 4);
  CHECK(t.step_name == "iteration 4 (repeated top-level operations)");
  CHECK(t.kernels.size() == 3);  // the last iteration's
  CHECK(t.ops.size() == 3);
  CHECK(t.gpu_active_us() == Approx(90));
  CHECK(std::any_of(t.warnings.begin(), t.warnings.end(), [](const std::string& w) { return w.find("4 repetitions") != std::string::npos; }));
  CHECK(kineto::read_trace(path, {.step = 1, .infer_steps = true}).kernels.size() == 3);
  // Two equal operations after varied ones are no loop: the error offers no repetition.
  const auto tail = test::write_temp("tail.json", loop_trace(1, {"aten::linear", "aten::relu", "aten::sum", "aten::mul"}, {"aten::add", "aten::add"}));
  CHECK_THROWS_WITH(kineto::read_trace(tail), !Catch::Contains("repetitions"));
  CHECK_THROWS_WITH(kineto::read_trace(tail, {.infer_steps = true}), Catch::Contains("--whole-trace"));
}

TEST_CASE("a trace names its recorder and the CUPTI tracker's trace loses no profiler cost", "[kineto]") {
  const std::string body = steps_trace({200, 210, 190});
  const std::string tracked = R"({"recorder":")" + std::string(cupti_tracker_name) + R"x( (libhabitat_cupti_track.so)",)x" + body.substr(1);
  const std::string other = R"({"recorder":"some other tool","traceEvents":[)" + body.substr(body.find('[') + 1);
  const std::string not_text = R"({"recorder":7,)" + body.substr(1);
  const Trace by_profiler = kineto::read_trace(test::write_temp("by_profiler.json", body));
  const Trace by_tracker = kineto::read_trace(test::write_temp("by_tracker.json", tracked));
  CHECK(by_profiler.recorder == Recorder::profiler);
  CHECK(by_tracker.recorder == Recorder::cupti_tracker);
  CHECK(kineto::read_trace(test::write_temp("by_other.json", other)).recorder == Recorder::profiler);
  CHECK(kineto::read_trace(test::write_temp("by_number.json", not_text)).recorder == Recorder::profiler);

  sim::HostModel host;
  host.profiler = {0, 0, 2.0};  // a profiler that doubles the host's time
  const auto kept = sim::build_program_unfitted(by_tracker, host), removed = sim::build_program_unfitted(by_profiler, host);
  REQUIRE(kept.recorded_host_us > 0);
  CHECK(kept.host_us == Approx(kept.recorded_host_us));
  CHECK(removed.host_us < 0.75 * removed.recorded_host_us);
  CHECK(std::any_of(kept.assumptions.begin(), kept.assumptions.end(), [](const std::string& a) { return a.find("CUPTI tracker") != std::string::npos; }));
}

// "Input Strides" give a GEMM's layout: nn.Linear's weight is read transposed (x @ W^T, "tn"), GPT-2's Conv1D
// weight (x @ W) and attention's scores times values are not, attention's q @ k^T is. Without strides the old
// rule stands (mm/addmm as nn.Linear, bmm plain); strides that do not match the shape are dropped.
#include "habitat/ops/trace_ops.hpp"
#include "habitat/predict/gemm_tile_predictor.hpp"

TEST_CASE("Input Strides are read and decide a GEMM's layout", "[kineto][gemm]") {
  const Trace gpt2 = kineto::read_trace(std::string(HABITAT_FIXTURES) + "/neusight_e2e/h100/gpt2_large-inf-1024-4.json.gz");
  const Trace bert = kineto::read_trace(std::string(HABITAT_FIXTURES) + "/neusight_e2e/h100/bert_large-inf-512-8.json.gz");
  auto layouts = [](const Trace& t, const char* op) {
    const auto shapes = gemm::op_shapes(t);
    std::set<bool> seen;
    for (std::size_t i = 0; i < t.ops.size(); ++i)
      if (t.ops[i].name == op && shapes[i]) seen.insert(shapes[i]->transposed_b);
    return seen;
  };
  CHECK(layouts(gpt2, "aten::addmm") == std::set<bool>{false});  // Conv1D: x @ W
  CHECK(layouts(bert, "aten::addmm") == std::set<bool>{true});   // nn.Linear: x @ W^T
  CHECK(layouts(gpt2, "aten::bmm") == std::set<bool>{false, true});  // scores @ v, q @ k^T
  for (const auto& op : gpt2.ops)
    for (const auto& in : op.inputs) CHECK((in.strides.empty() || in.strides.size() == in.shape.size()));

  auto one_mm = [](const std::string& strides) {
    const std::string args = R"("Input Dims":[[64,128],[128,256]],"Input type":["float","float"])" + strides;
    return R"({"traceEvents":[{"ph":"X","cat":"user_annotation","name":"ProfilerStep#1","pid":1,"tid":1,"ts":0,"dur":900},)"
           R"({"ph":"X","cat":"cpu_op","name":"aten::mm","pid":1,"tid":1,"ts":10,"dur":50,"args":{)" + args + R"(}},)"
           R"({"ph":"X","cat":"cuda_runtime","name":"cudaLaunchKernel","pid":1,"tid":1,"ts":20,"dur":5,"args":{"correlation":3}},)"
           R"({"ph":"X","cat":"kernel","name":"sm90_xmma_gemm","pid":0,"tid":7,"ts":30,"dur":40,"args":{"correlation":3,"grid":[8,1,1],"block":[128,1,1],"stream":7}}]})";
  };
  auto b_transposed = [&](const char* name, const std::string& strides) {
    const Trace t = kineto::read_trace(test::write_temp(name, one_mm(strides)));
    const auto q = ops::op_queries(t);
    REQUIRE(t.ops.size() == 1);
    REQUIRE(q[0]);
    return q[0]->b_transposed;
  };
  CHECK(b_transposed("mm_plain.json", R"(,"Input Strides":[[128,1],[256,1]])") == std::optional<bool>(false));
  CHECK_FALSE(gemm::layout_assumed(kineto::read_trace(test::write_temp("mm_plain.json", one_mm(R"(,"Input Strides":[[128,1],[256,1]])")))));
  CHECK(gemm::layout_assumed(kineto::read_trace(test::write_temp("mm_none.json", one_mm("")))));
  CHECK_FALSE(gemm::layout_assumed(gpt2));
  CHECK(b_transposed("mm_t.json", R"(,"Input Strides":[[128,1],[1,128]])") == std::optional<bool>(true));
  CHECK(b_transposed("mm_none.json", "") == std::nullopt);
  CHECK(b_transposed("mm_short.json", R"(,"Input Strides":[[128,1],[1]])") == std::nullopt);    // not one per dimension: dropped
  CHECK(b_transposed("mm_odd.json", R"(,"Input Strides":[[128,1],"x"])") == std::nullopt);      // not a list
  CHECK(b_transposed("mm_strided.json", R"(,"Input Strides":[[128,1],[512,2]])") == std::optional<bool>(false));  // copied to row-major
  CHECK(b_transposed("mm_expanded.json", R"(,"Input Strides":[[128,1],[1,0]])") == std::optional<bool>(false));   // expanded: copied
}

// with_stack=True adds a record per Python frame; the profiled step pays for each (the profiled count's
// per_python_record_us), so the reader counts those of the chosen step. The fixture holds 150, 59 of them inside
// its one ProfilerStep (counted from the JSON); the same step recorded without stacks has none.
TEST_CASE("Python function records of a with_stack trace are counted within the step", "[kineto][sim]") {
  const Trace stack = kineto::read_trace(test::fixture("h100", "op_relu_4k_stack", "steps"));
  const Trace plain = kineto::read_trace(test::fixture("h100", "op_relu_4k", "steps"));
  CHECK(stack.python_records == 59);
  CHECK(plain.python_records == 0);
  CHECK(sim::step_counts(stack).python_records == 59);
  CHECK(sim::step_counts(stack).top_ops == sim::step_counts(plain).top_ops);  // the same operators either way
  sim::RecordCount profiled{100, 20, 5, 3, 2};
  const double without = profiled.at(sim::step_counts(stack));
  profiled.per_python_record_us = 5;
  CHECK(profiled.at(sim::step_counts(stack)) == Approx(without + 59 * 5));
}
