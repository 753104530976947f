#pragma once
// Ring all-reduce over N GPUs of one node, as NCCL runs it: 2(N-1) steps, each moving 1/N of the message
// over the link to the next GPU and reducing it in memory. Its time is a protocol's latency plus the bus
// bytes (2(N-1)/N of the message) at the protocol's share of the link bandwidth, plus the reduction's
// memory passes over the message at DRAM bandwidth. NCCL picks the protocol by size: LL (8-byte stores
// carrying a 4-byte flag: half the bandwidth, the least latency), LL128 (120 of every 128 bytes) or
// Simple; the model takes the fastest, as NCCL's tuner does. Only the times are validated: NCCL 2.28 on
// these machines chose Simple from 2 MiB (N=2) and 12 MiB (N=4), where the model's fastest is LL128.
#include <array>
#include <cmath>
#include <string_view>

#include "habitat/device/device.hpp"
#include "habitat/error.hpp"

namespace habitat::comm {

enum class Protocol { ll, ll128, simple };

[[nodiscard]] constexpr std::string_view to_string(Protocol p) {
  return p == Protocol::ll ? "LL" : p == Protocol::ll128 ? "LL128" : "Simple";
}

struct AllReduceModel {
  std::array<double, 3> latency_us;  // per protocol (LL, LL128, Simple)
  double per_peer_us;                // latency added per further GPU in the ring
  double link_efficiency;            // Simple's share of the link's bandwidth per direction
  double memory_passes;              // DRAM traffic of the reductions, in multiples of the message
  static constexpr std::array<double, 3> protocol_share{0.5, 120.0 / 128.0, 1.0};
};

// Fitted to NCCL 2.28.9 all-reduces on 2 and 4 H200s (NVLink 4, 18 links, NVSwitch; NVLS off), 1 MiB to
// 1 GiB, fp32, back to back (fixtures/ddp/h200x{2,4}/allreduce.json): mean error 4.1% (N=2), 3.6% (N=4). The fit and its
// check are tests/comm/allreduce_test.cpp.
inline constexpr AllReduceModel nccl_ring_fit{{18.0, 22.0, 34.0}, 0.0, 0.96, 4.2};

struct AllReduceEstimate {
  double us = 0;
  Protocol protocol = Protocol::simple;
};

// `link_gbps`: one GPU's link bandwidth per direction (GB/s); `memory_gbps`: its sustained DRAM bandwidth.
[[nodiscard]] inline AllReduceEstimate ring_allreduce(double bytes, int ranks, double link_gbps, double memory_gbps,
                                                      const AllReduceModel& m = nccl_ring_fit) {
  if (!(bytes >= 0) || !std::isfinite(bytes) || ranks < 1 || !(link_gbps > 0) || !(memory_gbps > 0))
    throw make_error("all-reduce", "model", "needs a finite size, at least one rank and positive bandwidths");
  if (ranks == 1 || bytes == 0) return {0, Protocol::simple};
  const double bus_bytes = 2.0 * (ranks - 1) / ranks * bytes;
  const double memory_us = bytes * m.memory_passes / (memory_gbps * 1e3);
  AllReduceEstimate best{1e300, Protocol::simple};
  for (const Protocol p : {Protocol::ll, Protocol::ll128, Protocol::simple}) {
    const auto i = static_cast<std::size_t>(p);
    const double us = m.latency_us[i] + m.per_peer_us * (ranks - 1) + bus_bytes / (link_gbps * m.link_efficiency * m.protocol_share[i] * 1e3) +
                      memory_us;
    if (us < best.us) best = {us, p};
  }
  return best;
}

// With a catalog GPU: its NVLink bandwidth (GPUs of one node), else PCIe.
[[nodiscard]] inline AllReduceEstimate ring_allreduce(double bytes, int ranks, const Device& d, const AllReduceModel& m = nccl_ring_fit) {
  const double link = d.nvlink_gbps > 0 ? d.nvlink_gbps : d.pcie_gbps;
  if (!(link > 0)) throw make_error(d.name, "interconnect", "no NVLink or PCIe bandwidth in the catalog entry");
  return ring_allreduce(bytes, ranks, link, d.sustained_bandwidth_gbps(), m);
}

}  // namespace habitat::comm
