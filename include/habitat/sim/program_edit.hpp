#pragma once
// Editing a one-GPU step program into a parallel plan's (DDP, FSDP): operations and kernels appended to the
// trace (their times simulated, not recorded), host work inserted where a moment of the trace falls, and
// the inserted items merged into the program in order. Every plan in sim/ builds its step with this.
#include <algorithm>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "habitat/sim/step_program.hpp"
#include "habitat/trace/trace.hpp"

namespace habitat::sim {

// The shortest elementwise kernel: DDP's copies of small gradients took 1.1 us (median) on the H200s. No
// kernel a plan adds or shrinks runs shorter.
inline constexpr double ddp_small_kernel_us = 1.1;

// The kernels whose launch falls in [from_us, to_us] (a kernel without a launch: its start), e.g. the optimizer's.
[[nodiscard]] inline std::vector<int> kernels_launched_in(const Trace& t, double from_us, double to_us) {
  std::vector<int> out;
  for (int k = 0; k < static_cast<int>(t.kernels.size()); ++k) {
    const Kernel& kk = t.kernels[k];
    const double launched = kk.call >= 0 ? t.calls[kk.call].start_us : kk.start_us;
    if (launched >= from_us && launched <= to_us) out.push_back(k);
  }
  return out;
}

// The moment of the trace a host item stands for: its call's start, else its first kernel's launch.
[[nodiscard]] inline double item_time(const Trace& t, const StepProgram& p, const HostItem& item) {
  return item.call >= 0 ? t.calls[item.call].start_us
                        : (item.kernels.empty() ? t.step_start_us : t.kernels[item.kernels.front()].start_us - p.launch_latency_us);
}

class ProgramEdit {
 public:
  Trace trace;                   // the one-GPU trace with the plan's operations and kernels appended
  StepProgram program;           // with the plan's host work inserted (after merge())
  std::vector<double> added_us;  // durations of the appended kernels, in order
  std::vector<double> kernel_scale;  // per one-GPU kernel: the share of its work left on a rank (1: all of it)
  std::int64_t compute_stream = 0;  // PyTorch's current stream: the step's last kernel's (cuDNN's side streams are not it)

  ProgramEdit(const Trace& t, const StepProgram& p)
      : trace(t), program(p), kernel_scale(t.kernels.size(), 1.0), base_kernels_(static_cast<int>(t.kernels.size())) {
    program.comm.assign(base_kernels_, 0);
    if (!t.kernels.empty()) compute_stream = t.kernels.back().stream;
    for (const auto& k : t.kernels) next_stream_ = std::max(next_stream_, k.stream + 1);
    for (const auto& item : p.items) item_time_.push_back(item_time(t, p, item));
  }

  // A stream no kernel of the trace uses (NCCL's, a plan's copy stream).
  std::int64_t new_stream() { return next_stream_++; }

  int add_op(std::string name) {
    Operation op;
    op.name = std::move(name);
    trace.ops.push_back(std::move(op));
    return static_cast<int>(trace.ops.size()) - 1;
  }

  // A communication kernel carries its collective (name, bytes, ranks): what a Chakra graph writes for it.
  int add_kernel(std::string name, std::int64_t stream, int op, double us, bool is_comm, std::optional<Collective> collective = {}) {
    Kernel k;
    k.name = std::move(name);
    k.stream = stream;
    k.op = op;
    k.collective = std::move(collective);
    k.start_us = k.duration_us = 0;  // not recorded: simulated
    trace.kernels.push_back(std::move(k));
    added_us.push_back(us);
    program.comm.push_back(is_comm ? 1 : 0);
    program.waits_for.emplace_back();
    return static_cast<int>(trace.kernels.size()) - 1;
  }

  void wait(int kernel, std::vector<int> on) { program.waits_for[kernel] = std::move(on); }

  // Where in the host program a moment of the trace falls: before the first item that starts after it.
  [[nodiscard]] int position(double time) const {
    return static_cast<int>(std::upper_bound(item_time_.begin(), item_time_.end(), time) - item_time_.begin());
  }
  // The first item that launches GPU work (the step's first GPU work follows it).
  [[nodiscard]] int first_gpu_item() const {
    int first = 0;
    while (first < static_cast<int>(program.items.size()) && program.items[first].kernels.empty()) ++first;
    return first;
  }

  // Host work of `us` (on the destination host) before position `pos`, launching `kernels`. Items at one
  // position stay in the order inserted.
  void insert(int pos, double us, std::vector<int> kernels) {
    HostItem item;
    item.work_us = us;
    item.by_type[static_cast<int>(HostTime::between_launches)] = us;
    item.kernels = std::move(kernels);
    inserts_.emplace(pos, std::move(item));
  }

  // Merges the inserted items into the program (once, after the last insert).
  void merge() {
    std::vector<HostItem> merged;
    merged.reserve(program.items.size() + inserts_.size());
    auto it = inserts_.begin();
    for (int i = 0; i <= static_cast<int>(program.items.size()); ++i) {
      for (; it != inserts_.end() && it->first == i; ++it) {
        program.host_us += it->second.work_us;
        for (int k = 0; k < 5; ++k) program.by_type[k] += it->second.by_type[k];
        merged.push_back(it->second);
      }
      if (i < static_cast<int>(program.items.size())) merged.push_back(program.items[i]);
    }
    program.items = std::move(merged);
    inserts_.clear();
  }

  // The edited step's kernel durations: the one-GPU kernels' (predicted) times scaled to a rank's share of
  // their work, then the appended kernels'.
  [[nodiscard]] std::vector<double> durations(std::vector<double> one_gpu) const {
    for (std::size_t k = 0; k < one_gpu.size() && k < kernel_scale.size(); ++k)
      if (kernel_scale[k] != 1.0) one_gpu[k] = std::max(std::min(one_gpu[k], ddp_small_kernel_us), one_gpu[k] * kernel_scale[k]);
    one_gpu.insert(one_gpu.end(), added_us.begin(), added_us.end());
    return one_gpu;
  }
  [[nodiscard]] int base_kernels() const { return base_kernels_; }

 private:
  int base_kernels_ = 0;
  std::int64_t next_stream_ = 1;
  std::vector<double> item_time_;
  std::multimap<int, HostItem> inserts_;
};

}  // namespace habitat::sim
