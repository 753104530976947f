// NCCL kernels of PyTorch before 2.1 name no collective: the "nccl:<collective>" annotation around their launch gives
// it (its Input Dims and Input type the message, its group size or the trace's world size the ranks). Traces without
// GPU work are refused with what they hold instead; short recordings are quoted in microseconds.
#include <catch2/catch.hpp>

#include <algorithm>

#include "fixtures.hpp"
#include "habitat/detail/number_text.hpp"
#include "habitat/device/resolve.hpp"
#include "habitat/habitat.hpp"
#include "habitat/kineto/reader.hpp"

using namespace habitat;
using Catch::Contains;

namespace {
// One step on thread 1: an all-reduce of 1 Mi floats and an all-to-all of 24 longs, each a "nccl:" annotation around
// the launch of an NCCL kernel that names no collective (as PyTorch 2.0 wrote them); `ann_args` is added to both
// annotations' args, `kernel_args` to the all-reduce kernel's, `info` is the distributedInfo (none if empty).
std::string annotated_trace(const std::string& info, const std::string& ann_args = "", const std::string& kernel_args = "",
                            int all_reduce_tid = 1) {
  const std::string props = R"("deviceProperties": [{"id": 0, "name": "Tesla V100-SXM2-32GB", "computeMajor": 7, "computeMinor": 0, "numSms": 80}])";
  const std::string launch = R"("grid": [8, 1, 1], "block": [256, 1, 1], "registers per thread": 96, "shared memory": 41760, "stream": 84)";
  const std::string events = R"j("traceEvents": [
    {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#1", "pid": 9, "tid": 1, "ts": 0, "dur": 1000},
    {"ph": "X", "cat": "user_annotation", "name": "nccl:all_reduce", "pid": 9, "tid": )j" +
                             std::to_string(all_reduce_tid) + R"j(, "ts": 100, "dur": 50,
     "args": {"Input Dims": [[1048576]], "Input type": ["float"])j" + ann_args + R"j(}},
    {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 9, "tid": 1, "ts": 120, "dur": 5, "args": {"correlation": 11}},
    {"ph": "X", "cat": "kernel", "name": "ncclKernel_AllReduce_RING_LL_Sum_float(ncclDevComm*, unsigned long, ncclWork*)", "pid": 0, "tid": 7,
     "ts": 130, "dur": 400, "args": {"correlation": 11, )j" + launch + kernel_args + R"j(}},
    {"ph": "X", "cat": "user_annotation", "name": "nccl:all_to_all", "pid": 9, "tid": 1, "ts": 600, "dur": 40,
     "args": {"Input Dims": [[24]], "Input type": ["long int"])j" + ann_args + R"j(}},
    {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 9, "tid": 1, "ts": 610, "dur": 5, "args": {"correlation": 12}},
    {"ph": "X", "cat": "kernel", "name": "ncclKernel_SendRecv_RING_SIMPLE_Sum_int8_t(ncclDevComm*, unsigned long, ncclWork*)", "pid": 0, "tid": 7,
     "ts": 620, "dur": 300, "args": {"correlation": 12, )j" + launch + R"j(}}])j";
  return "{" + props + ", " + events + (info.empty() ? "" : R"(, "distributedInfo": )" + info) + "}";
}

bool warned(const Trace& t, const std::string& what) {
  return std::any_of(t.warnings.begin(), t.warnings.end(), [&](const std::string& w) { return w.find(what) != std::string::npos; });
}
}  // namespace

