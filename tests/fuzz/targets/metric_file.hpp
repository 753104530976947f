#pragma once
// The metric file reader: refusals only as habitat::error; what it accepts is finite, and writing it back
// gives a file the reader accepts again.
#include "fuzz_common.hpp"
#include "habitat/metrics/metric_file.hpp"

namespace habitat::fuzz {

inline void metric_file(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  MetricSet set;
  try {
    set = metric_set_from_json(text, "fuzz.json");
  } catch (const habitat::error&) {
    return;
  }
  for (const auto& m : set.kernels()) {
    require_finite(m.dram_bytes(), "DRAM bytes");
    require_finite(m.flops.total(), "FLOPs");
    require_finite(m.duration_ns, "duration");
    require(m.key.smem_dynamic >= 0 && m.key.smem_static.value_or(0) >= 0, "negative shared memory");
    require(m.launches >= 1, "launch count below 1");
  }
  try {
    (void)metric_set_from_json(to_json_text(set), "round-trip.json");
  } catch (const habitat::error& e) {
    require(false, std::string("a metric set written by habitat does not read back: ") + e.what());
  }
}

}  // namespace habitat::fuzz
