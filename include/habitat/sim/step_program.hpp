#pragma once
// The step as a program to replay: the host's calls in order, each preceded by the host work that led to
// it (with the profiler's cost removed and scaled to the destination host), the GPU work each call
// enqueues, and the cross-stream waits between kernels. Built once per trace and host; kernel times
// come in separately, so one program serves every destination GPU.
#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "habitat/detail/quantile.hpp"
#include "habitat/sim/host_model.hpp"
#include "habitat/trace/trace.hpp"

namespace habitat::sim {

// Lin et al.'s five kinds of host overhead.
enum class HostTime { between_ops, before_first_launch, after_last_launch, launch_call, between_launches };
inline constexpr std::array<std::string_view, 5> host_time_names{"between_ops", "before_first_launch", "after_last_launch",
                                                                "launch_call", "between_launches"};
using HostTimes = std::array<double, 5>;

struct HostItem {
  double work_us = 0;    // host time before the call
  double call_us = 0;    // the call itself (without any wait for the GPU)
  int call = -1;         // index into Trace::calls; -1 for a launch assumed where the trace has no calls
  bool blocking = false;
  bool device_wide = false;  // a synchronization waits for all GPU work; a blocking copy for its own
  double unrecorded_us = 0;  // of work_us: the program's own work in a long stretch with no record (not counted)
  double unrecorded_recorded_us = 0;  // the same as recorded
  std::vector<int> kernels;  // GPU work it enqueues, in GPU order
  // The share of the call after which its GPU work may start. A CUDA graph's launch runs the graph while it is
  // still enqueueing it (JAX's 1 ms cuGraphLaunch on an H200: its first kernel 0.1 ms in), where a kernel's launch
  // returns first: 1, the launch latency after the call.
  double gpu_lead_share = 1;
  HostTimes by_type{};
};

struct StepProgram {
  std::vector<HostItem> items;
  double tail_us = 0;             // host work after the last call, to the end of the step
  // The host waits for all GPU work before its tail: the step's last call enqueued a host callback
  // (cuLaunchHostFunc: how JAX's block_until_ready waits) and the GPU finished within the tail.
  bool tail_waits_for_gpu = false;
  double tail_unrecorded_us = 0, tail_unrecorded_recorded_us = 0;  // of it, as HostItem's unrecorded_us
  std::vector<std::vector<int>> waits_for;  // per kernel: kernels on other streams it started after (-1: the previous step)
  // Per kernel: how much later it started than anything in the trace explains (a wait for another rank, process
  // or thread), kept on every GPU as far as the recorded step needs it; empty: none. external_note says so.
  std::vector<double> external_delay_us;
  std::string external_note;
  [[nodiscard]] double external_delay(int k) const { return k < static_cast<int>(external_delay_us.size()) ? external_delay_us[k] : 0.0; }
  double launch_latency_us = 0;   // from a launch call's return to its kernel's start on an idle stream
  double queue_gap_us = 0;        // between back-to-back kernels of one stream
  double wait_latency_us = 0;     // from a kernel's end to the start of one on another stream that waited for it
  double recorded_host_us = 0;    // the step's host time as recorded (profiled)
  double queue_wait_us = 0;       // recorded: launch calls held by a full launch queue, beyond a launch's own cost
  int queue_waits = 0;            // how many calls
  double host_us = 0;             // un-profiled, on the destination host, waits excluded
  double counted_host_us = 0;     // the host time the step's record counts imply (StepCost; 0: not counted)
  double record_work_us = 0;      // recorded: outermost records' time beyond what the profiler adds per record inside
  double count_scale = 1;         // what that made of the trace's host time (1: within its band)
  HostTimes by_type{};
  std::vector<std::string> assumptions;
  std::vector<char> comm;  // per kernel: a communication kernel (data parallelism); empty: none is
  [[nodiscard]] bool is_comm(int k) const { return k < static_cast<int>(comm.size()) && comm[k]; }
};

namespace detail {

// Splits the host time between the previous call (in top-level op `before`) and the next (in `after`)
// into Lin et al.'s kinds: inside one op it is between launches; across ops, the tail of the first op
// after its last launch, the head of the next before its first launch, and what lies between.
inline void classify_gap(const Trace& t, int before, int after, double from, double to, double scale, HostTimes& out) {
  const double gap = std::max(0.0, to - from);
  if (before >= 0 && before == after) {
    out[static_cast<int>(HostTime::between_launches)] += gap * scale;
    return;
  }
  double tail = 0, head = 0;
  if (before >= 0) tail = std::clamp(t.ops[before].start_us + t.ops[before].duration_us - from, 0.0, gap);
  if (after >= 0) head = std::clamp(to - t.ops[after].start_us, 0.0, gap - tail);
  out[static_cast<int>(HostTime::after_last_launch)] += tail * scale;
  out[static_cast<int>(HostTime::before_first_launch)] += head * scale;
  out[static_cast<int>(HostTime::between_ops)] += (gap - tail - head) * scale;
}

// Cross-stream order the trace shows: a kernel that started later than its launch and its own stream
// allowed waited for something; the kernel of another stream that ended just before is taken as the cause
// (an event record -> stream wait pair; Kineto does not say which).
// A delayed kernel that no kernel of the step explains waited for the previous step's work (in a loop
// without syncs the GPU is still busy with it when the step's launches come): marked with -1.
// A kernel that started more than external_wait_us later than its launch, its stream and the kernel it waited
// for allow waited for something the trace does not show; that delay goes to `external` (sized n).
inline constexpr double external_wait_us = 1000;
[[nodiscard]] inline std::vector<std::vector<int>> infer_waits(const Trace& t, double latency, double gap, std::vector<double>& external) {
  constexpr double tolerance_us = 3;
  const int n = static_cast<int>(t.kernels.size());
  std::vector<std::vector<int>> waits(n);
  std::vector<int> by_end(n);
  for (int i = 0; i < n; ++i) by_end[i] = i;
  auto end = [&](int i) { return t.kernels[i].start_us + t.kernels[i].duration_us; };
  std::sort(by_end.begin(), by_end.end(), [&](int a, int b) { return end(a) < end(b); });
  std::map<std::int64_t, double> stream_end;
  for (int i = 0; i < n; ++i) {
    const Kernel& k = t.kernels[i];
    double ready = k.call >= 0 ? t.calls[k.call].start_us + t.calls[k.call].duration_us + latency : k.start_us;
    if (auto it = stream_end.find(k.stream); it != stream_end.end()) ready = std::max(ready, it->second + gap);
    stream_end[k.stream] = std::max(stream_end[k.stream], end(i));
    if (k.start_us - ready <= tolerance_us) continue;
    // latest-ending kernel of another stream that ended at or just before this start
    auto it = std::upper_bound(by_end.begin(), by_end.end(), k.start_us + 0.5, [&](double x, int j) { return x < end(j); });
    // it must have ended after this kernel was otherwise ready, or it did not hold it back
    for (int look = 0; it != by_end.begin() && look < 16; ++look) {
      --it;
      if (end(*it) < ready - tolerance_us) break;
      if (t.kernels[*it].stream != k.stream && *it != i) {
        waits[i].push_back(*it);
        break;
      }
    }
    if (waits[i].empty() && k.start_us < t.kernels.front().start_us + 0.5 * (end(by_end.back()) - t.kernels.front().start_us))
      waits[i].push_back(-1);
    else if (const double explained = waits[i].empty() ? ready : std::max(ready, end(waits[i].front())); k.start_us - explained > external_wait_us)
      external[i] = k.start_us - explained;
  }
  // Orders the host asked for, seen or not in the timing (a slow host hides them): an event recorded
  // after a launch onto one stream, then waited on before a launch onto another.
  std::vector<std::vector<int>> of_call(t.calls.size());
  for (int i = 0; i < n; ++i)
    if (t.kernels[i].call >= 0) of_call[t.kernels[i].call].push_back(i);
  std::map<std::int64_t, int> last_kernel, recorded, awaited;  // per thread
  for (std::size_t c = 0; c < t.calls.size(); ++c) {
    const HostCall& call = t.calls[c];
    if (!of_call[c].empty()) {
      const int first = of_call[c].front();
      if (auto it = awaited.find(call.thread); it != awaited.end()) {
        // kept only where the recording agrees (the kernel did start after the one it waits for ended)
        if (it->second >= 0 && t.kernels[it->second].stream != t.kernels[first].stream &&
            t.kernels[first].start_us >= end(it->second) - tolerance_us &&
            std::find(waits[first].begin(), waits[first].end(), it->second) == waits[first].end())
          waits[first].push_back(it->second);
        awaited.erase(it);
      }
      last_kernel[call.thread] = of_call[c].back();
    } else if (call.name.find("EventRecord") != std::string::npos) {
      auto it = last_kernel.find(call.thread);
      recorded[call.thread] = it == last_kernel.end() ? -1 : it->second;
    } else if (call.name.find("StreamWaitEvent") != std::string::npos) {
      auto it = recorded.find(call.thread);
      if (it != recorded.end()) awaited[call.thread] = it->second;
    }
  }
  return waits;
}

}  // namespace detail

// What the step records, for the host's bottom-up count (StepCost): operations outermost and nested, and
// runtime calls that enqueue GPU work and the rest.
inline void count_record(StepCounts& c, const Operation& op) { (op.parent < 0 ? c.top_ops : c.nested_ops) += 1; }
inline void count_record(StepCounts& c, const HostCall& call) { (call.enqueues() ? c.enqueues : c.other_calls) += 1; }
[[nodiscard]] inline StepCounts step_counts(const Trace& t) {
  StepCounts c;
  for (const auto& op : t.ops) count_record(c, op);
  for (const auto& call : t.calls) count_record(c, call);
  c.python_records = t.python_records;
  c.first_steps = t.first_of_session ? 1 : 0;
  return c;
}

// What the step does, as its operations show: "training" (a backward operation), "forward-only"
// (inference, no_grad, inference_mode), or "" where the trace has no operations to tell.
[[nodiscard]] inline std::string_view step_kind(const Trace& t) {
  if (t.ops.empty()) return {};
  return std::any_of(t.ops.begin(), t.ops.end(), [](const Operation& op) { return op.backward; }) ? "training" : "forward-only";
}

// A step the host's count applies to: forward only, with operations and runtime calls (the injected
// tracker's kernels alone have no records to count).
[[nodiscard]] inline bool counted_step(const Trace& t) { return !t.calls.empty() && step_kind(t) == "forward-only"; }

namespace detail {

// Pulls the program's host time into the band around the counts' estimate (StepCost), scaling every
// stretch alike but those without a record (a sleep, input loading: time no count knows of, kept as
// recorded).
inline void apply_count(StepProgram& p, const StepCost& cost, const StepCounts& counts, double speed_ratio) {
  double kept = p.tail_unrecorded_us, kept_recorded = p.tail_unrecorded_recorded_us;  // host time in stretches without records
  for (const auto& item : p.items) kept += item.unrecorded_us, kept_recorded += item.unrecorded_recorded_us;
  const double counted = cost.host_us(counts, p.recorded_host_us - kept_recorded) * speed_ratio;
  const double own = p.host_us - kept;
  if (!(counted > 0) || !(own > 0)) return;
  p.counted_host_us = counted;
  double f = std::clamp(own, (1 - cost.below) * counted, (1 + cost.above) * counted) / own;
  // Never below the work inside records that the profiler cannot explain (record_work_us).
  if (f < 1) f = std::max(f, std::min(1.0, p.record_work_us * speed_ratio / own));
  if (f == 1) return;
  p.count_scale = f;
  for (auto& item : p.items) {
    const double before = item.work_us + item.call_us;
    item.work_us = item.unrecorded_us + f * (item.work_us - item.unrecorded_us);
    item.call_us *= f;
    for (double& x : item.by_type) x *= before > 0 ? (item.work_us + item.call_us) / before : 1;
  }
  p.tail_us = p.tail_unrecorded_us + f * (p.tail_us - p.tail_unrecorded_us);
  const double after = kept + f * own;
  for (double& x : p.by_type) x *= after / p.host_us;  // Lin et al.'s kinds still add up to the host time
  p.host_us = after;
}

}  // namespace detail

// A launch call held by a full launch queue: over held_launch_factor x the step's lower-quartile launch and over
// held_launch_floor_us (build_program_unfitted).
inline constexpr double held_launch_factor = 10, held_launch_floor_us = 100;

// What habitat's CUPTI tracker costs the host that recorded a trace, in the terms of the profiler's cost (ProfilerCost).
// Measured on the H200 testbed in one process per workload, steps tracked and untracked interleaved
// (fixtures/track/interleave, fixtures/record/tracker_interleave.py): the tracker alone adds nothing measurable (per
// launch -1.9 to +4.1 us over the six workloads, each within its noise), so nothing is removed; with emit_nvtx's
// operator ranges (PyTorch formatting each range's shapes, CUPTI recording it) 6.0-7.7 us a range on the five
// host-bound workloads, their median removed per recorded range (the few ranges that are not operators, such as a
// library's own NVTX annotations, are charged too). Taken for every host, which the output says.
inline constexpr double tracker_cost_per_range_us = 6.6;

// What the host model takes of a trace's recorder, in words for the output; empty for the profiler (whose cost the
// host model removes and says so itself).
[[nodiscard]] inline std::string recorder_assumption(const Trace& t) {
  if (t.recorder != Recorder::cupti_tracker) return {};
  if (t.ops.empty()) return "recorded by habitat's CUPTI tracker: its host time is taken as untracked (its cost was not measurable)";
  char b[32];
  std::snprintf(b, sizeof b, "%.1f us", tracker_cost_per_range_us);
  return std::string("recorded by habitat's CUPTI tracker with emit_nvtx's operator ranges: emit_nvtx's cost removed from the host's time at ") +
         b + " a range, as measured on the H200 testbed's host (taken for every host)";
}

// What the host model makes of a with_stack trace's Python function records, in words for the output; empty
// without them. A counted step charges each in its profiled count; other steps leave them to the profiler's slowdown.
[[nodiscard]] inline std::string python_records_assumption(const Trace& t, const HostModel& host) {
  if (!(t.python_records > 0)) return {};
  char b[96];
  std::snprintf(b, sizeof b, "the step's %.0f Python function records (with_stack)", t.python_records);
  if (host.step_cost && host.step_cost->profiled.per_python_record_us > 0 && counted_step(t)) {
    char c[32];
    std::snprintf(c, sizeof c, "%.1f us", host.step_cost->profiled.per_python_record_us);
    return std::string(b) + " are the profiler's cost: " + c + " each on the recording host, as its profiled step count has it";
  }
  return std::string(b) + " are left to the profiler's slowdown, which was fitted on steps without stacks: record without with_stack "
                          "for the best host time";
}

// What the host model makes of a counted step that follows another recorded step of its profiler session (several
// active steps), in words for the output; empty otherwise. The counts were fitted on sessions' first active steps.
[[nodiscard]] inline std::string later_step_assumption(const Trace& t, const HostModel& host) {
  if (t.first_of_session || !counted_step(t) || !host.step_cost || !(host.step_cost->profiled.per_first_step_us > 0)) return {};
  char b[64];
  std::snprintf(b, sizeof b, "%.0f us", host.step_cost->profiled.per_first_step_us);
  return t.step_name + " follows another recorded step of its profiler session, so its profiled count leaves out what the session's "
                       "first active step records more (" + b + " on the recording host)";
}

// The program before its external delays are fitted (sim::build_program, simulator.hpp, fits them).
[[nodiscard]] inline StepProgram build_program_unfitted(const Trace& t, const HostModel& host_model) {
  // A trace no profiler recorded has no profiler cost to remove (trace/recorder.hpp).
  HostModel host = host_model;
  if (t.recorder == Recorder::cupti_tracker) {
    host.profiler = ProfilerCost{t.ops.empty() ? 0.0 : tracker_cost_per_range_us, 0.0, 1.0};
    host.assumptions.push_back(recorder_assumption(t));
  }
  StepProgram p;
  p.assumptions = host.assumptions;
  const int n = static_cast<int>(t.kernels.size());

  // GPU-side constants, measured on the trace itself.
  std::vector<double> latencies, gaps;
  {
    std::map<std::int64_t, double> stream_end;
    for (const auto& k : t.kernels) {
      auto it = stream_end.find(k.stream);
      const double prev = it == stream_end.end() ? -1e300 : it->second;
      if (k.call >= 0 && t.calls[k.call].kind == HostCallKind::launch) {
        const double ret = t.calls[k.call].start_us + t.calls[k.call].duration_us;
        if (it != stream_end.end() && prev < ret - 5) latencies.push_back(std::max(0.0, k.start_us - ret));
        else if (prev > ret + 5) gaps.push_back(std::max(0.0, k.start_us - prev));
      }
      stream_end[k.stream] = std::max(prev, k.start_us + k.duration_us);
    }
  }
  // The lower quartile: launches onto an idle stream that still waited for another stream are not latency.
  p.launch_latency_us = std::clamp(habitat::detail::quantile(latencies, 0.25, 3.0), 0.0, 20.0);
  p.queue_gap_us = std::clamp(habitat::detail::median(gaps, 1.0), 0.0, 5.0);
  p.external_delay_us.assign(n, 0.0);
  p.waits_for = t.calls.empty() ? std::vector<std::vector<int>>(n) : detail::infer_waits(t, p.launch_latency_us, p.queue_gap_us, p.external_delay_us);
  {
    std::vector<double> after_wait;  // from the awaited kernel's end to the start: an event wait's own latency
    for (int i = 0; i < n; ++i)
      for (const int w : p.waits_for[i])
        if (w >= 0) after_wait.push_back(std::max(0.0, t.kernels[i].start_us - t.kernels[w].start_us - t.kernels[w].duration_us));
    p.wait_latency_us = std::clamp(habitat::detail::median(after_wait, p.queue_gap_us), 0.0, 10.0);
  }

  // Records whose profiler cost lands in each stretch of host time: op and annotation starts.
  std::vector<double> records;
  records.reserve(t.ops.size() + t.marks_us.size());
  for (const auto& op : t.ops) records.push_back(op.start_us);
  records.insert(records.end(), t.marks_us.begin(), t.marks_us.end());
  std::sort(records.begin(), records.end());
  auto records_in = [&](double from, double to) {
    return static_cast<double>(std::upper_bound(records.begin(), records.end(), to) - std::lower_bound(records.begin(), records.end(), from));
  };
  // The stretch of [from, to] before its first record, beyond what the profiler's own stalls take: the
  // program's work (StepCost leaves it as recorded).
  auto unrecorded_in = [&](double from, double to) {
    const auto first = std::lower_bound(records.begin(), records.end(), from);
    const double lead = first != records.end() && *first <= to ? *first - from : to - from;
    return std::max(0.0, lead - ProfilerCost::max_stall_us);
  };

  // A launch the driver cannot queue (about a thousand launches ahead of the GPU) holds the host until a slot
  // frees: in a GPU-bound step of many kernels, launch calls of hundreds of microseconds to milliseconds, where
  // every other trace's take 3-60 us (the fixtures' 99th percentile: 17-34 us). That wait is the GPU's time, not
  // host work (the simulator queues launches itself). A call 10 times the step's lower-quartile launch and over
  // 100 us is taken as held, and costs the median of the other launches, where work launched before it had yet to
  // start when it began (a queue is full only of work the GPU has yet to run: a first launch that loads its code
  // while the GPU idles, 6.5 ms in a public ROCm trace, is the host's). Work launched in an earlier step is not in
  // the trace: a call before the step has launched anything is taken as behind it.
  double held_above_us = std::numeric_limits<double>::infinity(), launch_own_us = 0;
  std::optional<double> launched_start_us;  // latest start of a kernel launched so far
  {
    std::vector<double> d;
    for (const auto& c : t.calls)
      if (c.enqueues()) d.push_back(c.duration_us);
    if (!d.empty()) {
      held_above_us = std::max(held_launch_floor_us, held_launch_factor * habitat::detail::quantile(d, 0.25, 0.0));
      std::erase_if(d, [&](double x) { return x > held_above_us; });
      launch_own_us = habitat::detail::median(d, 0.0);
    }
  }
  const double lo = t.step_start_us, hi = t.step_start_us + t.step_duration_us;
  double cursor = lo;
  int before_op = -1;
  auto add_item = [&](HostItem item, double start, double dur, int op, bool costs_a_call) {
    const double gap = std::max(0.0, start - cursor);
    const double own = std::max(0.0, start + dur - std::max(start, cursor));
    const bool pending = !launched_start_us || *launched_start_us > start;
    const bool held = costs_a_call && !item.blocking && own > held_above_us && pending;
    if (held) item.gpu_lead_share = 1;  // its recorded length is the queue's, not the call's: no lead to scale
    for (const int k : item.kernels) launched_start_us = std::max(launched_start_us.value_or(t.kernels[k].start_us), t.kernels[k].start_us);
    const double busy = item.blocking ? std::min(own, host.blocking_call_us) : held ? launch_own_us : own;
    if (held) p.queue_wait_us += own - busy, ++p.queue_waits;
    const double recorded = gap + busy;
    const double n_records = records_in(cursor, start);
    const double cost = host.profiler.per_op_us * n_records + (costs_a_call ? host.profiler.per_call_us : 0.0);
    // A call's own time beyond the most the profiler adds to a record is the call's work (a driver loading a
    // module, 6.5 ms in a public ROCm trace): the profiler's cost and slowdown act on the rest, which keeps
    // the slowdown's bound from taking up to 1 ms out of such a call.
    const double own_work = costs_a_call ? std::max(0.0, busy - ProfilerCost::max_record_us) : 0.0;
    const double slowed = recorded - own_work;
    const double kept = recorded > 0 ? (host.profiler.kept_share(slowed, cost, n_records + (costs_a_call ? 1 : 0)) * slowed + own_work) / recorded : 1.0;
    const double scale = kept * host.speed_ratio;
    const int top = top_level_op(t, op);
    detail::classify_gap(t, before_op, top, cursor, start, scale, item.by_type);
    item.work_us = gap * scale;
    item.call_us = busy * scale;
    item.unrecorded_recorded_us = unrecorded_in(cursor, start);
    item.unrecorded_us = item.unrecorded_recorded_us * scale;
    item.by_type[static_cast<int>(HostTime::launch_call)] += item.call_us;
    p.recorded_host_us += recorded;
    cursor = std::max(cursor, start + dur);
    before_op = top;
    p.items.push_back(std::move(item));
  };

  if (!t.calls.empty()) {
    std::vector<std::vector<int>> launched(t.calls.size());
    for (int i = 0; i < n; ++i)
      if (t.kernels[i].call >= 0) launched[t.kernels[i].call].push_back(i);
    for (int c = 0; c < static_cast<int>(t.calls.size()); ++c) {
      const HostCall& call = t.calls[c];
      HostItem item;
      item.call = c;
      item.blocking = call.blocking;
      item.device_wide = call.kind == HostCallKind::sync;
      item.kernels = std::move(launched[c]);
      if (call.kind == HostCallKind::graph_launch && !item.kernels.empty() && call.duration_us > 0) {
        double first = t.kernels[item.kernels.front()].start_us;
        for (const int k : item.kernels) first = std::min(first, t.kernels[k].start_us);
        item.gpu_lead_share = std::clamp((first - call.start_us) / call.duration_us, 0.0, 1.0);
      }
      // CUPTI's cost lands on calls that enqueue GPU work (each gets an activity record); queries and error
      // checks pass through a callback only and are left as recorded.
      add_item(std::move(item), call.start_us, call.duration_us, call.op, call.enqueues());
    }
  } else {
    // No runtime events: each kernel is launched where the GPU started it, less the usual latency.
    for (int i = 0; i < n; ++i) {
      HostItem item;
      item.kernels = {i};
      add_item(std::move(item), std::max(lo, t.kernels[i].start_us - p.launch_latency_us), 0.0, t.kernels[i].op, false);
    }
  }
  // The rest of the step on the host. Where the step's last call enqueued a host callback and its GPU work ended
  // inside the rest, the host was waiting for that callback until then (JAX waits so, with no synchronizing call):
  // only the time after the GPU's end is the host's.
  {
    const auto last_call = std::max_element(t.calls.begin(), t.calls.end(),
                                            [](const HostCall& a, const HostCall& b) { return a.start_us < b.start_us; });
    double gpu_end = lo;
    for (const Kernel& k : t.kernels) gpu_end = std::max(gpu_end, k.start_us + k.duration_us);
    // Not NCCL's own host functions (its proxy work for collectives that leave the node), and only where the host
    // recorded nothing while the GPU finished. The flag does not depend on whether the origin's GPU finished
    // before the callback was enqueued: a slower GPU would be waited for all the same.
    const auto in_collective = [&](int op) {
      if (op < 0) return false;
      const std::string& name = t.ops[static_cast<std::size_t>(top_level_op(t, op))].name;
      return name.starts_with("nccl:") || name.find("c10d") != std::string::npos || name.find("record_param_comms") != std::string::npos;
    };
    if (last_call != t.calls.end() && last_call->name.find("LaunchHostFunc") != std::string::npos && !in_collective(last_call->op) &&
        gpu_end <= hi && records_in(cursor, std::max(cursor, gpu_end)) == 0) {
      p.tail_waits_for_gpu = true;
      cursor = std::max(cursor, gpu_end);  // the wait is no host time, recorded or not (as a blocking call's)
    }
    const double gap = std::max(0.0, hi - cursor);
    const double records = records_in(cursor, hi);
    const double kept = host.profiler.kept_share(gap, host.profiler.per_op_us * records, records);
    p.tail_us = gap * kept * host.speed_ratio;
    p.tail_unrecorded_recorded_us = unrecorded_in(cursor, std::max(cursor, hi));
    p.tail_unrecorded_us = p.tail_unrecorded_recorded_us * kept * host.speed_ratio;
    detail::classify_gap(t, before_op, -1, cursor, hi, kept * host.speed_ratio, p.by_type);
    p.recorded_host_us += gap;
  }
  for (const auto& item : p.items)
    for (int k = 0; k < 5; ++k) p.by_type[k] += item.by_type[k];
  p.host_us = p.tail_us;
  for (const auto& item : p.items) p.host_us += item.work_us + item.call_us;
  if (host.step_cost && counted_step(t)) {
    // Each outermost record's time beyond the most the profiler adds for it and the records inside it.
    std::vector<double> inside(t.ops.size(), 1.0);
    for (std::size_t i = 0; i < t.ops.size(); ++i)
      if (t.ops[i].parent >= 0) inside[static_cast<std::size_t>(top_level_op(t, static_cast<int>(i)))] += 1;
    for (const auto& call : t.calls)
      if (call.op >= 0) inside[static_cast<std::size_t>(top_level_op(t, call.op))] += 1;
    for (std::size_t i = 0; i < t.ops.size(); ++i)
      if (t.ops[i].parent < 0) p.record_work_us += std::max(0.0, t.ops[i].duration_us - ProfilerCost::max_record_us * inside[i]);
    detail::apply_count(p, *host.step_cost, step_counts(t), host.speed_ratio);
  }
  return p;
}

}  // namespace habitat::sim
