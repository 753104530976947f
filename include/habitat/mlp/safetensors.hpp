#pragma once
// Reader of safetensors files (8-byte little-endian header size, JSON header, raw data), float32 only:
// the format habitat-train writes its weights in. Every malformed part is an error naming the file.
#include <boost/json.hpp>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <limits>
#include <map>
#include <string>
#include <vector>

#include "habitat/error.hpp"

namespace habitat::mlp {

struct Tensor {
  std::vector<std::int64_t> shape;
  std::vector<float> data;
};

struct TensorFile {
  std::string file;
  std::map<std::string, std::string> metadata;
  std::map<std::string, Tensor> tensors;

  [[nodiscard]] const Tensor& tensor(const std::string& name) const {
    auto it = tensors.find(name);
    if (it == tensors.end()) throw make_error(file, "", "no tensor '" + name + "'");
    return it->second;
  }
  [[nodiscard]] const std::string& meta(const std::string& key) const {
    auto it = metadata.find(key);
    if (it == metadata.end()) throw make_error(file, "__metadata__", "missing '" + key + "'");
    return it->second;
  }
};

[[nodiscard]] inline TensorFile read_safetensors(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw make_error(path, "", "cannot open");
  unsigned char len[8];
  if (!in.read(reinterpret_cast<char*>(len), 8)) throw make_error(path, "header", "file shorter than 8 bytes");
  std::uint64_t n = 0;
  for (int i = 7; i >= 0; --i) n = (n << 8) | len[i];
  if (n == 0 || n > (64u << 20)) throw make_error(path, "header", "implausible header size " + std::to_string(n));
  std::string header(n, '\0');
  if (!in.read(header.data(), static_cast<std::streamsize>(n))) throw make_error(path, "header", "truncated header");
  const std::vector<char> data((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  boost::system::error_code ec;
  const auto root = boost::json::parse(header, ec);
  if (ec || !root.is_object()) throw make_error(path, "header", "not a JSON object: " + ec.message());
  TensorFile f{path, {}, {}};
  for (const auto& [key, v] : root.get_object()) {
    const std::string name(key);
    if (!v.is_object()) throw make_error(path, name, "entry is not an object");
    const auto& o = v.get_object();
    if (name == "__metadata__") {
      for (const auto& [mk, mv] : o) {
        if (!mv.is_string()) throw make_error(path, "__metadata__." + std::string(mk), "value is not a string");
        f.metadata[std::string(mk)] = std::string(mv.get_string());
      }
      continue;
    }
    const auto* dtype = o.if_contains("dtype");
    if (!dtype || !dtype->is_string() || dtype->get_string() != "F32")
      throw make_error(path, name, "dtype must be F32 (habitat reads float32 weights)");
    const auto* shape = o.if_contains("shape");
    const auto* offs = o.if_contains("data_offsets");
    if (!shape || !shape->is_array() || !offs || !offs->is_array() || offs->get_array().size() != 2)
      throw make_error(path, name, "needs 'shape' and two 'data_offsets'");
    Tensor t;
    std::uint64_t count = 1;
    for (const auto& d : shape->get_array()) {
      if (!d.is_int64() || d.get_int64() < 0) throw make_error(path, name, "shape entries must be non-negative integers");
      const auto n = static_cast<std::uint64_t>(d.get_int64());
      if (n > 0 && count > std::numeric_limits<std::uint64_t>::max() / sizeof(float) / n)
        throw make_error(path, name, "shape's element count overflows");
      t.shape.push_back(d.get_int64());
      count *= n;
    }
    const auto& oa = offs->get_array();
    if (!oa[0].is_int64() || !oa[1].is_int64()) throw make_error(path, name, "data_offsets must be integers");
    const auto b = static_cast<std::uint64_t>(oa[0].get_int64()), e = static_cast<std::uint64_t>(oa[1].get_int64());
    if (e < b || e > data.size() || e - b != count * sizeof(float))
      throw make_error(path, name, "data_offsets [" + std::to_string(b) + ", " + std::to_string(e) + ") do not fit the shape or the file");
    t.data.resize(count);
    if (count > 0) std::memcpy(t.data.data(), data.data() + b, count * sizeof(float));  // an empty shape has no storage to copy into
    // A non-finite weight makes every prediction non-finite: refuse the file. Denormal weights (22% of the
    // shipped bmm model's, 5% of linear's) are flushed to zero: a multiply that meets one can take a slow
    // path on x86, and at 1e-38 they change nothing (predict-ops on NeuSight's 16,661 A100 bmm rows wrote
    // byte-identical output before and after).
    for (std::size_t i = 0; i < t.data.size(); ++i) {
      if (!std::isfinite(t.data[i])) throw make_error(path, name + "[" + std::to_string(i) + "]", "weight is not finite");
      if (std::fpclassify(t.data[i]) == FP_SUBNORMAL) t.data[i] = 0.0f;
    }
    f.tensors.emplace(name, std::move(t));
  }
  return f;
}

}  // namespace habitat::mlp
