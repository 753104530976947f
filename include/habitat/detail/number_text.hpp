#pragma once
// Numbers as messages quote them: the shortest text that reads back as the value ("1e-300" where
// std::to_string says "0.000000"), whole numbers in full ("100000", not "1e+05").
#include <charconv>
#include <cmath>
#include <string>

namespace habitat::detail {

[[nodiscard]] inline std::string number_text(double v) {
  char buf[32];
  const bool whole = std::abs(v) < 1e15 && v == std::floor(v);
  const auto r = whole ? std::to_chars(buf, buf + sizeof buf, v, std::chars_format::fixed) : std::to_chars(buf, buf + sizeof buf, v);
  return std::string(buf, r.ptr);
}

// A duration (in us) as messages quote it: to a tenth of a millisecond from 1 ms ("12.3 ms"), to a tenth of a
// microsecond below ("0.3 us", "250 us"), so that a short recording is not "0 ms".
[[nodiscard]] inline std::string duration_text(double us) {
  return std::abs(us) >= 999.95 ? number_text(std::round(us / 100) / 10) + " ms" : number_text(std::round(us * 10) / 10) + " us";
}

}  // namespace habitat::detail
