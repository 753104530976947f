#include <catch2/catch.hpp>

#include "habitat/device/catalog.hpp"
#include "habitat/device/occupancy.hpp"

using namespace habitat;

// Hand-worked from the per-SM limits (threads, registers, shared memory, block slots).
TEST_CASE("occupancy matches hand-worked cases", "[occupancy]") {
  const Catalog c = Catalog::builtin();
  const Device& h100 = c.at("H100 SXM");  // 2048 threads, 64K regs, 228 KiB smem, 32 blocks per SM
  const Device& t4 = c.at("T4");          // 1024 threads, 64K regs, 64 KiB smem, 16 blocks per SM
  // Thread-limited: 256 threads, few registers -> 2048/256 = 8 blocks.
  CHECK(blocks_per_sm(h100, {256, 32, 0}) == 8);
  CHECK(blocks_per_sm(t4, {256, 32, 0}) == 4);
  // Register-limited: 128 regs x 256 threads = 32768 regs per block -> 2 blocks on 64K registers.
  CHECK(blocks_per_sm(h100, {256, 128, 0}) == 2);
  // Block-slot-limited: 32-thread blocks -> 32 slots on Hopper, 16 on Turing.
  CHECK(blocks_per_sm(h100, {32, 16, 0}) == 32);
  CHECK(blocks_per_sm(t4, {32, 16, 0}) == 16);
  // Shared-memory-limited: 100 KiB per block (+1 KiB reserved) on 228 KiB -> 2 blocks.
  CHECK(blocks_per_sm(h100, {128, 32, 100 * 1024}) == 2);
  // Wave size is blocks per SM times SMs.
  CHECK(wave_size(h100, {256, 32, 0}) == 8 * 132);
}

TEST_CASE("a launch that cannot run on a GPU is an error naming the GPU", "[occupancy][errors]") {
  const Catalog c = Catalog::builtin();
  CHECK_THROWS_WITH(blocks_per_sm(c.at("T4"), {128, 32, 200 * 1024}), Catch::Contains("T4") && Catch::Contains("cannot run"));
}

// An AMD compute unit: 2048 threads in whole 64-thread wavefronts and 64 KiB of LDS; registers are not recorded.
TEST_CASE("occupancy on an AMD compute unit counts wavefronts and LDS", "[occupancy][amd]") {
  const Catalog c = Catalog::builtin();
  const Device& mi210 = c.at("MI210");
  CHECK(blocks_per_sm(mi210, {256, 0, 0}) == 8);
  CHECK(blocks_per_sm(mi210, {65, 0, 0}) == 16);  // two wavefronts per block
  CHECK(blocks_per_sm(mi210, {256, 255, 0}) == 8);  // an NVIDIA kernel's register count does not apply
  CHECK(blocks_per_sm(mi210, {256, 0, 40 * 1024}) == 1);
  CHECK(!try_blocks_per_sm(mi210, {256, 0, 65 * 1024}));
  CHECK(!try_blocks_per_sm(mi210, {2048, 0, 0}));
  CHECK(wave_size(c.at("MI300X"), {1024, 0, 0}) == 2 * 304);
}