TEST_CASE("an NCCL kernel without a collective takes it from the 'nccl:' annotation around its launch", "[kineto][distributed]") {
  const std::string world8 = R"({"backend": "nccl", "rank": 0, "world_size": 8})";
  const Trace t = kineto::read_trace(test::write_temp("nccl_annotated.json", annotated_trace(world8)));
  REQUIRE(t.kernels.size() == 2);
  const Kernel &all_reduce = t.kernels[0], &all_to_all = t.kernels[1];
  REQUIRE(all_reduce.collective);
  CHECK(all_reduce.collective->name == "allreduce");  // the model's name for 'nccl:all_reduce'
  CHECK(all_reduce.collective->bytes == 4 << 20);     // 1 Mi elements of 4-byte floats
  CHECK(all_reduce.collective->ranks == 8);           // the world size: the annotation gives no group size
  REQUIRE(all_to_all.collective);
  CHECK(all_to_all.collective->name == "all_to_all");
  CHECK(all_to_all.collective->bytes == 24 * 8);  // 'long int': 8 bytes
  CHECK(all_to_all.collective->ranks == 8);
  CHECK(warned(t, "2 NCCL kernels name no collective: taken from the annotations around their launches ('nccl:all_reduce' 1x, 'nccl:all_to_all' 1x)"));
  CHECK_FALSE(warned(t, "keep their recorded time"));  // all-to-all is modelled too
  CHECK(warned(t, "2 collectives record no group size: taken as 8 ranks"));

  // Both are predicted by the collective model (the all-to-all's SendRecv kernel is how NCCL runs it).
  const Device v100 = Catalog::builtin().at("V100");
  const Device h100 = Catalog::builtin().at("H100 SXM");
  const auto p = predict_trace(t, kernel_work(t), v100, h100, RooflineScaling{});
  CHECK(p.kernels[0].method == Method::collective);
  CHECK(p.kernels[0].duration_us == comm::collective_us("allreduce", 4 << 20, 8, h100));
  CHECK(p.kernels[1].method == Method::collective);
  CHECK(p.kernels[1].duration_us == comm::collective_us("all_to_all", 24 * 8, 8, h100));
  CHECK_THAT(p.collective_note, !Contains("without a recorded message size"));

  SECTION("a collective the model does not predict (a send) keeps its recorded time, and it is said") {
    std::string text = annotated_trace(world8);
    text.replace(text.find("nccl:all_to_all"), 15, "nccl:send");
    const Trace u = kineto::read_trace(test::write_temp("nccl_annotated_send.json", text));
    REQUIRE(u.kernels[1].collective);
    CHECK(u.kernels[1].collective->name == "send");
    CHECK(warned(u, "the collective model predicts allreduce, broadcast, allgather, reduce_scatter, all_to_all, not send (1 kernel): those keep their recorded time"));
    const auto q = predict_trace(u, kernel_work(u), v100, h100, RooflineScaling{});
    CHECK(q.kernels[1].method == Method::collective);
    CHECK(q.kernels[1].duration_us == 300);
  }
  SECTION("the annotation's group size wins over the world size, and nothing is said of it") {
    const Trace g = kineto::read_trace(test::write_temp("nccl_annotated_group.json", annotated_trace(world8, R"(, "Group size": 4)")));
    for (const Kernel& k : g.kernels) CHECK((k.collective && k.collective->ranks == 4));
    CHECK_FALSE(warned(g, "group size"));
  }
  SECTION("a kernel's own collective wins over the annotation") {
    const Trace k = kineto::read_trace(test::write_temp(
        "nccl_annotated_own.json", annotated_trace(world8, "", R"(, "Collective name": "broadcast", "In msg nelems": 1024, "dtype": "Float", "Group size": 2)")));
    REQUIRE(k.kernels[0].collective);
    CHECK(k.kernels[0].collective->name == "broadcast");
    CHECK(k.kernels[0].collective->bytes == 4096);
    CHECK(k.kernels[0].collective->ranks == 2);
    CHECK(warned(k, "1 NCCL kernel names no collective: taken from the annotation around its launch ('nccl:all_to_all' 1x)"));
  }
  SECTION("an annotation on another thread does not enclose the launch") {
    const Trace o = kineto::read_trace(test::write_temp("nccl_annotated_other_thread.json", annotated_trace(world8, "", "", 2)));
    CHECK_FALSE(o.kernels[0].collective);
    CHECK(o.kernels[1].collective);
    const auto q = predict_trace(o, kernel_work(o), v100, h100, RooflineScaling{});
    CHECK(q.kernels[0].duration_us == 400);  // unsized: kept, and said
    CHECK_THAT(q.collective_note, Contains("without a recorded message size"));
  }
  SECTION("a kernel of another collective than its annotation names takes nothing from it") {
    std::string text = annotated_trace(world8);
    const std::string all_reduce_kernel = "ncclKernel_AllReduce_RING_LL_Sum_float";
    text.replace(text.find(all_reduce_kernel), all_reduce_kernel.size(), "ncclKernel_SendRecv_RING_SIMPLE_Sum_int8_t");
    const Trace s = kineto::read_trace(test::write_temp("nccl_annotated_contradicted.json", text));
    CHECK_FALSE(s.kernels[0].collective);
    CHECK(s.kernels[1].collective);
    CHECK(warned(s, "NCCL kernels of another collective than the annotation around their launch names (SendRecv kernels in 'nccl:all_reduce' 1x)"));
  }
  SECTION("without a world size, the ranks are unknown: unmodelled, as before, and said") {
    const Trace n = kineto::read_trace(test::write_temp("nccl_annotated_no_world.json", annotated_trace("")));
    CHECK_FALSE(n.kernels[0].collective);
    CHECK_FALSE(n.kernels[1].collective);
    CHECK(warned(n, "no group size and the trace gives no world size"));
  }
}

