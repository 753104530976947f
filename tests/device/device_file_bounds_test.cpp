// Numbers in user device files and host profiles: finite, within plausible bounds, whole where a count is
// meant; each violation an error naming the file, the place with the field, and what was wrong.
#include <catch2/catch.hpp>

#include <string>

#include "habitat/device/catalog.hpp"
#include "habitat/sim/host_profile.hpp"

using Catch::Contains;
using habitat::Catalog;

namespace {
// A complete new GPU: `fields` adds to its name and compute capability ("9.0" unless given).
std::string gpu_with(const std::string& fields) {
  const std::string cc = fields.find("compute_capability") == std::string::npos ? R"("compute_capability": "9.0", )" : "";
  return R"({"devices": [{"name": "X", )" + cc + fields + "}]}";
}
const std::string basics = R"("boost_clock_mhz": 1500, "bandwidth_gbps": 2000, "fp32_lanes_per_sm": 128)";
// One field of the built-in H100 SXM overridden, as a user's --devices file does.
std::string h100_with(const std::string& field) { return R"({"devices": [{"name": "H100 SXM", )" + field + "}]}"; }

void refused(const std::string& json, const std::string& place, const std::string& problem) {
  Catalog c = Catalog::builtin();
  INFO(json);
  CHECK_THROWS_WITH(c.merge_json(json, "user.json"), Contains("user.json: ") && Contains(place) && Contains(problem));
}
}  // namespace

TEST_CASE("device files: a bandwidth of 0 or below is refused, measured or spec", "[catalog][errors]") {
  refused(h100_with(R"("measured_bandwidth_gbps": 0)"), "devices[0] (H100 SXM).measured_bandwidth_gbps", "got 0");
  refused(h100_with(R"("measured_bandwidth_gbps": -3000)"), "devices[0] (H100 SXM).measured_bandwidth_gbps", "got -3000");
  refused(h100_with(R"("bandwidth_gbps": 0)"), "devices[0] (H100 SXM).bandwidth_gbps", "GB/s from 1 to 100000");
  refused(gpu_with(R"("sms": 100, "measured_bandwidth_gbps": -1, )" + basics), "devices[0] (X).measured_bandwidth_gbps", "got -1");
}

TEST_CASE("device files: non-finite numbers are refused", "[catalog][errors]") {
  // Boost.JSON reads 1e400 as infinity: the only way JSON spells a non-finite number.
  for (const char* key : {"bandwidth_gbps", "measured_bandwidth_gbps", "boost_clock_mhz", "base_clock_mhz", "sustained_clock_mhz",
                          "tensor_clock_mhz", "fp32_lanes_per_sm", "fp64_lanes_per_sm", "fp32_tflops", "bf16_tflops", "memory_gib",
                          "l2_mib", "tdp_w", "sms"}) {
    refused(h100_with("\"" + std::string(key) + "\": 1e400"), "devices[0] (H100 SXM)." + std::string(key), "got inf");
    refused(h100_with("\"" + std::string(key) + "\": -1e400"), "devices[0] (H100 SXM)." + std::string(key), "got -inf");
  }
  refused(h100_with(R"("tensor_flops_per_clk_per_sm": {"bf16": 1e400})"), "tensor_flops_per_clk_per_sm.bf16", "got inf");
  refused(h100_with(R"("datasheet": {"fp32_tflops": 1e400})"), "datasheet.fp32_tflops", "got inf");
  refused(h100_with(R"("price": {"usd_per_hour": 1e400})"), "devices[0] (H100 SXM).price.usd_per_hour", "got inf");
  refused(h100_with(R"("interconnect": {"nvlink": {"gbps_per_direction": 1e400}})"), "interconnect.nvlink.gbps_per_direction", "got inf");
}

TEST_CASE("device files: absurdly small or large rates are refused by a plausible range", "[catalog][errors]") {
  // 1e-300 GB/s once gave predictions of 1e301 ms.
  refused(h100_with(R"("bandwidth_gbps": 1e-300)"), "bandwidth_gbps", "got 1e-300");
  refused(h100_with(R"("measured_bandwidth_gbps": 1e-300)"), "measured_bandwidth_gbps", "got 1e-300");
  refused(h100_with(R"("fp32_lanes_per_sm": 1e-300)"), "fp32_lanes_per_sm", "got 1e-300");
  refused(h100_with(R"("fp32_tflops": 1e-300)"), "fp32_tflops", "TFLOPS from 0.001 to 1000000");
  refused(h100_with(R"("tensor_flops_per_clk_per_sm": {"fp16": 1e-300})"), "tensor_flops_per_clk_per_sm.fp16", "0 or a number");
  refused(h100_with(R"("boost_clock_mhz": 0.001)"), "boost_clock_mhz", "MHz from 10 to 10000");
  refused(h100_with(R"("bandwidth_gbps": 1e9)"), "bandwidth_gbps", "got 1000000000");
  // Peaks given as TFLOPS become per-SM rates, which must be plausible too: 100000 TFLOPS on 1 SM.
  refused(gpu_with(R"("sms": 1, "boost_clock_mhz": 1500, "bandwidth_gbps": 2000, "fp32_tflops": 100000)"), "devices[0] (X).fp32_tflops", "lanes on 1 SMs at 1500 MHz");
}

