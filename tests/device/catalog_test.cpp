#include <catch2/catch.hpp>

#include <algorithm>

#include "habitat/device/catalog.hpp"
#include "habitat/studies/unseen_gpu.hpp"

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
    CHECK(d.fp32_tflops() > 0);
    CHECK(d.fp32_lanes_per_sm > 0);
    CHECK(d.bandwidth_measured_gbps);  // sustained bandwidth for every GPU, with where it comes from
    CHECK(!d.bandwidth_measured_source.empty());
    CHECK(*d.bandwidth_measured_gbps < d.bandwidth_spec_gbps);
    CHECK(d.l2_mib > 0);
    CHECK(!d.source.empty());
    CHECK(d.limits.shared_mem_per_sm >= d.limits.shared_mem_per_block_optin);
    if (d.price) CHECK(!d.price->date.empty());
  }
}

TEST_CASE("device names from traces match case-insensitively", "[catalog]") {
  const Catalog c = Catalog::builtin();
  CHECK(c.at("AMD Instinct MI300X").name == "MI300X");
  CHECK(c.at("AMD Instinct MI210").name == "MI210");
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

// Lanes x SMs x clock x 2 must reproduce every vendor peak the catalog lists (dense figures; 3% covers the
// vendors' rounding, e.g. L40S BF16 362 TFLOPS against 1024 FLOP/clk/SM x 142 x 2520 MHz = 366).
TEST_CASE("derived peaks reproduce each datasheet figure", "[catalog]") {
  using habitat::Precision;
  const Catalog c = Catalog::builtin();
  int checked = 0;
  for (const auto& d : c.devices()) {
    INFO(d.name);
    REQUIRE(d.datasheet.count(d.nvidia() ? "fp32_tflops" : "fp32_matrix_tflops"));
    for (const auto& [key, vendor] : d.datasheet) {
      INFO(key << " datasheet " << vendor);
      double derived = 0;
      if (key == "fp32_tflops" || key == "fp32_matrix_tflops") derived = d.peak_tflops(Precision::fp32);
      else if (key == "tf32_tflops") derived = d.peak_tflops(Precision::tf32);
      else if (key == "fp16_tflops") derived = d.peak_tflops(Precision::fp16);
      else if (key == "bf16_tflops") derived = d.peak_tflops(Precision::bf16);
      else if (key == "fp8_tflops") derived = d.tensor.fp8 * d.sms * (d.tensor_clock_mhz > 0 ? d.tensor_clock_mhz : d.boost_clock_mhz) * 1e-6;
      else if (key == "fp64_tflops") derived = 2 * d.fp64_lanes_per_sm * d.sms * d.boost_clock_mhz * 1e-6;
      else FAIL("unknown datasheet key " << key);
      CHECK(derived == Approx(vendor).epsilon(0.03));
      ++checked;
    }
  }
  CHECK(checked >= 60);
}

TEST_CASE("per-SM datapaths differ by generation as the whitepapers say", "[catalog]") {
  using habitat::Precision;
  const Catalog c = Catalog::builtin();
  CHECK(c.at("H100 SXM").fp32_lanes_per_sm == 2 * c.at("A100 SXM4 40GB").fp32_lanes_per_sm);  // Hopper 128, GA100 64
  CHECK(c.at("V100").fp32_lanes_per_sm == 64);
  CHECK(c.at("L4").fp32_lanes_per_sm == 128);
  CHECK(c.at("T4").flops_per_clk_per_sm(Precision::bf16) == 128);  // no BF16 tensor cores on Turing: SIMT
  CHECK(c.at("A100 SXM4 40GB").flops_per_clk_per_sm(Precision::bf16) == 2048);
  CHECK(c.at("H100 SXM").peak_tflops(Precision::bf16) == Approx(989.4).epsilon(0.001));
  // Power-capped cards sustain less than their boost clock under load.
  for (const char* n : {"T4", "P4", "L4"}) {
    INFO(n);
    CHECK(c.at(n).load_clock_mhz(Precision::fp32) < c.at(n).boost_clock_mhz);
    CHECK(!c.at(n).load_clock_source().empty());
  }
  // The T4's and P4's clocks derive from their power limits and their references' power per lane-clock.
  CHECK(c.at("T4").load_clock_mhz(Precision::fp32) == Approx(1108).epsilon(0.01));
  CHECK(c.at("P4").load_clock_mhz(Precision::fp32) == Approx(763).epsilon(0.01));
  CHECK(c.at("T4").loop_clock_mhz_at(Precision::fp32) == 730);
  CHECK(c.at("A100 SXM4 40GB").load_clock_mhz(Precision::fp32) == c.at("A100 SXM4 40GB").boost_clock_mhz);
}

TEST_CASE("An SM issues one warp instruction per scheduler per clock: GP100 has two schedulers, the others four", "[catalog]") {
  const Catalog c = Catalog::builtin();
  CHECK(c.at("P100").issue_threads_per_clk_per_sm() == 64);
  for (const char* n : {"P4", "V100 PCIe 32GB", "T4", "A100 PCIe 40GB", "H100 SXM"}) {
    INFO(n);
    CHECK(c.at(n).issue_threads_per_clk_per_sm() == 128);
  }
}

TEST_CASE("AMD Instinct GPUs take their limits from their gfx target, not from Hopper's compute capability", "[catalog][amd]") {
  using habitat::Precision;
  const Catalog c = Catalog::builtin();
  for (const char* n : {"MI100", "MI210", "MI250", "MI250X", "MI300X"}) {
    INFO(n);
    const auto& d = c.at(n);
    CHECK(d.vendor == habitat::Vendor::amd);
    CHECK(d.limits.warp_size == 64);
    CHECK(d.limits.shared_mem_per_sm == 65536);  // 64 KiB of LDS, where Hopper (also "9.0" to HIP) has 228 KiB
    CHECK(!d.hopper());
    CHECK(!d.fp32_issue_limited());
    CHECK(d.issue_threads_per_clk_per_sm() == 64);
    CHECK(!d.on_tensor_cores(Precision::tf32));  // PyTorch's ROCm defaults keep FP32 in FP32
    CHECK(d.on_tensor_cores(Precision::bf16));
  }
  // The three GPUs NeuSight published AMD latencies for say what they were checked on; the others say nothing.
  for (const char* n : {"MI100", "MI210", "MI250"}) CHECK(c.at(n).validation.find("amd_labels.json") != std::string::npos);
  for (const char* n : {"MI250X", "MI300X"}) CHECK(c.at(n).validation.empty());
  CHECK(c.at("MI210").cc_major == 9);
  CHECK(c.at("H100 SXM").hopper());
  CHECK(c.at("MI300X").peak_tflops(Precision::bf16) == Approx(1307.4).epsilon(0.001));
  CHECK(c.at("MI250X").peak_tflops(Precision::fp32) == Approx(95.7 / 2).epsilon(0.01));  // one GCD of two
  Catalog user = Catalog::builtin();
  CHECK_THROWS_WITH(user.merge_json(R"({"devices": [{"name": "MI9", "vendor": "AMD", "compute_capability": "9.0", "sms": 1}]})", "u.json"),
                    Catch::Contains("u.json") && Catch::Contains("MI9") && Catch::Contains("'isa'"));
  CHECK_THROWS_WITH(user.merge_json(R"({"devices": [{"name": "X", "vendor": "Intel"}]})", "u.json"), Catch::Contains("vendor"));
}

TEST_CASE("a power reference must name another GPU that holds its boost clock", "[catalog]") {
  Catalog bad = Catalog::builtin();  // a file that fails leaves its catalog unusable: the CLI stops (exit 2)
  CHECK_THROWS_WITH(bad.merge_json(R"({"devices": [{"name": "T4", "power_reference": "Nope"}]})", "u.json"),
                    Catch::Contains("u.json") && Catch::Contains("power_reference") && Catch::Contains("Nope"));
  Catalog capped = Catalog::builtin();
  CHECK_THROWS_WITH(capped.merge_json(R"({"devices": [{"name": "T4", "power_reference": "L4"}]})", "u.json"),
                    Catch::Contains("holds its boost clock"));
  // A measured clock wins over the derived one.
  Catalog c = Catalog::builtin();
  c.merge_json(R"({"devices": [{"name": "T4", "sustained_clock_mhz": 1000, "sustained_clock_source": "mine"}]})", "u.json");
  CHECK(c.at("T4").load_clock_mhz(habitat::Precision::fp32) == 1000);
  CHECK(c.at("T4").load_clock_source() == "mine");
}

TEST_CASE("a capped card's SGEMM loop clock from a capped card of its process family: the P4 and the T4 give each other's within 2%", "[catalog]") {
  using habitat::Precision;
  const Catalog c = Catalog::builtin();
  const auto& p4 = c.at("P4");
  const auto& t4 = c.at("T4");
  REQUIRE(habitat::loop_clock_peers(t4, p4));
  REQUIRE(habitat::loop_clock_peers(p4, t4));
  // Each measured from NeuSight's public timings (730 and 770 MHz); each from the other's energy per lane-clock.
  CHECK(habitat::loop_clock_from_peer(t4, p4) == Approx(t4.loop_clock_mhz).epsilon(0.02));
  CHECK(habitat::loop_clock_from_peer(p4, t4) == Approx(p4.loop_clock_mhz).epsilon(0.02));
  CHECK(habitat::loop_clock_from_peer(t4, p4) < t4.load_clock_mhz(Precision::fp32));
  CHECK(!habitat::loop_clock_peers(t4, t4));
  CHECK(!habitat::loop_clock_peers(c.at("L4"), t4));  // another process: no peer, its loop runs at its clock under load
  CHECK(c.at("L4").loop_clock_mhz_at(Precision::fp32) == c.at("L4").load_clock_mhz(Precision::fp32));
  // A user's capped card of the family gets one, named as derived; given its own, that wins; a peer-derived clock
  // is no peer itself.
  Catalog u = Catalog::builtin();
  u.merge_json(R"({"devices": [{"name": "Mine", "compute_capability": "7.5", "sms": 20, "boost_clock_mhz": 1500, "bandwidth_gbps": 200,
       "fp32_tflops": 3.84, "tdp_w": 35, "power_reference": "V100 PCIe 32GB", "process_family": "TSMC 16/12 nm"}]})", "u.json");
  const auto& mine = u.at("Mine");
  const double from_p4 = 35.0 / (20 * 64) / (75.0 / (20 * 128 * p4.loop_clock_mhz)), from_t4 = 35.0 / (20 * 64) / (70.0 / (40 * 64 * t4.loop_clock_mhz));
  CHECK(mine.loop_clock_peer == "P4 and the T4");
  CHECK(mine.loop_clock_mhz == Approx((from_p4 + from_t4) / 2));  // the median of two
  CHECK(mine.loop_clock_source.find("estimate") != std::string::npos);
  CHECK(!habitat::loop_clock_peers(t4, mine));  // a derived clock is no peer
  // Re-derived after every merge: a peer's new power limit moves it; a null leaves it derived; a number of its own wins.
  u.merge_json(R"({"devices": [{"name": "P4", "tdp_w": 150}]})", "u.json");
  CHECK(u.at("Mine").loop_clock_mhz == Approx((from_p4 / 2 + from_t4) / 2));
  u.merge_json(R"({"devices": [{"name": "Mine", "loop_clock_mhz": null}]})", "u.json");
  CHECK(u.at("Mine").loop_clock_peer == "P4 and the T4");
  u.merge_json(R"({"devices": [{"name": "Mine", "loop_clock_mhz": 900, "loop_clock_source": "mine"}]})", "u.json");
  CHECK(u.at("Mine").loop_clock_mhz == 900);
  CHECK(u.at("Mine").loop_clock_peer.empty());
  // Left out of a study, the T4 loses its own (derived from its own public timings) and gets the P4's law; the P4 the
  // T4's (782 MHz), above its clock under load, which a GEMM timed alone keeps; the H100 its measured tensor loop.
  const auto& h100 = c.at("H100 SXM");
  const std::vector<const habitat::Device*> measured{&p4, &t4, &c.at("V100 PCIe 32GB"), &h100};
  const auto left_out = habitat::study::unseen(t4, measured);
  CHECK(left_out.loop_clock_peer == "P4");
  CHECK(left_out.loop_clock_mhz == Approx(habitat::loop_clock_from_peer(t4, p4)));
  CHECK(!left_out.bandwidth_measured_here());
  const auto p4_out = habitat::study::unseen(p4, measured);
  CHECK(p4_out.loop_clock_mhz == Approx(782).epsilon(0.005));
  CHECK(p4_out.loop_clock_mhz_at(Precision::fp32) == p4.load_clock_mhz(Precision::fp32));
  REQUIRE(h100.tensor_loop_clock_mhz > 0);
  CHECK(habitat::study::unseen(h100, measured).tensor_loop_clock_mhz == 0);
}

