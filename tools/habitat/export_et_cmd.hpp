#pragma once
// `habitat export-et`: the predicted step of each rank on one GPU as Chakra execution traces
// (DIR/PREFIX.RANK.et), the workload ASTRA-sim simulates a cluster's network with. The graph and the files
// come from adapters/chakra, built where protobuf is found (HABITAT_WITH_CHAKRA); elsewhere the command
// says how to get it.
#include <CLI/CLI.hpp>

#include <filesystem>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "predict_cmd.hpp"
#if HABITAT_WITH_CHAKRA
#include "habitat/chakra/et_file.hpp"
#include "habitat/chakra/pipeline_graph.hpp"
#include "habitat/chakra/step_graph.hpp"
#endif

namespace habitat::cli {

struct ExportEtArgs {
  std::string trace_path;
  std::string to;
  std::optional<std::string> origin_name;
  std::optional<int> batch;
  sim::HostChoice host_args;
  sim::DdpOptions ddp;
  std::string interconnect;
  double bucket_mb = 25;
  std::string out_dir;
  std::string prefix;  // default: the trace's file name without .json(.gz)
  bool gpu_only = false;
  int steps = 1;
  std::string parallel = "ddp";  // --parallel, as predict's
};

// The options `predict` has for one destination, DDP and hosts, by the same names; --out, --prefix,
// --gpu-only. The model options (--step, --predictor, ...) are added by the caller as for `predict`.
inline CLI::App* add_export_et_command(CLI::App& app, ExportEtArgs& a, const CLI::Validator& trace_check) {
  auto* cmd = app.add_subcommand("export-et",
                                 "write the predicted step of each rank on one GPU as Chakra execution traces (DIR/PREFIX.RANK.et) for ASTRA-sim");
  cmd->add_option("trace", a.trace_path, "torch.profiler (Kineto) trace of one GPU, .json or .json.gz; - reads standard input")
      ->required()
      ->check(trace_check);
  cmd->add_option("--to", a.to, "destination GPU (one)")->required();
  cmd->add_option("--out", a.out_dir, "folder to write the files to (created if missing)")->required();
  cmd->add_option("--prefix", a.prefix, "file name before .RANK.et (default: the trace's name); ASTRA-sim's workload is DIR/PREFIX");
  cmd->add_option("--origin", a.origin_name, "origin GPU (default: the one the trace names)");
  cmd->add_option("--batch", a.batch, "samples per rank and step, recorded in the files' metadata")->check(CLI::PositiveNumber);
  cmd->add_option("--world-size", a.ddp.world_size, "ranks of DistributedDataParallel training, per-GPU batch unchanged (default 1)")
      ->check(CLI::Range(1, 1 << 20));
  cmd->add_option("--gpus-per-node", a.ddp.gpus_per_node, "GPUs per node (default: the destination's typical node)")->check(CLI::Range(1, 1024));
  cmd->add_option("--bucket-mb", a.bucket_mb, "DDP's bucket_cap_mb (default 25)")->check(CLI::Range(0.001, 1e6));
  cmd->add_option("--parallel", a.parallel, "how the ranks share the step, as for predict: ddp (default), tp, pp[=S][,microbatches=M][,schedule=1f1b|gpipe] (a graph per stage, with sends and receives) or fsdp[,grad_op][,bf16][,units=...]");
  cmd->add_option("--interconnect", a.interconnect, "link between GPUs of a node: nvlink, pcie, or GB/s per direction (default: the catalog's)");
  cmd->add_option("--network-gbps", a.ddp.network_gbps, "network between nodes, GB/s per GPU and direction (default: the catalog's)")
      ->check(CLI::Range(1e-3, 1e5));
  cmd->add_option("--host", a.host_args.runs_on, "host of the destination machine: a host profile file, a known name, or 'reference'");
  cmd->add_option("--origin-host", a.host_args.recorded_on, "host the trace was recorded on: a host profile file or a known name");
  cmd->add_flag("--gpu-only", a.gpu_only, "leave out the host's nodes: the GPU's kernels and the collectives only");
  cmd->add_option("--steps", a.steps, "the step repeated back to back in each file, as a training loop runs it (default 1: one step from an idle GPU)")
      ->check(CLI::Range(1, 1000));
  return cmd;
}

#if HABITAT_WITH_CHAKRA

struct ExportEtResult {
  chakra::StepGraph graph;               // every rank's (data parallel, FSDP, TP); pipeline parallel: the first stage's
  std::vector<chakra::StepGraph> stages;  // pipeline parallel: one graph per stage (rank)
  std::vector<std::string> files;
  std::size_t bytes_per_file = 0;
  PredictedTrace prediction;  // composed as `predict` composes it (the DDP step where --world-size > 1)
  std::vector<std::string> notes;
};

// The prefix of the files: --prefix, else the trace's file name without .json and .gz.
[[nodiscard]] inline std::string et_prefix(const ExportEtArgs& a) {
  if (!a.prefix.empty()) {
    if (a.prefix.find('/') != std::string::npos || a.prefix == "." || a.prefix == "..")
      throw make_error(a.prefix, "--prefix", "must be a file name, not a path (the folder is --out)");
    return a.prefix;
  }
  if (a.trace_path == "-") return "trace";
  std::string name = std::filesystem::path(a.trace_path).filename().string();
  for (const char* ext : {".gz", ".json"})
    if (name.size() > std::string_view(ext).size() && name.ends_with(ext)) name.resize(name.size() - std::string_view(ext).size());
  return name;
}

// Predicts the step on a.to exactly as `predict` does (the same functions: predict_all, the host model,
// the step program, sim::ddp_step), turns it into Chakra nodes and writes one file per rank.
inline ExportEtResult export_et(const ExportEtArgs& a, const Common& c, const Catalog& cat, std::ostream& err) {
  if (a.to == "all") throw make_error("--to", "all", "export-et writes the step of one GPU: name one (habitat devices lists them)");
  const std::string prefix = et_prefix(a);
  Trace t = load(a.trace_path, c);
  attach(t, c);
  const Device origin = resolve_origin(cat, t, a.origin_name, &err);
  const Device& dest = cat.at(a.to);
  sim::DdpOptions ddp = a.ddp;
  ddp.caps.cap_bytes = a.bucket_mb * 1024 * 1024;
  if (!a.interconnect.empty()) ddp.intra_gbps = intra_link(dest, a.interconnect);

  ExportEtResult r{{}, {}, {}, 0, predict_all(t, kernel_work(t), origin, {&dest}, c).front(), t.warnings};
  auto note = [&](const std::vector<std::string>& more) {
    for (const auto& m : more)
      if (std::find(r.notes.begin(), r.notes.end(), m) == r.notes.end()) r.notes.push_back(m);
  };
  const auto hosts = sim::HostRegistry::builtin();
  const sim::HostModel hm = sim::host_model(hosts, origin, dest, a.host_args);
  note(hm.assumptions);
  for (const std::string* n : {&r.prediction.datapath_note, &r.prediction.collective_note})
    if (!n->empty()) note({"on " + dest.name + ": " + *n});
  const sim::StepProgram program = sim::build_program(t, hm);
  const double host_scale = sim::ddp_host_scale(hosts, hm.runs_on);
  std::vector<double> kernel_us;
  kernel_us.reserve(r.prediction.kernels.size());
  for (const auto& k : r.prediction.kernels) kernel_us.push_back(k.duration_us);
  const ParallelChoice parallel = parse_parallel(a.parallel, ddp);
  const chakra::GraphOptions graph_options{!a.gpu_only, a.steps};
  // habitat's own step, as `predict` prints it: for comparison with what ASTRA-sim makes of the files.
  if (parallel.pp) {
    sim::PpOptions o = *parallel.pp;
    o.intra_gbps = ddp.intra_gbps;
    o.step_cost = sim::destination_step_cost(hm);
    o.batch = a.batch;
    const sim::PpPrediction f = sim::predict_pp(t, program, kernel_us, dest, host_scale, o);
    r.stages = chakra::pp_graphs(f.plan, f.topology, o.schedule, sim::pp_action_us(o, host_scale), graph_options, t.source);
    r.graph = r.stages.front();
    note(sim::compose_pp(r.prediction, t, program, dest, host_scale, o, a.batch));
  } else if (parallel.fsdp) {
    sim::FsdpOptions o = *parallel.fsdp;
    o.intra_gbps = ddp.intra_gbps;
    r.graph = chakra::step_graph(t, program, kernel_us, dest, host_scale, o, graph_options);
    note(sim::compose_fsdp(r.prediction, t, program, dest, host_scale, o, a.batch));
  } else if (parallel.tp) {
    sim::TpOptions o = *parallel.tp;
    o.intra_gbps = ddp.intra_gbps;
    r.graph = chakra::step_graph(t, program, kernel_us, dest, host_scale, o, graph_options);
    note(sim::compose_tp(r.prediction, t, program, dest, host_scale, o, a.batch));
  } else {
    r.graph = chakra::step_graph(t, program, kernel_us, dest, host_scale, ddp, graph_options);
    if (ddp.world_size > 1) note(sim::compose_ddp(r.prediction, t, program, dest, host_scale, ddp, a.batch));
    else sim::compose(r.prediction, t, program, dest, a.batch);
  }
  r.prediction.host = hm.runs_on;
  if (t.gpu_active_us() > 1.02 * t.gpu_busy_us())
    note({"kernels of several streams overlap in the trace (GPU active " + report::fmt("%.2f", t.gpu_active_us() / 1e3) + " ms, busy " +
          report::fmt("%.2f", t.gpu_busy_us() / 1e3) + " ms as recorded): ASTRA-sim runs one compute node at a time, so its compute takes their sum"});
  if (r.graph.unlaunched_kernels > 0)
    note({std::to_string(r.graph.unlaunched_kernels) + " GPU kernels with no launch call in the trace follow their stream only"});

  std::error_code ec;
  std::filesystem::create_directories(a.out_dir, ec);
  if (ec || !std::filesystem::is_directory(a.out_dir)) throw make_error(a.out_dir, "--out", "cannot create the folder" + (ec ? ": " + ec.message() : std::string()));
  const auto& g = r.graph;
  std::vector<chakra::Attr> meta{
#ifdef HABITAT_VERSION
      {"producer", std::string("habitat ") + HABITAT_VERSION + " export-et"},
#else
      {"producer", std::string("habitat export-et")},
#endif
      {"source_trace", a.trace_path},
      {"step", t.step_name},
      {"origin_gpu", origin.name},
      {"gpu", dest.name},
      {"host", hm.runs_on},
      {"host_nodes", !a.gpu_only},
      {"steps", static_cast<std::int64_t>(a.steps)},
      {"rank", std::int64_t{0}},
      {"world_size", static_cast<std::int64_t>(g.topology.ranks)},
      {"gpus_per_node", static_cast<std::int64_t>(g.topology.gpus_per_node)},
      {"nodes", static_cast<std::int64_t>(g.topology.nodes())},
      {"durations", std::string("duration_micros: habitat's predicted times on gpu and host, rounded to whole microseconds along each "
                                "chain; collectives carry habitat's NCCL-ring time, which ASTRA-sim replaces with its own network's")},
      {"habitat_step_us", r.prediction.iteration_us},
      {"habitat_first_step_us", r.prediction.timeline ? r.prediction.timeline->first_step_us : 0.0},
      {"habitat_gpu_us", g.gpu_us},
      {"habitat_host_us", g.host_us},
      {"habitat_comm_us", g.comm_us},
  };
  if (r.prediction.data_parallel) {
    meta.push_back({"habitat_single_gpu_step_us", r.prediction.data_parallel->single_gpu_us});
    meta.push_back({"parallel", r.prediction.data_parallel->plan});
    if (r.prediction.data_parallel->plan == "DDP") {
      meta.push_back({"gradient_bytes", static_cast<std::int64_t>(std::llround(g.plan.gradient_bytes()))});
      meta.push_back({"buckets", static_cast<std::int64_t>(g.buckets)});
      meta.push_back({"bucket_cap_mb", a.bucket_mb});
    }
    meta.push_back({"link", g.topology.intra_kind});
  }
  if (a.batch) meta.push_back({"batch_per_rank", static_cast<std::int64_t>(*a.batch)});
  if (!r.notes.empty()) meta.push_back({"assumptions", r.notes});
  if (!r.stages.empty()) meta.push_back({"microbatches", static_cast<std::int64_t>(parallel.pp->micro())});
  const std::string same_nodes = r.stages.empty() ? chakra::framed_nodes(g) : std::string();
  const auto rank_attr = std::find_if(meta.begin(), meta.end(), [](const chakra::Attr& x) { return x.name == "rank"; });
  for (int rank = 0; rank < g.topology.ranks; ++rank) {
    rank_attr->value = static_cast<std::int64_t>(rank);
    const std::string path = (std::filesystem::path(a.out_dir) / (prefix + "." + std::to_string(rank) + ".et")).string();
    const std::string own = r.stages.empty() ? std::string() : chakra::framed_nodes(r.stages.at(static_cast<std::size_t>(rank)));
    r.bytes_per_file = std::max(r.bytes_per_file, chakra::write_et_file(path, meta, r.stages.empty() ? same_nodes : own));
    r.files.push_back(path);
  }
  return r;
}

inline int run_export_et(const ExportEtArgs& a, const Common& c, const Catalog& cat, std::ostream& out, std::ostream& err) {
  const ExportEtResult r = export_et(a, c, cat, err);
  for (const auto& n : r.notes) err << "habitat: warning: " << n << "\n";
  const auto& g = r.graph;
  const std::string prefix = (std::filesystem::path(a.out_dir) / et_prefix(a)).string();
  out << "habitat: wrote " << r.files.size() << " Chakra ET file" << (r.files.size() == 1 ? "" : "s") << " (one per rank): " << prefix << "."
      << (r.files.size() == 1 ? "0" : "{0.." + std::to_string(r.files.size() - 1) + "}") << ".et, " << r.bytes_per_file << " bytes each\n";
  if (!r.stages.empty()) {  // pipeline parallel: each stage its own graph
    for (std::size_t s = 0; s < r.stages.size(); ++s) {
      const auto& x = r.stages[s];
      out << "  stage " << s << (x.steps > 1 ? " (" + std::to_string(x.steps) + " steps)" : std::string()) << ": " << x.nodes.size() << " nodes: "
          << x.gpu_nodes << " compute (" << report::fmt("%.2f", x.gpu_us / 1e3) << " ms on " << r.prediction.device << ")";
      if (x.host_nodes) out << ", " << x.host_nodes << " host (" << report::fmt("%.2f", x.host_us / 1e3) << " ms)";
      out << ", " << x.sends << " sends and " << x.recvs << " receives of " << report::fmt("%.2f", x.send_bytes / std::max(1, x.sends) / 1048576.0)
          << " MiB\n";
    }
  } else {
  out << "  per rank" << (g.steps > 1 ? " (" + std::to_string(g.steps) + " steps)" : std::string()) << ": " << g.nodes.size() << " nodes: " << g.gpu_nodes
      << " GPU kernels (" << report::fmt("%.2f", g.gpu_us / 1e3) << " ms on " << r.prediction.device << ")";
  if (g.host_nodes) out << ", " << g.host_nodes << " host (" << report::fmt("%.2f", g.host_us / 1e3) << " ms on " << r.prediction.host << ")";
  if (g.comm_nodes) {
    std::vector<std::string> kinds;
    if (g.buckets) kinds.push_back(std::to_string(g.buckets) + " all-reduces of " + report::fmt("%.1f", g.allreduce_bytes / 1048576.0) + " MiB in all");
    if (g.all_gathers) kinds.push_back(std::to_string(g.all_gathers) + " all-gathers of " + report::fmt("%.1f", g.all_gather_bytes / 1048576.0) + " MiB");
    if (g.reduce_scatters)
      kinds.push_back(std::to_string(g.reduce_scatters) + " reduce-scatters of " + report::fmt("%.1f", g.reduce_scatter_bytes / 1048576.0) + " MiB");
    if (const int rest = g.comm_nodes - g.buckets - g.all_gathers - g.reduce_scatters; rest > 0) kinds.push_back(std::to_string(rest) + " broadcasts");
    out << ", " << g.comm_nodes << " collectives (";
    for (std::size_t i = 0; i < kinds.size(); ++i) out << (i ? ", " : "") << kinds[i];
    out << ")";
  }
  out << "\n";
  }
  const double first = r.prediction.timeline ? r.prediction.timeline->first_step_us : r.prediction.iteration_us;
  out << "  habitat's step";
  if (r.prediction.data_parallel)
    out << " (" << r.prediction.data_parallel->plan << " on " << g.topology.ranks << " GPUs, " << g.topology.nodes() << " node" << (g.topology.nodes() == 1 ? "" : "s") << ", "
        << g.topology.intra_kind << ")";
  out << ": " << report::fmt("%.2f", first / 1e3) << " ms from an idle GPU, " << report::fmt("%.2f", r.prediction.iteration_us / 1e3)
      << " ms back to back; for the " << (g.steps == 1 ? std::string("step") : std::to_string(g.steps) + " steps") << " in the files "
      << report::fmt("%.2f", (first + (g.steps - 1) * r.prediction.iteration_us) / 1e3) << " ms\n";
  out << "  ASTRA-sim's workload: " << prefix << "\n";
  return 0;
}

#else

inline int run_export_et(const ExportEtArgs&, const Common&, const Catalog&, std::ostream&, std::ostream&) {
  throw make_error("export-et", "",
                   "not built: habitat was configured without protobuf (Debian: libprotobuf-dev and protobuf-compiler, which "
                   "scripts/install-deps.sh installs); configure again after installing them");
}

#endif

}  // namespace habitat::cli