TEST_CASE("device files: negative memory, L2, price, power or reserved shared memory are refused", "[catalog][errors]") {
  refused(h100_with(R"("memory_gib": -80)"), "devices[0] (H100 SXM).memory_gib", "got -80");
  refused(h100_with(R"("l2_mib": -50)"), "devices[0] (H100 SXM).l2_mib", "got -50");
  refused(h100_with(R"("price": {"usd_per_hour": -2.5})"), "devices[0] (H100 SXM).price.usd_per_hour", "got -2.5");
  refused(h100_with(R"("tdp_w": -700)"), "devices[0] (H100 SXM).tdp_w", "got -700");
  refused(h100_with(R"("limits": {"reserved_shared_mem_per_block": -1024})"), "reserved_shared_mem_per_block", "got -1024");
  refused(R"({"architectures": {"9.0": {"reserved_shared_mem_per_block": -1}}, "devices": []})", "architectures.9.0.reserved_shared_mem_per_block",
          "got -1");
}

TEST_CASE("device files: counts are whole numbers that fit their integers", "[catalog][errors]") {
  refused(h100_with(R"("sms": 132.5)"), "devices[0] (H100 SXM).sms", "whole number");
  refused(h100_with(R"("limits": {"warp_size": 32.5})"), "devices[0] (H100 SXM).limits.warp_size", "whole number");
  refused(h100_with(R"("limits": {"max_threads_per_block": 1e10})"), "max_threads_per_block", "got 10000000000");
  refused(h100_with(R"("limits": {"regs_per_sm": 4294967296})"), "regs_per_sm", "whole number of registers");
  refused(h100_with(R"("limits": {"shared_mem_per_sm": 1e300})"), "shared_mem_per_sm", "whole number of bytes");
  refused(R"({"architectures": {"9.0": {"max_threads_per_sm": 0}}, "devices": []})", "architectures.9.0.max_threads_per_sm", "got 0");
  refused(h100_with(R"("interconnect": {"pcie": {"lanes": 16.5}})"), "interconnect.pcie.lanes", "whole number from 1 to 64");
  refused(h100_with(R"("interconnect": {"node": {"gpus": 1e12}})"), "interconnect.node.gpus", "got 1000000000000");
  for (const char* cc : {"9.0abc", "99999999999.0", "9", "0.0", "9.-1", ".5", "x.y"})
    refused(h100_with(R"("compute_capability": ")" + std::string(cc) + "\""), "devices[0] (H100 SXM).compute_capability", cc);
}

TEST_CASE("device files: values at the edges of the ranges and the zeros that mean a default stay valid", "[catalog]") {
  Catalog c = Catalog::builtin();
  c.merge_json(h100_with(R"("sustained_clock_mhz": 0, "tensor_clock_mhz": 0, "tensor_flops_per_clk_per_sm": {"fp8": 0},
      "price": {"usd_per_hour": 0}, "memory_gib": 0, "l2_mib": 0, "measured_bandwidth_gbps": 1, "limits": {"reserved_shared_mem_per_block": 0})"),
               "user.json");
  const auto& d = c.at("H100 SXM");
  CHECK(d.sustained_bandwidth_gbps() == 1);
  CHECK(d.tensor.fp8 == 0);
  CHECK(d.price->usd_per_hour == 0);
  c.merge_json(gpu_with(R"("compute_capability": "12.0", "sms": 1, "bandwidth_gbps": 100000, "boost_clock_mhz": 10000, "fp32_lanes_per_sm": 1)"),
               "user.json");
  CHECK(c.at("X").cc_major == 12);
  CHECK(c.at("X").bandwidth_spec_gbps == 100000);
}

