#pragma once
// Ring all-reduce over N GPUs of one node, as NCCL runs it: 2(N-1) steps, each moving 1/N of the message
// over the link to the next GPU and reducing it in memory. Its time is a protocol's latency plus the bus
// bytes (2(N-1)/N of the message) at the protocol's share of the link bandwidth, plus the reduction's
// memory passes over the message at DRAM bandwidth. NCCL picks the protocol by size: LL (8-byte stores
// carrying a 4-byte flag: half the bandwidth, the least latency), LL128 (120 of every 128 bytes) or
// Simple; the model takes the fastest, as NCCL's tuner does. Only the times are validated: NCCL 2.28 on
// these machines chose Simple from 2 MiB (N=2) and 12 MiB (N=4), where the model's fastest is LL128.
#include <algorithm>
#include <array>
#include <optional>
#include <string>
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
// All-gather and reduce-scatter (FSDP's), fitted by hand to NCCL 2.28.9 on 2 H200s, 1 MiB to 1 GiB, fp32,
// back to back (fixtures/parallel/h200x2/collectives.json): a higher floor (30-60 us measured at 1-8 MiB)
// and 0.8 of the link at 256 MiB-1 GiB (270 GB/s bus bandwidth). Checked in tests/sim/fsdp_test.cpp.
inline constexpr AllReduceModel nccl_gather_scatter_fit{{32.0, 34.0, 40.0}, 0.0, 0.8, 4.2};

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

// Where the ranks are: how many, how many share a node, and the links between them.
struct Topology {
  int ranks = 1;
  int gpus_per_node = 1;
  double intra_gbps = 0;   // per GPU and direction, between GPUs of one node
  double inter_gbps = 0;   // per GPU and direction, between nodes (0: one node only)
  double memory_gbps = 0;  // sustained DRAM bandwidth, for the reductions
  std::string intra_kind;  // "NVLink", "PCIe" or "given"
  [[nodiscard]] int nodes() const { return (ranks + gpus_per_node - 1) / gpus_per_node; }
};

// The catalog's topology for `ranks` GPUs of type d, `gpus_per_node` to a node (0: the catalog's typical
// node). `intra_gbps`, when given, replaces the catalog's link between GPUs of a node.
[[nodiscard]] inline Topology topology(const Device& d, int ranks, int gpus_per_node = 0, std::optional<double> intra_gbps = {}) {
  if (ranks < 1 || ranks > 1 << 20) throw make_error(d.name, "--world-size", "must be a whole number from 1 to 1048576");
  if (gpus_per_node < 0) throw make_error(d.name, "--gpus-per-node", "must be positive");
  const Interconnect& ic = d.interconnect;
  Topology t;
  t.ranks = ranks;
  t.gpus_per_node = std::min(ranks, gpus_per_node > 0 ? gpus_per_node : std::max(1, ic.node_gpus));
  t.memory_gbps = d.sustained_bandwidth_gbps();
  if (intra_gbps) {
    t.intra_gbps = *intra_gbps;
    t.intra_kind = "given";
  } else {
    t.intra_gbps = ic.intra_node_gbps(t.gpus_per_node);
    t.intra_kind = t.intra_gbps == ic.nvlink_gbps && ic.nvlink_gbps > 0 ? "NVLink" : "PCIe";
  }
  t.inter_gbps = ic.network_gbps;
  if (t.gpus_per_node > 1 && !(t.intra_gbps > 0))
    throw make_error(d.name, "interconnect", "no NVLink or PCIe bandwidth in the catalog entry (give --interconnect GBPS)");
  if (t.nodes() > 1 && !(t.inter_gbps > 0))
    throw make_error(d.name, "interconnect", "no network bandwidth between nodes in the catalog entry (give --network-gbps)");
  return t;
}

