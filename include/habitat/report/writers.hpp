#pragma once
// Output of predictions and evaluations as a table (people), JSON (habitat.prediction/1) or CSV.
#include <boost/json.hpp>

#include <algorithm>
#include <cstdio>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "habitat/detail/json_text.hpp"
#include "habitat/detail/csv.hpp"
#include "habitat/studies/evaluate.hpp"
#include "habitat/studies/gamma_study.hpp"
#include "habitat/report/whatif_summary.hpp"
#include "habitat/sim/compose.hpp"
#include "habitat/trace/trace.hpp"

namespace habitat::report {

struct OriginSummary {
  std::string device;
  double iteration_us = 0, gpu_active_us = 0;  // iteration: un-profiled, simulated with the trace's own kernel times
  std::optional<sim::OriginTimeline> simulated;
  std::optional<DistributedInfo> distributed;  // the trace's, as read (Trace::distributed)
};

// The recording rank as the trace's distributedInfo gives it: "rank 0 of 8 (distributedInfo, nccl)".
[[nodiscard]] inline std::string distributed_text(const DistributedInfo& d) {
  const std::string of = d.world_size ? std::to_string(*d.world_size) : "?";
  return (d.rank ? "rank " + std::to_string(*d.rank) + (d.world_size ? " of " + of : "") : "one of " + of + " ranks") + " (distributedInfo" +
         (d.backend.empty() ? "" : ", " + d.backend) + ")";
}

[[nodiscard]] inline std::string fmt(const char* f, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, f, v);
  return buf;
}

[[nodiscard]] inline boost::json::value opt_json(const std::optional<double>& v) {
  return v ? boost::json::value(*v) : boost::json::value(nullptr);
}

// One array: rows grouped by operation ("by": "operation") and by prediction method ("by": "method").
[[nodiscard]] inline boost::json::array breakdown_json(const PredictedTrace& p) {
  boost::json::array a;
  for (auto [by, rows] : {std::pair{"operation", &p.by_operation}, std::pair{"method", &p.by_method}})
    for (const auto& r : *rows)
      a.push_back({{"by", by}, {"key", r.key}, {"kernels", r.kernels}, {"origin_ms", r.origin_us / 1e3}, {"predicted_ms", r.predicted_us / 1e3}});
  return a;
}

// The simulated step: GPU busy time, host time, what bounds it, Lin et al.'s host overheads, critical path.
[[nodiscard]] inline boost::json::object timeline_json(const sim::Timeline& tl) {
  boost::json::object host_types;
  for (std::size_t i = 0; i < sim::host_time_names.size(); ++i) host_types[sim::host_time_names[i]] = tl.host_by_type[i] / 1e3;
  boost::json::array path;
  for (std::size_t i = 0; i < tl.critical_path.size() && i < 10; ++i)
    path.push_back({{"label", tl.critical_path[i].label}, {"on", tl.critical_path[i].gpu ? "gpu" : "host"}, {"ms", tl.critical_path[i].us / 1e3}});
  return {{"gpu_busy_ms", tl.gpu_busy_us / 1e3},
          {"host_ms", tl.host_us / 1e3},
          {"host_stall_ms", tl.host_stall_us / 1e3},
          {"sync_wait_ms", tl.sync_wait_us / 1e3},
          {"launch_queue_wait_ms", tl.queue_wait_us / 1e3},
          {"first_step_ms", tl.first_step_us / 1e3},
          {"bound", tl.verdict()},
          {"host_overheads_ms", std::move(host_types)},
          {"critical_path", std::move(path)}};
}

