// Example: predict a recorded iteration on every GPU of the catalog and print the three fastest.
//   example_predict fixtures/kineto/h100/resnet50_fp32_b32.json.gz
#include <algorithm>
#include <cstdio>
#include <iostream>

#include "habitat/habitat.hpp"
#include "habitat/kineto/reader.hpp"
#include "habitat/sim/compose.hpp"

int main(int argc, char** argv) {
  if (argc != 2) {
    std::cerr << "usage: example_predict TRACE.json[.gz]\n";
    return 1;
  }
  try {
    const habitat::Catalog catalog = habitat::Catalog::builtin();
    const habitat::Trace trace = habitat::kineto::read_trace(argv[1]);
    const habitat::Device origin = habitat::resolve_origin(catalog, trace, std::nullopt, &std::cerr);
    const auto work = habitat::kernel_work(trace);
    const auto hosts = habitat::sim::HostRegistry::builtin();
    std::vector<habitat::PredictedTrace> all;
    for (const auto& dest : catalog.devices()) {
      // Predict each kernel, then replay the step with the destination's host to get the iteration.
      auto p = habitat::predict_trace(trace, work, origin, dest, habitat::RooflineScaling{});
      habitat::sim::compose(p, trace, habitat::sim::build_program(trace, habitat::sim::host_model(hosts, origin, dest)), dest);
      all.push_back(std::move(p));
    }
    std::sort(all.begin(), all.end(), [](const auto& a, const auto& b) { return a.iteration_us < b.iteration_us; });
    std::printf("origin %s: GPU active %.3f ms\n", origin.name.c_str(), trace.gpu_active_us() / 1e3);
    for (std::size_t i = 0; i < 3 && i < all.size(); ++i)
      std::printf("  %-16s iteration %.3f ms (%s), GPU active %.3f ms\n", all[i].device.c_str(), all[i].iteration_us / 1e3,
                  all[i].timeline->verdict(), all[i].gpu_active_us / 1e3);
  } catch (const habitat::error& e) {
    std::cerr << "error: " << e.what() << "\n";
    return 2;
  }
  return 0;
}
