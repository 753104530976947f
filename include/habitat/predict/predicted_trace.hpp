#pragma once
// A trace predicted on another GPU: per-kernel times, iteration totals, throughput and breakdowns.
#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "habitat/comm/allreduce.hpp"
#include "habitat/concepts.hpp"
#include "habitat/predict/kernel_work.hpp"
#include "habitat/predict/roofline_scaling.hpp"
#include "habitat/predict/wave_scaling.hpp"
#include "habitat/sim/simulator.hpp"
#include "habitat/trace/trace.hpp"

namespace habitat {

struct BreakdownRow {
  std::string key;
  double origin_us = 0;
  double predicted_us = 0;
  int kernels = 0;
};

// Data-parallel training on several GPUs (sim/ddp.hpp): one rank's step is the step.
struct DataParallel {
  std::string plan = "DDP";      // DDP, or FSDP and how it shards
  int world_size = 1, gpus_per_node = 1, nodes = 1;
  std::string link;              // between GPUs of a node: NVLink, PCIe, or given
  double single_gpu_us = 0;      // the same step on one GPU, no DDP
  double comm_us = 0;            // collectives per step
  double exposed_comm_us = 0;    // the part no compute overlaps
  int data_replicas = 0;          // batches per step: N for DDP and FSDP, 1 for tensor parallel (0: world_size)
  std::string collectives = "all-reduce";  // what the communication is, for the output
  std::string counted = "buckets";  // what `buckets` counts: DDP's buckets, FSDP's units, TP's split linears
  int buckets = 0;
  double gradient_bytes = 0;
  double state_bytes_per_gpu = 0;  // FSDP: parameters, gradients, optimizer state and gathered units per GPU (0: not computed)
  double memory_bytes = 0;         // the GPU's memory, where the catalog gives it
  [[nodiscard]] int replicas() const { return data_replicas > 0 ? data_replicas : world_size; }
  // Throughput of the N GPUs over N times one GPU's.
  [[nodiscard]] double scaling_efficiency(double step_us) const {
    return step_us > 0 ? single_gpu_us * replicas() / (step_us * world_size) : 0;
  }
};

struct PredictedTrace {
  std::string device;
  std::optional<DataParallel> data_parallel;  // set when predicted for several GPUs
  double origin_gpu_active_us = 0;
  double gpu_active_us = 0;  // sum of the predicted GPU work
  double iteration_us = 0;   // the simulated step (sim::compose); 0 until composed
  std::optional<sim::Timeline> timeline;  // the simulated step on the destination GPU and host
  std::string host;                       // the destination host the timeline assumes
  std::vector<KernelPrediction> kernels;
  std::vector<BreakdownRow> by_operation, by_method;
  int floored_kernels = 0;   // predictions raised to the destination's roofline bound
  int replaced_kernels = 0;  // non-finite or non-positive predictions answered by roofline scaling instead
  std::string datapath_note;  // FP32 math that runs on TF32 tensor cores here but did not where it was traced (datapath.hpp)
  std::string collective_note;  // NCCL kernels the trace gives no message size for, kept at their recorded time
  std::size_t model_declined_ops = 0;  // operations a learned model covers but declined (outside its training range)
  std::string model_declined_reason;

  // Origin GPU time of the kernels a method predicted (from the by_method breakdown).
  [[nodiscard]] double origin_us(Method m) const {
    for (const auto& r : by_method)
      if (r.key == to_string(m)) return r.origin_us;
    return 0;
  }

  // Share of the origin's GPU time each method predicted, largest first ("roofline 81%, tile 19%"); the
  // by_method rows are already sorted by origin time.
  [[nodiscard]] std::string method_summary() const {
    double total = 0;
    for (const auto& r : by_method) total += r.origin_us;
    std::string s;
    for (const auto& r : by_method) {
      const double pct = total > 0 ? 100 * r.origin_us / total : 0;
      if (pct < 0.5) continue;
      for (const Method m : all_methods)
        if (r.key == to_string(m)) s += (s.empty() ? "" : ", ") + std::string(short_name(m)) + " " + std::to_string(int(std::lround(pct))) + "%";
    }
    return s;
  }
  std::optional<double> throughput;                  // samples per second
  std::optional<double> cost_normalized_throughput;  // samples per dollar
  std::optional<Price> price;                        // the GPU-hour price samples per dollar used, with its date and source
};

namespace detail {
inline std::vector<BreakdownRow> sorted_rows(std::map<std::string, BreakdownRow>& rows) {
  std::vector<BreakdownRow> out;
  for (auto& [k, r] : rows) {
    r.key = k;
    out.push_back(r);
  }
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.origin_us > b.origin_us; });
  return out;
}
}  // namespace detail

