#pragma once
// Which kernels need counters: the distinct launches (name and configuration) that together make up the
// given fraction of a trace's kernel time, longest first. The paper measures only the kernels that
// matter; a small top fraction keeps collection short, at the price of counter-free estimates for the rest.
#include <algorithm>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "habitat/error.hpp"
#include "habitat/metrics/measured_kernel.hpp"
#include "habitat/trace/trace.hpp"

namespace habitat {

struct SelectedLaunch {
  std::string name;  // as the trace has it
  Dim3 grid, block;
  long shared_mem_bytes = 0;  // static + dynamic, as Kineto records it
  double total_us = 0;
  int launches = 0;
};

[[nodiscard]] inline std::vector<SelectedLaunch> select_top_launches(const Trace& t, double top_fraction,
                                                                     const MetricSet* cached = nullptr) {
  if (!(top_fraction > 0 && top_fraction <= 1)) throw make_error("--top", "", "must be in (0, 1]");
  std::unordered_map<std::string, SelectedLaunch> by_key;
  double total = 0;
  for (const auto& k : t.kernels) {
    if (k.kind != GpuWorkKind::kernel) continue;
    total += k.duration_us;
    auto& s = by_key[detail::launch_id(normalize_kernel_name(k.name), k.grid, k.block) + "|" + std::to_string(k.shared_mem_bytes)];
    if (s.launches == 0) s = {k.name, k.grid, k.block, k.shared_mem_bytes, 0, 0};
    s.total_us += k.duration_us;
    ++s.launches;
  }
  std::vector<SelectedLaunch> all;
  all.reserve(by_key.size());
  for (auto& [_, s] : by_key) all.push_back(std::move(s));
  std::sort(all.begin(), all.end(), [](const auto& a, const auto& b) { return a.total_us > b.total_us; });
  // Cached by name and launch dimensions, as attach_metrics would use them, whatever their shared memory.
  std::unordered_set<std::string> have;
  if (cached)
    for (const auto& m : cached->kernels()) have.insert(m.key.launch());
  std::vector<SelectedLaunch> out;
  double covered = 0;
  for (auto& s : all) {
    if (covered >= top_fraction * total) break;
    covered += s.total_us;
    if (!have.count(detail::launch_id(normalize_kernel_name(s.name), s.grid, s.block))) out.push_back(std::move(s));
  }
  return out;
}

}  // namespace habitat
