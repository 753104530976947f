#pragma once
// Nelder-Mead simplex minimisation (derivative-free; for fitting a handful of model constants).
#include <algorithm>
#include <functional>
#include <numeric>
#include <vector>

namespace habitat::detail {

[[nodiscard]] inline std::vector<double> nelder_mead(const std::function<double(const std::vector<double>&)>& f, std::vector<double> x0,
                                                     double step, int iterations) {
  const std::size_t n = x0.size();
  std::vector<std::vector<double>> s{x0};
  for (std::size_t i = 0; i < n; ++i) {
    auto x = x0;
    x[i] += step;
    s.push_back(x);
  }
  std::vector<double> fx(n + 1);
  for (std::size_t i = 0; i <= n; ++i) fx[i] = f(s[i]);
  auto lerp = [&](const std::vector<double>& a, const std::vector<double>& b, double t) {
    std::vector<double> r(n);
    for (std::size_t i = 0; i < n; ++i) r[i] = a[i] + t * (b[i] - a[i]);
    return r;
  };
  for (int it = 0; it < iterations; ++it) {
    std::vector<std::size_t> order(n + 1);
    std::iota(order.begin(), order.end(), 0);
    std::sort(order.begin(), order.end(), [&](auto a, auto b) { return fx[a] < fx[b]; });
    const auto best = order.front(), worst = order.back(), second = order[n - 1];
    std::vector<double> c(n, 0.0);
    for (std::size_t i = 0; i <= n; ++i)
      if (i != worst)
        for (std::size_t j = 0; j < n; ++j) c[j] += s[i][j] / double(n);
    const auto xr = lerp(c, s[worst], -1.0);
    const double fr = f(xr);
    if (fr < fx[best]) {
      const auto xe = lerp(c, s[worst], -2.0);
      const double fe = f(xe);
      if (fe < fr) s[worst] = xe, fx[worst] = fe;
      else s[worst] = xr, fx[worst] = fr;
    } else if (fr < fx[second]) {
      s[worst] = xr, fx[worst] = fr;
    } else {
      const auto xc = lerp(c, s[worst], 0.5);
      const double fc = f(xc);
      if (fc < fx[worst]) s[worst] = xc, fx[worst] = fc;
      else
        for (std::size_t i = 0; i <= n; ++i)
          if (i != best) s[i] = lerp(s[best], s[i], 0.5), fx[i] = f(s[i]);
    }
  }
  return s[static_cast<std::size_t>(std::min_element(fx.begin(), fx.end()) - fx.begin())];
}

}  // namespace habitat::detail
