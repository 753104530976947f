#pragma once
// `habitat metrics ...`: the Nsight Compute command to run, import of its CSV, inspection and comparison
// of metric files.
#include <CLI/CLI.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <string>
#include <vector>

#include "habitat/metrics/counters.hpp"
#include "habitat/metrics/metric_file.hpp"
#include "habitat/metrics/ncu_csv.hpp"

namespace habitat::cli {

struct MetricsArgs {
  int cc = 9;
  bool extended = false;
  std::string csv, out, device, workload;
  std::vector<std::string> files;
  double tolerance = 0.05;
  double min_bytes = 1e6;
};

[[nodiscard]] inline std::string ncu_metric_list(int cc, bool extended) {
  return counters::metric_list(cc, extended) +
         ",launch__shared_mem_per_block_dynamic,launch__shared_mem_per_block_static,device__attribute_display_name";
}

inline CLI::App* add_metrics_commands(CLI::App& app, MetricsArgs& a) {
  auto* m = app.add_subcommand("metrics", "measured kernel metrics: ncu command, import, show, compare");
  m->require_subcommand(1);
  auto* cmd = m->add_subcommand("ncu-command", "print the Nsight Compute command that collects what habitat needs");
  cmd->add_option("--cc", a.cc, "compute capability major of the GPU (8 Ampere, 9 Hopper)")->check(CLI::Range(7, 12));
  cmd->add_flag("--extended", a.extended, "also FP16 and FP64 vector-unit instruction counts (more replay passes)");
  auto* imp = m->add_subcommand("import-ncu", "convert an ncu --csv --page raw report to habitat.metrics/1");
  imp->add_option("csv", a.csv, "CSV written by the command of 'habitat metrics ncu-command'")->required()->check(CLI::ExistingFile);
  imp->add_option("-o,--output", a.out, "metric file to write")->required();
  imp->add_option("--device", a.device, "GPU name, if the CSV lacks device__attribute_display_name");
  imp->add_option("--workload", a.workload, "workload name to record");
  auto* show = m->add_subcommand("show", "summarize metric files");
  show->add_option("files", a.files, "habitat.metrics/1 files")->required()->check(CLI::ExistingFile);
  auto* cmp = m->add_subcommand("compare", "compare two metric files kernel by kernel (e.g. CUPTI collector against ncu)");
  cmp->add_option("files", a.files, "two habitat.metrics/1 files")->required()->expected(2)->check(CLI::ExistingFile);
  cmp->add_option("--tolerance", a.tolerance, "relative difference counted as agreement (default 0.05)");
  cmp->add_option("--min-bytes", a.min_bytes, "compare DRAM bytes only for kernels moving at least this many (default 1e6)");
  return m;
}

inline int run_metrics_command(const CLI::App& m, const MetricsArgs& a) {
  if (m.got_subcommand("ncu-command")) {
    std::printf("ncu --csv --page raw --print-units base --print-kernel-base mangled --profile-from-start off \\\n"
                "    --metrics %s \\\n    --log-file WORKLOAD.ncu.csv PROGRAM ARGS...\n",
                ncu_metric_list(a.cc, a.extended).c_str());
    std::printf("# then: habitat metrics import-ncu WORKLOAD.ncu.csv -o WORKLOAD.metrics.json\n");
    return 0;
  }
  if (m.got_subcommand("import-ncu")) {
    const MetricSet s = read_ncu_csv_file(a.csv, {a.device, a.workload});
    write_metric_file(s, a.out);
    std::fprintf(stderr, "habitat: %zu kernels measured on %s -> %s\n", s.kernels().size(), s.provenance.device.c_str(), a.out.c_str());
    return 0;
  }
  if (m.got_subcommand("show")) {
    for (const auto& f : a.files) {
      const MetricSet s = read_metric_file(f);
      double bytes = 0, flops = 0, ns = 0;
      std::size_t varying = 0;
      FlopCounts by;
      for (const auto& k : s.kernels()) {
        bytes += k.dram_bytes() * k.launches;
        flops += k.flops.total() * k.launches;
        ns += k.duration_ns * k.launches;
        for (auto kind : all_flop_kinds) by[kind] += k.flops[kind] * k.launches;
        varying += k.flops_spread > 0.01;
      }
      std::printf("%s: %zu kernels on %s (%s, %s%s)\n  DRAM %.3g GB, %.3g GFLOP, %.3g ms under the profiler; %zu keys hide different work\n  FLOPs:",
                  f.c_str(), s.kernels().size(), s.provenance.device.c_str(), s.provenance.tool.c_str(), s.provenance.collected_at.c_str(),
                  s.provenance.collection_seconds ? (", " + std::to_string(int(*s.provenance.collection_seconds)) + " s to collect").c_str() : "",
                  bytes / 1e9, flops / 1e9, ns / 1e6, varying);
      for (auto kind : all_flop_kinds)
        if (by[kind] > 0) std::printf(" %s %.1f%%", to_string(kind), 100 * by[kind] / std::max(flops, 1.0));
      std::printf("\n");
    }
    return 0;
  }
  // compare
  const MetricSet x = read_metric_file(a.files[0]), y = read_metric_file(a.files[1]);
  if (normalize_device_name(x.provenance.device) != normalize_device_name(y.provenance.device))
    std::printf("warning: measured on different GPUs (%s, %s)\n", x.provenance.device.c_str(), y.provenance.device.c_str());
  std::vector<double> dbytes, dread, dwrite, dflops;
  std::size_t common = 0;
  // Relative difference of one quantity, for kernels where it is large enough to compare.
  auto add = [](std::vector<double>& v, double p, double q, double at_least) {
    if (std::max(p, q) >= at_least) v.push_back(std::abs(p - q) / std::max({p, q, 1.0}));
  };
  for (const auto& k : x.kernels()) {
    const MeasuredKernel* l = y.find(k.key);
    if (!l) continue;
    ++common;
    add(dbytes, k.dram_bytes(), l->dram_bytes(), a.min_bytes);
    add(dread, k.dram_read_bytes, l->dram_read_bytes, a.min_bytes);
    add(dwrite, k.dram_write_bytes, l->dram_write_bytes, a.min_bytes);
    add(dflops, k.flops.total(), l->flops.total(), std::numeric_limits<double>::min());
  }
  auto summary = [&](const char* what, std::vector<double> v) {
    if (v.empty()) return void(std::printf("%-11s no kernels to compare\n", what));
    std::sort(v.begin(), v.end());
    const double within = double(std::count_if(v.begin(), v.end(), [&](double d) { return d <= a.tolerance; })) / v.size();
    double mean = 0;
    for (double d : v) mean += d;
    std::printf("%-11s %zu kernels: median diff %.2f%%, mean %.2f%%, p90 %.2f%%, max %.2f%%; %.1f%% within %.0f%%\n", what, v.size(),
                100 * v[v.size() / 2], 100 * mean / v.size(), 100 * v[v.size() * 9 / 10], 100 * v.back(), 100 * within, 100 * a.tolerance);
  };
  std::printf("%zu kernels in both (%zu in %s, %zu in %s)\n", common, x.kernels().size(), a.files[0].c_str(), y.kernels().size(),
              a.files[1].c_str());
  summary("DRAM bytes", dbytes);
  summary("DRAM read", dread);
  summary("DRAM write", dwrite);
  summary("FLOPs", dflops);
  return common > 0 ? 0 : 1;
}

}  // namespace habitat::cli
