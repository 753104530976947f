#pragma once
// Kineto (torch.profiler) trace -> habitat::Trace for one iteration.
//
// The iteration is a `ProfilerStep#N` annotation. Its GPU work is every kernel, memcpy and memset whose
// launch (a cuda_runtime / cuda_driver event, joined by `correlation`) lies inside the step's CPU window,
// even when the GPU runs it after the window closes. Each launch is linked to the innermost cpu_op that
// encloses it on the launching thread; backward ops are linked to forward ops by sequence number.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <boost/json/value.hpp>

#include <map>
#include <optional>
#include <string>
#include <tuple>
#include <unordered_map>
#include <vector>

#include "habitat/comm/allreduce.hpp"
#include "habitat/detail/launch_limits.hpp"
#include "habitat/detail/number_text.hpp"
#include "habitat/detail/quantile.hpp"
#include "habitat/error.hpp"
#include "habitat/kineto/event_stream.hpp"
#include "habitat/kineto/raw_event.hpp"
#include "habitat/ops/dtype.hpp"
#include "habitat/ops/op_args.hpp"
#include "habitat/trace/trace.hpp"

namespace habitat::kineto {

struct ReadOptions {
  std::optional<long> step;  // ProfilerStep number; default: the last step that launched GPU work
  Progress progress;         // called as the file is read (bytes of the file so far)
  // A trace with neither ProfilerStep#N nor optimizer steps: read all of it as one step (else an error says
  // how to choose); its iteration then spans the whole recording, idle time included.
  bool whole_trace = false;
  // A trace without PyTorch 1.10+'s ProfilerStep#N annotations: take PyTorch 1.9's ProfilerStep operators, or
  // the iterations between optimizer steps, as its steps (else an error says what the trace has and how to
  // choose). Neither format was validated: their step boundaries are the profiler's of another time, or a guess.
  bool infer_steps = false;
  // An annotation or operator the user wrote around each iteration (their own `record_function`, an NVTX-style
  // range the profiler kept): every event of this exact name is a step, numbered 1, 2, ... in file order, and
  // ProfilerStep#N is then ignored. Empty: ProfilerStep#N.
  std::string step_marker;
};

namespace detail {

namespace json = boost::json;

// Kineto renamed categories and keys over the years; accept both spellings.
enum class Category { cpu_op, annotation, launch, kernel, memcpy, memset, python, other };

inline Category category_of(std::string_view cat) {
  if (is(cat, "cpu_op") || is(cat, "Operator")) return Category::cpu_op;
  if (is(cat, "user_annotation") || is(cat, "User annotation")) return Category::annotation;
  if (is(cat, "cuda_runtime") || is(cat, "Runtime") || is(cat, "cuda_driver") || is(cat, "Driver")) return Category::launch;
  if (is(cat, "kernel") || is(cat, "Kernel")) return Category::kernel;
  if (is(cat, "gpu_memcpy") || is(cat, "Memcpy")) return Category::memcpy;
  if (is(cat, "gpu_memset") || is(cat, "Memset")) return Category::memset;
  if (is(cat, "python_function") || is(cat, "Python function")) return Category::python;
  return Category::other;
}

struct RawStep {
  long number;
  double start, dur;
  std::string name;  // Optimizer.step#'s optimizer ("AdamW.step"), at most 64 characters; empty for steps
};

// Which events are kept while the file streams by: those that may belong to the step that will be read.
// With a step number, that is every event not inside another step's window (windows arrive as their
// annotations do, often after the events they hold). Without one, it is the step that starts last so far:
// an event before its start can belong to no later step, so it is dropped. Memory is then about one step
// whatever the trace's length. A kernel is kept from its step's start on (a kernel starts after its
// launch; `clock_slack_us` allows for CPU and GPU clocks that disagree slightly).
class Retention {
 public:
  static constexpr double clock_slack_us = 1000;

  explicit Retention(std::optional<long> step) : wanted_(step) {}

  void add_step(const RawStep& s) {
    windows_.emplace(s.start, s);
    if (wanted_ ? s.number == *wanted_ : (!target_ || s.start > target_->start)) target_ = s;
  }
  [[nodiscard]] const std::optional<RawStep>& target() const { return target_; }

  // A CPU-side event (op, call, annotation) starting at ts.
  [[nodiscard]] bool keep(double ts) const {
    if (target_ && ts >= target_->start && ts <= target_->start + target_->dur) return true;
    if (!wanted_) return !target_ || ts > target_->start;
    auto it = windows_.upper_bound(ts);
    return it == windows_.begin() || std::prev(it)->second.start + std::prev(it)->second.dur < ts;
  }
  [[nodiscard]] bool keep_gpu(double start) const { return !target_ || start >= target_->start - clock_slack_us; }

 private:
  std::optional<long> wanted_;
  std::optional<RawStep> target_;
  std::multimap<double, RawStep> windows_;
};

// An AMD GPU: a wavefront of 64 threads (NVIDIA's warp is 32), or its product name where the trace gives no warp size.
// ROCm may leave the name empty.
[[nodiscard]] inline bool amd_gpu(std::string_view name, double warp_size) {
  return warp_size == 64 || name.find("AMD") != std::string_view::npos || name.find("Instinct") != std::string_view::npos ||
         name.find("Radeon") != std::string_view::npos;
}

// Events of categories nothing here reads, counted by category: the first few names are kept (a trace has a
// handful; a corrupt one could have a new name per event).
struct CategoryTally {
  static constexpr std::size_t max_names = 6, max_name_length = 40;
  std::size_t events = 0;
  std::vector<std::pair<std::string, std::size_t>> names;  // in the order first seen

  void add(std::string_view cat) {
    ++events;
    cat = cat.substr(0, max_name_length);
    for (auto& [name, n] : names)
      if (name == cat) return void(++n);
    if (names.size() < max_names) names.emplace_back(cat, 1);
  }
  // "'aiu', 'privateuse1'" (and "and others" where names were not kept); `device_only`: without the host-side
  // calls of other accelerators' runtimes (Kineto names them "<device>_runtime" and "<device>_driver").
  [[nodiscard]] std::string list(bool device_only = false) const {
    std::string out;
    std::size_t listed = 0;
    for (const auto& [name, n] : names) {
      if (device_only && (name.ends_with("_runtime") || name.ends_with("_driver"))) continue;
      out += (out.empty() ? "'" : ", '") + name + "'";
      listed += n;
    }
    if (!out.empty() && names.size() == max_names && listed < events) out += " and others";
    return out;
  }
};

// ProcessGroupNCCL's "nccl:<collective>" annotation around the launch of an NCCL kernel (PyTorch before 2.1, whose
// kernels carry no collective): which collective, its message (its "Input Dims" and "Input type") and, where
// given, its group size.
struct CollectiveMark {
  std::int64_t thread;
  double start, end;
  Collective collective;  // ranks 0 where the annotation gives no group size
  std::string annotation;  // as written, at most 64 characters
};

struct Collector {
  std::string path;
  Retention retention;
  std::vector<RawStep> steps;
  std::vector<RawStep> optimizer_steps;  // Optimizer.step# annotations, numbered in file order
  long legacy_steps = 0;                  // ProfilerStep#N written as 'Operator' events (PyTorch 1.9 and older)
  // Every launch's (correlation, start) and every GPU event's (correlation, start, duration) in the file: which
  // steps launched GPU work, and how much, to tell a typical step from an outlier (16 and 24 bytes an event).
  struct GpuSpan {
    std::int64_t correlation;
    double start, dur;
  };
  std::vector<std::pair<std::int64_t, double>> launch_by_corr;
  std::vector<GpuSpan> gpu_spans;
  std::vector<HostCall> calls;    // kept runtime and driver calls
  std::vector<double> marks;      // kept user annotations other than steps
  std::vector<double> python_starts;  // kept Python function records (with_stack)
  std::vector<Kernel> gpu;
  std::vector<Operation> ops;
  std::vector<json::object> device_props;
  bool amd_props = false;  // an entry of device_props is an AMD GPU's
  std::optional<DistributedInfo> distributed;
  bool by_tracker = false;  // the trace names habitat's CUPTI tracker as its recorder
  static constexpr double max_ranks = 1 << 20;  // of a job, or of a collective's group: beyond any that has run
  std::size_t events = 0;
  static constexpr std::size_t compact_at = 1 << 14;  // events kept before the first compaction
  static constexpr double max_duration_us = 1e10, max_timestamp_us = 1e17;
  std::size_t kept_after_compaction = 0;
  CategoryTally foreign;  // complete events of categories nothing here reads
  std::vector<CollectiveMark> collective_marks;  // kept as the events are