TEST_CASE("a trace without GPU work is refused with what it holds instead", "[kineto][errors]") {
  // IBM Spyre's Kineto fork: an accelerator's kernels under categories of its own, no ProfilerStep.
  const std::string aiu = test::write_temp("aiu.json", R"({"traceEvents": [
    {"ph": "X", "cat": "cpu_op", "name": "aten::randn", "pid": 1, "tid": 1, "ts": 150, "dur": 60},
    {"ph": "X", "cat": "aiu", "name": "aiu_randn_kernel", "pid": 1, "tid": 2, "ts": 160, "dur": 40},
    {"ph": "X", "cat": "cpu_op", "name": "aten::matmul", "pid": 1, "tid": 1, "ts": 215, "dur": 40},
    {"ph": "X", "cat": "privateuse1", "name": "aiu_matmul_kernel", "pid": 1, "tid": 2, "ts": 220, "dur": 30},
    {"ph": "X", "cat": "privateuse1_runtime", "name": "aiuLaunch", "pid": 1, "tid": 1, "ts": 216, "dur": 2}]})");
  const std::string accelerator = "no kernels, memcpys or memsets); its device events are of categories 'aiu', 'privateuse1' (an accelerator other than a GPU?)";
  CHECK_THROWS_WITH(kineto::read_trace(aiu, {.whole_trace = true}),
                    Contains("aiu.json: the whole trace: the trace holds no GPU work (" + accelerator) && !Contains("ProfilerStep") && !Contains("CPU-only"));
  CHECK_THROWS_WITH(kineto::read_trace(aiu), Contains("aiu.json: steps: no ProfilerStep#N annotation, and no GPU work in the trace (" + accelerator) &&
                                                 !Contains("--whole-trace"));

  // A CPU-only trace with steps: the steps launched nothing, and nothing else did either.
  const std::string cpu = test::write_temp("cpu_only.json", R"({"traceEvents": [
    {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#1", "pid": 1, "tid": 1, "ts": 0, "dur": 100},
    {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": 10, "dur": 60}]})");
  CHECK_THROWS_WITH(kineto::read_trace(cpu), Contains("cpu_only.json: steps: no ProfilerStep launched any GPU work, nor does the trace hold any") &&
                                                 Contains("a CPU-only trace") && !Contains("categories"));
}

TEST_CASE("unknown categories are counted with a few of their names kept", "[kineto]") {
  kineto::detail::CategoryTally tally;
  for (int i = 0; i < 20; ++i) tally.add("cat" + std::to_string(i % 10));
  CHECK(tally.events == 20);
  CHECK(tally.names.size() == kineto::detail::CategoryTally::max_names);
  CHECK(tally.list() == "'cat0', 'cat1', 'cat2', 'cat3', 'cat4', 'cat5' and others");
  kineto::detail::CategoryTally host;
  host.add("mtia_runtime");
  host.add("mtia_ccp_events");
  CHECK(host.list() == "'mtia_runtime', 'mtia_ccp_events'");
  CHECK(host.list(true) == "'mtia_ccp_events'");
}

TEST_CASE("durations under a millisecond are quoted in microseconds", "[kineto][errors]") {
  using habitat::detail::duration_text;
  CHECK(duration_text(0.3) == "0.3 us");
  CHECK(duration_text(250) == "250 us");
  CHECK(duration_text(999.9) == "999.9 us");
  CHECK(duration_text(1000) == "1 ms");
  CHECK(duration_text(19234) == "19.2 ms");
  const std::string tiny = test::write_temp("tiny_recording.json", R"({"traceEvents": [
    {"ph": "X", "cat": "cpu_op", "name": "op1", "pid": 1, "tid": 1, "ts": 100.5, "dur": 0.3},
    {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": 100.5, "dur": 0.1, "args": {"correlation": 1}},
    {"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": 100.6, "dur": 0.2,
     "args": {"correlation": 1, "grid": [1, 1, 1], "block": [32, 1, 1], "stream": 7}}]})");
  CHECK_THROWS_WITH(kineto::read_trace(tiny), Contains("pass --whole-trace to predict all 0.3 us of the recording"));
}
