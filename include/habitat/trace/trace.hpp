#pragma once
// One training iteration as recorded on the origin GPU: its operations (framework ops with shapes), the
// host's runtime calls, the GPU work they launched (kernels, memcpys, memsets) and the origin device.
#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "habitat/device/device.hpp"
#include "habitat/trace/host_call.hpp"
#include "habitat/trace/recorder.hpp"

namespace habitat {

struct Dim3 {
  std::int64_t x = 1, y = 1, z = 1;
  [[nodiscard]] constexpr std::int64_t count() const { return x * y * z; }
};

enum class GpuWorkKind { kernel, memcpy, memset };

// Measured counters of one kernel (attached from metric files; Kineto traces carry none).
struct KernelMetrics {
  double dram_bytes = 0;  // read + written at DRAM (after L2)
  double flops = 0;       // all precisions
  Precision precision = Precision::fp32;  // of the work that dominates: picks the ridge point
};

// A collective's kernel (NCCL), as torch.profiler annotates it: which collective, its message, its ranks.
struct Collective {
  std::string name;  // "allreduce", "broadcast", "allgather", "reduce_scatter", ...
  double bytes = 0;
  int ranks = 0;
};

// NCCL's kernels by their names (ncclKernel_* before NCCL 2.19, ncclDevKernel_* since): communication, whether or
// not the trace says which collective.
[[nodiscard]] inline bool nccl_kernel_name(std::string_view name) { return name.starts_with("ncclKernel") || name.starts_with("ncclDevKernel"); }

struct Kernel {
  std::string name;
  GpuWorkKind kind = GpuWorkKind::kernel;
  Dim3 grid, block;
  int registers_per_thread = 0;
  long shared_mem_bytes = 0;
  double start_us = 0, duration_us = 0;
  std::int64_t stream = 0;
  std::int64_t correlation = 0;
  double bytes = 0;            // memcpy/memset payload
  std::string copy_kind;       // memcpy: "HtoD", "DtoH", "DtoD", ...
  int op = -1;                 // innermost enclosing operation (index into Trace::ops), -1 if none
  int call = -1;               // the host call that launched it (index into Trace::calls), -1 if unknown
  bool in_graph = false;       // launched by a CUDA graph: no framework op of its own, its launch sometimes 1x1
  // grid and block are the launch's (false: not recorded, as on ROCm, where they stay 1x1x1 and the kernel is taken
  // to spread over the GPU)
  bool launch_recorded = true;
  std::optional<KernelMetrics> metrics;
  std::optional<Collective> collective;

  [[nodiscard]] std::int64_t blocks() const { return grid.count(); }
  [[nodiscard]] std::int64_t threads_per_block() const { return block.count(); }
};

struct TensorArg {
  std::vector<std::int64_t> shape;  // empty for scalars and lists whose shapes were not recorded
  std::string dtype;                // as the framework spells it: "float", "c10::BFloat16", "TensorList", ...
  std::string value;                // concrete value of scalar arguments ("[2, 2]", "True"), else empty
  std::vector<std::int64_t> strides;  // one per dimension of `shape` where the profiler recorded them, else empty
};

struct Operation {
  std::string name;
  std::vector<TensorArg> inputs;
  double start_us = 0, duration_us = 0;
  std::int64_t thread = 0;
  std::int64_t sequence = -1;  // autograd sequence number; links backward ops to forward ops
  bool backward = false;
  int parent = -1;   // enclosing operation on the same thread
  int forward = -1;  // for backward ops: the forward op with the same sequence number
};

// Length of the union of [start, start + duration) intervals: GPU busy time when they are kernels.
template <class Range, class Start, class Duration>
[[nodiscard]] double union_us(const Range& items, Start start, Duration duration) {
  std::vector<std::pair<double, double>> iv;
  for (const auto& x : items) iv.emplace_back(start(x), start(x) + duration(x));
  std::sort(iv.begin(), iv.end());
  double total = 0, lo = 0, hi = -1e300;
  for (const auto& [a, b] : iv) {
    if (a > hi) {
      if (hi > lo) total += hi - lo;
      lo = a;
      hi = b;
    } else {
      hi = std::max(hi, b);
    }
  }
  if (hi > lo) total += hi - lo;
  return total;
}

// Which rank of a torch.distributed job recorded the trace: the trace's "distributedInfo", as far as it says.
struct DistributedInfo {
  std::optional<int> rank, world_size;  // some traces give only the rank
  std::string backend;                  // "nccl", "gloo", ...; empty if not given
};

struct Trace {
  std::string source;        // file it came from
  Recorder recorder = Recorder::profiler;
  std::string device_name;   // origin GPU as the trace names it
  std::optional<Device> device_props;  // what the trace says about the origin (SMs, limits), if anything
  std::optional<DistributedInfo> distributed;  // the recording rank and world size, if the trace gives them
  std::string step_name;
  double step_start_us = 0, step_duration_us = 0;
  std::vector<Operation> ops;
  std::vector<Kernel> kernels;     // sorted by start time
  std::vector<HostCall> calls;     // runtime and driver calls of the step, sorted by start time
  std::vector<double> marks_us;    // starts of the step's other profiler records (user annotations)
  double python_records = 0;       // the step's Python function records (with_stack=True; 0 without): the profiler's cost
  struct Annotation {
    std::string name;
    double start_us = 0, duration_us = 0;
  };
  std::vector<Annotation> optimizer_steps;  // the step's Optimizer.step# records: name ("AdamW.step") and span
  int profiled_steps = 0;          // ProfilerStep annotations in the file
  // Whether the step read is the first its profiler session recorded (no recorded step numbered just before it), as a
  // schedule with one active step always records: it pays the session's per-step start, which a later active step
  // does not (sim::StepCounts::first_steps).
  bool first_of_session = true;
  double step_period_us = 0;       // median spacing of consecutive steps' starts (0: fewer than two steps)
  std::vector<std::string> warnings;  // what the reader had to assume

  // Sum of GPU work durations (Lin et al.'s GPU active time: overlap on streams counts twice).
  [[nodiscard]] double gpu_active_us() const {
    double t = 0;
    for (const auto& k : kernels) t += k.duration_us;
    return t;
  }
  // Time the GPU was doing anything: the union of GPU work over streams.
  [[nodiscard]] double gpu_busy_us() const {
    return union_us(kernels, [](const Kernel& k) { return k.start_us; }, [](const Kernel& k) { return k.duration_us; });
  }
  // The profiled step as recorded: from its start on the host to the end of its last GPU work (or of the
  // step, if later). Profiler overhead included; the simulator predicts what a user would measure.
  [[nodiscard]] double iteration_us() const {
    double end = step_start_us + step_duration_us;
    for (const auto& k : kernels) end = std::max(end, k.start_us + k.duration_us);
    return end - step_start_us;
  }
};



// The outermost operation above `op` on its thread (-1 stays -1).
[[nodiscard]] inline int top_level_op(const Trace& t, int op) {
  while (op >= 0 && t.ops[op].parent >= 0) op = t.ops[op].parent;
  return op;
}

// The outermost framework operation above an op, named as users know it ("AddmmBackward0", not the
// autograd engine's wrapper).
[[nodiscard]] inline std::string operation_label(const Trace& t, int op) {
  op = top_level_op(t, op);
  if (op < 0) return "(no operation)";
  std::string name = t.ops[op].name;
  constexpr std::string_view wrapper = "autograd::engine::evaluate_function: ";
  if (name.starts_with(wrapper)) name.erase(0, wrapper.size());
  return name;
}

}  // namespace habitat