  // Links by 'External id' (the CPU operation an event belongs to) for GPU events written without a 'correlation'
  // (TraceLens' and other tools' exporters): resolved once the file is read, as a kernel may come before its launch.
  // What is kept for it is a few numbers per launch, GPU event and operation of the file, as for the steps' GPU time.
  // Correlations made up here lie above any read from a file (those are within +-2^62).
  static constexpr std::int64_t made_up_correlations = (std::int64_t{1} << 62) + 1;
  std::int64_t next_made_up = made_up_correlations;
  enum class Enqueued : unsigned char { kernel, memcpy, memset };  // what a launch or GPU event is, to pair like with like
  struct ExternalLaunch {
    std::int64_t external_id;
    double start;
    std::int64_t correlation;  // its own, or one made up where it has none
    Enqueued what;
  };
  struct ExternalGpu {
    std::int64_t external_id;
    double start;
    std::int64_t correlation;  // made up, until the link replaces it by its launch's
    std::size_t event;         // its place in the file, for the error where nothing links it
    Enqueued what;
  };
  struct ExternalOp {
    std::int64_t external_id;
    double start;
    std::int64_t thread;
  };
  std::vector<ExternalLaunch> external_launches;
  std::vector<ExternalGpu> external_gpu;
  std::vector<ExternalOp> external_ops;

  std::string marker;                           // ReadOptions::step_marker
  std::string inferred_from;                    // where synthesized steps came from, for their name
  std::map<std::string, long, std::less<>> annotation_names;  // the first names of user annotations, to suggest a marker
  static constexpr std::size_t annotation_names_max = 256;

  Collector(std::string p, std::optional<long> step, std::string step_marker = {})
      : path(std::move(p)), retention(step), marker(std::move(step_marker)) {}

  // Categories Kineto writes that habitat does not need (GPU-side step markers, sync events, flow arrows).
  static bool known_elsewhere(std::string_view cat) {
    return is(cat, "gpu_user_annotation") || is(cat, "Trace") || is(cat, "cuda_profiler_range") || is(cat, "overhead") ||
           is(cat, "cuda_sync") || is(cat, "ac2g") || is(cat, "fwdbwd");
  }

  // Whether the trace's GPU is AMD's, decided as each device entry arrives (not per kernel, on the hot path).
  void device_properties(const json::object& o) {
    const auto* w = o.if_contains("warpSize");
    const auto* n = o.if_contains("name");
    amd_props |= amd_gpu(n && n->is_string() ? std::string_view(n->get_string()) : std::string_view{},
                         w && w->is_number() ? w->to_number<double>() : 0);
    device_props.push_back(o);
  }

  // "distributedInfo", checked as every number of the trace is: its world size stands in for the group size of the
  // collectives that record none, so a wrong one would silently change their prediction.
  void distributed_info(const RawDistributed& d) {
    auto bad = [&](const std::string& problem) { return make_error(path, "distributedInfo", problem); };
    auto shown = [](const Scalar& v) {
      if (const auto x = as_number(v); x && !v.is_string()) return habitat::detail::number_text(*x);
      return v.is_string() ? "'" + std::string(v.str().substr(0, 40)) + "'" : std::string("not a number");
    };
    if (!d.is_object) throw bad("not an object (torch.distributed writes {\"backend\": \"nccl\", \"rank\": R, \"world_size\": N})");
    DistributedInfo out;
    if (d.world_size.present()) {
      const auto n = as_whole(d.world_size, 1, max_ranks);
      if (!n) throw bad("'world_size' is " + shown(d.world_size) + ", not a whole number of ranks from 1 to " + habitat::detail::number_text(max_ranks));
      out.world_size = static_cast<int>(*n);
    }
    if (d.rank.present()) {
      const auto r = as_whole(d.rank, 0, max_ranks - 1);
      if (!r) throw bad("'rank' is " + shown(d.rank) + ", not a whole number from 0 to " + habitat::detail::number_text(max_ranks - 1));
      if (out.world_size && *r >= *out.world_size)
        throw bad("'rank' " + std::to_string(*r) + " is not below 'world_size' " + std::to_string(*out.world_size) + " (ranks count from 0)");
      out.rank = static_cast<int>(*r);
    }
    if (d.backend.present() && !d.backend.is_string()) throw bad("'backend' is not a string");
    out.backend = d.backend.is_string() ? std::string(d.backend.str().substr(0, 64)) : "";
    distributed.reset();
    if (out.rank || out.world_size) distributed = std::move(out);
  }

  void recorder(std::string_view r) { by_tracker = r.starts_with(cupti_tracker_name); }

  void event(const RawEvent& e) {
    ++events;
    if (!e.ph.is_string() || !is(e.ph.str(), "X") || !e.cat.is_string()) return;
    const Category c = category_of(e.cat.str());
    if (c == Category::other) {
      if (!known_elsewhere(e.cat.str())) foreign.add(e.cat.str());
      return;
    }
    // Only counted (the profiler's cost per record): one without a usable start is left out, as before
    // stacks were counted, rather than refusing a trace over a record that changes no time.
    if (c == Category::python) {
      if (const auto ts = as_number(e.ts); ts && std::abs(*ts) <= max_timestamp_us && retention.keep(*ts)) python_starts.push_back(*ts);
      compact_when_doubled();  // Kineto writes a trace's Python records in one block: bound it as it streams
      return;
    }
    const auto ts = as_number(e.ts);
    const auto dur = as_number(e.dur);
    if (!ts || !dur || !e.name.is_string())
      throw make_error(path, where(), "complete event without a finite numeric 'ts' and 'dur', or without a string 'name'");
    if (*dur < 0) throw make_error(path, where(), "negative duration");
    // No event of a training step lasts hours, nor starts in another millennium: a bigger number is a
    // corrupt field, and would print as hundreds of digits downstream.
    if (*dur > max_duration_us) throw make_error(path, where(), "a duration of more than 10^10 us (2.8 hours)");
    if (std::abs(*ts) > max_timestamp_us) throw make_error(path, where(), "a timestamp beyond 10^17 us");
    const auto correlation = as_whole(e.correlation, -0x1p62, 0x1p62);
    const auto external = external_id(e);
    switch (c) {
      case Category::annotation: {
        const std::string_view n = e.name.str();
        if (!marker.empty() && n == marker) {
          add_marker_step(*ts, *dur);
          break;
        }
        const bool profiler_step = n.starts_with("ProfilerStep#");
        if (!profiler_step) count_annotation(n);
        if (profiler_step && marker.empty()) {
          add_step(n, *ts, *dur);
        } else {
          // The optimizer's step closes a training iteration: the boundaries of traces without ProfilerStep.
          if (n.starts_with("Optimizer.step#")) add_optimizer_step(n, *ts, *dur);
          if (retention.keep(*ts)) {
            marks.push_back(*ts);
            if (n.starts_with("nccl:")) add_collective_mark(e, *ts, *dur);
          }
        }
        break;
      }
      case Category::launch: {
        HostCall call;
        call.kind = host_call_kind(e.name.str());
        call.correlation = correlation.value_or(-1);
        if (external && call.enqueues()) {  // a kernel without a correlation may name this launch's External id
          if (!correlation) call.correlation = next_made_up++;
          external_launches.push_back({*external, *ts, call.correlation, enqueued(call.kind)});
        }
        if (call.correlation >= 0 && call.kind != HostCallKind::other && call.kind != HostCallKind::sync) {
          launch_by_corr.emplace_back(call.correlation, *ts);
        }
        if (!retention.keep(*ts)) break;
        call.name = std::string(e.name.str());
        call.start_us = *ts;
        call.duration_us = *dur;
        call.thread = as_id(e.tid);
        calls.push_back(std::move(call));
        break;
      }
      case Category::cpu_op:
        // PyTorch 1.x wrote ProfilerStep#N and record_function ranges as operators; so does Optimizer.step in some versions.
        if (!marker.empty() && e.name.str() == marker) {
          add_marker_step(*ts, *dur);
          break;
        }
        if (e.name.str().starts_with("ProfilerStep#")) {
          if (!marker.empty()) break;  // the user's marker sets the steps
          if (is(e.cat.str(), "Operator")) ++legacy_steps;
          add_step(e.name.str(), *ts, *dur);
          break;
        }
        if (e.name.str().starts_with("Optimizer.step#")) add_optimizer_step(e.name.str(), *ts, *dur);
        if (external) external_ops.push_back({*external, *ts, as_id(e.tid)});
        if (retention.keep(*ts)) ops.push_back(make_op(e, *ts, *dur));
        break;
      case Category::kernel:
      case Category::memcpy:
      case Category::memset: {
        if (!correlation && !external)
          throw make_error(path, where(), "GPU event '" + std::string(e.name.str()) + "' has no 'correlation' (nor an 'External id' to link it to its launch by)");
        Kernel k = make_kernel(e, c, *ts, *dur);
        k.correlation = correlation ? *correlation : next_made_up++;
        if (!correlation)
          external_gpu.push_back({*external, *ts, k.correlation, events,
                                  c == Category::kernel ? Enqueued::kernel : c == Category::memcpy ? Enqueued::memcpy : Enqueued::memset});
        gpu_spans.push_back({k.correlation, *ts, *dur});
        if (retention.keep_gpu(*ts)) gpu.push_back(std::move(k));
        break;
      }
      default: break;
    }
    compact_when_doubled();
  }

