#pragma once
// The simple predictions a user would make without habitat; every accuracy figure is shown next to them.
#include <array>

#include "habitat/device/device.hpp"

namespace habitat {

struct Baseline {
  const char* name;
  double (*factor)(const Device& origin, const Device& dest);  // T_d / T_o for every kernel
};

inline constexpr std::array baselines = {
    Baseline{"same time", [](const Device&, const Device&) { return 1.0; }},
    Baseline{"peak FP32 FLOPS ratio", [](const Device& o, const Device& d) { return o.fp32_tflops() / d.fp32_tflops(); }},
    Baseline{"memory bandwidth ratio",
             [](const Device& o, const Device& d) {
               const BandwidthPair bw = bandwidths(o, d);
               return bw.origin_gbps / bw.dest_gbps;
             }},
};

}  // namespace habitat