// The paper's iteration estimate, a baseline now: the origin's idle time (host-side gaps, profiler
// overhead included) kept constant around the predicted GPU time.
[[nodiscard]] inline double idle_kept_iteration_us(double origin_iteration_us, double origin_gpu_active_us,
                                                   double predicted_gpu_active_us) {
  return std::max(origin_iteration_us - origin_gpu_active_us, 0.0) + predicted_gpu_active_us;
}

// Physics guard on every predictor's answer: a non-finite or non-positive time is replaced by roofline
// scaling's, and no time may fall below the destination's roofline bound (FLOPs at peak, DRAM bytes at
// bandwidth). Both are counted, so a report can say how often a model had to be overruled.
[[nodiscard]] inline KernelPrediction guarded(KernelPrediction kp, const Kernel& k, const KernelWork& w, const Device& origin,
                                             const Device& dest, PredictedTrace& out) {
  if (!std::isfinite(kp.duration_us) || (kp.duration_us <= 0 && k.duration_us > 0)) {
    kp = RooflineScaling{}.predict(k, w, origin, dest);
    ++out.replaced_kernels;
  }
  // A work figure the origin itself could not have done in its recorded time (a metric entry that folded
  // launches of different sizes, an estimate that overcounts) proves itself wrong and sets no floor.
  const bool consistent = work_floor_us(w.floor_flops(), w.bytes, w.precision, origin) <= 1.1 * k.duration_us;
  if (w.source != WorkSource::unknown && k.kind == GpuWorkKind::kernel && consistent) {
    // Measured DRAM bytes were counted under kernel replay with a cold L2, so they overcount like estimates.
    const double floor = work_floor_us(w.floor_flops(), w.bytes, w.precision, dest);
    if (kp.duration_us < floor) {
      kp.duration_us = floor;
      kp.floored = true;
    }
  }
  out.floored_kernels += kp.floored;
  return kp;
}

// Each kernel's operation label ("AddmmBackward0"), as an index into the distinct labels: the same for
// every destination, so computed once per trace.
struct KernelLabels {
  std::vector<std::string> names;
  std::vector<int> of_kernel;  // index into names, per kernel
};

[[nodiscard]] inline KernelLabels kernel_labels(const Trace& t) {
  KernelLabels l;
  std::map<std::string, int> index;
  std::vector<int> of_op(t.ops.size() + 1, -1);  // last slot: kernels with no operation
  l.of_kernel.reserve(t.kernels.size());
  for (const Kernel& k : t.kernels) {
    int& slot = of_op[k.op >= 0 && static_cast<std::size_t>(k.op) < t.ops.size() ? static_cast<std::size_t>(k.op) : t.ops.size()];
    if (slot < 0) {
      auto [it, fresh] = index.try_emplace(operation_label(t, k.op), static_cast<int>(l.names.size()));
      if (fresh) l.names.push_back(it->first);
      slot = it->second;
    }
    l.of_kernel.push_back(slot);
  }
  return l;
}

// Predicts every kernel on the destination: times, their sum (GPU active time) and breakdowns. The
// iteration is composed from them by the simulator (sim::compose), separately. `labels` is
// kernel_labels(t), shared by every destination.
template <class Predictor>
  requires KernelPredictor<Predictor>
