#pragma once
// FSDP and tensor parallel on 2 GPUs predicted from a one-GPU trace, against the FSDP2 and tensor-parallel
// steps measured on 2 H200s (fixtures/parallel/h200x2: seven runs, un-profiled, CUDA events; the units each
// workload wrapped), next to the baselines a user has without habitat: the single-GPU step, and it / N.
// FSDP2's host cost is the one quantity fitted: per workload, the cost per unit that reproduces its measured
// step (bisection), hence the host time the step implies; a workload is predicted with the cost per unit
// and per tensor fitted to the *other* workloads (leave one out); the shipped constants
// (sim::torch_fsdp_costs) are fitted to all of them.
#include <boost/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "habitat/detail/quantile.hpp"
#include "habitat/device/catalog.hpp"
#include "habitat/device/resolve.hpp"
#include "habitat/kineto/reader.hpp"
#include "habitat/predict/kernel_work.hpp"
#include "habitat/predict/predicted_trace.hpp"
#include "habitat/predict/roofline_scaling.hpp"
#include "habitat/sim/fsdp.hpp"
#include "habitat/sim/pipeline.hpp"
#include "habitat/sim/tensor_parallel.hpp"
#include "habitat/studies/row_errors.hpp"

namespace habitat::report {

struct FsdpRow {
  std::string workload, plan;  // plan: fsdp_full, fsdp_grad_op, fsdp_full_mp
  int gpus = 2, units = 0, parameters = 0;
  int shape_mismatches = 0;            // parameters placed in a unit whose module has no parameter of their shape
  double measured_ms = 0, measured_lo_ms = 0, measured_hi_ms = 0;  // median of the runs' medians; lowest and highest
  double measured_single_ms = 0;       // one GPU, same machines, median of runs
  double predicted_single_ms = 0;
  double predicted_ms = 0;             // shipped host cost per unit
  double loo_ms = 0;                   // host cost per unit fitted on the other workloads
  double fitted_unit_us = 0;           // the cost per unit (all alike) that reproduces this workload's step
  int cost_units = 0, tensors = 0;     // units with the root, parameter tensors: what the host cost scales with
  [[nodiscard]] double implied_host_us() const { return fitted_unit_us * cost_units; }
  double state_gb = 0;                 // predicted model state per GPU
  double measured_peak_gb = 0;         // measured peak per GPU less the recorder's stale copy (derived, README)
  [[nodiscard]] double error() const { return predicted_ms / measured_ms - 1; }
  [[nodiscard]] double loo_error() const { return loo_ms / measured_ms - 1; }
  [[nodiscard]] double single_gpu_error() const { return measured_single_ms / measured_ms - 1; }
  [[nodiscard]] double ideal_error() const { return measured_single_ms / gpus / measured_ms - 1; }
};

struct FsdpStudy {
  std::vector<FsdpRow> rows;
  [[nodiscard]] double mean_abs(double (FsdpRow::*f)() const, const std::string& plan = "") const {
    return report::mean_abs(rows, f, [&](const FsdpRow& r) { return plan.empty() || r.plan == plan; });
  }
  // The host cost per unit and per tensor, by least squares over the host time each workload implies (all
  // but `except`): implied = per_unit x units + per_tensor x tensors. A negative per-tensor cost is not
  // physical: then per unit alone.
  [[nodiscard]] sim::UnitCost fit_cost(const std::string& plan, const std::string& except = "") const {
    double uu = 0, ut = 0, tt = 0, eu = 0, et = 0;
    for (const auto& r : rows) {
      if (r.plan != plan || r.workload == except) continue;
      const double u = r.cost_units, t = r.tensors, e = r.implied_host_us();
      uu += u * u, ut += u * t, tt += t * t, eu += e * u, et += e * t;
    }
    if (!(uu > 0)) return {};
    const double det = uu * tt - ut * ut;
    if (det > 1e-9 * uu * tt) {
      const double a = (eu * tt - et * ut) / det, b = (et * uu - eu * ut) / det;
      if (a >= 0 && b >= 0) return {a, b};
    }
    return {eu / uu, 0};
  }
};

namespace detail {

[[nodiscard]] inline boost::json::value read_json(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw make_error(path, "open", "cannot read the parallel fixture manifest");
  std::stringstream ss;
  ss << in.rdbuf();
  return boost::json::parse(ss.str());
}

[[nodiscard]] inline sim::FsdpOptions fsdp_options(const std::string& plan, int world_size) {
  sim::FsdpOptions o;
  o.world_size = world_size;
  o.reshard_after_forward = plan != "fsdp_grad_op";
  o.bf16_params = plan == "fsdp_full_mp";
  return o;
}

}  // namespace detail

// A fixture: the runs' manifests (the answers), and per workload its one-GPU trace (the input) with its
// kernels predicted on the destination GPU and replayed on the recording host.
struct ParallelFixture {
  boost::json::value run1;  // the first run: workloads, items, units
  std::map<std::pair<std::string, std::string>, std::vector<double>> medians;  // (workload, plan): each run's median
  bool stale_copy = false;  // the first run's peaks hold a stale copy of the parameters (fixtures/parallel/README.md)
  double host_ratio = 1;    // the measuring machine's host time over the recording host's, where calibrated (else 1)
  int world_size = 2;       // GPUs of the plans measured
  struct Case {
    Trace trace;
    Device dest;
    sim::StepProgram program;
    std::vector<double> us;
    double host_scale = 1;
    std::optional<sim::StepCost> step_cost;  // the measuring machine's count of records (pipeline stages' host time)
    std::optional<int> batch;                // the one-GPU step's batch (the manifest's batch_per_gpu)
  };
  std::map<std::string, Case> cases;

