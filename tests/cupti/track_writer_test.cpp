// The live tracker's trace writer (adapters/cupti/include/habitat/cupti/track_writer.hpp) on recorded events,
// read back by the Kineto reader: no GPU needed.
#include <catch2/catch.hpp>

#include <sstream>

#include "fixtures.hpp"
#include "habitat/cupti/track_writer.hpp"
#include "habitat/kineto/reader.hpp"

using namespace habitat;

TEST_CASE("the CUPTI tracker's trace reads back: steps, launches, kernels, copies, the GPU") {
  using namespace habitat::cupti;
  std::vector<TrackedDevice> dev{{"NVIDIA H100 80GB HBM3", 85017493504LL, 9, 0, 132, 1024, 2048, 65536, 65536, 32, 49152, 233472, 232448}};
  std::vector<TrackedCall> calls;
  std::vector<TrackedGpu> gpu;
  std::vector<TrackedStep> steps;
  const std::uint64_t t0 = 1'700'000'000'000'000'000ULL;  // CUPTI's nanoseconds
  for (int s = 0; s < 2; ++s) {
    const std::uint64_t base = t0 + static_cast<std::uint64_t>(s) * 10'000'000;
    steps.push_back({s + 1, base, base + 5'000'000, 42, 7});
    for (std::uint32_t i = 0; i < 3; ++i) {
      const std::uint32_t corr = static_cast<std::uint32_t>(s * 10 + i);
      calls.push_back({api_name(i == 2 ? "cudaMemcpyAsync_v3020" : "cudaLaunchKernel_v7000"), false, base + 1000 + i * 100000, base + 6000 + i * 100000, 42, 7, corr});
      TrackedGpu g;
      g.kind = i == 2 ? GpuKind::memcpy : GpuKind::kernel;
      g.name = i == 0 ? "ampere_sgemm_128x64_nn" : i == 1 ? "void at::native::vectorized_elementwise_kernel<4, \"quoted\">(int)" : "Memcpy DtoD";
      g.start_ns = base + 20000 + i * 200000;
      g.end_ns = g.start_ns + 50000 + i * 1000;
      g.stream = 7;
      g.correlation = corr;
      g.grid[0] = 264, g.grid[1] = 1, g.grid[2] = 1;
      g.block[0] = 256, g.block[1] = 1, g.block[2] = 1;
      g.registers = 64;
      g.shared_mem = 16384;
      g.bytes = i == 2 ? 1 << 20 : 0;
      gpu.push_back(g);
    }
  }
  std::ostringstream os;
  write_kineto(os, dev, calls, gpu, steps, std::string(cupti_tracker_name) + " (test)");
  const std::string path = test::write_temp("tracked.json", os.str());
  const Trace t = kineto::read_trace(path);
  CHECK(t.recorder == Recorder::cupti_tracker);  // the reader knows the tracker's traces: no profiler cost in them
  CHECK(t.step_name == "ProfilerStep#2");
  CHECK(t.profiled_steps == 2);
  REQUIRE(t.kernels.size() == 3);
  CHECK(t.kernels[0].name == "ampere_sgemm_128x64_nn");
  CHECK(t.kernels[1].name.find("\"quoted\"") != std::string::npos);
  CHECK(t.kernels[0].grid.x == 264);
  CHECK(t.kernels[0].block.x == 256);
  CHECK(t.kernels[0].registers_per_thread == 64);
  CHECK(t.kernels[0].shared_mem_bytes == 16384);
  CHECK(t.kernels[2].kind == GpuWorkKind::memcpy);
  CHECK(t.kernels[2].copy_kind == "DtoD");
  CHECK(t.kernels[2].bytes == Approx(1 << 20));
  for (const auto& k : t.kernels) CHECK(k.call >= 0);  // each linked to the call that launched it
  CHECK(t.gpu_active_us() == Approx(50 + 51 + 52).epsilon(1e-9));
  REQUIRE(t.device_props);
  CHECK(t.device_props->sms == 132);
  CHECK(t.device_name == "NVIDIA H100 80GB HBM3");
  CHECK(api_name("cuLaunchKernel_ptsz") == "cuLaunchKernel_ptsz");
  CHECK(api_name("cudaLaunchKernel_v7000") == "cudaLaunchKernel");
}
