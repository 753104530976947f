#pragma once
// Peak GPU memory of a training step, estimated from the trace's tensors (Kineto traces recorded without
// profile_memory carry no allocations and no tensor identities, only each operation's input shapes).
//
// What is live at the peak is what PyTorch keeps:
// - the parameters, and the optimizer's states where the trace has an optimizer step (the tensor lists of
//   its largest foreach update, less the parameters and gradients: SGD momentum 1, Adam 2; none without one);
// - the activations autograd saves for the backward pass (derivatives.yaml): per forward operation that
//   launched GPU work, the tensors its backward formula reads. A GEMM or convolution keeps its activation
//   input (the weight is a parameter), a norm its input, GELU/SiLU/pow their input, ReLU/tanh/sigmoid/softmax
//   their output, dropout its mask (one byte an element), a max pool its input and indices, an element-wise
//   product both factors, an embedding its indices, a loss its log-probabilities (and their FP32 copy under
//   autocast); additions, concatenations, copies, casts, reshapes and views keep nothing. An output kept by its
//   producer and read by the next operation, which keeps its input (ReLU, then a convolution), is one tensor:
//   counted once. In-place hardtanh_ (ReLU6) and leaky_relu_ keep a tensor of their own (measured: MobileNetV2
//   and DCGAN fit only so);
// - the gradients: zero_grad(set_to_none=True) frees them before the forward pass (AccumulateGrad then
//   launches no kernel: it takes the first gradient as is), so they build up during the backward pass, in
//   the reverse order of the forward operations that read the parameters, while the saved activations are
//   freed. The peak is the largest sum of the two along that walk; its first steps also hold the gradients
//   of the log-probabilities and of the logits. Gradients kept across steps (AccumulateGrad adds into them)
//   are live throughout; without an optimizer step there are no states.
// Checked against torch.cuda.max_memory_allocated() of the batch sweeps in fixtures/whatif and of the GPT
// training steps in fixtures/neusight_train (tests/whatif/memory_test.cpp); what it misses (the caching
// allocator's fragmentation, cuDNN/cuBLAS workspaces, the CUDA context) is why a step is said not to fit
// above 90% of the destination's memory.
#include <algorithm>
#include <cctype>
#include <cstdint>
#include <cstdlib>
#include <initializer_list>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "habitat/ops/dtype.hpp"
#include "habitat/whatif/batch_dim.hpp"

