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
#include <map>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "habitat/error.hpp"
#include "habitat/kineto/event_stream.hpp"
#include "habitat/ops/dtype.hpp"
#include "habitat/trace/trace.hpp"

namespace habitat::kineto {

struct ReadOptions {
  std::optional<long> step;  // ProfilerStep number; default: the last step that launched GPU work
  Progress progress;         // called as the file is read (bytes of the file so far)
};

namespace detail {

namespace json = boost::json;

// Kineto renamed categories and keys over the years; accept both spellings.
enum class Category { cpu_op, annotation, launch, kernel, memcpy, memset, other };

inline Category category_of(std::string_view cat) {
  if (cat == "cpu_op" || cat == "Operator") return Category::cpu_op;
  if (cat == "user_annotation" || cat == "User annotation") return Category::annotation;
  if (cat == "cuda_runtime" || cat == "Runtime" || cat == "cuda_driver" || cat == "Driver") return Category::launch;
  if (cat == "kernel" || cat == "Kernel") return Category::kernel;
  if (cat == "gpu_memcpy" || cat == "Memcpy") return Category::memcpy;
  if (cat == "gpu_memset" || cat == "Memset") return Category::memset;
  return Category::other;
}

inline const json::value* field(const json::object& o, std::initializer_list<std::string_view> names) {
  for (auto n : names)
    if (const auto* v = o.if_contains(n)) return v;
  return nullptr;
}

// A finite number (quoted or not); NaN, infinities and numbers beyond double's range are not numbers here.
inline std::optional<double> as_number(const json::value* v) {
  if (!v) return std::nullopt;
  std::optional<double> x;
  if (v->is_double()) x = v->get_double();
  else if (v->is_int64()) x = static_cast<double>(v->get_int64());
  else if (v->is_uint64()) x = static_cast<double>(v->get_uint64());
  else if (v->is_string()) {  // some exporters quote numbers
    try {
      x = std::stod(std::string(v->get_string()));
    } catch (...) {
      return std::nullopt;
    }
  }
  if (x && !std::isfinite(*x)) return std::nullopt;
  return x;
}

// A whole number within [lo, hi], for fields that become integers; outside, the cast would be undefined.
inline std::optional<std::int64_t> as_whole(const json::value* v, double lo, double hi) {
  const auto x = as_number(v);
  if (!x || *x < lo || *x > hi) return std::nullopt;
  return static_cast<std::int64_t>(*x);
}

// pid/tid are numbers or strings; fold strings (and numbers beyond 2^62) into a stable number.
inline std::int64_t as_id(const json::value* v) {
  if (!v) return 0;
  if (auto n = as_whole(v, -0x1p62, 0x1p62)) return *n;
  if (v->is_string()) return static_cast<std::int64_t>(std::hash<std::string_view>{}(v->get_string()));
  if (auto x = as_number(v)) return static_cast<std::int64_t>(std::hash<double>{}(*x) >> 2);
  return 0;
}

// Launch dimensions within CUDA's limits (grid x < 2^31, y and z < 2^16; at most 1024 threads a block).
inline std::optional<Dim3> as_dim3(const json::value* v, bool block) {
  Dim3 d;
  if (!v || !v->is_array()) return d;
  const auto& a = v->get_array();
  std::int64_t* out[] = {&d.x, &d.y, &d.z};
  for (std::size_t i = 0; i < 3 && i < a.size(); ++i) {
    const double hi = block ? 1024 : i == 0 ? 2147483647.0 : 65535;
    if (as_number(&a[i]) && !as_whole(&a[i], 0, hi)) return std::nullopt;
    if (auto n = as_whole(&a[i], 0, hi)) *out[i] = std::max<std::int64_t>(1, *n);
  }
  if (block && d.count() > 1024) return std::nullopt;
  return d;
}

struct RawStep {
  long number;
  double start, dur;
};

struct Collector {
  std::string path;
  std::vector<RawStep> steps;
  std::vector<HostCall> calls;  // every runtime and driver call of the file
  std::vector<double> marks;    // user annotations other than steps
  std::vector<Kernel> gpu;
  std::vector<Operation> ops;
  std::vector<json::object> device_props;
  std::size_t events = 0;
  std::map<std::string, std::size_t> foreign;  // complete events of categories nothing here reads