[[nodiscard]] PredictedTrace predict_trace(const Trace& t, const std::vector<KernelWork>& work, const KernelLabels& labels,
                                           const Device& origin, const Device& dest, const Predictor& p) {
  PredictedTrace out;
  out.device = dest.name;
  out.origin_gpu_active_us = t.gpu_active_us();
  out.kernels.reserve(t.kernels.size());
  std::vector<BreakdownRow> by_label(labels.names.size());
  std::array<BreakdownRow, std::size(all_methods)> by_method_index{};
  double moved_cudnn_us = 0, moved_matmul_us = 0, unsized_nccl_us = 0, unplaced_collective_us = 0,
         modelled_collective_us = 0;
  std::array<double, 4> fallback_us{};  // by Precision: tensor-core math with no such tensor cores on dest
  for (std::size_t i = 0; i < t.kernels.size(); ++i) {
    const Kernel& k = t.kernels[i];
    std::optional<double> coll;
    if (k.collective) coll = comm::collective_us(k.collective->name, k.collective->bytes, k.collective->ranks, dest);
    // NCCL's kernels without the profiler's annotation (message size, ranks): nothing to model them from, and
    // they are communication, not compute: kept at their recorded time, and said.
    const bool unsized_nccl = !coll && k.kind == GpuWorkKind::kernel && !k.collective && nccl_kernel_name(k.name);
    if (unsized_nccl) unsized_nccl_us += k.duration_us;
    // A collective the model cannot place on the destination (more ranks than its node holds and no network
    // between nodes in the catalog, or a collective it does not know): communication all the same, kept as recorded.
    const bool unplaced = !coll && k.kind == GpuWorkKind::kernel && k.collective;
    if (unplaced) unplaced_collective_us += k.duration_us;
    if (coll) modelled_collective_us += k.duration_us;
    const KernelPrediction kp = coll           ? KernelPrediction{*coll, Method::collective}
                                : unsized_nccl || unplaced ? KernelPrediction{k.duration_us, Method::collective}
                                               : guarded(p.predict(k, work[i], origin, dest), k, work[i], origin, dest, out);
    out.kernels.push_back(kp);
    out.gpu_active_us += kp.duration_us;
    if (!coll && work[i].precision != datapath(work[i], origin, dest))
      (work[i].family == MathFamily::matmul ? moved_matmul_us : moved_cudnn_us) += k.duration_us;
    if (!coll && origin.on_tensor_cores(work[i].precision) && !dest.on_tensor_cores(work[i].precision))
      fallback_us[static_cast<std::size_t>(work[i].precision)] += k.duration_us;
    for (auto* row : {&by_label[static_cast<std::size_t>(labels.of_kernel[i])], &by_method_index[static_cast<std::size_t>(kp.method)]}) {
      row->origin_us += k.duration_us;
      row->predicted_us += kp.duration_us;
      ++row->kernels;
    }
  }
  std::map<std::string, BreakdownRow> by_op, by_method;
  for (std::size_t i = 0; i < by_label.size(); ++i)
    if (by_label[i].kernels > 0) by_op[labels.names[i]] = by_label[i];
  for (const Method m : all_methods)
    if (by_method_index[static_cast<std::size_t>(m)].kernels > 0) by_method[to_string(m)] = by_method_index[static_cast<std::size_t>(m)];
  if (moved_cudnn_us + moved_matmul_us > 0)  // the settings are read only where the note needs them
    out.datapath_note = datapath_note(moved_cudnn_us, moved_matmul_us, out.origin_gpu_active_us, tf32_settings(t));
  if (const std::string f = fallback_note(fallback_us, out.origin_gpu_active_us, dest); !f.empty())
    out.datapath_note += (out.datapath_note.empty() ? "" : "; ") + f;
  // A share of the origin's GPU time, in whole percent, as the notes give it.
  auto pct_of_origin = [&](double us) { return std::to_string(static_cast<int>(100 * us / std::max(out.origin_gpu_active_us, 1e-9) + 0.5)); };
  if (unsized_nccl_us > 0)
    out.collective_note = "NCCL kernels without a recorded message size (" + pct_of_origin(unsized_nccl_us) +
                          "% of the origin's GPU time) are kept at their recorded time; this is one rank's trace, which shows neither the "
                          "message sizes (recent PyTorch records them) nor the other ranks' waits and stragglers";
  auto ms_text = [](double us) {
    char b[32];
    std::snprintf(b, sizeof b, "%.1f ms", us / 1e3);
    return std::string(b);
  };
  // One rank's collective lasts until the slowest rank joins it: its recorded time holds those waits, which the
  // model (message, ranks, links) does not, so a rank trace's step can shrink by all of them.
  if (modelled_collective_us > 0)
    out.collective_note += std::string(out.collective_note.empty() ? "" : "; ") + "collectives (" +
                           pct_of_origin(modelled_collective_us) +
                           "% of the origin's GPU time, " + ms_text(modelled_collective_us) +
                           " recorded) are predicted from their message sizes, ranks and links; their recorded time includes waits on the other "
                           "ranks, which one rank's trace cannot tell apart, and stragglers are not modelled";
  if (unplaced_collective_us > 0)
    out.collective_note += std::string(out.collective_note.empty() ? "" : "; ") + "collectives that the GPU's catalog entry cannot place (their ranks span more nodes than it gives a network for, or the "
                           "collective is not modelled; " +
                           pct_of_origin(unplaced_collective_us) +
                           "% of the origin's GPU time) are kept at their recorded time";
  out.by_operation = detail::sorted_rows(by_op);
  out.by_method = detail::sorted_rows(by_method);
  return out;
}

// One destination: the labels computed here.
template <class Predictor>
  requires KernelPredictor<Predictor>
[[nodiscard]] PredictedTrace predict_trace(const Trace& t, const std::vector<KernelWork>& work, const Device& origin,
                                           const Device& dest, const Predictor& p) {
  return predict_trace(t, work, kernel_labels(t), origin, dest, p);
}

}  // namespace habitat
