#pragma once
// The launch list handed from habitat-cupti-collect to the injected collector: which kernel launches
// (name and configuration, as the trace recorded them) to measure.
#include <boost/json.hpp>

#include <fstream>
#include <sstream>
#include <string>
#include <unordered_set>
#include <vector>

#include "habitat/detail/json_fields.hpp"
#include "habitat/metrics/metric_file.hpp"
#include "habitat/metrics/attach.hpp"
#include "habitat/metrics/selection.hpp"

namespace habitat::cupti {

// Identity of a launch as the trace sees it: normalized name, grid, block, static + dynamic shared memory.
[[nodiscard]] inline std::string trace_launch_id(std::string_view normalized_name, const Dim3& g, const Dim3& b, long smem_total) {
  return habitat::detail::launch_id(normalized_name, g, b) + "|" + std::to_string(smem_total);
}

inline void write_selection(const std::vector<SelectedLaunch>& sel, const std::string& path) {
  boost::json::array a;
  for (const auto& s : sel)
    a.push_back(boost::json::object{{"name", s.name},
                                    {"grid", habitat::detail::dim3_json(s.grid)},
                                    {"block", habitat::detail::dim3_json(s.block)},
                                    {"shared_mem_bytes", s.shared_mem_bytes}});
  std::ofstream out(path);
  out << boost::json::serialize(boost::json::object{{"launches", std::move(a)}});
  if (!out) throw make_error(path, "", "cannot write launch selection");
}

[[nodiscard]] inline std::unordered_set<std::string> read_selection(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw make_error(path, "", "cannot open launch selection");
  std::ostringstream text;
  text << in.rdbuf();
  const auto doc = habitat::detail::parse_document(text.str(), path);
  std::unordered_set<std::string> ids;
  const auto* a = doc.is_object() ? doc.get_object().if_contains("launches") : nullptr;
  if (!a || !a->is_array()) throw make_error(path, "top level", "missing array 'launches'");
  std::size_t i = 0;
  for (const auto& v : a->get_array()) {
    const habitat::detail::JsonPlace at{path, "launches[" + std::to_string(i++) + "]"};
    if (!v.is_object()) throw make_error(path, at.place, "expected an object");
    const auto& o = v.get_object();
    const auto name = habitat::detail::opt_string(o, "name", at).value_or("");
    ids.insert(trace_launch_id(normalize_kernel_name(name), habitat::detail::dim3_from(o, "grid", at),
                               habitat::detail::dim3_from(o, "block", at),
                               static_cast<long>(habitat::detail::number(o, "shared_mem_bytes", at))));
  }
  return ids;
}

}  // namespace habitat::cupti
