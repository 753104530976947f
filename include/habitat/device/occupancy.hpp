#pragma once
// Wave size of a kernel on a GPU: resident thread blocks per SM (from NVIDIA's occupancy calculator,
// cuda_occupancy.h, plain host C++; on an AMD compute unit from its threads and LDS) times the number of SMs.
#include <cuda_occupancy.h>

#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>

#include "habitat/device/device.hpp"
#include "habitat/error.hpp"

namespace habitat {

struct LaunchConfig {
  std::int64_t threads_per_block = 0;
  int registers_per_thread = 0;
  long shared_mem_bytes = 0;  // static + dynamic, as traces record it
};

[[nodiscard]] inline cudaOccDeviceProp occupancy_props(const Device& d) {
  cudaOccDeviceProp p;
  p.computeMajor = d.cc_major;
  p.computeMinor = d.cc_minor;
  p.maxThreadsPerBlock = d.limits.max_threads_per_block;
  p.maxThreadsPerMultiprocessor = d.limits.max_threads_per_sm;
  p.regsPerBlock = d.limits.regs_per_block;
  p.regsPerMultiprocessor = d.limits.regs_per_sm;
  p.warpSize = d.limits.warp_size;
  p.sharedMemPerBlock = static_cast<size_t>(d.limits.shared_mem_per_block);
  p.sharedMemPerMultiprocessor = static_cast<size_t>(d.limits.shared_mem_per_sm);
  p.numSms = d.sms;
  p.sharedMemPerBlockOptin = static_cast<size_t>(d.limits.shared_mem_per_block_optin);
  p.reservedSharedMemPerBlock = static_cast<size_t>(d.limits.reserved_shared_mem_per_block);
  return p;
}

// Resident blocks per SM, or nothing where the launch cannot run on `d` at all (too many registers or too
// much shared memory): the kernel would have to change, which wave scaling cannot predict.
[[nodiscard]] inline std::optional<int> try_blocks_per_sm(const Device& d, const LaunchConfig& lc) noexcept {
  if (!d.nvidia()) {
    // An AMD compute unit holds workgroups up to its threads (whole 64-thread wavefronts) and its LDS. Registers
    // are left out: ROCm traces do not record them, and an NVIDIA kernel's count says nothing of an AMD build.
    const std::int64_t wave = std::max(d.limits.warp_size, 1);
    const std::int64_t threads = (std::max<std::int64_t>(lc.threads_per_block, 1) + wave - 1) / wave * wave;
    if (threads > d.limits.max_threads_per_block || lc.shared_mem_bytes > d.limits.shared_mem_per_block) return std::nullopt;
    std::int64_t n = d.limits.max_threads_per_sm / threads;
    if (lc.shared_mem_bytes > 0) n = std::min<std::int64_t>(n, d.limits.shared_mem_per_sm / lc.shared_mem_bytes);
    if (n <= 0) return std::nullopt;
    return static_cast<int>(n);
  }
  cudaOccDeviceProp props = occupancy_props(d);
  cudaOccFuncAttributes attr;
  attr.maxThreadsPerBlock = d.limits.max_threads_per_block;
  attr.numRegs = std::max(lc.registers_per_thread, 1);
  attr.sharedSizeBytes = static_cast<size_t>(std::max(0L, lc.shared_mem_bytes));
  attr.shmemLimitConfig = FUNC_SHMEM_LIMIT_OPTIN;  // traces fold opt-in dynamic shared memory into the total
  attr.numBlockBarriers = 1;
  cudaOccDeviceState state;
  cudaOccResult result{};
  const int block = static_cast<int>(std::clamp<std::int64_t>(lc.threads_per_block, 1, 1 << 20));
  const cudaOccError rc = cudaOccMaxActiveBlocksPerMultiprocessor(&result, &props, &attr, &state, block, 0);
  if (rc != CUDA_OCC_SUCCESS || result.activeBlocksPerMultiprocessor <= 0) return std::nullopt;
  return result.activeBlocksPerMultiprocessor;
}

[[nodiscard]] inline int blocks_per_sm(const Device& d, const LaunchConfig& lc) {
  if (auto n = try_blocks_per_sm(d, lc)) return *n;
  throw make_error(d.name, "occupancy",
                   "a block of " + std::to_string(lc.threads_per_block) + " threads, " + std::to_string(lc.registers_per_thread) +
                       " registers/thread and " + std::to_string(lc.shared_mem_bytes) +
                       " B shared memory cannot run on compute capability " + std::to_string(d.cc_major) + "." +
                       std::to_string(d.cc_minor));
}

[[nodiscard]] inline std::optional<std::int64_t> try_wave_size(const Device& d, const LaunchConfig& lc) noexcept {
  if (auto n = try_blocks_per_sm(d, lc)) return std::int64_t{*n} * d.sms;
  return std::nullopt;
}

[[nodiscard]] inline std::int64_t wave_size(const Device& d, const LaunchConfig& lc) {
  return static_cast<std::int64_t>(blocks_per_sm(d, lc)) * d.sms;
}

}  // namespace habitat
