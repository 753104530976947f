#pragma once
// One what-if mechanism: `--what-if KEY=VALUE` (repeatable) transforms the traced step before it is
// predicted on each destination. The keys and what they do, stated once:
//   batch=N           the step at N samples (the trace's batch from --batch): batch.hpp
//   precision=P       the step under torch.autocast at P (bf16 or fp16; fp32 leaves it): precision.hpp
// Several apply in that order. The result is a trace of the origin GPU, index for index with the
// recorded one, with the host work each change adds.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "habitat/error.hpp"
#include "habitat/sim/step_program.hpp"
#include "habitat/whatif/batch.hpp"
#include "habitat/whatif/memory.hpp"
#include "habitat/whatif/precision.hpp"

namespace habitat::whatif {

struct Spec {
  std::optional<std::int64_t> batch;
  std::optional<Precision> precision;
  [[nodiscard]] std::string label() const {
    std::string s;
    if (batch) s += "batch=" + std::to_string(*batch);
    if (precision) s += std::string(s.empty() ? "" : ", ") + "precision=" + to_string(*precision);
    return s;
  }
};

// Parses the --what-if arguments; an unknown key, a bad value or a key given twice is an error naming it.
[[nodiscard]] inline Spec parse_spec(const std::vector<std::string>& args) {
  Spec s;
  for (const auto& a : args) {
    const auto eq = a.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == a.size())
      throw make_error(a, "--what-if", "expected KEY=VALUE (batch=N, precision=bf16|fp16|fp32)");
    const std::string key = a.substr(0, eq), value = a.substr(eq + 1);
    if (key == "batch") {
      if (s.batch) throw make_error(a, "--what-if", "batch is given twice");
      char* end = nullptr;
      const long long n = std::strtoll(value.c_str(), &end, 10);
      if (end == value.c_str() || *end != '\0' || n < 1 || n > (1LL << 31)) throw make_error(a, "--what-if batch", "must be a whole number of samples, 1 to 2^31");
      s.batch = n;
    } else if (key == "precision") {
      if (s.precision) throw make_error(a, "--what-if", "precision is given twice");
      for (const Precision p : {Precision::bf16, Precision::fp16, Precision::tf32, Precision::fp32})
        if (value == to_string(p)) s.precision = p;
      if (!s.precision)
        throw make_error(a, "--what-if precision", "must be bf16, fp16 (autocast), tf32 (FP32 with TF32 matmuls and convolutions) or fp32 (none)");
    } else {
      throw make_error(a, "--what-if", "unknown key '" + key + "' (known: batch, precision)");
    }
  }
  return s;
}

// Whether the trace already runs lower-precision math (autocast or a half model): a precision what-if
// starts from FP32 steps only.
[[nodiscard]] inline bool runs_lower_precision(const Trace& t) {
  for (const auto& op : t.ops)
    for (const auto& a : op.inputs)
      if (a.dtype == "c10::BFloat16" || a.dtype == "c10::Half") return true;
  return false;
}

struct Applied {
  Transformed step;
  MemoryEstimate memory;  // of the transformed step
};

// `traced_batch`: the trace's samples per step (--batch); needed for batch=N and for the memory estimate.
[[nodiscard]] inline Applied apply(const Trace& t, const Device& origin, const Spec& spec, std::optional<std::int64_t> traced_batch) {
  Transformed x = Transformed::unchanged(t);
  std::int64_t batch = traced_batch.value_or(0);
  if (spec.batch) {
    if (!traced_batch) throw make_error(t.source, "--what-if batch", "needs the trace's own batch: give --batch B");
    x = scale_batch(t, origin, *traced_batch, *spec.batch);
    batch = *spec.batch;
  }
  if (spec.precision && *spec.precision != Precision::fp32) {
    if (*spec.precision != Precision::tf32 && runs_lower_precision(t))
      throw make_error(t.source, "--what-if precision", "the trace already runs in BF16/FP16: a precision what-if starts from an FP32 step");
    Transformed p = autocast(x.trace, origin, {*spec.precision});
    for (std::size_t i = 0; i < p.extra_host_us.size(); ++i) p.extra_host_us[i] += x.extra_host_us[i];
    p.notes.insert(p.notes.begin(), x.notes.begin(), x.notes.end());
    p.kernels_changed = std::max(p.kernels_changed, x.kernels_changed);
    p.tile_changes = x.tile_changes;
    x = std::move(p);
  }
  Applied out{std::move(x), {}};
  if (batch > 0) out.memory = estimate_memory(out.step.trace, batch);
  return out;
}

// The step program with the host work a what-if adds (casts, GradScaler) before the call that launches
// the kernel it feeds.
[[nodiscard]] inline sim::StepProgram with_added_host(sim::StepProgram p, const std::vector<double>& extra_us) {
  for (auto& item : p.items)
    for (const int k : item.kernels)
      if (k >= 0 && static_cast<std::size_t>(k) < extra_us.size() && extra_us[static_cast<std::size_t>(k)] > 0) {
        const double us = extra_us[static_cast<std::size_t>(k)];
        item.work_us += us;
        item.by_type[static_cast<int>(sim::HostTime::between_ops)] += us;
        p.host_us += us;
        p.by_type[static_cast<int>(sim::HostTime::between_ops)] += us;
      }
  return p;
}

}  // namespace habitat::whatif