  // `traces`: the folder of <workload>.n1.json.gz; `manifests`: one per run; `dest`: the GPU the runs were
  // measured on (empty: the traces' own).
  // `calibrate_host`: the measuring machine's host speed is taken from its one-GPU steps (the median over the
  // workloads of measured / predicted), one number for the machine, as a host profile of it would give.
  ParallelFixture(const std::string& traces, const std::vector<std::string>& manifests, const std::string& dest, bool stale,
                  const Catalog& cat, const sim::HostRegistry& hosts, bool calibrate_host = false)
      : run1(detail::read_json(manifests.at(0))), stale_copy(stale) {
    for (const auto& it : run1.at("items").as_array())
      if (it.at("plan").as_string() != "n1") world_size = it.at("world_size").to_number<int>();
    for (const auto& path : manifests) {
      const auto m = detail::read_json(path);
      for (const auto& it : m.at("items").as_array())
        medians[{std::string(it.at("workload").as_string()), plan_key(it)}].push_back(it.at("step_ms").at("median").to_number<double>());
    }
    for (const auto& [name, w] : run1.at("workloads").as_object()) {
      Trace t = kineto::read_trace(traces + "/" + std::string(name) + ".n1.json.gz");
      const Device origin = resolve_origin(cat, t, std::nullopt);
      const Device& to = dest.empty() ? origin : cat.at(dest);
      const auto pred = predict_trace(t, kernel_work(t), origin, to, RooflineScaling{});
      std::vector<double> us;
      for (const auto& k : pred.kernels) us.push_back(k.duration_us);
      const auto host = sim::host_model(hosts, origin, to);
      auto program = sim::build_program(t, host);
      const auto* batch = w.as_object().if_contains("batch_per_gpu");
      cases.emplace(std::string(name), Case{std::move(t), to, std::move(program), std::move(us), sim::ddp_host_scale(hosts, host.runs_on),
                                            sim::destination_step_cost(host), batch ? std::optional(batch->to_number<int>()) : std::nullopt});
    }
    if (!calibrate_host) return;
    std::vector<double> ratios;
    for (const auto& [name, c] : cases)
      ratios.push_back(std::get<0>(measured(name, "n1")) / (sim::simulate(c.trace, c.program, c.us).period_us / 1e3));
    host_ratio = habitat::detail::median_of_runs(ratios, 1.0);
    for (auto& [name, c] : cases) {
      auto host = sim::host_model(hosts, resolve_origin(cat, c.trace, std::nullopt), c.dest);
      host.speed_ratio *= host_ratio;
      c.program = sim::build_program(c.trace, host);
      c.host_scale *= host_ratio;
      c.step_cost = sim::destination_step_cost(host);
    }
  }
  // fixtures/parallel/h100x2_gpu_bound: a GPU-bound step (gpt4096_bf16_b16), its trace and answers of 2 H100s (manifest.json,
  // run2/); `machine`: "" for the first machine, "machine2" for the second.
  [[nodiscard]] static ParallelFixture h100x2_gpu_bound(const std::string& parallel_dir, const Catalog& cat, const sim::HostRegistry& hosts,
                                                        const std::string& machine = "") {
    const std::string d = parallel_dir + "/h100x2_gpu_bound" + (machine.empty() ? "" : "/" + machine);
    return {d, {d + "/manifest.json", d + "/run2/manifest.json"}, "", false, cat, hosts};
  }
  // fixtures/parallel/h200x2: traces and answers of 2 H200s (manifest.json, run2/ .. run7/: three machines).
  [[nodiscard]] static ParallelFixture h200x2(const std::string& dir, const Catalog& cat, const sim::HostRegistry& hosts) {
    std::vector<std::string> manifests{dir + "/manifest.json"};
    for (int run = 2; run <= 7; ++run) manifests.push_back(dir + "/run" + std::to_string(run) + "/manifest.json");
    return {dir, manifests, "", true, cat, hosts};
  }
  // fixtures/parallel/<folder>: answers of another machine (run1-3/manifest.json) for the H200 traces of h200x2, measured on `dest`.
  [[nodiscard]] static ParallelFixture other_machine(const std::string& folder, const std::string& dest, const std::string& parallel_dir,
                                                     const Catalog& cat, const sim::HostRegistry& hosts, bool calibrate_host) {
    const std::string d = parallel_dir + "/" + folder;
    return {parallel_dir + "/h200x2", {d + "/run1/manifest.json", d + "/run2/manifest.json", d + "/run3/manifest.json"}, dest, false, cat,
            hosts, calibrate_host};
  }
  // fixtures/parallel/h100x<gpus>: answers of 2 or 4 H100s for the H200 traces: machines the costs were not fitted on.
  [[nodiscard]] static ParallelFixture h100(int gpus, const std::string& parallel_dir, const Catalog& cat, const sim::HostRegistry& hosts,
                                            bool calibrate_host) {
    return other_machine("h100x" + std::to_string(gpus), "H100 SXM", parallel_dir, cat, hosts, calibrate_host);
  }
  // fixtures/parallel/h200x4: answers of 4 H200s for the traces of 2 H200s: a GPU count and a machine the costs were not fitted on.
  [[nodiscard]] static ParallelFixture h200x4(const std::string& parallel_dir, const Catalog& cat, const sim::HostRegistry& hosts, bool calibrate_host) {
    return other_machine("h200x4", "H200", parallel_dir, cat, hosts, calibrate_host);
  }
  // fixtures/parallel/h100x4pp: pipeline-parallel answers of 2 and 4 H100s (run1-3/manifest.json) for the H200 traces.
  [[nodiscard]] static ParallelFixture h100pp(const std::string& parallel_dir, const Catalog& cat, const sim::HostRegistry& hosts) {
    return other_machine("h100x4pp", "H100 SXM", parallel_dir, cat, hosts, true);
  }
  // An item's plan; pipeline plans measured on several GPU counts in one manifest also name the count ("pp_1f1b_m4@n2").
  [[nodiscard]] static std::string plan_key(const boost::json::value& item) {
    std::string p(item.at("plan").as_string());
    if (p.starts_with("pp_")) p += "@n" + std::to_string(item.at("world_size").to_number<int>());
    return p;
  }
  // Median of the runs' medians, the lowest and the highest.
  [[nodiscard]] std::tuple<double, double, double> measured(const std::string& w, const std::string& p) const {
    const auto& v = medians.at({w, p});
    return {habitat::detail::median_of_runs(v, 0.0), *std::min_element(v.begin(), v.end()), *std::max_element(v.begin(), v.end())};
  }
};

[[nodiscard]] inline FsdpStudy fsdp_study(const ParallelFixture& fx) {
  const auto& run1 = fx.run1;
  const auto median_of = [&](const std::string& w, const std::string& p) { return fx.measured(w, p); };
  FsdpStudy s;
  std::vector<sim::FsdpOptions> row_options;  // per row: its plan and units
  const auto& workloads = run1.at("workloads").as_object();
  for (const auto& it : run1.at("items").as_array()) {
    const std::string workload(it.at("workload").as_string()), plan(it.at("plan").as_string());
    if (!plan.starts_with("fsdp")) continue;
    const auto& c = fx.cases.at(workload);
    // The units FSDP wrapped: parameters in registration order (the forward order of these models), each in
    // the unit whose module prefixes its name, else the root.
    const auto& params = workloads.at(workload).at("param_shapes").as_array();
    std::vector<std::string> modules;
    for (const auto& u : it.at("fsdp").at("units").as_array()) modules.emplace_back(u.at("unit").as_string());
    sim::FsdpOptions opt = detail::fsdp_options(plan, fx.world_size);
    opt.units.rule = comm::UnitRule::given;
    for (const auto& p : params) {
      const std::string name(p.as_array()[0].as_string());
      int unit = -1;
      for (int u = 0; u < static_cast<int>(modules.size()); ++u)
        if (name.starts_with(modules[u] + ".")) unit = u;
      opt.units.unit_of.push_back(unit);
    }
    FsdpRow r;
    r.gpus = fx.world_size;
    r.workload = workload;
    r.plan = plan;
    std::tie(r.measured_ms, r.measured_lo_ms, r.measured_hi_ms) = median_of(workload, plan);
    r.measured_single_ms = std::get<0>(median_of(workload, "n1"));
    const auto predict = [&](sim::UnitCost cost) {
      sim::FsdpOptions o = opt;
      o.unit_cost = cost;
      return sim::predict_fsdp(c.trace, c.program, c.us, c.dest, c.host_scale, o);
    };
    const auto p = predict(sim::fsdp_unit_cost(opt));
    r.cost_units = static_cast<int>(p.plan.units.size()) + (p.plan.root.bytes > 0 ? 1 : 0);
    r.tensors = static_cast<int>(p.plan.gradients.size());
    r.units = static_cast<int>(p.plan.units.size());
    r.parameters = static_cast<int>(p.plan.gradients.size());
    // Per unit, the parameters' shapes in the trace against the module's (in a unit, the forward order may
    // differ from the registration order: a post-norm layer registers its norms last).
    std::map<int, std::multiset<std::vector<std::int64_t>>> in_trace, in_model;
    for (int f = 0; f < static_cast<int>(params.size()); ++f) {
      std::vector<std::int64_t> shape;
      for (const auto& d : params[f].as_array()[1].as_array()) shape.push_back(d.to_number<std::int64_t>());
      in_model[opt.units.unit_of[f]].insert(shape);
      if (f < r.parameters) in_trace[opt.units.unit_of[f]].insert(p.plan.gradients[f].shape);
    }
    for (auto& [u, shapes] : in_model)
      for (const auto& sh : in_trace[u]) {
        auto it = shapes.find(sh);
        if (it == shapes.end()) ++r.shape_mismatches;
        else shapes.erase(it);
      }
    r.predicted_ms = p.step.period_us / 1e3;
    r.predicted_single_ms = p.single.period_us / 1e3;
    r.state_gb = p.memory.total() / 1e9;
    {
      const auto& mem = it.at("memory_per_rank").as_array();
      double peak = 0;
      for (const auto& m : mem) peak = std::max(peak, m.at("max_allocated_bytes").to_number<double>());
      r.measured_peak_gb = (peak - (fx.stale_copy ? it.at("param_bytes").to_number<double>() : 0.0)) / 1e9;  // the stale full copy (README)
    }
    // The cost per unit that reproduces the measured step: the step grows with it.
    r.fitted_unit_us = cost_reproducing([&](double us) { return predict({us, 0}).step.period_us / 1e3; }, r.measured_ms);
    s.rows.push_back(std::move(r));
    row_options.push_back(opt);
  }
  for (std::size_t i = 0; i < s.rows.size(); ++i) {
    FsdpRow& r = s.rows[i];
    const auto& c = fx.cases.at(r.workload);
    sim::FsdpOptions o = row_options[i];
    o.unit_cost = s.fit_cost(r.plan, r.workload);
    const auto p = sim::predict_fsdp(c.trace, c.program, c.us, c.dest, c.host_scale, o);
    r.loo_ms = p.step.period_us / 1e3;
  }
  return s;
}

// Tensor parallel (the GPT fixtures; ColwiseParallel/RowwiseParallel on each block's qkv, proj, fc1, fc2).
// DTensor's host cost per split linear is fitted as FSDP's is: per workload the cost that reproduces its
// step; each workload predicted with the other's (two workloads: leave one out is fit on one).
struct TpRow {
  std::string workload;
  int gpus = 2, blocks = 0, linears = 0;
  double measured_ms = 0, measured_lo_ms = 0, measured_hi_ms = 0, measured_single_ms = 0;
  double predicted_ms = 0, loo_ms = 0, predicted_single_ms = 0, fitted_linear_us = 0;
  [[nodiscard]] double error() const { return predicted_ms / measured_ms - 1; }
  [[nodiscard]] double loo_error() const { return loo_ms / measured_ms - 1; }
  [[nodiscard]] double single_gpu_error() const { return measured_single_ms / measured_ms - 1; }
  [[nodiscard]] double ideal_error() const { return measured_single_ms / gpus / measured_ms - 1; }
};

struct TpStudy {
  std::vector<TpRow> rows;
  [[nodiscard]] double mean_abs(double (TpRow::*f)() const) const { return report::mean_abs(rows, f); }
  [[nodiscard]] double mean_linear_us(const std::string& except = "") const {
    double sum = 0;
    int n = 0;
    for (const auto& r : rows)
      if (r.workload != except) sum += r.fitted_linear_us, ++n;
    return n ? sum / n : 0;
  }
};

[[nodiscard]] inline TpStudy tp_study(const ParallelFixture& fx) {
  TpStudy s;
  const auto predict = [&](const ParallelFixture::Case& c, double per_linear_us) {
    sim::TpOptions o;
    o.world_size = fx.world_size;
    o.per_linear_us = per_linear_us;
    return sim::predict_tp(c.trace, c.program, c.us, c.dest, c.host_scale, o);
  };
  for (const auto& it : fx.run1.at("items").as_array()) {
    if (it.at("plan").as_string() != "tp") continue;
    TpRow r;
    r.gpus = fx.world_size;
    r.workload = std::string(it.at("workload").as_string());
    const auto& c = fx.cases.at(r.workload);
    std::tie(r.measured_ms, r.measured_lo_ms, r.measured_hi_ms) = fx.measured(r.workload, "tp");
    r.measured_single_ms = std::get<0>(fx.measured(r.workload, "n1"));
    const auto p = predict(c, sim::torch_tp_costs.per_linear_us);
    r.blocks = p.plan.blocks;
    r.linears = static_cast<int>(p.plan.linears.size());
    r.predicted_ms = p.step.period_us / 1e3;
    r.predicted_single_ms = p.single.period_us / 1e3;
    r.fitted_linear_us = cost_reproducing([&](double us) { return predict(c, us).step.period_us / 1e3; }, r.measured_ms);
    s.rows.push_back(r);
  }
  for (auto& r : s.rows) r.loo_ms = predict(fx.cases.at(r.workload), s.mean_linear_us(r.workload)).step.period_us / 1e3;
  return s;
}

// Pipeline parallel (the GPT fixtures; torch.distributed.pipelining, "pp_<schedule>_m<M>" on 2 and 4 GPUs).
// The schedule's host cost per action is fitted as DTensor's is: per item the cost that reproduces its step;
// an item is predicted with the median of the other workload's fits (leave one workload out).
struct PpRow {
  std::string workload, plan;
  int gpus = 2, microbatches = 0;
  double measured_ms = 0, measured_lo_ms = 0, measured_hi_ms = 0, measured_single_ms = 0;
  double predicted_ms = 0, loo_ms = 0, predicted_single_ms = 0, fitted_action_us = 0, bubble = 0;
  [[nodiscard]] double error() const { return predicted_ms / measured_ms - 1; }
  [[nodiscard]] double loo_error() const { return loo_ms / measured_ms - 1; }
  [[nodiscard]] double single_gpu_error() const { return measured_single_ms / measured_ms - 1; }
  [[nodiscard]] double ideal_error() const { return measured_single_ms / gpus / measured_ms - 1; }
};

struct PpStudy {
  std::vector<PpRow> rows;
  [[nodiscard]] double mean_abs(double (PpRow::*f)() const) const { return report::mean_abs(rows, f); }
  [[nodiscard]] double median_action_us(const std::string& except = "") const {
    std::vector<double> v;
    for (const auto& r : rows)
      if (r.workload != except) v.push_back(r.fitted_action_us);
    return habitat::detail::median_of_runs(v, 0.0);
  }
};

[[nodiscard]] inline sim::PpOptions pp_options(const std::string& plan, int gpus) {
  sim::PpOptions o;  // "pp_1f1b_m4"
  o.world_size = gpus;
  o.schedule = plan.find("gpipe") != std::string::npos ? sim::PpSchedule::gpipe : sim::PpSchedule::one_f_one_b;
  const auto at = plan.rfind("_m");
  char* end = nullptr;
  const long m = at == std::string::npos ? 0 : std::strtol(plan.c_str() + at + 2, &end, 10);
  if (m < 1 || !end || *end != '\0') throw make_error(plan, "plan", "a pipeline plan is pp_<1f1b|gpipe>_m<micro-batches>");
  o.microbatches = static_cast<int>(m);
  return o;
}

[[nodiscard]] inline PpStudy pp_study(const ParallelFixture& fx) {
  PpStudy s;
  const auto predict = [&](const ParallelFixture::Case& c, const sim::PpOptions& base, double per_action_us) {
    sim::PpOptions o = base;
    o.per_action_us = per_action_us;
    o.step_cost = c.step_cost;
    o.batch = c.batch;  // as the CLI's --batch
    return sim::predict_pp(c.trace, c.program, c.us, c.dest, c.host_scale, o);
  };
  for (const auto& it : fx.run1.at("items").as_array()) {
    const std::string plan(it.at("plan").as_string());
    if (!plan.starts_with("pp_")) continue;
    PpRow r;
    r.plan = plan;
    r.gpus = it.at("world_size").to_number<int>();
    r.workload = std::string(it.at("workload").as_string());
    const auto o = pp_options(plan, r.gpus);
    r.microbatches = o.microbatches;
    const auto& c = fx.cases.at(r.workload);
    std::tie(r.measured_ms, r.measured_lo_ms, r.measured_hi_ms) = fx.measured(r.workload, ParallelFixture::plan_key(it));
    r.measured_single_ms = std::get<0>(fx.measured(r.workload, "n1"));
    const auto p = predict(c, o, sim::torch_pp_costs.per_action_us);
    r.predicted_ms = p.step.period_us / 1e3;
    r.predicted_single_ms = p.single.period_us / 1e3;
    r.bubble = p.times.bubble_share;
    r.fitted_action_us = cost_reproducing([&](double us) { return predict(c, o, us).step.period_us / 1e3; }, r.measured_ms);
    s.rows.push_back(r);
  }
  for (auto& r : s.rows) r.loo_ms = predict(fx.cases.at(r.workload), pp_options(r.plan, r.gpus), s.median_action_us(r.workload)).step.period_us / 1e3;
  return s;
}

}  // namespace habitat::report
