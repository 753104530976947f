// Traces of other tools' dialects: GPU events linked to their launches by 'External id' where they carry no
// 'correlation' (AMD-AGI/TraceLens' exporters), and traces without deviceProperties, whose GPU is taken from the
// architecture their kernels' names tell where they tell exactly one (else refused, asking for --origin).
#include <catch2/catch.hpp>

#include <boost/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "fixtures.hpp"
#include "gunzip.hpp"
#include "habitat/device/kernel_architecture.hpp"
#include "habitat/device/resolve.hpp"
#include "habitat/kineto/reader.hpp"

using namespace habitat;
using Catch::Matchers::Contains;

namespace {

// A fixture's text with its top-level "deviceProperties" removed.
std::string without_device_properties(const std::string& path) {
  boost::json::value doc = boost::json::parse(test::gunzip(path));
  REQUIRE(doc.as_object().erase("deviceProperties") == 1);
  return boost::json::serialize(doc);
}

std::string x_event(const std::string& cat, const std::string& name, int tid, double ts, double dur, const std::string& args) {
  return R"({"ph":"X","cat":")" + cat + R"(","name":")" + name + R"(","pid":)" + (tid == 7 ? "0" : "470") + R"(,"tid":)" + std::to_string(tid) +
         R"(,"ts":)" + std::to_string(ts) + R"(,"dur":)" + std::to_string(dur) + R"(,"args":{)" + args + "}}";
}

std::string kernel(const std::string& name, double ts, double dur, const std::string& link) {
  return x_event("kernel", name, 7, ts, dur, R"("device":0,"stream":7,"grid":[64,1,1],"block":[256,1,1],)" + link);
}

std::string trace_of(const std::vector<std::string>& events) {
  std::string text = R"({"traceEvents":[)";
  for (std::size_t i = 0; i < events.size(); ++i) text += (i ? ",\n" : "") + events[i];
  return text + "]}";
}

// As TraceLens writes them: operations and launches carry an 'External id', GPU events the same id and no
// correlation. aten::mm (id 100) launches two kernels, aten::copy_ (101) a copy, aten::relu (102) a kernel whose
// launch was not recorded. The GPU events come first in the file: the links cannot depend on the order.
std::vector<std::string> tracelens_style() {
  return {
      kernel("gemm_part_two", 1400, 60, R"("External id":100)"),
      kernel("gemm_part_one", 1300, 80, R"("External id":100)"),
      x_event("gpu_memcpy", "Memcpy DtoD (Device -> Device)", 7, 1500, 20, R"("device":0,"stream":7,"bytes":1048576,"External id":101)"),
      kernel("relu_kernel", 1600, 15, R"("External id":102)"),
      x_event("user_annotation", "ProfilerStep#1", 711, 1000, 900, ""),
      x_event("cpu_op", "aten::mm", 711, 1010, 100, R"("Input Dims":[[512,512],[512,512]],"Input type":["float","float"],"External id":100)"),
      x_event("cuda_runtime", "cudaLaunchKernel", 711, 1020, 5, R"("External id":100)"),
      x_event("cuda_runtime", "cudaLaunchKernel", 711, 1050, 5, R"("External id":100)"),
      x_event("cpu_op", "aten::copy_", 711, 1200, 50, R"("External id":101)"),
      x_event("cuda_runtime", "cudaMemcpyAsync", 711, 1210, 8, R"("External id":101)"),
      x_event("cpu_op", "aten::relu", 711, 1300, 30, R"("Input Dims":[[512,512]],"Input type":["float"],"External id":102)"),
  };
}

const Kernel& named(const Trace& t, const std::string& name) {
  for (const auto& k : t.kernels)
    if (k.name == name) return k;
  FAIL("no GPU event " << name);
  return t.kernels.front();
}

bool warned(const Trace& t, const std::string& what) {
  for (const auto& w : t.warnings)
    if (w.find(what) != std::string::npos) return true;
  return false;
}

}  // namespace

