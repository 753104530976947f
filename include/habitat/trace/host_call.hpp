#pragma once
// CUDA runtime and driver calls made by the host, as a trace records them. What a call does to the
// timeline (launches work, waits for the GPU, orders streams) is decided here from its name, once.
#include <array>
#include <cstdint>
#include <string>
#include <string_view>

namespace habitat {

enum class HostCallKind {
  launch,        // enqueues one kernel
  graph_launch,  // enqueues a whole CUDA graph (its kernels share the call's correlation)
  memcpy,
  memset,
  sync,          // blocks the thread until GPU work is done (device, stream or event)
  event,         // event record / stream wait: orders streams, does not block the host
  other          // attribute queries, error checks, allocations: host time only
};

[[nodiscard]] inline std::string_view to_string(HostCallKind k) {
  constexpr std::array<std::string_view, 7> names{"launch", "graph_launch", "memcpy", "memset", "sync", "event", "other"};
  return names[static_cast<std::size_t>(k)];
}

// Runtime (cuda*) and driver (cu*) spellings of the same calls.
[[nodiscard]] inline HostCallKind host_call_kind(std::string_view name) {
  auto has = [&](std::string_view s) { return name.find(s) != std::string_view::npos; };
  if (has("GraphLaunch")) return HostCallKind::graph_launch;
  if (has("LaunchKernel") || has("LaunchCooperativeKernel") || name == "cuLaunchGrid") return HostCallKind::launch;
  if (has("Synchronize")) return HostCallKind::sync;
  if (has("Memcpy")) return HostCallKind::memcpy;
  if (has("Memset")) return HostCallKind::memset;
  if (has("EventRecord") || has("StreamWaitEvent") || has("EventQuery")) return HostCallKind::event;
  return HostCallKind::other;
}

// A synchronous copy returns only when the copy is done (cudaMemcpy, cuMemcpyDtoH, ...); the Async ones
// block too when the host memory is pageable, which the reader infers from the recorded times.
[[nodiscard]] inline bool synchronous_by_name(std::string_view name) {
  const HostCallKind k = host_call_kind(name);
  return k == HostCallKind::sync || ((k == HostCallKind::memcpy || k == HostCallKind::memset) && name.find("Async") == std::string_view::npos);
}

struct HostCall {
  std::string name;
  HostCallKind kind = HostCallKind::other;
  double start_us = 0, duration_us = 0;
  std::int64_t thread = 0;
  std::int64_t correlation = -1;
  int op = -1;            // innermost enclosing operation (index into Trace::ops), -1 if none
  bool blocking = false;  // the thread waited in this call for GPU work to finish
  // A call that puts GPU work in a queue (a launch, a copy, a fill), as opposed to queries and the rest.
  [[nodiscard]] bool enqueues() const {
    return kind == HostCallKind::launch || kind == HostCallKind::graph_launch || kind == HostCallKind::memcpy || kind == HostCallKind::memset;
  }
};

}  // namespace habitat