// DDP or FSDP on several GPUs: the step (the iteration), what one GPU would take, communication and scaling.
[[nodiscard]] inline boost::json::object data_parallel_json(const DataParallel& d, double step_us) {
  std::string counted = d.counted;
  std::replace(counted.begin(), counted.end(), ' ', '_');
  boost::json::object o{{"world_size", d.world_size},
          {"gpus_per_node", d.gpus_per_node},
          {"nodes", d.nodes},
          {"link", d.link},
          {"step_ms", step_us / 1e3},
          {"single_gpu_ms", d.single_gpu_us / 1e3},
          {"compute_ms", (step_us - d.exposed_comm_us) / 1e3},
          {"communication_ms", d.comm_us / 1e3},
          {"exposed_communication_ms", d.exposed_comm_us / 1e3},
          {"scaling_efficiency", d.scaling_efficiency(step_us)},
          {counted, d.buckets},
          {"gradient_mb", d.gradient_bytes / 1e6},
          {"plan", d.plan}};
  if (d.state_bytes_per_gpu > 0) {
    o["model_state_gb_per_gpu"] = d.state_bytes_per_gpu / 1e9;
    o["fits"] = !(d.memory_bytes > 0) || d.state_bytes_per_gpu <= d.memory_bytes;
  }
  return o;
}

// One line on the DDP step for the table.
[[nodiscard]] inline std::string data_parallel_line(const DataParallel& d, double step_us) {
  std::string memory;
  if (d.state_bytes_per_gpu > 0)
    memory = "; model state " + fmt("%.2f", d.state_bytes_per_gpu / 1e9) + " GB per GPU (activations not counted)" +
             (d.memory_bytes > 0 && d.state_bytes_per_gpu > d.memory_bytes ? ": DOES NOT FIT in " + fmt("%.0f", d.memory_bytes / 1e9) + " GB" : "");
  return d.plan + " on " + std::to_string(d.world_size) + " GPUs (" + std::to_string(d.nodes) + " node" + (d.nodes > 1 ? "s" : "") + " of " +
         std::to_string(d.gpus_per_node) + ", " + d.link + "): step " + fmt("%.3f", step_us / 1e3) + " ms against " +
         fmt("%.3f", d.single_gpu_us / 1e3) + " ms on one GPU; " + d.collectives + " " + fmt("%.3f", d.comm_us / 1e3) + " ms, exposed " +
         fmt("%.3f", d.exposed_comm_us / 1e3) + " ms; scaling efficiency " + fmt("%.1f", 100 * d.scaling_efficiency(step_us)) + "% (" +
         std::to_string(d.buckets) + " " + d.counted + (d.gradient_bytes > 0 ? ", " + fmt("%.1f", d.gradient_bytes / 1e6) + " MB of gradients" : "") +
         ")" + memory;
}

// One destination's prediction as JSON (the as-traced ones and a what-if's share it).
[[nodiscard]] inline boost::json::object prediction_json(const PredictedTrace& p) {
  return boost::json::object({{"device", p.device},
                     {"iteration_ms", p.iteration_us / 1e3},
                     {"gpu_active_ms", p.gpu_active_us / 1e3},
                     {"host", p.host},
                     {"timeline", p.timeline ? boost::json::value(timeline_json(*p.timeline)) : boost::json::value(nullptr)},
                     {"data_parallel", p.data_parallel ? boost::json::value(data_parallel_json(*p.data_parallel, p.iteration_us)) : boost::json::value(nullptr)},
                     {"throughput", opt_json(p.throughput)},
                     {"cost_normalized_throughput", opt_json(p.cost_normalized_throughput)},
                     {"price", p.price ? boost::json::value({{"usd_per_hour", p.price->usd_per_hour}, {"date", p.price->date}, {"source", p.price->source}})
                                       : boost::json::value(nullptr)},
                     {"breakdown", breakdown_json(p)},
                     {"trust", {{"methods", p.method_summary()},
                                {"kernels_raised_to_roofline_bound", p.floored_kernels},
                                {"kernels_replaced_non_finite", p.replaced_kernels},
                                {"datapath", p.datapath_note},
                                {"collectives", p.collective_note},
                                {"model_declined_ops", p.model_declined_ops},
                                {"model_declined_reason", p.model_declined_reason}}}});
}