  [[nodiscard]] std::size_t kept_events() const {
    return ops.size() + calls.size() + gpu.size() + marks.size() + python_starts.size() + collective_marks.size();
  }
  void compact_when_doubled() {
    if (kept_events() > std::max(compact_at, 2 * kept_after_compaction)) compact();
  }

  // Drops what the steps seen since the last compaction rule out; run when the kept events have doubled,
  // so its cost stays linear in the file.
  void compact() {
    std::erase_if(ops, [&](const Operation& op) { return !retention.keep(op.start_us); });
    std::erase_if(calls, [&](const HostCall& c) { return !retention.keep(c.start_us); });
    std::erase_if(marks, [&](double m) { return !retention.keep(m); });
    std::erase_if(python_starts, [&](double m) { return !retention.keep(m); });
    std::erase_if(gpu, [&](const Kernel& k) { return !retention.keep_gpu(k.start_us); });
    std::erase_if(collective_marks, [&](const CollectiveMark& m) { return !retention.keep(m.start); });
    kept_after_compaction = kept_events();
  }

  void add_step(std::string_view n, double ts, double dur) {
    RawStep s{0, ts, dur, {}};
    try {
      s.number = std::stol(std::string(n.substr(13)));
    } catch (...) {
      throw make_error(path, where(), "cannot read the step number of '" + std::string(n) + "'");
    }
    steps.push_back(s);
    retention.add_step(s);
  }

  // One more occurrence of a user annotation's name (the first annotation_names_max names are counted).
  void count_annotation(std::string_view n) {
    if (const auto it = annotation_names.find(n); it != annotation_names.end())
      ++it->second;
    else if (annotation_names.size() < annotation_names_max)
      annotation_names.emplace(n, 1);
  }

  // A step's name as the output and the errors give it.
  [[nodiscard]] std::string step_label(long number) const {
    return marker.empty() ? "ProfilerStep#" + std::to_string(number) : "'" + marker + "' #" + std::to_string(number);
  }

  // An occurrence of the user's step marker: the next step, numbered from 1 in file order.
  void add_marker_step(double ts, double dur) {
    RawStep s{static_cast<long>(steps.size()) + 1, ts, dur, {}};
    steps.push_back(s);
    retention.add_step(s);
  }

  // "Optimizer.step#AdamW.step": the optimizer's name is kept (short: a file of many steps stays small).
  void add_optimizer_step(std::string_view n, double ts, double dur) {
    optimizer_steps.push_back({static_cast<long>(optimizer_steps.size()), ts, dur, std::string(n.substr(15, 64))});
  }

  [[nodiscard]] std::string where() const { return "event #" + std::to_string(events); }

  // An event's "External id": a whole number from 0 to 2^62 where present (Kineto counts them from 1).
  [[nodiscard]] std::optional<std::int64_t> external_id(const RawEvent& e) const {
    if (!e.external_id.present()) return std::nullopt;
    const auto x = as_whole(e.external_id, 0, 0x1p62);
    if (!x) throw make_error(path, where(), "'External id' is not a whole number from 0 to 2^62");
    return x;
  }
  static Enqueued enqueued(HostCallKind k) {
    return k == HostCallKind::memcpy ? Enqueued::memcpy : k == HostCallKind::memset ? Enqueued::memset : Enqueued::kernel;
  }

  // GPU events without a 'correlation' are linked by their 'External id', which names the CPU operation that
  // launched them (an operation may launch several: all share its id). Per id and kind of work (kernel, copy,
  // fill), the n-th GPU event in time order is linked to the n-th launch in time order that no GPU event names
  // by its correlation (a stream runs its work in launch order; across streams this is the nearest guess); GPU
  // events beyond the launches go with the last one. Where no launch carries the id, the GPU event is taken as
  // launched at the start of the operation of that id, by a launch made up for it (named so, lasting 0 us).
  // Returns the warnings saying so; throws where neither exists.
  std::vector<std::string> link_by_external_id() {
    std::vector<std::string> notes;
    if (external_gpu.empty()) {
      std::vector<ExternalLaunch>().swap(external_launches);  // nothing to link: their memory goes back
      std::vector<ExternalOp>().swap(external_ops);
      return notes;
    }
    std::vector<std::int64_t> named;  // correlations GPU events carry themselves: their launches are taken
    for (const auto& g : gpu_spans)
      if (g.correlation < made_up_correlations) named.push_back(g.correlation);
    std::sort(named.begin(), named.end());
    std::erase_if(external_launches, [&](const ExternalLaunch& l) {
      return l.correlation < made_up_correlations && std::binary_search(named.begin(), named.end(), l.correlation);
    });
    auto key = [](const auto& x) { return std::tuple(x.external_id, x.what, x.start); };
    std::stable_sort(external_launches.begin(), external_launches.end(), [&](const auto& a, const auto& b) { return key(a) < key(b); });
    std::stable_sort(external_gpu.begin(), external_gpu.end(), [&](const auto& a, const auto& b) { return key(a) < key(b); });
    std::sort(external_ops.begin(), external_ops.end(), [](const ExternalOp& a, const ExternalOp& b) {
      return std::tuple(a.external_id, a.start) < std::tuple(b.external_id, b.start);
    });
    std::unordered_map<std::int64_t, std::int64_t> link;  // made-up correlation of a GPU event -> its launch's
    std::size_t by_launch = 0, beyond = 0, by_op = 0;
    auto l = external_launches.begin();
    for (auto g = external_gpu.begin(); g != external_gpu.end();) {
      const auto group = std::tuple(g->external_id, g->what);
      auto end = std::find_if(g, external_gpu.end(), [&](const ExternalGpu& x) { return std::tuple(x.external_id, x.what) != group; });
      l = std::lower_bound(l, external_launches.end(), group, [](const ExternalLaunch& x, const auto& k) { return std::tuple(x.external_id, x.what) < k; });
      const auto l_end = std::find_if(l, external_launches.end(), [&](const ExternalLaunch& x) { return std::tuple(x.external_id, x.what) != group; });
      if (l != l_end) {
        for (auto it = l; g != end; ++g, ++by_launch) {
          link[g->correlation] = it->correlation;
          if (std::next(it) != l_end) ++it;
          else if (g + 1 != end) ++beyond;
        }
        l = l_end;
        continue;
      }
      const auto op = std::lower_bound(external_ops.begin(), external_ops.end(), g->external_id,
                                       [](const ExternalOp& o, std::int64_t id) { return o.external_id < id; });
      if (op == external_ops.end() || op->external_id != g->external_id)
        throw make_error(path, "event #" + std::to_string(g->event),
                         "GPU event has no 'correlation', and no CUDA launch or operator carries its 'External id' " + std::to_string(g->external_id));
      for (; g != end; ++g, ++by_op) {
        HostCall call;
        call.name = "launch made up from 'External id'";
        call.kind = g->what == Enqueued::memcpy ? HostCallKind::memcpy : g->what == Enqueued::memset ? HostCallKind::memset : HostCallKind::launch;
        call.start_us = op->start;
        call.thread = op->thread;
        call.correlation = next_made_up++;
        launch_by_corr.emplace_back(call.correlation, call.start_us);
        link[g->correlation] = call.correlation;
        if (retention.keep(call.start_us)) calls.push_back(std::move(call));
      }
    }
    for (auto& s : gpu_spans)
      if (const auto it = link.find(s.correlation); it != link.end()) s.correlation = it->second;
    for (auto& k : gpu)
      if (const auto it = link.find(k.correlation); it != link.end()) k.correlation = it->second;
    auto events_text = [](std::size_t n) { return std::to_string(n) + (n == 1 ? " GPU event has" : " GPU events have"); };
    if (by_launch > 0)
      notes.push_back(events_text(by_launch) + " no 'correlation': linked to the CUDA launches of their operation's 'External id', in time order" +
                      (beyond > 0 ? " (" + std::to_string(beyond) + " beyond their operation's launches taken with its last)" : std::string()));
    if (by_op > 0)
      notes.push_back(events_text(by_op) + " no 'correlation', and no CUDA launch carries their 'External id': each is taken as launched at the "
                      "start of the operation of that id, with no launch time of its own");
    return notes;
  }

