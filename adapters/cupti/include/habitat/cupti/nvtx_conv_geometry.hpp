#pragma once
// emit_nvtx records shapes but no scalar arguments, so a convolution's stride, padding and groups are missing, and
// without them its output (and work) is not known: a stride-2 layer would be taken at 4x its FLOPs. In a training
// step the output is recorded after all: the backward node of the same sequence number runs
// aten::convolution_backward, whose first input (grad_output) has the output's shape. From the input, weight and
// output sizes this fills, for each forward convolution whose backward was recorded, the smallest stride and the
// padding that give exactly that output (dilation 1) and the groups the channel counts imply, as the "Concrete
// Inputs" the profiler would have written, and marks them as inferred; convolution_backward the same from its own
// grad_output. Forward-only steps keep them unknown, and the backward's output_mask (which gradients) stays unknown.
#include <algorithm>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "habitat/cupti/nvtx_op.hpp"
#include "habitat/ops/aten_signatures.hpp"

namespace habitat::cupti {

struct SpanOnThread {
  std::uint64_t start_ns = 0, end_ns = 0;
  std::uint32_t thread = 0;
};

namespace detail {
// The innermost span around span i (on its thread) whose op has a sequence number; i itself first.
inline long long sequence_of(std::size_t i, const std::vector<std::optional<NvtxOp>>& ops, const std::vector<SpanOnThread>& spans) {
  if (ops[i] && ops[i]->sequence >= 0) return ops[i]->sequence;
  long long seq = -1;
  std::uint64_t best = ~0ULL;
  for (std::size_t j = 0; j < spans.size(); ++j) {
    if (j == i || !ops[j] || ops[j]->sequence < 0 || spans[j].thread != spans[i].thread) continue;
    if (spans[j].start_ns <= spans[i].start_ns && spans[j].end_ns >= spans[i].end_ns && spans[j].end_ns - spans[j].start_ns < best) {
      best = spans[j].end_ns - spans[j].start_ns;
      seq = ops[j]->sequence;
    }
  }
  return seq;
}

struct Geometry1 {
  long long stride = 1, padding = 0, output_padding = 0;
};
// The smallest stride (then padding) that maps `in` to `out` through a kernel of k (dilation 1).
inline std::optional<Geometry1> solve(long long in, long long k, long long out, bool transposed) {
  if (in <= 0 || k <= 0 || out <= 0) return std::nullopt;
  for (long long s = 1; s <= 64; ++s)
    for (long long p = 0; p < k; ++p) {
      if (transposed) {
        const long long op = out - ((in - 1) * s - 2 * p + k);
        if (op >= 0 && op < s) return Geometry1{s, p, op};
      } else if (in + 2 * p >= k && (in + 2 * p - k) / s + 1 == out) {
        return Geometry1{s, p, 0};
      }
    }
  return std::nullopt;
}

inline std::string int_list(const std::vector<long long>& v) {
  std::string s = "[";
  for (std::size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + std::to_string(v[i]);
  return s + "]";
}
}  // namespace detail

// Fills ops[i]->values (and ->inferred) for the forward convolutions whose output a backward records.
inline void infer_conv_geometry(std::vector<std::optional<NvtxOp>>& ops, const std::vector<SpanOnThread>& spans) {
  std::map<long long, std::vector<long long>> output_by_seq;
  std::map<long long, bool> transposed_by_seq;
  for (std::size_t i = 0; i < ops.size(); ++i) {
    if (!ops[i]) continue;
    if (ops[i]->name == "aten::convolution_backward" && !ops[i]->sizes.empty()) {
      if (const auto seq = detail::sequence_of(i, ops, spans); seq >= 0) output_by_seq[seq] = ops[i]->sizes[0];
    } else if (ops[i]->name.find("transpose") != std::string::npos && ops[i]->name.find("conv") != std::string::npos) {
      if (const auto seq = detail::sequence_of(i, ops, spans); seq >= 0) transposed_by_seq[seq] = true;
    }
  }
  for (std::size_t i = 0; i < ops.size(); ++i) {
    if (!ops[i]) continue;
    const ops::aten::Signature* sig = ops::aten::find_signature(ops[i]->name);
    if (!sig || !sig->find("weight") || !sig->find("stride") || !sig->find("padding")) continue;
    const auto seq = detail::sequence_of(i, ops, spans);
    if (seq < 0) continue;
    auto& op = *ops[i];
    const auto ca = ops::aten::conv_args(*sig);
    // The backward has the output in hand (grad_output); the forward takes it from its backward.
    const auto grad_output = sig->find("grad_output");
    const auto out = output_by_seq.find(seq);
    if (!grad_output && out == output_by_seq.end()) continue;
    if (std::max({ca.input, ca.weight, grad_output.value_or(0)}) >= op.sizes.size()) continue;
    const auto& x = op.sizes[ca.input];
    const auto& w = op.sizes[ca.weight];
    const auto& y = grad_output ? op.sizes[*grad_output] : out->second;
    if (x.size() < 3 || w.size() != x.size() || y.size() != x.size() || w[0] <= 0 || w[1] <= 0) continue;
    const bool transposed = ca.always_transposed || transposed_by_seq.contains(seq);
    std::vector<long long> stride, padding, output_padding, dilation;
    bool solved = true;
    for (std::size_t d = 2; d < x.size() && solved; ++d) {
      const auto g = detail::solve(x[d], w[d], y[d], transposed);
      if (!g) solved = false;
      else stride.push_back(g->stride), padding.push_back(g->padding), output_padding.push_back(g->output_padding), dilation.push_back(1);
    }
    const long long in_per_group = transposed ? w[0] : w[1];
    if (!solved || x[1] % in_per_group != 0) continue;
    op.values.assign(op.sizes.size(), "");
    auto put = [&](std::optional<std::size_t> at, std::string v) {
      if (at && *at < op.values.size()) op.values[*at] = std::move(v);
    };
    put(ca.stride, detail::int_list(stride));
    put(ca.padding, detail::int_list(padding));
    put(ca.dilation, detail::int_list(dilation));
    put(ca.output_padding, detail::int_list(output_padding));
    put(ca.groups, std::to_string(x[1] / in_per_group));
    put(ca.transposed, transposed ? "True" : "False");
    op.inferred = true;
  }
}

}  // namespace habitat::cupti