TEST_CASE("old-style peak figures in user files become per-SM rates", "[catalog]") {
  Catalog c = Catalog::builtin();
  c.merge_json(R"({"devices": [{"name": "Mine", "compute_capability": "8.9", "sms": 100, "boost_clock_mhz": 2000,
       "bandwidth_gbps": 1000, "fp32_tflops": 51.2, "tf32_tflops": 51.2, "bf16_tflops": 204.8}]})", "u.json");
  const auto& d = c.at("Mine");
  CHECK(d.fp32_lanes_per_sm == Approx(128));
  CHECK(d.tensor.tf32 == 0);  // same as FP32: no tensor datapath
  CHECK(d.tensor.bf16 == Approx(1024));
  CHECK(d.sustained_bandwidth_gbps() == Approx(1000 * habitat::Device::typical_sustained_bandwidth_share));  // no measurement
  CHECK_THROWS_WITH(c.merge_json(R"({"devices": [{"name": "Mine", "measured_bandwidth_gbps": 0}]})", "u.json"),
                    Catch::Contains("measured_bandwidth_gbps"));
  CHECK_THROWS_WITH(c.merge_json(R"({"devices": [{"name": "Mine", "sustained_clock_mhz": -5}]})", "u.json"),
                    Catch::Contains("devices[0] (Mine)") && Catch::Contains("sustained_clock_mhz"));
  CHECK_THROWS_WITH(c.merge_json(R"({"devices": [{"name": "Mine", "fp32_lanes_per_sm": 0}]})", "u.json"), Catch::Contains("fp32_lanes_per_sm"));
  CHECK_THROWS_WITH(c.merge_json(R"({"devices": [{"name": "Mine", "sms": 132.7}]})", "u.json"), Catch::Contains("whole number"));
  CHECK_THROWS_WITH(c.merge_json(R"({"devices": [{"name": "Mine", "sms": 1e30}]})", "u.json"), Catch::Contains("(Mine).sms"));
  CHECK_THROWS_WITH(c.merge_json(R"({"devices": [{"name": "Mine", "tensor_flops_per_clk_per_sm": {"bf16": -1}}]})", "u.json"),
                    Catch::Contains("bf16"));
}