TEST_CASE("GPU events without a correlation are linked to their launches by External id, in time order", "[kineto][external-id]") {
  const Trace t = kineto::read_trace(test::write_temp("tracelens_style.json", trace_of(tracelens_style())));
  REQUIRE(t.kernels.size() == 4);
  // aten::mm's two kernels go with its two launches in time order: the first kernel with the first launch.
  const Kernel& one = named(t, "gemm_part_one");
  const Kernel& two = named(t, "gemm_part_two");
  REQUIRE(one.call >= 0);
  REQUIRE(two.call >= 0);
  CHECK(t.calls[one.call].start_us == Approx(1020));
  CHECK(t.calls[two.call].start_us == Approx(1050));
  REQUIRE(one.op >= 0);
  CHECK(t.ops[one.op].name == "aten::mm");
  CHECK(t.ops[two.op].name == "aten::mm");
  // The copy goes with the copy's launch.
  const Kernel& copy = named(t, "Memcpy DtoD (Device -> Device)");
  REQUIRE(copy.call >= 0);
  CHECK(t.calls[copy.call].name == "cudaMemcpyAsync");
  CHECK(t.ops[copy.op].name == "aten::copy_");
  // No launch carries 102: the kernel is taken as launched when its operation starts, and said.
  const Kernel& relu = named(t, "relu_kernel");
  REQUIRE(relu.call >= 0);
  CHECK(t.calls[relu.call].start_us == Approx(1300));
  CHECK(t.calls[relu.call].duration_us == 0);
  CHECK(t.ops[relu.op].name == "aten::relu");
  CHECK(warned(t, "3 GPU events have no 'correlation': linked to the CUDA launches of their operation's 'External id'"));
  CHECK(warned(t, "1 GPU event has no 'correlation', and no CUDA launch carries their 'External id'"));
  CHECK_FALSE(warned(t, "no CUDA runtime events"));
}

TEST_CASE("a GPU event without a correlation takes a launch that no other GPU event names", "[kineto][external-id]") {
  // PyTorch's launches carry both; here one of aten::mm's kernels lost its correlation.
  const Trace t = kineto::read_trace(test::write_temp(
      "mixed_links.json",
      trace_of({x_event("user_annotation", "ProfilerStep#1", 711, 1000, 900, ""),
                x_event("cpu_op", "aten::mm", 711, 1010, 100, R"("External id":100)"),
                x_event("cuda_runtime", "cudaLaunchKernel", 711, 1020, 5, R"("External id":100,"correlation":5)"),
                x_event("cuda_runtime", "cudaLaunchKernel", 711, 1050, 5, R"("External id":100,"correlation":6)"),
                kernel("first", 1300, 80, R"("External id":100,"correlation":5)"), kernel("second", 1400, 60, R"("External id":100)")})));
  REQUIRE(t.kernels.size() == 2);
  CHECK(t.calls[named(t, "first").call].start_us == Approx(1020));
  CHECK(t.calls[named(t, "second").call].start_us == Approx(1050));
  CHECK(warned(t, "1 GPU event has no 'correlation': linked"));
}

TEST_CASE("a bad or dangling External id is an error naming the file and the place", "[kineto][external-id][errors]") {
  auto events = tracelens_style();
  SECTION("not a whole number") {
    events[3] = kernel("relu_kernel", 1600, 15, R"("External id":"one hundred")");
    CHECK_THROWS_WITH(kineto::read_trace(test::write_temp("bad_external_id.json", trace_of(events))),
                      Contains("bad_external_id.json") && Contains("event #4") && Contains("'External id' is not a whole number"));
  }
  SECTION("no launch or operation of that id") {
    events[3] = kernel("relu_kernel", 1600, 15, R"("External id":7)");
    CHECK_THROWS_WITH(kineto::read_trace(test::write_temp("dangling_external_id.json", trace_of(events))),
                      Contains("dangling_external_id.json") && Contains("event #4") && Contains("carries its 'External id' 7"));
  }
  SECTION("neither a correlation nor an External id") {
    events[3] = kernel("relu_kernel", 1600, 15, R"("device":0)");
    CHECK_THROWS_WITH(kineto::read_trace(test::write_temp("no_link.json", trace_of(events))),
                      Contains("no_link.json") && Contains("has no 'correlation'"));
  }
}

TEST_CASE("a public TraceLens trace linked by External id reads, its GPU taken from its sm100 kernel names", "[kineto][external-id][architecture]") {
  kineto::ReadOptions whole;
  whole.whole_trace = true;
  const Trace t = kineto::read_trace(std::string(HABITAT_FIXTURES) + "/wild/tracelens_nodevprops_sm100_synth_gemm_bf16.json.gz", whole);
  REQUIRE(t.kernels.size() == 1);
  REQUIRE(t.kernels[0].op >= 0);
  CHECK(t.ops[t.kernels[0].op].name == "aten::mm");
  std::ostringstream w;
  CHECK(resolve_origin(Catalog::builtin(), t, std::nullopt, &w).name == "B200");
  CHECK_THAT(w.str(), Contains("Blackwell") && Contains("--origin"));
}