// The what-if beside the as-traced predictions: what changed, the estimated memory, and per destination
// the same prediction object plus whether the step fits.
[[nodiscard]] inline boost::json::object what_if_json(const WhatIfSummary& w) {
  boost::json::array preds;
  for (std::size_t i = 0; i < w.predictions.size(); ++i) {
    auto p = prediction_json(w.predictions[i]);
    p["fits_in_memory"] = i < w.fits.size() ? bool(w.fits[i]) : true;
    preds.push_back(std::move(p));
  }
  boost::json::object memory;
  if (w.memory)
    memory = {{"parameter_gib", w.memory->parameter_bytes / whatif::bytes_per_gib}, {"activation_gib", w.memory->activation_bytes / whatif::bytes_per_gib},
              {"total_gib", w.memory->total_bytes() / whatif::bytes_per_gib}};
  boost::json::array notes;
  for (const auto& n : w.notes) notes.push_back(boost::json::string(n));
  return {{"changes", w.label},
          {"batch", w.batch ? boost::json::value(*w.batch) : boost::json::value(nullptr)},
          {"estimated_memory", w.memory ? boost::json::value(memory) : boost::json::value(nullptr)},
          {"notes", notes},
          {"predictions", preds}};
}

inline void write_json(std::ostream& os, const OriginSummary& o, const std::vector<PredictedTrace>& ps, const WhatIfSummary* what_if = nullptr) {
  boost::json::array preds;
  for (const auto& p : ps) preds.push_back(prediction_json(p));
  boost::json::object origin{{"device", o.device}, {"iteration_ms", o.iteration_us / 1e3}, {"gpu_active_ms", o.gpu_active_us / 1e3}};
  if (o.simulated) {
    origin["profiled_step_ms"] = o.simulated->profiled_step_us / 1e3;
    origin["profiler_cost_ms"] = o.simulated->profiler_cost_us / 1e3;
    if (!o.simulated->step_kind.empty()) origin["step_kind"] = o.simulated->step_kind;
    if (o.simulated->queue_waits > 0) {
      origin["launch_queue_wait_ms"] = o.simulated->queue_wait_us / 1e3;
      origin["launch_queue_waits"] = o.simulated->queue_waits;
    }
    if (o.simulated->counted_host_us > 0) {
      origin["counted_host_ms"] = o.simulated->counted_host_us / 1e3;
      origin["count_scale"] = o.simulated->count_scale;
    }
    origin["host"] = o.simulated->host;
    origin["timeline"] = timeline_json(o.simulated->timeline);
  }
  if (const auto& d = o.distributed) {
    auto opt_int = [](const std::optional<int>& v) { return v ? boost::json::value(*v) : boost::json::value(nullptr); };
    origin["distributed"] = {{"rank", opt_int(d->rank)}, {"world_size", opt_int(d->world_size)},
                             {"backend", d->backend.empty() ? boost::json::value(nullptr) : boost::json::value(d->backend)},
                             {"source", "distributedInfo"}};
  }
  boost::json::object root{{"schema", "habitat.prediction/1"}, {"origin", std::move(origin)}, {"predictions", std::move(preds)}};
  if (what_if) root["what_if"] = what_if_json(*what_if);
  os << habitat::detail::json_text(root) << "\n";
}

