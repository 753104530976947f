#pragma once
// Composing the timeline: a trace's predicted kernel times replayed with the destination's host, giving
// the iteration time a user would measure, the GPU's busy time, what bounds the step, and throughput.
#include <optional>
#include <string>
#include <vector>

#include "habitat/predict/predicted_trace.hpp"
#include "habitat/sim/host_profile.hpp"
#include "habitat/sim/simulator.hpp"

namespace habitat::sim {

// Samples per second of all the GPUs the step runs on (`batch` per GPU), and per dollar of their hours.
inline void set_throughput(PredictedTrace& p, const Device& dest, std::optional<int> batch) {
  p.throughput.reset();
  p.cost_normalized_throughput.reset();
  p.price.reset();
  if (!batch || !(p.iteration_us > 0)) return;
  const int gpus = p.data_parallel ? p.data_parallel->world_size : 1, batches = p.data_parallel ? p.data_parallel->replicas() : 1;
  p.throughput = batches * *batch / (p.iteration_us * 1e-6);
  if (dest.price && dest.price->usd_per_hour > 0) {
    p.cost_normalized_throughput = *p.throughput * 3600.0 / (gpus * dest.price->usd_per_hour);
    p.price = dest.price;
  }
}

// The predicted kernel times, in the trace's kernel order: what the simulator replays.
[[nodiscard]] inline std::vector<double> kernel_durations(const PredictedTrace& p) {
  std::vector<double> d;
  d.reserve(p.kernels.size());
  for (const auto& k : p.kernels) d.push_back(k.duration_us);
  return d;
}

inline void compose(PredictedTrace& p, const Trace& t, const StepProgram& program, const Device& dest, std::optional<int> batch = {},
                    const SimOptions& opt = {}) {
  p.timeline = simulate(t, program, kernel_durations(p), opt);
  p.iteration_us = p.timeline->period_us;
  set_throughput(p, dest, batch);
}

// The origin as a user would measure it: the trace's own kernel times, the profiler removed, its own host.
struct OriginTimeline {
  Timeline timeline;
  double profiled_step_us = 0;   // the step as recorded, profiler overhead included
  double profiler_cost_us = 0;   // what the profiler added to this step's host time
  std::string host;
  double counted_host_us = 0;    // the host time its record counts imply, where counted (a forward-only step)
  double count_scale = 1;        // what the counts made of the simulator's estimate (1: it stood)
  std::string step_kind;         // "training", "forward-only" or "" (no operations to tell)
  double queue_wait_us = 0;      // recorded launch calls held by a full launch queue (StepProgram::queue_wait_us)
  int queue_waits = 0;
};

[[nodiscard]] inline OriginTimeline origin_timeline(const Trace& t, const HostModel& own_host, const SimOptions& opt = {}) {
  const StepProgram program = build_program(t, own_host);
  std::vector<double> d;
  d.reserve(t.kernels.size());
  for (const auto& k : t.kernels) d.push_back(k.duration_us);
  OriginTimeline o{simulate(t, program, d, opt), t.iteration_us(), std::max(0.0, program.recorded_host_us - program.host_us), own_host.runs_on,
                   program.counted_host_us, program.count_scale, std::string(step_kind(t)), program.queue_wait_us, program.queue_waits};
  return o;
}

}  // namespace habitat::sim
