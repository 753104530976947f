#pragma once
// Attaching measured metrics to the kernels of a trace: by kernel name and launch configuration, as the
// paper caches them. Metrics from another GPU are refused (DRAM bytes depend on the L2 they ran with);
// kernels without metrics keep the counter-free estimate and the report says how much time that is.
#include <string>
#include <unordered_map>
#include <vector>

#include "habitat/device/catalog.hpp"
#include "habitat/error.hpp"
#include "habitat/metrics/measured_kernel.hpp"
#include "habitat/trace/trace.hpp"

namespace habitat {

struct AttachReport {
  std::size_t kernels = 0, matched = 0;
  double kernel_us = 0, matched_us = 0;
  std::size_t ambiguous = 0;      // several entries differ only in shared memory and none matched it exactly
  std::size_t varying_work = 0;   // matched entries whose profiled launches did different work (see flops_spread)
  [[nodiscard]] double matched_time_share() const { return kernel_us > 0 ? matched_us / kernel_us : 0; }
};

// Throws when a set was measured on a different GPU than the trace's.
inline void check_same_gpu(const MetricSet& set, const std::string& set_file, const Trace& t) {
  if (t.device_name.empty()) return;
  if (normalize_device_name(set.provenance.device) != normalize_device_name(t.device_name))
    throw make_error(set_file, "measured_on.device",
                     "metrics were measured on '" + set.provenance.device + "' but the trace ran on '" + t.device_name +
                         "'; DRAM traffic depends on the GPU, so collect metrics on the trace's GPU");
}

inline AttachReport attach_metrics(Trace& t, const std::vector<const MetricSet*>& sets) {
  std::unordered_map<std::string, std::vector<const MeasuredKernel*>> by_launch;
  for (const auto* s : sets)
    for (const auto& m : s->kernels()) by_launch[m.key.launch()].push_back(&m);
  AttachReport r;
  for (auto& k : t.kernels) {
    if (k.kind != GpuWorkKind::kernel) continue;
    ++r.kernels;
    r.kernel_us += k.duration_us;
    const auto it = by_launch.find(detail::launch_id(normalize_kernel_name(k.name), k.grid, k.block));
    if (it == by_launch.end()) continue;
    const MeasuredKernel* pick = nullptr;
    for (const auto* m : it->second)
      if (m->key.matches_trace_smem(k.shared_mem_bytes)) pick = m;
    if (!pick) {
      if (it->second.size() > 1) {
        ++r.ambiguous;
        continue;
      }
      pick = it->second.front();  // one entry for this launch: shared memory bookkeeping differs, the kernel does not
    }
    k.metrics = pick->to_kernel_metrics();
    ++r.matched;
    r.matched_us += k.duration_us;
    if (pick->flops_spread > 0.01) ++r.varying_work;
  }
  return r;
}

}  // namespace habitat
