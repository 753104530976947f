#pragma once
// The one error type of habitat: every message names where (file, event, field) and what is wrong.
#include <stdexcept>
#include <string>
#include <string_view>

namespace habitat {

struct error : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// "WHERE: PLACE: PROBLEM", with empty parts left out.
[[nodiscard]] inline error make_error(std::string_view where, std::string_view place, std::string_view problem) {
  std::string msg;
  for (auto part : {where, place}) {
    if (!part.empty()) {
      msg.append(part);
      msg.append(": ");
    }
  }
  msg.append(problem);
  return error(msg);
}

}  // namespace habitat
