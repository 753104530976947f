#pragma once
// DDP on N GPUs predicted from a one-GPU trace, against the DDP steps measured on 2 and 4 H200s
// (fixtures/ddp: medians of repeated runs, un-profiled, CUDA events), next to the baseline a user has
// without habitat: the single-GPU step time, as if data parallelism were free.
#include <boost/json.hpp>

#include <cmath>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "habitat/device/catalog.hpp"
#include "habitat/device/resolve.hpp"
#include "habitat/kineto/reader.hpp"
#include "habitat/predict/kernel_work.hpp"
#include "habitat/predict/predicted_trace.hpp"
#include "habitat/predict/roofline_scaling.hpp"
#include "habitat/sim/ddp.hpp"
#include "habitat/studies/row_errors.hpp"

namespace habitat::report {

struct DdpRow {
  std::string workload;
  int gpus = 0;
  double measured_ms = 0;         // DDP step, median of the runs' medians
  double measured_lo_ms = 0, measured_hi_ms = 0;  // lowest and highest run median: the measurement's own spread
  double measured_single_ms = 0;  // one GPU on the same machine
  double predicted_ms = 0;
  double predicted_single_ms = 0;
  double comm_ms = 0, exposed_ms = 0;
  int buckets = 0;
  [[nodiscard]] double error() const { return predicted_ms / measured_ms - 1; }
  [[nodiscard]] double single_gpu_error() const { return measured_single_ms / measured_ms - 1; }  // the baseline
  // The DDP model alone: predicted overhead over the predicted one-GPU step, against the measured one.
  [[nodiscard]] double overhead_error() const {
    return (predicted_ms / predicted_single_ms) / (measured_ms / measured_single_ms) - 1;
  }
};

struct DdpStudy {
  std::vector<DdpRow> rows;
  [[nodiscard]] double mean_abs(double (DdpRow::*f)() const, int gpus = 0) const {
    return report::mean_abs(rows, f, [&](const DdpRow& r) { return gpus == 0 || r.gpus == gpus; });
  }
};

// `ddp_dir`: fixtures/ddp (summary.json, h200x2/<workload>.n1.json.gz). Destination: the H200 of the trace.
[[nodiscard]] inline DdpStudy ddp_study(const std::string& ddp_dir, const Catalog& cat, const sim::HostRegistry& hosts) {
  const std::string path = ddp_dir + "/summary.json";
  std::ifstream in(path);
  if (!in) throw make_error(path, "open", "cannot read the DDP fixture summary");
  std::stringstream ss;
  ss << in.rdbuf();
  const auto doc = boost::json::parse(ss.str());
  DdpStudy s;
  for (const auto& [name, w] : doc.at("ddp").as_object()) {
    const std::string workload(name);
    const Trace t = kineto::read_trace(ddp_dir + "/h200x2/" + workload + ".n1.json.gz");
    const Device origin = resolve_origin(cat, t, std::nullopt);
    const auto pred = predict_trace(t, kernel_work(t), origin, origin, RooflineScaling{});
    std::vector<double> us;
    for (const auto& k : pred.kernels) us.push_back(k.duration_us);
    const auto host = sim::host_model(hosts, origin, origin);
    const auto program = sim::build_program(t, host);
    for (const int n : {2, 4}) {
      const std::string machine = "h200x" + std::to_string(n);
      const auto* ddp = w.as_object().if_contains(machine + "_n" + std::to_string(n));
      const auto* one = w.as_object().if_contains(machine + "_n1");
      if (!ddp || !one) continue;
      sim::DdpOptions opt;
      opt.world_size = n;
      const auto p = sim::predict_ddp(t, program, us, origin, sim::ddp_host_scale(hosts, host.runs_on), opt);
      DdpRow r;
      r.workload = workload;
      r.gpus = n;
      r.measured_ms = ddp->at("median_of_runs").to_number<double>();
      r.measured_lo_ms = ddp->at("min_run").to_number<double>();
      r.measured_hi_ms = ddp->at("max_run").to_number<double>();
      r.measured_single_ms = one->at("median_of_runs").to_number<double>();
      r.predicted_ms = p.step.period_us / 1e3;
      r.predicted_single_ms = p.single.period_us / 1e3;
      r.comm_ms = p.step.comm_us / 1e3;
      r.exposed_ms = p.step.comm_exposed_us / 1e3;
      r.buckets = static_cast<int>(p.plan.buckets.size());
      s.rows.push_back(r);
    }
  }
  return s;
}

}  // namespace habitat::report