inline void write_csv(std::ostream& os, const OriginSummary& o, const std::vector<PredictedTrace>& ps, const WhatIfSummary* what_if = nullptr) {
  os << "scenario,device,iteration_ms,gpu_active_ms,gpu_busy_ms,bound,throughput,cost_normalized_throughput,world_size,single_gpu_ms,exposed_communication_ms,"
        "scaling_efficiency,host\n";
  auto opt = [](const std::optional<double>& v) { return v ? fmt("%.6g", *v) : std::string(); };
  auto busy = [](const std::optional<sim::Timeline>& tl) { return tl ? fmt("%.6g", tl->gpu_busy_us / 1e3) + "," + tl->verdict() : std::string(","); };
  os << "origin,\"" << o.device << "\"," << fmt("%.6g", o.iteration_us / 1e3) << ',' << fmt("%.6g", o.gpu_active_us / 1e3) << ','
     << busy(o.simulated ? std::optional<sim::Timeline>(o.simulated->timeline) : std::nullopt) << ",,,1,,,," << habitat::detail::csv_field(o.simulated ? o.simulated->host : std::string()) << "\n";
  std::vector<std::pair<std::string, const PredictedTrace*>> rows;
  for (const auto& p : ps) rows.emplace_back("as traced", &p);
  if (what_if)
    for (const auto& p : what_if->predictions) rows.emplace_back(what_if->label, &p);
  for (const auto& [scenario, pp] : rows) {
    const PredictedTrace& p = *pp;
    os << '"' << scenario << "\",\"" << p.device << "\"," << fmt("%.6g", p.iteration_us / 1e3) << ',' << fmt("%.6g", p.gpu_active_us / 1e3) << ',' << busy(p.timeline)
       << ',' << opt(p.throughput) << ',' << opt(p.cost_normalized_throughput) << ',';
    if (const auto& d = p.data_parallel)
      os << d->world_size << ',' << fmt("%.6g", d->single_gpu_us / 1e3) << ',' << fmt("%.6g", d->exposed_comm_us / 1e3) << ','
         << fmt("%.4g", d->scaling_efficiency(p.iteration_us));
    else
      os << "1,,,";
    os << ',' << habitat::detail::csv_field(p.host) << "\n";
  }
}

// The what-if beside the as-traced prediction, one line per destination.
inline void write_what_if_table(std::ostream& os, const std::vector<PredictedTrace>& ps, const WhatIfSummary& w) {
  os << "\nwhat if " << w.label << " (predicted the same way; as traced -> what-if)\n";
  if (w.memory)
    os << "  estimated peak memory " << fmt("%.2f", w.memory->total_bytes() / whatif::bytes_per_gib) << " GiB (parameters, gradients and optimizer "
       << fmt("%.2f", w.memory->parameter_bytes / whatif::bytes_per_gib) << ", activations " << fmt("%.2f", w.memory->activation_bytes / whatif::bytes_per_gib)
       << ")\n";
  for (const auto& n : w.notes) os << "  note: " << n << "\n";
  char line[320];
  std::snprintf(line, sizeof line, "%-24s %22s %8s %22s %11s\n", "device", "iteration ms", "change", "GPU active ms", "samples/s");
  os << line;
  for (std::size_t i = 0; i < w.predictions.size() && i < ps.size(); ++i) {
    const auto& a = ps[i];
    const auto& b = w.predictions[i];
    if (i < w.fits.size() && !w.fits[i]) {
      std::snprintf(line, sizeof line, "%-24s %22s\n", b.device.c_str(), "does not fit in memory");
      os << line;
      continue;
    }
    const std::string change = a.iteration_us > 0 ? fmt("%+.1f%%", 100 * (b.iteration_us / a.iteration_us - 1)) : "-";
    std::snprintf(line, sizeof line, "%-24s %10.3f -> %9.3f %8s %10.3f -> %9.3f %11s\n", b.device.c_str(), a.iteration_us / 1e3, b.iteration_us / 1e3,
                  change.c_str(), a.gpu_active_us / 1e3, b.gpu_active_us / 1e3, b.throughput ? fmt("%.1f", *b.throughput).c_str() : "-");
    os << line;
  }
}

