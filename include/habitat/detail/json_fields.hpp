#pragma once
// Typed field access on Boost.JSON objects with errors that name the file, the place and the field.
#include <boost/json.hpp>

#include <optional>
#include <string>
#include <string_view>

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
