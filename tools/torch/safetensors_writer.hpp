#pragma once
// Writes float32 tensors and string metadata in the safetensors layout: an 8-byte little-endian header
// size, a JSON header (dtype, shape, byte offsets per tensor; "__metadata__" strings), then the data.
#include <cstdint>
#include <fstream>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

namespace habitat::collect {

struct NamedTensor {
  std::string name;
  std::vector<std::int64_t> shape;
  std::vector<float> data;
};

inline std::string json_escape(const std::string& s) {
  std::string o;
  for (char c : s) {
    if (c == '"' || c == '\\') o += '\\';
    if (static_cast<unsigned char>(c) < 0x20) continue;
    o += c;
  }
  return o;
}

inline void write_safetensors(const std::string& path, const std::vector<NamedTensor>& tensors,
                              const std::map<std::string, std::string>& metadata) {
  std::string h = "{\"__metadata__\":{";
  bool first = true;
  for (const auto& [k, v] : metadata) {
    h += (first ? "" : ",") + std::string("\"") + json_escape(k) + "\":\"" + json_escape(v) + "\"";
    first = false;
  }
  h += "}";
  std::uint64_t offset = 0;
  for (const auto& t : tensors) {
    h += ",\"" + json_escape(t.name) + "\":{\"dtype\":\"F32\",\"shape\":[";
    for (std::size_t i = 0; i < t.shape.size(); ++i) h += (i ? "," : "") + std::to_string(t.shape[i]);
    const std::uint64_t end = offset + t.data.size() * sizeof(float);
    h += "],\"data_offsets\":[" + std::to_string(offset) + "," + std::to_string(end) + "]}";
    offset = end;
  }
  h += "}";
  while (h.size() % 8) h += ' ';
  std::ofstream out(path, std::ios::binary);
  if (!out) throw std::runtime_error(path + ": cannot open for writing");
  const std::uint64_t n = h.size();
  for (int i = 0; i < 8; ++i) out.put(static_cast<char>((n >> (8 * i)) & 0xff));
  out << h;
  for (const auto& t : tensors)
    out.write(reinterpret_cast<const char*>(t.data.data()), static_cast<std::streamsize>(t.data.size() * sizeof(float)));
  if (!out) throw std::runtime_error(path + ": write failed");
}

}  // namespace habitat::collect
