#pragma once
// The metric file, schema "habitat.metrics/1": measured kernels with the GPU and software they were
// measured on. One file per workload and GPU; several may be given to a prediction.
#include <boost/json.hpp>

#include <fstream>
#include <limits>
#include <sstream>
#include <string>

#include "habitat/detail/json_fields.hpp"
#include "habitat/detail/json_text.hpp"
#include "habitat/detail/launch_limits.hpp"
#include "habitat/metrics/measured_kernel.hpp"

namespace habitat {

inline constexpr std::string_view metrics_schema = "habitat.metrics/1";

namespace detail {

[[nodiscard]] inline boost::json::array dim3_json(const Dim3& d) { return {d.x, d.y, d.z}; }

[[nodiscard]] inline Dim3 dim3_from(const boost::json::object& o, std::string_view key, const JsonPlace& at) {
  const auto* v = o.if_contains(key);
  if (!v || !v->is_array() || v->get_array().size() != 3)
    throw make_error(at.file, at.place, "field '" + std::string(key) + "' must be an array of 3 integers");
  Dim3 d;
  std::int64_t* out[3] = {&d.x, &d.y, &d.z};
  for (std::size_t i = 0; i < 3; ++i) {
    const auto& e = v->get_array()[i];
    if (!e.is_int64() && !e.is_uint64()) throw make_error(at.file, at.place, "field '" + std::string(key) + "' must hold integers");
    // Above int64's range Boost.JSON keeps a uint64, which to_number would refuse with an exception of its own.
    if (e.is_uint64() && e.get_uint64() > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max()))
      throw make_error(at.file, at.place, "field '" + std::string(key) + "' holds " + std::to_string(e.get_uint64()) + ", beyond any launch");
    *out[i] = e.is_int64() ? e.get_int64() : static_cast<std::int64_t>(e.get_uint64());
    if (*out[i] < 1) throw make_error(at.file, at.place, "field '" + std::string(key) + "' must be positive");
  }
  return d;
}

[[nodiscard]] inline double non_negative(const boost::json::object& o, std::string_view key, const JsonPlace& at,
                                         double fallback = 0) {
  const double v = opt_number(o, key, at).value_or(fallback);
  if (!(v >= 0) || !std::isfinite(v))
    throw make_error(at.file, at.place, "field '" + std::string(key) + "' must be a finite number >= 0");
  return v;
}

inline constexpr Range kernel_bytes{0, max_kernel_bytes, "bytes"};
inline constexpr Range kernel_flops{0, max_kernel_flops, "FLOPs"};
inline constexpr Range kernel_ns{0, max_kernel_ns, "ns"};

}  // namespace detail

[[nodiscard]] inline boost::json::object to_json(const MeasuredKernel& m) {
  boost::json::object flops;
  for (auto k : all_flop_kinds)
    if (m.flops[k] > 0) flops[to_string(k)] = m.flops[k];
  boost::json::object o{{"name", m.name},
                        {"grid", detail::dim3_json(m.key.grid)},
                        {"block", detail::dim3_json(m.key.block)},
                        {"smem_dynamic", m.key.smem_dynamic},
                        {"dram_read_bytes", m.dram_read_bytes},
                        {"dram_write_bytes", m.dram_write_bytes},
                        {"flops", std::move(flops)},
                        {"duration_ns", m.duration_ns},
                        {"launches", m.launches}};
  if (m.key.smem_static) o["smem_static"] = *m.key.smem_static;
  if (m.flops_spread > 0) o["flops_spread"] = m.flops_spread;
  return o;
}

[[nodiscard]] inline std::string to_json_text(const MetricSet& s) {
  const auto& p = s.provenance;
  boost::json::object prov{{"device", p.device},           {"chip", p.chip},
                           {"tool", p.tool},               {"tool_version", p.tool_version},
                           {"cuda_version", p.cuda_version}, {"driver_version", p.driver_version},
                           {"workload", p.workload},       {"collected_at", p.collected_at}};
  if (p.collection_seconds) prov["collection_seconds"] = *p.collection_seconds;
  std::ostringstream out;
  out << "{\"schema\":" << habitat::detail::json_text(boost::json::string(metrics_schema)) << ",\n\"measured_on\":"
      << habitat::detail::json_text(prov) << ",\n\"units\":{\"bytes\":\"byte\",\"flops\":\"floating-point operations\","
      << "\"duration_ns\":\"nanosecond\"},\n\"kernels\":[";
  bool first = true;
  for (const auto& m : s.kernels()) {
    out << (first ? "\n" : ",\n") << habitat::detail::json_text(to_json(m));
    first = false;
  }
  out << "\n]}\n";
  return out.str();
}

