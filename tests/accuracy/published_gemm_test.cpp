// Large GEMMs in FP32, TF32, FP16 and BF16 on GPUs of every generation, against a public table of torch.mm
// throughput (fixtures/published/torch_mm.json, with its source), predicted by the GEMM tile model next to the
// baselines from the same benchmark run on an H200 here (fixtures/published/torch_mm_h200.json). Prints every GPU
// and precision; checks every prediction is physical and each precision's mean error.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdio>
#include <map>
#include <set>

#include "builtin_data.hpp"
#include "fixtures.hpp"
#include "habitat/studies/published_gemm_study.hpp"
#include "habitat/studies/row_errors.hpp"

using namespace habitat;

TEST_CASE("public torch.mm throughput on GPUs of every generation and precision (GEMM tile model)", "[accuracy][published]") {
  const std::string dir = std::string(HABITAT_FIXTURES) + "/published";
  const auto rows = report::published_gemm_study(dir + "/torch_mm.json", dir + "/torch_mm_h200.json", "H200", test::catalog());
  REQUIRE(rows.size() > 50);
  using R = report::GemmRow;
  std::printf("\ntorch.mm NxN, N = 1024 ... 10240: mean |error| of the time per call over the sizes, per GPU and precision\n");
  std::printf("%-16s %-5s %3s %12s %12s %9s %9s %9s %9s\n", "GPU", "prec", "n", "measured TF", "habitat TF", "habitat", "same", "FLOPSr", "BWr");
  std::map<std::pair<std::string, std::string>, std::vector<R>> by;
  for (const auto& r : rows) by[{r.gpu, r.precision}].push_back(r);
  for (const auto& [key, v] : by) {
    double best_m = 0, best_p = 0;
    for (const auto& r : v) best_m = std::max(best_m, r.measured_tflops), best_p = std::max(best_p, r.predicted_tflops);
    auto all = [](const R&) { return true; };
    std::printf("%-16s %-5s %3zu %12.1f %12.1f %8.1f%% %8.1f%% %8.1f%% %8.1f%%\n", key.first.c_str(), key.second.c_str(), v.size(), best_m, best_p,
                100 * report::mean_abs(v, &R::error, all), 100 * report::mean_abs(v, &R::same_error, all),
                100 * report::mean_abs(v, &R::flops_error, all), 100 * report::mean_abs(v, &R::bandwidth_error, all));
  }
  for (const auto& r : rows) {
    INFO(r.gpu << " " << r.precision << " " << r.n);
    CHECK(std::isfinite(r.predicted_tflops));
    CHECK(r.predicted_tflops > 0);
    CHECK(r.predicted_tflops <= test::catalog().at(r.gpu).peak_tflops(report::gemm_precision(r.precision, {"", ""})) * 1.0001);
  }
  std::printf("\nmean |error| per precision (rows: GPU x size): habitat | same time | FLOPS ratio | bandwidth ratio\n");
  // What is met today, to catch regressions (the issue's goal is 10% on every GPU), and never worse than the ratio of
  // peak FLOPS at the precision.
  const std::map<std::string, double> bound{{"fp32", 0.14}, {"tf32", 0.12}, {"fp16", 0.12}, {"bf16", 0.12}};
  for (const auto& limit : bound) {
    const std::string& prec = limit.first;  // named, not a structured binding: clang 14 cannot capture one
    const double b = limit.second;
    auto keep = [&](const R& r) { return r.precision == prec; };
    std::set<std::string> gpus;
    for (const auto& r : rows)
      if (keep(r)) gpus.insert(r.gpu);
    std::printf("  %-5s %3zu GPUs %6.1f%% | %6.1f%% | %6.1f%% | %6.1f%%\n", prec.c_str(), gpus.size(), 100 * report::mean_abs(rows, &R::error, keep),
                100 * report::mean_abs(rows, &R::same_error, keep), 100 * report::mean_abs(rows, &R::flops_error, keep),
                100 * report::mean_abs(rows, &R::bandwidth_error, keep));
    const double h = report::mean_abs(rows, &R::error, keep);
    INFO(prec << ": mean absolute error " << h << ", bound " << b);
    CHECK(h <= b);
    CHECK(h < report::mean_abs(rows, &R::flops_error, keep));
  }
}

TEST_CASE("a malformed torch.mm table is an error naming the file and the place", "[published]") {
  const std::string ref = std::string(HABITAT_FIXTURES) + "/published/torch_mm_h200.json";
  auto rows_of = [&](const std::string& name, const std::string& body) {
    return report::published_gemm_study(test::write_temp(name, body), ref, "H200", test::catalog());
  };
  CHECK_THROWS_WITH(rows_of("mm_size.json", R"({"rows":[{"gpu":"T4","tflops":{"fp32":{"10x":1}}}]})"),
                    Catch::Contains("mm_size.json") && Catch::Contains("rows[0].tflops.fp32.10x") && Catch::Contains("not a matrix size"));
  CHECK_THROWS_WITH(rows_of("mm_gpu.json", R"({"rows":[{"gpu":"T5","tflops":{}}]})"), Catch::Contains("rows[0].gpu") && Catch::Contains("not a catalog GPU"));
  CHECK_THROWS_WITH(rows_of("mm_prec.json", R"({"rows":[{"gpu":"T4","tflops":{"fp64":{"1024":1}}}]})"), Catch::Contains("unknown precision 'fp64'"));
  CHECK_THROWS_WITH(rows_of("mm_value.json", R"({"rows":[{"gpu":"T4","tflops":{"fp32":{"1024":-1}}}]})"), Catch::Contains("not a throughput"));
  CHECK_THROWS_WITH(rows_of("mm_ref.json", R"({"rows":[{"gpu":"T4","tflops":{"fp32":{"512":1}}}]})"), Catch::Contains("has no fp32 figure of this size"));
  CHECK(rows_of("mm_ok.json", R"({"rows":[{"gpu":"T4","tflops":{"fp32":{"1024":3.5}}}]})").size() == 1);
}
