#pragma once
// The requirements habitat's extension points place on user types, in one place.
#include <concepts>

#include "habitat/device/device.hpp"
#include "habitat/predict/gamma.hpp"
#include "habitat/predict/waves.hpp"
#include "habitat/trace/trace.hpp"

namespace habitat {

// How memory-bound a kernel is on the destination: a value in [0, 1].
template <class G>
concept GammaSource = requires(const GammaInput& in) {
  { G::gamma(in) } -> std::convertible_to<double>;
  { G::name } -> std::convertible_to<const char*>;
};

// Time ratio T_d / T_o of one kernel from waves, bandwidths, clocks and gamma.
template <class W>
concept WaveFormula = requires(const WaveInput& in) {
  { W::scale(in) } -> std::convertible_to<double>;
  { W::name } -> std::convertible_to<const char*>;
};

struct KernelPrediction;

// Predicts one kernel of an origin trace on a destination GPU.
template <class P>
concept KernelPredictor = requires(const P& p, const Kernel& k, const KernelWork& w, const Device& o, const Device& d) {
  { p.predict(k, w, o, d) } -> std::same_as<KernelPrediction>;
};

}  // namespace habitat