TEST_CASE("host profiles: per-op times and profiler costs are finite and plausible", "[sim][errors]") {
  auto parse = [](const std::string& json) {
    return habitat::sim::parse_host_profile(habitat::detail::parse_document(json, "host.json"), {"host.json", "top level"});
  };
  auto refused_host = [&](const std::string& fields, const std::string& place, const std::string& problem) {
    INFO(fields);
    CHECK_THROWS_WITH(parse(R"({"name": "h", )" + fields + "}"), Contains("host.json: ") && Contains(place) && Contains(problem));
  };
  CHECK(parse(R"({"name": "h", "cpu_op_us": 2.5, "profiler": {"per_op_us": 0, "per_call_us": 1.5}})").per_op_us.at("cpu_op_us") == 2.5);
  refused_host(R"("cpu_op_us": 1e-300)", "top level.cpu_op_us", "got 1e-300");  // a host 1e300 times faster
  refused_host(R"("dispatch_us": 1e400)", "top level.dispatch_us", "got inf");
  refused_host(R"("cuda_launch_op_us": -4)", "top level.cuda_launch_op_us", "got -4");
  refused_host(R"("cuda_launch_op_us": 0)", "top level.cuda_launch_op_us", "microseconds from 0.001");
  refused_host(R"("profiler": {"per_op_us": -1, "per_call_us": 1})", "top level.profiler.per_op_us", "got -1");
  refused_host(R"("profiler": {"per_op_us": 1, "per_call_us": 1e400})", "top level.profiler.per_call_us", "got inf");
  refused_host(R"("profiler": {"per_op_us": 1, "per_call_us": 1, "slowdown": 0.5})", "top level.profiler.slowdown", "from 1 to 10");
  refused_host(R"("profiler": {"per_op_us": 1})", "top level.profiler", "missing number field 'per_call_us'");
  const std::string count = R"({"per_step_us": 9, "per_top_op_us": 20, "per_nested_op_us": 3, "per_enqueue_us": 5, "per_other_call_us": 3})";
  const auto h = parse(R"({"name": "h", "step_cost": {"unprofiled": )" + count + R"(, "profiled": )" + count + R"(, "above": 0.3}})");
  REQUIRE(h.step_cost);
  CHECK(h.step_cost->unprofiled.per_top_op_us == 20);
  CHECK(h.step_cost->above == 0.3);
  CHECK(h.step_cost->below == habitat::sim::StepCost{}.below);
  refused_host(R"("step_cost": {"unprofiled": )" + count + "}", "top level.step_cost.profiled",
               "missing object (per_step_us, per_top_op_us, per_nested_op_us, per_enqueue_us, per_other_call_us, per_python_record_us (optional), "
               "per_first_step_us (optional))");
  refused_host(R"("step_cost": {"profiled": )" + count + "}", "top level.step_cost.unprofiled",
               "missing object (per_step_us, per_top_op_us, per_nested_op_us, per_enqueue_us, per_other_call_us)");
  refused_host(R"("step_cost": {"unprofiled": {"per_step_us": 1}, "profiled": )" + count + "}", "top level.step_cost.unprofiled",
               "missing number field 'per_top_op_us'");
  refused_host(R"("step_cost": {"unprofiled": )" + count + R"(, "profiled": )" + count + R"(, "below": 2})", "top level.step_cost.below", "from 0 to 1");
  refused_host(R"("step_cost": {"unprofiled": {"per_step_us": 0, "per_top_op_us": 0, "per_nested_op_us": 3, "per_enqueue_us": 0, "per_other_call_us": 3}, "profiled": )" +
                   count + "}",
               "top level.step_cost.unprofiled", "nothing to count");
  refused_host(R"("step_cost": {"unprofiled": )" + count + R"(, "profiled": {"per_step_us": 1e400, "per_top_op_us": 1, "per_nested_op_us": 1, "per_enqueue_us": 1, "per_other_call_us": 1}})",
               "top level.step_cost.profiled.per_step_us", "got inf");
  refused_host(R"("step_cost": [1])", "top level.step_cost", "must be an object");
  // Python's records (with_stack) cost the profiled step alone: optional there, refused in the un-profiled count.
  const std::string with_python = count.substr(0, count.size() - 1) + R"(, "per_python_record_us": 4})";
  CHECK(h.step_cost->profiled.per_python_record_us == 0);
  const auto hp = parse(R"({"name": "h", "step_cost": {"unprofiled": )" + count + R"(, "profiled": )" + with_python + "}}");
  REQUIRE(hp.step_cost);
  CHECK(hp.step_cost->profiled.per_python_record_us == 4);
  CHECK(hp.step_cost->scaled(0.5).profiled.per_python_record_us == 2);
  refused_host(R"("step_cost": {"unprofiled": )" + with_python + R"(, "profiled": )" + count + "}", "top level.step_cost.unprofiled.per_python_record_us",
               "must be 0: only a profiled step has these records");
  refused_host(R"("step_cost": {"unprofiled": )" + count + R"(, "profiled": )" + count.substr(0, count.size() - 1) + R"(, "per_python_record_us": -1}})",
               "top level.step_cost.profiled.per_python_record_us", "got -1");
  // So does a session's first active step's extra (per_first_step_us).
  const auto hf = parse(R"({"name": "h", "step_cost": {"unprofiled": )" + count + R"(, "profiled": )" + count.substr(0, count.size() - 1) +
                        R"(, "per_first_step_us": 84}}})");
  REQUIRE(hf.step_cost);
  CHECK(hf.step_cost->profiled.per_first_step_us == 84);
  CHECK(hf.step_cost->scaled(0.5).profiled.per_first_step_us == 42);
  refused_host(R"("step_cost": {"unprofiled": )" + count.substr(0, count.size() - 1) + R"(, "per_first_step_us": 1}, "profiled": )" + count + "}",
               "top level.step_cost.unprofiled.per_first_step_us", "must be 0: only a profiled step has these records");
}
