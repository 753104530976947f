#pragma once
// CUDA's limits on a kernel launch (CUDA C++ Programming Guide, "Compute Capabilities"; the same on every
// GPU since compute capability 3.0): what a launch read from a file may be. Within them a grid's or a
// block's count fits in int64 without overflow.
#include <cstdint>
#include <optional>
#include <string>

#include "habitat/trace/trace.hpp"

namespace habitat::detail {

inline constexpr std::int64_t max_grid_x = 2147483647, max_grid_yz = 65535;
inline constexpr std::int64_t max_block_xy = 1024, max_block_z = 64, max_threads_per_block = 1024;
// Registers a thread may use: 255 on every GPU since compute capability 3.5.
inline constexpr int max_registers_per_thread = 255;
// Static plus dynamic shared memory of one block: 227 KiB on Hopper; 1 GiB leaves room for any successor.
inline constexpr long max_shared_mem_per_block = 1L << 30;

// What is wrong with a launch, or nothing: "grid (1, 70000, 1) beyond CUDA's limits (...)".
[[nodiscard]] inline std::optional<std::string> launch_limit_violation(const Dim3& grid, const Dim3& block) {
  auto text = [](const Dim3& d) { return "(" + std::to_string(d.x) + ", " + std::to_string(d.y) + ", " + std::to_string(d.z) + ")"; };
  if (!(grid.x >= 1 && grid.x <= max_grid_x && grid.y >= 1 && grid.y <= max_grid_yz && grid.z >= 1 && grid.z <= max_grid_yz))
    return "grid " + text(grid) + " beyond CUDA's limits (x from 1 to 2147483647, y and z from 1 to 65535)";
  if (!(block.x >= 1 && block.x <= max_block_xy && block.y >= 1 && block.y <= max_block_xy && block.z >= 1 && block.z <= max_block_z &&
        block.count() <= max_threads_per_block))
    return "block " + text(block) + " beyond CUDA's limits (x and y up to 1024, z up to 64, 1024 threads in all)";
  return std::nullopt;
}

}  // namespace habitat::detail
