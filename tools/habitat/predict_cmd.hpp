#pragma once
// The `predict` and `devices` commands as functions: the CLI (main.cpp) and the Python package
// (bindings/python) call the same code, so a number printed by one is the number returned by the other.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <map>
#include <optional>
#include <sstream>
#include <ostream>
#include <string>
#include <vector>

#include "habitat/detail/json_text.hpp"
#include "habitat/habitat.hpp"
#include "habitat/kineto/reader.hpp"
#include "habitat/mlp/eigen_backend.hpp"
#include "habitat/mlp/hybrid.hpp"
#include "habitat/predict/gemm_tile_predictor.hpp"
#include "habitat/report/html.hpp"
#include "habitat/report/writers.hpp"
#include "habitat/sim/compose.hpp"
#include "habitat/sim/ddp.hpp"
#include "habitat/sim/fsdp.hpp"
#include "habitat/sim/pipeline.hpp"
#include "habitat/sim/tensor_parallel.hpp"
#include "habitat/whatif/whatif.hpp"
#include "predict_ops_cmd.hpp"
#include "predictors.hpp"

namespace habitat::cli {

struct Common {
  std::vector<std::string> device_files;
  std::string format = "table";
  std::string scaling = "roofline";
  std::string waves = "eq1";
  std::string gamma = "roofline-utilization";
  std::optional<long> step;
  bool whole_trace = false;
  bool infer_steps = false;
  std::string step_marker;  // kineto::ReadOptions::step_marker
  std::vector<std::string> metric_files;
  std::string predictor = "physics";
  std::string models;
  bool quiet = false;
};

// Measured metrics for the origin trace's kernels; says how much of the kernel time they cover.
inline void attach(Trace& t, const Common& c) {
  if (c.metric_files.empty()) return;
  std::vector<MetricSet> sets;
  for (const auto& f : c.metric_files) {
    sets.push_back(read_metric_file(f));
    check_same_gpu(sets.back(), f, t);
  }
  std::vector<const MetricSet*> ptrs;
  for (const auto& s : sets) ptrs.push_back(&s);
  const AttachReport r = attach_metrics(t, ptrs);
  if (!c.quiet || r.matched_time_share() < 0.5)
    std::cerr << "habitat: metrics for " << r.matched << " of " << r.kernels << " kernels (" << report::fmt("%.1f", 100 * r.matched_time_share())
              << "% of kernel time); the rest use the counter-free estimate\n";
  if (r.matched_time_share() < 0.5)
    std::cerr << "habitat: warning: the metric files cover little of this trace; were they collected from the same workload?\n";
  if (r.ambiguous > 0)
    std::cerr << "habitat: warning: " << r.ambiguous << " kernels matched several metric entries that differ only in shared memory; left unmeasured\n";
  if (r.varying_work > 0)
    std::cerr << "habitat: note: " << r.varying_work << " kernels matched entries whose profiled launches did different work (mean used)\n";
}

inline Catalog load_catalog(const Common& c) {
  Catalog cat = Catalog::builtin();
  for (const auto& f : c.device_files) cat.merge_file(f);
  return cat;
}

// Whether a progress message is waiting for the end of its line: an error then starts on a new one.
inline bool mid_line = false;

inline Trace load(const std::string& path, const Common& c) {
  const auto t0 = std::chrono::steady_clock::now();
  if (!c.quiet) std::cerr << "habitat: reading " << path << " ..." << std::flush;
  mid_line = !c.quiet;
  kineto::ReadOptions ro{c.step, {}, c.whole_trace, c.infer_steps, c.step_marker};
  // Large traces: show how far the read has got, on a terminal only (logs stay clean).
  if (!c.quiet && isatty(STDERR_FILENO) && path != "-") {
    const auto size = std::filesystem::file_size(path);
    ro.progress = [size, next = std::size_t(0)](std::size_t done) mutable {
      if (done < next) return;
      next = done + (16u << 20);
      std::cerr << "\rhabitat: reading " << done * 100 / std::max<std::uintmax_t>(size, 1) << "% " << std::flush;
    };
  }
  Trace t = kineto::read_trace(path, ro);
  if (!c.quiet) {
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    mid_line = false;
    std::cerr << " " << t.step_name << ", " << t.kernels.size() << " GPU ops, " << t.ops.size() << " operations, GPU '"
              << (t.device_name.empty() ? "?" : t.device_name) << "' (" << report::fmt("%.2f", s) << " s)\n";
  }
  return t;
}

// Whether the predictor takes GEMMs through the tile model (and so the operands' layout): all but the plain scalings.
inline bool uses_tiles(const Common& c) { return c.predictor != "scaling" && c.predictor != "wave"; }

inline std::vector<PredictedTrace> predict_all(const Trace& t, const std::vector<KernelWork>& work, const Device& origin,
                                        const std::vector<const Device*>& dests, const Common& c) {
  std::vector<PredictedTrace> out;
  const auto predictor = cli::make_predictor(c.scaling, c.waves, c.gamma);
  // What depends on the trace and the origin only is computed once, not per destination.
  const KernelLabels labels = kernel_labels(t);
  const bool tiles = uses_tiles(c);
  const auto shapes = tiles ? gemm::op_shapes(t) : std::vector<std::optional<gemm::Shape>>{};
  std::optional<mlp::ModelSet<mlp::EigenBackend>> models;
  std::optional<mlp::OriginPlan<mlp::EigenBackend>> plan;
  if (c.predictor == "hybrid") {
    models = cli::load_models(c.models, c.quiet);
    plan.emplace(*models, t, origin);
  }
  for (const Device* d : dests)
    out.push_back(std::visit(
        [&](const auto& p) {
          if (!tiles) return predict_trace(t, work, labels, origin, *d, p);
          const auto use = c.predictor == "tile" ? gemm::TileUse::every_gemm : gemm::TileUse::unfit_launches;
          if (!plan) return predict_trace(t, work, labels, origin, *d, gemm::TilePredictor(p, shapes, use));
          const mlp::HybridPredictor hybrid(p, *plan, *d);
          auto r = predict_trace(t, work, labels, origin, *d, gemm::TilePredictor(hybrid, shapes, use));
          r.model_declined_ops = hybrid.declined_ops();
          r.model_declined_reason = hybrid.declined_reason();
          return r;
        },
        predictor));
  return out;
}


// --interconnect: a link type of the GPU's catalog entry, or a bandwidth.
inline double intra_link(const Device& d, const std::string& v) {
  if (v == "nvlink" || v == "NVLink") {
    if (!(d.interconnect.nvlink_gbps > 0)) throw make_error(d.name, "--interconnect", "the catalog gives this GPU no NVLink");
    return d.interconnect.nvlink_gbps;
  }
  if (v == "pcie" || v == "PCIe") {
    if (!(d.interconnect.pcie_gbps > 0)) throw make_error(d.name, "--interconnect", "the catalog gives this GPU no PCIe bandwidth");
    return d.interconnect.pcie_gbps;
  }
  char* end = nullptr;
  const double x = std::strtod(v.c_str(), &end);
  if (end == v.c_str() || *end != '\0' || !(x > 0 && x < 1e5))
    throw make_error(v, "--interconnect", "must be nvlink, pcie or a bandwidth in GB/s per direction (0 < x < 100000)");
  return x;
}


// `habitat predict`'s arguments beyond the common ones.
struct PredictArgs {
  std::string trace_path;
  std::vector<std::string> to;
  std::optional<std::string> origin_name;
  std::optional<int> batch;
  sim::HostChoice host_args;
  sim::DdpOptions ddp;
  std::string interconnect;
  double bucket_mb = 25;
  std::optional<std::size_t> breakdown;
  std::vector<std::string> what_if_args;
  std::string parallel = "ddp";  // --parallel
};

// --parallel: "ddp" (all empty), "tp", "pp" with options ("pp=4,microbatches=8,schedule=gpipe"), or "fsdp"
// with options ("fsdp,grad_op,bf16,units=layers").
struct ParallelChoice {
  std::optional<sim::FsdpOptions> fsdp;
  std::optional<sim::TpOptions> tp;
  std::optional<sim::PpOptions> pp;
  // The GPUs a plan divides the model over (TP's group, PP's stages, FSDP's shards); 1 for DDP, which replicates it.
  [[nodiscard]] int dividing_gpus() const { return tp ? tp->world_size : pp ? pp->world_size : fsdp ? fsdp->world_size : 1; }
};
inline constexpr const char* parallel_forms =
    "must be ddp, tp[=N][,dtensor|megatron], pp[=S][,microbatches=M][,schedule=1f1b|gpipe] or fsdp[,grad_op][,bf16][,units=blocks|layers|N]";

// A whole number from `lo` to `hi` after "name=" in `part`, or a clear error naming the words it may also be.
[[nodiscard]] inline int parallel_count(const std::string& spec, const std::string& part, std::size_t from, int lo, int hi,
                                        const std::string& or_words = "") {
  char* end = nullptr;
  const long n = std::strtol(part.c_str() + from, &end, 10);
  if (end == part.c_str() + from || *end != '\0' || n < lo || n > hi)
    throw make_error(spec, "--parallel", part.substr(0, from) + " must be " + (or_words.empty() ? "" : or_words + " or ") + "a whole number from " +
                                             std::to_string(lo) + " to " + std::to_string(hi) + ", not '" + part.substr(from) + "'");
  return static_cast<int>(n);
}

[[nodiscard]] inline sim::PpOptions parse_pp(const std::string& spec, const std::vector<std::string>& parts, const sim::DdpOptions& ddp) {
  sim::PpOptions p;
  static_cast<sim::PlanGpus&>(p) = ddp;
  if (parts.front().starts_with("pp=")) {
    const int stages = parallel_count(spec, parts.front(), 3, 2, 4096);
    if (ddp.world_size > 1 && ddp.world_size != stages)
      throw make_error(spec, "--parallel", "pp=" + std::to_string(stages) + " stages on --world-size " + std::to_string(ddp.world_size) +
                                               ": pipeline and data parallel together are not modelled; give as many GPUs as stages");
    p.world_size = stages;
  }
  for (std::size_t i = 1; i < parts.size(); ++i) {
    const std::string& o = parts[i];
    if (o.starts_with("microbatches=")) p.microbatches = parallel_count(spec, o, 13, 1, 4096);
    else if (o == "schedule=1f1b") p.schedule = sim::PpSchedule::one_f_one_b;
    else if (o == "schedule=gpipe") p.schedule = sim::PpSchedule::gpipe;
    else throw make_error(spec, "--parallel", "unknown pipeline option '" + o + "': microbatches=M and schedule=1f1b|gpipe are known");
  }
  if (p.world_size < 2) throw make_error(spec, "--parallel", "pipeline parallel needs 2 or more stages: give pp=S or --world-size S");
  return p;
}

[[nodiscard]] inline ParallelChoice parse_parallel(const std::string& spec, const sim::DdpOptions& ddp) {
  if (spec == "ddp" || spec.empty()) return {};
  std::vector<std::string> parts;
  std::stringstream ss(spec);
  for (std::string part; std::getline(ss, part, ',');) parts.push_back(part);
  if (!parts.empty() && (parts.front() == "tp" || parts.front().starts_with("tp="))) {
    sim::TpOptions t;
    static_cast<sim::PlanGpus&>(t) = ddp;
    if (parts.front().starts_with("tp=")) {
      const int n = parallel_count(spec, parts.front(), 3, 2, 4096);
      if (ddp.world_size > 1 && ddp.world_size != n)
        throw make_error(spec, "--parallel", "tp=" + std::to_string(n) + " on --world-size " + std::to_string(ddp.world_size) +
                                                 ": tensor and data parallel together are not modelled; give as many GPUs as the group");
      t.world_size = n;
    }
    for (std::size_t i = 1; i < parts.size(); ++i) {
      if (parts[i] == "megatron") t.layers = sim::TpLayers::megatron;
      else if (parts[i] == "dtensor") t.layers = sim::TpLayers::dtensor;
      else throw make_error(spec, "--parallel", "unknown tensor-parallel option '" + parts[i] + "': dtensor (default) and megatron are known");
    }
    if (t.world_size < 2) throw make_error(spec, "--parallel", "tensor parallel needs 2 or more GPUs: give tp=N or --world-size N");
    return {std::nullopt, t};
  }
  if (!parts.empty() && (parts.front() == "pp" || parts.front().starts_with("pp="))) return {std::nullopt, std::nullopt, parse_pp(spec, parts, ddp)};
  if (parts.empty() || parts.front() != "fsdp") throw make_error(spec, "--parallel", parallel_forms);
  sim::FsdpOptions f;
  static_cast<sim::PlanGpus&>(f) = ddp;
  for (std::size_t i = 1; i < parts.size(); ++i) {
    const std::string& p = parts[i];
    if (p == "grad_op" || p == "shard_grad_op" || p == "zero2") {
      f.reshard_after_forward = false;
    } else if (p == "full" || p == "full_shard") {
      f.reshard_after_forward = true;
    } else if (p == "bf16") {
      f.bf16_params = true;
    } else if (p == "units=blocks") {
      f.units.rule = comm::UnitRule::blocks;
    } else if (p == "units=layers") {
      f.units.rule = comm::UnitRule::layers;
    } else if (p.starts_with("units=")) {
      f.units.rule = comm::UnitRule::count;
      f.units.count = parallel_count(spec, p, 6, 1, 100000, "blocks, layers");
    } else {
      throw make_error(spec, "--parallel", "unknown FSDP option '" + p + "': grad_op, bf16 and units=blocks|layers|N are known");
    }
  }
  if (f.world_size < 2) throw make_error(spec, "--parallel", "FSDP needs --world-size of 2 or more GPUs");
  return {f, std::nullopt};
}

// Predicts args.trace_path on every --to GPU and writes the report in c.format to `out`; warnings (what was
// assumed) go to `err`, one line each. Throws habitat::error for bad input.
// `table_out`, where given, receives the table as well (the Python package prints it and returns the JSON).
inline void run_predict(const PredictArgs& args, const Common& c, const Catalog& cat, std::ostream& out, std::ostream& err,
                        std::ostream* table_out = nullptr) {
  // Plain references, not a structured binding: clang 14 cannot capture those in the lambdas below.
  const std::string& trace_path = args.trace_path;
  const std::vector<std::string>& to = args.to;
  const std::optional<std::string>& origin_name = args.origin_name;
  const std::optional<int>& batch = args.batch;
  const sim::HostChoice& host_args = args.host_args;
  const std::string& interconnect = args.interconnect;
  const double bucket_mb = args.bucket_mb;
  const std::optional<std::size_t>& breakdown = args.breakdown;
  const std::vector<std::string>& what_if_args = args.what_if_args;
  sim::DdpOptions ddp = args.ddp;
  const ParallelChoice parallel = parse_parallel(args.parallel, ddp);
  Trace t = load(trace_path, c);
  attach(t, c);
  const Device origin = resolve_origin(cat, t, origin_name, &err);
  std::vector<const Device*> dests;
  auto add = [&](const Device* d) {  // each GPU once, in the order first named
    if (std::find(dests.begin(), dests.end(), d) == dests.end()) dests.push_back(d);
  };
  for (const auto& name : to) {
    if (name == "all")
      for (const auto& d : cat.devices()) add(&d);
    else
      add(&cat.at(name));
  }
  ddp.caps.cap_bytes = bucket_mb * 1024 * 1024;
  if (std::max(parallel.dividing_gpus(), ddp.world_size) > 1 && comm::ddp_plan(t, ddp.caps).already_ddp)
    throw make_error(trace_path, "--world-size", "the trace is already one rank of a DDP step: give the one-GPU trace of the same step");
  auto preds = predict_all(t, kernel_work(t), origin, dests, c);
  // The timeline: each destination's host replays the step with its predicted kernel times.
  const auto hosts = sim::HostRegistry::builtin();
  std::vector<std::string> notes = t.warnings;
  auto note = [&](const std::vector<std::string>& more) {
    for (const auto& m : more)
      if (std::find(notes.begin(), notes.end(), m) == notes.end()) notes.push_back(m);
  };
  const sim::HostModel own = sim::host_model(hosts, origin, origin, {host_args.recorded_on, host_args.recorded_on});
  note(own.assumptions);
  if (const auto r = sim::recorder_assumption(t); !r.empty()) note({r});
  if (const auto r = sim::python_records_assumption(t, own); !r.empty()) note({r});
  if (const auto r = sim::later_step_assumption(t, own); !r.empty()) note({r});
  if (own.step_cost && !own.step_cost->borrowed.empty() && sim::counted_step(t)) note({own.step_cost->borrowed});
  {  // one line per datapath assumption, naming every GPU it holds for
    std::vector<std::pair<std::string, std::string>> by_note;
    for (const auto& p : preds)
      for (const std::string* n : {&p.datapath_note, &p.collective_note}) {
        if (n->empty()) continue;
        auto it = std::find_if(by_note.begin(), by_note.end(), [&](const auto& x) { return x.first == *n; });
        if (it == by_note.end()) by_note.emplace_back(*n, p.device);
        else it->second += ", " + p.device;
      }
    for (const auto& [n, gpus] : by_note) note({"on " + gpus + ": " + n});
  }
  if (uses_tiles(c) && gemm::layout_assumed(t))
    note({"GEMM operand layout not recorded (no Input Strides for some GEMMs): those mm/addmm taken as x @ W^T (nn.Linear) and "
          "bmm as x @ W (README, \"The operands' layout\")"});
  {  // one line for every GPU whose clock under load is an estimate from its power limit
    std::string derived;
    for (const Device* d : dests)
      if (d->sustained_clock_mhz <= 0 && d->power_clock_mhz > 0)
        derived += (derived.empty() ? "" : ", ") + d->name + report::fmt(" %.0f MHz", d->load_clock_mhz(Precision::fp32));
    if (!derived.empty())
      note({"clock under load derived from the board's power limit, not measured (README, \"Clocks under load\"): " + derived});
  }
  {  // the AMD GPUs of the table: physics from datasheets, checked (where the catalog says so) on FP32 forward passes only
    std::string checked, unchecked;
    auto add = [](std::string& list, const std::string& name) { list += (list.empty() ? "" : ", ") + name; };
    for (const Device* d : dests)
      if (!d->nvidia() && d->name != origin.name) add(d->validation.empty() ? unchecked : checked, d->name);
    if (!origin.nvidia()) add(unchecked, origin.name + " (origin)");  // as an origin no AMD GPU was checked
    const char* why = "their per-CU rates are the datasheets' at the peak engine clock";
    if (!checked.empty())
      note({"AMD GPUs checked only as destinations of FP32 transformer steps from NVIDIA traces (" + checked +
            "; NeuSight's published latencies, each GPU's figures in `habitat devices`): other precisions and AMD traces as origin are "
            "unvalidated; " + why});
    if (!unchecked.empty())
      note({"AMD GPUs are unvalidated (" + unchecked + "): " + why + ", and no AMD timing of these GPUs is in habitat's data"});
    if (!origin.nvidia())
      note({"ROCm traces record no usable launch, so the origin's kernels are taken to spread over the whole GPU"});
  }
  report::OriginSummary o{origin.name, 0, t.gpu_active_us(), sim::origin_timeline(t, own), t.distributed};
  o.iteration_us = o.simulated->timeline.period_us;
  std::map<std::string, sim::StepProgram> programs;  // by destination host
  std::vector<sim::HostModel> host_models;          // by destination
  for (const Device* d : dests) {
    host_models.push_back(sim::host_model(hosts, origin, *d, host_args));
    note(host_models.back().assumptions);
  }
  // The simulated step of each destination: its host replays the program with the predicted kernel times.
  auto compose_all = [&](std::vector<PredictedTrace>& ps, const Trace& tt, const std::vector<double>& extra_host, std::optional<int> b) {
    for (std::size_t i = 0; i < ps.size(); ++i) {
      const sim::HostModel& hm = host_models[i];
      auto it = programs.find(hm.runs_on);
      if (it == programs.end()) {
        it = programs.emplace(hm.runs_on, sim::build_program(t, hm)).first;
        if (!it->second.external_note.empty()) note({it->second.external_note});
      }
      const sim::StepProgram program = extra_host.empty() ? it->second : whatif::with_added_host(it->second, extra_host);
      if (parallel.fsdp) {
        sim::FsdpOptions o = *parallel.fsdp;
        if (!interconnect.empty()) o.intra_gbps = intra_link(*dests[i], interconnect);
        note(sim::compose_fsdp(ps[i], tt, program, *dests[i], sim::ddp_host_scale(hosts, hm.runs_on), o, b));
      } else if (parallel.tp) {
        sim::TpOptions o = *parallel.tp;
        if (!interconnect.empty()) o.intra_gbps = intra_link(*dests[i], interconnect);
        note(sim::compose_tp(ps[i], tt, program, *dests[i], sim::ddp_host_scale(hosts, hm.runs_on), o, b));
      } else if (parallel.pp) {
        sim::PpOptions o = *parallel.pp;
        if (!interconnect.empty()) o.intra_gbps = intra_link(*dests[i], interconnect);
        o.step_cost = sim::destination_step_cost(hm);
        o.batch = b;
        note(sim::compose_pp(ps[i], tt, program, *dests[i], sim::ddp_host_scale(hosts, hm.runs_on), o, b));
      } else if (ddp.world_size > 1) {
        sim::DdpOptions o = ddp;
        if (!interconnect.empty()) o.intra_gbps = intra_link(*dests[i], interconnect);
        note(sim::compose_ddp(ps[i], tt, program, *dests[i], sim::ddp_host_scale(hosts, hm.runs_on), o, b));
      } else {
        sim::compose(ps[i], tt, program, *dests[i], b);
      }
      ps[i].host = hm.runs_on;
    }
  };
  compose_all(preds, t, {}, batch);
  std::optional<report::WhatIfSummary> what_if;
  if (!what_if_args.empty()) {
    const whatif::Spec spec = whatif::parse_spec(what_if_args);
    if (!c.quiet) err << "habitat: what if " << spec.label() << " ...\n";
    auto applied = whatif::apply(t, origin, spec, batch ? std::optional<std::int64_t>(*batch) : std::nullopt);
    const Trace& tt = applied.step.trace;
    report::WhatIfSummary w{spec.label(), applied.step.notes, {}, {}, predict_all(tt, kernel_work(tt), origin, dests, c), {}};
    if (batch) {
      w.memory = applied.memory;
      w.batch = spec.batch.value_or(*batch);
      // Per GPU under a plan that divides the model: TP splits and PP stages its layers' parameters and
      // activations over the group, FSDP shards the parameters' state; DDP holds the one-GPU step's.
      const int n = parallel.dividing_gpus();
      if (w.memory && n > 1) {
        w.memory->parameter_bytes /= n;
        if (!parallel.fsdp) w.memory->activation_bytes /= n;
        note({"what-if memory per GPU: the one-GPU estimate's " + std::string(parallel.fsdp ? "parameter state" : "parameters and activations") +
              " / " + std::to_string(n) + " (what the plan replicates, such as LayerNorms, embeddings and residuals, is not counted)"});
      }
    }
    compose_all(w.predictions, tt, applied.step.extra_host_us, w.batch ? std::optional<int>(static_cast<int>(*w.batch)) : std::nullopt);
    for (const Device* d : dests) w.fits.push_back(!w.memory || w.memory->fits(*d));
    what_if = std::move(w);
  }
  for (const auto& n : notes) err << "habitat: warning: " << n << "\n";
  const report::WhatIfSummary* wi = what_if ? &*what_if : nullptr;
  if (c.format == "html") {
    report::HtmlInput in{&t, o, preds, {}, {}, wi, batch, notes, trace_path};
    for (const Device* d : dests) {
      in.validation.push_back(d->validation);
      in.usd_per_hour.push_back(d->price ? d->price->usd_per_hour : 0.0);
    }
    report::write_html(out, in);
  } else if (c.format == "json") report::write_json(out, o, preds, wi);
  else if (c.format == "csv") report::write_csv(out, o, preds, wi);
  else report::write_table(out, o, preds, breakdown.value_or(preds.size() <= 3 ? 8 : 0), wi);
  if (table_out) report::write_table(*table_out, o, preds, breakdown.value_or(preds.size() <= 3 ? 8 : 0), wi);
}

// One catalog GPU as `habitat devices --format json` lists it.
inline boost::json::object device_json(const Device& d) {
  boost::json::object ds;
  for (const auto& [k, v] : d.datasheet) ds[k] = v;
  return {{"name", d.name},
                   {"vendor", d.nvidia() ? "NVIDIA" : "AMD"},
                   {"isa", d.isa.empty() ? boost::json::value(nullptr) : boost::json::value(d.isa)},
                   {"compute_capability", std::to_string(d.cc_major) + "." + std::to_string(d.cc_minor)},
                   {"sms", d.sms},
                   {"boost_clock_mhz", d.boost_clock_mhz},
                   {"sustained_clock_mhz", d.load_clock_mhz(Precision::fp32)},
                   {"sustained_clock_source", d.load_clock_source()},
                   {"loop_clock_mhz", d.loop_clock_mhz_at(Precision::fp32)},
                   // The loop clock is never above the clock under load: where that one holds, so does its source.
                   {"loop_clock_source", d.loop_clock_mhz > 0 && d.loop_clock_mhz < d.load_clock_mhz(Precision::fp32) ? d.loop_clock_source
                                                                                                                  : d.load_clock_source()},
                   {"process_family", d.process_family},
                   {"tensor_loop_clock_mhz", d.tensor_loop_clock() > 0 ? boost::json::value(d.loop_clock_mhz_at(Precision::fp16)) : boost::json::value(nullptr)},
                   {"tensor_loop_clock_source", d.tensor_loop_clock() > 0 ? d.tensor_loop_clock_source_used() : std::string()},
                   {"fp32_lanes_per_sm", d.fp32_lanes_per_sm},
                   {"tensor_flops_per_clk_per_sm", {{"tf32", d.tensor.tf32}, {"fp16", d.tensor.fp16}, {"bf16", d.tensor.bf16}, {"fp8", d.tensor.fp8}}},
                   {"memory_gib", d.memory_gib},
                   {"bandwidth_gbps", d.bandwidth_spec_gbps},
                   {"measured_bandwidth_gbps", report::opt_json(d.bandwidth_measured_gbps)},
                   {"measured_bandwidth_source", d.bandwidth_measured_source},
                   {"fp32_tflops", d.peak_tflops(Precision::fp32)},
                   {"tf32_tflops", d.peak_tflops(Precision::tf32)},
                   {"bf16_tflops", d.peak_tflops(Precision::bf16)},
                   {"datasheet", ds},
                   {"l2_mib", d.l2_mib},
                   {"tdp_w", d.tdp_w},
                   {"usd_per_hour", d.price ? boost::json::value(d.price->usd_per_hour) : boost::json::value(nullptr)},
                   {"price_date", d.price ? boost::json::value(d.price->date) : boost::json::value(nullptr)},
                   {"price_source", d.price ? boost::json::value(d.price->source) : boost::json::value(nullptr)},
                   {"validated", d.validation.empty() ? boost::json::value(nullptr) : boost::json::value(d.validation)},
                   {"source", d.source}};
}

inline int cmd_devices(const Common& c, std::ostream& out = std::cout) {
  const Catalog cat = load_catalog(c);
  if (c.format == "json") {
    boost::json::array a;
    for (const auto& d : cat.devices()) a.push_back(device_json(d));
    out << habitat::detail::json_text(boost::json::object{{"schema", "habitat.devices-list/2"}, {"devices", a}}) << "\n";
    return 0;
  }
  if (c.format == "csv") {  // one value per cell: spec and sustained bandwidth apart, no units in cells
    std::printf("name,compute_capability,sms,boost_clock_mhz,sustained_clock_mhz,fp32_lanes_per_sm,bandwidth_gbps,measured_bandwidth_gbps,"
                "fp32_tflops,bf16_tflops,l2_mib,memory_gib,usd_per_hour,price_date,price_source,validated\n");
    for (const auto& d : cat.devices())
      std::printf("%s,%d.%d,%d,%.0f,%.0f,%.0f,%.0f,%s,%.1f,%.1f,%.1f,%.0f,%s,%s,%s,%s\n", habitat::detail::csv_field(d.name).c_str(), d.cc_major,
                  d.cc_minor, d.sms, d.boost_clock_mhz, d.load_clock_mhz(Precision::fp32), d.fp32_lanes_per_sm, d.bandwidth_spec_gbps,
                  d.bandwidth_measured_gbps ? report::fmt("%.0f", *d.bandwidth_measured_gbps).c_str() : "", d.peak_tflops(Precision::fp32),
                  d.peak_tflops(Precision::bf16), d.l2_mib, d.memory_gib, d.price ? report::fmt("%.3f", d.price->usd_per_hour).c_str() : "",
                  habitat::detail::csv_field(d.price ? d.price->date : "").c_str(), habitat::detail::csv_field(d.price ? d.price->source : "").c_str(),
                  habitat::detail::csv_field(d.validation).c_str());
    return 0;
  }
  std::printf("%-15s %6s %4s %6s %6s %5s %12s %8s %8s %6s %6s  %s\n", "name", "cc", "SMs",
              "boost", "load", "lanes", "BW GB/s", "FP32 TF", "BF16 TF", "L2 MiB", "$/h", "validated (mean error)");
  for (const auto& d : cat.devices()) {
    const std::string cc = d.nvidia() ? std::to_string(d.cc_major) + "." + std::to_string(d.cc_minor) : d.isa;  // AMD: its gfx target
    const std::string price = d.price ? report::fmt("%.2f", d.price->usd_per_hour) : "-";
    const std::string bw = report::fmt("%.0f", d.bandwidth_spec_gbps) + (d.bandwidth_measured_gbps ? report::fmt("(%.0f)", *d.bandwidth_measured_gbps) : "");
    const std::string v = d.validation.empty() ? "no" : d.validation;
    std::printf("%-15s %6s %4d %6.0f %6.0f %5.0f %12s %8.1f %8.1f %6.1f %6s  %s\n",
                d.name.c_str(), cc.c_str(), d.sms, d.boost_clock_mhz, d.load_clock_mhz(Precision::fp32), d.fp32_lanes_per_sm, bw.c_str(),
                d.peak_tflops(Precision::fp32), d.peak_tflops(Precision::bf16), d.l2_mib, price.c_str(), v.c_str());
  }
  std::printf("\nload: SM clock under continuous load (below boost on power-capped cards). lanes: FP32 lanes per SM (AMD: per CU, at\n"
                "the FP32 matrix rate its libraries' GEMMs use; cc: its gfx target). BW: spec\n"
                "(sustained: measured, derived from public timings, or estimated; sources: habitat devices --format json).\n"
                "validated: against real measurements of that GPU (README, section Validation); 'no' means predicted from physics only.\n"
                "$/h: one GPU's on-demand hourly price, for samples/$ (samples per dollar of GPU time); each price's date and source:\n"
                "habitat devices --format csv (or json). Prices move; give your own with --devices FILE.\n");
  return 0;
}

}  // namespace habitat::cli
