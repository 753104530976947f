#pragma once
// A GPU's specification: what wave scaling and the roofline need, plus price and provenance.
#include <optional>
#include <string>
#include <vector>

namespace habitat {

enum class Precision { fp32, tf32, fp16, bf16 };

[[nodiscard]] constexpr const char* to_string(Precision p) {
  switch (p) {
    case Precision::fp32: return "fp32";
    case Precision::tf32: return "tf32";
    case Precision::fp16: return "fp16";
    case Precision::bf16: return "bf16";
  }
  return "?";
}

// Per-SM resources that decide occupancy (names follow cudaDeviceProp).
struct OccupancyLimits {
  int max_threads_per_block = 1024;
  int max_threads_per_sm = 2048;
  int regs_per_block = 65536;
  int regs_per_sm = 65536;
  int warp_size = 32;
  long shared_mem_per_block = 49152;
  long shared_mem_per_sm = 65536;
  long shared_mem_per_block_optin = 49152;
  long reserved_shared_mem_per_block = 0;
};

struct Price {
  double usd_per_hour = 0;
  std::string date;    // when the price was read
  std::string source;  // who charges it
};

struct Device {
  std::string name;
  std::vector<std::string> aliases;
  int cc_major = 0, cc_minor = 0;
  int sms = 0;
  double base_clock_mhz = 0, boost_clock_mhz = 0;
  double memory_gib = 0;
  double bandwidth_spec_gbps = 0;
  std::optional<double> bandwidth_measured_gbps;
  std::string bandwidth_measured_source;
  double fp32_tflops = 0;
  double tf32_tflops = 0;  // tensor-core, dense; equals fp32 where there are no TF32 tensor cores
  double fp16_tflops = 0;  // tensor-core, dense, FP32 accumulate
  double bf16_tflops = 0;
  double l2_mib = 0;
  std::optional<Price> price;
  std::string source;
  OccupancyLimits limits;

  [[nodiscard]] double peak_tflops(Precision p) const {
    switch (p) {
      case Precision::fp32: return fp32_tflops;
      case Precision::tf32: return tf32_tflops > 0 ? tf32_tflops : fp32_tflops;
      case Precision::fp16: return fp16_tflops > 0 ? fp16_tflops : fp32_tflops;
      case Precision::bf16: return bf16_tflops > 0 ? bf16_tflops : fp32_tflops;
    }
    return fp32_tflops;
  }
};

// Bandwidths of two GPUs compared like with like: measured on both where both are measured, else the
// spec sheet on both (a measured/spec mix would bias every ratio by the measurement efficiency).
struct BandwidthPair {
  double origin_gbps, dest_gbps;
  bool measured;
};

[[nodiscard]] inline BandwidthPair bandwidths(const Device& origin, const Device& dest) {
  if (origin.bandwidth_measured_gbps && dest.bandwidth_measured_gbps)
    return {*origin.bandwidth_measured_gbps, *dest.bandwidth_measured_gbps, true};
  return {origin.bandwidth_spec_gbps, dest.bandwidth_spec_gbps, false};
}

}  // namespace habitat
