#pragma once
// The origin GPU of a trace: the catalog entry the trace (or the user) names, with the SM count and
// occupancy limits the trace itself recorded, which describe the actual board (MIG slices, odd SKUs).
#include <cmath>
#include <cstdlib>
#include <iostream>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "habitat/device/catalog.hpp"
#include "habitat/device/kernel_architecture.hpp"
#include "habitat/trace/trace.hpp"

namespace habitat {

// A trace that does not name its GPU (no deviceProperties) and no --origin: the GPU of the generation its kernels'
// names tell where they tell exactly one (kernel_architecture.hpp), the catalog's most common of it, said in a
// warning; else an error asking for --origin.
[[nodiscard]] inline Device origin_from_kernel_names(const Catalog& catalog, const Trace& t, std::ostream* warnings) {
  std::vector<std::string_view> names;
  for (const auto& k : t.kernels)
    if (k.kind == GpuWorkKind::kernel) names.push_back(k.name);
  const ArchitectureGuess guess = architecture_from_kernel_names(names);
  const KernelArchitecture* a = guess.architecture;
  const Device* d = a ? catalog.find(std::string(a->default_gpu)) : nullptr;
  if (!d)
    throw make_error(t.source, "deviceProperties",
                     "the trace does not name its GPU (it has no deviceProperties), and " +
                         (a ? "its kernels' names are of " + std::string(a->generation) + " GPUs, of which the catalog lacks " + std::string(a->default_gpu)
                            : guess.why_not) +
                         ": pass --origin DEVICE (`habitat devices` lists the catalog)");
  if (warnings) {
    std::string others;
    std::size_t n = 0;
    for (const auto& c : catalog.devices())
      if (&c != d && c.vendor == d->vendor && c.cc_major == d->cc_major && c.cc_minor == d->cc_minor && n++ < 5)
        others += (others.empty() ? "" : ", ") + c.name;
    *warnings << "warning: " << t.source << ": the trace does not name its GPU (it has no deviceProperties); its kernels' names are "
              << a->generation << "'s (" << guess.kernels << (guess.kernels == 1 ? " kernel" : " kernels") << " such as '" << guess.example
              << "'): predicted from " << d->name << ", the catalog's most common " << a->generation << " GPU; pass --origin NAME if it was another"
              << (others.empty() ? "" : " (" + others + (n > 5 ? ", ..." : "") + ")") << "\n";
  }
  return *d;
}

[[nodiscard]] inline Device resolve_origin(const Catalog& catalog, const Trace& t, const std::optional<std::string>& name,
                                           std::ostream* warnings = nullptr) {
  std::string wanted = name.value_or(t.device_name);
  if (wanted.empty()) return origin_from_kernel_names(catalog, t, warnings);
  const Device* d = catalog.find(wanted);
  if (!d && !name && t.device_props) {
    // A GPU outside the catalog that the trace describes (SMs, memory, compute capability, limits): predicted
    // with the clocks, per-SM datapaths and bandwidth of the catalog GPU of its vendor and architecture closest in
    // SMs (AMD GPUs report a compute capability too, gfx90a's 9.0 as Hopper's: never an NVIDIA GPU's sibling).
    const Device& p = *t.device_props;
    const Device* sibling = nullptr;
    for (const auto& c : catalog.devices())
      if (c.vendor == p.vendor && c.cc_major == p.cc_major && c.cc_minor == p.cc_minor &&
          (!sibling || std::abs(c.sms - p.sms) < std::abs(sibling->sms - p.sms) ||
           (std::abs(c.sms - p.sms) == std::abs(sibling->sms - p.sms) && std::abs(c.memory_gib - p.memory_gib) < std::abs(sibling->memory_gib - p.memory_gib))))
        sibling = &c;
    if (sibling) {
      Device out = *sibling;
      out.name = p.name;
      out.vendor = p.vendor;
      out.aliases.clear();
      out.sms = p.sms;
      out.limits = p.limits;
      if (p.memory_gib > 0) out.memory_gib = p.memory_gib;
      out.price.reset();
      out.validation.clear();
      out.source = "the trace's deviceProperties, with " + sibling->name + "'s clocks, datapaths and bandwidth";
      if (warnings)
        *warnings << "warning: " << t.source << ": '" << p.name << "' is not in the catalog: described from the trace (" << p.sms
                  << (p.nvidia() ? " SMs, " : " CUs, ") << static_cast<int>(p.memory_gib + 0.5) << " GiB, compute capability " << p.cc_major << "." << p.cc_minor << ") with the clocks, "
                  << "per-SM datapaths and bandwidth of " << sibling->name << ", the catalog GPU of its architecture closest to it; give "
                  << "its own figures with --devices FILE\n";
      return out;
    }
  }
  if (!d)
    throw make_error(t.source, "origin GPU '" + wanted + "'",
                     "not in the device catalog" +
                         std::string(t.device_props && !name ? ", and no catalog GPU shares its compute capability" : "") +
                         "; pass --origin with a known GPU or add it with --devices FILE (`habitat devices` lists the catalog)");
  Device out = *d;
  // --origin naming another GPU than the trace's own: allowed (a renamed or virtualized GPU), but said.
  if (name && !t.device_name.empty() && warnings) {
    const Device* own = catalog.find(t.device_name);
    if (own != d)
      *warnings << "warning: " << t.source << ": the trace was recorded on '" << t.device_name << "', --origin says " << out.name
                << "; using " << out.name << "\n";
  }
  if (t.device_props && !name) {
    const Device& p = *t.device_props;
    if (p.sms != out.sms && warnings)
      *warnings << "warning: " << t.source << ": trace reports " << p.sms << " SMs for " << p.name << ", catalog says "
                << out.sms << " for " << out.name << "; using the trace's\n";
    out.sms = p.sms;
    if (p.vendor == out.vendor) out.limits = p.limits;  // an --origin of another vendor keeps its own architecture's
  }
  return out;
}

}  // namespace habitat
