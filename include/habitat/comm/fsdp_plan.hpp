#pragma once
// What FSDP (PyTorch's fully_shard, "FSDP2") shards, read from a one-GPU trace: its units (modules wrapped
// one by one: each is all-gathered before its forward and its backward, and its gradients are
// reduce-scattered when they are in), the root (the parameters in no unit), and where in the step each
// unit's forward and backward start and its last gradient is ready. The parameters are those of the
// AccumulateGrad records (ddp_plan.hpp); a parameter's forward op is the one the backward op that produced
// its gradient links to by autograd sequence number.
#include <algorithm>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "habitat/comm/ddp_plan.hpp"
#include "habitat/error.hpp"
#include "habitat/trace/trace.hpp"

namespace habitat::comm {

// How the parameters are grouped into units, as users wrap them:
//  blocks: the model's repeated blocks (a transformer's layers, `for b in model.layers: fully_shard(b)`):
//          the instances of the longest tandem repeats of parameter shapes; the rest is the root;
//  layers: every module with parameters (those one forward op uses: a Linear's weight and bias);
//  count:  `count` contiguous units of about equal bytes, in forward order;
//  given:  `unit_of` per parameter in forward order (-1: the root), e.g. a wrapping policy's result.
enum class UnitRule { blocks, layers, count, given };
struct UnitChoice {
  UnitRule rule = UnitRule::blocks;
  int count = 0;
  std::vector<int> unit_of;
};

struct FsdpUnit {
  std::vector<int> gradients;  // indices into FsdpPlan::gradients
  double bytes = 0;            // its parameters' (as many as its gradients')
  double forward_us = 0;       // trace time of its first forward op
  double backward_us = 0;      // trace time its backward starts: the unit after it has all its gradients
  double ready_us = 0;         // trace time its last gradient is ready
};

struct FsdpPlan {
  std::vector<Gradient> gradients;  // in the forward order of their parameters
  std::vector<double> forward_us;   // per gradient: when its parameter's forward op starts
  std::vector<int> forward_op;      // per gradient: that op (top level; -1 where no backward op links it)
  std::vector<FsdpUnit> units;      // in forward order
  FsdpUnit root;                    // the parameters in no unit (none: empty)
  std::string grouping;             // what the units are, said in the output
  double backward_start_us = 0, last_ready_us = 0;
  [[nodiscard]] double parameter_bytes() const {
    double s = root.bytes;
    for (const auto& u : units) s += u.bytes;
    return s;
  }
  [[nodiscard]] double largest_unit_bytes() const {
    double m = 0;
    for (const auto& u : units) m = std::max(m, u.bytes);
    return m;
  }
};

namespace detail {

// Shape and dtype of each gradient as a small integer, equal for equal parameters.
[[nodiscard]] inline std::vector<int> signatures(const std::vector<Gradient>& g) {
  std::map<std::pair<std::vector<std::int64_t>, std::string>, int> ids;
  std::vector<int> out;
  for (const auto& x : g) out.push_back(ids.emplace(std::make_pair(x.shape, x.dtype), static_cast<int>(ids.size())).first->second);
  return out;
}

// Instances of tandem repeats (a period of at least two parameters, repeated at least twice) in `ids`,
// largest coverage first, non-overlapping: each instance as [begin, end).
[[nodiscard]] inline std::vector<std::pair<int, int>> repeated_blocks(const std::vector<int>& ids) {
  const int n = static_cast<int>(ids.size());
  std::vector<char> claimed(n, 0);
  std::vector<std::pair<int, int>> blocks;
  if (n > 20000) return blocks;  // quadratic: a model of more parameters names its units another way
  for (;;) {
    int best_cover = 0, best_p = 0, best_start = 0, best_r = 0;
    for (int p = 2; 2 * p <= n; ++p) {
      int run = 0;  // consecutive i with ids[i] == ids[i + p], none claimed
      for (int i = 0; i + p <= n; ++i) {
        const bool match = i + p < n && !claimed[i] && !claimed[i + p] && ids[i] == ids[i + p];
        if (match) {
          ++run;
          continue;
        }
        if (run >= p) {  // ids[i - run .. i + p) has period p
          const int len = run + p, r = len / p, start = i - run + (len - r * p);
          if (r * p > best_cover) best_cover = r * p, best_p = p, best_start = start, best_r = r;
        }
        run = 0;
      }
    }
    if (best_r < 2) break;
    for (int k = 0; k < best_r; ++k) {
      blocks.emplace_back(best_start + k * best_p, best_start + (k + 1) * best_p);
      std::fill(claimed.begin() + best_start + k * best_p, claimed.begin() + best_start + (k + 1) * best_p, 1);
    }
  }
  return blocks;
}

}  // namespace detail

// `choice` groups the parameters; throws habitat::error where the trace cannot say what FSDP needs.
[[nodiscard]] inline FsdpPlan fsdp_plan(const Trace& t, const UnitChoice& choice = {}) {
  const DdpPlan d = ddp_plan(t);  // the gradients in backward order; throws without any
  if (d.already_ddp)
    throw make_error(t.source, t.step_name, "the trace is already one rank of a data-parallel step: give a one-GPU trace to predict FSDP from");
  const int n = static_cast<int>(d.gradients.size());

  // Each gradient's forward op: the last backward op with a forward link on its thread before its AccumulateGrad.
  std::map<std::int64_t, std::vector<int>> linked;  // thread -> backward ops with a forward op, by start
  double backward_start = 1e300;
  for (int i = 0; i < static_cast<int>(t.ops.size()); ++i) {
    if (!t.ops[i].backward) continue;
    backward_start = std::min(backward_start, t.ops[i].start_us);
    if (t.ops[i].forward >= 0) linked[t.ops[i].thread].push_back(i);
  }
  for (auto& [thread, v] : linked)
    std::stable_sort(v.begin(), v.end(), [&](int a, int b) { return t.ops[a].start_us < t.ops[b].start_us; });
  std::vector<double> fwd_us(n, 0);
  std::vector<int> fwd_op(n, -1);
  for (int g = 0; g < n; ++g) {
    const Operation& acc = t.ops[d.gradients[g].accumulate_op];
    auto it = linked.find(acc.thread);
    if (it == linked.end()) continue;
    const auto& v = it->second;
    auto at = std::upper_bound(v.begin(), v.end(), acc.start_us, [&](double s, int op) { return s < t.ops[op].start_us; });
    if (at == v.begin()) continue;
    fwd_op[g] = top_level_op(t, t.ops[*std::prev(at)].forward);
    fwd_us[g] = t.ops[fwd_op[g]].start_us;
  }
  if (std::count(fwd_op.begin(), fwd_op.end(), -1) > n / 2)
    throw make_error(t.source, t.step_name,
                     "the backward ops carry no autograd sequence numbers linking them to the forward ops, so FSDP's units cannot be "
                     "placed in the step: record with torch 1.10 or later");
  // A gradient without a link takes its neighbour's place in backward order.
  for (int g = 1; g < n; ++g)
    if (fwd_op[g] < 0) fwd_us[g] = fwd_us[g - 1];
  for (int g = n - 2; g >= 0; --g)
    if (fwd_op[g] < 0 && fwd_op[g + 1] >= 0) fwd_us[g] = fwd_us[g + 1];

  // Forward order: by the forward op's start; within one op, the backward order (a Linear's weight, then its bias).
  std::vector<int> order(n);
  for (int g = 0; g < n; ++g) order[g] = g;
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return fwd_us[a] != fwd_us[b] ? fwd_us[a] < fwd_us[b] : a < b; });
  std::vector<int> rank_of(n);  // backward index -> forward index
  FsdpPlan plan;
  for (int f = 0; f < n; ++f) {
    rank_of[order[f]] = f;
    plan.gradients.push_back(d.gradients[order[f]]);
    plan.forward_us.push_back(fwd_us[order[f]]);
    plan.forward_op.push_back(fwd_op[order[f]]);
  }

  // unit_of per parameter in forward order.
  std::vector<int> unit_of(n, -1);
  int units = 0;
  switch (choice.rule) {
    case UnitRule::blocks: {
      auto blocks = detail::repeated_blocks(detail::signatures(d.gradients));
      // In forward order: by the first forward position of each instance.
      std::vector<std::pair<int, std::pair<int, int>>> by_start;
      for (const auto& b : blocks) {
        int first = n;
        for (int g = b.first; g < b.second; ++g) first = std::min(first, rank_of[g]);
        by_start.push_back({first, b});
      }
      std::sort(by_start.begin(), by_start.end());
      for (const auto& [first, b] : by_start) {
        for (int g = b.first; g < b.second; ++g) unit_of[rank_of[g]] = units;
        ++units;
      }
      if (units == 0)
        throw make_error(t.source, "--parallel",
                         "no repeated blocks in the model's parameters to wrap as FSDP units: give units=layers or units=N");
      plan.grouping = std::to_string(units) + " repeated blocks";
      break;
    }
    case UnitRule::layers: {
      std::map<double, int> unit_at;  // forward op start -> unit
      for (int f = 0; f < n; ++f) {
        auto [it, added] = unit_at.emplace(plan.forward_us[f], units);
        if (added) ++units;
        unit_of[f] = it->second;
      }
      plan.grouping = std::to_string(units) + " layers with parameters";
      break;
    }
    case UnitRule::count: {
      if (choice.count < 1 || choice.count > n)
        throw make_error(t.source, "--parallel", "units=N must be between 1 and the model's " + std::to_string(n) + " parameters");
      double total = 0, sum = 0;
      for (const auto& g : plan.gradients) total += g.bytes;
      for (int f = 0; f < n; ++f) {
        unit_of[f] = std::min(choice.count - 1, static_cast<int>(sum / total * choice.count));
        sum += plan.gradients[f].bytes;
      }
      units = choice.count;
      plan.grouping = std::to_string(units) + " parts of about equal size";
      break;
    }
    case UnitRule::given: {
      if (static_cast<int>(choice.unit_of.size()) != n)
        throw make_error(t.source, "FSDP units", "given for " + std::to_string(choice.unit_of.size()) + " parameters; the trace has " + std::to_string(n));
      unit_of = choice.unit_of;
      for (const int u : unit_of) units = std::max(units, u + 1);
      plan.grouping = std::to_string(units) + " given groups";
      break;
    }
  }

  plan.units.resize(units);
  for (auto& u : plan.units) u.forward_us = 1e300;
  plan.root.forward_us = t.step_start_us;
  for (int f = 0; f < n; ++f) {
    FsdpUnit& u = unit_of[f] >= 0 ? plan.units[unit_of[f]] : plan.root;
    const Gradient& g = plan.gradients[f];
    u.gradients.push_back(f);
    u.bytes += g.bytes;
    if (unit_of[f] >= 0) u.forward_us = std::min(u.forward_us, plan.forward_us[f]);
    const Operation& ready = t.ops[g.ready_op];
    u.ready_us = std::max(u.ready_us, ready.start_us + ready.duration_us);
    plan.last_ready_us = std::max(plan.last_ready_us, u.ready_us);
  }
  std::erase_if(plan.units, [](const FsdpUnit& u) { return u.gradients.empty(); });
  std::stable_sort(plan.units.begin(), plan.units.end(), [](const FsdpUnit& a, const FsdpUnit& b) { return a.forward_us < b.forward_us; });
  plan.backward_start_us = std::min(backward_start, plan.last_ready_us);
  // Backward runs the units in reverse: one starts when the one after it has all its gradients.
  for (int u = 0; u < static_cast<int>(plan.units.size()); ++u)
    plan.units[u].backward_us = u + 1 < static_cast<int>(plan.units.size()) ? std::min(plan.units[u + 1].ready_us, plan.units[u].ready_us)
                                                                            : plan.backward_start_us;
  return plan;
}

}  // namespace habitat::comm
