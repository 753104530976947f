#pragma once
// The what-ifs judged on real steps: a fixture folder's traces transformed to another batch or precision
// on the GPU they were traced on, against the trace and the un-profiled time of that batch or precision
// measured there (fixtures/whatif), next to the baselines a user has without habitat: time linear in the
// batch, and the same time whatever the precision.
#include <cstdint>
#include <filesystem>
#include <map>
#include <regex>
#include <string>
#include <vector>

#include "habitat/device/resolve.hpp"
#include "habitat/kineto/reader.hpp"
#include "habitat/predict/roofline_scaling.hpp"
#include "habitat/sim/calibrate.hpp"
#include "habitat/sim/compose.hpp"
#include "habitat/sim/host_profile.hpp"
#include "habitat/whatif/whatif.hpp"
#include "habitat/studies/row_errors.hpp"

namespace habitat::report {

struct WhatIfRow {
  std::string from, to;  // workloads: traced, asked about
  double measured_gpu_ms = 0, predicted_gpu_ms = 0, baseline_gpu_ms = 0;
  double measured_ms = 0, predicted_ms = 0, baseline_ms = 0;  // iteration, un-profiled
  double as_traced_ms = 0;  // the asked-about step simulated from its own trace: the simulator's own error
  [[nodiscard]] double as_traced_error() const { return as_traced_ms / measured_ms - 1; }
  [[nodiscard]] double gpu_error() const { return predicted_gpu_ms / measured_gpu_ms - 1; }
  [[nodiscard]] double baseline_gpu_error() const { return baseline_gpu_ms / measured_gpu_ms - 1; }
  [[nodiscard]] double error() const { return predicted_ms / measured_ms - 1; }
  [[nodiscard]] double baseline_error() const { return baseline_ms / measured_ms - 1; }
};

struct WhatIfStudy {
  std::vector<WhatIfRow> rows;
  [[nodiscard]] double mean_abs(double (WhatIfRow::*f)() const) const { return report::mean_abs(rows, f); }
};

struct WorkloadName {
  std::string model, precision;
  std::int64_t batch = 0;
};
[[nodiscard]] inline std::optional<WorkloadName> parse_workload(const std::string& name) {
  static const std::regex re("(.+)_(fp32|fp32strict|tf32|bf16|fp16)_b([0-9]+)");
  std::smatch m;
  if (!std::regex_match(name, m, re)) return std::nullopt;
  return WorkloadName{m[1], m[2], std::stoll(m[3])};
}

// Every ordered pair of a folder's workloads that differ only in batch (`batch` true; FP32 only) or only in
// precision (FP32 traced, BF16/FP16 asked about), predicted on the folder's own GPU and host.
[[nodiscard]] inline WhatIfStudy whatif_study(const std::string& dir, bool batch, const Catalog& cat, const sim::HostRegistry& hosts) {
  WhatIfStudy s;
  auto steps = sim::read_manifest(dir);
  // A second run of the same measurements (run2/), where recorded: the measured time is the mean of the two
  // runs' medians, since these host-bound steps move between runs more than the model's error.
  if (std::filesystem::exists(dir + "/run2/manifest.json")) {
    std::map<std::string, double> second;
    for (const auto& m : sim::read_manifest(dir + "/run2")) second[m.workload] = m.measured_us;
    for (auto& m : steps)
      if (auto it = second.find(m.workload); it != second.end()) m.measured_us = 0.5 * (m.measured_us + it->second);
  }
  std::map<std::string, Trace> traces;
  auto trace = [&](const sim::MeasuredStep& m) -> const Trace& {
    auto it = traces.find(m.workload);
    if (it == traces.end()) it = traces.emplace(m.workload, kineto::read_trace(m.trace_path)).first;
    return it->second;
  };
  for (const auto& a : steps)
    for (const auto& b : steps) {
      const auto wa = parse_workload(a.workload), wb = parse_workload(b.workload);
      if (!wa || !wb || wa->model != wb->model || &a == &b) continue;
      // From FP32 (PyTorch's defaults) to another batch, to autocast BF16/FP16, or to TF32 everywhere; from FP32
      // with TF32 off everywhere (fp32strict, what a GPU without TF32 runs) to TF32 everywhere.
      whatif::Spec spec;
      const bool fp32 = wa->precision == "fp32", strict = wa->precision == "fp32strict";
      if (batch && fp32 && wb->precision == "fp32" && wb->batch != wa->batch) spec.batch = wb->batch;
      else if (!batch && fp32 && (wb->precision == "bf16" || wb->precision == "fp16") && wb->batch == wa->batch)
        spec.precision = wb->precision == "bf16" ? Precision::bf16 : Precision::fp16;
      else if (!batch && (fp32 || strict) && wb->precision == "tf32" && wb->batch == wa->batch) spec.precision = Precision::tf32;
      else continue;
      const Trace& t = trace(a);
      const Trace& measured = trace(b);
      const Device origin = resolve_origin(cat, t, std::nullopt);
      const auto applied = whatif::apply(t, origin, spec, wa->batch);
      const Trace& tt = applied.step.trace;
      auto p = predict_trace(tt, kernel_work(tt), origin, origin, RooflineScaling{});
      const sim::HostModel own = sim::host_model(hosts, origin, origin);
      sim::compose(p, tt, whatif::with_added_host(sim::build_program(t, own), applied.step.extra_host_us), origin);
      const double r = batch ? static_cast<double>(wb->batch) / static_cast<double>(wa->batch) : 1.0;
      const double own_us = sim::origin_timeline(measured, own).timeline.period_us;
      s.rows.push_back({a.workload, b.workload, measured.gpu_active_us() / 1e3, p.gpu_active_us / 1e3, t.gpu_active_us() * r / 1e3,
                        b.measured_us / 1e3, p.iteration_us / 1e3, a.measured_us * r / 1e3, own_us / 1e3});
    }
  return s;
}

}  // namespace habitat::report
