#pragma once
// Discrete-event replay of back-to-back training steps. The host issues its calls in order, each after its
// host work; a launch enqueues GPU work, which runs on its stream in launch order, after the kernels of
// other streams it waits for; a synchronizing call holds the host until the GPU work it waits for is
// done; a full launch queue holds the host until a slot frees. The steady-state period is what a user
// measures with CUDA events around each step of a training loop.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <map>
#include <numeric>
#include <queue>
#include <string>
#include <vector>

#include "habitat/error.hpp"
#include "habitat/sim/step_program.hpp"

namespace habitat::sim {

struct SimOptions {
  int steps = 6;            // simulated back to back; the period is taken over the last ones
  int queue_depth = 1024;   // launches the driver accepts ahead of the GPU before the host blocks
};

struct CriticalShare {
  std::string label;  // operation (or "host: ..." for host time between operations)
  double us = 0;
  bool gpu = false;
};

struct Timeline {
  double period_us = 0;         // steady-state step time: what CUDA events around each step measure
  double first_step_us = 0;     // one step from an idle GPU (a loop that synchronizes every step)
  double gpu_active_us = 0;     // sum of kernel times
  double gpu_busy_us = 0;       // their union over streams, in one steady-state step
  double host_us = 0;           // host time of one step, waits excluded
  double host_stall_us = 0;     // GPU idle in one period: waiting for the host (or for nothing to do)
  double sync_wait_us = 0;      // host time spent waiting in synchronizing calls, per step
  double queue_wait_us = 0;     // host time blocked on a full launch queue, per step
  double comm_us = 0;           // communication kernels' time in one step (data parallelism)
  double comm_exposed_us = 0;   // the part of it no compute kernel overlaps
  std::vector<std::pair<double, double>> last_step;  // each kernel's start and end in the last simulated step
  HostTimes host_by_type{};
  std::vector<CriticalShare> critical_path;  // by operation, largest first
  [[nodiscard]] bool host_bound() const { return host_us >= gpu_busy_us; }
  [[nodiscard]] const char* verdict() const { return host_bound() ? "host-bound" : "GPU-bound"; }
};

namespace detail {
enum class Cause { none, host, stream, wait };
struct KernelRun {
  double start = 0, end = 0;
  Cause cause = Cause::none;
  int from = -1;  // the kernel run (stream, wait) or host item run (host) that set the start
};
struct ItemRun {
  double start = 0, end = 0;  // from the start of its host work to the host's return from the call
  int waited_on = -1;         // kernel run the host waited for (a blocking call), else -1
};
}  // namespace detail

// `duration_us` holds one time per trace kernel (predicted for the destination, or as recorded).
[[nodiscard]] inline Timeline simulate(const Trace& t, const StepProgram& p, const std::vector<double>& duration_us,
                                       const SimOptions& opt = {}) {
  const int n = static_cast<int>(t.kernels.size());
  if (static_cast<int>(duration_us.size()) != n) throw make_error(t.source, "simulate", "one duration per kernel is needed");
  const int steps = std::max(opt.steps, 3);
  const int items = static_cast<int>(p.items.size());
  std::vector<detail::KernelRun> kr(static_cast<std::size_t>(n) * steps);
  std::vector<detail::ItemRun> ir(static_cast<std::size_t>(items) * steps);
  std::map<std::int64_t, int> stream_last;  // last kernel run on each stream
  std::priority_queue<double, std::vector<double>, std::greater<>> pending;  // starts of queued kernels
  int last_run = -1;                        // latest-ending kernel run so far
  std::vector<double> step_end(steps, 0), step_host_end(steps, 0), sync_wait(steps, 0), queue_wait(steps, 0);
  double cpu = 0;
  auto end_of = [&](int r) { return r >= 0 ? kr[r].end : 0.0; };
  for (int s = 0; s < steps; ++s) {
    const int base = s * n;
    const int previous_last = last_run;  // latest-ending kernel of the steps before this one
    for (int i = 0; i < items; ++i) {
      const HostItem& item = p.items[i];
      detail::ItemRun& run = ir[s * items + i];
      run.start = cpu;
      cpu += item.work_us;
      if (!item.kernels.empty()) {
        while (!pending.empty() && pending.top() <= cpu) pending.pop();
        while (static_cast<int>(pending.size()) >= opt.queue_depth) {
          queue_wait[s] += std::max(0.0, pending.top() - cpu);
          cpu = std::max(cpu, pending.top());
          pending.pop();
        }
      }
      const double call_start = cpu;
      cpu += item.call_us;
      const double launched_at = item.gpu_lead_share < 1 ? call_start + item.gpu_lead_share * item.call_us : cpu + p.launch_latency_us;
      int own_last = -1;
      for (const int k : item.kernels) {
        const int r = base + k;
        detail::KernelRun& run_k = kr[r];
        run_k.start = launched_at;
        run_k.cause = detail::Cause::host;
        run_k.from = s * items + i;
        if (auto it = stream_last.find(t.kernels[k].stream); it != stream_last.end() && kr[it->second].end + p.queue_gap_us > run_k.start) {
          run_k.start = kr[it->second].end + p.queue_gap_us;
          run_k.cause = detail::Cause::stream;
          run_k.from = it->second;
        }
        for (const int w : p.waits_for[k]) {
          const int on = w >= 0 ? base + w : previous_last;
          if (on >= 0 && kr[on].end + p.wait_latency_us > run_k.start) {
            run_k.start = kr[on].end + p.wait_latency_us;
            run_k.cause = detail::Cause::wait;
            run_k.from = on;
          }
        }
        run_k.start += p.external_delay(k);  // a wait outside the trace, as recorded
        run_k.end = run_k.start + duration_us[k];
        stream_last[t.kernels[k].stream] = r;
        pending.push(run_k.start);
        if (run_k.end > end_of(last_run)) last_run = r;
        if (run_k.end > end_of(own_last)) own_last = r;
        step_end[s] = std::max(step_end[s], run_k.end);
      }
      if (item.blocking) {
        const int on = item.device_wide ? last_run : own_last;
        if (on >= 0 && kr[on].end > cpu) {
          sync_wait[s] += kr[on].end - cpu;
          cpu = kr[on].end;
          run.waited_on = on;
        }
      }
      run.end = cpu;
    }
    if (p.tail_waits_for_gpu && end_of(last_run) > cpu) {  // a host callback's wait (StepProgram)
      sync_wait[s] += end_of(last_run) - cpu;
      cpu = end_of(last_run);
    }
    cpu += p.tail_us;
    step_host_end[s] = cpu;
    step_end[s] = std::max(step_end[s], cpu);
  }

  if (!std::isfinite(step_end[steps - 1]))
    throw make_error(t.source, t.step_name, "the simulated step is not finite: a recorded or predicted duration is not a finite number");
  Timeline tl;
  // The period over the last two steps; the first step from an idle GPU.
  tl.period_us = (step_end[steps - 1] - step_end[steps - 3]) / 2;
  tl.first_step_us = step_end[0];
  const int last = steps - 1;
  std::vector<int> runs(n);
  for (int k = 0; k < n; ++k) {
    runs[k] = last * n + k;
    tl.gpu_active_us += duration_us[k];
  }
  tl.gpu_busy_us = std::min(tl.period_us, union_us(runs, [&](int r) { return kr[r].start; }, [&](int r) { return kr[r].end - kr[r].start; }));
  tl.host_us = p.host_us;
  tl.host_by_type = p.by_type;
  tl.host_stall_us = std::max(0.0, tl.period_us - tl.gpu_busy_us);
  tl.sync_wait_us = sync_wait[last];
  tl.queue_wait_us = queue_wait[last];
  tl.last_step.reserve(n);
  for (int k = 0; k < n; ++k) tl.last_step.emplace_back(kr[last * n + k].start, kr[last * n + k].end);
  if (!p.comm.empty()) {
    std::vector<int> comm_last, compute_last;
    for (int k = 0; k < n; ++k) (p.is_comm(k) ? comm_last : compute_last).push_back(last * n + k);
    auto st = [&](int r) { return kr[r].start; };
    auto du = [&](int r) { return kr[r].end - kr[r].start; };
    for (const int r : comm_last) tl.comm_us += du(r);
    // exposed = union(comm) - union(comm and compute overlapping) = union(all) - union(compute)
    std::vector<int> all = comm_last;
    all.insert(all.end(), compute_last.begin(), compute_last.end());
    tl.comm_exposed_us = std::max(0.0, union_us(all, st, du) - union_us(compute_last, st, du));
  }

  // Critical path of the last period: from the step's last GPU work back to the previous step's end,
  // following what set each start (its launch, its stream, a wait, or the host's return from a sync).
  std::map<std::string, CriticalShare> shares;
  auto label_of_op = [&](int op) { return op < 0 ? std::string("host: between operations") : operation_label(t, op); };
  auto add = [&](const std::string& label, double us, bool gpu) {
    auto& sh = shares[label + (gpu ? "\x01" : "\x02")];
    sh.label = label;
    sh.us += std::max(0.0, us);
    sh.gpu = gpu;
  };
  const double floor_time = step_end[steps - 2];
  int k_run = -1;
  for (int k = 0; k < n; ++k)
    if (k_run < 0 || kr[last * n + k].end > kr[k_run].end) k_run = last * n + k;
  double until = step_end[last];
  if (k_run < 0 || step_host_end[last] >= end_of(k_run)) {
    add("host: end of step", until - std::max(floor_time, n ? end_of(k_run) : floor_time), false);
    until = n ? std::max(floor_time, end_of(k_run)) : floor_time;
  }
  int item_run = -1;
  for (int guard = 0; guard < 4 * (n + items) * steps && until > floor_time; ++guard) {
    if (k_run >= 0) {
      const detail::KernelRun& r = kr[k_run];
      const int k = k_run % n;
      add(label_of_op(t.kernels[k].op), std::min(until, r.end) - std::max(floor_time, r.start), true);
      until = std::max(floor_time, std::min(until, r.start));
      if (r.cause == detail::Cause::host) {
        item_run = r.from;
        k_run = -1;
      } else {
        k_run = r.from;
      }
    } else if (item_run >= 0) {
      const detail::ItemRun& r = ir[item_run];
      const HostItem& item = p.items[item_run % items];
      const int op = item.call >= 0 ? t.calls[item.call].op : (item.kernels.empty() ? -1 : t.kernels[item.kernels.front()].op);
      if (r.waited_on >= 0) {
        k_run = r.waited_on;
        item_run = -1;
        continue;
      }
      std::string label = label_of_op(op);
      if (!label.starts_with("host:")) label.insert(0, "host: ");
      add(label, std::min(until, r.end) - std::max(floor_time, r.start), false);
      until = std::max(floor_time, std::min(until, r.start));
      item_run = item_run > 0 ? item_run - 1 : -1;
    } else {
      break;
    }
  }
  for (auto& [key, sh] : shares)
    if (sh.us > 0) tl.critical_path.push_back(sh);
  std::sort(tl.critical_path.begin(), tl.critical_path.end(), [](const auto& a, const auto& b) { return a.us > b.us; });
  return tl;
}

// The step program with its external delays (waits the trace does not explain) kept only as far as the
// recorded step needs them: scaled alike so the origin's simulated step is no longer than the step the
// host recorded, the profiler's cost removed. In a pipelined loop the neighbouring steps' work, which one
// step's trace leaves out, explains the rest.
[[nodiscard]] inline StepProgram build_program(const Trace& t, const HostModel& host) {
  StepProgram p = build_program_unfitted(t, host);
  const std::vector<double> raw = p.external_delay_us;
  const double total = std::accumulate(raw.begin(), raw.end(), 0.0);
  if (!(total > 0)) return p;
  std::vector<double> d;
  d.reserve(t.kernels.size());
  for (const auto& k : t.kernels) d.push_back(k.duration_us);
  // The step as the host recorded it: its annotation, or the loop's period where steps overlap (pipelining).
  const double recorded = t.step_period_us > 0 ? std::min(t.step_duration_us, t.step_period_us) : t.step_duration_us;
  const double target = std::max(0.0, recorded - std::max(0.0, p.recorded_host_us - p.host_us));
  auto keep = [&](double s) {
    for (std::size_t i = 0; i < raw.size(); ++i) p.external_delay_us[i] = s * raw[i];
  };
  auto period = [&](double s) {
    keep(s);
    return simulate(t, p, d).period_us;
  };
  double lo = 0, hi = 1;
  if (period(0) >= target) hi = 0;
  else if (period(1) <= target) lo = 1;
  for (int i = 0; i < 20 && hi > lo; ++i) (period(0.5 * (lo + hi)) > target ? hi : lo) = 0.5 * (lo + hi);
  keep(lo);
  const double kept_ms = lo * total / 1e3;
  const auto longest = std::max_element(raw.begin(), raw.end());
  const auto& k = t.kernels[static_cast<std::size_t>(longest - raw.begin())];
  char ms[160];
  std::snprintf(ms, sizeof ms, " (%.1f ms in all, the longest %.1f ms before '%.50s' on stream %lld)", total / 1e3, *longest / 1e3, k.name.c_str(),
                static_cast<long long>(k.stream));
  char kept[160];
  if (kept_ms > 0) std::snprintf(kept, sizeof kept, "kept on every GPU: %.1f ms of them, as the recorded step of %.1f ms needs", kept_ms, recorded / 1e3);
  else std::snprintf(kept, sizeof kept, "none kept: the step's own work fills the recorded %.1f ms", recorded / 1e3);
  p.external_note = std::to_string(std::count_if(raw.begin(), raw.end(), [](double x) { return x > 0; })) +
                    " GPU operation(s) started later than anything in the trace explains" + ms +
                    ": waits for other ranks, processes or threads the trace does not show; " + kept;
  return p;
}

}  // namespace habitat::sim
