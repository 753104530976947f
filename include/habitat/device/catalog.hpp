#pragma once
// The device catalog: built-in GPUs (data/devices.json, embedded at build time) plus user files that add
// or override devices. Lookup accepts names, aliases and the CUDA device names traces carry.
#include <algorithm>
#include <cmath>
#include <cctype>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "habitat/detail/json_fields.hpp"
#include "habitat/device/catalog_data.hpp"
#include "habitat/device/device.hpp"

namespace habitat {

// Lower case without vendor prefixes, spaces, dashes or underscores: "NVIDIA H100 80GB HBM3" -> "h10080gbhbm3".
[[nodiscard]] inline std::string normalize_device_name(std::string_view s) {
  std::string out;
  for (char c : s) {
    if (std::isalnum(static_cast<unsigned char>(c))) out += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  }
  for (std::string_view prefix : {"nvidia", "geforce", "tesla", "quadro"}) {
    if (out.starts_with(prefix) && out.size() > prefix.size()) out.erase(0, prefix.size());
  }
  return out;
}

class Catalog {
 public:
  [[nodiscard]] static Catalog builtin() { return from_json(detail::builtin_catalog_json, "<built-in catalog>"); }

  [[nodiscard]] static Catalog from_json(std::string_view text, std::string_view file) {
    Catalog c;
    c.merge_json(text, file);
    return c;
  }

  // Adds the devices of a user file; a device whose name matches an existing one overrides only the
  // fields the file gives.
  void merge_file(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) throw make_error(path, "", "cannot open device file");
    std::stringstream ss;
    ss << in.rdbuf();
    merge_json(ss.str(), path);
  }

  void merge_json(std::string_view text, std::string_view file) {
    using namespace boost::json;
    const value doc = detail::parse_document(text, file);
    if (!doc.is_object()) throw make_error(file, "top level", "expected an object with a 'devices' array");
    const object& root = doc.get_object();
    if (auto schema = detail::opt_string(root, "schema", {file, "top level"}); schema && *schema != "habitat.devices/1")
      throw make_error(file, "schema", "unsupported schema '" + *schema + "' (expected habitat.devices/1)");
    if (const auto* arch = root.if_contains("architectures")) {
      if (!arch->is_object()) throw make_error(file, "architectures", "must be an object keyed by compute capability");
      for (const auto& [cc, limits] : arch->get_object()) {
        if (!limits.is_object()) throw make_error(file, "architectures." + std::string(cc), "must be an object");
        architectures_[std::string(cc)] = parse_limits(limits.get_object(), architectures_[std::string(cc)],
                                                       {file, "architectures." + std::string(cc)});
      }
    }
    const auto* devs = root.if_contains("devices");
    if (!devs || !devs->is_array()) throw make_error(file, "top level", "missing 'devices' array");
    std::size_t i = 0;
    for (const auto& v : devs->get_array()) {
      const std::string place = "devices[" + std::to_string(i++) + "]";
      if (!v.is_object()) throw make_error(file, place, "each device must be an object");
      const object& o = v.get_object();
      const auto name = detail::opt_string(o, "name", {file, place});
      if (!name || name->empty()) throw make_error(file, place, "missing field 'name'");
      Device* existing = find_mutable(*name);
      Device d = parse_device(o, existing ? *existing : Device{}, {file, place + " (" + *name + ")"});
      if (existing) *existing = std::move(d);
      else devices_.push_back(std::move(d));
    }
  }

  [[nodiscard]] const std::vector<Device>& devices() const { return devices_; }

  [[nodiscard]] const Device* find(std::string_view name) const {
    return const_cast<Catalog*>(this)->find_mutable(name);
  }

  // A name that is not one GPU's name or alias but begins several ("A100": four GPUs) is ambiguous, and
  // one that begins a single GPU's name is not taken either ("L40" is not the L40S): both say which names
  // would do, rather than pick one silently.
  [[nodiscard]] const Device& at(std::string_view name) const {
    if (const Device* d = find(name)) return *d;
    const std::string key = normalize_device_name(name);
    std::string candidates;
    int n = 0;
    for (const auto& d : devices_) {
      bool begins = !key.empty() && normalize_device_name(d.name).starts_with(key);
      for (const auto& a : d.aliases) begins |= !key.empty() && normalize_device_name(a).starts_with(key);
      if (begins) candidates += (n++ ? ", " : "") + d.name;
    }
    if (n > 1)
      throw make_error("", "device '" + std::string(name) + "'", "ambiguous: it names " + std::to_string(n) + " GPUs (" + candidates + "); give one of them");
    if (n == 1) throw make_error("", "device '" + std::string(name) + "'", "unknown GPU; did you mean " + candidates + "?");
    std::string known;
    for (const auto& d : devices_) known += (known.empty() ? "" : ", ") + d.name;
    throw make_error("", "device '" + std::string(name) + "'",
                     "unknown GPU; known: " + known + " (add it with --devices FILE, see README)");
  }