  // Categories Kineto writes that habitat does not need (Python stacks, GPU-side step markers, sync events).
  static bool known_elsewhere(std::string_view cat) {
    for (std::string_view k : {"python_function", "gpu_user_annotation", "Trace", "cuda_profiler_range", "overhead", "cuda_sync",
                               "Python function", "ac2g", "fwdbwd"})
      if (cat == k) return true;
    return false;
  }

  void operator()(Section s, const json::value& v) {
    if (!v.is_object()) return;
    const json::object& e = v.get_object();
    if (s == Section::device_properties) {
      device_props.push_back(e);
      return;
    }
    ++events;
    const auto* ph = e.if_contains("ph");
    const auto* cat = e.if_contains("cat");
    if (!ph || !ph->is_string() || ph->get_string() != "X" || !cat || !cat->is_string()) return;
    const Category c = category_of(cat->get_string());
    if (c == Category::other) {
      if (!known_elsewhere(cat->get_string())) ++foreign[std::string(cat->get_string())];
      return;
    }
    const auto ts = as_number(e.if_contains("ts"));
    const auto dur = as_number(e.if_contains("dur"));
    const auto* name = e.if_contains("name");
    const std::string where = "event #" + std::to_string(events);
    if (!ts || !dur || !name || !name->is_string())
      throw make_error(path, where, "complete event without a finite numeric 'ts' and 'dur', or without a string 'name'");
    static const json::object empty;
    const json::object& args = e.contains("args") && e.at("args").is_object() ? e.at("args").get_object() : empty;
    const auto correlation = as_whole(field(args, {"correlation"}), -0x1p62, 0x1p62);
    switch (c) {
      case Category::annotation: {
        const std::string_view n = name->get_string();
        if (n.starts_with("ProfilerStep#")) {
          try {
            steps.push_back({std::stol(std::string(n.substr(13))), *ts, *dur});
          } catch (...) {
            throw make_error(path, where, "cannot read the step number of '" + std::string(n) + "'");
          }
        } else {
          marks.push_back(*ts);
        }
        break;
      }
      case Category::launch: {
        if (*dur < 0) throw make_error(path, where, "negative duration");
        HostCall call;
        call.name = std::string(name->get_string());
        call.kind = host_call_kind(call.name);
        call.start_us = *ts;
        call.duration_us = *dur;
        call.thread = as_id(e.if_contains("tid"));
        call.correlation = correlation.value_or(-1);
        calls.push_back(std::move(call));
        break;
      }
      case Category::cpu_op: ops.push_back(make_op(name->get_string(), *ts, *dur, e, args)); break;
      case Category::kernel:
      case Category::memcpy:
      case Category::memset: {
        if (!correlation) throw make_error(path, where, "GPU event '" + std::string(name->get_string()) + "' has no 'correlation'");
        Kernel k;
        k.name = std::string(name->get_string());
        k.kind = c == Category::kernel ? GpuWorkKind::kernel : c == Category::memcpy ? GpuWorkKind::memcpy : GpuWorkKind::memset;
        k.start_us = *ts;
        k.duration_us = *dur;
        if (*dur < 0) throw make_error(path, where, "negative duration");
        k.correlation = *correlation;
        k.stream = as_id(field(args, {"stream"}));
        const auto grid = as_dim3(field(args, {"grid"}), false), block = as_dim3(field(args, {"block"}), true);
        if (!grid || !block) throw make_error(path, where, "launch dimensions beyond CUDA's limits");
        k.grid = *grid;
        k.block = *block;
        // Limits with room to spare: 255 registers a thread, 228 KiB of shared memory a block on Hopper.
        const auto* regs = field(args, {"registers per thread"});
        const auto* smem = field(args, {"shared memory"});
        const auto* bytes = field(args, {"bytes"});
        if (regs && !as_whole(regs, 0, 65536)) throw make_error(path, where, "'registers per thread' is not a count from 0 to 65536");
        if (smem && !as_whole(smem, 0, 1 << 24)) throw make_error(path, where, "'shared memory' is not a byte count from 0 to 16 MiB");
        if (bytes && !as_whole(bytes, 0, 0x1p62)) throw make_error(path, where, "'bytes' is not a non-negative byte count");
        k.registers_per_thread = static_cast<int>(as_whole(regs, 0, 65536).value_or(0));
        k.shared_mem_bytes = static_cast<long>(as_whole(smem, 0, 1 << 24).value_or(0));
        k.bytes = as_number(bytes).value_or(0);
        if (k.kind == GpuWorkKind::memcpy) {
          // "Memcpy HtoD (Pageable -> Device)" -> "HtoD"
          const auto sp = k.name.find(' ');
          k.copy_kind = sp == std::string::npos ? "" : k.name.substr(sp + 1, k.name.find(' ', sp + 1) - sp - 1);
        }
        if (const auto* coll = field(args, {"Collective name"}); coll && coll->is_string()) {
          // NCCL's kernels: the collective model predicts them from their message and ranks.
          const auto* nelems = field(args, {"In msg nelems"});
          const auto* ranks = field(args, {"Group size"});
          const auto* dtype = field(args, {"dtype"});
          const auto n = as_whole(nelems, 0, 0x1p60);
          const auto r = as_whole(ranks, 1, 1 << 20);
          if (n && r)
            k.collective = Collective{std::string(coll->get_string()),
                                      *n * ops::dtype_bytes(dtype && dtype->is_string() ? std::string_view(dtype->get_string()) : "Float"),
                                      static_cast<int>(*r)};
        }
        if (c == Category::kernel && (k.block.count() <= 0 || !field(args, {"grid"}) || !field(args, {"block"})))
          throw make_error(path, where, "kernel '" + k.name.substr(0, 80) + "' has no 'grid' or 'block'");
        gpu.push_back(std::move(k));
        break;
      }
      default: break;
    }
  }

