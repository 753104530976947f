#pragma once
// What every device a device file yields must satisfy: the figures the predictors divide by and multiply
// with are finite and positive, so no prediction for it can be NaN or Infinity.
#include "fuzz_common.hpp"
#include "habitat/device/device.hpp"

namespace habitat::fuzz {

inline void check_device_usable(const Device& d) {
  for (auto p : {Precision::fp32, Precision::tf32, Precision::fp16, Precision::bf16}) {
    require_finite(d.peak_tflops(p), "peak TFLOPS");
    require_finite(d.sustained_tflops(p), "sustained TFLOPS");
    require(d.peak_tflops(p) > 0 && d.sustained_tflops(p) > 0, "a peak of 0 TFLOPS");
  }
  require_finite(d.sustained_bandwidth_gbps(), "sustained bandwidth");
  require(d.sustained_bandwidth_gbps() > 0 && d.bandwidth_spec_gbps > 0, "a bandwidth of 0");
  require(d.sms > 0 && d.cc_major > 0, "no SMs or no compute capability");
  for (double v : {d.memory_gib, d.l2_mib, d.tdp_w, d.base_clock_mhz, d.interconnect.nvlink_gbps, d.interconnect.pcie_gbps,
                   d.interconnect.network_gbps})
    require(std::isfinite(v) && v >= 0, "a negative or non-finite memory, L2, power, clock or link figure");
  if (d.price) require(std::isfinite(d.price->usd_per_hour) && d.price->usd_per_hour >= 0, "a negative or non-finite price");
  const auto& l = d.limits;
  require(l.max_threads_per_block > 0 && l.max_threads_per_sm > 0 && l.regs_per_block > 0 && l.regs_per_sm > 0 && l.warp_size > 0 &&
              l.shared_mem_per_block > 0 && l.shared_mem_per_sm > 0 && l.shared_mem_per_block_optin > 0 && l.reserved_shared_mem_per_block >= 0,
          "an occupancy limit out of range");
}

}  // namespace habitat::fuzz
