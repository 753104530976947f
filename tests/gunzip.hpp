#pragma once
// A gzipped (or plain) file's text, for tests that edit a fixture before reading it.
#include <zlib.h>

#include <stdexcept>
#include <string>

namespace habitat::test {

inline std::string gunzip(const std::string& path) {
  gzFile f = gzopen(path.c_str(), "rb");
  if (!f) throw std::runtime_error("cannot open " + path);
  std::string out;
  char buf[1 << 16];
  for (int n; (n = gzread(f, buf, sizeof buf)) > 0;) out.append(buf, static_cast<std::size_t>(n));
  gzclose(f);
  return out;
}

}  // namespace habitat::test