  // An "nccl:<collective>" annotation: kept where it gives a message size (bytes: each input's elements times its
  // dtype's size). The collective takes the model's name where the model knows it ("nccl:all_reduce" ->
  // "allreduce"), else the annotation's ("all_to_all", "send", ...), which the model leaves at its recorded time.
  void add_collective_mark(const RawEvent& e, double ts, double dur) {
    const auto r = as_whole(e.group_size, 1, max_ranks);
    if (e.shapes.size() == 0 || (e.group_size.present() && !r)) return;  // as a kernel's own collective is read
    double bytes = 0;
    for (std::size_t i = 0; i < e.shapes.size(); ++i)
      bytes += cost::bytes_of(TensorArg{*e.shapes.at(i), e.types_array && i < e.n_types ? e.types[i] : std::string(), {}, {}});
    const std::string_view written = e.name.str(), kind = written.substr(5);
    const auto modelled = comm::collective_kind(kind);
    collective_marks.push_back({as_id(e.tid), ts, ts + dur,
                                Collective{std::string(modelled ? comm::to_string(*modelled) : kind.substr(0, 64)), bytes, static_cast<int>(r.value_or(0))},
                                std::string(written.substr(0, 64))});
  }

  [[nodiscard]] bool amd() const { return amd_props; }

  Kernel make_kernel(const RawEvent& e, Category c, double ts, double dur) const {
    Kernel k;
    k.name = std::string(e.name.str());
    k.kind = c == Category::kernel ? GpuWorkKind::kernel : c == Category::memcpy ? GpuWorkKind::memcpy : GpuWorkKind::memset;
    k.start_us = ts;
    k.duration_us = dur;
    k.stream = as_id(e.stream);
    // ROCm writes a launch's dimensions for some HIP launch calls only, in blocks for some and in threads
    // (OpenCL's global size) for others (hipExtModuleLaunchKernel): an AMD trace's are not used, its kernels
    // are taken to spread over the GPU.
    k.launch_recorded = !amd();
    if (k.launch_recorded) {
      const auto grid = as_dim3(e.grid), block = as_dim3(e.block);
      if (!grid || !block) throw make_error(path, where(), "launch dimensions are not whole non-negative numbers");
      if (const auto bad = habitat::detail::launch_limit_violation(*grid, *block)) throw make_error(path, where(), *bad);
      k.grid = *grid;
      k.block = *block;
    }
    if (e.registers.present() && !as_whole(e.registers, 0, habitat::detail::max_registers_per_thread))
      throw make_error(path, where(), "'registers per thread' is not a count from 0 to 255");
    if (e.shared_memory.present() && !as_whole(e.shared_memory, 0, habitat::detail::max_shared_mem_per_block))
      throw make_error(path, where(), "'shared memory' is not a byte count from 0 to 1 GiB");
    if (e.bytes.present() && !as_whole(e.bytes, 0, 0x1p62)) throw make_error(path, where(), "'bytes' is not a non-negative byte count");
    k.registers_per_thread = static_cast<int>(as_whole(e.registers, 0, habitat::detail::max_registers_per_thread).value_or(0));
    k.shared_mem_bytes = static_cast<long>(as_whole(e.shared_memory, 0, habitat::detail::max_shared_mem_per_block).value_or(0));
    k.bytes = as_number(e.bytes).value_or(0);
    if (k.kind == GpuWorkKind::memcpy) {
      // "Memcpy HtoD (Pageable -> Device)" -> "HtoD"
      const auto sp = k.name.find(' ');
      k.copy_kind = sp == std::string::npos ? "" : k.name.substr(sp + 1, k.name.find(' ', sp + 1) - sp - 1);
    }
    if (e.collective.is_string()) {
      // NCCL's kernels: the collective model predicts them from their message and ranks. Without a group size
      // (older PyTorch) the ranks are left 0, for read_trace to take the trace's world size, which may come later in the file.
      const auto n = as_whole(e.nelems, 0, 0x1p60);
      const auto r = as_whole(e.group_size, 1, max_ranks);
      if (n && (r || !e.group_size.present()))
        k.collective = Collective{std::string(e.collective.str()), *n * ops::dtype_bytes(e.dtype.is_string() ? e.dtype.str() : "Float"),
                                  static_cast<int>(r.value_or(0))};
    }
    if (c == Category::kernel && k.launch_recorded && (k.block.count() <= 0 || !e.grid.present || !e.block.present))
      throw make_error(path, where(), "kernel '" + k.name.substr(0, 80) + "' has no 'grid' or 'block'");
    return k;
  }

