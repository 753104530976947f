#include <catch2/catch.hpp>

#include <set>

#include "fixtures.hpp"
#include "habitat/kineto/reader.hpp"
#include "habitat/predict/kernel_work.hpp"

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
