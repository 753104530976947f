#pragma once
// A GPU left out of a leave-one-GPU-out study, as the model may know it: its catalog entry less every figure the
// catalog derived from that GPU's own timings, which are the rows the study judges.
#include <string>
#include <utility>
#include <vector>

#include "habitat/detail/quantile.hpp"
#include "habitat/device/device.hpp"

namespace habitat::study {

// Its sustained bandwidth not measured but estimated as its spec times the median share the other measured GPUs
// of its memory generation sustain (HBM3 and HBM3e alike), else of its technology (HBM or GDDR); of two, their
// mean, as for the floors (opstudy::floor_without). Catalog estimates are not evidence: they copy another GPU's
// share. Its loop clocks (one GEMM timed alone, call after call: the P4's and the T4's derived from NeuSight's
// public timings of them, the H100's and the H200's tensor-core loops measured on them) dropped: an FP32 GEMM timed
// alone runs at the clock the catalog gives a card that has none, from the other capped cards of its process family
// among `gpus` (derive_loop_clock_from_peers), else its clock under load (Device::loop_clock_mhz_at). A tensor-core
// GEMM timed alone on a left-out H100 or H200 runs at its clock under load, not re-derived from a power twin or law:
// the studies' rows are FP32.
[[nodiscard]] inline Device unseen(const Device& g, const std::vector<const Device*>& gpus) {
  auto shares_where = [&](auto&& same) {
    std::vector<double> v;
    for (const Device* o : gpus)
      if (o != &g && same(*o) && o->bandwidth_measured_here()) v.push_back(*o->bandwidth_measured_gbps / o->bandwidth_spec_gbps);
    return v;
  };
  const auto generation = g.memory_generation();
  auto shares = generation.empty() ? std::vector<double>{} : shares_where([&](const Device& o) { return o.memory_generation() == generation; });
  if (shares.empty()) shares = shares_where([&](const Device& o) { return o.hbm() == g.hbm(); });
  Device d = g;
  d.bandwidth_measured_gbps.reset();
  d.bandwidth_measured_source.clear();
  if (!shares.empty()) {
    d.bandwidth_measured_gbps = g.bandwidth_spec_gbps * detail::median_of_runs(std::move(shares), 0);
    d.bandwidth_measured_source = "estimate: spec x the median share of the other measured GPUs of its memory";
  }
  d.loop_clock_mhz = d.tensor_loop_clock_mhz = 0;
  d.loop_clock_source.clear(), d.tensor_loop_clock_source.clear(), d.loop_clock_peer.clear();
  derive_loop_clock_from_peers(d, gpus);  // as the catalog does for a capped card without one
  return d;
}

}  // namespace habitat::study
