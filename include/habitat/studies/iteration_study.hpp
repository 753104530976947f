#pragma once
// The iteration time a user would measure, predicted from fixture traces and compared with the un-profiled
// CUDA-event times measured on the destination, next to the two baselines a user has without habitat:
// the profiled step as it is, and the origin's own measured time.
#include <cmath>
#include <map>
#include <string>
#include <vector>

#include "habitat/device/catalog.hpp"
#include "habitat/device/resolve.hpp"
#include "habitat/kineto/reader.hpp"
#include "habitat/predict/kernel_work.hpp"
#include "habitat/predict/roofline_scaling.hpp"
#include "habitat/sim/calibrate.hpp"
#include "habitat/sim/compose.hpp"
#include "habitat/studies/row_errors.hpp"

namespace habitat::report {

struct IterationRow {
  std::string workload;
  double measured_ms = 0;       // destination, un-profiled
  double predicted_ms = 0;
  double profiled_step_ms = 0;  // baseline 1: the origin's profiled step as recorded
  double origin_measured_ms = 0;  // baseline 2: the origin's un-profiled time
  double gpu_active_ms = 0, gpu_busy_ms = 0;
  std::string bound;
  [[nodiscard]] double error() const { return predicted_ms / measured_ms - 1; }
  [[nodiscard]] double profiled_error() const { return profiled_step_ms / measured_ms - 1; }
  [[nodiscard]] double origin_error() const { return origin_measured_ms / measured_ms - 1; }
};

struct IterationStudy {
  std::vector<IterationRow> rows;
  [[nodiscard]] double mean_abs(double (IterationRow::*f)() const) const { return report::mean_abs(rows, f); }
};

// Every workload of `origin_dir` that `dest_dir` measured too (both fixture folders with a manifest),
// predicted from the origin trace onto the destination GPU named by the destination's traces.
[[nodiscard]] inline IterationStudy iteration_study(const std::string& origin_dir, const std::string& dest_dir, const Catalog& cat,
                                                    const sim::HostRegistry& hosts) {
  IterationStudy s;
  std::map<std::string, sim::MeasuredStep> dest;
  for (auto& m : sim::read_manifest(dest_dir)) dest.emplace(m.workload, m);
  for (const auto& m : sim::read_manifest(origin_dir)) {
    auto it = dest.find(m.workload);
    if (it == dest.end()) continue;
    const Trace t = kineto::read_trace(m.trace_path);
    const Device origin = resolve_origin(cat, t, std::nullopt);
    const Trace dt = kineto::read_trace(it->second.trace_path);
    const Device d = resolve_origin(cat, dt, std::nullopt);
    auto p = predict_trace(t, kernel_work(t), origin, d, RooflineScaling{});
    sim::compose(p, t, sim::build_program(t, sim::host_model(hosts, origin, d, sim::HostChoice::reference())), d);
    s.rows.push_back({m.workload, it->second.measured_us / 1e3, p.iteration_us / 1e3, t.iteration_us() / 1e3, m.measured_us / 1e3,
                      p.gpu_active_us / 1e3, p.timeline->gpu_busy_us / 1e3, p.timeline->verdict()});
  }
  return s;
}

}  // namespace habitat::report