  static Operation make_op(std::string_view name, double ts, double dur, const json::object& e, const json::object& args) {
    Operation op;
    op.name = std::string(name);
    op.start_us = ts;
    op.duration_us = dur;
    op.thread = as_id(e.if_contains("tid"));
    op.sequence = as_whole(field(args, {"Sequence number", "sequence number", "seq"}), -1, 0x1p62).value_or(-1);
    op.backward = name.find("Backward") != std::string_view::npos || name.starts_with("autograd::engine::evaluate_function");
    const auto* dims = field(args, {"Input Dims", "Input dims", "input_dims"});
    const auto* types = field(args, {"Input type", "Input types", "input_type"});
    const auto* values = field(args, {"Concrete Inputs", "concrete inputs"});
    const std::size_t n = std::max({dims && dims->is_array() ? dims->get_array().size() : 0,
                                    types && types->is_array() ? types->get_array().size() : 0});
    op.inputs.resize(n);
    for (std::size_t i = 0; i < n; ++i) {
      TensorArg& t = op.inputs[i];
      if (dims && dims->is_array() && i < dims->get_array().size() && dims->get_array()[i].is_array())
        for (const auto& d : dims->get_array()[i].get_array())
          if (auto x = as_whole(&d, 0, 0x1p62)) t.shape.push_back(*x);
      if (types && types->is_array() && i < types->get_array().size() && types->get_array()[i].is_string())
        t.dtype = std::string(types->get_array()[i].get_string());
      if (values && values->is_array() && i < values->get_array().size() && values->get_array()[i].is_string())
        t.value = std::string(values->get_array()[i].get_string());
    }
    return op;
  }
};

inline std::optional<Device> origin_from_properties(const std::vector<json::object>& props) {
  if (props.empty()) return std::nullopt;
  const json::object& p = props.front();
  // Counts beyond what an int holds are not a GPU's: taken as missing (the catalog's figures then apply).
  auto num = [&](std::string_view k) -> std::optional<double> {
    if (auto x = as_whole(p.if_contains(k), 0, 2147483647.0)) return static_cast<double>(*x);
    return std::nullopt;
  };
  Device d;
  if (const auto* n = p.if_contains("name"); n && n->is_string()) d.name = std::string(n->get_string());
  d.cc_major = static_cast<int>(num("computeMajor").value_or(0));
  d.cc_minor = static_cast<int>(num("computeMinor").value_or(0));
  d.sms = static_cast<int>(num("numSms").value_or(0));
  d.memory_gib = static_cast<double>(as_whole(p.if_contains("totalGlobalMem"), 0, 0x1p62).value_or(0)) / (1024.0 * 1024 * 1024);
  auto& l = d.limits;
  l.max_threads_per_block = static_cast<int>(num("maxThreadsPerBlock").value_or(l.max_threads_per_block));
  l.max_threads_per_sm = static_cast<int>(num("maxThreadsPerMultiprocessor").value_or(l.max_threads_per_sm));
  l.regs_per_block = static_cast<int>(num("regsPerBlock").value_or(l.regs_per_block));
  l.regs_per_sm = static_cast<int>(num("regsPerMultiprocessor").value_or(l.regs_per_sm));
  l.warp_size = static_cast<int>(num("warpSize").value_or(l.warp_size));
  l.shared_mem_per_block = static_cast<long>(num("sharedMemPerBlock").value_or(l.shared_mem_per_block));
  l.shared_mem_per_sm = static_cast<long>(num("sharedMemPerMultiprocessor").value_or(l.shared_mem_per_sm));
  l.shared_mem_per_block_optin = static_cast<long>(num("sharedMemPerBlockOptin").value_or(l.shared_mem_per_block_optin));
  // Kineto does not export the reserved amount; every GPU since compute capability 8.0 reserves 1 KiB.
  l.reserved_shared_mem_per_block = static_cast<long>(num("reservedSharedMemPerBlock").value_or(d.cc_major >= 8 ? 1024 : 0));
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

}  // namespace detail

[[nodiscard]] inline Trace read_trace(const std::string& path, const ReadOptions& options = {}) {
  detail::Collector c;
  c.path = path;
  stream_elements(path, [&](Section s, const boost::json::value& v) { c(s, v); }, options.progress);

  Trace t;
  t.source = path;
  t.device_props = detail::origin_from_properties(c.device_props);
  if (t.device_props) t.device_name = t.device_props->name;

  if (c.steps.empty())
    throw make_error(path, "steps", "no 'ProfilerStep#N' annotation: record with torch.profiler and call prof.step() once per iteration");
  std::sort(c.steps.begin(), c.steps.end(), [](const auto& a, const auto& b) { return a.number < b.number; });
  t.profiled_steps = static_cast<int>(c.steps.size());
  std::sort(c.calls.begin(), c.calls.end(), [](const HostCall& a, const HostCall& b) { return a.start_us < b.start_us; });
  // Launch times, sorted: a step launched GPU work if one falls in its window. Without runtime events
  // (some exporters drop them) kernels are taken by their GPU start instead.
  std::vector<double> launch_ts;
  for (const auto& call : c.calls)
    if (call.correlation >= 0 && call.kind != HostCallKind::other && call.kind != HostCallKind::sync) launch_ts.push_back(call.start_us);
  const bool have_launches = !launch_ts.empty();
  if (!have_launches)
    for (const auto& k : c.gpu) launch_ts.push_back(k.start_us);
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
      throw make_error(path, "steps", "no ProfilerStep#" + std::to_string(*options.step) + " (the trace has " + have + ")");
    }
  } else {
    for (auto it = c.steps.rbegin(); it != c.steps.rend() && !step; ++it)
      if (launched_in(*it)) step = &*it;
    if (!step) throw make_error(path, "steps", "no ProfilerStep launched any GPU work (a CPU-only trace?)");
  }
  t.step_name = "ProfilerStep#" + std::to_string(step->number);
  t.step_start_us = step->start;
  t.step_duration_us = step->dur;
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
  if (!have_launches)
    t.warnings.push_back("no CUDA runtime events: GPU work taken by its start time inside the step, launched as recorded");
  if (!c.foreign.empty()) {
    std::string list;
    std::size_t n = 0;
    for (const auto& [cat, count] : c.foreign) {
      n += count;
      if (list.size() < 80) list += (list.empty() ? "'" : ", '") + cat.substr(0, 40) + "'";
    }
    t.warnings.push_back(std::to_string(n) + " events of categories habitat does not know (" + list + ") were ignored");
  }
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
