#include <catch2/catch.hpp>

#include <zlib.h>

#include <algorithm>
#include <fstream>
#include <sstream>

#include "fixtures.hpp"
#include "habitat/device/resolve.hpp"
#include "habitat/kineto/reader.hpp"

using namespace habitat;

namespace {
// A minimal trace in the older spelling of Kineto (capitalised categories, "external id").
std::string tiny_trace(bool with_step, bool with_kernel, bool with_props) {
  std::string props = with_props ? R"("deviceProperties": [{"id": 0, "name": "Tesla V100-SXM2-16GB", "computeMajor": 7,
      "computeMinor": 0, "numSms": 80, "maxThreadsPerMultiprocessor": 2048}],)"
                                 : "";
  std::string events = R"({"ph": "X", "cat": "Operator", "name": "aten::relu", "pid": 1, "tid": 1, "ts": 10, "dur": 20,
      "args": {"external id": 5, "Input Dims": [[4, 1024]], "Input type": ["float"]}},
    {"ph": "X", "cat": "Runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": 12, "dur": 3,
      "args": {"correlation": 77, "external id": 5}})";
  if (with_step) events += R"(, {"ph": "X", "cat": "User annotation", "name": "ProfilerStep#1", "pid": 1, "tid": 1, "ts": 0, "dur": 100})";
  if (with_kernel)
    events += R"(, {"ph": "X", "cat": "Kernel", "name": "relu_kernel", "pid": 0, "tid": 7, "ts": 40, "dur": 5,
      "args": {"correlation": 77, "grid": [16, 1, 1], "block": [256, 1, 1], "registers per thread": 16, "shared memory": 0, "stream": 7}})";
  return "{" + props + R"("traceEvents": [)" + events + "]}";
}

std::string read_file(const std::string& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}
}  // namespace

TEST_CASE("older category and key names are accepted", "[kineto]") {
  const std::string p = test::write_temp("old_names.json", tiny_trace(true, true, true));
  const Trace t = kineto::read_trace(p);
  REQUIRE(t.kernels.size() == 1);
  CHECK(t.kernels[0].op >= 0);
  CHECK(t.ops[t.kernels[0].op].name == "aten::relu");
  CHECK(t.kernels[0].grid.x == 16);
  CHECK(t.device_name == "Tesla V100-SXM2-16GB");
  CHECK(resolve_origin(Catalog::builtin(), t, std::nullopt).name == "V100");
}