  // Occupancy limits of a compute capability (for traces of GPUs not in the catalog).
  [[nodiscard]] const OccupancyLimits* limits_for(int major, int minor) const {
    auto it = architectures_.find(std::to_string(major) + "." + std::to_string(minor));
    return it == architectures_.end() ? nullptr : &it->second;
  }

 private:
  Device* find_mutable(std::string_view name) {
    const std::string key = normalize_device_name(name);
    for (auto& d : devices_) {
      if (normalize_device_name(d.name) == key) return &d;
      for (const auto& a : d.aliases)
        if (normalize_device_name(a) == key) return &d;
    }
    return nullptr;
  }

  static OccupancyLimits parse_limits(const boost::json::object& o, OccupancyLimits l, const detail::JsonPlace& at) {
    auto set_int = [&](std::string_view key, auto& field) {
      if (auto v = detail::opt_number(o, key, at)) {
        if (*v <= 0) throw make_error(at.file, at.place, "field '" + std::string(key) + "' must be positive");
        field = static_cast<std::remove_reference_t<decltype(field)>>(*v);
      }
    };
    set_int("max_threads_per_block", l.max_threads_per_block);
    set_int("max_threads_per_sm", l.max_threads_per_sm);
    set_int("regs_per_block", l.regs_per_block);
    set_int("regs_per_sm", l.regs_per_sm);
    set_int("warp_size", l.warp_size);
    set_int("shared_mem_per_block", l.shared_mem_per_block);
    set_int("shared_mem_per_sm", l.shared_mem_per_sm);
    set_int("shared_mem_per_block_optin", l.shared_mem_per_block_optin);
    if (auto v = detail::opt_number(o, "reserved_shared_mem_per_block", at)) l.reserved_shared_mem_per_block = static_cast<long>(*v);
    return l;
  }

  // "interconnect": {"nvlink": {generation, links, gbps_per_direction, switch}, "pcie": {generation, lanes,
  // gbps_per_direction}, "node": {gpus, shape}, "network": {gbps_per_gpu, kind}, "source"}; every part optional.
  static Interconnect parse_interconnect(const boost::json::value& v, const detail::JsonPlace& outer) {
    const detail::JsonPlace at{outer.file, outer.place + ".interconnect"};
    if (!v.is_object()) throw make_error(at.file, at.place, "must be an object");
    const auto& o = v.get_object();
    Interconnect ic;
    auto part = [&](std::string_view key) -> const boost::json::object* {
      const auto* p = o.if_contains(key);
      if (!p || p->is_null()) return nullptr;
      if (!p->is_object()) throw make_error(at.file, at.place, "field '" + std::string(key) + "' must be an object");
      return &p->get_object();
    };
    auto whole = [&](const boost::json::object& p, std::string_view key, int lo, int hi, std::string_view in) -> int {
      auto x = detail::opt_number(p, key, {at.file, at.place + "." + std::string(in)});
      if (!x) return 0;
      if (!(*x >= lo && *x <= hi && *x == std::floor(*x)))
        throw make_error(at.file, at.place + "." + std::string(in), "field '" + std::string(key) + "' must be a whole number from " +
                                                                      std::to_string(lo) + " to " + std::to_string(hi));
      return static_cast<int>(*x);
    };
    auto gbps = [&](const boost::json::object& p, std::string_view key, std::string_view in) -> double {
      auto x = detail::opt_number(p, key, {at.file, at.place + "." + std::string(in)});
      if (!x) return 0;
      if (!(std::isfinite(*x) && *x > 0 && *x < 1e5))
        throw make_error(at.file, at.place + "." + std::string(in), "field '" + std::string(key) + "' must be a positive number of GB/s below 100000");
      return *x;
    };
    if (const auto* p = part("nvlink")) {
      ic.nvlink_generation = whole(*p, "generation", 1, 20, "nvlink");
      ic.nvlink_links = whole(*p, "links", 1, 1000, "nvlink");
      ic.nvlink_gbps = gbps(*p, "gbps_per_direction", "nvlink");
      if (const auto* s = p->if_contains("switch")) {
        if (!s->is_bool()) throw make_error(at.file, at.place + ".nvlink", "field 'switch' must be true or false");
        ic.nvswitch = s->get_bool();
      }
    }
    if (const auto* p = part("pcie")) {
      ic.pcie_generation = whole(*p, "generation", 1, 20, "pcie");
      ic.pcie_lanes = whole(*p, "lanes", 1, 64, "pcie");
      ic.pcie_gbps = gbps(*p, "gbps_per_direction", "pcie");
    }
    if (const auto* p = part("node")) {
      if (const int g = whole(*p, "gpus", 1, 1024, "node")) ic.node_gpus = g;
      ic.node_shape = detail::opt_string(*p, "shape", {at.file, at.place + ".node"}).value_or("");
    }
    if (const auto* p = part("network")) {
      ic.network_gbps = gbps(*p, "gbps_per_gpu", "network");
      ic.network = detail::opt_string(*p, "kind", {at.file, at.place + ".network"}).value_or("");
    }
    ic.source = detail::opt_string(o, "source", at).value_or("");
    return ic;
  }

