#pragma once
// Fits and checks the tensor-core power law (device.hpp, tensor_power_share) on public torch.mm throughput. For each
// GPU the law covers and each tensor-core precision of the table, its largest calls (N >= 8192: 1-90 ms each, 30 back
// to back) imply the clock the loop settles at: the GEMM tile model's time without any tensor-loop clock gives the
// mean clock over such a call by the measured/predicted ratio, and the model's own fall from the tensor clock over
// the call (gemm_tile.hpp, estimate) is taken off it. The law's two constants are those whose shares best match these
// clocks (grid search, mean |log|), fitted on every GPU and once leaving each GPU out; leaving a GPU out, its calls'
// time is predicted with the law so fitted, next to the model as it was without the law.
#include <algorithm>
#include <cmath>
#include <map>
#include <string>
#include <vector>

#include "habitat/studies/published_gemm_study.hpp"

namespace habitat::report {

inline constexpr int power_fit_min_n = 8192;

struct PowerCall {
  int n = 0;
  double measured_tflops = 0;
};

struct PowerRow {
  const Device* gpu = nullptr;
  std::string precision;
  std::vector<PowerCall> calls;
  double share = 1;  // the loop clock the calls imply, as a share of the tensor clock (median over the calls)
};

// A device as the law never touched it: no tensor-loop clock measured, derived or taken from a twin.
[[nodiscard]] inline Device uncapped(Device d) {
  d.tensor_loop_clock_mhz = d.tensor_power_clock_mhz = 0;
  d.tensor_loop_clock_source.clear(), d.tensor_power_clock_source.clear(), d.tensor_power_twin.clear();
  return d;
}
// The device with the law's clock at `share` of its tensor clock, as the catalog derives it.
[[nodiscard]] inline Device with_power_share(const Device& g, double share) {
  Device d = uncapped(g);
  d.tensor_power_clock_mhz = d.tensor_clock_at_share(share);
  return d;
}

// The loop clock's share of the tensor clock that one call implies (time ~ 1 / clock for these compute-bound calls).
// `u`: the GPU without any tensor loop clock (uncapped(g)): the model's own fall is measured from its tensor clock.
[[nodiscard]] inline double implied_share(const Device& u, Precision p, const PowerCall& c) {
  const double peak = u.peak_clock_mhz(p), loop = u.loop_clock_mhz_at(p), tau = gemm::fitted.clock_fall_us;
  const double flops = 2.0 * c.n * c.n * c.n, predicted_us = flops / (predicted_mm_tflops(u, p, c.n) * 1e6);
  const double measured_us = flops / (c.measured_tflops * 1e6);
  // The mean clock the uncapped model ran the call at (its fall from the tensor clock, where its loop clock is lower).
  const double model_mean = loop < peak ? gemm::mean_clock_mhz(predicted_us, peak, loop, tau) : loop;
  const double mean = model_mean * predicted_us / measured_us / peak;  // the measured call's mean clock, as a share
  const double fall = gemm::mean_clock_mhz(measured_us, 1, 0, tau);   // the start's weight in that mean
  return std::max((mean - fall) / (1 - fall), 1e-3);
}

[[nodiscard]] inline std::vector<PowerRow> power_rows(const std::vector<GemmRow>& rows, const Catalog& cat) {
  std::map<std::pair<const Device*, std::string>, PowerRow> by;
  for (const auto& r : rows) {
    const Device& g = cat.at(r.gpu);
    const Precision p = gemm_precision(r.precision, {"", ""});
    if (r.n < power_fit_min_n || !g.tensor_power_applies() || !g.on_tensor_cores(p)) continue;
    auto& row = by[{&g, r.precision}];
    row.gpu = &g, row.precision = r.precision;
    row.calls.push_back({r.n, r.measured_tflops});
  }
  std::vector<PowerRow> out;
  for (auto& [key, row] : by) {
    const Precision p = gemm_precision(row.precision, {"", ""});
    const Device u = uncapped(*row.gpu);
    std::vector<double> v;
    for (const auto& c : row.calls) v.push_back(implied_share(u, p, c));
    std::sort(v.begin(), v.end());
    row.share = v.size() % 2 ? v[v.size() / 2] : 0.5 * (v[v.size() / 2 - 1] + v[v.size() / 2]);
    out.push_back(std::move(row));
  }
  return out;
}

// Mean |log(law / implied)| over the rows (whose GPU is not `leave_out`), the fit's loss.
[[nodiscard]] inline double power_loss(const std::vector<PowerRow>& rows, const TensorPower& c, const Device* leave_out = nullptr) {
  double s = 0;
  int n = 0;
  for (const auto& r : rows)
    if (r.gpu != leave_out) s += std::abs(std::log(tensor_power_share(*r.gpu, c) / r.share)), ++n;
  return n ? s / n : 0;
}

[[nodiscard]] inline TensorPower fit_tensor_power(const std::vector<PowerRow>& rows, const Device* leave_out = nullptr) {
  TensorPower best;
  double best_loss = power_loss(rows, best, leave_out);
  for (int j = 0; j <= 80; ++j)
    for (int i = 0; i <= 160; ++i) {
      const TensorPower c{0.025 * j, 0.05 * std::pow(400.0, i / 160.0)};  // 0-2 W per SM; 0.05-20 W per TFLOPS
      if (const double l = power_loss(rows, c, leave_out); l < best_loss) best_loss = l, best = c;
    }
  return best;
}

// Mean |error| of the time per call over a row's calls, the device predicting them.
[[nodiscard]] inline double call_error(const PowerRow& r, const Device& d) {
  const Precision p = gemm_precision(r.precision, {"", ""});
  double e = 0;
  for (const auto& c : r.calls) e += std::abs(predicted_mm_tflops(d, p, c.n) / c.measured_tflops - 1) / r.calls.size();
  return e;
}

struct PowerCheck {
  const Device* gpu = nullptr;
  std::string precisions;
  double implied = 0, law_all = 0, law_without = 0;  // shares of the tensor clock (implied: mean over precisions)
  double error_without_law = 0, error_law_left_out = 0;  // time per call, mean over the GPU's precisions
};

// Each GPU left out of the law's fit, its largest calls predicted with the law fitted without it, next to the model
// without the law (its clock under load or the datapath's clock).
[[nodiscard]] inline std::vector<PowerCheck> power_leave_one_out(const std::vector<PowerRow>& rows, const TensorPower& all) {
  std::map<const Device*, std::vector<const PowerRow*>> by;
  for (const auto& r : rows) by[r.gpu].push_back(&r);
  std::vector<PowerCheck> out;
  for (const auto& [g, v] : by) {
    PowerCheck c{g};
    c.law_all = tensor_power_share(*g, all);
    c.law_without = tensor_power_share(*g, fit_tensor_power(rows, g));
    const Device without_law = uncapped(*g), law = with_power_share(*g, c.law_without);
    for (const auto* r : v) {
      c.precisions += (c.precisions.empty() ? "" : ", ") + r->precision;
      c.implied += r->share / v.size();
      c.error_without_law += call_error(*r, without_law) / v.size();
      c.error_law_left_out += call_error(*r, law) / v.size();
    }
    out.push_back(std::move(c));
  }
  return out;
}

}  // namespace habitat::report