namespace habitat::whatif {

// Usable share of a GPU's memory before a step is said not to fit.
inline constexpr double usable_memory_share = 0.9;
inline constexpr double bytes_per_gib = 1073741824.0;

struct MemoryEstimate {
  double parameter_bytes = 0;   // parameters + gradients + optimizer states
  double activation_bytes = 0;  // at the peak: what the backward pass still keeps, beyond the gradients
  [[nodiscard]] double total_bytes() const { return parameter_bytes + activation_bytes; }
  [[nodiscard]] bool fits(const Device& d) const { return total_bytes() <= usable_memory_share * d.memory_gib * bytes_per_gib; }
};

namespace detail {

// A recorded tensor (shape known) other than a parameter.
[[nodiscard]] inline const TensorArg* activation(const Operation& op, std::size_t i, const std::set<Shape>& params, bool known_activation = false) {
  if (i >= op.inputs.size()) return nullptr;
  const TensorArg& a = op.inputs[i];
  if (a.shape.empty() || a.dtype == "TensorList" || a.dtype == "ScalarList") return nullptr;
  if (!known_activation && params.count(a.shape)) return nullptr;
  return &a;
}

[[nodiscard]] inline bool one_of(std::string_view n, std::initializer_list<std::string_view> names) {
  return std::find(names.begin(), names.end(), n) != names.end();
}

// What a forward operation's backward formula reads, in bytes; `output` is set where that is the
// operation's output (same shape as its first input).
struct Saved {
  double bytes = 0;
  std::optional<Shape> output;  // an output it keeps
  std::vector<Shape> inputs;    // the inputs it keeps
};

[[nodiscard]] inline Saved saved_for_backward(const Operation& op, std::int64_t batch, const std::set<Shape>& params) {
  std::string_view n = op.name;
  if (n.starts_with("aten::")) n.remove_prefix(6);
  Saved s;
  auto keep_input = [&](std::size_t i, bool known = false) {
    if (const TensorArg* a = activation(op, i, params, known)) {
      s.bytes += bytes_of(*a);
      s.inputs.push_back(a->shape);
    }
  };
  auto keep_output = [&]() {  // an output shaped like the first input
    if (const TensorArg* a = activation(op, 0, params, true)) {
      s.bytes += bytes_of(*a);
      s.output = a->shape;
    }
  };
  // Nothing: sums, concatenations, copies, casts, shape changes, fills, factories, the optimizer.
  if (n.starts_with("_foreach_") || n.starts_with("_amp_") ||
      one_of(n, {"add", "add_", "sub", "sub_", "rsub", "neg", "cat", "stack", "pad", "constant_pad_nd", "to", "_to_copy", "copy_",
                 "clone", "contiguous", "reshape", "view", "flatten", "unflatten", "transpose", "permute", "expand", "squeeze",
                 "unsqueeze", "split", "chunk", "slice", "select", "narrow", "t", "alias", "detach", "detach_", "sum", "mean",
                 "zeros", "zeros_like", "ones", "ones_like", "full", "full_like", "empty", "empty_like", "new_ones", "new_zeros",
                 "arange", "randn", "rand", "tril_indices", "triu_indices", "fill_", "zero_", "item", "le", "lt", "ge", "gt",
                 "eq", "ne", "__and__", "__or__", "logical_and", "logical_or", "logical_not", "masked_fill_", "index_put_",
                 "repeat", "tril", "triu", "lift_fresh"}))
    return s;
  // The activation input of a GEMM or convolution (its weight is a parameter).
  if (one_of(n, {"linear", "conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d", "conv_transpose3d",
                 "convolution", "_convolution", "cudnn_convolution"})) {
    keep_input(0, true);
    return s;
  }
  if (n == "addmm") {
    keep_input(1, true);
    return s;
  }
  if (one_of(n, {"mm", "matmul", "bmm", "baddbmm"})) {  // both factors where neither is a parameter
    for (std::size_t i = n == "baddbmm" ? 1 : 0; i < op.inputs.size() && i < (n == "baddbmm" ? 3u : 2u); ++i) keep_input(i);
    return s;
  }
  // Norms (their statistics are a row each), activations and powers read their input.
  if (one_of(n, {"layer_norm", "native_layer_norm", "group_norm", "batch_norm", "instance_norm", "rms_norm", "gelu", "silu",
                 "mish", "hardswish", "hardsigmoid", "elu", "leaky_relu", "leaky_relu_", "hardtanh", "hardtanh_", "relu6", "pow", "log_sigmoid", "softplus",
                 "sin", "cos", "log", "abs", "adaptive_avg_pool1d", "adaptive_avg_pool2d", "adaptive_avg_pool3d", "avg_pool1d",
                 "avg_pool2d", "avg_pool3d"})) {
    keep_input(0, true);
    return s;
  }
  // Activations whose derivative is written with their result, in place or not.
  if (one_of(n, {"relu", "relu_", "elu_", "silu_", "gelu_", "tanh", "tanh_", "sigmoid", "sigmoid_", "softmax",
                 "_softmax", "log_softmax", "_log_softmax", "exp", "sqrt", "rsqrt", "reciprocal"})) {
    keep_output();
    return s;
  }
  // Products and quotients keep both tensors (a Python number factor keeps nothing that counts).
  if (one_of(n, {"mul", "div", "mul_", "div_"})) {
    if (activation(op, 0, params, true) && activation(op, 1, params, true)) {
      keep_input(0, true);
      keep_input(1, true);
    }
    return s;
  }
  // Dropout keeps its mask, a byte an element (nothing where p = 0 or not training).
  if (one_of(n, {"dropout", "native_dropout", "feature_dropout", "dropout_", "alpha_dropout"})) {
    const TensorArg* a = activation(op, 0, params, true);
    const bool off = (op.inputs.size() > 1 && (op.inputs[1].value == "0." || op.inputs[1].value == "0")) ||
                     (op.inputs.size() > 2 && op.inputs[2].value == "False");
    if (a && !off) s.bytes += numel(a->shape) * ops::dtype_bytes("bool");
    return s;
  }
  // Max pooling keeps its input and an int64 index per output element (the input over the stride's area).
  if (n.starts_with("max_pool")) {
    if (const TensorArg* a = activation(op, 0, params, true)) {
      keep_input(0, true);
      double area = 1;
      if (op.inputs.size() > 2) {
        const std::string& v = op.inputs[2].value;  // the stride, "[2, 2]"
        for (std::size_t p = 0; p < v.size();) {
          if (std::isdigit(static_cast<unsigned char>(v[p]))) {
            std::size_t q = p;
            while (q < v.size() && std::isdigit(static_cast<unsigned char>(v[q]))) ++q;
            area *= std::max(1, std::stoi(v.substr(p, q - p)));
            p = q;
          } else {
            ++p;
          }
        }
      }
      s.bytes += numel(a->shape) / area * ops::dtype_bytes("long int");
    }
    return s;
  }
  // Embeddings keep their indices (and a bag's offsets).
  if (n == "embedding") {
    keep_input(1, true);
    return s;
  }
  if (n == "embedding_bag" || n == "_embedding_bag") {
    keep_input(1, true);
    keep_input(2, true);
    return s;
  }
  // Losses: cross entropy keeps its log-probabilities (the input's size) and the targets; the others their inputs.
  if (one_of(n, {"cross_entropy_loss", "nll_loss", "binary_cross_entropy_with_logits", "binary_cross_entropy", "mse_loss",
                 "l1_loss", "smooth_l1_loss", "huber_loss", "kl_div"})) {
    keep_input(0, true);
    keep_input(1, true);
    return s;
  }
  // Fused attention keeps query, key, value and its output (the query's shape with the value's last dimension).
  if (one_of(n, {"scaled_dot_product_attention", "_scaled_dot_product_efficient_attention", "_scaled_dot_product_flash_attention",
                 "_scaled_dot_product_cudnn_attention"})) {
    for (std::size_t i = 0; i < 3; ++i) keep_input(i, true);
    const TensorArg* q = activation(op, 0, params, true);
    const TensorArg* v = activation(op, 2, params, true);
    if (q && v && !v->shape.empty() && q->shape.back() > 0) s.bytes += bytes_of(*q) / static_cast<double>(q->shape.back()) * static_cast<double>(v->shape.back());
    return s;
  }
  // Masks and indices.
  if (n == "where") {
    keep_input(0, true);
    return s;
  }
  if (one_of(n, {"masked_fill", "index_select", "gather"})) {
    keep_input(n == "masked_fill" ? 1 : 2, true);
    return s;
  }
  // cuDNN's recurrent layers keep their input, and per layer (and direction) its output and the gates and
  // cell states of every step (the reserve space): about six [seq, batch, hidden] tensors, the hidden size
  // taken as the input's (the hidden state lists carry no shapes).
  if (one_of(n, {"lstm", "gru", "rnn_tanh", "rnn_relu"})) {
    if (const TensorArg* a = activation(op, 0, params, true)) {
      double layers = 1, directions = 1;
      if (op.inputs.size() > 4 && !op.inputs[4].value.empty()) layers = std::max(1.0, std::atof(op.inputs[4].value.c_str()));
      if (op.inputs.size() > 7 && op.inputs[7].value == "True") directions = 2;
      const double per_step = n == "lstm" ? 6 : n == "gru" ? 5 : 2;  // gates + cell + hidden
      s.bytes += bytes_of(*a) * (1 + layers * directions * per_step);
    }
    return s;
  }
  // Anything else: its batch-carrying inputs, as a backward formula that reads every input would.
  for (std::size_t i = 0; i < op.inputs.size(); ++i)
    if (const TensorArg* a = activation(op, i, params); a && batch_dim(a->shape, batch, params)) {
      s.bytes += bytes_of(*a);
      s.inputs.push_back(a->shape);
    }
  return s;
}

}  // namespace detail

[[nodiscard]] inline MemoryEstimate estimate_memory(const Trace& t, std::int64_t batch) {
  MemoryEstimate m;
  const auto params = parameter_shapes(t);
  const double p = parameter_bytes(t);
  // Optimizer states: the tensor lists of its largest foreach update, less the parameters and gradients.
  int lists = 0;
  bool optimizer = !t.optimizer_steps.empty();
  for (const auto& op : t.ops)
    if (op.name.starts_with("aten::_foreach_")) {
      optimizer = true;
      int n = 0;
      for (const auto& a : op.inputs) n += a.dtype == "TensorList" ? 1 : 0;
      lists = std::max(lists, n);
    }
  int fused_states = -1;  // fused optimizers take their states as arguments of one op, not as TensorLists of _foreach_ ops
  for (const auto& op : t.ops)
    if (op.name.starts_with("aten::_fused_adam")) fused_states = 2;  // exp_avg, exp_avg_sq
    else if (op.name.starts_with("aten::_fused_sgd")) fused_states = std::max(fused_states, 1);  // momentum buffers, if any
  if (fused_states >= 0) optimizer = true;
  const int states = fused_states >= 0 ? fused_states : optimizer ? std::max(1, lists - 1) : 0;  // SGD momentum: 1; Adam: 2
  std::vector<char> has_kernel(t.ops.size(), 0);
  for (const auto& k : t.kernels)
    for (int o = k.op; o >= 0; o = t.ops[static_cast<std::size_t>(o)].parent) has_kernel[static_cast<std::size_t>(o)] = 1;
  // Gradients kept from the last step: AccumulateGrad adds into them (a kernel) instead of taking the first.
  bool kept_gradients = false;
  for (std::size_t i = 0; i < t.ops.size(); ++i)
    if (t.ops[i].name == "torch::autograd::AccumulateGrad" && has_kernel[i]) kept_gradients = true;
  // The forward operations with GPU work, in order: what each keeps, and the parameters it reads (whose
  // gradients its backward step writes).
  std::vector<double> kept, grads;
  double loss_gradients = 0;  // the loss input's gradients, at the backward pass's first steps
  std::optional<Shape> kept_output;  // the previous operation's kept output
  for (std::size_t i = 0; i < t.ops.size(); ++i) {
    const Operation& op = t.ops[i];
    if (op.backward || op.parent >= 0 || !has_kernel[i]) continue;  // top-level forward operations with GPU work
    detail::Saved s = detail::saved_for_backward(op, batch, params);
    if (kept_output)  // the producer's kept output read by this operation: one tensor
      for (const auto& in : s.inputs)
        if (in == *kept_output) {
          const auto& a = *std::find_if(op.inputs.begin(), op.inputs.end(), [&](const TensorArg& x) { return x.shape == in; });
          s.bytes -= bytes_of(a);
          break;
        }
    kept_output = s.output;
    double g = 0;
    if (!op.name.starts_with("aten::_foreach_"))
      for (const auto& a : op.inputs)
        if (!a.shape.empty() && params.count(a.shape)) g += bytes_of(a);
    kept.push_back(s.bytes);
    grads.push_back(g);
    if (op.name.find("loss") != std::string::npos && !op.inputs.empty()) {
      // Autocast runs a loss in FP32: the log-probabilities' FP32 copy (a copy_ under the loss) is kept too, and
      // the backward pass's first step holds the gradient at both widths.
      const double in = bytes_of(op.inputs.front());
      double copy = 0;
      for (std::size_t j = i + 1; j < t.ops.size() && t.ops[j].start_us <= op.start_us + op.duration_us; ++j) {
        bool under = false;
        for (int a = t.ops[j].parent; a >= 0 && !under; a = t.ops[static_cast<std::size_t>(a)].parent) under = a == static_cast<int>(i);
        if (under && has_kernel[j] && t.ops[j].name == "aten::copy_" && !t.ops[j].inputs.empty() && t.ops[j].inputs.front().shape == op.inputs.front().shape)
          copy = std::max(copy, bytes_of(t.ops[j].inputs.front()));
      }
      kept.back() += copy;
      loss_gradients = std::max(loss_gradients, in + (copy > 0 ? copy : in));
    }
  }
  // The backward pass runs the operations in reverse: at each, the activations the operations up to it kept
  // are live with the gradients of the parameters it and the later ones read (at most all of them); its
  // first steps also hold the gradients of the log-probabilities and of the logits.
  double below = 0;
  for (double k : kept) below += k;
  double written = kept_gradients ? p : 0, peak = below + loss_gradients + written;
  for (std::size_t j = kept.size(); j-- > 0;) {
    if (!kept_gradients) written = std::min(p, written + grads[j]);
    peak = std::max(peak, below + written);
    below -= kept[j];
  }
  peak = std::max(peak, p);  // the end: every gradient, the activations freed
  m.activation_bytes = std::max(0.0, peak - p);
  m.parameter_bytes = p * (2 + states);
  return m;
}

}  // namespace habitat::whatif
