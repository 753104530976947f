#pragma once
// The built-in GPU catalog and host profiles, parsed once per test binary.
#include "habitat/device/catalog.hpp"
#include "habitat/sim/host_profile.hpp"

namespace habitat::test {

inline const Catalog& catalog() {
  static const Catalog c = Catalog::builtin();
  return c;
}
inline const sim::HostRegistry& hosts() {
  static const sim::HostRegistry h = sim::HostRegistry::builtin();
  return h;
}

}  // namespace habitat::test