TEST_CASE("a trace without deviceProperties takes its GPU from its kernels' names where they tell one generation", "[kineto][architecture]") {
  const Catalog cat = Catalog::builtin();
  SECTION("sm90_ kernels (Hopper only): the catalog's H100, with a warning") {
    const Trace t = kineto::read_trace(test::write_temp("noprops_h100_bf16.json", without_device_properties(test::fixture("h100", "dcgan_bf16_b256"))));
    REQUIRE_FALSE(t.device_props);
    std::ostringstream w;
    const Device d = resolve_origin(cat, t, std::nullopt, &w);
    CHECK(d.name == "H100 SXM");
    CHECK_THAT(w.str(), Contains("does not name its GPU") && Contains("Hopper") && Contains("sm90_") && Contains("pass --origin NAME") &&
                            Contains("H200"));
    CHECK(resolve_origin(cat, t, std::string("H200")).name == "H200");  // --origin still decides
  }
  SECTION("only sm80_ kernels, which an H100 runs too: refused, asking for --origin") {
    // The H100's FP32 encoder: every matmul is an sm80_xmma kernel.
    const Trace t = kineto::read_trace(test::write_temp("noprops_h100_fp32.json", without_device_properties(test::fixture("h100", "encoder_fp32_b16"))));
    CHECK_THROWS_WITH(resolve_origin(cat, t, std::nullopt),
                      Contains("noprops_h100_fp32.json") && Contains("sm80_") && Contains("newer GPUs run too") && Contains("pass --origin DEVICE"));
  }
}

TEST_CASE("kernel names decide a generation only where their kernels run on no other", "[architecture]") {
  auto guess = [](std::vector<std::string_view> names) { return architecture_from_kernel_names(names); };
  auto gpu = [&](std::vector<std::string_view> names) {
    const auto g = guess(std::move(names));
    return g.architecture ? std::string(g.architecture->default_gpu) : "refused: " + g.why_not;
  };
  CHECK(gpu({"sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64", "sm80_xmma_gemm_f32f32", "elementwise_kernel"}) == "H100 SXM");
  CHECK(gpu({"sm100_xmma_gemm_bf16f16_bf16f16_bf16f32_tn_n"}) == "B200");
  CHECK(gpu({"Cijk_Ailk_Bljk_BBS_BH_MT64x64x64_ISA942_IU1", "Cijk_Alik_Bljk_ISA942_K1"}) == "MI300X");
  CHECK(gpu({"Cijk_Alik_Bljk_SB_Bias_ISA90a_IU1"}) == "MI250X");
  // Names newer GPUs run too (cuBLAS's maxwell_ on Pascal, volta_ on Turing, sm80_ on Hopper), none, or contradicting.
  CHECK_THAT(gpu({"maxwell_sgemm_128x64_nn"}), Contains("refused") && Contains("Maxwell or Pascal"));
  CHECK_THAT(gpu({"volta_sgemm_128x64_nn", "turing_fp16_s1688gemm_fp16_256x128"}), Contains("refused") && Contains("Turing"));
  CHECK_THAT(gpu({"ampere_sgemm_64x32_sliced1x4_nn"}), Contains("refused") && Contains("newer GPUs run too"));
  CHECK_THAT(gpu({"Cijk_Ailk_Bljk_SB_MT64x64x16"}), Contains("refused") && Contains("no gfx target"));
  CHECK_THAT(gpu({"flash_fwd_kernel_bf16", "elementwise_kernel"}), Contains("refused") && Contains("do not tell"));
  CHECK_THAT(gpu({"aiter_fused_moe_kernel_bf16"}), Contains("refused") && Contains("AMD Instinct"));
  // Template arguments and any case count; a longer number is another architecture's.
  CHECK(gpu({"void pytorch_flash::flash_fwd_kernel_bf16<sm100, headdim128>"}) == "B200");
  CHECK(gpu({"cutlass::device_kernel<cutlass::gemm::kernel::GemmUniversal<cutlass::arch::Sm90>>"}) == "H100 SXM");
  CHECK_THAT(gpu({"sm900_future_kernel"}), Contains("do not tell"));
  CHECK_THAT(gpu({"sm90_xmma_gemm", "Cijk_ISA942"}), Contains("refused") && Contains("both NVIDIA"));
  CHECK_THAT(gpu({"sm90_xmma_gemm", "sm100_xmma_gemm"}), Contains("refused") && Contains("2 architectures"));
  // Every GPU the table takes is in the catalog, of the vendor the table says.
  const Catalog cat = Catalog::builtin();
  for (const auto& a : kernel_architectures)
    if (!a.default_gpu.empty()) {
      CAPTURE(a.generation);
      const Device* d = cat.find(a.default_gpu);
      REQUIRE(d != nullptr);
      CHECK(d->vendor == a.vendor);
      CHECK(a.only_this);
    }
}