inline void write_table(std::ostream& os, const OriginSummary& o, const std::vector<PredictedTrace>& ps, std::size_t breakdown_rows,
                        const WhatIfSummary* what_if = nullptr) {
  os << "origin " << o.device << ": iteration " << fmt("%.3f", o.iteration_us / 1e3) << " ms, GPU active "
     << fmt("%.3f", o.gpu_active_us / 1e3) << " ms";
  if (o.simulated) {
    const auto& s = *o.simulated;
    os << ", GPU busy " << fmt("%.3f", s.timeline.gpu_busy_us / 1e3) << " ms, host " << fmt("%.3f", s.timeline.host_us / 1e3) << " ms: "
       << s.timeline.verdict() << " (host " << s.host << ")\n"
       << "  un-profiled, simulated" << (s.step_kind.empty() ? "" : ", a " + s.step_kind + " step") << "; the profiled step took " << fmt("%.3f", s.profiled_step_us / 1e3) << " ms, of which the profiler's host cost "
       << fmt("%.3f", s.profiler_cost_us / 1e3) << " ms";
    if (s.queue_waits > 0)
      os << "\n  " << s.queue_waits << " launch calls waited " << fmt("%.3f", s.queue_wait_us / 1e3)
         << " ms for a full launch queue: GPU time, not host work (the simulator queues the launches itself)";
    if (s.count_scale != 1)
      os << "\n  its records imply " << fmt("%.3f", s.counted_host_us / 1e3) << " ms of host time un-profiled, so the "
         << "simulated host time was scaled by " << fmt("%.2f", s.count_scale) << " to within its host profile's band of that (one profiled sample of a short step is mostly the "
         << "profiler's own bookkeeping)";
  }
  if (o.distributed) os << "\n  recorded by " << distributed_text(*o.distributed);
  os << "\n\n";
  char line[320];
  std::snprintf(line, sizeof line, "%-24s %13s %14s %12s %-10s %11s %12s  %-18s %s\n", "device", "iteration ms", "GPU active ms", "GPU busy ms", "bound",
                "samples/s", "samples/$", "host", "methods (share of origin GPU time)");
  os << line;
  for (const auto& p : ps) {
    std::snprintf(line, sizeof line, "%-24s %13.3f %14.3f %12s %-10s %11s %12s  ", p.device.c_str(), p.iteration_us / 1e3, p.gpu_active_us / 1e3,
                  p.timeline ? fmt("%.3f", p.timeline->gpu_busy_us / 1e3).c_str() : "-", p.timeline ? p.timeline->verdict() : "-",
                  p.throughput ? fmt("%.1f", *p.throughput).c_str() : "-",
                  p.cost_normalized_throughput ? fmt("%.0f", *p.cost_normalized_throughput).c_str() : "-");
    const std::string host = p.host.empty() ? "recorded" : p.host;
    os << line << host << std::string(host.size() < 18 ? 19 - host.size() : 1, ' ') << p.method_summary() << (p.model_declined_ops ? "; models declined " + std::to_string(p.model_declined_ops) + " ops" : "") << "\n";
  }
  for (const auto& p : ps)
    if (p.data_parallel) os << "  " << p.device << ": " << data_parallel_line(*p.data_parallel, p.iteration_us) << "\n";
  if (!ps.empty() && ps.front().data_parallel)
    os << "  (iteration: one step of the plan, every GPU; samples/s count " << ps.front().data_parallel->replicas() << " batch"
       << (ps.front().data_parallel->replicas() > 1 ? "es" : "") << " per step, samples/$ all " << ps.front().data_parallel->world_size << " GPUs)\n";
  if (what_if) write_what_if_table(os, ps, *what_if);
  if (breakdown_rows == 0) return;
  for (const auto& p : ps) {
    os << "\n" << p.device << ": top operations (origin ms -> predicted ms)\n";
    for (std::size_t i = 0; i < p.by_operation.size() && i < breakdown_rows; ++i) {
      const auto& r = p.by_operation[i];
      std::snprintf(line, sizeof line, "  %-50.50s %5d kernels %10.3f -> %10.3f\n", r.key.c_str(), r.kernels, r.origin_us / 1e3, r.predicted_us / 1e3);
      os << line;
    }
    os << "  by method:\n";
    for (const auto& r : p.by_method) {
      std::snprintf(line, sizeof line, "  %-72s %5d kernels %10.3f -> %10.3f\n", r.key.c_str(), r.kernels, r.origin_us / 1e3, r.predicted_us / 1e3);
      os << line;
    }
    if (p.model_declined_ops)
      os << "  learned models stepped aside for " << p.model_declined_ops << " operations outside their training range (first: "
         << p.model_declined_reason << ")\n";
    if (p.floored_kernels) os << "  " << p.floored_kernels << " kernel predictions were raised to the roofline bound\n";
    if (p.timeline) {
      const auto& tl = *p.timeline;
      os << "  host " << p.host << ": " << fmt("%.3f", tl.host_us / 1e3) << " ms per step (";
      for (std::size_t i = 0; i < sim::host_time_names.size(); ++i)
        os << (i ? ", " : "") << sim::host_time_names[i] << " " << fmt("%.2f", tl.host_by_type[i] / 1e3);
      os << "); GPU idle " << fmt("%.3f", tl.host_stall_us / 1e3) << " ms, sync waits " << fmt("%.3f", tl.sync_wait_us / 1e3) << " ms\n";
      os << "  critical path:";
      for (std::size_t i = 0; i < tl.critical_path.size() && i < 4; ++i)
        os << (i ? "; " : " ") << tl.critical_path[i].label.substr(0, 40) << (tl.critical_path[i].gpu ? " (GPU) " : " ")
           << fmt("%.2f", tl.critical_path[i].us / 1e3);
      os << "\n";
    }
  }
}

