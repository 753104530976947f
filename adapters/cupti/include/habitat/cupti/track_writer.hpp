#pragma once
// The live tracker's trace (adapters/cupti/src/track.cpp) in the Kineto format habitat's reader reads: GPU
// work, the runtime and driver calls that launched it, steps as ProfilerStep#N annotations and the GPU's
// deviceProperties. Plain structs, no CUPTI type: the writer is tested without a GPU on recorded events.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <ostream>
#include <string>
#include <vector>

#include "habitat/cupti/nvtx_conv_geometry.hpp"
#include "habitat/cupti/nvtx_op.hpp"

namespace habitat::cupti {

struct TrackedCall {  // a runtime or driver API call
  std::string name;   // "cudaLaunchKernel", "cuLaunchKernel", ...
  bool driver = false;
  std::uint64_t start_ns = 0, end_ns = 0;
  std::uint32_t process = 0, thread = 0, correlation = 0;
};

enum class GpuKind { kernel, memcpy, memset };

struct TrackedGpu {  // a kernel, copy or fill
  GpuKind kind = GpuKind::kernel;
  std::string name;  // demangled kernel name; "Memcpy HtoD (Pageable -> Device)"; "Memset (Device)"
  std::uint64_t start_ns = 0, end_ns = 0;
  std::uint32_t device = 0, stream = 0, correlation = 0;
  int grid[3] = {0, 0, 0}, block[3] = {0, 0, 0};
  int registers = 0;
  long shared_mem = 0;  // static + dynamic, bytes
  std::uint64_t bytes = 0;
};

struct TrackedStep {  // cudaProfilerStart .. cudaProfilerStop, or a marker range
  long number = 0;
  std::uint64_t start_ns = 0, end_ns = 0;
  std::uint32_t process = 0, thread = 0;
};

struct TrackedDevice {
  std::string name;
  long long total_mem = 0;
  int cc_major = 0, cc_minor = 0, sms = 0, max_threads_per_block = 0, max_threads_per_sm = 0, regs_per_block = 0, regs_per_sm = 0,
      warp_size = 32;
  long shared_per_block = 0, shared_per_sm = 0, shared_per_block_optin = 0;
};

namespace detail {
inline void json_string(std::ostream& os, const std::string& s) {
  os << '"';
  for (const unsigned char c : s) {
    if (c == '"' || c == '\\') os << '\\' << c;
    else if (c < 0x20) {
      char b[8];
      std::snprintf(b, sizeof b, "\\u%04x", c);
      os << b;
    } else os << c;
  }
  os << '"';
}
// Microseconds with nanosecond resolution, as Kineto writes them.
inline void us(std::ostream& os, std::uint64_t ns) {
  char b[40];
  std::snprintf(b, sizeof b, "%llu.%03u", static_cast<unsigned long long>(ns / 1000), static_cast<unsigned>(ns % 1000));
  os << b;
}
inline void dur(std::ostream& os, std::uint64_t start, std::uint64_t end) { us(os, end > start ? end - start : 0); }
}  // namespace detail

// Writes the trace; `tool` names the recorder in the file. NVTX ranges that emit_nvtx wrote for operators become
// the profiler's operators (cpu_op: name, "Input Dims", "Sequence number"), which the reader links launches to as
// it does torch.profiler's; other ranges are user annotations.
inline void write_kineto(std::ostream& os, const std::vector<TrackedDevice>& devices, const std::vector<TrackedCall>& calls,
                         const std::vector<TrackedGpu>& gpu, const std::vector<TrackedStep>& steps, const std::string& tool,
                         const std::vector<TrackedRange>& ranges = {}) {
  using detail::dur;
  using detail::json_string;
  using detail::us;
  os << "{\"schemaVersion\": 1, \"recorder\": ";
  json_string(os, tool);
  os << ",\n\"deviceProperties\": [";
  for (std::size_t i = 0; i < devices.size(); ++i) {
    const auto& d = devices[i];
    os << (i ? ",\n" : "\n") << "{\"id\": " << i << ", \"name\": ";
    json_string(os, d.name);
    os << ", \"totalGlobalMem\": " << d.total_mem << ", \"computeMajor\": " << d.cc_major << ", \"computeMinor\": " << d.cc_minor
       << ", \"maxThreadsPerBlock\": " << d.max_threads_per_block << ", \"maxThreadsPerMultiprocessor\": " << d.max_threads_per_sm
       << ", \"regsPerBlock\": " << d.regs_per_block << ", \"regsPerMultiprocessor\": " << d.regs_per_sm << ", \"warpSize\": " << d.warp_size
       << ", \"sharedMemPerBlock\": " << d.shared_per_block << ", \"sharedMemPerMultiprocessor\": " << d.shared_per_sm
       << ", \"numSms\": " << d.sms << ", \"sharedMemPerBlockOptin\": " << d.shared_per_block_optin << "}";
  }
  os << "],\n\"traceEvents\": [";
  bool first = true;
  auto sep = [&] {
    os << (first ? "\n" : ",\n");
    first = false;
  };
  for (const auto& s : steps) {
    sep();
    os << "{\"ph\": \"X\", \"cat\": \"user_annotation\", \"name\": \"ProfilerStep#" << s.number << "\", \"pid\": " << s.process
       << ", \"tid\": " << s.thread << ", \"ts\": ";
    us(os, s.start_ns);
    os << ", \"dur\": ";
    dur(os, s.start_ns, s.end_ns);
    os << "}";
  }
  std::vector<std::optional<NvtxOp>> range_ops;
  for (const auto& r : ranges) range_ops.push_back(parse_nvtx_op(r.message));
  infer_conv_geometry(range_ops, ranges);
  for (std::size_t ri = 0; ri < ranges.size(); ++ri) {
    const auto& r = ranges[ri];
    const auto& op = range_ops[ri];
    sep();
    os << "{\"ph\": \"X\", \"cat\": \"" << (op ? "cpu_op" : "user_annotation") << "\", \"name\": ";
    json_string(os, op ? op->name : r.message);
    os << ", \"pid\": " << r.process << ", \"tid\": " << r.thread << ", \"ts\": ";
    us(os, r.start_ns);
    os << ", \"dur\": ";
    dur(os, r.start_ns, r.end_ns);
    if (op) {
      // No External id: the reader links each launch to the innermost operator around it on its thread.
      const char* comma = "";
      os << ", \"args\": {";
      if (op->sequence >= 0) {
        os << "\"Sequence number\": " << op->sequence;
        comma = ", ";
      }
      if (op->has_sizes) {
        os << comma << "\"Input Dims\": [";
        for (std::size_t i = 0; i < op->sizes.size(); ++i) {
          os << (i ? ", [" : "[");
          for (std::size_t j = 0; j < op->sizes[i].size(); ++j) os << (j ? ", " : "") << op->sizes[i][j];
          os << "]";
        }
        os << "]";
      }
      if (op->inferred) {
        os << ", \"Concrete Inputs\": [";
        for (std::size_t i = 0; i < op->values.size(); ++i) {
          os << (i ? ", " : "");
          json_string(os, op->values[i]);
        }
        os << "], \"Concrete Inputs inferred\": \"stride, padding and groups from the output its backward records\"";
      }
      os << "}";
    }
    os << "}";
  }
  for (const auto& c : calls) {
    sep();
    os << "{\"ph\": \"X\", \"cat\": \"" << (c.driver ? "cuda_driver" : "cuda_runtime") << "\", \"name\": ";
    json_string(os, c.name);
    os << ", \"pid\": " << c.process << ", \"tid\": " << c.thread << ", \"ts\": ";
    us(os, c.start_ns);
    os << ", \"dur\": ";
    dur(os, c.start_ns, c.end_ns);
    os << ", \"args\": {\"correlation\": " << c.correlation << "}}";
  }
  for (const auto& g : gpu) {
    sep();
    os << "{\"ph\": \"X\", \"cat\": \"" << (g.kind == GpuKind::kernel ? "kernel" : g.kind == GpuKind::memcpy ? "gpu_memcpy" : "gpu_memset")
       << "\", \"name\": ";
    json_string(os, g.name);
    os << ", \"pid\": " << g.device << ", \"tid\": " << g.stream << ", \"ts\": ";
    us(os, g.start_ns);
    os << ", \"dur\": ";
    dur(os, g.start_ns, g.end_ns);
    os << ", \"args\": {\"correlation\": " << g.correlation << ", \"device\": " << g.device << ", \"stream\": " << g.stream;
    if (g.kind == GpuKind::kernel)
      os << ", \"grid\": [" << g.grid[0] << ", " << g.grid[1] << ", " << g.grid[2] << "], \"block\": [" << g.block[0] << ", " << g.block[1]
         << ", " << g.block[2] << "], \"registers per thread\": " << g.registers << ", \"shared memory\": " << g.shared_mem;
    else
      os << ", \"bytes\": " << g.bytes;
    os << "}}";
  }
  os << "\n]}\n";
}

// "cudaLaunchKernel_v7000" -> "cudaLaunchKernel": the names Kineto writes.
[[nodiscard]] inline std::string api_name(std::string n) {
  const auto v = n.rfind("_v");
  if (v != std::string::npos && v + 2 < n.size() && std::all_of(n.begin() + static_cast<long>(v) + 2, n.end(), [](char c) { return c >= '0' && c <= '9'; }))
    n.erase(v);
  return n;
}

}  // namespace habitat::cupti
