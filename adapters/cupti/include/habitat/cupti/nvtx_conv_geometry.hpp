#pragma once
// emit_nvtx records shapes but no scalar arguments, so a convolution's stride, padding and groups are missing, and
// without them its output (and work) is not known: a stride-2 layer would be taken at 4x its FLOPs. In a training
// step the output is recorded after all: the backward node of the same sequence number runs
// aten::convolution_backward, whose inputs are grad_output (the output's shape), the input and the weight. For each
// convolution whose backward was recorded (a forward matched by its sequence number and its input and weight
// shapes, so that ops sharing a number, under no_grad or in a compiled region, take only their own), this fills the
// stride and padding that give exactly that output (dilation 1; stride = kernel first where a side is longer than
// the kernel, as patch embeddings run, then the smallest), output padding and the groups the channels imply, as
// the "Concrete Inputs" the profiler would have written, and marks them as inferred. Forward-only steps keep them
// unknown, and so does the backward's output_mask (which gradients it forms).
#include <algorithm>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "habitat/cupti/nvtx_op.hpp"
#include "habitat/ops/aten_signatures.hpp"
#include "habitat/ops/work.hpp"

namespace habitat::cupti {

namespace detail {
using Shape = std::vector<long long>;

// For each range, the sequence number of the innermost range around it (itself first) that has one, on its
// thread: one pass per thread in start order with the open ranges on a stack.
inline std::vector<long long> enclosing_sequences(const std::vector<std::optional<NvtxOp>>& ops, const std::vector<TrackedRange>& ranges) {
  std::vector<long long> seq(ranges.size(), -1);
  std::vector<std::size_t> order(ranges.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  // By thread, then start, then the longer first; ranges of equal span in the order their ends were recorded,
  // last first (an enclosing range ends after what it encloses).
  std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    return std::tuple(ranges[a].thread, ranges[a].start_ns, ranges[b].end_ns, b) < std::tuple(ranges[b].thread, ranges[b].start_ns, ranges[a].end_ns, a);
  });
  std::vector<std::size_t> open;
  for (const std::size_t i : order) {
    while (!open.empty() && (ranges[open.back()].thread != ranges[i].thread || ranges[open.back()].end_ns < ranges[i].end_ns))
      open.pop_back();
    seq[i] = ops[i] && ops[i]->sequence >= 0 ? ops[i]->sequence : open.empty() ? -1 : seq[open.back()];
    open.push_back(i);
  }
  return seq;
}

struct Geometry1 {
  long long stride = 1, padding = 0, output_padding = 0;
};
// A stride and padding (and output padding) that map `in` to `out` through a kernel of k, dilation 1: stride = k
// with no padding where that fits a side longer than the kernel (patch embeddings), else the smallest stride with
// the smallest padding below k.
inline std::optional<Geometry1> solve(long long in, long long k, long long out, bool transposed) {
  if (in <= 0 || k <= 0 || out <= 0 || in > (1LL << 40) || k > (1LL << 40) || out > (1LL << 40)) return std::nullopt;
  auto fits = [&](long long s, long long p, long long op) {
    const double o = transposed ? ops::conv_transpose_out_size(double(in), double(k), double(s), double(p), 1, double(op))
                                : ops::conv_out_size(double(in), double(k), double(s), double(p));
    return o == double(out);
  };
  // A patch embedding's side is longer than its kernel; where it is not (one output, one input), every stride gives
  // the same output and the smallest is the likelier.
  if (!transposed && k > 1 && in > k && fits(k, 0, 0)) return Geometry1{k, 0, 0};
  for (long long s = 1; s <= 64; ++s) {
    if (transposed) {
      for (long long op = 0; op < s; ++op) {  // out = (in - 1) s - 2p + k + op
        const long long twice_p = (in - 1) * s + k + op - out;
        if (twice_p >= 0 && twice_p % 2 == 0 && twice_p / 2 < k && fits(s, twice_p / 2, op)) return Geometry1{s, twice_p / 2, op};
      }
    } else {  // out = floor((in + 2p - k) / s) + 1: the smallest p with in + 2p - k >= (out - 1) s
      const long long p = std::max(0LL, ((out - 1) * s + k - in + 1) / 2);
      if (p < k && fits(s, p, 0)) return Geometry1{s, p, 0};
    }
  }
  return std::nullopt;
}

inline std::string int_list(const std::vector<long long>& v) {
  std::string s = "[";
  for (std::size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + std::to_string(v[i]);
  return s + "]";
}

// A 1-D convolution reaches cuDNN as a 2-D one of height 1: its output then has that height too.
inline Shape as_rank_of(const Shape& y, const Shape& x) {
  if (y.size() + 1 == x.size() && x.size() == 4 && x[2] == 1) return {y[0], y[1], 1, y[2]};
  return y;
}

struct Backward {
  Shape output, input, weight;
};
}  // namespace detail

// Fills ops[i]->values (and ->inferred) for the convolutions whose output a backward records.
inline void infer_conv_geometry(std::vector<std::optional<NvtxOp>>& ops, const std::vector<TrackedRange>& ranges) {
  const auto seqs = detail::enclosing_sequences(ops, ranges);
  std::multimap<long long, detail::Backward> backward_by_seq;
  std::set<long long> transposed_seqs;
  for (std::size_t i = 0; i < ops.size(); ++i) {
    if (!ops[i] || seqs[i] < 0) continue;
    if (ops[i]->name == "aten::convolution_backward" && ops[i]->sizes.size() >= 3)
      backward_by_seq.emplace(seqs[i], detail::Backward{ops[i]->sizes[0], ops[i]->sizes[1], ops[i]->sizes[2]});
    if (ops::aten::named_transposed_convolution(ops[i]->name)) transposed_seqs.insert(seqs[i]);
  }
  for (std::size_t i = 0; i < ops.size(); ++i) {
    if (!ops[i] || seqs[i] < 0) continue;
    const ops::aten::Signature* sig = ops::aten::find_signature(ops[i]->name);
    if (!sig || !sig->find("weight") || !sig->find("stride") || !sig->find("padding")) continue;
    auto& op = *ops[i];
    const auto ca = ops::aten::conv_args(*sig);
    const auto grad_output = sig->find("grad_output");
    if (std::max({ca.input, ca.weight, grad_output.value_or(0)}) >= op.sizes.size()) continue;
    const auto& x = op.sizes[ca.input];
    const auto& w = op.sizes[ca.weight];
    // The backward has the output in hand; a forward takes it from the one backward of its number whose input and
    // weight are its own (ignoring a 1-D convolution's unit height), and from none where two of them disagree.
    std::optional<detail::Shape> y;
    if (grad_output) {
      y = op.sizes[*grad_output];
    } else {
      auto [from, to] = backward_by_seq.equal_range(seqs[i]);
      for (; from != to; ++from) {
        const auto& b = from->second;
        if (detail::as_rank_of(b.input, x) != x || detail::as_rank_of(b.weight, w) != w) continue;
        const auto out = detail::as_rank_of(b.output, x);
        if (y && *y != out) {
          y.reset();
          break;
        }
        y = out;
      }
    }
    if (!y) continue;
    *y = detail::as_rank_of(*y, x);
    if (x.size() < 3 || w.size() != x.size() || y->size() != x.size() || w[0] <= 0 || w[1] <= 0 || (*y)[0] != x[0]) continue;
    const bool transposed = ca.always_transposed || transposed_seqs.contains(seqs[i]);
    // Groups from the channels: the weight is [out, in / groups, ...], or [in, out / groups, ...] when transposed.
    const long long whole = transposed ? (*y)[1] : x[1], per_group = w[1], other_side = transposed ? x[1] : (*y)[1];
    if (whole % per_group != 0 || w[0] != other_side) continue;
    const long long groups = whole / per_group;
    std::vector<long long> stride, padding, output_padding, dilation;
    bool solved = true;
    for (std::size_t d = 2; d < x.size() && solved; ++d) {
      const auto g = detail::solve(x[d], w[d], (*y)[d], transposed);
      if (!g) solved = false;
      else stride.push_back(g->stride), padding.push_back(g->padding), output_padding.push_back(g->output_padding), dilation.push_back(1);
    }
    if (!solved) continue;
    op.values.assign(op.sizes.size(), "");
    auto put = [&](std::optional<std::size_t> at, std::string v) {
      if (at && *at < op.values.size()) op.values[*at] = std::move(v);
    };
    put(ca.stride, detail::int_list(stride));
    put(ca.padding, detail::int_list(padding));
    put(ca.dilation, detail::int_list(dilation));
    put(ca.output_padding, detail::int_list(output_padding));
    put(ca.groups, std::to_string(groups));
    put(ca.transposed, transposed ? "True" : "False");
    op.inferred = true;
  }
}

}  // namespace habitat::cupti