TEST_CASE("bad traces give errors naming the file and the problem", "[kineto][errors]") {
  using Catch::Contains;
  const std::string good = read_file(test::fixture("h100", "dcgan_fp32_b128"));
  SECTION("truncated gzip") {
    const std::string p = test::write_temp("cut.json.gz", good.substr(0, good.size() / 2));
    CHECK_THROWS_WITH(kineto::read_trace(p), Contains("cut.json.gz") && (Contains("truncated") || Contains("decompress")));
  }
  SECTION("gzip without its trailer (the JSON inside is whole)") {
    for (const std::size_t cut : {1, 4, 8}) {
      const std::string p = test::write_temp("no_trailer.json.gz", good.substr(0, good.size() - cut));
      CHECK_THROWS_WITH(kineto::read_trace(p), Contains("no_trailer.json.gz") && Contains("ends early"));
    }
  }
  SECTION("truncated JSON") {
    const std::string p = test::write_temp("cut.json", tiny_trace(true, true, true).substr(0, 150));
    CHECK_THROWS_WITH(kineto::read_trace(p), Contains("cut.json") && Contains("truncated JSON"));
  }
  SECTION("invalid JSON") {
    const std::string p = test::write_temp("bad.json", R"({"traceEvents": [ {"ph": "X",, }]})");
    CHECK_THROWS_WITH(kineto::read_trace(p), Contains("bad.json") && Contains("invalid JSON") && Contains("byte"));
  }
  SECTION("not a trace") {
    CHECK_THROWS_WITH(kineto::read_trace(test::write_temp("obj.json", R"({"a": 1})")), Contains("no 'traceEvents'"));
    CHECK_THROWS_WITH(kineto::read_trace(test::write_temp("empty.json", "")), Contains("empty"));
  }
  SECTION("no steps: refused with the flag that reads the whole trace as the step, and the warning says so") {
    const std::string nostep = test::write_temp("nostep.json", tiny_trace(false, true, true));
    CHECK_THROWS_WITH(kineto::read_trace(nostep), Contains("nostep.json") && Contains("no ProfilerStep#N") && Contains("--whole-trace"));
    const Trace t = kineto::read_trace(nostep, {.whole_trace = true});
    CHECK(t.step_name == "the whole trace");
    CHECK(t.kernels.size() == 1);
    REQUIRE(!t.warnings.empty());
    CHECK_THAT(t.warnings.front(), Contains("no ProfilerStep#N annotation") && Contains("whole trace"));
    CHECK_THROWS_WITH(kineto::read_trace(test::write_temp("nostep_nokernel.json", tiny_trace(false, false, true)), {.whole_trace = true}),
                      Contains("nostep_nokernel.json") && Contains("no kernels"));
  }
  SECTION("an AMD trace (warp size 64, no grid or block) is read as one, its kernels without launches") {
    std::string amd = tiny_trace(true, true, true);
    for (const auto& [from, to] : {std::pair<std::string, std::string>{"Tesla V100-SXM2-16GB", "AMD Instinct MI250X"},
                                   {"\"numSms\": 80", "\"numSms\": 104, \"warpSize\": 64"},
                                   {"\"grid\": [16, 1, 1], \"block\": [256, 1, 1], ", ""}}) {
      const auto at = amd.find(from);
      REQUIRE(at != std::string::npos);
      amd.replace(at, from.size(), to);
    }
    const Trace t = kineto::read_trace(test::write_temp("amd.json", amd));
    REQUIRE(t.device_props);
    CHECK(t.device_props->vendor == Vendor::amd);
    REQUIRE(!t.kernels.empty());
    CHECK(!t.kernels.front().launch_recorded);
    CHECK(resolve_origin(Catalog::builtin(), t, std::nullopt).name == "MI250X");
    // An NVIDIA trace's kernel without a launch is still refused.
    std::string nv = tiny_trace(true, true, true);
    const std::string launch = "\"grid\": [16, 1, 1], \"block\": [256, 1, 1], ";
    REQUIRE(nv.find(launch) != std::string::npos);
    nv.replace(nv.find(launch), launch.size(), "");
    CHECK_THROWS_WITH(kineto::read_trace(test::write_temp("nolaunch.json", nv)), Contains("nolaunch.json") && Contains("has no 'grid'"));
  }
  SECTION("no kernels") {
    CHECK_THROWS_WITH(kineto::read_trace(test::write_temp("nokernel.json", tiny_trace(true, false, true))),
                      Contains("nokernel.json") && Contains("no kernels"));
  }
  SECTION("missing deviceProperties needs --origin") {
    const Trace t = kineto::read_trace(test::write_temp("noprops.json", tiny_trace(true, true, false)));
    CHECK_THROWS_WITH(resolve_origin(Catalog::builtin(), t, std::nullopt), Contains("--origin"));
    CHECK(resolve_origin(Catalog::builtin(), t, std::string("T4")).name == "T4");
  }
  SECTION("unknown origin GPU") {
    const Trace t = kineto::read_trace(test::fixture("h100", "dcgan_fp32_b128"));
    CHECK_THROWS_WITH(resolve_origin(Catalog::builtin(), t, std::string("Voodoo 2")), Contains("not in the device catalog"));
  }
  SECTION("missing file") { CHECK_THROWS_WITH(kineto::read_trace("/nonexistent/t.json"), Contains("cannot open")); }
}

// Cut a real trace (uncompressed and gzipped) at many places: every cut is a habitat::error naming the
// file, never a crash, a hang or a silently shorter iteration.
TEST_CASE("a trace cut anywhere is an error and never a crash", "[kineto][errors]") {
  const std::string gz = read_file(test::fixture("h200", "dcgan_fp32_b128"));
  std::string json;
  {
    gzFile f = gzopen(test::fixture("h200", "dcgan_fp32_b128").c_str(), "rb");
    REQUIRE(f);
    char buf[1 << 16];
    for (int n; (n = gzread(f, buf, sizeof buf)) > 0;) json.append(buf, static_cast<std::size_t>(n));
    gzclose(f);
  }
  REQUIRE(json.size() > 100000);
  for (int i = 1; i < 40; ++i) {
    const std::size_t cut = json.size() * static_cast<std::size_t>(i) / 40;
    const std::string p = test::write_temp("cut_" + std::to_string(i) + ".json", json.substr(0, cut));
    INFO("cut at byte " << cut);
    CHECK_THROWS_AS(kineto::read_trace(p), habitat::error);
  }
  for (int i = 1; i < 10; ++i) {
    const std::size_t cut = gz.size() * static_cast<std::size_t>(i) / 10;
    const std::string p = test::write_temp("cut_" + std::to_string(i) + ".json.gz", gz.substr(0, cut));
    INFO("gzip cut at byte " << cut);
    CHECK_THROWS_AS(kineto::read_trace(p), habitat::error);
  }
}

