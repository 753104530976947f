#pragma once
// What every fuzz target shares: a scratch file for parsers that read paths, and the rule that a value
// which must be finite is checked, a non-finite one aborting like any other crash.
#include <unistd.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>

#include "habitat/error.hpp"

namespace habitat::fuzz {

// One file per process and suffix (libFuzzer's -fork and -jobs run several processes side by side).
inline std::string write_input(const std::uint8_t* data, std::size_t size, std::string_view suffix) {
  static const std::string dir = std::filesystem::temp_directory_path().string();
  const std::string path = dir + "/habitat-fuzz-" + std::to_string(::getpid()) + std::string(suffix);
  std::ofstream(path, std::ios::binary | std::ios::trunc).write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
  return path;
}

inline void require_finite(double v, std::string_view what) {
  if (std::isfinite(v)) return;
  std::fprintf(stderr, "habitat fuzz: %.*s is %f, a parser let a non-finite value through\n", static_cast<int>(what.size()), what.data(), v);
  std::abort();
}

inline void require(bool ok, std::string_view what) {
  if (ok) return;
  std::fprintf(stderr, "habitat fuzz: %.*s\n", static_cast<int>(what.size()), what.data());
  std::abort();
}

}  // namespace habitat::fuzz
