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
#include "export_et_cmd.hpp"
#include "metrics_cmd.hpp"
#include "mlp_cmd.hpp"
#include "predict_ops_cmd.hpp"
#include "habitat/mlp/hybrid.hpp"
#include "habitat/predict/gemm_tile_predictor.hpp"
#include "predict_cmd.hpp"
#include "predictors.hpp"
#include "suggest.hpp"

namespace {

using namespace habitat;
using namespace habitat::cli;

void add_common(CLI::App& app, Common& c, bool html = false) {
  app.add_option("--devices", c.device_files, "JSON file of GPUs to add or override (habitat.devices/1); repeatable")->check(CLI::ExistingFile);
  if (html)
    app.add_option("--format", c.format, "table, json, csv or html (one self-contained page with charts)")
        ->check(CLI::IsMember({"table", "json", "csv", "html"}));
  else
    app.add_option("--format", c.format, "table, json or csv")->check(CLI::IsMember({"table", "json", "csv"}));
}

void add_model(CLI::App& app, Common& c) {
  app.add_option("--step", c.step, "ProfilerStep number to use, or the number of --step-marker's occurrence (default: the last one with GPU work)");
  app.add_option("--step-marker", c.step_marker,
                 "an annotation of yours around each iteration (e.g. a record_function name): each event of this exact name is a step, "
                 "numbered 1, 2, ... in the file; ProfilerStep#N is then ignored");
  app.add_flag("--whole-trace", c.whole_trace, "a trace with no ProfilerStep#N: predict all of it as one step");
  app.add_flag("--infer-steps", c.infer_steps,
               "a trace with no ProfilerStep#N of PyTorch 1.10 or later: take PyTorch 1.9's ProfilerStep operators, or the iterations "
               "between optimizer steps, as its steps (not validated)");
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
      ->check(CLI::IsMember(cli::predictor_names));
  app.add_option("--models", c.models, "folder of *.safetensors operation models for --predictor hybrid (default: the shipped ones)");
  app.add_flag("-q,--quiet", c.quiet, "no progress messages on stderr");
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
                      "host of every destination machine: a host profile file, a known name, or 'reference' (each GPU's reference "
                      "host from the catalog); default: the recording host, for every row");
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
  std::string parallel = "ddp";
  predict->add_option("--parallel", parallel,
                      "how --world-size GPUs share the step: ddp (default); tp[=N][,dtensor|megatron] (tensor parallel, Megatron "
                      "column/row split of each repeated block's linears, one batch per group; the linears dispatched by torch's "
                      "DTensor (default) or by Megatron-LM's parallel layers); pp[=S][,microbatches=M][,schedule=1f1b|gpipe] (pipeline parallel: "
                      "the repeated blocks cut into S stages, torch.distributed.pipelining's 1F1B (default) or GPipe over M micro-batches, "
                      "default 2S); or fsdp[,grad_op][,bf16][,units=blocks|layers|N] "
                      "(FSDP2: full shard, or parameters kept from forward to backward; bf16 parameters; the units wrapped: the "
                      "model's repeated blocks (default), every layer with parameters, or N units of equal size)");
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
  cli::ExportEtArgs et_args;
  auto* export_et = cli::add_export_et_command(app, et_args, file_or_stdin);
  export_et->add_option("--devices", c.device_files, "JSON file of GPUs to add or override (habitat.devices/1); repeatable")->check(CLI::ExistingFile);
  add_model(*export_et, c);

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
    if (*export_et) return cli::run_export_et(et_args, c, cat, std::cout, std::cerr);
    if (*predict) {
      PredictArgs a{trace_path, to, origin_name, batch, host_args, ddp, interconnect, bucket_mb, breakdown, what_if_args, parallel};
      run_predict(a, c, cat, std::cout, std::cerr);
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
