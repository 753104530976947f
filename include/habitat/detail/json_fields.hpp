#pragma once
// Typed field access on Boost.JSON objects with errors that name the file, the place and the field.
#include <boost/json.hpp>

#include <cmath>
#include <optional>
#include <string>
#include <string_view>

#include "habitat/detail/number_text.hpp"
#include "habitat/error.hpp"

namespace habitat::detail {

struct JsonPlace {
  std::string_view file;
  std::string place;
};

[[nodiscard]] inline std::optional<double> opt_number(const boost::json::object& o, std::string_view key,
                                                      const JsonPlace& at) {
  const auto* v = o.if_contains(key);
  if (!v || v->is_null()) return std::nullopt;
  if (v->is_double()) return v->get_double();
  if (v->is_int64()) return static_cast<double>(v->get_int64());
  if (v->is_uint64()) return static_cast<double>(v->get_uint64());
  throw make_error(at.file, at.place, "field '" + std::string(key) + "' must be a number");
}

[[nodiscard]] inline double number(const boost::json::object& o, std::string_view key, const JsonPlace& at) {
  if (auto v = opt_number(o, key, at)) return *v;
  throw make_error(at.file, at.place, "missing number field '" + std::string(key) + "'");
}

// Where one field is: "devices[3] (H100 SXM).measured_bandwidth_gbps".
[[nodiscard]] inline std::string field_place(const JsonPlace& at, std::string_view key) {
  return at.place.empty() ? std::string(key) : at.place + "." + std::string(key);
}

// What a number read from a file may be: finite and within [lo, hi] (or exactly 0 where 0 means "none" or
// "the default"). The bounds are plausible ranges, not just signs: a value many orders of magnitude off
// (a bandwidth of 1e-300 GB/s) is a typo to refuse, not a prediction of 1e301 ms to print.
struct Range {
  double lo, hi;
  std::string_view unit = "";
  bool zero_ok = false;
};

[[nodiscard]] inline std::string describe(const Range& r, bool whole = false) {
  std::string s = r.zero_ok ? "0 or " : "";
  s += whole ? "a whole number" : "a number";
  if (!r.unit.empty()) s += " of " + std::string(r.unit);
  return s + " from " + number_text(r.lo) + " to " + number_text(r.hi);
}

[[nodiscard]] inline std::optional<double> opt_number_in(const boost::json::object& o, std::string_view key, const JsonPlace& at,
                                                         const Range& r) {
  const auto v = opt_number(o, key, at);
  if (v && !((*v >= r.lo && *v <= r.hi) || (r.zero_ok && *v == 0)))  // NaN fails both
    throw make_error(at.file, field_place(at, key), "must be " + describe(r) + ", got " + number_text(*v));
  return v;
}

[[nodiscard]] inline double number_in(const boost::json::object& o, std::string_view key, const JsonPlace& at, const Range& r) {
  if (auto v = opt_number_in(o, key, at, r)) return *v;
  throw make_error(at.file, at.place, "missing number field '" + std::string(key) + "'");
}

// A count that becomes an integer: whole and within [lo, hi], so the conversion is exact and cannot overflow.
template <class Int>
[[nodiscard]] std::optional<Int> opt_whole(const boost::json::object& o, std::string_view key, const JsonPlace& at, Int lo, Int hi,
                                           std::string_view unit = "") {
  const auto v = opt_number(o, key, at);
  if (!v) return std::nullopt;
  const Range r{static_cast<double>(lo), static_cast<double>(hi), unit};
  if (!(*v >= r.lo && *v <= r.hi && *v == std::floor(*v)))
    throw make_error(at.file, field_place(at, key), "must be " + describe(r, true) + ", got " + number_text(*v));
  return static_cast<Int>(*v);
}

[[nodiscard]] inline std::optional<std::string> opt_string(const boost::json::object& o, std::string_view key,
                                                           const JsonPlace& at) {
  const auto* v = o.if_contains(key);
  if (!v || v->is_null()) return std::nullopt;
  if (!v->is_string()) throw make_error(at.file, at.place, "field '" + std::string(key) + "' must be a string");
  return std::string(v->get_string());
}

[[nodiscard]] inline boost::json::value parse_document(std::string_view text, std::string_view file) {
  boost::system::error_code ec;
  boost::json::value v = boost::json::parse(text, ec);
  if (ec) throw make_error(file, "JSON", "invalid JSON: " + ec.message());
  return v;
}

}  // namespace habitat::detail
