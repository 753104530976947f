#pragma once
// The device catalog: built-in GPUs (data/devices.json, embedded at build time) plus user files that add
// or override devices. Lookup accepts names, aliases and the CUDA device names traces carry.
#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "habitat/detail/json_fields.hpp"
#include "habitat/device/catalog_data.hpp"
#include "habitat/device/device.hpp"
#include "habitat/device/tensor_power_fit.hpp"

namespace habitat {

namespace detail::plausible {
// Plausible bounds of what a device file says (the built-in catalog spans 192-8000 GB/s, 14-170 SMs,
// 1063-2520 MHz, 64-128 FP32 lanes and 256-16384 tensor FLOP/clk per SM): room for GPUs past and to come,
// while a figure many orders of magnitude off is refused.
inline constexpr Range clock_mhz{10, 10000, "MHz"};
inline constexpr Range clock_or_default_mhz{10, 10000, "MHz", true};  // 0: the boost clock
inline constexpr Range bandwidth_gbps{1, 100000, "GB/s"};
inline constexpr Range link_gbps{0.01, 100000, "GB/s"};
inline constexpr Range fp32_lanes{1, 10000, "lanes"};
inline constexpr Range fp64_lanes{0.01, 10000, "lanes"};
inline constexpr Range tensor_per_clk{1, 1e6, "FLOP per clock per SM", true};  // 0: no such datapath
inline constexpr Range peak_tflops{1e-3, 1e6, "TFLOPS"};
inline constexpr Range memory_gib{0, 100000, "GiB"};
inline constexpr Range l2_mib{0, 100000, "MiB"};
inline constexpr Range power_w{1, 100000, "W"};
inline constexpr Range usd_per_hour{0, 10000, "USD per hour"};
inline constexpr long max_shared_mem = 1L << 30;  // 1 GiB per SM or block: thousands of times today's 228 KiB
}  // namespace detail::plausible

// Lower case without vendor prefixes, spaces, dashes or underscores: "NVIDIA H100 80GB HBM3" -> "h10080gbhbm3",
// "AMD Instinct MI300X" -> "mi300x".
[[nodiscard]] inline std::string normalize_device_name(std::string_view s) {
  std::string out;
  for (char c : s) {
    if (std::isalnum(static_cast<unsigned char>(c))) out += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  }
  for (std::string_view prefix : {"nvidia", "geforce", "tesla", "quadro", "amd", "instinct"}) {
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
      if (!arch->is_object()) throw make_error(file, "architectures", "must be an object keyed by compute capability (AMD: gfx target)");
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
    derive_power_clocks(file);
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
  // An architecture's limits by its key: NVIDIA's compute capability ("9.0"), AMD's gfx target ("gfx90a").
  [[nodiscard]] const OccupancyLimits* limits_for(const std::string& key) const {
    auto it = architectures_.find(key);
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

  // Another catalog GPU with a measured tensor loop clock that draws this one's power (power_twins), where this one
  // has none measured; the first such in the catalog's order. A user's device file counts: its measurement must be
  // of the board as its facts say (a power-capped board gives its lowered limit as tdp_w).
  [[nodiscard]] const Device* measured_power_twin(const Device& d) const {
    if (d.tensor_loop_clock_mhz > 0 || !d.tensor_power_applies()) return nullptr;
    for (const auto& t : devices_)
      if (&t != &d && t.tensor_loop_clock_mhz > 0 && power_twins(d, t)) return &t;
    return nullptr;
  }

  // Power-capped cards: their clock under load from their reference's power per lane-clock; every card's tensor-core
  // GEMM loop clock from its power twin's measurement or its power limit where none was measured (after every merge,
  // as a user file may change them).
  void derive_power_clocks(std::string_view file) {
    for (auto& d : devices_) {
      // A tensor-core GEMM loop's clock from the board's power limit, where none was measured.
      d.tensor_power_clock_mhz = 0;
      d.tensor_power_clock_source.clear();
      d.tensor_power_twin.clear();
      if (const Device* twin = measured_power_twin(d)) {
        d.tensor_power_clock_mhz = twin->tensor_loop_clock_mhz;
        d.tensor_power_twin = twin->name;
        d.tensor_power_clock_source = "the " + twin->name + "'s measured tensor loop clock: this GPU has its SMs, tensor rate, clocks, memory and " +
                                      detail::number_text(d.tdp_w) + " W power limit (" + twin->tensor_loop_clock_source + ")";
      } else if (const double f = d.tensor_loop_clock_mhz > 0 ? 0.0 : tensor_power_clock(d, tensor_power_fitted); f > 0) {
        d.tensor_power_clock_mhz = f;
        d.tensor_power_clock_source = "derived from the board's power limit (" + detail::number_text(d.tdp_w) + " W over " + std::to_string(d.sms) +
                                      " SMs) against its FP16 tensor rate (tensor_power_fit.hpp, fitted on public torch.mm throughput); an estimate, "
                                      "used for tensor-core GEMMs timed on their own, not a measurement";
      }
      d.power_clock_mhz = 0;
      d.power_clock_source.clear();
      if (!d.loop_clock_peer.empty()) d.loop_clock_mhz = 0, d.loop_clock_source.clear(), d.loop_clock_peer.clear();
      if (d.power_reference.empty()) continue;
      const Device* ref = find(d.power_reference);
      if (!ref || ref == &d || !ref->power_reference.empty())
        throw make_error(file, "device '" + d.name + "', power_reference",
                         "'" + d.power_reference + "' must name another catalog GPU that holds its boost clock (no power_reference of its own)");
      if (!(d.tdp_w > 0 && ref->tdp_w > 0))
        throw make_error(file, "device '" + d.name + "', power_reference", "both '" + d.name + "' and '" + ref->name + "' need 'tdp_w'");
      d.power_clock_mhz = power_limited_clock_mhz(d, *ref);
      d.power_clock_source = "derived from the board's power limit (" + detail::number_text(d.tdp_w) + " W) and the power per FP32 lane-clock of the " +
                             ref->name + " at its boost clock and TDP, power ~ clock^2; an estimate, not a measurement";
    }
    // An SGEMM loop's clock for a capped card without one, from the capped cards of its process family measured so.
    std::vector<const Device*> all;
    for (const auto& d : devices_) all.push_back(&d);
    for (auto& d : devices_)
      if (!(d.loop_clock_mhz > 0)) derive_loop_clock_from_peers(d, all);
  }

  // Whole numbers that the occupancy calculator takes as int or size_t: bounded so none overflows there.
  static OccupancyLimits parse_limits(const boost::json::object& o, OccupancyLimits l, const detail::JsonPlace& at) {
    auto set = [&](std::string_view key, auto& field, auto lo, auto hi, std::string_view unit) {
      if (auto v = detail::opt_whole<std::remove_reference_t<decltype(field)>>(o, key, at, lo, hi, unit)) field = *v;
    };
    set("max_threads_per_block", l.max_threads_per_block, 1, 1 << 16, "threads");
    set("max_threads_per_sm", l.max_threads_per_sm, 1, 1 << 16, "threads");
    set("regs_per_block", l.regs_per_block, 1, 1 << 24, "registers");
    set("regs_per_sm", l.regs_per_sm, 1, 1 << 24, "registers");
    set("warp_size", l.warp_size, 1, 1024, "threads");
    set("shared_mem_per_block", l.shared_mem_per_block, 1L, detail::plausible::max_shared_mem, "bytes");
    set("shared_mem_per_sm", l.shared_mem_per_sm, 1L, detail::plausible::max_shared_mem, "bytes");
    set("shared_mem_per_block_optin", l.shared_mem_per_block_optin, 1L, detail::plausible::max_shared_mem, "bytes");
    set("reserved_shared_mem_per_block", l.reserved_shared_mem_per_block, 0L, detail::plausible::max_shared_mem, "bytes");
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
      return detail::opt_whole(p, key, {at.file, at.place + "." + std::string(in)}, lo, hi).value_or(0);
    };
    auto gbps = [&](const boost::json::object& p, std::string_view key, std::string_view in) -> double {
      return detail::opt_number_in(p, key, {at.file, at.place + "." + std::string(in)}, detail::plausible::link_gbps).value_or(0);
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
    if (auto v = opt_string(o, "vendor", at)) {
      if (*v != "NVIDIA" && *v != "AMD") throw make_error(at.file, detail::field_place(at, "vendor"), "must be \"NVIDIA\" or \"AMD\", got \"" + *v + "\"");
      d.vendor = *v == "AMD" ? Vendor::amd : Vendor::nvidia;
    }
    if (auto v = opt_string(o, "isa", at)) d.isa = *v;
    if (d.vendor == Vendor::amd && d.isa.empty())
      throw make_error(at.file, at.place, "an AMD GPU needs 'isa', its gfx target (e.g. \"gfx90a\"), which keys its architecture's limits");
    if (auto cc = opt_string(o, "compute_capability", at)) {
      int major = 0, minor = 0;
      if (!parse_compute_capability(*cc, major, minor))
        throw make_error(at.file, detail::field_place(at, "compute_capability"), "must look like \"9.0\" (major 1 to 99, minor 0 to 99), got \"" + *cc + "\"");
      d.cc_major = major;
      d.cc_minor = minor;
      // AMD's compute capability is HIP's gfx number (gfx90a: 9.0, as Hopper's): its limits go by its gfx target.
      const std::string key = d.vendor == Vendor::amd ? d.isa : *cc;
      if (const OccupancyLimits* l = limits_for(key)) d.limits = *l;
      else if (!o.contains("limits"))
        throw make_error(at.file, at.place, (d.vendor == Vendor::amd ? "gfx target " : "compute capability ") + key + " has no occupancy limits; add them under 'limits'");
    }
    if (const auto* l = o.if_contains("limits")) {
      if (!l->is_object()) throw make_error(at.file, at.place, "field 'limits' must be an object");
      d.limits = parse_limits(l->get_object(), d.limits, {at.file, at.place + ".limits"});
    }
    // Every figure within its plausible range where given; a clock of 0 means "the boost clock" (it resets
    // an override), a tensor rate of 0 "no such datapath".
    auto num = [&](std::string_view key, double& field, const detail::Range& r) {
      if (auto v = detail::opt_number_in(o, key, at, r)) field = *v;
    };
    if (auto v = detail::opt_whole(o, "sms", at, 1, 100000, "SMs")) d.sms = *v;
    num("base_clock_mhz", d.base_clock_mhz, detail::plausible::clock_or_default_mhz);
    num("boost_clock_mhz", d.boost_clock_mhz, detail::plausible::clock_mhz);
    num("memory_gib", d.memory_gib, detail::plausible::memory_gib);
    num("bandwidth_gbps", d.bandwidth_spec_gbps, detail::plausible::bandwidth_gbps);
    if (auto v = detail::opt_number_in(o, "measured_bandwidth_gbps", at, detail::plausible::bandwidth_gbps)) d.bandwidth_measured_gbps = *v;
    if (auto v = opt_string(o, "measured_bandwidth_source", at)) d.bandwidth_measured_source = *v;
    if (auto v = opt_string(o, "memory", at)) d.memory = *v;
    num("tensor_clock_mhz", d.tensor_clock_mhz, detail::plausible::clock_or_default_mhz);
    num("sustained_clock_mhz", d.sustained_clock_mhz, detail::plausible::clock_or_default_mhz);
    num("tensor_step_clock_mhz", d.tensor_step_clock_mhz, detail::plausible::clock_or_default_mhz);
    if (auto v = opt_string(o, "tensor_step_clock_source", at)) d.tensor_step_clock_source = *v;
    if (auto v = opt_string(o, "sustained_clock_source", at)) d.sustained_clock_source = *v;
    if (auto v = opt_string(o, "power_reference", at)) d.power_reference = *v;
    if (auto v = detail::opt_number_in(o, "loop_clock_mhz", at, detail::plausible::clock_or_default_mhz))
      d.loop_clock_mhz = *v, d.loop_clock_peer.clear();  // given, not derived
    if (auto v = opt_string(o, "loop_clock_source", at)) d.loop_clock_source = *v;
    if (auto v = opt_string(o, "process_family", at)) d.process_family = *v;
    num("tensor_loop_clock_mhz", d.tensor_loop_clock_mhz, detail::plausible::clock_or_default_mhz);
    if (auto v = opt_string(o, "tensor_loop_clock_source", at)) d.tensor_loop_clock_source = *v;
    num("fp32_lanes_per_sm", d.fp32_lanes_per_sm, detail::plausible::fp32_lanes);
    num("fp64_lanes_per_sm", d.fp64_lanes_per_sm, detail::plausible::fp64_lanes);
    num("tdp_w", d.tdp_w, detail::plausible::power_w);
    if (const auto* t = o.if_contains("tensor_flops_per_clk_per_sm")) {
      if (!t->is_object()) throw make_error(at.file, at.place, "field 'tensor_flops_per_clk_per_sm' must be an object");
      const detail::JsonPlace tat{at.file, at.place + ".tensor_flops_per_clk_per_sm"};
      for (const auto& [key, v] : t->get_object())
        if (key != "tf32" && key != "fp16" && key != "bf16" && key != "fp8")
          throw make_error(tat.file, tat.place, "unknown datapath '" + std::string(key) + "' (tf32, fp16, bf16, fp8)");
      for (auto [key, field] : {std::pair{"tf32", &d.tensor.tf32}, {"fp16", &d.tensor.fp16}, {"bf16", &d.tensor.bf16}, {"fp8", &d.tensor.fp8}})
        if (auto v = detail::opt_number_in(t->get_object(), key, tat, detail::plausible::tensor_per_clk)) *field = *v;
    }
    if (const auto* ds = o.if_contains("datasheet")) {
      if (!ds->is_object()) throw make_error(at.file, at.place, "field 'datasheet' must be an object of peak figures");
      for (const auto& [key, v] : ds->get_object())
        if (auto x = detail::opt_number_in(ds->get_object(), key, {at.file, at.place + ".datasheet"}, detail::plausible::peak_tflops))
          d.datasheet[std::string(key)] = *x;
    }
    // Peak figures from a user file (the older schema) become per-SM rates, so every peak is derived alike.
    // The rates they give must be plausible per SM too: 1000 TFLOPS from one SM at 10 MHz is a typo.
    const double sm_ghz = d.sms * d.boost_clock_mhz * 1e-3;
    auto derived = [&](std::string_view key, double per_sm, const detail::Range& r) {
      if (!(per_sm >= r.lo && per_sm <= r.hi))
        throw make_error(at.file, detail::field_place(at, key), "gives " + detail::number_text(per_sm) + " " + std::string(r.unit) + " on " +
                                                                   std::to_string(d.sms) + " SMs at " + detail::number_text(d.boost_clock_mhz) +
                                                                   " MHz; expected " + detail::describe(r));
      return per_sm;
    };
    if (auto v = detail::opt_number_in(o, "fp32_tflops", at, detail::plausible::peak_tflops); v && sm_ghz > 0)
      d.fp32_lanes_per_sm = derived("fp32_tflops", *v * 1e3 / (2 * sm_ghz), detail::plausible::fp32_lanes);
    for (auto [key, field] : {std::pair{"tf32_tflops", &d.tensor.tf32}, {"fp16_tflops", &d.tensor.fp16}, {"bf16_tflops", &d.tensor.bf16}})
      if (auto v = detail::opt_number_in(o, key, at, detail::plausible::peak_tflops); v && sm_ghz > 0) {
        const double per_clk = *v * 1e3 / (d.sms * (d.tensor_clock_mhz > 0 ? d.tensor_clock_mhz : d.boost_clock_mhz) * 1e-3);
        // Equal to FP32 (or below): no tensor datapath.
        *field = per_clk > 2 * d.fp32_lanes_per_sm * 1.01 ? derived(key, per_clk, detail::plausible::tensor_per_clk) : 0;
      }
    num("l2_mib", d.l2_mib, detail::plausible::l2_mib);
    if (auto v = opt_string(o, "source", at)) d.source = *v;
    if (auto v = opt_string(o, "validation", at)) d.validation = *v;
    if (auto v = opt_string(o, "reference_host", at)) d.reference_host = *v;
    if (const auto* ic = o.if_contains("interconnect"); ic && !ic->is_null()) d.interconnect = parse_interconnect(*ic, at);
    if (const auto* p = o.if_contains("price"); p && !p->is_null()) {
      if (!p->is_object()) throw make_error(at.file, at.place, "field 'price' must be an object");
      const auto& po = p->get_object();
      const detail::JsonPlace pat{at.file, at.place + ".price"};
      d.price = Price{detail::number_in(po, "usd_per_hour", pat, detail::plausible::usd_per_hour), opt_string(po, "date", pat).value_or(""),
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
    if (d.base_clock_mhz <= 0) d.base_clock_mhz = d.boost_clock_mhz;
    return d;
  }

  // "9.0", "10.0", "12.1": digits, one dot, digits; nothing else (sscanf took "9.0abc" and overflowed on
  // long digit runs).
  static bool parse_compute_capability(std::string_view cc, int& major, int& minor) {
    const auto dot = cc.find('.');
    if (dot == std::string_view::npos) return false;
    auto whole = [](std::string_view s, int& out) {
      if (s.empty() || s.size() > 2 || !std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; })) return false;
      (void)std::from_chars(s.data(), s.data() + s.size(), out);
      return true;
    };
    return whole(cc.substr(0, dot), major) && whole(cc.substr(dot + 1), minor) && major >= 1;
  }

  std::vector<Device> devices_;
  std::map<std::string, OccupancyLimits> architectures_;
};

}  // namespace habitat