inline boost::json::object evaluation_json(const Evaluation& ev) {
  boost::json::array rows;
  for (const auto& r : ev.rows)
    rows.push_back({{"predictor", r.predictor},
                    {"gpu_active_ms", r.gpu_active_us / 1e3},
                    {"gpu_active_error", r.gpu_active_error},
                    {"iteration_ms", r.iteration_us / 1e3},
                    {"iteration_error", r.iteration_error},
                    {"kernel_error_median", r.kernel_median},
                    {"kernel_error_p90", r.kernel_p90},
                    {"kernel_error_time_weighted", r.kernel_weighted}});
  return {{"schema", "habitat.evaluation/1"},
          {"actual", {{"gpu_active_ms", ev.actual_gpu_active_us / 1e3}, {"iteration_ms", ev.actual_iteration_us / 1e3}}},
          {"kernels", {{"origin", ev.origin_kernels}, {"destination", ev.dest_kernels}, {"matched", ev.matched}}},
          {"predictors", std::move(rows)}};
}

// The same rows as CSV, one per predictor (habitat first, then the baselines).
inline void write_evaluation_csv(std::ostream& os, const Evaluation& ev) {
  os << "predictor,gpu_active_ms,gpu_active_error,iteration_ms,iteration_error,kernel_error_median,kernel_error_p90,kernel_error_time_weighted,"
        "actual_gpu_active_ms,actual_iteration_ms,matched_kernels,destination_kernels\n";
  for (const auto& r : ev.rows)
    os << habitat::detail::csv_field(r.predictor) << ',' << fmt("%.6g", r.gpu_active_us / 1e3) << ',' << fmt("%.4g", r.gpu_active_error) << ','
       << fmt("%.6g", r.iteration_us / 1e3) << ',' << fmt("%.4g", r.iteration_error) << ',' << fmt("%.4g", r.kernel_median) << ','
       << fmt("%.4g", r.kernel_p90) << ',' << fmt("%.4g", r.kernel_weighted) << ',' << fmt("%.6g", ev.actual_gpu_active_us / 1e3) << ','
       << fmt("%.6g", ev.actual_iteration_us / 1e3) << ',' << ev.matched << ',' << ev.dest_kernels << "\n";
}

// Traces of different workloads match few kernels by name: the comparison would be meaningless.
[[nodiscard]] inline bool same_workload(const Evaluation& ev) {
  return ev.dest_kernels == 0 || 2 * ev.matched >= std::min(ev.origin_kernels, ev.dest_kernels);
}

inline void write_evaluation_table(std::ostream& os, const Evaluation& ev) {
  char line[256];
  std::snprintf(line, sizeof line, "actual: GPU active %.3f ms, iteration %.3f ms; kernels matched by name and order: %zu of %zu\n\n",
                ev.actual_gpu_active_us / 1e3, ev.actual_iteration_us / 1e3, ev.matched, ev.dest_kernels);
  os << line;
  std::snprintf(line, sizeof line, "%-24s %12s %9s %12s %9s   %-28s\n", "predictor", "active ms", "error", "iteration ms", "error",
                "per-kernel |error| med/p90/tw");
  os << line;
  for (const auto& r : ev.rows) {
    std::snprintf(line, sizeof line, "%-24s %12.3f %+8.1f%% %12.3f %+8.1f%%   %5.1f%% / %5.1f%% / %5.1f%%\n", r.predictor.c_str(),
                  r.gpu_active_us / 1e3, 100 * r.gpu_active_error, r.iteration_us / 1e3, 100 * r.iteration_error, 100 * r.kernel_median,
                  100 * r.kernel_p90, 100 * r.kernel_weighted);
    os << line;
  }
}

