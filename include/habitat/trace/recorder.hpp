#pragma once
// What recorded a trace. torch.profiler (and any other Kineto writer) adds its own cost to the host's time, which
// the host model removes; habitat's CUPTI tracker records no operations and does its start/stop work outside the
// steps it marks, so its traces have nothing to remove (README, "Tracking any CUDA program"). No dependencies:
// the tracker (adapters/cupti) writes the same name the reader looks for.
#include <string_view>

namespace habitat {

enum class Recorder { profiler, cupti_tracker };

// How the tracker names itself in the top-level "recorder" field of the traces it writes.
inline constexpr std::string_view cupti_tracker_name = "habitat CUPTI tracker";

}  // namespace habitat