// Latency NCCL adds per network hop of a ring that leaves the node (send, NIC, receive), and the share of
// the network's rate it reaches. Not measured here (one node only): typical InfiniBand figures.
inline constexpr double network_hop_us = 6.0;
inline constexpr double network_efficiency = 0.9;

// All-reduce over a topology: one node, a ring over the node's links; several nodes, NCCL's ring over all
// ranks, whose bus bytes cross the network at each node boundary, so the slower of the two links sets the
// pace, and each boundary adds a network hop per step of the ring.
[[nodiscard]] inline AllReduceEstimate allreduce(double bytes, const Topology& t, const AllReduceModel& m = nccl_ring_fit) {
  if (t.nodes() <= 1) return t.ranks <= 1 ? AllReduceEstimate{} : ring_allreduce(bytes, t.ranks, t.intra_gbps, t.memory_gbps, m);
  const double link = std::min(t.gpus_per_node > 1 ? t.intra_gbps : 1e300, t.inter_gbps * network_efficiency / m.link_efficiency);
  AllReduceEstimate e = ring_allreduce(bytes, t.ranks, link, t.memory_gbps, m);
  e.us += 2.0 * (t.nodes() - 1) * network_hop_us;
  return e;
}

// Broadcast from one rank (DDP's buffers each forward): a pipelined ring moves the message once over every
// link, so the message at one link's rate plus a latency.
[[nodiscard]] inline double broadcast_us(double bytes, const Topology& t, const AllReduceModel& m = nccl_ring_fit) {
  if (t.ranks <= 1 || bytes <= 0) return 0;
  const double link = t.nodes() > 1 ? std::min(t.intra_gbps > 0 ? t.intra_gbps : 1e300, t.inter_gbps) : t.intra_gbps;
  double best = 1e300;
  for (const Protocol p : {Protocol::ll, Protocol::ll128, Protocol::simple}) {
    const auto i = static_cast<std::size_t>(p);
    best = std::min(best, m.latency_us[i] + bytes / (link * m.link_efficiency * m.protocol_share[i] * 1e3));
  }
  return best + (t.nodes() > 1 ? (t.nodes() - 1) * network_hop_us : 0.0);
}

// All-gather of `output_bytes` (the gathered tensor) and reduce-scatter of `input_bytes` (the full tensor
// each rank reduces) over a ring: (N-1)/N of the tensor crosses each link, half an all-reduce's bus bytes,
// so each takes an all-reduce of half the tensor, with its own fit.
[[nodiscard]] inline double all_gather_us(double output_bytes, const Topology& t, const AllReduceModel& m = nccl_gather_scatter_fit) {
  return t.ranks <= 1 ? 0.0 : allreduce(output_bytes / 2, t, m).us;
}
[[nodiscard]] inline double reduce_scatter_us(double input_bytes, const Topology& t, const AllReduceModel& m = nccl_gather_scatter_fit) {
  return t.ranks <= 1 ? 0.0 : allreduce(input_bytes / 2, t, m).us;
}

// All-to-all (NCCL runs it as a send and a receive of input/N with every peer at once): no reduction, a 40 us
// floor and 0.74 of the link, fitted by hand to NCCL 2.28.9 on 2 and 4 H200s, 1 MiB to 1 GiB per rank, back to
// back (fixtures/parallel/h200x4/alltoall_n{2,4}.json: 331 and 335 GB/s of bus bandwidth at 1 GiB, 38-47 us up to
// 4 MiB). Its residual is tests/comm/allreduce_test.cpp's.
inline constexpr AllReduceModel nccl_all_to_all_fit{{40.0, 40.0, 40.0}, 0.0, 0.74, 0.0};

// All-to-all of `input_bytes` per rank: (N-1)/N of the input leaves each GPU and as much arrives, an all-gather's
// bus bytes for an output of that size (half an all-reduce's).
[[nodiscard]] inline double all_to_all_us(double input_bytes, const Topology& t, const AllReduceModel& m = nccl_all_to_all_fit) {
  return all_gather_us(input_bytes, t, m);
}

