// habitat-cupti-collect: runs a CUDA or PyTorch program with the habitat CUPTI collector injected and
// writes the measured counters as a habitat.metrics/1 file.
//
//   habitat-cupti-collect -o resnet50.metrics.json --trace resnet50.json.gz --top 0.995 -- python3 train.py
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "habitat/cupti/selection_file.hpp"
#include "habitat/kineto/reader.hpp"
#include "habitat/metrics/metric_file.hpp"
#include "habitat/metrics/selection.hpp"

extern char** environ;

namespace fs = std::filesystem;

namespace {

fs::path default_injection(const char* argv0) {
  std::error_code ec;
  fs::path self = fs::read_symlink("/proc/self/exe", ec);
  if (ec) self = fs::absolute(argv0);
  // Beside this program in a build folder; in the install's library folder (lib/ or lib/<triplet>/).
  for (auto dir : {self.parent_path(), self.parent_path().parent_path() / HABITAT_INSTALL_LIBDIR})
    if (fs::exists(dir / "libhabitat_cupti_inject.so")) return fs::canonical(dir / "libhabitat_cupti_inject.so");
  return {};
}

int run(const std::vector<std::string>& argv, const std::vector<std::string>& extra_env) {
  std::vector<std::string> env_store;
  for (char** e = environ; *e; ++e) env_store.emplace_back(*e);
  for (const auto& e : extra_env) env_store.push_back(e);
  std::vector<char*> envp, args;
  for (auto& e : env_store) envp.push_back(e.data());
  envp.push_back(nullptr);
  std::vector<std::string> argv_store = argv;
  for (auto& a : argv_store) args.push_back(a.data());
  args.push_back(nullptr);
  pid_t pid = 0;
  if (int rc = posix_spawnp(&pid, args[0], nullptr, nullptr, args.data(), envp.data()); rc != 0)
    throw habitat::make_error(argv[0], "", std::string("cannot start program: ") + std::strerror(rc));
  int status = 0;
  waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Measure per-kernel DRAM bytes and FLOPs of a CUDA program with CUPTI (habitat.metrics/1)"};
  std::string out, trace_path, cache_path, inject, workload;
  double top = 0.995;
  bool all = false, wait = false, extended = false;
  std::vector<std::string> program;
  app.add_option("-o,--output", out, "metric file to write")->required();
  app.add_option("--trace", trace_path, "Kineto trace of the same program: measure only the launches that make up --top of its kernel time");
  app.add_option("--top", top, "fraction of kernel time whose launches are measured (with --trace)")->check(CLI::Range(0.0, 1.0));
  app.add_option("--cache", cache_path, "metric file of kernels already measured: they are skipped and kept in the output");
  app.add_flag("--all-launches", all, "measure every launch, not only the first of each configuration");
  app.add_flag("--wait-for-profiler-start", wait, "measure only between cudaProfilerStart() and cudaProfilerStop()");
  app.add_flag("--extended-counters", extended, "also FP16 and FP64 vector-unit instruction counts (more replay passes)");
  app.add_option("--workload", workload, "workload name recorded in the file");
  app.add_option("--inject", inject, "path of libhabitat_cupti_inject.so (default: next to this program)");
  app.add_option("program", program, "program and its arguments (after --)")->required();
  CLI11_PARSE(app, argc, argv);
  try {
    if (inject.empty()) inject = default_injection(argv[0]).string();
    if (inject.empty() || !fs::exists(inject)) throw habitat::make_error("--inject", "", "libhabitat_cupti_inject.so not found; pass --inject PATH");
    std::vector<std::string> env{"CUDA_INJECTION64_PATH=" + inject};
    const fs::path tmp = fs::temp_directory_path() / ("habitat-cupti-" + std::to_string(getpid()));
    fs::create_directories(tmp);
    const std::string fresh = (tmp / "measured.json").string();
    env.push_back("HABITAT_CUPTI_OUT=" + fresh);
    std::optional<habitat::MetricSet> cache;
    if (!cache_path.empty() && fs::exists(cache_path)) {
      cache = habitat::read_metric_file(cache_path);
      env.push_back("HABITAT_CUPTI_SKIP=" + cache_path);
      std::fprintf(stderr, "habitat-cupti-collect: %zu kernels cached in %s\n", cache->kernels().size(), cache_path.c_str());
    }
    if (!trace_path.empty()) {
      const auto t = habitat::kineto::read_trace(trace_path);
      const auto sel = habitat::select_top_launches(t, top, cache ? &*cache : nullptr);
      const std::string sel_path = (tmp / "selection.json").string();
      habitat::cupti::write_selection(sel, sel_path);
      env.push_back("HABITAT_CUPTI_SELECT=" + sel_path);
      std::fprintf(stderr, "habitat-cupti-collect: %zu launch configurations to measure (top %.1f%% of kernel time, cached ones left out)\n",
                   sel.size(), 100 * top);
    }
    if (wait) env.push_back("HABITAT_CUPTI_WAIT=1");
    if (all) env.push_back("HABITAT_CUPTI_ALL=1");
    if (extended) env.push_back("HABITAT_CUPTI_COUNTERS=extended");
    if (!workload.empty()) env.push_back("HABITAT_CUPTI_WORKLOAD=" + workload);
    const auto t0 = std::chrono::steady_clock::now();
    const int rc = run(program, env);
    const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (fs::exists(fresh + ".error")) {
      std::ifstream e(fresh + ".error");
      std::string msg((std::istreambuf_iterator<char>(e)), {});
      throw habitat::make_error("collector", "", msg);
    }
    if (!fs::exists(fresh))
      throw habitat::make_error(program[0], "", "the program ended (exit " + std::to_string(rc) +
                                                    ") without the collector writing metrics: did it use the GPU?");
    habitat::MetricSet measured = habitat::read_metric_file(fresh);
    habitat::MetricSet merged;
    merged.provenance = measured.provenance;
    merged.provenance.collection_seconds = secs;
    if (cache) {
      if (!cache->provenance.device.empty() && cache->provenance.device != measured.provenance.device)
        throw habitat::make_error(cache_path, "measured_on.device", "cache is from '" + cache->provenance.device + "', this run used '" +
                                                                        measured.provenance.device + "'");
      for (const auto& m : cache->kernels()) merged.add(m);
    }
    for (const auto& m : measured.kernels()) merged.add(m);
    habitat::write_metric_file(merged, out);
    fs::remove_all(tmp);
    std::fprintf(stderr, "habitat-cupti-collect: %zu new + %zu cached kernels -> %s (%.1f s, program exit %d)\n", measured.kernels().size(),
                 cache ? cache->kernels().size() : 0, out.c_str(), secs, rc);
    return rc == 0 ? 0 : 1;
  } catch (const habitat::error& e) {
    std::fprintf(stderr, "habitat-cupti-collect: %s\n", e.what());
    return 2;
  }
}
