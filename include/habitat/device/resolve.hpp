#pragma once
// The origin GPU of a trace: the catalog entry the trace (or the user) names, with the SM count and
// occupancy limits the trace itself recorded, which describe the actual board (MIG slices, odd SKUs).
#include <iostream>
#include <optional>
#include <string>

#include "habitat/device/catalog.hpp"
#include "habitat/trace/trace.hpp"

namespace habitat {

[[nodiscard]] inline Device resolve_origin(const Catalog& catalog, const Trace& t, const std::optional<std::string>& name,
                                           std::ostream* warnings = nullptr) {
  std::string wanted = name.value_or(t.device_name);
  if (wanted.empty())
    throw make_error(t.source, "deviceProperties", "the trace does not name its GPU; pass --origin DEVICE");
  const Device* d = catalog.find(wanted);
  if (!d)
    throw make_error(t.source, "origin GPU '" + wanted + "'",
                     "not in the device catalog; pass --origin with a known GPU or add it with --devices FILE "
                     "(`habitat devices` lists the catalog)");
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
    out.limits = p.limits;
  }
  return out;
}

}  // namespace habitat