[[nodiscard]] inline MetricSet metric_set_from_json(std::string_view text, const std::string& file) {
  using detail::JsonPlace;
  const auto doc = detail::parse_document(text, file);
  if (!doc.is_object()) throw make_error(file, "top level", "expected a JSON object");
  const auto& root = doc.get_object();
  const auto schema = detail::opt_string(root, "schema", {file, "top level"});
  if (!schema) throw make_error(file, "top level", "missing 'schema' (expected \"habitat.metrics/1\")");
  if (*schema != metrics_schema)
    throw make_error(file, "schema", "unsupported schema '" + *schema + "' (this build reads \"habitat.metrics/1\")");
  MetricSet set;
  if (const auto* mo = root.if_contains("measured_on"); mo && mo->is_object()) {
    const auto& o = mo->get_object();
    const JsonPlace at{file, "measured_on"};
    auto& p = set.provenance;
    p.device = detail::opt_string(o, "device", at).value_or("");
    p.chip = detail::opt_string(o, "chip", at).value_or("");
    p.tool = detail::opt_string(o, "tool", at).value_or("");
    p.tool_version = detail::opt_string(o, "tool_version", at).value_or("");
    p.cuda_version = detail::opt_string(o, "cuda_version", at).value_or("");
    p.driver_version = detail::opt_string(o, "driver_version", at).value_or("");
    p.workload = detail::opt_string(o, "workload", at).value_or("");
    p.collected_at = detail::opt_string(o, "collected_at", at).value_or("");
    p.collection_seconds = detail::opt_number_in(o, "collection_seconds", at, {0, 1e9, "seconds"});
  }
  if (set.provenance.device.empty())
    throw make_error(file, "measured_on.device", "missing: a metric file must say which GPU it was measured on");
  if (const auto* u = root.if_contains("units"); u && u->is_object()) {
    const auto b = detail::opt_string(u->get_object(), "bytes", {file, "units"});
    if (b && *b != "byte") throw make_error(file, "units.bytes", "is '" + *b + "'; habitat.metrics/1 stores plain bytes");
  }
  const auto* ks = root.if_contains("kernels");
  if (!ks || !ks->is_array()) throw make_error(file, "top level", "missing array 'kernels'");
  std::size_t i = 0;
  for (const auto& kv : ks->get_array()) {
    const JsonPlace at{file, "kernels[" + std::to_string(i++) + "]"};
    if (!kv.is_object()) throw make_error(at.file, at.place, "expected an object");
    const auto& o = kv.get_object();
    MeasuredKernel m;
    m.name = detail::opt_string(o, "name", at).value_or("");
    if (m.name.empty()) throw make_error(at.file, at.place, "missing kernel 'name'");
    m.key.name = normalize_kernel_name(m.name);
    m.key.grid = detail::dim3_from(o, "grid", at);
    m.key.block = detail::dim3_from(o, "block", at);
    if (auto bad = detail::launch_limit_violation(m.key.grid, m.key.block)) throw make_error(at.file, at.place, *bad);
    m.key.smem_dynamic = detail::opt_whole(o, "smem_dynamic", at, 0L, detail::max_shared_mem_per_block, "bytes").value_or(0);
    m.key.smem_static = detail::opt_whole(o, "smem_static", at, 0L, detail::max_shared_mem_per_block, "bytes");
    m.dram_read_bytes = detail::opt_number_in(o, "dram_read_bytes", at, detail::kernel_bytes).value_or(0);
    m.dram_write_bytes = detail::opt_number_in(o, "dram_write_bytes", at, detail::kernel_bytes).value_or(0);
    m.duration_ns = detail::opt_number_in(o, "duration_ns", at, detail::kernel_ns).value_or(0);
    m.launches = detail::opt_whole(o, "launches", at, 1, max_folded_launches).value_or(1);
    m.flops_spread = detail::non_negative(o, "flops_spread", at);
    if (const auto* f = o.if_contains("flops")) {
      if (!f->is_object()) throw make_error(at.file, at.place + ".flops", "expected an object of FLOPs by kind");
      for (const auto& [name, v] : f->get_object()) {
        bool known = false;
        for (auto k : all_flop_kinds)
          if (name == to_string(k)) {
            m.flops[k] = detail::opt_number_in(f->get_object(), name, {file, at.place + ".flops"}, detail::kernel_flops).value_or(0);
            known = true;
          }
        if (!known) throw make_error(at.file, at.place + ".flops", "unknown FLOP kind '" + std::string(name) + "'");
      }
    }
    // Entries of one launch configuration fold into one, their launches summed: that sum must fit too.
    if (const auto* prev = set.find(m.key); prev && prev->launches > max_folded_launches - m.launches)
      throw make_error(at.file, at.place + ".launches", "with the earlier entries of this kernel, more than " +
                                                           std::to_string(max_folded_launches) + " launches");
    set.add(m);
  }
  return set;
}

[[nodiscard]] inline MetricSet read_metric_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw make_error(path, "", "cannot open metric file");
  std::ostringstream text;
  text << in.rdbuf();
  return metric_set_from_json(text.str(), path);
}

inline void write_metric_file(const MetricSet& s, const std::string& path) {
  std::ofstream out(path, std::ios::binary);
  if (!out) throw make_error(path, "", "cannot write metric file");
  out << to_json_text(s);
  if (!out) throw make_error(path, "", "write failed");
}

}  // namespace habitat
