#pragma once
// The Kineto reader on plain JSON: it may refuse an input only with habitat::error, and what it accepts
// must be finite and within CUDA's limits (trace_checks.hpp).
#include "habitat/kineto/reader.hpp"
#include "trace_checks.hpp"

namespace habitat::fuzz {

inline void kineto_trace(const std::uint8_t* data, std::size_t size) {
  const ScratchFile input(data, size, ".json");
  try {
    check_trace(kineto::read_trace(input.path()));
  } catch (const habitat::error&) {
  }
}

}  // namespace habitat::fuzz
