// habitat-calibrate-host: what torch.profiler costs on a host, fitted from fixture workloads recorded on it
// with the profiler (the trace) and without (CUDA-event iteration times in the manifest). Prints the fit,
// the per-workload replay next to the profiled step, and the `profiler` block for the host profile.
#include <CLI/CLI.hpp>

#include <boost/json.hpp>

#include <algorithm>
#include <cstdio>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "habitat/kineto/reader.hpp"
#include "habitat/sim/calibrate.hpp"

int main(int argc, char** argv) {
  using namespace habitat;
  CLI::App app{"habitat-calibrate-host: fit the profiler's per-record cost on a host from fixtures recorded on it"};
  std::vector<std::string> fit_dirs, check_dirs;
  app.add_option("--fit", fit_dirs, "fixture folder (manifest.json + traces) to fit on; repeatable")->required()->check(CLI::ExistingDirectory);
  app.add_option("--check", check_dirs, "fixture folder only to report on (held out); repeatable")->check(CLI::ExistingDirectory);
  bool halves = false, no_count = false;
  std::vector<double> fixed;
  app.add_option("--profiler", fixed, "keep this profiler cost (per op us, per call us, slowdown) and fit the count alone")->expected(3);
  double above = -1, below = -1;
  app.add_option("--above", above, "how far over the count the trace's host time may stay (default: StepCost's)");
  app.add_option("--below", below, "how far under the count the trace's host time may stay (default: StepCost's)");
  app.add_flag("--halves", halves, "fit on the even-numbered workloads of each --fit folder, report the odd ones as held out");
  app.add_flag("--no-count", no_count, "fit the profiler cost alone, without the host's bottom-up count (the earlier model)");
  double first_step_us = 0;
  app.add_option("--first-step-us", first_step_us,
                 "what a profiler session's first active step records more than the next ones on this host (us; measured on traces of "
                 "several active steps), held in the profiled count's fit")
      ->check(CLI::Range(0.0, 1e4));
  CLI11_PARSE(app, argc, argv);
  try {
    struct Loaded {
      sim::MeasuredStep m;
      std::unique_ptr<Trace> t;
      bool fit;
    };
    std::vector<Loaded> all;
    for (auto [dirs, fit] : {std::pair{&fit_dirs, true}, {&check_dirs, false}})
      for (const auto& d : *dirs)
        for (std::size_t i = 0; auto& m : sim::read_manifest(d)) {
          std::cerr << "habitat-calibrate-host: reading " << m.trace_path << "\n";
          all.push_back({m, std::make_unique<Trace>(kineto::read_trace(m.trace_path)), fit && !(halves && i++ % 2)});
        }
    std::vector<sim::CalibrationCase> cases;
    for (const auto& l : all)
      if (l.fit) cases.push_back({l.m.workload, l.t.get(), l.m.measured_us});
    auto count = no_count ? std::nullopt : sim::fit_step_cost(cases, first_step_us);
    if (count && above >= 0) count->above = above;
    if (count && below >= 0) count->below = below;
    auto show = [](const sim::RecordCount& c) {  // the host profile's keys; a profiled-only term where it has a cost
      std::string out;
      for (const auto& term : sim::record_terms)
        if (!term.profiled_only || c.*term.cost > 0) out += (out.empty() ? "" : ", ") + std::string(term.key) + " " + std::to_string(c.*term.cost);
      return out;
    };
    if (count)
      std::printf("counts on the %td host-bound forward-only workloads:\n  un-profiled: %s\n  profiled:    %s\n",
                  std::count_if(cases.begin(), cases.end(), sim::informs_count), show(count->unprofiled).c_str(), show(count->profiled).c_str());
    const auto fit = fixed.size() == 3 ? sim::CalibrationFit{{fixed[0], fixed[1], fixed[2]}, sim::mean_abs_error(cases, {fixed[0], fixed[1], fixed[2]}, count)}
                                       : sim::fit_profiler_cost(cases, count);
    std::printf("fit on %zu workloads: per op record %.3f us, per runtime call %.3f us, slowdown %.3f; mean error %.1f%%\n\n", cases.size(),
                fit.cost.per_op_us, fit.cost.per_call_us, fit.cost.slowdown, 100 * fit.mean_abs_error);
    std::printf("%-32s %-5s %10s %12s %8s %10s %8s\n", "workload", "set", "measured", "profiled", "error", "replayed", "error");
    double e_prof[2] = {0, 0}, e_rep[2] = {0, 0};
    int n[2] = {0, 0};
    for (const auto& l : all) {
      const double rep = sim::replayed_us(*l.t, fit.cost, count), prof = l.t->iteration_us(), m = l.m.measured_us;
      const int s = l.fit ? 0 : 1;
      e_prof[s] += std::abs(prof / m - 1);
      e_rep[s] += std::abs(rep / m - 1);
      ++n[s];
      std::printf("%-32s %-5s %10.3f %12.3f %+7.1f%% %10.3f %+7.1f%%\n", l.m.workload.c_str(), l.fit ? "fit" : "check", m / 1e3, prof / 1e3,
                  100 * (prof / m - 1), rep / 1e3, 100 * (rep / m - 1));
    }
    for (int s = 0; s < 2; ++s)
      if (n[s]) std::printf("mean |error| (%s, %d): profiled step %.1f%%, replayed %.1f%%\n", s ? "check" : "fit", n[s], 100 * e_prof[s] / n[s], 100 * e_rep[s] / n[s]);
    boost::json::object block{{"per_op_us", fit.cost.per_op_us},
                              {"per_call_us", fit.cost.per_call_us},
                              {"slowdown", fit.cost.slowdown},
                              {"mean_abs_error", fit.mean_abs_error},
                              {"workloads", cases.size()}};
    std::cout << "\n\"profiler\": " << boost::json::serialize(block) << "\n";
    if (count) {
      auto json = [](const sim::RecordCount& c, bool profiled) {
        boost::json::object o;
        for (const auto& term : sim::record_terms)
          if (profiled || !term.profiled_only) o[term.key] = c.*term.cost;
        return o;
      };
      std::cout << "\"step_cost\": "
                << boost::json::serialize(boost::json::object{{"unprofiled", json(count->unprofiled, false)},
                                                              {"profiled", json(count->profiled, true)},
                                                              {"above", count->above},
                                                              {"below", count->below}})
                << "\n";
    }
  } catch (const habitat::error& e) {
    std::cerr << "habitat-calibrate-host: error: " << e.what() << "\n";
    return 2;
  }
  return 0;
}
