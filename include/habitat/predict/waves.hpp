#pragma once
// Wave formulas: how a kernel's time scales with the wave sizes, bandwidths and clocks of two GPUs.
// Each is a policy type with `static double scale(const WaveInput&)`, the factor T_d / T_o.
#include <cmath>
#include <cstdint>

namespace habitat {

struct WaveInput {
  std::int64_t blocks;        // B
  std::int64_t wave_origin;   // W_o
  std::int64_t wave_dest;     // W_d
  double bandwidth_ratio;     // D_o / D_d
  double clock_ratio;         // C_o / C_d
  double gamma;
};

namespace waves {

// Eq. 2 (many waves): T_d = (D_o/D_d)^g (W_o/W_d)^(1-g) (C_o/C_d)^(1-g) T_o.
struct Many {
  static constexpr const char* name = "eq2";
  [[nodiscard]] static double scale(const WaveInput& w) {
    const double g = w.gamma;
    return std::pow(w.bandwidth_ratio, g) * std::pow(double(w.wave_origin) / double(w.wave_dest), 1 - g) *
           std::pow(w.clock_ratio, 1 - g);
  }
};

// Eq. 1 (whole waves): T_d = ceil(B/W_d) (D_o/D_d W_d/W_o)^g (C_o/C_d)^(1-g) ceil(B/W_o)^-1 T_o.
// When the grid fits in one wave on both GPUs, every block runs at once on either: only bandwidth and
// clock remain (Eq. 1's W_d/W_o term assumes full waves and would misjudge a partial one).
struct Exact {
  static constexpr const char* name = "eq1";
  [[nodiscard]] static double scale(const WaveInput& w) {
    const double g = w.gamma;
    if (w.blocks <= w.wave_origin && w.blocks <= w.wave_dest)
      return std::pow(w.bandwidth_ratio, g) * std::pow(w.clock_ratio, 1 - g);
    const double waves_o = std::ceil(double(w.blocks) / double(w.wave_origin));
    const double waves_d = std::ceil(double(w.blocks) / double(w.wave_dest));
    return waves_d / waves_o * std::pow(w.bandwidth_ratio * double(w.wave_dest) / double(w.wave_origin), g) *
           std::pow(w.clock_ratio, 1 - g);
  }
};

}  // namespace waves
}  // namespace habitat
