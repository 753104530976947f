#include <catch2/catch.hpp>

#include <sstream>

#include "fixtures.hpp"
#include "habitat/metrics/metric_file.hpp"
#include "habitat/metrics/ncu_csv.hpp"

using namespace habitat;

namespace {
const std::string header =
    R"x("ID","Kernel Name","Block Size","Grid Size","device__attribute_display_name","dram__bytes_read.sum","dram__bytes_write.sum","sm__sass_thread_inst_executed_op_ffma_pred_on.sum","sm__ops_path_tensor_src_bf16_dst_fp32.sum","launch__shared_mem_per_block_dynamic")x";
MetricSet parse(const std::string& units, const std::string& rows) {
  std::istringstream in(header + "\n" + units + "\n" + rows);
  return read_ncu_csv(in, "test.csv");
}
const std::string base_units = R"x("","","","","","byte","Kbyte","inst","","byte/block")x";
}  // namespace

TEST_CASE("ncu CSV: units, thousands separators, quoted tuples, demangling") {
  const auto s = parse(base_units,
                       R"x("0","_ZN2at6native6kernelEv","(256, 1, 1)","(1024, 2, 1)","NVIDIA H100 80GB HBM3","1,000,000","2.5","10","1,000","4,096")x");
  REQUIRE(s.kernels().size() == 1);
  const auto& k = s.kernels()[0];
  CHECK(k.name == "at::native::kernel()");
  CHECK(k.key.grid.x == 1024);
  CHECK(k.key.grid.y == 2);
  CHECK(k.key.block.x == 256);
  CHECK(k.key.smem_dynamic == 4096);
  CHECK(k.dram_read_bytes == 1e6);
  CHECK(k.dram_write_bytes == 2500);
  CHECK(k.flops[FlopKind::fp32] == 20);
  CHECK(k.flops[FlopKind::tensor_bf16] == 1000);
  CHECK(k.to_kernel_metrics().precision == Precision::bf16);
  CHECK(s.provenance.device == "NVIDIA H100 80GB HBM3");
}

TEST_CASE("ncu CSV: repeated launches fold into one entry and report differing work") {
  const auto s = parse(base_units,
                       "\"0\",\"k\",\"(1, 1, 1)\",\"(1, 1, 1)\",\"H100\",\"100\",\"0\",\"10\",\"0\",\"0\"\n"
                       "\"1\",\"k\",\"(1, 1, 1)\",\"(1, 1, 1)\",\"H100\",\"300\",\"0\",\"30\",\"0\",\"0\"\n");
  REQUIRE(s.kernels().size() == 1);
  CHECK(s.kernels()[0].launches == 2);
  CHECK(s.kernels()[0].dram_read_bytes == 200);
  CHECK(s.kernels()[0].flops_spread > 0.5);
}

TEST_CASE("ncu CSV: bad input names the line and column") {
  const std::string row = R"x("0","k","(1, 1, 1)","(1, 1, 1)","H100","1","1","1","1","0")x";
  CHECK_THROWS_WITH(parse(R"x("","","","","","byte","second","inst","","byte/block")x", row), Catch::Contains("dram__bytes_write.sum") && Catch::Contains("not bytes"));
  CHECK_THROWS_WITH(parse(base_units, R"x("0","k","(1, 1, 1)","(1, 1, 1)","H100","n/a","1","1","1","0")x"), Catch::Contains("line 3") && Catch::Contains("n/a"));
  CHECK_THROWS_WITH(parse(base_units, R"x("0","k","(1, 1, 1)","(0, x)","H100","1","1","1","1","0")x"), Catch::Contains("Grid Size"));
  CHECK_THROWS_WITH(parse(base_units, R"x("0","k","(1, 1, 1)")x"), Catch::Contains("fields"));
  CHECK_THROWS_WITH(parse(base_units, ""), Catch::Contains("no kernel rows"));
  std::istringstream no_header("==PROF== nothing profiled\n");
  CHECK_THROWS_WITH(read_ncu_csv(no_header, "x.csv"), Catch::Contains("no ncu CSV header"));
}

TEST_CASE("ncu CSV: the recorded H100 report imports to the shipped metric file") {
  const auto s = read_ncu_csv_file(std::string(HABITAT_FIXTURES) + "/metrics/h100/dcgan_fp32_b128.ncu.csv");
  const auto shipped = read_metric_file(std::string(HABITAT_FIXTURES) + "/metrics/h100/dcgan_fp32_b128.ncu.json");
  REQUIRE(s.kernels().size() == shipped.kernels().size());
  CHECK(s.provenance.device == "NVIDIA H100 80GB HBM3");
  for (std::size_t i = 0; i < s.kernels().size(); ++i) {
    CHECK(s.kernels()[i].name == shipped.kernels()[i].name);
    CHECK(s.kernels()[i].dram_bytes() == Approx(shipped.kernels()[i].dram_bytes()));
  }
}
