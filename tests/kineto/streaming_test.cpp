// The streaming reader keeps only what the step it will read may need: the step it picks and what it
// reads of it must not depend on the order of the events in the file, and what it holds must not grow
// with the number of steps.
#include <catch2/catch.hpp>

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <random>
#include <string>
#include <vector>

#include "fixtures.hpp"
#include "habitat/kineto/reader.hpp"

using namespace habitat;

namespace {

enum class Order { annotations_first, annotations_after_events, gpu_first, shuffled };

// `steps` steps 1 ms apart, each with one operation (and a Python record around it), one launch and its kernel
// ("k<i>"); the last step launches nothing when `last_cpu_only`.
std::string steps_trace(int steps, Order order, bool last_cpu_only = false) {
  std::vector<std::string> cpu, gpu, annotations;
  for (int i = 1; i <= steps; ++i) {
    const long t0 = 1000L * i;
    const std::string s = std::to_string(i);
    annotations.push_back(R"({"ph":"X","cat":"user_annotation","name":"ProfilerStep#)" + s + R"(","pid":1,"tid":1,"ts":)" + std::to_string(t0) +
                          R"(,"dur":900})");
    cpu.push_back(R"({"ph":"X","cat":"cpu_op","name":"aten::relu","pid":1,"tid":1,"ts":)" + std::to_string(t0 + 10) +
                  R"(,"dur":100,"args":{"Input Dims":[[)" + s + R"(,1024]],"Input type":["float"]}},)" + "\n" +
                  R"({"ph":"X","cat":"python_function","name":"train.py(9): step","pid":1,"tid":1,"ts":)" + std::to_string(t0 + 5) + R"(,"dur":200})");
    if (last_cpu_only && i == steps) continue;
    gpu.push_back(R"({"ph":"X","cat":"cuda_runtime","name":"cudaLaunchKernel","pid":1,"tid":1,"ts":)" + std::to_string(t0 + 20) +
                  R"(,"dur":5,"args":{"correlation":)" + s + "}}");
    gpu.push_back(R"({"ph":"X","cat":"kernel","name":"k)" + s + R"(","pid":0,"tid":7,"ts":)" + std::to_string(t0 + 300) +
                  R"(,"dur":50,"args":{"correlation":)" + s + R"(,"grid":[16,1,1],"block":[256,1,1],"stream":7}})");
  }
  std::vector<std::string> all;
  switch (order) {
    case Order::annotations_first:
      all = annotations;
      all.insert(all.end(), cpu.begin(), cpu.end());
      all.insert(all.end(), gpu.begin(), gpu.end());
      break;
    case Order::annotations_after_events:  // as Kineto writes: a step's annotation after its operations
      for (int i = 0; i < steps; ++i) {
        all.push_back(cpu[i]);
        all.push_back(annotations[i]);
      }
      all.insert(all.end(), gpu.begin(), gpu.end());
      break;
    case Order::gpu_first:
      all = gpu;
      all.insert(all.end(), cpu.begin(), cpu.end());
      all.insert(all.end(), annotations.rbegin(), annotations.rend());
      break;
    case Order::shuffled:
      all = annotations;
      all.insert(all.end(), cpu.begin(), cpu.end());
      all.insert(all.end(), gpu.begin(), gpu.end());
      std::shuffle(all.begin(), all.end(), std::mt19937(7));
      break;
  }
  std::string text = R"({"traceEvents":[)";
  for (std::size_t i = 0; i < all.size(); ++i) text += (i ? ",\n" : "") + all[i];
  return text + "]}";
}

}  // namespace

TEST_CASE("the step read and its contents do not depend on the order of events in the file", "[kineto][streaming]") {
  for (const Order order : {Order::annotations_first, Order::annotations_after_events, Order::gpu_first, Order::shuffled}) {
    CAPTURE(static_cast<int>(order));
    const std::string p = test::write_temp("steps_order.json", steps_trace(40, order));
    const Trace t = kineto::read_trace(p);
    CHECK(t.step_name == "ProfilerStep#40");
    CHECK(t.profiled_steps == 40);
    REQUIRE(t.kernels.size() == 1);
    CHECK(t.kernels[0].name == "k40");
    REQUIRE(t.ops.size() == 1);
    CHECK(t.ops[0].inputs.at(0).shape == std::vector<std::int64_t>{40, 1024});
    REQUIRE(t.calls.size() == 1);
    CHECK(t.kernels[0].op == 0);
    // An earlier step, asked for by number, is read the same way.
    const Trace s = kineto::read_trace(p, {17, {}});
    REQUIRE(s.kernels.size() == 1);
    CHECK(s.kernels[0].name == "k17");
    REQUIRE(s.ops.size() == 1);
    CHECK(s.ops[0].inputs.at(0).shape == std::vector<std::int64_t>{17, 1024});
  }
}

TEST_CASE("a last step that launched nothing falls back to the one before it", "[kineto][streaming]") {
  for (const Order order : {Order::annotations_first, Order::annotations_after_events, Order::shuffled}) {
    const std::string p = test::write_temp("steps_cpu_last.json", steps_trace(12, order, true));
    const Trace t = kineto::read_trace(p);
    CHECK(t.step_name == "ProfilerStep#11");
    REQUIRE(t.kernels.size() == 1);
    CHECK(t.kernels[0].name == "k11");
    CHECK(t.ops.size() == 1);
  }
  // Standard input cannot be read twice: the error says what to do.
  const std::string p = test::write_temp("steps_cpu_last_stdin.json", steps_trace(12, Order::annotations_first, true));
  const int saved = dup(STDIN_FILENO);
  const int fd = open(p.c_str(), O_RDONLY);
  REQUIRE(fd >= 0);
  dup2(fd, STDIN_FILENO);
  close(fd);
  CHECK_THROWS_WITH(kineto::read_trace("-"), Catch::Contains("--step 11") && Catch::Contains("standard input"));
  dup2(saved, STDIN_FILENO);
  close(saved);
}

TEST_CASE("what the reader holds does not grow with the number of steps", "[kineto][streaming]") {
  // 60,000 steps of three events each: the collector compacts as it goes and never holds them all.
  constexpr int steps = 60000;
  const std::string p = test::write_temp("steps_many.json", steps_trace(steps, Order::annotations_after_events));
  kineto::detail::Collector c(p, std::nullopt);
  kineto::stream_events(p, c);
  CHECK(c.steps.size() == static_cast<std::size_t>(steps));
  static_assert(steps > 2 * kineto::detail::Collector::compact_at);
  CHECK(c.ops.capacity() <= 2 * kineto::detail::Collector::compact_at);
  CHECK(c.gpu.capacity() <= 2 * kineto::detail::Collector::compact_at);
  CHECK(c.calls.capacity() <= 2 * kineto::detail::Collector::compact_at);
  CHECK(c.python_starts.capacity() <= 2 * kineto::detail::Collector::compact_at);
  c.compact();
  CHECK(c.ops.size() == 1);
  CHECK(c.gpu.size() <= 2);  // the step's kernel, and the one before it within the clock slack
  // And the whole read agrees.
  const Trace t = kineto::read_trace(p);
  CHECK(t.step_name == "ProfilerStep#60000");
  CHECK(t.python_records == 1);
  REQUIRE(t.kernels.size() == 1);
  CHECK(t.kernels[0].name == "k60000");
}
