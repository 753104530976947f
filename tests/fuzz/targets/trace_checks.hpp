#pragma once
// What a trace the Kineto reader accepted must satisfy: every time and size finite and non-negative where
// it is a duration or a size, and every launch within CUDA's limits.
#include <cmath>
#include <string>

#include "fuzz_common.hpp"
#include "habitat/detail/launch_limits.hpp"
#include "habitat/trace/trace.hpp"

namespace habitat::fuzz {

inline void check_device(const Device& d) {
  for (double v : {d.base_clock_mhz, d.boost_clock_mhz, d.memory_gib, d.bandwidth_spec_gbps, d.fp32_lanes_per_sm, d.l2_mib})
    require_finite(v, "a device property from the trace");
}

// An interval of the timeline: finite, and not ending before it starts.
inline void check_interval(double start_us, double duration_us, std::string_view what) {
  require_finite(start_us, what);
  require_finite(duration_us, what);
  require(duration_us >= 0, std::string(what) + " with a negative duration");
}

inline void check_trace(const Trace& t) {
  check_interval(t.step_start_us, t.step_duration_us, "the step");
  for (const auto& o : t.ops) check_interval(o.start_us, o.duration_us, "an op");
  for (const auto& c : t.calls) check_interval(c.start_us, c.duration_us, "a host call");
  for (const auto& k : t.kernels) {
    check_interval(k.start_us, k.duration_us, "a kernel");
    require_finite(k.bytes, "memcpy/memset bytes");
    require(k.bytes >= 0, "negative memcpy/memset bytes");
    if (auto bad = detail::launch_limit_violation(k.grid, k.block)) require(false, "kernel '" + k.name + "': " + *bad);
    require(k.registers_per_thread >= 0 && k.shared_mem_bytes >= 0, "negative registers or shared memory");
    if (k.collective) require_finite(k.collective->bytes, "collective bytes");
    if (k.collective) require(k.collective->ranks >= 1, "a collective without its ranks");
  }
  for (double m : t.marks_us) require_finite(m, "annotation mark");
  require(t.python_records >= 0 && t.python_records == std::floor(t.python_records) && t.python_records <= 1e12, "a Python record count that is no count");
  require_finite(t.gpu_active_us(), "GPU active time");
  require_finite(t.gpu_busy_us(), "GPU busy time");
  require_finite(t.iteration_us(), "iteration time");
  if (t.device_props) check_device(*t.device_props);
  if (const auto& d = t.distributed) require(!d->rank || !d->world_size || *d->rank < *d->world_size, "a rank beyond the world size");
}

}  // namespace habitat::fuzz
