#pragma once
// What DistributedDataParallel would reduce, read from a one-GPU trace: each parameter's gradient (size,
// dtype, and the record after which it is ready), DDP's buckets over them, and the buffers it broadcasts
// every forward. The gradients come from the `torch::autograd::AccumulateGrad` records, whose input is the
// gradient (recorded with record_shapes=True), in the order the backward pass produces them: the order DDP
// rebuilds its buckets in after the first iteration, so the steady state's buckets.
#include <algorithm>
#include <cmath>
#include <map>
#include <string>
#include <vector>

#include "habitat/error.hpp"
#include "habitat/ops/dtype.hpp"
#include "habitat/trace/trace.hpp"

namespace habitat::comm {

struct Gradient {
  int ready_op = -1;  // the record after whose end the gradient is ready (AccumulateGrad's autograd node)
  int accumulate_op = -1;  // the AccumulateGrad record itself
  double bytes = 0;
  std::string dtype;
  std::vector<std::int64_t> shape;  // the parameter's
};

struct Bucket {
  double bytes = 0;
  std::vector<int> gradients;  // indices into DdpPlan::gradients, in ready order
};

struct BufferGroup {  // buffers of one dtype, broadcast as one flat tensor
  std::string dtype;
  double bytes = 0;
  int count = 0;
};

// DDP's bucket limits: the first bucket small so that communication starts early, the rest `cap`.
struct BucketCaps {
  double first_bytes = 1024.0 * 1024;  // torch.distributed's _DEFAULT_FIRST_BUCKET_BYTES
  double cap_bytes = 25.0 * 1024 * 1024;  // bucket_cap_mb=25
};

struct DdpPlan {
  std::vector<Gradient> gradients;
  std::vector<Bucket> buckets;
  std::vector<BufferGroup> buffers;
  bool already_ddp = false;  // the trace is itself one rank of a DDP step
  [[nodiscard]] double gradient_bytes() const {
    double s = 0;
    for (const auto& g : gradients) s += g.bytes;
    return s;
  }
};

inline constexpr std::string_view accumulate_grad_op = "torch::autograd::AccumulateGrad";
inline constexpr std::string_view ddp_hook_op = "torch::distributed::reducer::mul_out";

// DDP's assignment of gradients (in ready order) to buckets: one open bucket per dtype, closed once it
// reaches its limit; the limits go from the first bucket's to the cap, per dtype; what is left open at the
// end becomes the last buckets.
[[nodiscard]] inline std::vector<Bucket> assign_buckets(const std::vector<Gradient>& grads, const BucketCaps& caps) {
  std::vector<Bucket> done;
  std::map<std::string, std::pair<Bucket, int>> open;  // dtype -> (bucket, buckets closed so far)
  for (int i = 0; i < static_cast<int>(grads.size()); ++i) {
    auto& [b, closed] = open[grads[i].dtype];
    b.bytes += grads[i].bytes;
    b.gradients.push_back(i);
    if (b.bytes >= (closed == 0 ? caps.first_bytes : caps.cap_bytes)) {
      done.push_back(std::move(b));
      b = {};
      ++closed;
    }
  }
  for (auto& [dtype, ob] : open)
    if (!ob.first.gradients.empty()) done.push_back(std::move(ob.first));
  return done;
}

[[nodiscard]] inline double elements(const std::vector<std::int64_t>& shape) {
  double n = 1;
  for (const auto d : shape) n *= static_cast<double>(d);
  return n;
}

[[nodiscard]] inline DdpPlan ddp_plan(const Trace& t, const BucketCaps& caps = {}) {
  if (!(caps.first_bytes > 0) || !(caps.cap_bytes > 0) || !std::isfinite(caps.cap_bytes) || !std::isfinite(caps.first_bytes))
    throw make_error(t.source, "--bucket-mb", "bucket sizes must be positive and finite");
  DdpPlan plan;
  std::vector<int> order;
  for (int i = 0; i < static_cast<int>(t.ops.size()); ++i) {
    if (t.ops[i].name == ddp_hook_op) plan.already_ddp = true;
    if (t.ops[i].name == accumulate_grad_op) order.push_back(i);
  }
  for (const auto& k : t.kernels)
    if (nccl_kernel_name(k.name)) plan.already_ddp = true;
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return t.ops[a].start_us < t.ops[b].start_us; });
  for (const int i : order) {
    const Operation& op = t.ops[i];
    if (op.inputs.empty() || op.inputs[0].shape.empty())
      throw make_error(t.source, op.name, "the gradient's shape is not recorded: record the trace with torch.profiler(record_shapes=True)");
    Gradient g;
    g.dtype = op.inputs[0].dtype.empty() ? "float" : op.inputs[0].dtype;
    g.bytes = elements(op.inputs[0].shape) * ops::dtype_bytes(g.dtype);
    g.shape = op.inputs[0].shape;
    g.accumulate_op = i;
    g.ready_op = op.parent >= 0 && t.ops[op.parent].name.starts_with("autograd::engine::evaluate_function") ? op.parent : i;
    plan.gradients.push_back(std::move(g));
  }
  if (plan.gradients.empty())
    throw make_error(t.source, t.step_name, "no AccumulateGrad records: the step has no backward pass to reduce (a training step is needed)");
  plan.buckets = assign_buckets(plan.gradients, caps);
  // Buffers: BatchNorm's running statistics (two per layer) and its num_batches_tracked (one int64 each);
  // other modules' buffers leave no trace in the records.
  BufferGroup stats{"float", 0, 0}, counts{"long int", 0, 0};
  for (const auto& op : t.ops) {
    if (op.name != "aten::batch_norm" || op.inputs.size() < 5 || op.inputs[3].shape.empty() || op.inputs[4].shape.empty()) continue;
    stats.bytes += (elements(op.inputs[3].shape) + elements(op.inputs[4].shape)) * ops::dtype_bytes(op.inputs[3].dtype.empty() ? "float" : op.inputs[3].dtype);
    stats.count += 2;
    counts.bytes += 8;
    counts.count += 1;
  }
  if (stats.count) plan.buffers = {stats, counts};
  return plan;
}

}  // namespace habitat::comm
