// `habitat-whatif-study`: the batch and precision what-ifs judged on a fixture set's own measurements
// (fixtures/whatif/<gpu>): a Markdown table per pair next to the baselines, the means, and plots of
// predicted against measured time.
//   habitat-whatif-study [--fixtures fixtures/whatif] [--plot PREFIX]   (writes PREFIX-gpu.svg, PREFIX-iteration.svg)
#include <CLI/CLI.hpp>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>

#include "habitat/report/scatter.hpp"
#include "habitat/studies/whatif_study.hpp"

using namespace habitat;

int main(int argc, char** argv) {
  CLI::App app{"habitat-whatif-study: the what-ifs against measured steps of other batches and precisions"};
  std::string dir = "fixtures/whatif", plot;
  app.add_option("--fixtures", dir, "folder of per-GPU fixture folders with manifests (default fixtures/whatif)")->check(CLI::ExistingDirectory);
  app.add_option("--plot", plot, "write PREFIX-gpu.svg and PREFIX-iteration.svg: predicted against measured");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 2;
  }
  try {
    const Catalog cat = Catalog::builtin();
    const auto hosts = sim::HostRegistry::builtin();
    std::vector<std::string> series;
    std::vector<report::ScatterPoint> gpu_pts, iter_pts;
    std::printf("| GPU | what-if | traced | asked about | GPU active measured ms | habitat | error | baseline error | iteration measured ms | habitat | error | baseline error |\n"
                "|---|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|\n");
    std::vector<std::string> means;
    for (const auto& entry : std::filesystem::directory_iterator(dir)) {
      if (!std::filesystem::exists(entry.path() / "manifest.json")) continue;
      const std::string gpu = entry.path().filename().string();
      for (const bool batch : {true, false}) {
        std::fprintf(stderr, "habitat-whatif-study: %s, %s ...\n", gpu.c_str(), batch ? "batch" : "precision");
        const auto s = report::whatif_study(entry.path().string(), batch, cat, hosts);
        const std::string kind = batch ? "batch" : "precision";
        series.push_back(gpu + " " + kind);
        for (const auto& r : s.rows) {
          std::printf("| %s | %s | %s | %s | %.2f | %.2f | %+.1f%% | %+.1f%% | %.2f | %.2f | %+.1f%% | %+.1f%% |\n", gpu.c_str(), kind.c_str(), r.from.c_str(),
                      r.to.c_str(), r.measured_gpu_ms, r.predicted_gpu_ms, 100 * r.gpu_error(), 100 * r.baseline_gpu_error(), r.measured_ms,
                      r.predicted_ms, 100 * r.error(), 100 * r.baseline_error());
          gpu_pts.push_back({r.measured_gpu_ms, r.predicted_gpu_ms, series.size() - 1, gpu + ": " + r.from + " -> " + r.to});
          iter_pts.push_back({r.measured_ms, r.predicted_ms, series.size() - 1, gpu + ": " + r.from + " -> " + r.to});
        }
        char line[256];
        std::snprintf(line, sizeof line, "%s %s: %zu pairs, GPU active %.1f%% (baseline %.1f%%), iteration %.1f%% (baseline %.1f%%, as traced %.1f%%)",
                      gpu.c_str(), kind.c_str(), s.rows.size(), 100 * s.mean_abs(&report::WhatIfRow::gpu_error),
                      100 * s.mean_abs(&report::WhatIfRow::baseline_gpu_error), 100 * s.mean_abs(&report::WhatIfRow::error),
                      100 * s.mean_abs(&report::WhatIfRow::baseline_error), 100 * s.mean_abs(&report::WhatIfRow::as_traced_error));
        means.push_back(line);
      }
    }
    std::printf("\n");
    for (const auto& m : means) std::printf("%s\n", m.c_str());
    if (!plot.empty()) {
      for (const auto& [suffix, pts, what] : {std::tuple{"-gpu.svg", &gpu_pts, "GPU active time"}, std::tuple{"-iteration.svg", &iter_pts, "iteration time"}}) {
        std::ofstream out(plot + suffix);
        if (!out) throw make_error(plot + suffix, "--plot", "cannot write");
        report::write_scatter_svg(out, std::string("What-ifs: ") + what + ", predicted vs measured (ms)", *pts, series, "measured ms", "habitat ms");
        std::fprintf(stderr, "habitat-whatif-study: wrote %s\n", (plot + suffix).c_str());
      }
    }
  } catch (const habitat::error& e) {
    std::cerr << "habitat-whatif-study: error: " << e.what() << "\n";
    return 2;
  }
  return 0;
}
