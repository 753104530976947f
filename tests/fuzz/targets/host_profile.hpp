#pragma once
// Host profiles (--host FILE): refusals only as habitat::error; an accepted profile gives finite, positive
// host-speed ratios against the built-in hosts.
#include "fuzz_common.hpp"
#include "habitat/sim/host_profile.hpp"

namespace habitat::fuzz {

inline void host_profile(const std::uint8_t* data, std::size_t size) {
  static const sim::HostRegistry builtin = sim::HostRegistry::builtin();
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  try {
    const auto h = sim::parse_host_profile(habitat::detail::parse_document(text, "fuzz.json"), {"fuzz.json", "top level"});
    for (const auto& [key, us] : h.per_op_us) require(std::isfinite(us) && us > 0, "a per-op time that is not finite and positive");
    if (h.profiler)
      for (double v : {h.profiler->per_op_us, h.profiler->per_call_us, h.profiler->slowdown})
        require(std::isfinite(v) && v >= 0, "a profiler cost that is not finite");
    for (const auto& other : builtin.hosts())
      for (const auto& r : {sim::host_speed_ratio(h, other), sim::host_speed_ratio(other, h)})
        if (r) require(std::isfinite(r->first) && r->first > 0, "a host speed ratio that is not finite and positive");
  } catch (const habitat::error&) {
  }
}

}  // namespace habitat::fuzz
