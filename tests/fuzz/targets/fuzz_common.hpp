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

// The input as a file, for parsers that read paths; removed when done. One name per process and suffix
// (libFuzzer's -fork and -jobs run several processes side by side).
class ScratchFile {
 public:
  ScratchFile(const std::uint8_t* data, std::size_t size, std::string_view suffix)
      : path_(std::filesystem::temp_directory_path().string() + "/habitat-fuzz-" + std::to_string(::getpid()) + std::string(suffix)) {
    std::ofstream(path_, std::ios::binary | std::ios::trunc).write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
  }
  ScratchFile(const ScratchFile&) = delete;
  ScratchFile& operator=(const ScratchFile&) = delete;
  ~ScratchFile() {
    std::error_code ec;
    std::filesystem::remove(path_, ec);
  }
  [[nodiscard]] const std::string& path() const { return path_; }

 private:
  std::string path_;
};

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