// With a catalog GPU, all on one node: its NVLink bandwidth where NVLink joins them, else PCIe.
[[nodiscard]] inline AllReduceEstimate ring_allreduce(double bytes, int ranks, const Device& d, const AllReduceModel& m = nccl_ring_fit) {
  return allreduce(bytes, topology(d, ranks, ranks), m);
}

// The collectives the model predicts. Profilers spell them several ways: record_param_comms' "Collective name"
// ("allreduce", "_allgather_base", "all_to_allv", ...) and ProcessGroupNCCL's annotations ("nccl:all_reduce",
// "nccl:_all_gather_base", "nccl:all_to_all", ...). Send and recv are not modelled: in one rank's trace their time is
// mostly the wait for the peer, which the trace cannot show; nor are gather, scatter and reduce.
enum class CollectiveKind { all_reduce, broadcast, all_gather, reduce_scatter, all_to_all };
inline constexpr std::array<CollectiveKind, 5> modelled_collectives{CollectiveKind::all_reduce, CollectiveKind::broadcast, CollectiveKind::all_gather,
                                                                   CollectiveKind::reduce_scatter, CollectiveKind::all_to_all};

// The name a trace's Collective carries (trace.hpp).
[[nodiscard]] constexpr std::string_view to_string(CollectiveKind k) {
  switch (k) {
    case CollectiveKind::all_reduce: return "allreduce";
    case CollectiveKind::broadcast: return "broadcast";
    case CollectiveKind::all_gather: return "allgather";
    case CollectiveKind::reduce_scatter: return "reduce_scatter";
    case CollectiveKind::all_to_all: return "all_to_all";
  }
  return {};
}

[[nodiscard]] constexpr std::optional<CollectiveKind> collective_kind(std::string_view name) {
  if (name == "allreduce" || name == "all_reduce") return CollectiveKind::all_reduce;
  if (name == "broadcast") return CollectiveKind::broadcast;
  if (name == "allgather" || name == "all_gather" || name == "_allgather_base" || name == "_all_gather_base" || name == "all_gather_into_tensor_coalesced")
    return CollectiveKind::all_gather;
  if (name == "reduce_scatter" || name == "_reduce_scatter_base" || name == "reduce_scatter_tensor_coalesced") return CollectiveKind::reduce_scatter;
  if (name == "all_to_all" || name == "all_to_allv" || name == "alltoall" || name == "alltoall_base" || name == "_alltoall_base" ||
      name == "all_to_all_single")
    return CollectiveKind::all_to_all;
  return std::nullopt;
}

// A recorded collective (an NCCL kernel of a DDP rank's trace) on the destination, its ranks placed on the
// destination's typical nodes. All-gather and reduce-scatter move half an all-reduce's bus bytes for the
// same buffer, all-to-all an all-gather's (`bytes`: the input per rank, as the profiler records it). nullopt: a collective the model
// does not know, or a GPU without link figures; the kernel is then scaled like any other.
[[nodiscard]] inline std::optional<double> collective_us(std::string_view name, double bytes, int ranks, const Device& d) {
  const auto kind = collective_kind(name);
  if (!kind || ranks < 1 || !(bytes >= 0) || !std::isfinite(bytes)) return std::nullopt;
  Topology t;
  try {
    t = topology(d, ranks);
  } catch (const habitat::error&) {
    return std::nullopt;
  }
  switch (*kind) {
    case CollectiveKind::all_reduce: return allreduce(bytes, t).us;
    case CollectiveKind::broadcast: return broadcast_us(bytes, t);
    case CollectiveKind::all_gather: return all_gather_us(bytes * ranks, t);
    case CollectiveKind::reduce_scatter: return reduce_scatter_us(bytes, t);
    case CollectiveKind::all_to_all: return all_to_all_us(bytes, t);
  }
  return std::nullopt;
}

}  // namespace habitat::comm
