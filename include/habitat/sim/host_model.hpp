#pragma once
// How the host's time in a trace becomes the host time of an un-profiled step on (possibly) another host:
// the profiler's cost per record is removed, then the rest is scaled by the two hosts' speed.
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
};

struct HostModel {
  ProfilerCost profiler;     // removed from the recorded host time
  double speed_ratio = 1;    // destination host time / recording host time, for the same work
  double blocking_call_us = 5;  // host cost of a synchronizing call apart from its wait
  std::string recorded_on = "unknown host", runs_on = "unknown host";
  std::vector<std::string> assumptions;  // said in the output
};

}  // namespace habitat::sim
