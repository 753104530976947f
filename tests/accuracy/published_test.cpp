// Mixed precision, TF32 and FP32 across generations, against published figures: NVIDIA's DeepLearningExamples
// ResNet-50 v1.5 and ResNeXt101-32x4d throughput on the A100 80GB, V100 and T4 (fixtures/published/
// dle_convnets.json, figures only, with their source), predicted from the same configurations recorded on an
// H100 (fixtures/published/h100). Prints every row next to the baselines; checks each precision's mean error.
#include <catch2/catch.hpp>

#include <cstdio>
#include <map>

#include "builtin_data.hpp"
#include "habitat/studies/published_study.hpp"

using namespace habitat;

TEST_CASE("published A100, V100 and T4 throughput in FP16, TF32 and FP32 from H100 traces", "[accuracy][published]") {
  const std::string dir = std::string(HABITAT_FIXTURES) + "/published";
  const auto rows = report::published_study(dir + "/dle_convnets.json", dir + "/h100", test::catalog(), test::hosts());
  REQUIRE(rows.size() == 20);
  std::printf("\nH100 trace -> published GPU: iteration ms (batch / published samples per second), signed errors\n");
  std::printf("%-32s %-20s %-5s %10s %10s %8s %8s %8s %8s\n", "workload", "published on", "prec", "published", "habitat", "error", "same",
              "FLOPSr", "BWr");
  for (const auto& r : rows)
    std::printf("%-32s %-20s %-5s %10.2f %10.2f %+7.1f%% %+7.1f%% %+7.1f%% %+7.1f%%\n", r.workload.c_str(), r.published_gpu.c_str(),
                r.precision.c_str(), r.published_ms, r.predicted_ms, 100 * r.error(), 100 * r.same_error(), 100 * r.flops_error(),
                100 * r.bandwidth_error());
  using R = report::PublishedRow;
  std::printf("\nmean absolute error: habitat | same time | FLOPS ratio | bandwidth ratio\n");
  // What is met today, to catch regressions (not the goal): mixed precision and TF32 within 10%, FP32
  // within 15% (ResNet-50's convolutions run other cuDNN algorithms on the V100 and T4 than on the H100, README).
  const std::map<std::string, double> bound{{"fp16", 0.10}, {"tf32", 0.10}, {"fp32", 0.15}};
  for (const auto& limit : bound) {
    const std::string& prec = limit.first;  // named, not a structured binding: clang 14 cannot capture one
    const double b = limit.second;
    auto keep = [&](const R& r) { return r.precision == prec; };
    const double h = report::mean_abs(rows, &R::error, keep);
    std::printf("  %-5s %6.1f%% | %6.1f%% | %6.1f%% | %6.1f%%\n", prec.c_str(), 100 * h, 100 * report::mean_abs(rows, &R::same_error, keep),
                100 * report::mean_abs(rows, &R::flops_error, keep), 100 * report::mean_abs(rows, &R::bandwidth_error, keep));
    INFO(prec << ": mean absolute error " << h << ", bound " << b);
    CHECK(h <= b);
    CHECK(h < report::mean_abs(rows, &R::flops_error, keep));
    CHECK(h < report::mean_abs(rows, &R::same_error, keep));
    // In mixed precision these convnets are mostly memory-bound, and the bandwidth ratio is the better baseline
    // there today (7.2% against 9.1%, README): checked for FP32 and TF32 only.
    if (prec != "fp16") CHECK(h < report::mean_abs(rows, &R::bandwidth_error, keep));
  }
}
