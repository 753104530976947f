#pragma once
// Steps whose time on other GPUs is published (fixtures/published/: NVIDIA's DeepLearningExamples ResNet-50
// and ResNeXt101 in mixed precision, TF32 and FP32 on the A100, V100 and T4), recorded on an H100 in the same
// configurations and predicted onto those GPUs as the CLI predicts (default predictor, iteration time through
// the host simulator), next to the baselines: the H100's own measured time, and that time scaled by the ratio
// of peak FLOPS at the step's precision or of memory bandwidth.
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "habitat/detail/json_fields.hpp"
#include "habitat/device/catalog.hpp"
#include "habitat/device/resolve.hpp"
#include "habitat/kineto/reader.hpp"
#include "habitat/predict/gemm_tile_predictor.hpp"
#include "habitat/predict/kernel_work.hpp"
#include "habitat/sim/calibrate.hpp"
#include "habitat/sim/compose.hpp"
#include "habitat/studies/row_errors.hpp"

namespace habitat::report {

struct PublishedRow {
  std::string workload, gpu, published_gpu, precision;
  double published_ms = 0;   // batch / published samples per second
  double predicted_ms = 0;   // habitat's un-profiled iteration
  double origin_ms = 0;      // the H100's measured un-profiled step (baseline: same time)
  double flops_ms = 0, bandwidth_ms = 0;  // the H100's time scaled by peak FLOPS at the precision / by bandwidth
  [[nodiscard]] double error() const { return predicted_ms / published_ms - 1; }
  [[nodiscard]] double same_error() const { return origin_ms / published_ms - 1; }
  [[nodiscard]] double flops_error() const { return flops_ms / published_ms - 1; }
  [[nodiscard]] double bandwidth_error() const { return bandwidth_ms / published_ms - 1; }
};

[[nodiscard]] inline Precision published_precision(const std::string& s, const detail::JsonPlace& at) {
  if (const auto p = precision_named(s)) return *p;
  throw make_error(at.file, at.place + ".precision", "unknown precision '" + s + "' (fp32, tf32, fp16 or bf16)");
}

// `figures`: a habitat.published-throughput/1 file; `origin_dir`: the fixture folder (manifest.json and traces)
// of the same workloads recorded on one GPU.
[[nodiscard]] inline std::vector<PublishedRow> published_study(const std::string& figures, const std::string& origin_dir, const Catalog& cat,
                                                               const sim::HostRegistry& hosts) {
  std::ifstream in(figures);
  if (!in) throw make_error(figures, "", "cannot open published figures");
  std::stringstream ss;
  ss << in.rdbuf();
  const auto doc = detail::parse_document(ss.str(), figures);
  if (!doc.is_object() || !doc.as_object().contains("rows") || !doc.at("rows").is_array())
    throw make_error(figures, "top level", "no 'rows' array");
  std::map<std::string, sim::MeasuredStep> origin;
  for (auto& m : sim::read_manifest(origin_dir)) origin.emplace(m.workload, m);

  struct Loaded {
    Trace trace;
    Device gpu;
    std::vector<KernelWork> work;
  };
  std::map<std::string, Loaded> traces;
  std::vector<PublishedRow> out;
  const auto& rows = doc.at("rows").as_array();
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const detail::JsonPlace at{figures, "rows[" + std::to_string(i) + "]"};
    if (!rows[i].is_object()) throw make_error(figures, at.place, "must be an object");
    const auto& r = rows[i].as_object();
    PublishedRow row;
    row.workload = detail::opt_string(r, "workload", at).value_or("");
    row.gpu = detail::opt_string(r, "gpu", at).value_or("");
    row.published_gpu = detail::opt_string(r, "published_gpu", at).value_or(row.gpu);
    row.precision = detail::opt_string(r, "precision", at).value_or("");
    const Precision p = published_precision(row.precision, at);
    const double batch = detail::number_in(r, "batch", at, {1, 1e7});
    row.published_ms = batch * 1e3 / detail::number_in(r, "samples_per_s", at, {1e-6, 1e9});
    const auto m = origin.find(row.workload);
    if (m == origin.end()) throw make_error(figures, at.place + ".workload", "'" + row.workload + "' is not in " + origin_dir + "/manifest.json");
    auto [it, fresh] = traces.try_emplace(row.workload);
    if (fresh) {
      it->second.trace = kineto::read_trace(m->second.trace_path);
      it->second.gpu = resolve_origin(cat, it->second.trace, std::nullopt);
      it->second.work = kernel_work(it->second.trace);
    }
    const Loaded& l = it->second;
    const Device& d = cat.at(row.gpu);
    auto pred = predict_trace(l.trace, l.work, l.gpu, d, gemm::TilePredictor(RooflineScaling{}, l.trace));
    sim::compose(pred, l.trace, sim::build_program(l.trace, sim::host_model(hosts, l.gpu, d, sim::HostChoice::reference())), d);
    row.predicted_ms = pred.iteration_us / 1e3;
    row.origin_ms = m->second.measured_us / 1e3;
    row.flops_ms = row.origin_ms * l.gpu.peak_tflops(p) / d.peak_tflops(p);
    row.bandwidth_ms = row.origin_ms * l.gpu.sustained_bandwidth_gbps() / d.sustained_bandwidth_gbps();
    out.push_back(std::move(row));
  }
  return out;
}

}  // namespace habitat::report
