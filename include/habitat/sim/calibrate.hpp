#pragma once
// Calibrating what the profiler costs on a host, from the same workloads measured with and without it:
// each case is a profiled trace and the un-profiled iteration time measured with CUDA events on the same
// machine. The fit finds the profiler cost under which the replayed traces come closest to the
// measurements (mean absolute relative error): coarse grid, then Nelder-Mead.
#include <boost/json.hpp>

#include <algorithm>
#include <array>
#include <cmath>
#include <optional>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "habitat/detail/json_fields.hpp"
#include "habitat/detail/nelder_mead.hpp"
#include "habitat/sim/host_model.hpp"
#include "habitat/sim/simulator.hpp"

namespace habitat::sim {

struct MeasuredStep {
  std::string workload, trace_path;
  double measured_us = 0;  // un-profiled iteration time, median of repeats
  std::string protocol;    // "back_to_back" or "synced"
};

// The workloads of a fixture manifest (habitat.fixture-manifest/1 or habitat.host-fixture-manifest/1),
// with the un-profiled time of the protocol the trace was recorded with.
[[nodiscard]] inline std::vector<MeasuredStep> read_manifest(const std::string& dir) {
  const std::string path = dir + "/manifest.json";
  std::ifstream in(path);
  if (!in) throw make_error(path, "", "cannot open fixture manifest");
  std::stringstream ss;
  ss << in.rdbuf();
  const auto doc = habitat::detail::parse_document(ss.str(), path);
  if (!doc.is_object() || !doc.as_object().contains("workloads") || !doc.at("workloads").is_array())
    throw make_error(path, "top level", "no 'workloads' array");
  std::vector<MeasuredStep> out;
  const auto& ws = doc.at("workloads").as_array();
  for (std::size_t i = 0; i < ws.size(); ++i) {
    const habitat::detail::JsonPlace at{path, "workloads[" + std::to_string(i) + "]"};
    if (!ws[i].is_object()) throw make_error(path, at.place, "must be an object");
    const auto& w = ws[i].as_object();
    MeasuredStep m;
    m.workload = habitat::detail::opt_string(w, "workload", at).value_or("");
    m.trace_path = dir + "/" + habitat::detail::opt_string(w, "trace", at).value_or("");
    // Traces recorded back to back are compared with back-to-back timings; the older fixtures synchronized
    // after every step, in their timing and in their trace alike.
    std::string key = w.contains("back_to_back_ms") ? "back_to_back_ms" : w.contains("iteration_ms") ? "iteration_ms" : "synced_ms";
    const auto* t = w.if_contains(key);
    if (!t || !t->is_object()) throw make_error(path, at.place, "no 'back_to_back_ms', 'iteration_ms' or 'synced_ms' timing");
    m.measured_us = habitat::detail::number(t->as_object(), "median", {path, at.place + "." + key}) * 1e3;
    if (!(std::isfinite(m.measured_us) && m.measured_us > 0)) throw make_error(path, at.place + "." + key, "median must be a positive number");
    m.protocol = key == "back_to_back_ms" ? "back_to_back" : "synced";
    out.push_back(std::move(m));
  }
  return out;
}

struct CalibrationCase {
  std::string workload;
  const Trace* trace = nullptr;
  double measured_us = 0;
};

// Replayed un-profiled iteration of the origin itself (recorded kernel times, same host).
[[nodiscard]] inline double replayed_us(const Trace& t, const ProfilerCost& cost, const std::optional<StepCost>& count = {}) {
  HostModel h;
  h.profiler = cost;
  h.step_cost = count;
  std::vector<double> d;
  d.reserve(t.kernels.size());
  for (const auto& k : t.kernels) d.push_back(k.duration_us);
  return simulate(t, build_program(t, h), d).period_us;
}

[[nodiscard]] inline double mean_abs_error(const std::vector<CalibrationCase>& cases, const ProfilerCost& cost,
                                           const std::optional<StepCost>& count = {}) {
  double e = 0;
  for (const auto& c : cases) e += std::abs(replayed_us(*c.trace, cost, count) / c.measured_us - 1);
  return cases.empty() ? 0 : e / static_cast<double>(cases.size());
}

struct CalibrationFit {
  ProfilerCost cost;
  double mean_abs_error = 0;
};

[[nodiscard]] inline CalibrationFit fit_profiler_cost(const std::vector<CalibrationCase>& cases, const std::optional<StepCost>& count = {}) {
  CalibrationFit best{{}, mean_abs_error(cases, {}, count)};
  for (double slow = 1.0; slow <= 2.0 + 1e-9; slow += 0.1)
    for (double op = 0; op <= 4 + 1e-9; op += 0.5)
      for (double call = 0; call <= 4 + 1e-9; call += 1.0) {
        const ProfilerCost c{op, call, slow};
        if (const double e = mean_abs_error(cases, c, count); e < best.mean_abs_error) best = {c, e};
      }
  auto clamp = [](const std::vector<double>& x) { return ProfilerCost{std::max(0.0, x[0]), std::max(0.0, x[1]), std::max(1.0, x[2])}; };
  const auto x = habitat::detail::nelder_mead([&](const std::vector<double>& v) { return mean_abs_error(cases, clamp(v), count); },
                                              {best.cost.per_op_us, best.cost.per_call_us, best.cost.slowdown}, 0.25, 60);
  if (const double e = mean_abs_error(cases, clamp(x), count); e < best.mean_abs_error) best = {clamp(x), e};
  return best;
}

// A step is host-bound enough to inform the count when its kernels fill less than this share of its
// measured time.
inline constexpr double count_fit_gpu_share = 0.5;

// Non-negative least squares of y on the columns of x, small and dense: ordinary least squares over the
// active columns by the normal equations (Gaussian elimination, partial pivoting); a negative coefficient
// leaves the active set and the rest are refitted.
template <std::size_t N>
[[nodiscard]] inline std::optional<std::array<double, N>> nonnegative_least_squares(const std::vector<std::array<double, N>>& x,
                                                                                    const std::vector<double>& y) {
  std::array<bool, N> on;
  on.fill(true);
  std::array<double, N> b{};
  for (std::size_t round = 0; round <= N; ++round) {
    std::array<std::array<double, N + 1>, N> m{};
    for (std::size_t r = 0; r < x.size(); ++r)
      for (std::size_t i = 0; i < N; ++i) {
        for (std::size_t j = 0; j < N; ++j) m[i][j] += x[r][i] * x[r][j];
        m[i][N] += x[r][i] * y[r];
      }
    for (std::size_t i = 0; i < N; ++i)
      if (!on[i] || m[i][i] == 0) {  // an inactive or never-seen column: pinned to 0
        on[i] = false;
        m[i].fill(0);
        for (std::size_t j = 0; j < N; ++j) m[j][i] = 0;
        m[i][i] = 1;
      }
    for (std::size_t c = 0; c < N; ++c) {
      std::size_t piv = c;
      for (std::size_t r = c + 1; r < N; ++r)
        if (std::abs(m[r][c]) > std::abs(m[piv][c])) piv = r;
      std::swap(m[c], m[piv]);
      if (std::abs(m[c][c]) < 1e-300) return std::nullopt;
      for (std::size_t r = 0; r < N; ++r)
        if (r != c) {
          const double f = m[r][c] / m[c][c];
          for (std::size_t k = c; k <= N; ++k) m[r][k] -= f * m[c][k];
        }
    }
    bool negative = false;
    for (std::size_t i = 0; i < N; ++i) {
      b[i] = on[i] ? m[i][N] / m[i][i] : 0;
      if (b[i] < 0) on[i] = false, negative = true;
    }
    if (!negative) return b;
  }
  return std::nullopt;
}

[[nodiscard]] inline bool informs_count(const CalibrationCase& c) {
  return counted_step(*c.trace) && c.trace->gpu_busy_us() < count_fit_gpu_share * c.measured_us;
}

// The two counts of StepCost fitted on the host-bound forward-only cases: non-negative least squares of
// the measured (un-profiled) time and of the recorded host time on the record counts, relative (each case
// weighted by 1 / its time, so that 20 us steps count as much as 20 ms ones).
// A term of the profiled step alone (Python's records, with_stack) is a column of the profiled fit only. The first
// active step's extra (RecordCount::per_first_step_us) is held at `first_step_us`, measured on traces of several
// active steps: the fitted steps are their sessions' first, so the fit cannot tell it from the constant.
[[nodiscard]] inline std::optional<StepCost> fit_step_cost(const std::vector<CalibrationCase>& cases, double first_step_us = 0) {
  static_assert(std::ranges::count_if(record_terms, &RecordTerm::held) == 1, "first_step_us is the one held value");
  constexpr std::size_t n_terms = record_terms.size();
  std::vector<std::array<double, n_terms>> xu, xp;
  std::vector<double> y, yp;
  for (const auto& c : cases) {
    if (!informs_count(c)) continue;
    const StepCounts n = step_counts(*c.trace);
    const double recorded = build_program(*c.trace, {}).recorded_host_us;
    if (!(recorded > 0)) continue;
    std::array<double, n_terms> u, p;
    double held_share = 0;  // of the recorded time, what the held term takes
    for (std::size_t i = 0; i < n_terms; ++i) {
      const double records = records_of(record_terms[i], n);
      u[i] = record_terms[i].profiled_only ? 0.0 : records / c.measured_us;
      p[i] = record_terms[i].held ? 0.0 : records / recorded;
      if (record_terms[i].held) held_share += records * first_step_us / recorded;
    }
    xu.push_back(u);
    xp.push_back(p);
    y.push_back(1.0);
    yp.push_back(1.0 - held_share);
  }
  if (y.size() < 8) return std::nullopt;
  const auto u = nonnegative_least_squares(xu, y), p = nonnegative_least_squares(xp, yp);
  if (!u || !p) return std::nullopt;
  auto count = [](const std::array<double, n_terms>& b) {
    RecordCount r;
    for (std::size_t i = 0; i < n_terms; ++i) r.*record_terms[i].cost = b[i];
    return r;
  };
  StepCost cost;  // the bands and the borrowing note keep their defaults
  cost.unprofiled = count(*u);
  cost.profiled = count(*p);
  cost.profiled.per_first_step_us = first_step_us;
  return cost;
}

}  // namespace habitat::sim
