#pragma once
// Validation of the physics op model (mlp/op_physics.hpp) for the non-GEMM operations of NeuSight's public
// timings (conv, layer norm, softmax, eleven elementwise operators) on seven GPUs: the roofline share of
// each op family (convolutions: the coefficients of their efficiency model) derived without the GPU under
// test (leave one GPU out), and the ratio method from the H100's measurement of the same configuration, next
// to the simple baselines.
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <Eigen/Dense>

#include "habitat/detail/line_fit.hpp"
#include "habitat/detail/quantile.hpp"
#include "habitat/device/catalog.hpp"
#include "habitat/mlp/op_physics.hpp"
#include "habitat/studies/study_data.hpp"
#include "habitat/studies/unseen_gpu.hpp"

namespace habitat::opstudy {

struct Row {
  const Device* gpu = nullptr;
  std::string op;  // as NeuSight names it: conv, ln, softmax, add, ...
  mlp::OpQuery q;
  double measured_ms = 0;
  bool call_timed = false;  // NeuSight's protocol: one timed call, its overhead included
  double seq = 0;           // the row's place in its table (0-based): the order it was measured in
  bool fft = false;         // a convolution whose kernels cuDNN ran as FFT (its kernels' names say so)
  bool fused_winograd = false;  // one cuDNN ran as its fused Winograd kernel (scudnn_winograd_*)
};

// Whether a convolution's kernels are cuDNN's FFT algorithm: its transforms (fft2d_r2c / c2r, DSE::..._fft) or
// the complex GEMM between them (gemm_cf32cf32); `names` are the row's kernels' names.
[[nodiscard]] inline bool fft_kernels(std::string_view names) {
  return names.find("fft") != std::string_view::npos || names.find("cf32cf32") != std::string_view::npos;
}

// habitat's tables name each row's main kernel by an id; kernels.tsv beside them maps ids to names.
[[nodiscard]] inline std::map<std::string, std::string> kernel_names(const std::filesystem::path& table_file) {
  std::map<std::string, std::string> names;
  const auto file = table_file.parent_path() / "kernels.tsv";
  std::ifstream in(file);
  // Without it no row would be labelled FFT, and the FFT's share would fall back, unannounced, to the shipped one.
  if (!in) throw make_error(file.string(), "", "missing: " + table_file.string() + " names its kernels by id (main_kernel_id)");
  for (std::string line; std::getline(in, line);)
    if (const auto tab = line.find('\t'); tab != std::string::npos && tab > 0) names[line.substr(0, tab)] = line.substr(tab + 1);
  return names;
}

inline const std::vector<std::string> study_ops = {"conv", "ln",  "softmax", "add", "addu", "mul",  "mulu",
                                                   "div",  "divu", "pow",    "powu", "relu", "tanh", "gelu"};

// Rows of one table; dims by the schema's names (NeuSight spells Kernel_Size "Kernel_Szie").
inline void load_table(const study::Table& t, const std::string& op, const Device& gpu, std::vector<Row>& out) {
  const auto kind = ops::op_from_name(op);
  if (!kind) throw make_error(t.file, "", "unknown operation '" + op + "'");
  const auto& schema = ops::schema(*kind);
  std::vector<int> dim_col;
  for (int i = 0; i < schema.csv_dims; ++i) {
    const auto name = schema.dims[static_cast<std::size_t>(i)];
    dim_col.push_back(name == "Kernel_Size" && t.find(name) < 0 ? t.column("Kernel_Szie") : t.column(name));
  }
  // Which kernels ran (convolutions: the algorithm): NeuSight's Kernels column, or habitat's main kernel's id.
  const int kernels_col = op == "conv" ? t.find("Kernels") : -1, id_col = op == "conv" ? t.find("main_kernel_id") : -1;
  const auto names = id_col >= 0 ? kernel_names(t.file) : std::map<std::string, std::string>{};
  for (std::size_t seq = 0; seq < t.rows.size(); ++seq) {
    const auto& f = t.rows[seq];
    const auto us = t.latency_us(f);
    if (!us) continue;
    Row r{&gpu, op, {*kind, ops::Pass::forward, t.dtype, {}}, *us / 1e3, t.neusight, double(seq)};
    if (kernels_col >= 0) {
      const std::string_view k = f[static_cast<std::size_t>(kernels_col)];
      r.fft = fft_kernels(k);
      r.fused_winograd = k.find("scudnn_winograd") != std::string_view::npos;
    }
    if (const auto it = id_col >= 0 ? names.find(f[static_cast<std::size_t>(id_col)]) : names.end(); it != names.end()) r.fft = fft_kernels(it->second);
    bool ok = true;
    for (std::size_t i = 0; i < dim_col.size(); ++i) {
      const auto v = habitat::detail::parse_csv_number(f[static_cast<std::size_t>(dim_col[i])]);
      ok &= v && *v > 0;
      r.q.dims[i] = v.value_or(0);
    }
    ops::fill_derived_dims(*kind, op, r.q.dims);
    if (ok) out.push_back(r);
  }
}

[[nodiscard]] inline std::vector<Row> load_rows(const Catalog& cat, const std::filesystem::path& public_dir,
                                               const std::filesystem::path& opdata_dir) {
  std::vector<Row> rows;
  for (const auto& op : study_ops)
    study::for_each_table(cat, public_dir, opdata_dir, op, [&](const study::Table& t, const Device& g) { load_table(t, op, g, rows); });
  return rows;
}

// The memory-bound operators' rows of one folder of habitat's measurements (measure_neusight_ops.py's layout,
// in the precision its header names), as measured on `gpu`.
[[nodiscard]] inline std::vector<Row> load_folder(const std::filesystem::path& dir, const Device& gpu) {
  std::vector<Row> rows;
  for (const auto& op : study_ops)
    if (const auto f = dir / (op + ".csv"); op != "conv" && std::filesystem::exists(f)) load_table(study::read_table(f.string()), op, gpu, rows);
  return rows;
}

// The timed-call floor of each call-timed GPU and operation, as a line in the rows' order: a memory-bound
// operator's is the 5th percentile of its latencies (the smallest configurations' time is the floor in the
// overlap form of mlp::timed_call_ms) and flat. NeuSight's convolutions are not: on all five public GPUs the
// shortest calls grow steadily with the row's place in the file, which is not ordered by size (the files'
// FLOPs are flat along it): the 2nd percentile of each tenth from 0.08-0.13 ms in the first to 0.35-0.83 ms
// in the last, and against habitat's H100 kernels of the same configurations, the quarter of the configurations
// shortest on the H100 take 1.55-2.4x longer in the file's last quarter than in its first. That is the measuring
// host (a per-call cost that grows with every new convolution), not the GPU; so a convolution's floor is a line
// in the file's order. A floor never falls along a file (nor below zero).
struct FloorLine {
  double ms = 0, per_row_ms = 0;
  [[nodiscard]] double at(double seq) const { return std::max(ms + per_row_ms * seq, 0.0); }
};
using Floors = std::map<std::pair<const Device*, std::string>, FloorLine>;

// A convolution's timed call, on the floor line (study-only: the product times a convolution's call additively,
// mlp::timed_call_ms): max(floor, lead x floor + kernel).
inline constexpr double conv_call_lead = 0.5;
inline constexpr double conv_floor_quantile = 0.02;
inline constexpr int conv_floor_parts = 10;

// The slope from the line through the tenths' 2nd percentiles (each at its tenth's mean place); the floor at the
// first row, the 2nd percentile of every call less that slope (a tenth's own quantile sits at its low end, where
// its floor is lowest, not at its middle).
[[nodiscard]] inline std::optional<FloorLine> conv_floor_line(std::vector<std::pair<double, double>> seq_ms) {
  std::sort(seq_ms.begin(), seq_ms.end());
  detail::LineFit fit;
  const std::size_t n = seq_ms.size();
  for (int p = 0; p < conv_floor_parts; ++p) {
    const std::size_t lo = n * std::size_t(p) / conv_floor_parts, hi = n * std::size_t(p + 1) / conv_floor_parts;
    if (hi <= lo) continue;
    std::vector<double> ms;
    double seq = 0;
    for (std::size_t i = lo; i < hi; ++i) ms.push_back(seq_ms[i].second), seq += seq_ms[i].first;
    fit.add(seq / double(hi - lo), detail::quantile(std::move(ms), conv_floor_quantile, 0));
  }
  const auto line = fit.line(3);
  if (!line) return std::nullopt;
  const double slope = std::max(line->slope, 0.0);
  std::vector<double> at_first;
  for (const auto& [seq, ms] : seq_ms) at_first.push_back(ms - slope * seq);
  return FloorLine{std::max(detail::quantile(std::move(at_first), conv_floor_quantile, 0), 0.0), slope};
}

// Whether a call of the op has a floor in the study: the memory-bound operators' (mlp::call_floor) and the
// public convolutions' line; other calls are additive.
[[nodiscard]] inline bool has_floor(const mlp::OpQuery& q) { return mlp::call_floor(q) || mlp::conv_like(q.op); }

[[nodiscard]] inline Floors call_floors(const std::vector<Row>& rows) {
  std::map<std::pair<const Device*, std::string>, std::vector<std::pair<double, double>>> v;
  std::map<std::string, bool> line;  // by op: whether its floor is a line (a convolution's)
  for (const auto& r : rows)
    if (r.call_timed && has_floor(r.q)) v[{r.gpu, r.op}].emplace_back(r.seq, r.measured_ms), line[r.op] = mlp::conv_like(r.q.op);
  Floors f;
  for (auto& [key, x] : v) {
    if (line[key.second]) {
      if (const auto line = conv_floor_line(std::move(x))) f[key] = *line;  // too few rows: no floor, the additive call
      continue;
    }
    std::vector<double> ms;
    for (const auto& p : x) ms.push_back(p.second);
    f[key] = {detail::quantile(std::move(ms), 0.05, 0), 0};
  }
  return f;
}

// The floor an unseen GPU gets: the median over the other GPUs' floors of the same operation (each of the
// line's two terms), the middle two averaged: leaving one of five hosts out leaves four, and the upper of the
// middle two (the nearest rank) took the slower host's floor for every GPU left out below it (A100 40GB: 32.2
// us, the V100's host, for add instead of 29.2).
[[nodiscard]] inline std::optional<FloorLine> floor_without(const Floors& f, const std::string& op, const Device* leave_out) {
  std::vector<double> ms, per_row;
  for (const auto& [key, line] : f)
    if (key.first != leave_out && key.second == op) ms.push_back(line.ms), per_row.push_back(line.per_row_ms);
  if (ms.empty()) return std::nullopt;
  return FloorLine{detail::median_of_runs(std::move(ms), 0), detail::median_of_runs(std::move(per_row), 0)};
}

// The lead of a call on its floor: the part of the floor the kernel does not overlap.
[[nodiscard]] inline double call_lead(const mlp::OpQuery& q) {
  if (const auto f = mlp::call_floor(q)) return f->lead;
  return conv_call_lead;
}

// Kernel time of a measured row: a call-timed row less its own GPU's call (the lead for the
// overlap form, the additive overhead for the matrix-math ops).
[[nodiscard]] inline double kernel_ms(const Row& r, const Floors& floors) {
  if (!r.call_timed) return r.measured_ms;
  const auto it = floors.find({r.gpu, r.op});
  return r.measured_ms - (it != floors.end() ? it->second.at(r.seq) * call_lead(r.q) : mlp::op_physics_shares.call_ms);
}

// Whether a call-timed row sits on its floor (within `margin` of it), where it hides its kernel.
[[nodiscard]] inline bool on_floor(const Row& r, const Floors& floors, double margin = 1.1) {
  const auto it = floors.find({r.gpu, r.op});
  return r.call_timed && it != floors.end() && r.measured_ms < margin * it->second.at(r.seq);
}

// The share of the sustained roofline an op family reaches: the median over long configurations (more
// than 0.2 ms at the sustained roofline) of the rows given, leaving out one GPU.
[[nodiscard]] inline double roofline_share(const std::vector<Row>& rows, const Floors& floors, ops::OpKind kind, const Device* leave_out) {
  std::vector<double> v;
  for (const auto& r : rows) {
    if (r.gpu == leave_out || r.q.op != kind) continue;
    const double roof = mlp::sustained_roofline_ms(r.q, *r.gpu), k = kernel_ms(r, floors);
    if (roof > 0.2 && k > 0) v.push_back(roof / k);
  }
  return detail::median(std::move(v), mlp::roofline_share(kind));
}

// mlp::fused_winograd_efficiency leaving one GPU out: the median over the convolutions cuDNN ran as its fused
// Winograd kernel (NeuSight's call-timed rows, which name their kernels), off their floor and with kernels over
// 1 ms (there the floor's share is small), of the ideal fused time over the kernel (the call less its lead on its
// own GPU's floor).
[[nodiscard]] inline double fused_winograd_share(const std::vector<Row>& rows, const Floors& floors, const Device* leave_out) {
  std::vector<double> v;
  for (const auto& r : rows) {
    if (r.gpu == leave_out || !r.fused_winograd || on_floor(r, floors)) continue;
    const double kernel = kernel_ms(r, floors);
    if (kernel > 1) v.push_back(mlp::fused_winograd_ideal_us(r.q, *r.gpu) / 1e3 / kernel);
  }
  if (v.empty() && leave_out) throw make_error("", "fused_winograd_share", "no fused Winograd rows to derive it without " + leave_out->name);
  return detail::median(std::move(v), mlp::fused_winograd_efficiency);
}

// The most the q and algorithm terms may sum to (fit_conv_coefs): a larger batch in the same wave takes at least
// FLOPs^0.05 longer.
inline constexpr double conv_q_alg_max = 0.95;

// Least squares of log(efficiency) on the features of the convolutions `kernel` gives a kernel time for (ms; nullopt:
// the row is not fitted); nullopt with fewer rows than coefficients.
template <class Kernel>
[[nodiscard]] inline std::optional<mlp::ConvCoefs> fit_conv_coefs(const std::vector<Row>& rows, double fused, Kernel kernel) {
  std::vector<mlp::ConvFeatures> x;
  std::vector<double> y;
  for (const auto& r : rows) {
    if (!mlp::conv_like(r.q.op)) continue;
    const std::optional<double> k = kernel(r);
    if (!k) continue;
    x.push_back(mlp::conv_features(r.q, *r.gpu, fused));
    y.push_back(std::log(mlp::sustained_compute_ms(r.q, *r.gpu) / *k));
  }
  if (x.size() < mlp::conv_feature_count) return std::nullopt;
  constexpr auto n = static_cast<Eigen::Index>(mlp::conv_feature_count);
  // Column pivoting: a term that is 0 on every row (the Winograd term where no row may run Winograd) gets 0.
  auto solve = [&](bool tied) {
    Eigen::MatrixXd a(static_cast<Eigen::Index>(x.size()), n);
    Eigen::VectorXd rhs = Eigen::Map<const Eigen::VectorXd>(y.data(), static_cast<Eigen::Index>(y.size()));
    for (std::size_t i = 0; i < x.size(); ++i) {
      const auto row = static_cast<Eigen::Index>(i);
      for (Eigen::Index j = 0; j < n; ++j) a(row, j) = x[i][static_cast<std::size_t>(j)];
      if (tied) rhs(row) -= conv_q_alg_max * x[i][1], a(row, 4) -= x[i][1], a(row, 1) = 0;  // q's term: the rest of the sum
    }
    const Eigen::VectorXd b = a.colPivHouseholderQr().solve(rhs);
    mlp::ConvCoefs c{};
    for (Eigen::Index j = 0; j < n; ++j) c[static_cast<std::size_t>(j)] = b(j);
    if (tied) c[1] = conv_q_alg_max - c[4];
    return c;
  };
  // Within a wave a larger batch adds FLOPs and fills tiles (q) but not the algorithm's waves, so its time goes
  // as FLOPs^(1 - algorithm - q): the two terms together at most conv_q_alg_max, or a larger batch might run faster.
  const auto c = solve(false);
  return c[1] + c[4] > conv_q_alg_max ? solve(true) : c;
}

// mlp::ConvCoefSets::cudnn9_implicit_share leaving one GPU out: the median over the kernel-timed convolutions of the
// library without FP32 Winograd that cuDNN ran as implicit GEMMs (habitat's H100/H200 rows of mlp::cudnn9_implicit's
// shapes, not FFT, over 0.03 ms) of the tile model's time on cuDNN 9's tiles over the kernels less their fixed part.
// Without rows, the shipped share where nothing is left out; leaving a GPU out that would carry its own rows, so
// that is an error, as for the FFT's share.
[[nodiscard]] inline double cudnn9_implicit_share(const std::vector<Row>& rows, const Device* leave_out) {
  std::vector<double> v;
  for (const auto& r : rows) {
    if (r.gpu == leave_out || r.call_timed || r.fft || !mlp::cudnn9_implicit(r.q, *r.gpu) || !(r.measured_ms > 0.03)) continue;
    const double kernel = r.measured_ms - mlp::fixed_ms(r.q);
    if (kernel > 0) v.push_back(mlp::cudnn9_implicit_us(r.q, *r.gpu) / 1e3 / kernel);
  }
  if (v.empty() && leave_out) throw make_error("", "cudnn9_implicit_share", "no implicit-GEMM convolution rows to derive it without " + leave_out->name);
  return detail::median(std::move(v), mlp::conv_model.coefs.cudnn9_implicit_share);
}

// The convolution model's constants derived without one GPU. The log-linear efficiency: the other GPUs' call-timed
// convolutions (NeuSight's: cuDNN 8, the library with FP32 Winograd) whose kernel runs over 0.03 ms and whose call is
// not on its floor (there the call hides the kernel); without rows, the shipped set where nothing is left out and an
// error leaving a GPU out (the shipped set was derived from every GPU). cuDNN 9's share: cudnn9_implicit_share.
[[nodiscard]] inline mlp::ConvCoefSets conv_coefs(const std::vector<Row>& rows, const Floors& floors, const Device* leave_out) {
  const double fused = fused_winograd_share(rows, floors, leave_out);
  const auto winograd = fit_conv_coefs(rows, fused, [&](const Row& r) -> std::optional<double> {
    if (r.gpu == leave_out || !r.call_timed || on_floor(r, floors)) return std::nullopt;
    const double k = kernel_ms(r, floors);
    return k > 0.03 ? std::optional(k) : std::nullopt;
  });
  if (!winograd && leave_out) throw make_error("", "conv_coefs", "no convolution rows to fit without " + leave_out->name);
  return {winograd ? *winograd : mlp::conv_model.coefs.winograd, fused, cudnn9_implicit_share(rows, leave_out)};
}

// mlp::fft_conv_efficiency leaving one GPU out: the median over the kernel-timed convolutions cuDNN ran as FFT
// (habitat's Hopper rows; NeuSight's call-timed ones hide their kernels behind the call) of the ideal FFT time over
// the kernels' less their fixed part. Without rows, the shipped constant where nothing is left out; leaving a GPU
// out that would carry its own rows (it was derived from every GPU), so that is an error, as in conv_coefs.
[[nodiscard]] inline double fft_efficiency(const std::vector<Row>& rows, const Device* leave_out) {
  std::vector<double> v;
  for (const auto& r : rows) {
    if (r.gpu == leave_out || r.call_timed || !r.fft || mlp::fft_conv_side(r.q) <= 0) continue;
    const double kernel = r.measured_ms - mlp::fixed_ms(r.q);
    if (kernel > 0) v.push_back(mlp::fft_conv_ideal_us(r.q, *r.gpu) / 1e3 / kernel);
  }
  if (v.empty() && leave_out) throw make_error("", "fft_efficiency", "no FFT convolution rows to derive it without " + leave_out->name);
  return detail::median(std::move(v), mlp::fft_conv_efficiency);
}

// The median kernel of kernel-timed rows that `keep` accepts, leaving one GPU out; `otherwise` where there are none.
template <class Keep>
[[nodiscard]] inline double median_kernel_ms(const std::vector<Row>& rows, const Device* leave_out, Keep keep, double otherwise) {
  std::vector<double> v;
  for (const auto& r : rows)
    if (r.gpu != leave_out && !r.call_timed && keep(r)) v.push_back(r.measured_ms);
  return detail::median(std::move(v), otherwise);
}

// The fixed part of a family's kernels (mlp::fixed_ms), leaving one GPU out: a layer norm's or softmax's, the median
// kernel of rows whose working set is under 1 MB; an elementwise kernel's, the shortest kernel's (the median `add`
// kernel of configurations under 20k elements); the shipped one for the other families.
[[nodiscard]] inline double fixed_ms(const std::vector<Row>& rows, ops::OpKind kind, const Device* leave_out) {
  const double shipped = mlp::fixed_ms(kind);
  if (kind == ops::OpKind::elementwise)
    return median_kernel_ms(rows, leave_out, [](const Row& r) { return r.op == "add" && r.q.dims[0] * r.q.dims[1] < 20000; }, shipped);
  if (kind != ops::OpKind::layer_norm && kind != ops::OpKind::softmax) return shipped;
  return median_kernel_ms(
      rows, leave_out, [kind](const Row& r) { return r.q.op == kind && ops::op_work(r.q.op, r.q.dims, r.q.dtype, r.q.pass).bytes < 1e6; }, shipped);
}

// The L2's reuse by back-to-back calls (mlp::L2Reuse) from the kernel-timed rows of the elementwise operators
// without an issue cost (their bytes bound them; the call-timed rows hide it) whose working set is 0.1-1x L2,
// leaving one GPU out: the L2 rate and hit exponent, together on a grid, whose bytes' time (mlp::dram_bytes at the
// GPU's bandwidth, after the family's fixed part) errs least. Rate and exponent trade against each other: the pair
// fitted on both GPUs need not lie between those fitted on each. The shipped pair where there are no such rows.
[[nodiscard]] inline mlp::L2Reuse l2_reuse(const std::vector<Row>& rows, const Device* leave_out) {
  const double fixed = fixed_ms(rows, ops::OpKind::elementwise, leave_out);
  struct Sample {
    const Row* row;
    double bytes, kernel_ms;
  };
  std::vector<Sample> samples;
  for (const auto& r : rows) {
    if (r.gpu == leave_out || r.call_timed || r.q.op != ops::OpKind::elementwise || mlp::find_issue_cost(mlp::issue_name(r.q))) continue;
    const double bytes = ops::op_work(r.q.op, r.q.dims, r.q.dtype, r.q.pass).bytes, l2 = r.gpu->l2_mib * 1024 * 1024;
    const double k = r.measured_ms - fixed;
    if (bytes < 0.1 * l2 || bytes >= l2 || k <= fixed) continue;
    samples.push_back({&r, bytes, k});
  }
  if (samples.empty()) return mlp::l2_reuse;
  mlp::L2Reuse best = mlp::l2_reuse;
  double best_err = INFINITY;
  for (double p = 1.0; p <= 8.0 + 1e-9; p += 0.2)
    for (double rate = 10; rate <= 60 + 1e-9; rate += 0.5) {
      double err = 0;
      for (const auto& s : samples) {
        const Device& g = *s.row->gpu;
        const double model = mlp::dram_bytes(s.row->q, s.bytes, g, {rate, p}) / (g.sustained_bandwidth_gbps() * 1e6);
        err += std::abs(model / s.kernel_ms - 1);
      }
      if (err < best_err) best_err = err, best = {rate, p};
    }
  return best;
}

// The fixed part of an entry of mlp::issue_costs that has one: the median kernel of its kernel-timed rows whose
// working set is under 1 MB, leaving one GPU out (0 for the others, and where there are no such rows).
[[nodiscard]] inline double issue_fixed_ms(const std::vector<Row>& rows, const std::string& op, const Device* leave_out) {
  const auto* c = mlp::find_issue_cost(op);
  if (!c || !(c->fixed_ms > 0)) return 0;
  return median_kernel_ms(
      rows, leave_out,
      [&op](const Row& r) { return r.q.op == ops::OpKind::elementwise && mlp::issue_name(r.q) == op && ops::op_work(r.q.op, r.q.dims, r.q.dtype, r.q.pass).bytes < 1e6; },
      0);
}

// The issue cost of an entry of mlp::issue_costs (named as mlp::issue_name names a row), from kernel-timed rows
// whose working set is 0.1-0.9x L2 (0.1-0.5x for an entry with a cost per row): in the SM's issue slots per
// element, the kernel time less its fixed part; the median, or for an entry with a cost per row the least
// squares line on 1 / row length (its intercept per element, its slope per row). The shipped entry where there
// are no rows; nullopt for the names that have none.
[[nodiscard]] inline std::optional<mlp::IssueCost> fit_issue_cost(const std::vector<Row>& rows, const std::string& op, const Device* leave_out) {
  const auto* it = mlp::find_issue_cost(op);
  if (!it) return std::nullopt;
  mlp::IssueCost c = *it;
  c.fixed_ms = issue_fixed_ms(rows, op, leave_out);
  const bool per_row = it->per_row > 0;
  std::optional<double> fixed;  // the operator's own, else the family's of the rows that bear its name
  std::vector<double> v;
  detail::LineFit fit;
  for (const auto& r : rows) {
    if (r.gpu == leave_out || r.call_timed || mlp::issue_name(r.q) != op) continue;
    const double bytes = ops::op_work(r.q.op, r.q.dims, r.q.dtype, r.q.pass).bytes, l2 = r.gpu->l2_mib * 1024 * 1024;
    if (!fixed) fixed = c.fixed_ms > 0 ? c.fixed_ms : fixed_ms(rows, r.q.op, leave_out);
    const double k = r.measured_ms - *fixed;
    if (bytes < 0.1 * l2 || bytes > (per_row ? 0.5 : 0.9) * l2 || k <= 0) continue;
    const double y = k * 1e3 * r.gpu->load_clock_mhz(Precision::fp32) * r.gpu->sms * r.gpu->issue_threads_per_clk_per_sm() / (r.q.dims[0] * r.q.dims[1]);
    v.push_back(y);
    fit.add(1 / r.q.dims[1], y);
  }
  if (!per_row) {
    c.per_element = detail::median(std::move(v), it->per_element);
  } else if (const auto line = fit.line()) {
    c.per_element = line->intercept, c.per_row = line->slope;
  }
  return c;
}

// The issue cost per element of an entry of mlp::issue_costs (fit_issue_cost); 0 for the names that have none.
[[nodiscard]] inline double issue_cost(const std::vector<Row>& rows, const std::string& op, const Device* leave_out) {
  const auto c = fit_issue_cost(rows, op, leave_out);
  return c ? c->per_element : 0;
}

// The latency of a row of the family's kernels (mlp::RowLatency; a softmax's where one warp runs a row): least
// squares of kernel time on the row's length in SM clocks, over kernel-timed rows of at most one row per SM and over
// 256 elements (softmax: up to softmax_warp_max_h). The shipped constants where there are too few rows.
[[nodiscard]] inline mlp::RowLatency row_latency(const std::vector<Row>& rows, ops::OpKind kind, const Device* leave_out) {
  const mlp::RowLatency shipped = mlp::family_row_latency({kind, {}, {}, {1, 1}}).value_or(mlp::softmax_row_latency);
  detail::LineFit fit;
  for (const auto& r : rows) {
    if (r.gpu == leave_out || r.call_timed || r.q.op != kind || !mlp::family_row_latency(r.q)) continue;
    if (r.q.dims[0] > r.gpu->sms || r.q.dims[1] <= 256) continue;
    fit.add(r.q.dims[1] / (r.gpu->load_clock_mhz(Precision::fp32) * 1e3), r.measured_ms);
  }
  const auto line = fit.line(10);
  return line ? mlp::RowLatency{line->intercept, line->slope} : shipped;
}

struct ErrorRow {
  std::string gpu, op;
  std::size_t n = 0, paired = 0;
  double share = 0;     // the roofline share derived without this GPU (NaN for convolutions: see conv)
  mlp::ConvCoefSets conv = mlp::conv_model.coefs;  // the convolution efficiency model fitted without it
  double fft = mlp::fft_conv_efficiency;         // FFT convolution's share of its ideal rate, derived without it
  mlp::L2Reuse l2;      // the L2's reuse derived without it
  double fixed_ms = 0;  // the kernels' fixed part (a layer norm's or softmax's: derived without it)
  std::array<mlp::IssueCost, mlp::issue_costs.size()> issue = mlp::issue_costs;  // issue costs derived without it
  mlp::RowLatency row;  // a row's latency (softmax, layer norm: derived without it)
  FloorLine floor;  // the timed-call floor derived without this GPU (0: additive call or kernel times)
  double model = 0, ratio = 0, same = 0, flops = 0, bandwidth = 0;
  // The model with the GPU's own host floor (a fact of the machine it was timed on, not of the GPU): what is
  // left of its error where the host is known. NaN where the rows have no floor.
  double model_own_floor = std::nan("");
  std::string origin;

