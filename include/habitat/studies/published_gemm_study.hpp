#pragma once
// Large GEMMs on GPUs nobody here can reach, in every precision: a public table of torch.mm throughput
// (fixtures/published/torch_mm.json, habitat.published-gemm/1: NxN for N = 1024 ... 10240, FP32, TF32, FP16 and
// BF16, 30 calls back to back per size, contributors' own machines) predicted by the GEMM tile model, next to the
// baselines: the reference GPU's throughput measured here the same way (fixtures/published/torch_mm_h200.json) as
// it is (same time), scaled by the ratio of peak FLOPS at the precision, and by the ratio of memory bandwidth.
#include <algorithm>
#include <charconv>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "habitat/detail/json_fields.hpp"
#include "habitat/device/catalog.hpp"
#include "habitat/predict/gemm_tile_predictor.hpp"

namespace habitat::report {

struct GemmRow {
  std::string gpu, precision, url;
  int n = 0;
  double measured_tflops = 0, predicted_tflops = 0;
  double reference_tflops = 0, flops_ratio_tflops = 0, bandwidth_ratio_tflops = 0;  // baselines
  // Errors of the time per call (the quantity a prediction is for), signed.
  [[nodiscard]] double error() const { return measured_tflops / predicted_tflops - 1; }
  [[nodiscard]] double same_error() const { return measured_tflops / reference_tflops - 1; }
  [[nodiscard]] double flops_error() const { return measured_tflops / flops_ratio_tflops - 1; }
  [[nodiscard]] double bandwidth_error() const { return measured_tflops / bandwidth_ratio_tflops - 1; }
};

[[nodiscard]] inline Precision gemm_precision(const std::string& s, const detail::JsonPlace& at) {
  if (const auto p = precision_named(s)) return *p;
  throw make_error(at.file, at.place, "unknown precision '" + s + "' (fp32, tf32, fp16 or bf16)");
}

// The tile model's throughput of torch.mm(a, b), a and b NxN, on g: one GEMM in the "nn" layout, called back to
// back as the public benchmark does (a card whose SGEMM loops run below boost is timed as such: Shape::timed_alone).
[[nodiscard]] inline double predicted_mm_tflops(const Device& g, Precision p, double n) {
  gemm::Shape s{1, n, n, n, true, false, true, p, p == Precision::fp32 || p == Precision::tf32 ? 4.0 : 2.0};
  const double us = gemm::calibrated_time_us(s, g, 0);
  return 2 * n * n * n / us * 1e-6;
}

namespace detail_gemm {
inline boost::json::value read_json(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw make_error(path, "", "cannot open");
  std::stringstream ss;
  ss << in.rdbuf();
  return detail::parse_document(ss.str(), path);
}
// A matrix size as the files key it ("1024"): a whole positive number, nothing after it.
inline int size_key(std::string_view k, const detail::JsonPlace& at) {
  int n = 0;
  const auto [end, ec] = std::from_chars(k.data(), k.data() + k.size(), n);
  if (ec != std::errc{} || end != k.data() + k.size() || n <= 0 || n > 1 << 20)
    throw make_error(at.file, at.place, "'" + std::string(k) + "' is not a matrix size (a whole number from 1 to 1048576)");
  return n;
}
inline const boost::json::object& object_at(const boost::json::value& v, std::string_view key, const detail::JsonPlace& at) {
  if (!v.is_object() || !v.as_object().contains(key) || !v.at(key).is_object())
    throw make_error(at.file, at.place, "needs an object '" + std::string(key) + "'");
  return v.at(key).as_object();
}
inline double number(const boost::json::value& v, const detail::JsonPlace& at) {
  if (!v.is_number()) throw make_error(at.file, at.place, "not a number");
  const double x = v.to_number<double>();
  if (!(x > 0 && x < 1e5)) throw make_error(at.file, at.place, "not a throughput in TFLOPS (0 to 100000)");
  return x;
}
}  // namespace detail_gemm

// `table`: habitat.published-gemm/1; `reference`: habitat.torch-mm-reference/1 measured on `reference_gpu`
// (the median of its runs' wall-clock throughput, as the table's contributors timed theirs).
[[nodiscard]] inline std::vector<GemmRow> published_gemm_study(const std::string& table, const std::string& reference,
                                                               const std::string& reference_gpu, const Catalog& cat) {
  const Device& ref = cat.at(reference_gpu);
  std::map<std::pair<std::string, int>, double> ref_tflops;
  {
    const auto doc = detail_gemm::read_json(reference);
    if (!doc.is_object() || !doc.as_object().contains("runs") || !doc.at("runs").is_array()) throw make_error(reference, "top level", "no 'runs' array");
    std::map<std::pair<std::string, int>, std::vector<double>> all;
    for (const auto& run : doc.at("runs").as_array())
      for (const auto& [p, sizes] : detail_gemm::object_at(run, "tflops", {reference, "runs[]"})) {
        const std::string place = "runs[].tflops." + std::string(p);
        if (!sizes.is_object()) throw make_error(reference, place, "not an object of sizes");
        for (const auto& [n, r] : sizes.as_object()) {
          const detail::JsonPlace at{reference, place + "." + std::string(n)};
          if (!r.is_object() || !r.as_object().contains("wall_tflops")) throw make_error(at.file, at.place, "needs 'wall_tflops'");
          all[{std::string(p), detail_gemm::size_key(n, at)}].push_back(detail_gemm::number(r.at("wall_tflops"), at));
        }
      }
    for (auto& [key, v] : all) {
      std::sort(v.begin(), v.end());
      ref_tflops[key] = v.size() % 2 ? v[v.size() / 2] : 0.5 * (v[v.size() / 2 - 1] + v[v.size() / 2]);
    }
  }
  const auto doc = detail_gemm::read_json(table);
  if (!doc.is_object() || !doc.as_object().contains("rows") || !doc.at("rows").is_array()) throw make_error(table, "top level", "no 'rows' array");
  std::vector<GemmRow> out;
  const auto& rows = doc.at("rows").as_array();
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const std::string place = "rows[" + std::to_string(i) + "]";
    if (!rows[i].is_object() || !rows[i].as_object().contains("gpu") || !rows[i].at("gpu").is_string() ||
        !rows[i].as_object().contains("tflops") || !rows[i].at("tflops").is_object())
      throw make_error(table, place, "needs 'gpu' (a catalog name) and 'tflops'");
    const std::string name(rows[i].at("gpu").as_string());
    const Device* found = cat.find(name);
    if (!found) throw make_error(table, place + ".gpu", "'" + name + "' is not a catalog GPU");
    const Device& g = *found;
    const auto* link = rows[i].as_object().if_contains("url");
    const std::string url = link && link->is_string() ? std::string(link->as_string()) : "";
    for (const auto& [p, sizes] : rows[i].at("tflops").as_object()) {
      const Precision prec = gemm_precision(std::string(p), {table, place + ".tflops"});
      if (!sizes.is_object()) throw make_error(table, place + ".tflops." + std::string(p), "not an object of sizes");
      for (const auto& [n, v] : sizes.as_object()) {
        const detail::JsonPlace at{table, place + ".tflops." + std::string(p) + "." + std::string(n)};
        GemmRow r{g.name, std::string(p), url, detail_gemm::size_key(n, at)};
        r.measured_tflops = detail_gemm::number(v, at);
        r.predicted_tflops = predicted_mm_tflops(g, prec, r.n);
        const auto it = ref_tflops.find({std::string(p), r.n});
        if (it == ref_tflops.end()) throw make_error(at.file, at.place, "the reference " + reference + " has no " + std::string(p) + " figure of this size");
        r.reference_tflops = it->second;
        r.flops_ratio_tflops = it->second * g.peak_tflops(prec) / ref.peak_tflops(prec);
        r.bandwidth_ratio_tflops = it->second * g.bandwidth_spec_gbps / ref.bandwidth_spec_gbps;
        out.push_back(std::move(r));
      }
    }
  }
  return out;
}

}  // namespace habitat::report
