#include <catch2/catch.hpp>

#include "habitat/device/catalog.hpp"

using habitat::Catalog;

TEST_CASE("built-in catalog holds the paper GPUs and current GPUs and each is usable", "[catalog]") {
  const Catalog c = Catalog::builtin();
  REQUIRE(c.devices().size() >= 20);
  for (const char* n : {"P4000", "P100", "V100", "RTX 2070", "RTX 2080 Ti", "T4", "A100 SXM4 40GB", "A100 SXM4 80GB", "A100 PCIe 40GB",
                        "H100 SXM", "H100 PCIe", "H200", "L4", "L40S", "A10G", "RTX 3090", "RTX 4090", "B200"})
    CHECK(c.find(n) != nullptr);
  for (const auto& d : c.devices()) {
    INFO(d.name);
    CHECK(d.sms > 0);
    CHECK(d.boost_clock_mhz >= d.base_clock_mhz);
    CHECK(d.bandwidth_spec_gbps > 0);
    CHECK(d.fp32_tflops > 0);
    CHECK(d.bf16_tflops >= d.fp32_tflops * 0.01);
    CHECK(!d.source.empty());
    CHECK(d.limits.shared_mem_per_sm >= d.limits.shared_mem_per_block_optin);
    if (d.price) CHECK(!d.price->date.empty());
  }
}

TEST_CASE("device names from traces match case-insensitively", "[catalog]") {
  const Catalog c = Catalog::builtin();
  CHECK(c.at("NVIDIA H100 80GB HBM3").name == "H100 SXM");
  CHECK(c.at("nvidia h200").name == "H200");
  CHECK(c.at("Tesla V100-SXM2-16GB").name == "V100");
  CHECK(c.at("geforce rtx 4090").name == "RTX 4090");
  CHECK_THROWS_WITH(c.at("Voodoo 2"), Catch::Contains("unknown GPU") && Catch::Contains("--devices"));
}

TEST_CASE("user device files add GPUs and override single fields", "[catalog]") {
  Catalog c = Catalog::builtin();
  c.merge_json(R"({"devices": [
      {"name": "H100 SXM", "measured_bandwidth_gbps": 3000},
      {"name": "My GPU", "compute_capability": "9.0", "sms": 100, "boost_clock_mhz": 1500,
       "bandwidth_gbps": 2000, "fp32_tflops": 40}]})",
               "user.json");
  CHECK(*c.at("H100 SXM").bandwidth_measured_gbps == 3000);
  CHECK(c.at("H100 SXM").sms == 132);  // untouched fields stay
  CHECK(c.at("my gpu").limits.max_threads_per_sm == 2048);  // limits from compute capability 9.0
}

TEST_CASE("bad device files name the file and the device and the field", "[catalog][errors]") {
  Catalog c = Catalog::builtin();
  CHECK_THROWS_WITH(c.merge_json("{", "u.json"), Catch::Contains("u.json") && Catch::Contains("invalid JSON"));
  CHECK_THROWS_WITH(c.merge_json(R"({"devices": [{"name": "X", "compute_capability": "9.0", "sms": 1}]})", "u.json"),
                    Catch::Contains("devices[0] (X)") && Catch::Contains("boost_clock_mhz"));
  CHECK_THROWS_WITH(c.merge_json(R"({"devices": [{"name": "X", "compute_capability": "4.2", "sms": 1}]})", "u.json"),
                    Catch::Contains("no occupancy limits"));
  CHECK_THROWS_WITH(c.merge_json(R"({"devices": [{"name": "X", "sms": "many"}]})", "u.json"), Catch::Contains("'sms' must be a number"));
  CHECK_THROWS_WITH(c.merge_json(R"({"schema": "habitat.devices/9", "devices": []})", "u.json"), Catch::Contains("unsupported schema"));
}
