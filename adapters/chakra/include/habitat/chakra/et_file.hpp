#pragma once
// Writes a StepGraph (step_graph.hpp) as Chakra execution-trace files, with the classes protoc generates
// from adapters/chakra/proto/et_def.proto (habitat's wire-compatible description of Chakra's schema).
//
// The framing is Chakra's, as its readers expect it (Chakra's ETFeeder and protolib, ASTRA-sim's
// feeder): every message is preceded by its size in bytes as a base-128 varint; the first message is a
// GlobalMetadata, each later one a Node. Files are not compressed (ASTRA-sim reads them as they are). A
// message of zero bytes would end the file for Chakra's Python reader: habitat's never are (the metadata
// carries its version, every node its name).
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "et_def.pb.h"
#include "habitat/chakra/step_graph.hpp"
#include "habitat/error.hpp"

namespace habitat::chakra {

// GlobalMetadata.version as ASTRA-sim's and Chakra's example traces write it, and the schema attribute
// of Chakra's converters for that version.
inline constexpr const char* et_version = "0.0.4";
inline constexpr const char* et_schema = "1.0.2-chakra.0.0.4";

namespace detail {

inline void append_varint(std::string& out, std::uint64_t v) {
  while (v >= 0x80) {
    out.push_back(static_cast<char>((v & 0x7f) | 0x80));
    v >>= 7;
  }
  out.push_back(static_cast<char>(v));
}

inline void append_message(std::string& out, const google::protobuf::MessageLite& m) {
  const std::string bytes = m.SerializeAsString();
  append_varint(out, bytes.size());
  out += bytes;
}

inline void set_value(ChakraProtoMsg::AttributeProto& a, const Attr& x) {
  a.set_name(x.name);
  if (const auto* s = std::get_if<std::string>(&x.value)) a.set_string_val(*s);
  else if (const auto* i = std::get_if<std::int64_t>(&x.value)) a.set_int64_val(*i);
  else if (const auto* d = std::get_if<double>(&x.value)) a.set_double_val(*d);
  else if (const auto* b = std::get_if<bool>(&x.value)) a.set_bool_val(*b);
  else
    for (const auto& v : std::get<std::vector<std::string>>(x.value)) a.mutable_string_list()->add_values(v);
}

}  // namespace detail

// A node as Chakra has it. Attributes by the names and types ASTRA-sim reads: is_cpu_op (bool) on every
// node (some of its versions take a node without it for the host's), comm_type and comm_size (int64) on
// collectives, comm_src, comm_dst, comm_tag (int32) and comm_size on sends and receives; stream (int64, as
// Chakra's PyTorch converter writes it) and op (string) for people.
[[nodiscard]] inline ChakraProtoMsg::Node to_proto(const EtNode& n) {
  ChakraProtoMsg::Node m;
  m.set_id(n.id);
  m.set_name(n.name);
  m.set_type(static_cast<ChakraProtoMsg::NodeType>(static_cast<int>(n.type)));
  for (const auto d : n.deps) m.add_data_deps(d);
  m.set_duration_micros(n.duration_micros);
  auto attr = [&](const Attr& a) { detail::set_value(*m.add_attr(), a); };
  attr({"is_cpu_op", n.on_cpu});
  if (n.comm) {
    attr({"comm_type", static_cast<std::int64_t>(*n.comm)});
    attr({"comm_size", static_cast<std::int64_t>(std::llround(n.comm_bytes))});
  }
  if (n.type == NodeType::comm_send || n.type == NodeType::comm_recv) {  // int32 ranks and tag, as Chakra's feeders read them
    auto* a = m.add_attr();
    a->set_name("comm_src");
    a->set_int32_val(n.src);
    a = m.add_attr();
    a->set_name("comm_dst");
    a->set_int32_val(n.dst);
    attr({"comm_size", static_cast<std::int64_t>(std::llround(n.comm_bytes))});
    a = m.add_attr();
    a->set_name("comm_tag");
    a->set_int32_val(static_cast<std::int32_t>(n.tag));
  }
  if (n.stream >= 0) attr({"stream", n.stream});
  if (!n.op.empty()) attr({"op", n.op});
  return m;
}

[[nodiscard]] inline ChakraProtoMsg::GlobalMetadata metadata_proto(const std::vector<Attr>& attrs) {
  ChakraProtoMsg::GlobalMetadata m;
  m.set_version(et_version);
  detail::set_value(*m.add_attr(), {"schema", std::string(et_schema)});
  for (const auto& a : attrs) detail::set_value(*m.add_attr(), a);
  return m;
}

// The graph's nodes, framed: the same bytes for every rank of a data-parallel step.
[[nodiscard]] inline std::string framed_nodes(const StepGraph& g) {
  std::string out;
  for (const auto& n : g.nodes) detail::append_message(out, to_proto(n));
  return out;
}

// One rank's file: its metadata, then the framed nodes. Returns the bytes written.
inline std::size_t write_et_file(const std::string& path, const std::vector<Attr>& metadata, const std::string& nodes) {
  std::string head;
  detail::append_message(head, metadata_proto(metadata));
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (out) {
    out.write(head.data(), static_cast<std::streamsize>(head.size()));
    out.write(nodes.data(), static_cast<std::streamsize>(nodes.size()));
    out.close();
  }
  if (!out) throw make_error(path, "--out", std::string("cannot write the file: ") + std::strerror(errno));
  return head.size() + nodes.size();
}

}  // namespace habitat::chakra
