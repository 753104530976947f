#pragma once
// The ncu CSV importer: refusals only as habitat::error; imported counters finite and non-negative, and
// the shared-memory sizes that become integers non-negative.
#include <sstream>

#include "fuzz_common.hpp"
#include "habitat/metrics/ncu_csv.hpp"

namespace habitat::fuzz {

inline void ncu_csv(const std::uint8_t* data, std::size_t size) {
  std::istringstream in(std::string(reinterpret_cast<const char*>(data), size));
  // Half the inputs name the GPU themselves, so files without a device column get past the last check.
  const NcuImportOptions opt{size % 2 ? "H100" : "", ""};
  try {
    const MetricSet set = read_ncu_csv(in, "fuzz.csv", opt);
    for (const auto& m : set.kernels()) {
      require_finite(m.dram_bytes(), "DRAM bytes");
      require_finite(m.flops.total(), "FLOPs");
      require_finite(m.duration_ns, "duration");
      require(m.dram_bytes() >= 0 && m.flops.total() >= 0 && m.duration_ns >= 0, "negative counter");
      require(m.key.smem_dynamic >= 0 && m.key.smem_static.value_or(0) >= 0, "negative shared memory");
      require(m.launches >= 1, "launch count below 1");
    }
  } catch (const habitat::error&) {
  }
}

}  // namespace habitat::fuzz
