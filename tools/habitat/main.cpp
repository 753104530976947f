// `habitat`: predict a training iteration recorded on one GPU on other GPUs. Thin: flags in, library calls,
// reports out.
#include <CLI/CLI.hpp>

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <optional>
#include <string>
#include <vector>

#include "habitat/detail/json_text.hpp"
#include "habitat/habitat.hpp"
#include "habitat/kineto/reader.hpp"
#include "habitat/report/html.hpp"
#include "habitat/report/writers.hpp"
#include "habitat/sim/compose.hpp"
#include "habitat/sim/ddp.hpp"
#include "habitat/whatif/whatif.hpp"
#include "metrics_cmd.hpp"
#include "mlp_cmd.hpp"
#include "predict_ops_cmd.hpp"
#include "habitat/mlp/hybrid.hpp"
#include "habitat/predict/gemm_tile_predictor.hpp"
#include "predictors.hpp"
#include "suggest.hpp"

namespace {

using namespace habitat;

struct Common {
  std::vector<std::string> device_files;
  std::string format = "table";
  std::string scaling = "roofline";
  std::string waves = "eq1";
  std::string gamma = "roofline-utilization";
  std::optional<long> step;
  std::vector<std::string> metric_files;
  std::string predictor = "physics";
  std::string models;
  bool quiet = false;
};

// Measured metrics for the origin trace's kernels; says how much of the kernel time they cover.
void attach(Trace& t, const Common& c) {
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

Catalog load_catalog(const Common& c) {
  Catalog cat = Catalog::builtin();
  for (const auto& f : c.device_files) cat.merge_file(f);
  return cat;
}

// Whether a progress message is waiting for the end of its line: an error then starts on a new one.
bool mid_line = false;

Trace load(const std::string& path, const Common& c) {
  const auto t0 = std::chrono::steady_clock::now();
  if (!c.quiet) std::cerr << "habitat: reading " << path << " ..." << std::flush;
  mid_line = !c.quiet;
  kineto::ReadOptions ro{c.step, {}};
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

std::vector<PredictedTrace> predict_all(const Trace& t, const std::vector<KernelWork>& work, const Device& origin,
                                        const std::vector<const Device*>& dests, const Common& c) {
  std::vector<PredictedTrace> out;
  const auto predictor = cli::make_predictor(c.scaling, c.waves, c.gamma);
  // What depends on the trace and the origin only is computed once, not per destination.
  const KernelLabels labels = kernel_labels(t);
  const bool tiles = c.predictor != "scaling" && c.predictor != "wave";
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

void add_common(CLI::App& app, Common& c, bool html = false) {
  app.add_option("--devices", c.device_files, "JSON file of GPUs to add or override (habitat.devices/1); repeatable")->check(CLI::ExistingFile);
  if (html)
    app.add_option("--format", c.format, "table, json, csv or html (one self-contained page with charts)")
        ->check(CLI::IsMember({"table", "json", "csv", "html"}));
  else
    app.add_option("--format", c.format, "table, json or csv")->check(CLI::IsMember({"table", "json", "csv"}));
}

void add_model(CLI::App& app, Common& c) {
  app.add_option("--step", c.step, "ProfilerStep number to use (default: the last one with GPU work)");
  app.add_option("--scaling", c.scaling,
                 "kernel scaling: roofline (per-SM datapaths, sustained clocks and bandwidth; default) or wave (Eq. 1/2 with --waves, --gamma)")
      ->check(CLI::IsMember({"roofline", "wave"}));
  app.add_option("--waves", c.waves, "wave formula: eq1 (whole waves, default) or eq2 (many waves)")->check(CLI::IsMember({"eq1", "eq2"}));
  app.add_option("--gamma", c.gamma, "gamma source: roofline-utilization (default), roofline (Eq. 3), 1 (paper fallback)")
      ->check(CLI::IsMember({"roofline-utilization", "roofline", "1"}));
  app.add_option("--metrics", c.metric_files, "measured metrics of the origin trace's kernels (habitat.metrics/1); repeatable")
      ->check(CLI::ExistingFile);
  app.add_option("--predictor", c.predictor,
                 "physics (--scaling for every kernel, the GEMM tile model for matmul launches that cannot run on the destination; "
                 "default), tile (the tile model for every matmul), scaling (--scaling alone; 'wave' is accepted too) or hybrid "
                 "(physics plus learned models for other kernel-varying operations, where they were trained)")
      ->check(CLI::IsMember({"physics", "tile", "scaling", "wave", "hybrid"}));
  app.add_option("--models", c.models, "folder of *.safetensors operation models for --predictor hybrid (default: the shipped ones)");
  app.add_flag("-q,--quiet", c.quiet, "no progress messages on stderr");
}

int cmd_devices(const Common& c) {
  const Catalog cat = load_catalog(c);
  if (c.format == "json") {
    boost::json::array a;
    for (const auto& d : cat.devices()) {
      boost::json::object ds;
      for (const auto& [k, v] : d.datasheet) ds[k] = v;
      a.push_back({{"name", d.name},
                   {"compute_capability", std::to_string(d.cc_major) + "." + std::to_string(d.cc_minor)},
                   {"sms", d.sms},
                   {"boost_clock_mhz", d.boost_clock_mhz},
                   {"sustained_clock_mhz", d.load_clock_mhz(Precision::fp32)},
                   {"sustained_clock_source", d.sustained_clock_source},
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
                   {"source", d.source}});
    }
    std::cout << habitat::detail::json_text(boost::json::object{{"schema", "habitat.devices-list/2"}, {"devices", a}}) << "\n";
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
  std::printf("%-15s %5s %4s %6s %6s %5s %12s %8s %8s %6s %6s  %s\n", "name", "cc", "SMs",
              "boost", "load", "lanes", "BW GB/s", "FP32 TF", "BF16 TF", "L2 MiB", "$/h", "validated (mean error)");
  for (const auto& d : cat.devices()) {
    const std::string cc = std::to_string(d.cc_major) + "." + std::to_string(d.cc_minor);
    const std::string price = d.price ? report::fmt("%.2f", d.price->usd_per_hour) : "-";
    const std::string bw = report::fmt("%.0f", d.bandwidth_spec_gbps) + (d.bandwidth_measured_gbps ? report::fmt("(%.0f)", *d.bandwidth_measured_gbps) : "");
    const std::string v = d.validation.empty() ? "no" : d.validation;
    std::printf("%-15s %5s %4d %6.0f %6.0f %5.0f %12s %8.1f %8.1f %6.1f %6s  %s\n",
                d.name.c_str(), cc.c_str(), d.sms, d.boost_clock_mhz, d.load_clock_mhz(Precision::fp32), d.fp32_lanes_per_sm, bw.c_str(),
                d.peak_tflops(Precision::fp32), d.peak_tflops(Precision::bf16), d.l2_mib, price.c_str(), v.c_str());
  }
  std::printf("\nload: SM clock under continuous load (below boost on power-capped cards). lanes: FP32 lanes per SM. BW: spec\n"
                "(sustained: measured, derived from public timings, or estimated; sources: habitat devices --format json).\n"
                "validated: against real measurements of that GPU (README, section Validation); 'no' means predicted from physics only.\n"
                "$/h: one GPU's on-demand hourly price, for samples/$ (samples per dollar of GPU time); each price's date and source:\n"
                "habitat devices --format csv (or json). Prices move; give your own with --devices FILE.\n");
  return 0;
}

// `habitat host-profile`: the LibTorch microbenchmark is its own program (habitat-host-profile, built where
// LibTorch is found); found next to this binary, in its tools/torch build folder, or on PATH.
int run_host_profile(const char* self, const std::vector<std::string>& args) {
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::path me = fs::read_symlink("/proc/self/exe", ec);
  if (ec) me = fs::absolute(self);
  std::vector<fs::path> candidates{me.parent_path() / "habitat-host-profile", me.parent_path() / "tools/torch/habitat-host-profile"};
  if (const char* path = std::getenv("PATH")) {
    std::string_view rest(path);
    while (!rest.empty()) {
      const auto colon = rest.find(':');
      candidates.push_back(fs::path(std::string(rest.substr(0, colon))) / "habitat-host-profile");
      rest = colon == std::string_view::npos ? std::string_view() : rest.substr(colon + 1);
    }
  }
  for (const auto& c : candidates) {
    if (!fs::is_regular_file(c, ec)) continue;
    std::vector<std::string> storage{c.string()};
    storage.insert(storage.end(), args.begin(), args.end());
    std::vector<char*> argv;
    for (auto& a : storage) argv.push_back(a.data());
    argv.push_back(nullptr);
    execv(c.c_str(), argv.data());
    throw make_error(c.string(), "host-profile", std::string("cannot run: ") + std::strerror(errno));
  }
  throw make_error("habitat-host-profile", "host-profile",
                   "not built: configure with LibTorch (CMAKE_PREFIX_PATH=<torch>/share/cmake) to build it, or build tools/torch on its own; "
                   "fixtures/record/profiler_cost.py measures the same from Python");
}

// --interconnect: a link type of the GPU's catalog entry, or a bandwidth.
double intra_link(const Device& d, const std::string& v) {
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

}  // namespace

// A trace argument: an existing file, or "-" for standard input.
const CLI::Validator file_or_stdin(
    [](std::string& v) { return v == "-" ? std::string() : CLI::ExistingFile(v); }, "FILE or -", "FILE_OR_STDIN");

int main(int argc, char** argv) {
  CLI::App app{"habitat: predict how long a training iteration recorded on one GPU takes on others"};
  app.require_subcommand(1);
  app.set_version_flag("--version", std::string("habitat ") + HABITAT_VERSION);
  Common c;

  auto* devices = app.add_subcommand("devices", "list the GPU catalog");
  add_common(*devices, c);

  std::string trace_path, dest_path;
  std::vector<std::string> to;
  std::optional<std::string> origin_name, dest_name;
  std::optional<int> batch;
  std::optional<std::size_t> breakdown;
  auto* predict = app.add_subcommand("predict", "predict a trace on other GPUs");
  predict->add_option("trace", trace_path, "torch.profiler (Kineto) trace, .json or .json.gz; - reads standard input")
      ->required()
      ->check(file_or_stdin);
  predict->add_option("--to", to, "destination GPU (repeatable), or 'all' for the whole catalog")->required();
  predict->add_option("--origin", origin_name, "origin GPU (default: the one the trace names)");
  predict->add_option("--batch", batch, "samples per iteration, for throughput")->check(CLI::PositiveNumber);
  sim::HostChoice host_args;
  predict->add_option("--host", host_args.runs_on,
                      "host of the destination machine: a host profile file or a known name (default: the destination GPU's reference host, "
                      "else the recording host)");
  predict->add_option("--origin-host", host_args.recorded_on,
                      "host the trace was recorded on: a host profile file or a known name (default: the origin GPU's reference host)");
  sim::DdpOptions ddp;
  std::string interconnect;
  double bucket_mb = 25;
  predict->add_option("--world-size", ddp.world_size, "GPUs of DistributedDataParallel training, per-GPU batch unchanged (default 1)")
      ->check(CLI::Range(1, 1 << 20));
  predict->add_option("--gpus-per-node", ddp.gpus_per_node, "GPUs per node (default: the destination's typical node, see `habitat devices`)")
      ->check(CLI::Range(1, 1024));
  predict->add_option("--bucket-mb", bucket_mb, "DDP's bucket_cap_mb (default 25)")->check(CLI::Range(0.001, 1e6));
  predict->add_option("--interconnect", interconnect, "link between GPUs of a node: nvlink, pcie, or GB/s per direction (default: the catalog's)");
  predict->add_option("--network-gbps", ddp.network_gbps, "network between nodes, GB/s per GPU and direction (default: the catalog's)")
      ->check(CLI::Range(1e-3, 1e5));
  predict->add_option("--breakdown", breakdown, "operations shown per device in the table (default: 8 for up to 3 devices, else 0)");
  std::vector<std::string> what_if_args;
  predict->add_option("--what-if", what_if_args,
                      "also predict the step transformed: batch=N (needs --batch, the trace's own), precision=bf16|fp16 (autocast from "
                      "an FP32 trace) or precision=tf32 (TF32 matmuls and convolutions); repeatable, applied together");
  add_common(*predict, c, true);
  add_model(*predict, c);

  auto* evaluate = app.add_subcommand("evaluate", "predict DEST_TRACE's GPU from ORIGIN_TRACE and report the error");
  evaluate->add_option("origin_trace", trace_path, "trace recorded on the origin GPU")->required()->check(CLI::ExistingFile);
  evaluate->add_option("dest_trace", dest_path, "the same workload recorded on the destination GPU")->required()->check(CLI::ExistingFile);
  evaluate->add_option("--origin", origin_name, "origin GPU (default: from the origin trace)");
  evaluate->add_option("--dest", dest_name, "destination GPU (default: from the destination trace)");
  std::string kernels_csv;
  evaluate->add_option("--kernels-csv", kernels_csv, "write one row per origin kernel (work, gamma, predicted and actual time) to FILE");
  bool gamma_study_flag = false;
  evaluate->add_flag("--gamma-study", gamma_study_flag,
                     "compare gamma = 1, the counter-free estimate and measured metrics (--metrics) on this pair, per kernel class");
  add_common(*evaluate, c);
  add_model(*evaluate, c);

  auto* host_profile = app.add_subcommand("host-profile",
                                          "measure this machine's host (per-op dispatch and kernel-launch costs) and write a host profile "
                                          "for --host; options are those of habitat-host-profile (--out FILE --name NAME)");
  host_profile->allow_extras();
  host_profile->prefix_command();

  cli::MetricsArgs margs;
  auto* metrics = cli::add_metrics_commands(app, margs);
  cli::MlpArgs mlp_args;
  auto* mlp_cmd = cli::add_mlp_commands(app, mlp_args);
  cli::PredictOpsArgs pops;
  auto* predict_ops = cli::add_predict_ops_command(app, pops);
  add_common(*predict_ops, c);

  // A mistyped command gets a suggestion, not CLI11's "A subcommand is required".
  if (argc > 1 && argv[1][0] != '-') {
    const std::string given = argv[1];
    std::vector<std::string> names;
    for (const auto* sub : app.get_subcommands([](const CLI::App*) { return true; })) names.push_back(sub->get_name());
    const bool known = std::find(names.begin(), names.end(), given) != names.end();
    const std::string best = cli::nearest(given, names);
    if (!known) {
      std::cerr << "habitat: unknown command '" << given << "'" << (best.empty() ? "" : "; did you mean '" + best + "'?")
                << " (habitat --help lists them)\n";
      return 2;
    }
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    // --help and --version exit 0; every usage error exits 2, as documented (not CLI11's own codes).
    if (app.exit(e) == 0) return 0;
    // A mistyped flag: name the flag it was probably meant to be.
    std::vector<std::string> flags;
    for (const CLI::App* a : app.get_subcommands([](const CLI::App*) { return true; }))
      for (const CLI::Option* o : a->get_options())
        for (const auto& n : o->get_lnames()) flags.push_back("--" + n);
    for (int i = 1; i < argc; ++i) {
      const std::string arg = std::string(argv[i]).substr(0, std::string(argv[i]).find('='));
      if (!arg.starts_with("--") || std::find(flags.begin(), flags.end(), arg) != flags.end()) continue;
      if (const std::string best = cli::nearest(arg, flags); !best.empty())
        std::cerr << "habitat: unknown option '" << arg << "'; did you mean '" << best << "'?\n";
    }
    return 2;
  }

  try {
    if (*devices) return cmd_devices(c);
    if (*host_profile) return run_host_profile(argv[0], host_profile->remaining());
    if (*metrics) return cli::run_metrics_command(*metrics, margs);
    const Catalog cat = load_catalog(c);
    if (*mlp_cmd) return cli::run_mlp_command(*mlp_cmd, mlp_args, cat);
    if (*predict_ops) return cli::run_predict_ops(pops, cat, c.format == "table" && !predict_ops->count("--format") ? "csv" : c.format);
    if (*predict) {
      Trace t = load(trace_path, c);
      attach(t, c);
      const Device origin = resolve_origin(cat, t, origin_name, &std::cerr);
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
      if (ddp.world_size > 1 && comm::ddp_plan(t, ddp.caps).already_ddp)
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
      for (const auto& p : preds)
        if (!p.datapath_note.empty()) note({p.datapath_note});
      report::OriginSummary o{origin.name, 0, t.gpu_active_us(), sim::origin_timeline(t, own)};
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
          if (it == programs.end()) it = programs.emplace(hm.runs_on, sim::build_program(t, hm)).first;
          const sim::StepProgram program = extra_host.empty() ? it->second : whatif::with_added_host(it->second, extra_host);
          if (ddp.world_size > 1) {
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
        if (!c.quiet) std::cerr << "habitat: what if " << spec.label() << " ...\n";
        auto applied = whatif::apply(t, origin, spec, batch ? std::optional<std::int64_t>(*batch) : std::nullopt);
        const Trace& tt = applied.step.trace;
        report::WhatIfSummary w{spec.label(), applied.step.notes, {}, {}, predict_all(tt, kernel_work(tt), origin, dests, c), {}};
        if (batch) {
          w.memory = applied.memory;
          w.batch = spec.batch.value_or(*batch);
        }
        compose_all(w.predictions, tt, applied.step.extra_host_us, w.batch ? std::optional<int>(static_cast<int>(*w.batch)) : std::nullopt);
        for (const Device* d : dests) w.fits.push_back(!w.memory || w.memory->fits(*d));
        what_if = std::move(w);
      }
      for (const auto& n : notes) std::cerr << "habitat: warning: " << n << "\n";
      const report::WhatIfSummary* wi = what_if ? &*what_if : nullptr;
      if (c.format == "html") {
        report::HtmlInput in{&t, o, preds, {}, {}, wi, batch, notes, trace_path};
        for (const Device* d : dests) {
          in.validation.push_back(d->validation);
          in.usd_per_hour.push_back(d->price ? d->price->usd_per_hour : 0.0);
        }
        report::write_html(std::cout, in);
      } else if (c.format == "json") report::write_json(std::cout, o, preds, wi);
      else if (c.format == "csv") report::write_csv(std::cout, o, preds, wi);
      else report::write_table(std::cout, o, preds, breakdown.value_or(preds.size() <= 3 ? 8 : 0), wi);
      return 0;
    }
    if (*evaluate) {
      Trace ot = load(trace_path, c);
      attach(ot, c);
      const Trace dt = load(dest_path, c);
      const Device origin = resolve_origin(cat, ot, origin_name, &std::cerr);
      const Device dest = resolve_origin(cat, dt, dest_name, &std::cerr);
      const auto work = kernel_work(ot);
      const auto preds = predict_all(ot, work, origin, {&dest}, c);
      if (!kernels_csv.empty()) {
        std::ofstream out(kernels_csv);
        if (!out) throw make_error(kernels_csv, "", "cannot write the per-kernel CSV");
        report::write_kernel_csv(out, ot, work, preds.front(), &dt);
      }
      if (gamma_study_flag) {
        const GammaStudy gs = gamma_study(ot, dt, origin, dest);
        if (c.format == "json") std::cout << habitat::detail::json_text(report::gamma_study_json(gs)) << "\n";
        else {
          std::cout << origin.name << " -> " << dest.name << ": where gamma comes from\n";
          report::write_gamma_study(std::cout, gs);
        }
        return 0;
      }
      const Evaluation ev = habitat::evaluate(ot, dt, preds.front(), origin, dest);
      if (!report::same_workload(ev))
        std::cerr << "habitat: warning: only " << ev.matched << " of " << std::min(ev.origin_kernels, ev.dest_kernels)
                  << " kernels match by name: are " << trace_path << " and " << dest_path << " the same workload? The errors below compare different steps\n";
      if (c.format == "json") std::cout << habitat::detail::json_text(report::evaluation_json(ev)) << "\n";
      else if (c.format == "csv") report::write_evaluation_csv(std::cout, ev);
      else {
        std::cout << origin.name << " -> " << dest.name << " (" << (c.scaling == "roofline" ? std::string("roofline scaling") : "waves " + c.waves + ", gamma " + c.gamma) << ")\n";
        report::write_evaluation_table(std::cout, ev);
      }
      return 0;
    }
  } catch (const habitat::error& e) {
    std::cerr << (mid_line ? "\n" : "") << "habitat: error: " << e.what() << "\n";
    return 2;
  } catch (const std::exception& e) {
    std::cerr << (mid_line ? "\n" : "") << "habitat: internal error: " << e.what() << "\n";
    return 3;
  }
  return 0;
}
