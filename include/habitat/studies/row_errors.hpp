#pragma once
// What every study reports of its rows: the mean absolute error of one of their error measures, over the rows
// a filter keeps; and the host cost a study fits by reproducing a measured step.
#include <cmath>
#include <vector>

namespace habitat::report {

struct EveryRow {
  template <class Row>
  bool operator()(const Row&) const {
    return true;
  }
};

// Mean of |(row.*error)()| over the rows `keep` accepts (0 where it accepts none).
template <class Row, class Keep = EveryRow>
[[nodiscard]] double mean_abs(const std::vector<Row>& rows, double (Row::*error)() const, Keep keep = {}) {
  double e = 0;
  int n = 0;
  for (const auto& r : rows)
    if (keep(r)) e += std::abs((r.*error)()), ++n;
  return n ? e / n : 0;
}

// The cost in [0, hi] at which `step_ms(cost)`, a step that grows with the cost, reaches `measured_ms` (bisection).
template <class StepMs>
[[nodiscard]] double cost_reproducing(StepMs step_ms, double measured_ms, double hi = 50000) {
  double lo = 0;
  for (int i = 0; i < 30; ++i) {
    const double mid = 0.5 * (lo + hi);
    (step_ms(mid) < measured_ms ? lo : hi) = mid;
  }
  return 0.5 * (lo + hi);
}

}  // namespace habitat::report
