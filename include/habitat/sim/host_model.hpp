#pragma once
// How the host's time in a trace becomes the host time of an un-profiled step on (possibly) another host:
// the profiler's cost per record is removed, then the rest is scaled by the two hosts' speed.
#include <algorithm>
#include <array>
#include <cmath>
#include <optional>
#include <string>
#include <string_view>
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
  // The longest stretch without a record the profiler itself was seen to take: a 0.77 ms stall before the
  // first operation of a 70 us step (fixtures/steps/h100/op_where_4k). Beyond it, a stretch is the
  // program's own work (a sleep, Python between operations), which no count of records knows.
  static constexpr double max_stall_us = 1000;
  // The most the profiler was seen to add per record (fixtures/steps/, README: "What the profiler adds": 38 us
  // with shapes, 87 us with stacks). An operation's record longer than that for each record inside it holds
  // work of its own: an allocation that takes 2 ms inside aten::empty is not the profiler's.
  static constexpr double max_record_us = 90;

  // The share of a recorded host stretch left without the profiler: its records' costs removed (never below
  // a tenth of the stretch), then the slowdown, bounded per record.
  [[nodiscard]] double kept_share(double recorded_us, double cost_us, double records) const {
    if (recorded_us <= 0) return 1.0;
    const double after = std::max(recorded_us - cost_us, 0.1 * recorded_us);
    const double slowed = std::min(after - after / slowdown, max_slowdown_us_per_record * (records + 1));
    return (after - slowed) / recorded_us;
  }
};

// What a step records, for the count below.
struct StepCounts {
  double top_ops = 0;       // outermost operation records (a Python call each)
  double nested_ops = 0;    // records inside another (dispatch below a Python call)
  double enqueues = 0, other_calls = 0;   // runtime calls that enqueue GPU work (launches, copies, fills), and the rest
  double python_records = 0;  // Python function records (with_stack): a cost of the profiled step alone
  double first_steps = 1;     // 1 where the step is the first its profiler session recorded (Trace::first_of_session), else 0
};

// A host time as a linear count of a step's records: a constant per step plus a cost per record of each kind.
struct RecordCount {
  double per_step_us = 0, per_top_op_us = 0, per_nested_op_us = 0, per_enqueue_us = 0, per_other_call_us = 0;
  // The profiled count's alone: the same step records none without stacks, so the un-profiled count has none.
  double per_python_record_us = 0;
  // The profiled count's alone: what the first active step of a profiler session records more than the next ones
  // (fixtures/steps/h200/run5, README "The first active step"); measured, held in the fit (fit_step_cost).
  double per_first_step_us = 0;
  [[nodiscard]] double at(const StepCounts& c) const;
};

// The count's terms, in one list for evaluating, scaling, fitting, reading and writing them: the host profile's
// key, the cost, the record count it multiplies (none: the constant), whether only the profiled step has it and
// whether the fit holds it at a value measured elsewhere (fit_step_cost) instead of fitting it.
struct RecordTerm {
  std::string_view key;
  double RecordCount::*cost;
  double StepCounts::*count;
  bool profiled_only;
  bool held = false;
};
inline constexpr std::array<RecordTerm, 7> record_terms{{
    {"per_step_us", &RecordCount::per_step_us, nullptr, false},
    {"per_top_op_us", &RecordCount::per_top_op_us, &StepCounts::top_ops, false},
    {"per_nested_op_us", &RecordCount::per_nested_op_us, &StepCounts::nested_ops, false},
    {"per_enqueue_us", &RecordCount::per_enqueue_us, &StepCounts::enqueues, false},
    {"per_other_call_us", &RecordCount::per_other_call_us, &StepCounts::other_calls, false},
    {"per_python_record_us", &RecordCount::per_python_record_us, &StepCounts::python_records, true},
    {"per_first_step_us", &RecordCount::per_first_step_us, &StepCounts::first_steps, true, true},
}};
[[nodiscard]] inline double records_of(const RecordTerm& term, const StepCounts& c) { return term.count ? c.*term.count : 1.0; }

inline double RecordCount::at(const StepCounts& c) const {
  double t = 0;
  for (const auto& term : record_terms) t += this->*term.cost * records_of(term, c);
  return t;
}

// The un-profiled host time of a forward-only step from what it records: two counts fitted on the same
// steps of a measured host (fixtures/steps/: 144 steps of 10 us to 100 ms, profiled and timed un-profiled;
// habitat-calibrate-host), one of the un-profiled time, one of the profiled. The un-profiled count is the
// measured host's time for such a step; the step's recorded time times the counts' ratio is this trace's
// host's (a host 30% faster records 30% shorter stretches; the profiler's step bookkeeping, about 100 us
// and most of a 20 us step's record, sits in the profiled count's constant), but one profiled sample can be
// far off (a 0.77 ms stall in a 70 us step). Their geometric mean weighs the two alike: on a second H100
// machine 30% faster than the one fitted, 21% / 33% / 15% mean error for operators under 0.1 ms / forward
// steps of 0.1-1 ms / of 1-10 ms, against 37 / 45 / 27% for the count alone and 22 / 26 / 12% for the
// ratio alone, which on the fitted machine was 39 / 32 / 31% (the mean: 20 / 23 / 23%). The simulator's
// own estimate stands within [1 - below, 1 + above] of this one and is pulled to that edge beyond it.
// Training steps are not counted: their Python work that records nothing (zero_grad, the optimizer's
// loops, backward()'s entry) left counts 20-40% short on small ones.
struct StepCost {
  RecordCount unprofiled, profiled;
  double above = 0.15, below = 0.15;
  std::string borrowed;  // said where the counts are another host's (the recording host measured none)
  // The un-profiled host time of a step that recorded `recorded_us` of host time with these counts.
  [[nodiscard]] double host_us(const StepCounts& c, double recorded_us) const {
    const double p = profiled.at(c), u = unprofiled.at(c);
    if (!(p > 0) || !(u > 0) || !(recorded_us > 0)) return 0;
    return std::sqrt(u * recorded_us * std::min(1.0, u / p));
  }
  // The counts on a host `ratio` times as slow (both counts scale: their ratio, the profiler's share, stays).
  [[nodiscard]] StepCost scaled(double ratio) const {
    StepCost s = *this;
    for (RecordCount* c : {&s.unprofiled, &s.profiled})
      for (const auto& term : record_terms) c->*term.cost *= ratio;
    return s;
  }
};

struct HostModel {
  ProfilerCost profiler;     // removed from the recorded host time
  std::optional<StepCost> step_cost;  // the recording host's bottom-up count, where measured
  double speed_ratio = 1;    // destination host time / recording host time, for the same work
  double blocking_call_us = 5;  // host cost of a synchronizing call apart from its wait
  std::string recorded_on = "unknown host", runs_on = "unknown host";
  std::vector<std::string> assumptions;  // said in the output
};

// The recording host's count of records as the destination host would run them (none where unmeasured).
[[nodiscard]] inline std::optional<StepCost> destination_step_cost(const HostModel& h) {
  return h.step_cost ? std::optional(h.step_cost->scaled(h.speed_ratio)) : std::nullopt;
}

}  // namespace habitat::sim
