#pragma once
// JSON text for habitat's outputs: numbers as plain decimals in their shortest round-trip form ("8", not
// Boost.JSON's "8E0"), and a non-finite number as null, never NaN or Infinity, which strict parsers reject.
#include <boost/json.hpp>

#include <charconv>
#include <cmath>
#include <string>

namespace habitat::detail {

inline void append_json(std::string& out, const boost::json::value& v) {
  switch (v.kind()) {
    case boost::json::kind::object: {
      out += '{';
      bool first = true;
      for (const auto& [k, x] : v.get_object()) {
        if (!first) out += ',';
        first = false;
        out += boost::json::serialize(boost::json::string_view(k));
        out += ':';
        append_json(out, x);
      }
      out += '}';
      return;
    }
    case boost::json::kind::array: {
      out += '[';
      bool first = true;
      for (const auto& x : v.get_array()) {
        if (!first) out += ',';
        first = false;
        append_json(out, x);
      }
      out += ']';
      return;
    }
    case boost::json::kind::double_: {
      const double d = v.get_double();
      if (!std::isfinite(d)) {
        out += "null";
        return;
      }
      char buf[64];
      const auto r = std::to_chars(buf, buf + sizeof buf, d);
      out.append(buf, r.ptr);
      return;
    }
    default:
      out += boost::json::serialize(v);  // strings, integers, booleans, null
  }
}

[[nodiscard]] inline std::string json_text(const boost::json::value& v) {
  std::string out;
  append_json(out, v);
  return out;
}

}  // namespace habitat::detail
