#pragma once
// Device files (--devices FILE), read alone and merged over the built-in catalog: refusals only as
// habitat::error; every device accepted is usable (device_checks.hpp) and its occupancy computable.
#include "device_checks.hpp"
#include "habitat/device/catalog.hpp"
#include "habitat/device/occupancy.hpp"

namespace habitat::fuzz {

inline void device_file(const std::uint8_t* data, std::size_t size) {
  static const Catalog builtin = Catalog::builtin();
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  for (const bool merged : {false, true}) {
    try {
      Catalog c = merged ? builtin : Catalog();
      c.merge_json(text, "fuzz.json");
      for (const auto& d : c.devices()) {
        check_device_usable(d);
        (void)try_wave_size(d, LaunchConfig{256, 64, 1024});
      }
    } catch (const habitat::error&) {
    }
  }
}

}  // namespace habitat::fuzz