  // The op's kernel time on g with the constants derived without this GPU.
  [[nodiscard]] double kernel_ms(const mlp::OpQuery& q, const Device& g, std::optional<mlp::ConvPath> path = std::nullopt) const {
    return mlp::physics_kernel_ms(q, g, share, l2, conv, fixed_ms, mlp::issue_cost(q, issue), row, path, fft);
  }
};

// The GPUs of the rows, in their first row's order.
[[nodiscard]] inline std::vector<const Device*> gpus_of(const std::vector<Row>& rows) {
  std::vector<const Device*> gpus;
  for (const auto& r : rows)
    if (std::find(gpus.begin(), gpus.end(), r.gpu) == gpus.end()) gpus.push_back(r.gpu);
  return gpus;
}

// The row as the model would time it: a call in the row's protocol (on `floor` at the row's place where given:
// the overlap form, max(floor, lead x floor + kernel)), or the kernels alone.
[[nodiscard]] inline double timed_ms(const Row& r, double kernel, std::optional<FloorLine> floor) {
  if (!r.call_timed) return kernel;
  if (!floor || !has_floor(r.q)) return mlp::timed_call_ms(mlp::call_floor(r.q), kernel);
  const double f = floor->at(r.seq);
  return std::max(f, call_lead(r.q) * f + kernel);
}

[[nodiscard]] inline std::vector<ErrorRow> leave_one_gpu_out(const std::vector<Row>& rows, const Catalog& cat) {
  const auto gpus = gpus_of(rows);
  const Floors floors = call_floors(rows);
  // The same configuration on the origin: op name plus dims.
  using Key = std::pair<std::string, ops::Dims>;
  std::map<const Device*, std::map<Key, const Row*>> by_gpu;
  for (const auto& r : rows) by_gpu[r.gpu][Key{r.op, r.q.dims}] = &r;
  std::vector<ErrorRow> out;
  for (const Device* g : gpus) {
    const Device* origin = g->name == "H100 SXM" ? cat.find("A100 PCIe 40GB") : cat.find("H100 SXM");
    const Device est = study::unseen(*g, gpus);
    // The constants that do not depend on the op family, derived without g once.
    const auto l2 = l2_reuse(rows, g);
    auto issue = mlp::issue_costs;
    for (auto& c : issue) c = *fit_issue_cost(rows, std::string(c.op), g);
    for (const auto& op : study_ops) {
      ErrorRow e;
      e.gpu = g->name, e.op = op;
      e.origin = origin ? origin->name : "";
      const auto kind = *ops::op_from_name(op);
      e.share = mlp::conv_like(kind) ? std::nan("") : roofline_share(rows, floors, kind, g);
      if (mlp::conv_like(kind)) e.conv = conv_coefs(rows, floors, g), e.fft = fft_efficiency(rows, g);
      e.l2 = l2;
      e.fixed_ms = fixed_ms(rows, kind, g);
      if (const auto* c = mlp::find_issue_cost(op, issue); c && c->fixed_ms > 0) e.fixed_ms = c->fixed_ms;
      e.issue = issue;
      e.row = row_latency(rows, kind, g);
      const auto floor = floor_without(floors, op, g);
      const auto own = floors.find({g, op});
      double own_sum = 0;
      for (const auto& r : rows) {
        if (r.gpu != g || r.op != op) continue;
        ++e.n;
        if (r.call_timed && floor) e.floor = *floor;
        const double kernel = e.kernel_ms(r.q, est);
        e.model += std::abs(timed_ms(r, kernel, floor) / r.measured_ms - 1);
        if (own != floors.end()) own_sum += std::abs(timed_ms(r, kernel, own->second) / r.measured_ms - 1);
        const auto it = origin ? by_gpu[origin].find(Key{r.op, r.q.dims}) : by_gpu[g].end();
        if (!origin || it == by_gpu[origin].end()) continue;
        const Row& o = *it->second;
        ++e.paired;
        // A call-timed origin row at its floor hides its kernel (at most the floor less its lead): the model's
        // kernel time stands in for it there.
        const bool hidden = on_floor(o, floors);
        // The ratio like for like, as mlp::physics_ratio: the origin on the path the model takes on g. Where the
        // origin's kernel is hidden, the ratio's answer is the model's kernel time on g, and the baselines' stand-in
        // the origin on its own shorter path.
        const double origin_model = e.kernel_ms(o.q, *origin, mlp::conv_path(r.q, est, e.conv, e.fft));
        const double ok = std::max(hidden ? e.kernel_ms(o.q, *origin) : kernel_ms(o, floors), 1e-4);
        auto err = [&](double factor) { return std::abs(timed_ms(r, ok * factor, floor) / r.measured_ms - 1); };
        e.ratio += hidden ? std::abs(timed_ms(r, kernel, floor) / r.measured_ms - 1) : err(kernel / origin_model);
        e.same += err(1);
        e.flops += err(origin->fp32_tflops() / g->fp32_tflops());
        e.bandwidth += err(origin->sustained_bandwidth_gbps() / g->sustained_bandwidth_gbps());
      }
      if (e.n == 0) continue;
      e.model /= double(e.n);
      if (own != floors.end() && e.floor.ms > 0) e.model_own_floor = own_sum / double(e.n);
      const double p = double(std::max<std::size_t>(e.paired, 1));
      e.ratio /= p, e.same /= p, e.flops /= p, e.bandwidth /= p;
      out.push_back(e);
    }
  }
  return out;
}

}  // namespace habitat::opstudy
