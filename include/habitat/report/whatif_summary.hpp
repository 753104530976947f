#pragma once
// A what-if's predictions beside the as-traced ones, for the writers (table, JSON, CSV, HTML).
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "habitat/predict/predicted_trace.hpp"
#include "habitat/whatif/memory.hpp"

namespace habitat::report {

struct WhatIfSummary {
  std::string label;                          // "batch=64, precision=bf16"
  std::vector<std::string> notes;             // what changed kind, casts added, assumptions
  std::optional<whatif::MemoryEstimate> memory;  // of the transformed step (needs --batch)
  std::optional<std::int64_t> batch;          // samples per step of the transformed step
  std::vector<PredictedTrace> predictions;    // per destination, in the order of the as-traced predictions
  std::vector<char> fits;                     // per destination: the estimated peak memory fits (1 where unknown)
};

}  // namespace habitat::report
