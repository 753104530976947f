#pragma once
// An NVTX range as PyTorch's emit_nvtx names an operator: "aten::addmm, seq = 12, op_id = 40, sizes = [[64],
// [64, 512], [512, 64]], input_op_ids = [(38,0)]" (torch/csrc/profiler/util.cpp, getNvtxStr: the sequence number
// only for ops autograd records, op_id on every op, sizes with record_shapes=True, one list per input, [] for
// what is not a tensor). The tracker turns such ranges into the profiler's operators, so a PyTorch program run
// under emit_nvtx(record_shapes=True) gives habitat the operators and shapes torch.profiler would have; any other
// range is a user annotation.
#include <algorithm>
#include <cstdint>
#include <optional>
#include <utility>
#include <string>
#include <string_view>
#include <vector>

#include "habitat/ops/aten_signatures.hpp"

namespace habitat::cupti {

struct TrackedRange {  // an NVTX push/pop range on one host thread
  std::string message;
  std::uint64_t start_ns = 0, end_ns = 0;
  std::uint32_t process = 0, thread = 0;
};

struct NvtxOp {
  std::string name;
  long long sequence = -1;                        // -1: none
  std::vector<std::vector<long long>> sizes;      // one per input
  bool has_sizes = false;
  std::vector<std::string> values;  // "Concrete Inputs" where inferred (nvtx_conv_geometry.hpp); emit_nvtx records none
  bool inferred = false;
};

namespace detail {
// A whole number at the start of s (after blanks); s is advanced past it.
inline std::optional<long long> take_int(std::string_view& s) {
  while (!s.empty() && s.front() == ' ') s.remove_prefix(1);
  bool neg = false;
  if (!s.empty() && s.front() == '-') {
    neg = true;
    s.remove_prefix(1);
  }
  if (s.empty() || s.front() < '0' || s.front() > '9') return std::nullopt;
  long long v = 0;
  while (!s.empty() && s.front() >= '0' && s.front() <= '9') {
    if (v > (1LL << 58)) return std::nullopt;  // no dimension or sequence number is this large
    v = v * 10 + (s.front() - '0');
    s.remove_prefix(1);
  }
  return neg ? -v : v;
}

// "[[1, 2], [], [3]]" at the start of s; nullopt where it is not that.
inline std::optional<std::vector<std::vector<long long>>> take_sizes(std::string_view& s) {
  std::vector<std::vector<long long>> out;
  if (s.empty() || s.front() != '[') return std::nullopt;
  s.remove_prefix(1);
  while (true) {
    while (!s.empty() && (s.front() == ' ' || s.front() == ',')) s.remove_prefix(1);
    if (s.empty()) return std::nullopt;
    if (s.front() == ']') {
      s.remove_prefix(1);
      return out;
    }
    if (s.front() != '[') return std::nullopt;
    s.remove_prefix(1);
    std::vector<long long> dims;
    while (true) {
      while (!s.empty() && (s.front() == ' ' || s.front() == ',')) s.remove_prefix(1);
      if (s.empty()) return std::nullopt;
      if (s.front() == ']') {
        s.remove_prefix(1);
        break;
      }
      const auto d = take_int(s);
      if (!d) return std::nullopt;
      dims.push_back(*d);
    }
    out.push_back(std::move(dims));
  }
}
}  // namespace detail

// emit_nvtx flattens a list of tensors into one entry per tensor where torch.profiler records one entry holding the
// list, so the arguments after it shift. cuDNN's RNN takes its weights as such a list (argument 1) before the
// arguments its cost reads by position: those entries are folded back into one (their shapes are not needed: the
// weights are counted from weight_buf).
inline constexpr std::pair<std::string_view, std::size_t> tensor_list_arguments[] = {{"aten::_cudnn_rnn", 1}, {"aten::_cudnn_rnn_backward", 1}};

inline void fold_tensor_list(NvtxOp& op) {
  for (const auto& [name, at] : tensor_list_arguments) {
    const ops::aten::Signature* sig = ops::aten::find_signature(name);
    if (op.name != name || !sig) continue;
    const std::size_t n_args = static_cast<std::size_t>(std::count(sig->args.begin(), sig->args.end(), ',')) + 1;
    if (op.sizes.size() <= n_args || at >= op.sizes.size()) return;
    const std::size_t surplus = op.sizes.size() - n_args;
    op.sizes.erase(op.sizes.begin() + static_cast<long>(at) + 1, op.sizes.begin() + static_cast<long>(at + surplus) + 1);
    op.sizes[at].clear();
  }
}

// The operator an emit_nvtx range names, or nullopt for any other range (a user's own, a step marker).
[[nodiscard]] inline std::optional<NvtxOp> parse_nvtx_op(std::string_view msg) {
  constexpr std::string_view seq_key = ", seq = ", op_key = ", op_id = ", sizes_key = ", sizes = ";
  const auto first = std::min({msg.find(seq_key), msg.find(op_key), msg.find(sizes_key)});
  if (first == std::string_view::npos || first == 0) return std::nullopt;
  NvtxOp op;
  op.name = std::string(msg.substr(0, first));
  if (const auto p = msg.find(seq_key); p != std::string_view::npos) {
    auto rest = msg.substr(p + seq_key.size());
    const auto v = detail::take_int(rest);
    if (!v) return std::nullopt;
    op.sequence = *v;
  }
  if (const auto p = msg.find(sizes_key); p != std::string_view::npos) {
    auto rest = msg.substr(p + sizes_key.size());
    auto s = detail::take_sizes(rest);
    if (!s) return std::nullopt;
    op.sizes = std::move(*s);
    op.has_sizes = true;
    fold_tensor_list(op);
  }
  return op;
}

}  // namespace habitat::cupti