TEST_CASE("the typical sustained bandwidth share is the median of the catalog's measured ones", "[catalog]") {
  const Catalog c = Catalog::builtin();
  std::vector<double> shares;
  for (const auto& d : c.devices())
    if (d.bandwidth_measured_here()) shares.push_back(*d.bandwidth_measured_gbps / d.bandwidth_spec_gbps);
  REQUIRE(shares.size() >= 7);
  std::sort(shares.begin(), shares.end());
  CHECK(shares[shares.size() / 2] == Approx(habitat::Device::typical_sustained_bandwidth_share).margin(0.02));
}

TEST_CASE("memory generations group speed grades, and estimated bandwidths are told from measured ones", "[catalog]") {
  const Catalog cat = Catalog::builtin();
  CHECK(cat.at("H100 SXM").memory_generation() == cat.at("H200").memory_generation());  // HBM3, HBM3e
  CHECK(cat.at("A100 PCIe 80GB").memory_generation() == "HBM2");                          // HBM2e
  CHECK(cat.at("RTX 4090").memory_generation() == "GDDR6");                               // GDDR6X
  CHECK(cat.at("H100 SXM").memory_generation() != cat.at("A100 PCIe 40GB").memory_generation());
  CHECK(cat.at("H100 SXM").bandwidth_measured_here());
  CHECK(cat.at("T4").bandwidth_measured_here());
  CHECK_FALSE(cat.at("H100 PCIe").bandwidth_measured_here());  // spec x the H100 SXM's share
  habitat::Device d = cat.at("H200");
  for (const char* m : {"HBM3E", "HBM3e", "HBM3"}) {
    d.memory = m;
    CHECK(d.memory_generation() == "HBM3");
  }
  d.memory = "";
  CHECK(d.memory_generation().empty());
  d.memory = "None";
  CHECK(d.memory_generation() == "None");  // an 'e' after a letter is no speed grade
}