// One row per origin kernel: what was predicted, from what work estimate, against the matched actual time.
inline void write_kernel_csv(std::ostream& os, const Trace& origin, const std::vector<KernelWork>& work, const PredictedTrace& p,
                             const Trace* dest = nullptr) {
  std::vector<double> actual(origin.kernels.size(), -1);
  if (dest)
    for (auto [i, j] : match_kernels(origin, *dest)) actual[i] = dest->kernels[j].duration_us;
  os << "index,kernel,operation,blocks,precision,work_source,flops,bytes,gamma,method,origin_us,predicted_us,actual_us\n";
  for (std::size_t i = 0; i < origin.kernels.size(); ++i) {
    const Kernel& k = origin.kernels[i];
    std::string name = k.name.substr(0, 120);
    std::replace(name.begin(), name.end(), '"', '\'');
    os << i << ",\"" << name << "\",\"" << (k.op >= 0 ? origin.ops[k.op].name : "") << "\"," << k.blocks() << ','
       << to_string(work[i].precision) << ',' << to_string(work[i].source) << ',' << fmt("%.4g", work[i].flops) << ','
       << fmt("%.4g", work[i].bytes) << ',' << fmt("%.3f", p.kernels[i].gamma) << ",\"" << to_string(p.kernels[i].method) << "\","
       << fmt("%.3f", k.duration_us) << ',' << fmt("%.3f", p.kernels[i].duration_us) << ','
       << (actual[i] >= 0 ? fmt("%.3f", actual[i]) : std::string()) << "\n";
  }
}

inline boost::json::object gamma_study_json(const GammaStudy& g) {
  boost::json::array rows;
  for (const auto& r : g.rows) {
    boost::json::object by;
    for (auto c : kernel_classes) by[to_string(c)] = r.by_class[static_cast<std::size_t>(c)];
    rows.push_back({{"gamma_source", r.source}, {"gpu_active_error", r.gpu_active_error}, {"error_by_class", std::move(by)}});
  }
  boost::json::object share;
  for (auto c : kernel_classes) share[to_string(c)] = g.class_share[static_cast<std::size_t>(c)];
  return {{"schema", "habitat.gamma-study/1"}, {"measured_time_share", g.measured_time_share}, {"class_share", std::move(share)}, {"rows", std::move(rows)}};
}

inline void write_gamma_study(std::ostream& os, const GammaStudy& g) {
  char line[256];
  os << "metrics cover " << fmt("%.1f", 100 * g.measured_time_share) << "% of the origin's kernel time; signed error of predicted time\n";
  std::snprintf(line, sizeof line, "%-28s %10s %20s %20s %20s\n", "gamma source", "GPU active", to_string(kernel_classes[0]),
                to_string(kernel_classes[1]), to_string(kernel_classes[2]));
  os << line;
  std::snprintf(line, sizeof line, "%-28s %10s %13.0f%% of time %13.0f%% of time %13.0f%% of time\n", "", "", 100 * g.class_share[0],
                100 * g.class_share[1], 100 * g.class_share[2]);
  os << line;
  for (const auto& r : g.rows) {
    std::snprintf(line, sizeof line, "%-28s %+9.2f%% %+19.2f%% %+19.2f%% %+19.2f%%\n", r.source.c_str(), 100 * r.gpu_active_error,
                  100 * r.by_class[0], 100 * r.by_class[1], 100 * r.by_class[2]);
    os << line;
  }
}

}  // namespace habitat::report