  Device parse_device(const boost::json::object& o, Device d, const detail::JsonPlace& at) const {
    using detail::opt_number;
    using detail::opt_string;
    d.name = *opt_string(o, "name", at);
    if (const auto* al = o.if_contains("aliases")) {
      if (!al->is_array()) throw make_error(at.file, at.place, "field 'aliases' must be an array of strings");
      for (const auto& a : al->get_array()) {
        if (!a.is_string()) throw make_error(at.file, at.place, "field 'aliases' must be an array of strings");
        d.aliases.emplace_back(a.get_string());
      }
    }
    if (auto cc = opt_string(o, "compute_capability", at)) {
      int major = 0, minor = 0;
      if (std::sscanf(cc->c_str(), "%d.%d", &major, &minor) != 2 || major <= 0)
        throw make_error(at.file, at.place, "compute_capability must look like \"9.0\", got \"" + *cc + "\"");
      d.cc_major = major;
      d.cc_minor = minor;
      if (const OccupancyLimits* l = limits_for(major, minor)) d.limits = *l;
      else if (!o.contains("limits"))
        throw make_error(at.file, at.place, "compute capability " + *cc + " has no occupancy limits; add them under 'limits'");
    }
    if (const auto* l = o.if_contains("limits")) {
      if (!l->is_object()) throw make_error(at.file, at.place, "field 'limits' must be an object");
      d.limits = parse_limits(l->get_object(), d.limits, at);
    }
    auto num = [&](std::string_view key, double& field) {
      if (auto v = opt_number(o, key, at)) field = *v;
    };
    if (auto v = opt_number(o, "sms", at)) {
      if (!(*v >= 1 && *v <= 100000 && *v == std::floor(*v))) throw make_error(at.file, at.place, "field 'sms' must be a whole number from 1 to 100000");
      d.sms = static_cast<int>(*v);
    }
    num("base_clock_mhz", d.base_clock_mhz);
    num("boost_clock_mhz", d.boost_clock_mhz);
    num("memory_gib", d.memory_gib);
    num("bandwidth_gbps", d.bandwidth_spec_gbps);
    if (auto v = opt_number(o, "measured_bandwidth_gbps", at)) d.bandwidth_measured_gbps = *v;
    if (auto v = opt_string(o, "measured_bandwidth_source", at)) d.bandwidth_measured_source = *v;
    // The per-SM physics must be positive where given; a clock of 0 means "the boost clock" (it resets an
    // override), a tensor rate of 0 "no such datapath".
    for (std::string_view key : {"fp32_lanes_per_sm", "fp64_lanes_per_sm", "tdp_w"})
      if (auto v = opt_number(o, key, at); v && !(*v > 0))
        throw make_error(at.file, at.place, "field '" + std::string(key) + "' must be a positive number");
    for (std::string_view key : {"tensor_clock_mhz", "sustained_clock_mhz"})
      if (auto v = opt_number(o, key, at); v && !(*v >= 0))
        throw make_error(at.file, at.place, "field '" + std::string(key) + "' must be 0 (the boost clock) or a positive number");
    num("tensor_clock_mhz", d.tensor_clock_mhz);
    num("sustained_clock_mhz", d.sustained_clock_mhz);
    if (auto v = opt_string(o, "sustained_clock_source", at)) d.sustained_clock_source = *v;
    num("fp32_lanes_per_sm", d.fp32_lanes_per_sm);
    num("fp64_lanes_per_sm", d.fp64_lanes_per_sm);
    num("tdp_w", d.tdp_w);
    if (const auto* t = o.if_contains("tensor_flops_per_clk_per_sm")) {
      if (!t->is_object()) throw make_error(at.file, at.place, "field 'tensor_flops_per_clk_per_sm' must be an object");
      const detail::JsonPlace tat{at.file, at.place + ".tensor_flops_per_clk_per_sm"};
      for (const auto& [key, v] : t->get_object())
        if (key != "tf32" && key != "fp16" && key != "bf16" && key != "fp8")
          throw make_error(tat.file, tat.place, "unknown datapath '" + std::string(key) + "' (tf32, fp16, bf16, fp8)");
      for (auto [key, field] : {std::pair{"tf32", &d.tensor.tf32}, {"fp16", &d.tensor.fp16}, {"bf16", &d.tensor.bf16}, {"fp8", &d.tensor.fp8}})
        if (auto v = opt_number(t->get_object(), key, tat)) {
          if (!(*v >= 0)) throw make_error(tat.file, tat.place, std::string("'") + key + "' must be 0 (none) or positive");
          *field = *v;
        }
    }
    if (const auto* ds = o.if_contains("datasheet")) {
      if (!ds->is_object()) throw make_error(at.file, at.place, "field 'datasheet' must be an object of peak figures");
      for (const auto& [key, v] : ds->get_object())
        if (auto x = opt_number(ds->get_object(), key, {at.file, at.place + ".datasheet"})) d.datasheet[std::string(key)] = *x;
    }
    // Peak figures from a user file (the older schema) become per-SM rates, so every peak is derived alike.
    const double sm_ghz = d.sms * d.boost_clock_mhz * 1e-3;
    if (auto v = opt_number(o, "fp32_tflops", at); v && sm_ghz > 0) d.fp32_lanes_per_sm = *v * 1e3 / (2 * sm_ghz);
    for (auto [key, field] : {std::pair{"tf32_tflops", &d.tensor.tf32}, {"fp16_tflops", &d.tensor.fp16}, {"bf16_tflops", &d.tensor.bf16}})
      if (auto v = opt_number(o, key, at); v && sm_ghz > 0) {
        const double per_clk = *v * 1e3 / (d.sms * (d.tensor_clock_mhz > 0 ? d.tensor_clock_mhz : d.boost_clock_mhz) * 1e-3);
        *field = per_clk > 2 * d.fp32_lanes_per_sm * 1.01 ? per_clk : 0;  // equal to FP32: no tensor datapath
      }
    num("l2_mib", d.l2_mib);
    if (auto v = opt_string(o, "source", at)) d.source = *v;
    if (auto v = opt_string(o, "validation", at)) d.validation = *v;
    if (auto v = opt_string(o, "reference_host", at)) d.reference_host = *v;
    if (const auto* ic = o.if_contains("interconnect"); ic && !ic->is_null()) d.interconnect = parse_interconnect(*ic, at);
    if (const auto* p = o.if_contains("price"); p && !p->is_null()) {
      if (!p->is_object()) throw make_error(at.file, at.place, "field 'price' must be an object");
      const auto& po = p->get_object();
      const detail::JsonPlace pat{at.file, at.place + ".price"};
      d.price = Price{detail::number(po, "usd_per_hour", pat), opt_string(po, "date", pat).value_or(""),
                      opt_string(po, "source", pat).value_or("")};
    }
    // A device must be usable by wave scaling and the roofline: refuse half-filled rows here, not later.
    if (d.cc_major <= 0) throw make_error(at.file, at.place, "missing field 'compute_capability'");
    for (auto [key, value] : {std::pair{"sms", double(d.sms)}, {"boost_clock_mhz", d.boost_clock_mhz},
                              {"bandwidth_gbps", d.bandwidth_spec_gbps}}) {
      if (!(value > 0)) throw make_error(at.file, at.place, std::string("field '") + key + "' must be a positive number");
    }
    if (!(d.fp32_lanes_per_sm > 0))
      throw make_error(at.file, at.place, "field 'fp32_lanes_per_sm' (or 'fp32_tflops') must be a positive number");
    if (d.bandwidth_measured_gbps && !(*d.bandwidth_measured_gbps > 0))
      throw make_error(at.file, at.place, "field 'measured_bandwidth_gbps' must be a positive number");
    if (d.base_clock_mhz <= 0) d.base_clock_mhz = d.boost_clock_mhz;
    return d;
  }

  std::vector<Device> devices_;
  std::map<std::string, OccupancyLimits> architectures_;
};

}  // namespace habitat
