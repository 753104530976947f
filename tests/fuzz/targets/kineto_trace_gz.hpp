#pragma once
// The Kineto reader on .json.gz: an input that is already gzip (magic 1f 8b) is the file itself, so the
// fuzzer cuts and corrupts streams; any other input is gzipped first, so JSON mutations still reach the
// parser through the decompressor.
#include <zlib.h>

#include <vector>

#include "habitat/kineto/reader.hpp"
#include "trace_checks.hpp"

namespace habitat::fuzz {

[[nodiscard]] inline std::vector<std::uint8_t> gzip(const std::uint8_t* data, std::size_t size) {
  z_stream z{};
  deflateInit2(&z, Z_BEST_SPEED, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY);  // +16: gzip header and trailer
  std::vector<std::uint8_t> out(deflateBound(&z, static_cast<uLong>(size)) + 32);
  z.next_in = const_cast<Bytef*>(data);
  z.avail_in = static_cast<uInt>(size);
  z.next_out = out.data();
  z.avail_out = static_cast<uInt>(out.size());
  deflate(&z, Z_FINISH);
  out.resize(z.total_out);
  deflateEnd(&z);
  return out;
}

inline void kineto_trace_gz(const std::uint8_t* data, std::size_t size) {
  const bool is_gzip = size >= 2 && data[0] == 0x1f && data[1] == 0x8b;
  const auto packed = is_gzip ? std::vector<std::uint8_t>(data, data + size) : gzip(data, size);
  const ScratchFile input(packed.data(), packed.size(), ".json.gz");
  try {
    check_trace(kineto::read_trace(input.path()));
  } catch (const habitat::error&) {
  }
}

}  // namespace habitat::fuzz
