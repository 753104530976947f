#pragma once
// How the host's time in a trace becomes the host time of an un-profiled step on (possibly) another host:
// the profiler's cost per record is removed, then the rest is scaled by the two hosts' speed.
#include <algorithm>
#include <string>
#include <vector>

namespace habitat::sim {

// What torch.profiler adds to the host's time on the host that recorded the trace: per operation record
// (RecordFunction with shapes) and per CUDA runtime/driver call (CUPTI callbacks and activity records).
// What is left is divided by a slowdown: with CUPTI callbacks and the profiler's bookkeeping in its caches,
// the host runs its own code slower too.
struct ProfilerCost {
  double per_op_us = 0;
  double per_call_us = 0;
  double slowdown = 1;
  // The slowdown comes from the profiler's work per record, so it takes at most this much from the stretch
  // around one record: a long stretch without records (a sleep, a wait for input, Python between steps)
  // is not the profiler's. A loose bound, far above a record's few microseconds: it changes no fixture's
  // prediction (25 us per record would: 0.1-0.9 points of iteration error), and stops a Triton trace of 3
  // operations in 8 s losing 5.2 s.
  static constexpr double max_slowdown_us_per_record = 500;

  // The share of a recorded host stretch left without the profiler: its records' costs removed (never below
  // a tenth of the stretch), then the slowdown, bounded per record.
  [[nodiscard]] double kept_share(double recorded_us, double cost_us, double records) const {
    if (recorded_us <= 0) return 1.0;
    const double after = std::max(recorded_us - cost_us, 0.1 * recorded_us);
    const double slowed = std::min(after - after / slowdown, max_slowdown_us_per_record * (records + 1));
    return (after - slowed) / recorded_us;
  }
};

struct HostModel {
  ProfilerCost profiler;     // removed from the recorded host time
  double speed_ratio = 1;    // destination host time / recording host time, for the same work
  double blocking_call_us = 5;  // host cost of a synchronizing call apart from its wait
  std::string recorded_on = "unknown host", runs_on = "unknown host";
  std::vector<std::string> assumptions;  // said in the output
};

}  // namespace habitat::sim
