#include <catch2/catch.hpp>

#include "fixtures.hpp"
#include "habitat/kineto/reader.hpp"
#include "habitat/metrics/attach.hpp"
#include "habitat/metrics/metric_file.hpp"
#include "habitat/metrics/selection.hpp"

using namespace habitat;

namespace {
std::string metrics_path(const std::string& gpu, const std::string& w, const std::string& tool = "cupti") {
  return std::string(HABITAT_FIXTURES) + "/metrics/" + gpu + "/" + w + "." + tool + ".json";
}
}  // namespace

TEST_CASE("metric file: write and read back") {
  MetricSet s;
  s.provenance.device = "NVIDIA H200";
  s.provenance.tool = "test";
  MeasuredKernel m;
  m.name = "void k<float>(float*)";
  m.key = {normalize_kernel_name(m.name), {4, 2, 1}, {128, 1, 1}, 1024, 0};
  m.dram_read_bytes = 1e6;
  m.flops[FlopKind::tensor_tf32] = 5e9;
  s.add(m);
  const auto back = metric_set_from_json(to_json_text(s), "mem.json");
  REQUIRE(back.kernels().size() == 1);
  CHECK(back.kernels()[0].key.id() == m.key.id());
  CHECK(back.kernels()[0].flops[FlopKind::tensor_tf32] == 5e9);
  CHECK(back.kernels()[0].to_kernel_metrics().precision == Precision::tf32);
}

TEST_CASE("metric file: malformed files are refused with the place named") {
  const std::string ok_head = R"({"schema":"habitat.metrics/1","measured_on":{"device":"NVIDIA H100"},"kernels":[)";
  auto parse = [](const std::string& text) { return metric_set_from_json(text, "m.json"); };
  CHECK_THROWS_WITH(parse(R"({"schema":"habitat.metrics/2","kernels":[]})"), Catch::Contains("unsupported schema"));
  CHECK_THROWS_WITH(parse(R"({"schema":"habitat.metrics/1","kernels":[]})"), Catch::Contains("measured_on.device"));
  CHECK_THROWS_WITH(parse(ok_head + R"({"name":"k","grid":[1,1],"block":[1,1,1]}]})"), Catch::Contains("kernels[0]") && Catch::Contains("grid"));
  CHECK_THROWS_WITH(parse(ok_head + R"({"name":"k","grid":[1,1,1],"block":[1,1,1],"dram_read_bytes":-5}]})"), Catch::Contains("dram_read_bytes"));
  CHECK_THROWS_WITH(parse(ok_head + R"({"name":"k","grid":[1,1,1],"block":[1,1,1],"flops":{"fp33":1}}]})"), Catch::Contains("unknown FLOP kind"));
  CHECK_THROWS_WITH(parse(R"({"schema":"habitat.metrics/1","measured_on":{"device":"x"},"units":{"bytes":"Kbyte"},"kernels":[]})"),
                    Catch::Contains("units.bytes"));
  CHECK_THROWS_WITH(read_metric_file("/no/such/file.json"), Catch::Contains("cannot open"));
}

TEST_CASE("attach: fixture metrics cover most of the kernel time of their trace") {
  for (const char* w : {"resnet50_fp32_b32", "encoder_bf16_b32", "lstm_fp32_b64"}) {
    Trace t = kineto::read_trace(test::fixture("h100", w));
    const auto set = read_metric_file(metrics_path("h100", w));
    check_same_gpu(set, "m.json", t);
    const auto r = attach_metrics(t, {&set});
    INFO(w);
    CHECK(r.matched_time_share() > 0.9);  // collected with --top 0.95
    CHECK(r.matched_time_share() < 1.0);
  }
}

TEST_CASE("attach: metrics from another GPU are refused") {
  Trace t = kineto::read_trace(test::fixture("h100", "lstm_fp32_b64"));
  const auto set = read_metric_file(metrics_path("h200", "lstm_fp32_b64"));
  CHECK_THROWS_WITH(check_same_gpu(set, "h200.json", t), Catch::Contains("h200.json") && Catch::Contains("NVIDIA H200"));
}

TEST_CASE("selection: top fraction of kernel time, cached launches left out") {
  const Trace t = kineto::read_trace(test::fixture("h100", "resnet50_fp32_b32"));
  const auto all = select_top_launches(t, 1.0), most = select_top_launches(t, 0.95), few = select_top_launches(t, 0.5);
  CHECK(all.size() == 164);  // distinct launch configurations in the step
  CHECK(most.size() < all.size());
  CHECK(few.size() < most.size());
  for (std::size_t i = 1; i < all.size(); ++i) CHECK(all[i - 1].total_us >= all[i].total_us);
  const auto cached = read_metric_file(metrics_path("h100", "resnet50_fp32_b32"));
  CHECK(select_top_launches(t, 0.95, &cached).size() < most.size() / 2);
  CHECK_THROWS(select_top_launches(t, 0.0));
}
