// The trace's "distributedInfo" (which rank of how many recorded it): read and checked, its world size the number of
// ranks of the collectives that record no group size, and shown in the prediction's summary.
#include <catch2/catch.hpp>

#include <zlib.h>

#include <algorithm>
#include <sstream>

#include "fixtures.hpp"
#include "gunzip.hpp"
#include "habitat/device/resolve.hpp"
#include "habitat/habitat.hpp"
#include "habitat/kineto/reader.hpp"
#include "habitat/report/writers.hpp"

using namespace habitat;
using Catch::Contains;

namespace {
// One step with one NCCL all-reduce of 4 MiB, annotated as older PyTorch did (no "Group size" unless given);
// `info` is the value of "distributedInfo" (none if empty), written before the events or after them.
std::string nccl_trace(const std::string& info, const std::string& group_size = "", bool info_first = false) {
  const std::string props = R"("deviceProperties": [{"id": 0, "name": "NVIDIA H100 80GB HBM3", "computeMajor": 9, "computeMinor": 0, "numSms": 132}])";
  const std::string events = R"j("traceEvents": [
    {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#1", "pid": 1, "tid": 1, "ts": 0, "dur": 100},
    {"ph": "X", "cat": "cpu_op", "name": "c10d::allreduce_", "pid": 1, "tid": 1, "ts": 10, "dur": 20},
    {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": 12, "dur": 3, "args": {"correlation": 77}},
    {"ph": "X", "cat": "kernel", "name": "ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)", "pid": 0, "tid": 7,
     "ts": 40, "dur": 500, "args": {"correlation": 77, "stream": 7, "grid": [24, 1, 1], "block": [544, 1, 1], "registers per thread": 96,
     "shared memory": 0, "Collective name": "allreduce", "In msg nelems": 1048576, "dtype": "Float")j" +
                             group_size + "}}]";
  const std::string dist = info.empty() ? "" : R"("distributedInfo": )" + info;
  if (dist.empty()) return "{" + props + ", " + events + "}";
  return info_first ? "{" + props + ", " + dist + ", " + events + "}" : "{" + props + ", " + events + ", " + dist + "}";
}

bool warned(const Trace& t, const std::string& what) {
  return std::any_of(t.warnings.begin(), t.warnings.end(), [&](const std::string& w) { return w.find(what) != std::string::npos; });
}

using habitat::test::gunzip;

std::size_t erase_all(std::string& s, const std::string& what) {
  std::size_t n = 0;
  for (auto at = s.find(what); at != std::string::npos; at = s.find(what, at), ++n) s.erase(at, what.size());
  return n;
}
}  // namespace

TEST_CASE("a collective without a group size takes the trace's world size, before or after the events", "[kineto][distributed]") {
  const std::string info = R"({"backend": "nccl", "rank": 0, "world_size": 8, "pg_count": 1,
      "pg_config": [{"pg_name": "0", "pg_size": 8, "ranks": [0, 1, 2, 3, 4, 5, 6, 7], "rank": "not read"}]})";
  for (const bool first : {true, false}) {
    INFO("distributedInfo " << (first ? "before" : "after") << " the events");
    const Trace t = kineto::read_trace(test::write_temp("dist8.json", nccl_trace(info, "", first)));
    REQUIRE(t.distributed);
    CHECK(t.distributed->rank == 0);
    CHECK(t.distributed->world_size == 8);
    CHECK(t.distributed->backend == "nccl");
    REQUIRE(t.kernels.size() == 1);
    REQUIRE(t.kernels[0].collective);
    CHECK(t.kernels[0].collective->ranks == 8);
    CHECK(t.kernels[0].collective->bytes == 4 << 20);
    CHECK(warned(t, "1 collective records no group size: taken as 8 ranks, from the trace's distributedInfo"));
    // ... and the collective model predicts it on those 8 ranks.
    const Device h100 = resolve_origin(Catalog::builtin(), t, std::nullopt);
    const auto p = predict_trace(t, kernel_work(t), h100, h100, RooflineScaling{});
    CHECK(p.kernels[0].method == Method::collective);
    CHECK(p.kernels[0].duration_us == comm::collective_us("allreduce", 4 << 20, 8, h100));
  }
  SECTION("a recorded group size wins, and nothing is said") {
    const Trace t = kineto::read_trace(test::write_temp("dist8_group4.json", nccl_trace(info, R"(, "Group size": 4)")));
    REQUIRE(t.kernels[0].collective);
    CHECK(t.kernels[0].collective->ranks == 4);
    CHECK_FALSE(warned(t, "group size"));
  }
  SECTION("only a rank (no world size): the collective's ranks are unknown, as without distributedInfo, and said") {
    const Trace t = kineto::read_trace(test::write_temp("rank_only.json", nccl_trace(R"({"rank": 3})")));
    REQUIRE(t.distributed);
    CHECK(t.distributed->rank == 3);
    CHECK_FALSE(t.distributed->world_size);
    CHECK(t.distributed->backend.empty());
    CHECK_FALSE(t.kernels[0].collective);
    CHECK(warned(t, "no group size and the trace gives no world size"));
  }
  SECTION("no distributedInfo: nothing recorded, the collective's ranks unknown") {
    const Trace t = kineto::read_trace(test::write_temp("no_dist.json", nccl_trace("")));
    CHECK_FALSE(t.distributed);
    CHECK_FALSE(t.kernels[0].collective);
    const Trace g = kineto::read_trace(test::write_temp("no_dist_group.json", nccl_trace("", R"(, "Group size": 2)")));
    CHECK_FALSE(g.distributed);
    REQUIRE(g.kernels[0].collective);
    CHECK(g.kernels[0].collective->ranks == 2);
    CHECK(t.warnings.size() == g.warnings.size() + 1);  // the unknown ranks, said; nothing else differs
  }
  SECTION("quoted numbers are read as the rest of the trace's are") {
    const Trace t = kineto::read_trace(test::write_temp("quoted.json", nccl_trace(R"({"rank": "1", "world_size": "2"})")));
    REQUIRE(t.distributed);
    CHECK(t.distributed->rank == 1);
    CHECK(t.kernels[0].collective->ranks == 2);
  }
}

// A DDP rank recorded by recent PyTorch, its collectives' group sizes removed (as older PyTorch wrote them): the
// distributedInfo's world size gives back the same ranks, and the same prediction.
TEST_CASE("a rank trace without group sizes predicts as with them, from its distributedInfo", "[kineto][distributed]") {
  const std::string path = test::fixture("h200x2", "vgg16_fp32_b32.ddp2_rank0", "ddp");
  std::string text = gunzip(path);
  const Trace with = kineto::read_trace(path);
  REQUIRE(erase_all(text, R"("Group size": 2, )") >= 6);
  const Trace without = kineto::read_trace(test::write_temp("vgg16_rank0_no_group_size.json", text));
  REQUIRE(with.distributed);
  CHECK(with.distributed->world_size == 2);
  CHECK_FALSE(warned(with, "group size"));
  CHECK(warned(without, "taken as 2 ranks, from the trace's distributedInfo"));
  REQUIRE(with.kernels.size() == without.kernels.size());
  int collectives = 0;
  for (std::size_t i = 0; i < with.kernels.size(); ++i) {
    REQUIRE(with.kernels[i].collective.has_value() == without.kernels[i].collective.has_value());
    if (!with.kernels[i].collective) continue;
    CHECK(without.kernels[i].collective->ranks == with.kernels[i].collective->ranks);
    ++collectives;
  }
  CHECK(collectives >= 6);
  const Device h200 = resolve_origin(Catalog::builtin(), with, std::nullopt);
  const Device h100 = Catalog::builtin().at("H100 SXM");
  CHECK(predict_trace(without, kernel_work(without), h200, h100, RooflineScaling{}).gpu_active_us ==
        predict_trace(with, kernel_work(with), h200, h100, RooflineScaling{}).gpu_active_us);
}

TEST_CASE("bad distributedInfo values give errors naming the file, the place and the problem", "[kineto][distributed][errors]") {
  const std::pair<std::string, std::string> cases[] = {
      {R"({"rank": 0, "world_size": 0})", "'world_size' is 0, not a whole number of ranks"},
      {R"({"rank": 0, "world_size": -8})", "'world_size' is -8"},
      {R"({"rank": 0, "world_size": 2.5})", "'world_size' is 2.5"},
      {R"({"rank": 0, "world_size": 1e12})", "'world_size' is 1000000000000"},
      {R"({"rank": 0, "world_size": "eight"})", "'world_size' is 'eight'"},
      {R"({"rank": 0, "world_size": true})", "'world_size' is not a number"},
      {R"({"rank": 0, "world_size": null})", "'world_size' is not a number"},
      {R"({"rank": 0, "world_size": [8]})", "'world_size' is not a number"},
      {R"({"rank": 8, "world_size": 8})", "'rank' 8 is not below 'world_size' 8"},
      {R"({"rank": -1, "world_size": 8})", "'rank' is -1"},
      {R"({"rank": 0.5})", "'rank' is 0.5"},
      {R"({"rank": {"global": 0}})", "'rank' is not a number"},
      {R"({"rank": 0, "backend": 5})", "'backend' is not a string"},
      {R"([0, 8])", "not an object"},
      {R"(null)", "not an object"},
      {R"("rank 0 of 8")", "not an object"},
  };
  for (const auto& [info, problem] : cases)
    for (const bool first : {true, false}) {
      INFO(info << (first ? " before" : " after") << " the events");
      const std::string p = test::write_temp("bad_dist.json", nccl_trace(info, "", first));
      CHECK_THROWS_WITH(kineto::read_trace(p), Contains("bad_dist.json: distributedInfo: " + problem));
    }
}

TEST_CASE("the prediction's summary gives the recording rank and world size", "[kineto][distributed][report]") {
  report::OriginSummary o{"H100 SXM", 1000, 500, std::nullopt, DistributedInfo{0, 8, "nccl"}};
  std::ostringstream table, json;
  report::write_table(table, o, {}, 0);
  report::write_json(json, o, {});
  CHECK_THAT(table.str(), Contains("recorded by rank 0 of 8 (distributedInfo, nccl)"));
  CHECK_THAT(json.str(), Contains(R"("distributed":{"rank":0,"world_size":8,"backend":"nccl","source":"distributedInfo"})"));
  o.distributed = DistributedInfo{2, std::nullopt, ""};
  std::ostringstream rank_only;
  report::write_table(rank_only, o, {}, 0);
  CHECK_THAT(rank_only.str(), Contains("recorded by rank 2 (distributedInfo)\n"));
  o.distributed.reset();
  std::ostringstream none, none_json;
  report::write_table(none, o, {}, 0);
  report::write_json(none_json, o, {});
  CHECK_THAT(none.str(), !Contains("distributedInfo"));
  CHECK_THAT(none_json.str(), !Contains("distributed"));
}