TEST_CASE("non-finite numbers and launches beyond CUDA's limits are errors, not NaN or undefined casts", "[kineto][errors]") {
  using Catch::Contains;
  const std::string base = tiny_trace(true, true, true);
  auto with = [&](const std::string& from, const std::string& to) {
    std::string s = base;
    const auto at = s.find(from);
    REQUIRE(at != std::string::npos);
    return s.replace(at, from.size(), to);
  };
  const std::pair<std::string, std::string> cases[] = {
      {R"("ts": 40, "dur": 5)", R"("ts": 40, "dur": "nan")"},
      {R"("ts": 40, "dur": 5)", R"("ts": 40, "dur": "inf")"},
      {R"("ts": 40, "dur": 5)", R"("ts": "nan", "dur": 5)"},
      {R"("grid": [16, 1, 1])", R"("grid": [2147483648, 1, 1])"},
      {R"("grid": [16, 1, 1])", R"("grid": [16, 70000, 1])"},
      {R"("block": [256, 1, 1])", R"("block": [2048, 1, 1])"},
      {R"("block": [256, 1, 1])", R"("block": [512, 4, 1])"},
      {R"("block": [256, 1, 1])", R"("block": [1, 1, 128])"},
      {R"("block": [256, 1, 1])", R"("block": [256.5, 1, 1])"},
      {R"("ts": 40, "dur": 5)", R"("ts": 40, "dur": 1e400)"},
      {R"("registers per thread": 16)", R"("registers per thread": 1e12)"},
      {R"("registers per thread": 16)", R"("registers per thread": 256)"},
      {R"("ts": 40, "dur": 5)", R"("ts": 40, "dur": 1e300)"},
      {R"("ts": 40, "dur": 5)", R"("ts": 1e300, "dur": 5)"},
      {R"("shared memory": 0)", R"("shared memory": -5)"},
      {R"("shared memory": 0)", R"("shared memory": 1e30)"},
  };
  for (const auto& [from, to] : cases) {
    INFO(to);
    const std::string p = test::write_temp("bad_number.json", with(from, to));
    CHECK_THROWS_WITH(kineto::read_trace(p), Contains("bad_number.json") && Contains("event #"));
  }
  // A negative duration is an error for every kind of event.
  for (const auto& [from, to] : {std::pair<std::string, std::string>{R"("ts": 10, "dur": 20)", R"("ts": 10, "dur": -20)"},
                                 {R"("ts": 0, "dur": 100)", R"("ts": 0, "dur": -100)"}}) {
    const std::string p = test::write_temp("negative_dur.json", with(from, to));
    CHECK_THROWS_WITH(kineto::read_trace(p), Contains("negative_dur.json") && Contains("negative duration"));
  }
  // The same kernel event twice is counted once, with a warning.
  {
    const std::string kernel = base.substr(base.find(R"({"ph": "X", "cat": "Kernel")"));
    const std::string twice = with(kernel, kernel.substr(0, kernel.size() - 2) + ", " + kernel);
    const Trace once = kineto::read_trace(test::write_temp("kernel_once.json", base));
    const Trace t = kineto::read_trace(test::write_temp("kernel_twice.json", twice));
    CHECK(t.kernels.size() == once.kernels.size());
    CHECK(t.gpu_active_us() == once.gpu_active_us());
    CHECK(std::any_of(t.warnings.begin(), t.warnings.end(), [](const std::string& w) { return w.find("appear twice") != std::string::npos; }));
  }
  // Device properties beyond an int are taken as missing, not cast.
  const std::string p = test::write_temp("huge_props.json", with(R"("numSms": 80)", R"("numSms": 1e300)"));
  CHECK_FALSE(kineto::read_trace(p).device_props.has_value());
}

// torch 1.8 wrote the GPU as "computeProperties" with other key names; an AMD GPU reports a compute capability
// too, which must not make it an NVIDIA GPU's sibling.
TEST_CASE("old computeProperties are read, and an AMD GPU outside the catalog gets an AMD sibling", "[kineto]") {
  std::string t = tiny_trace(true, true, false);
  t.insert(1, R"("computeProperties": [{"id": 0, "name": "Tesla V100-DGXS-32GB", "major": 7, "minor": 0, "multiProcessorCount": 80,
      "maxThreadsPerMultiProcessor": 2048}],)");
  const Trace old = kineto::read_trace(test::write_temp("computeprops.json", t));
  REQUIRE(old.device_props);
  CHECK(old.device_props->sms == 80);
  CHECK(old.device_props->cc_major == 7);
  CHECK(resolve_origin(Catalog::builtin(), old, std::nullopt).name == "V100");

  std::string a = tiny_trace(true, true, false);
  // No warpSize: the name says AMD. gfx 9.0 with 110 CUs is an MI250X GCD's sibling, never the H100 (also 9.0).
  a.insert(1, R"("deviceProperties": [{"id": 0, "name": "AMD Instinct MI2XX", "computeMajor": 9, "computeMinor": 0, "numSms": 110}],)");
  const Trace amd = kineto::read_trace(test::write_temp("amd.json", a));
  std::ostringstream warnings;
  const Device o = resolve_origin(Catalog::builtin(), amd, std::nullopt, &warnings);
  CHECK(o.vendor == Vendor::amd);
  CHECK(o.limits.warp_size == 64);
  CHECK(o.fp32_lanes_per_sm == Catalog::builtin().at("MI250X").fp32_lanes_per_sm);
  CHECK(warnings.str().find("MI250X") != std::string::npos);
}