  static Operation make_op(const RawEvent& e, double ts, double dur) {
    Operation op;
    op.name = std::string(e.name.str());
    op.start_us = ts;
    op.duration_us = dur;
    op.thread = as_id(e.tid);
    op.sequence = as_whole(e.sequence, -1, 0x1p62).value_or(-1);
    op.backward = op.name.find("Backward") != std::string::npos || op.name.starts_with("autograd::engine::evaluate_function");
    const std::size_t n = std::max(e.shapes.size(), e.types_array ? e.n_types : 0);
    op.inputs.resize(n);
    for (std::size_t i = 0; i < n; ++i) {
      TensorArg& t = op.inputs[i];
      if (const auto* d = e.shapes.at(i)) t.shape = *d;
      // Strides only where they describe the shape read (one per dimension): a tensor's layout, or nothing.
      if (const auto* st = e.strides.at(i); st && st->size() == t.shape.size()) t.strides = *st;
      if (e.types_array && i < e.n_types) t.dtype = e.types[i];
      if (e.values_array && i < e.n_values) t.value = e.values[i];
    }
    return op;
  }
};

// A JSON value as the Scalar the checks of raw_event.hpp read.
inline Scalar scalar_of(const json::value* v) {
  Scalar s;
  if (!v) return s;
  s.kind = Scalar::Kind::number;
  if (v->is_double()) s.number = v->get_double();
  else if (v->is_int64()) s.number = static_cast<double>(v->get_int64());
  else if (v->is_uint64()) s.number = static_cast<double>(v->get_uint64());
  else if (v->is_string()) {
    s.kind = Scalar::Kind::string;
    s.text = std::string(v->get_string());
  } else {
    s.kind = Scalar::Kind::other;
  }
  return s;
}

inline std::optional<Device> origin_from_properties(const std::vector<json::object>& props) {
  if (props.empty()) return std::nullopt;
  const json::object& p = props.front();
  // Counts beyond what an int holds are not a GPU's: taken as missing (the catalog's figures then apply).
  // Kineto's own names, then torch 1.8's "computeProperties" spellings.
  auto num = [&](std::string_view k, std::string_view old = {}) -> std::optional<double> {
    if (auto x = as_whole(scalar_of(p.if_contains(k)), 0, 2147483647.0)) return static_cast<double>(*x);
    if (!old.empty())
      if (auto x = as_whole(scalar_of(p.if_contains(old)), 0, 2147483647.0)) return static_cast<double>(*x);
    return std::nullopt;
  };
  Device d;
  if (const auto* n = p.if_contains("name"); n && n->is_string()) d.name = std::string(n->get_string());
  d.cc_major = static_cast<int>(num("computeMajor", "major").value_or(0));
  d.cc_minor = static_cast<int>(num("computeMinor", "minor").value_or(0));
  d.sms = static_cast<int>(num("numSms", "multiProcessorCount").value_or(0));
  d.memory_gib = static_cast<double>(as_whole(scalar_of(p.if_contains("totalGlobalMem")), 0, 0x1p62).value_or(0)) / (1024.0 * 1024 * 1024);
  auto& l = d.limits;
  l.max_threads_per_block = static_cast<int>(num("maxThreadsPerBlock").value_or(l.max_threads_per_block));
  l.max_threads_per_sm = static_cast<int>(num("maxThreadsPerMultiprocessor", "maxThreadsPerMultiProcessor").value_or(l.max_threads_per_sm));
  l.regs_per_block = static_cast<int>(num("regsPerBlock").value_or(l.regs_per_block));
  l.regs_per_sm = static_cast<int>(num("regsPerMultiprocessor").value_or(l.regs_per_sm));
  l.warp_size = static_cast<int>(num("warpSize").value_or(l.warp_size));
  l.shared_mem_per_block = static_cast<long>(num("sharedMemPerBlock").value_or(l.shared_mem_per_block));
  l.shared_mem_per_sm = static_cast<long>(num("sharedMemPerMultiprocessor").value_or(l.shared_mem_per_sm));
  l.shared_mem_per_block_optin = static_cast<long>(num("sharedMemPerBlockOptin").value_or(l.shared_mem_per_block_optin));
  if (amd_gpu(d.name, l.warp_size)) {
    d.vendor = Vendor::amd;
    l.warp_size = 64;
    if (d.name.empty() && d.sms > 0)
      d.name = "AMD GPU (" + std::to_string(d.sms) + " CUs, gfx " + std::to_string(d.cc_major) + "." + std::to_string(d.cc_minor) + ")";
  }
  // Kineto does not export the reserved amount; every NVIDIA GPU since compute capability 8.0 reserves 1 KiB.
  l.reserved_shared_mem_per_block =
      static_cast<long>(num("reservedSharedMemPerBlock").value_or(d.nvidia() && d.cc_major >= 8 ? 1024 : 0));
  if (d.name.empty() || d.sms <= 0 || d.cc_major <= 0) return std::nullopt;
  return d;
}

// Parent links by interval nesting, per thread; ops must be sorted by (thread, start, -duration).
inline void link_parents(std::vector<Operation>& ops) {
  std::vector<int> stack;
  for (int i = 0; i < static_cast<int>(ops.size()); ++i) {
    if (i > 0 && ops[i].thread != ops[i - 1].thread) stack.clear();
    while (!stack.empty() && ops[stack.back()].start_us + ops[stack.back()].duration_us < ops[i].start_us + ops[i].duration_us - 1e-3)
      stack.pop_back();
    ops[i].parent = stack.empty() ? -1 : stack.back();
    if (ops[i].parent >= 0 && ops[ops[i].parent].backward) ops[i].backward = true;
    stack.push_back(i);
  }
}

// GPU time (us) of each step, in the order of `steps`: the GPU events whose launch falls in the step's
// window (by their own start where the file has no launches).
inline std::vector<double> step_gpu_us(Collector& c, const std::vector<RawStep>& steps) {
  std::vector<double> out(steps.size(), 0);
  std::vector<std::size_t> by_start(steps.size());
  for (std::size_t i = 0; i < steps.size(); ++i) by_start[i] = i;
  std::sort(by_start.begin(), by_start.end(), [&](std::size_t a, std::size_t b) { return steps[a].start < steps[b].start; });
  auto add = [&](double ts, double dur) {
    auto it = std::upper_bound(by_start.begin(), by_start.end(), ts, [&](double x, std::size_t i) { return x < steps[i].start; });
    if (it == by_start.begin()) return;
    const RawStep& s = steps[*std::prev(it)];
    if (ts <= s.start + s.dur) out[*std::prev(it)] += dur;
  };
  std::sort(c.launch_by_corr.begin(), c.launch_by_corr.end());
  for (const auto& g : c.gpu_spans) {
    if (c.launch_by_corr.empty()) {
      add(g.start, g.dur);
      continue;
    }
    auto it = std::lower_bound(c.launch_by_corr.begin(), c.launch_by_corr.end(), std::pair{g.correlation, -1e300});
    if (it != c.launch_by_corr.end() && it->first == g.correlation) add(it->second, g.dur);
  }
  return out;
}

// Whether the trace holds the step numbered just before `number`: where it does not, the step is the first active one
// of its profiler session. `steps` is in step order.
[[nodiscard]] inline bool follows_recorded_step(const std::vector<RawStep>& steps, long number) {
  return std::ranges::binary_search(steps, number - 1, {}, &RawStep::number);
}

// The step to read when none is asked for: the last that launched GPU work, unless its GPU time is more than 15%
// from the median of three or more such steps, or its span on the host more than 15% from the median of three or
// more such steps that follow another recorded step (a session's first active step records more: sim::StepCounts::
// first_steps); then the step closest to both medians (the last of equals, where the file can be read again), and a
// warning either way. The host's span matters for host-bound steps: one profiled sample can run slow all through (an
// H200 host's gelu step at 2.5x its twins' 56 us, launch and operator alike: fixtures/steps/h200/run4), and the
// prediction follows the sample it reads. `c.steps` is in step order.
inline const RawStep* typical_step(Collector& c, const RawStep* last, bool can_switch, std::vector<std::string>& warnings) {
  const auto gpu = step_gpu_us(c, c.steps);
  std::vector<double> gpus, spans;
  for (std::size_t i = 0; i < gpu.size(); ++i) {
    if (!(gpu[i] > 0)) continue;
    gpus.push_back(gpu[i]);
    if (follows_recorded_step(c.steps, c.steps[i].number)) spans.push_back(c.steps[i].dur);
  }
  if (gpus.size() < 3) return last;
  if (spans.size() < 3) spans.clear();
  const double med_gpu = habitat::detail::median(gpus, 0), med_span = habitat::detail::median(spans, 0);  // 0: no span criterion
  auto gpu_off = [&](std::size_t i) { return std::abs(gpu[i] / med_gpu - 1); };
  auto span_off = [&](std::size_t i) { return med_span > 0 ? std::abs(c.steps[i].dur / med_span - 1) : 0.0; };
  auto off = [&](std::size_t i) { return std::max(gpu_off(i), span_off(i)); };
  const auto last_i = static_cast<std::size_t>(last - c.steps.data());
  if (off(last_i) <= 0.15) return last;
  std::size_t best = last_i;
  for (std::size_t i = c.steps.size(); can_switch && i-- > 0;)
    if (gpu[i] > 0 && off(i) < off(best)) best = i;
  using habitat::detail::duration_text;
  auto pct = [](double x) { return std::to_string(static_cast<int>(std::lround(100 * x))) + "%"; };
  const bool by_gpu = gpu_off(last_i) > 0.15;
  const std::string what = c.step_label(last->number) + ", the last with GPU work, " +
                           (by_gpu ? "has " + duration_text(gpu[last_i]) + " of it, " + pct(gpu_off(last_i)) + " off the median of the " +
                                         std::to_string(gpus.size()) + " steps (" + duration_text(med_gpu) + ")"
                                   : "spans " + duration_text(last->dur) + " on the host, " + pct(span_off(last_i)) + " off the median of the " +
                                         std::to_string(spans.size()) + " steps after their session's first (" + duration_text(med_span) + ")");
  const std::string chosen = c.step_label(c.steps[best].number) + " (" +
                             (by_gpu ? duration_text(gpu[best]) : duration_text(c.steps[best].dur) + " on the host") + ")";
  warnings.push_back(best == last_i ? what + ": it is predicted all the same (standard input cannot be read twice; pass --step N)"
                                    : what + ": " + chosen + " is predicted instead; pass --step " + std::to_string(last->number) + " for the last");
  return &c.steps[best];
}

// The trace's own annotations, most frequent first (at most three), as a hint for --step-marker: "" if none.
inline std::string marker_hint(const Collector& c) {
  std::vector<std::pair<long, std::string>> named;
  for (const auto& [name, n] : c.annotation_names)
    if (!name.starts_with("Optimizer.")) named.emplace_back(n, name);
  std::stable_sort(named.begin(), named.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
  std::string out;
  for (std::size_t i = 0; i < std::min<std::size_t>(named.size(), 3); ++i)
    out += (i ? ", '" : "'") + named[i].second.substr(0, 60) + "' (" + std::to_string(named[i].first) + "x)";
  return out;
}

// Steps for a trace recorded without a profiler schedule (a plain `with torch.profiler.profile():`, or
// steps annotated the user's own way). The iteration ends where the optimizer's step ends: with two or more
// Optimizer.step# annotations, iteration k runs from the end of optimizer step k-1 to the end of step k (the
// first, before any optimizer step ended, is not a whole iteration and is left out). Otherwise the whole
// trace is one step where the caller asks for it (its span is often set-up and idle time, seconds around
// milliseconds of GPU work: not an iteration to be taken silently). Either way the output says what was found.
// Iterations found as the repetition of a trace's top-level operations: on the thread with the most of them, the
// shortest sequence of operator names that repeats, back to back, up to the last one, at least twice and over at
// least a quarter of them (two equal operations at the end are no loop; set-up before the loop, such as a model's
// initialisation, may take the rest), each copy launching GPU work (a training
// loop's forward, backward call and optimizer; a benchmark's calls). Empty where none.
struct Repetition {
  std::vector<RawStep> steps;
  std::size_t period = 0;  // top-level operations per iteration
  std::string first;       // the name an iteration starts with
};
[[nodiscard]] inline Repetition repeated_structure(const Collector& c) {
  Repetition out;
  std::map<std::int64_t, std::vector<const Operation*>> by_thread;
  for (const auto& op : c.ops) by_thread[op.thread].push_back(&op);
  std::vector<const Operation*> top;  // the busiest thread's outermost operations, in time order
  for (auto& [thread, ops] : by_thread) {
    std::sort(ops.begin(), ops.end(), [](const Operation* a, const Operation* b) {
      return a->start_us != b->start_us ? a->start_us < b->start_us : a->duration_us > b->duration_us;
    });
    std::vector<const Operation*> outer;
    double end = -1e300;
    for (const Operation* op : ops)
      if (op->start_us >= end) outer.push_back(op), end = op->start_us + op->duration_us;
    if (outer.size() > top.size()) top = std::move(outer);
  }
  const std::size_t n = top.size();
  if (n < 2) return out;
  std::map<std::string_view, int> ids;
  std::vector<int> name(n);
  for (std::size_t i = 0; i < n; ++i) name[i] = ids.try_emplace(top[i]->name, static_cast<int>(ids.size())).first->second;
  // Launch times, to require GPU work in every copy.
  std::vector<double> launches;
  for (const auto& call : c.calls)
    if (call.enqueues()) launches.push_back(call.start_us);
  std::sort(launches.begin(), launches.end());
  auto launches_in = [&](double a, double b) { return std::lower_bound(launches.begin(), launches.end(), b) - std::lower_bound(launches.begin(), launches.end(), a); };
  constexpr std::size_t max_period = 20000;  // top-level operations of one iteration: far beyond any model's
  for (std::size_t p = 1; p <= std::min(n / 2, max_period); ++p) {
    bool same = true;
    for (std::size_t i = 0; i < p && same; ++i) same = name[n - 1 - i] == name[n - 1 - p - i];
    if (!same) continue;
    std::size_t copies = 2;
    while ((copies + 1) * p <= n) {
      bool more = true;
      for (std::size_t i = 0; i < p && more; ++i) more = name[n - 1 - i] == name[n - 1 - copies * p - i];
      if (!more) break;
      ++copies;
    }
    if (4 * copies * p < n || copies * p < 4) continue;
    std::vector<RawStep> steps;
    for (std::size_t k = 0; k < copies; ++k) {
      const std::size_t from = n - (copies - k) * p;
      const double start = top[from]->start_us;
      const double end = k + 1 < copies ? top[from + p]->start_us : top[n - 1]->start_us + top[n - 1]->duration_us;
      steps.push_back({static_cast<long>(k + 1), start, end - start, {}});
    }
    if (!std::all_of(steps.begin(), steps.end(), [&](const RawStep& r) { return r.dur > 0 && launches_in(r.start, r.start + r.dur) > 0; }))
      return out;
    out.steps = std::move(steps);
    out.period = p;
    out.first = top[n - copies * p]->name.substr(0, 60);
    return out;  // the shortest period that repeats decides; a longer one would merge iterations
  }
  return out;
}

inline void synthesize_steps(Collector& c, const ReadOptions& options, std::vector<std::string>& warnings) {
  double lo = 1e300, hi = -1e300;
  auto span = [&](double ts, double dur) { lo = std::min(lo, ts), hi = std::max(hi, ts + dur); };
  for (const auto& op : c.ops) span(op.start_us, op.duration_us);
  for (const auto& call : c.calls) span(call.start_us, call.duration_us);
  if (c.calls.empty())
    for (const auto& k : c.gpu) span(k.start_us, k.duration_us);
  if (!(hi > lo)) throw make_error(c.path, "steps", "no operations or CUDA calls with a time span: nothing to take as a step");
  auto& opt = c.optimizer_steps;
  std::sort(opt.begin(), opt.end(), [](const RawStep& a, const RawStep& b) { return a.start < b.start; });
  const std::string span_text = habitat::detail::duration_text(hi - lo);
  if (opt.size() >= 2 && !options.infer_steps && !options.whole_trace)
    throw make_error(c.path, "steps",
                     "no ProfilerStep#N annotation, but " + std::to_string(opt.size()) +
                         " optimizer steps (Optimizer.step#), between which the iterations are likely to lie: pass --infer-steps to take "
                         "them as the steps, --whole-trace to predict all " + span_text +
                         " of the recording as one step, or record with torch.profiler's schedule and call prof.step() once per iteration");
  if (opt.size() >= 2 && !options.whole_trace) {
    for (std::size_t i = 1; i < opt.size(); ++i) {
      const double start = opt[i - 1].start + opt[i - 1].dur, end = opt[i].start + opt[i].dur;
      if (end > start) c.steps.push_back({static_cast<long>(i), start, end - start, {}});
    }
    c.inferred_from = "between optimizer steps";
    warnings.push_back("no ProfilerStep#N annotation: the iterations are taken between the ends of the optimizer's " +
                       std::to_string(opt.size()) + " steps (Optimizer.step#); pass --step N to choose one of 1-" +
                       std::to_string(c.steps.size()) + ", or record with a profiler schedule and prof.step() for exact boundaries");
    if (!c.steps.empty()) return;
  }
  // Repeated top-level structure: the iterations of a loop without annotations.
  const Repetition rep = options.whole_trace ? Repetition{} : repeated_structure(c);
  const std::string rep_text = rep.steps.empty() ? std::string()
                                                 : std::to_string(rep.steps.size()) + " repetitions of its " + std::to_string(rep.period) +
                                                       " top-level operations (from '" + rep.first + "')";
  if (!rep.steps.empty() && options.infer_steps) {
    c.steps = rep.steps;
    c.inferred_from = "repeated top-level operations";
    warnings.push_back("no ProfilerStep#N annotation" + std::string(opt.size() == 1 ? " and one optimizer step" : "") + ": the iterations are taken as the " +
                       rep_text + "; pass --step N to choose one of 1-" + std::to_string(c.steps.size()) +
                       ", or record with a profiler schedule and prof.step() for exact boundaries");
    return;
  }
  const std::string hint = marker_hint(c);
  if (!options.whole_trace)
    throw make_error(c.path, "steps",
                     "no ProfilerStep#N annotation" + std::string(opt.size() == 1 ? " and one optimizer step" : " and no optimizer steps") +
                         ": where an iteration starts is unknown; " +
                         (rep_text.empty() ? std::string() : "pass --infer-steps to take the trace's " + rep_text + " as its steps, ") +
                         (hint.empty() ? std::string() : "pass --step-marker NAME if an annotation of yours marks each iteration (the trace has " + hint + "), ") +
                         "pass --whole-trace to predict all " + span_text +
                         " of the recording as one step, or record with torch.profiler's schedule and call prof.step() once per iteration");
  c.steps.push_back({0, lo, hi - lo, {}});
  warnings.push_back("no ProfilerStep#N annotation" + std::string(opt.size() == 1 ? " and one optimizer step" : "") +
                     ": the whole trace (" + span_text + " of host time) is taken as one step; if it holds several iterations, the prediction is of all of them "
                     "(record with torch.profiler's schedule and call prof.step() once per iteration)");
}

// What a trace without kernels, memcpys or memsets holds instead, to follow "no GPU work": another accelerator's
// device events, CUDA launches whose GPU side was not recorded, or host events only.
[[nodiscard]] inline std::string without_gpu_work(const Collector& c) {
  const std::string none = " (no kernels, memcpys or memsets)";
  if (const std::string device = c.foreign.list(true); !device.empty())
    return none + "; its device events are of categories " + device + " (an accelerator other than a GPU?), which habitat does not model";
  if (!c.launch_by_corr.empty())
    return none + ", though its " + std::to_string(c.launch_by_corr.size()) +
           " CUDA launches enqueued some: recorded without the CUDA activity (torch.profiler's ProfilerActivity.CUDA)?";
  return none + ": a CPU-only trace, or one recorded without the CUDA activity (torch.profiler's ProfilerActivity.CUDA)?";
}

// The function an NCCL kernel's name gives ("ncclKernel_AllReduce_RING_LL_Sum_float": "AllReduce"), and the one NCCL
// runs each collective the model predicts with: a kernel of another function inside an annotation (a SendRecv
// kernel in 'nccl:all_reduce', as in a public HTA trace) is not that collective, and its message is not taken.
[[nodiscard]] inline std::string_view nccl_function(std::string_view kernel) {
  for (const std::string_view prefix : {"ncclKernel_", "ncclDevKernel_"})
    if (kernel.starts_with(prefix)) return kernel.substr(prefix.size(), kernel.find('_', prefix.size()) - prefix.size());
  return {};
}
[[nodiscard]] constexpr std::string_view nccl_function(comm::CollectiveKind k) {
  switch (k) {
    case comm::CollectiveKind::all_reduce: return "AllReduce";
    case comm::CollectiveKind::broadcast: return "Broadcast";
    case comm::CollectiveKind::all_gather: return "AllGather";
    case comm::CollectiveKind::reduce_scatter: return "ReduceScatter";
    case comm::CollectiveKind::all_to_all: return "SendRecv";  // NCCL runs an all-to-all as grouped sends and receives
  }
  return {};
}

// NCCL kernels that name no collective (PyTorch before 2.1) take it from the "nccl:<collective>" annotation that
// encloses their launch on the launching thread (the innermost, if several), and it is said; so is a collective
// the model does not predict, which keeps its recorded time, and a kernel whose name contradicts the annotation.
inline void collectives_from_marks(Collector& c, Trace& t) {
  auto& marks = c.collective_marks;
  if (marks.empty()) return;
  std::sort(marks.begin(), marks.end(), [](const CollectiveMark& a, const CollectiveMark& b) {
    return a.thread != b.thread ? a.thread < b.thread : a.start < b.start;
  });
  std::map<std::string, std::size_t> taken;  // by annotation: a handful of names (the collectives PyTorch has)
  std::map<std::string, std::size_t> unmodelled, contradicting;
  std::size_t n = 0;
  for (Kernel& k : t.kernels) {
    if (k.collective || k.call < 0 || k.kind != GpuWorkKind::kernel || !nccl_kernel_name(k.name)) continue;
    const HostCall& call = t.calls[static_cast<std::size_t>(k.call)];
    auto it = std::upper_bound(marks.begin(), marks.end(), std::pair{call.thread, call.start_us}, [](const auto& key, const CollectiveMark& m) {
      return key.first != m.thread ? key.first < m.thread : key.second < m.start;
    });
    while (it != marks.begin() && std::prev(it)->thread == call.thread) {
      --it;
      if (it->end < call.start_us + call.duration_us) continue;
      const auto kind = comm::collective_kind(it->collective.name);
      if (const auto f = nccl_function(k.name); kind && !f.empty() && f != "Generic" && f != nccl_function(*kind)) {
        ++contradicting[std::string(f.substr(0, 32)) + " kernels in '" + it->annotation + "'"];
        break;
      }
      k.collective = it->collective;
      ++n;
      ++taken[it->annotation];
      if (!kind) ++unmodelled[k.collective->name];
      break;
    }
  }
  if (!contradicting.empty()) {
    std::string which;
    for (const auto& [what, count] : contradicting) which += (which.empty() ? "" : ", ") + what + " " + std::to_string(count) + "x";
    t.warnings.push_back("NCCL kernels of another collective than the annotation around their launch names (" + which +
                         "): its message is not taken for them");
  }
  if (n == 0) return;
  auto kernels = [](std::size_t k) { return std::to_string(k) + (k == 1 ? " kernel" : " kernels"); };
  std::string from;
  for (const auto& [name, count] : taken) from += (from.empty() ? "'" : ", '") + name + "' " + std::to_string(count) + "x";
  std::string w = std::to_string(n) + " NCCL kernel" + (n == 1 ? " names" : "s name") + " no collective: taken from the annotation" +
                  (n == 1 ? "" : "s") + " around " + (n == 1 ? "its launch" : "their launches") + " (" + from +
                  "), each message from the annotation's Input Dims and Input type";
  if (!unmodelled.empty()) {
    std::string modelled, not_modelled;
    for (const auto kind : comm::modelled_collectives) modelled += (modelled.empty() ? "" : ", ") + std::string(comm::to_string(kind));
    for (const auto& [name, count] : unmodelled) not_modelled += (not_modelled.empty() ? "" : ", ") + name + " (" + kernels(count) + ")";
    w += "; the collective model predicts " + modelled + ", not " + not_modelled + ": those keep their recorded time";
  }
  t.warnings.push_back(std::move(w));
}

}  // namespace detail

[[nodiscard]] inline Trace read_trace(const std::string& path, const ReadOptions& options = {}) {
  detail::Collector c(path, options.step, options.step_marker);
  stream_events(path, c, options.progress);
  const std::vector<std::string> linked = c.link_by_external_id();

  Trace t;
  t.source = path;
  t.device_props = detail::origin_from_properties(c.device_props);
  if (t.device_props) t.device_name = t.device_props->name;
  t.distributed = c.distributed;
  t.recorder = c.by_tracker ? Recorder::cupti_tracker : Recorder::profiler;

  // Without ProfilerStep annotations every event was kept (there was no step to rule any out): the iterations
  // are found from the optimizer's steps, else the whole trace is one step.
  const bool marked = !options.step_marker.empty();
  if (marked && c.steps.empty()) {
    const std::string hint = detail::marker_hint(c);
    throw make_error(path, "steps", "no annotation or operator named '" + options.step_marker + "' (--step-marker)" +
                                        (hint.empty() ? std::string(": the trace has no annotation of its own") : "; the trace has " + hint));
  }
  // No GPU work anywhere in the file: refused before steps are looked for, saying what the trace has instead.
  if (c.gpu_spans.empty()) {
    const std::string why = detail::without_gpu_work(c);
    if (options.whole_trace && c.steps.empty()) throw make_error(path, "the whole trace", "the trace holds no GPU work" + why);
    throw make_error(path, "steps",
                     c.steps.empty() ? "no ProfilerStep#N annotation, and no GPU work in the trace" + why
                                     : (marked ? "no '" + options.step_marker + "'" : std::string("no ProfilerStep")) + " launched any GPU work, nor does the trace hold any" + why);
  }
  const bool synthesized = c.steps.empty();
  if (synthesized) detail::synthesize_steps(c, options, t.warnings);

  if (!synthesized && c.legacy_steps == static_cast<long>(c.steps.size()) && !options.infer_steps)
    throw make_error(path, "steps",
                     "its ProfilerStep#N are 'Operator' events, the trace format of PyTorch 1.9 and older, on which habitat is not "
                     "validated: pass --infer-steps to read them as steps all the same, or record again with PyTorch 1.10 or later");
  if (!synthesized && c.legacy_steps > 0)
    t.warnings.push_back("the trace's ProfilerStep#N are 'Operator' events (PyTorch 1.9 and older): read as steps (--infer-steps), not validated");
  std::sort(c.steps.begin(), c.steps.end(), [](const auto& a, const auto& b) { return a.number < b.number; });
  t.profiled_steps = static_cast<int>(c.steps.size());
  {  // the loop's period: the median spacing of consecutive steps' starts
    std::vector<double> spacing;
    for (std::size_t i = 1; i < c.steps.size(); ++i)
      if (c.steps[i].number == c.steps[i - 1].number + 1 && c.steps[i].start > c.steps[i - 1].start)
        spacing.push_back(c.steps[i].start - c.steps[i - 1].start);
    t.step_period_us = habitat::detail::median(std::move(spacing), 0);
  }
  // Launch times, sorted: a step launched GPU work if one falls in its window. Without runtime events
  // (some exporters drop them) kernels are taken by their GPU start instead.
  const bool have_launches = !c.launch_by_corr.empty();
  std::vector<double> launch_ts;
  if (have_launches)
    for (const auto& l : c.launch_by_corr) launch_ts.push_back(l.second);
  else
    for (const auto& g : c.gpu_spans) launch_ts.push_back(g.start);
  std::sort(launch_ts.begin(), launch_ts.end());
  auto launched_in = [&](const detail::RawStep& s) {
    auto it = std::lower_bound(launch_ts.begin(), launch_ts.end(), s.start);
    return it != launch_ts.end() && *it <= s.start + s.dur;
  };
  const detail::RawStep* step = nullptr;
  if (options.step) {
    for (const auto& s : c.steps)
      if (s.number == *options.step) step = &s;
    if (!step) {
      std::string have;
      for (const auto& s : c.steps) have += (have.empty() ? "" : ", ") + std::to_string(s.number);
      throw make_error(path, "steps", "no " + c.step_label(*options.step) + " (the trace has " + have + ")");
    }
  } else {
    for (auto it = c.steps.rbegin(); it != c.steps.rend() && !step; ++it)
      if (launched_in(*it)) step = &*it;
    if (!step)
      throw make_error(path, "steps", std::string(marked ? "no '" + options.step_marker + "'" : "no ProfilerStep") +
                                          " launched any GPU work (the trace's GPU work lies outside them)");
    if (!synthesized) step = detail::typical_step(c, step, path != "-", t.warnings);
  }
  // The events kept while streaming are those of the step that started last. When another step is the
  // one to read (the last launched nothing, or step numbers run against time), read the file again for it.
  const auto& kept = c.retention.target();
  if (!synthesized && (!kept || kept->number != step->number || kept->start != step->start)) {
    const std::string n = std::to_string(step->number);
    if (options.step) throw make_error(path, "steps", "two steps are numbered " + n);
    if (path == "-")
      throw make_error(path, "steps", c.step_label(step->number) + ", the last that launched GPU work, is not the trace's last step, and " +
                                          "standard input cannot be read twice: save the trace to a file, or pass --step " + n);
    ReadOptions again = options;
    again.step = step->number;
    Trace chosen = read_trace(path, again);
    chosen.warnings.insert(chosen.warnings.begin(), t.warnings.begin(), t.warnings.end());
    return chosen;
  }
  t.warnings.insert(t.warnings.end(), linked.begin(), linked.end());
  c.compact();
  std::sort(c.calls.begin(), c.calls.end(), [](const HostCall& a, const HostCall& b) { return a.start_us < b.start_us; });
  // A synthesized step numbered 0 is the whole trace.
  t.step_name = !synthesized         ? c.step_label(step->number)
                : step->number == 0 ? "the whole trace"
                                    : "iteration " + std::to_string(step->number) + " (" + c.inferred_from + ")";
  // ProfilerStep#0 is a profiler session's first step (a schedule without wait or warm-up, or none): it pays the
  // profiler's start, which the host model, calibrated on warmed-up steps, does not remove (fixtures/track/listing1).
  if (!synthesized && c.marker.empty() && step->number == 0)
    t.warnings.push_back("ProfilerStep#0 is the profiler session's first step, whose host time carries the profiler's start "
                         "(single iterations so recorded on two H200 machines came out 20% off the un-profiled loop, mostly too slow; "
                         "12% after one warm-up step): record with a warm-up step, e.g. schedule(wait=1, warmup=1, active=1)");
  t.step_start_us = step->start;
  t.step_duration_us = step->dur;
  t.first_of_session = synthesized || !detail::follows_recorded_step(c.steps, step->number);
  const double lo = step->start, hi = step->start + step->dur;

  // Operations of the step, nested per thread.
  std::erase_if(c.ops, [&](const Operation& op) { return op.start_us < lo || op.start_us > hi; });
  std::sort(c.ops.begin(), c.ops.end(), [](const Operation& a, const Operation& b) {
    if (a.thread != b.thread) return a.thread < b.thread;
    if (a.start_us != b.start_us) return a.start_us < b.start_us;
    return a.duration_us > b.duration_us;
  });
  detail::link_parents(c.ops);
  t.ops = std::move(c.ops);

  // Forward links: a backward op's sequence number names the forward op that produced it.
  std::unordered_map<std::int64_t, int> forward_by_seq;
  for (int i = 0; i < static_cast<int>(t.ops.size()); ++i)
    if (!t.ops[i].backward && t.ops[i].sequence >= 0 && !forward_by_seq.contains(t.ops[i].sequence))
      forward_by_seq[t.ops[i].sequence] = i;
  for (auto& op : t.ops) {
    if (op.backward && op.sequence >= 0)
      if (auto it = forward_by_seq.find(op.sequence); it != forward_by_seq.end()) op.forward = it->second;
    if (op.backward && op.forward < 0 && op.parent >= 0) op.forward = t.ops[op.parent].forward;
  }

  // Innermost op enclosing a host call: last op on the thread starting at or before it, then up the parents.
  std::map<std::int64_t, std::pair<int, int>> thread_range;
  for (int i = 0; i < static_cast<int>(t.ops.size()); ++i) {
    auto [it, fresh] = thread_range.try_emplace(t.ops[i].thread, i, i + 1);
    if (!fresh) it->second.second = i + 1;
  }
  auto innermost = [&](std::int64_t tid, double ts) {
    auto r = thread_range.find(tid);
    if (r == thread_range.end()) return -1;
    auto first = t.ops.begin() + r->second.first, last = t.ops.begin() + r->second.second;
    auto it = std::upper_bound(first, last, ts, [](double x, const Operation& op) { return x < op.start_us; });
    if (it == first) return -1;
    int i = static_cast<int>(std::prev(it) - t.ops.begin());
    while (i >= 0 && t.ops[i].start_us + t.ops[i].duration_us < ts) i = t.ops[i].parent;
    return i;
  };

  // The step's host calls; a correlation names the call that launched a kernel (all kernels of a CUDA
  // graph share their graph launch's).
  std::unordered_map<std::int64_t, int> call_by_correlation;
  for (auto& call : c.calls) {
    if (call.start_us < lo || call.start_us > hi) continue;
    call.op = innermost(call.thread, call.start_us);
    if (call.correlation >= 0) call_by_correlation.emplace(call.correlation, static_cast<int>(t.calls.size()));
    t.calls.push_back(std::move(call));
  }
  for (const double m : c.marks)
    if (m >= lo && m <= hi) t.marks_us.push_back(m);
  t.python_records = static_cast<double>(std::count_if(c.python_starts.begin(), c.python_starts.end(), [&](double m) { return m >= lo && m <= hi; }));
  for (const auto& o : c.optimizer_steps)
    if (o.start >= lo && o.start <= hi) t.optimizer_steps.push_back({o.name, o.start, o.dur});

  for (auto& k : c.gpu) {
    if (have_launches) {
      auto it = call_by_correlation.find(k.correlation);
      if (it == call_by_correlation.end()) continue;
      k.call = it->second;
      k.op = t.calls[it->second].op;
      k.in_graph = t.calls[k.call].kind == HostCallKind::graph_launch;
    } else if (k.start_us < lo || k.start_us > hi) {
      continue;
    }
    t.kernels.push_back(std::move(k));
  }
  if (t.kernels.empty()) throw make_error(path, t.step_name, "no kernels, memcpys or memsets were launched in this step");
  std::sort(t.kernels.begin(), t.kernels.end(), [](const Kernel& a, const Kernel& b) { return a.start_us < b.start_us; });
  // The same GPU event twice (an exporter that wrote it twice, files joined): one launch cannot run twice
  // at the same moment on the same stream, so the copy is dropped, and said.
  {
    std::vector<bool> copy(t.kernels.size(), false);
    std::size_t copies = 0;
    for (std::size_t i = 1; i < t.kernels.size(); ++i)
      for (std::size_t j = i; j-- > 0 && t.kernels[j].start_us == t.kernels[i].start_us;) {
        const Kernel &a = t.kernels[i], &b = t.kernels[j];
        if (!copy[j] && a.correlation == b.correlation && a.stream == b.stream && a.duration_us == b.duration_us && a.name == b.name) {
          copy[i] = true;
          ++copies;
          break;
        }
      }
    if (copies > 0) {
      std::vector<Kernel> kept;
      kept.reserve(t.kernels.size() - copies);
      for (std::size_t i = 0; i < t.kernels.size(); ++i)
        if (!copy[i]) kept.push_back(std::move(t.kernels[i]));
      t.kernels = std::move(kept);
      t.warnings.push_back(std::to_string(copies) + " GPU events appear twice in the file (same name, correlation, stream and start): each is counted once");
    }
  }
  detail::collectives_from_marks(c, t);
  {  // collectives without a group size: the trace's world size is their number of ranks, else they are unmodelled
    const std::optional<int> world = t.distributed ? t.distributed->world_size : std::nullopt;
    std::size_t unsized = 0;
    for (auto& k : t.kernels)
      if (k.collective && k.collective->ranks == 0) {
        ++unsized;
        if (world) k.collective->ranks = *world;
        else k.collective.reset();
      }
    const std::string n = std::to_string(unsized) + (unsized == 1 ? " collective records" : " collectives record");
    if (unsized > 0 && world)
      t.warnings.push_back(n + " no group size: taken as " + std::to_string(*world) + (*world == 1 ? " rank" : " ranks") +
                           ", from the trace's distributedInfo (its world size; a collective of a smaller process group is taken to span them all)");
    else if (unsized > 0)
      t.warnings.push_back(n + " no group size and the trace gives no world size (distributedInfo): their ranks are unknown, so the collective "
                           "model does not predict them");
  }
  if (!have_launches)
    t.warnings.push_back("no CUDA runtime events: GPU work taken by its start time inside the step, launched as recorded");
  if (c.foreign.events > 0)
    t.warnings.push_back(std::to_string(c.foreign.events) + " events of categories habitat does not know (" + c.foreign.list() + ") were ignored");
  // Host threads are replayed as one chain in time order: say so where two of them issued calls at once.
  {
    double overlap = 0, host = 0, end_other = -1e300, end_same = -1e300;
    std::int64_t last_thread = 0;
    for (const auto& call : t.calls) {
      const double end = call.start_us + call.duration_us;
      host += call.duration_us;
      if (call.thread != last_thread) std::swap(end_other, end_same);
      overlap += std::max(0.0, std::min(end, end_other) - call.start_us);
      end_same = std::max(end_same, end);
      last_thread = call.thread;
    }
    if (overlap > 0.01 * host)
      t.warnings.push_back("CUDA calls of several host threads overlap in time: they are replayed as one thread in time order");
  }

  // A call blocked its thread if it is a synchronization, a synchronous copy, or it returned only after
  // the GPU work it enqueued had finished (an Async copy from pageable memory).
  std::vector<double> work_end(t.calls.size(), -1);
  for (const auto& k : t.kernels)
    if (k.call >= 0) work_end[k.call] = std::max(work_end[k.call], k.start_us + k.duration_us);
  for (std::size_t i = 0; i < t.calls.size(); ++i) {
    HostCall& call = t.calls[i];
    const double end = call.start_us + call.duration_us;
    const bool waited_for_own_work = work_end[i] >= 0 && call.duration_us > 20 && end >= work_end[i] - 1;
    call.blocking = synchronous_by_name(call.name) || waited_for_own_work;
  }
  return t;
}

}  // namespace habitat::kineto
