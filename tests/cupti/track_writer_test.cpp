// The live tracker's trace writer (adapters/cupti/include/habitat/cupti/track_writer.hpp) on recorded events,
// read back by the Kineto reader: no GPU needed.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
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

TEST_CASE("emit_nvtx's operator ranges read as operators with shapes, a convolution's geometry from its backward") {
  using namespace habitat::cupti;
  // The parser: PyTorch's getNvtxStr format, and what is not an operator.
  const auto add = parse_nvtx_op("aten::add_, seq = 3, op_id = 7");
  REQUIRE(add);
  CHECK(add->name == "aten::add_");
  CHECK(add->sequence == 3);
  CHECK_FALSE(add->has_sizes);
  const auto mm = parse_nvtx_op("aten::mm, op_id = 2, sizes = [[2, 3], [], [3, 4]], input_op_ids = [(1,0)]");
  REQUIRE(mm);
  CHECK(mm->sequence == -1);
  CHECK(mm->sizes == std::vector<std::vector<long long>>{{2, 3}, {}, {3, 4}});
  CHECK_FALSE(parse_nvtx_op("my own range"));
  CHECK_FALSE(parse_nvtx_op("aten::mm, sizes = [[2, 3"));  // cut short: not taken as an operator

  std::vector<TrackedDevice> dev{{"NVIDIA H200", 150754820096LL, 9, 0, 132, 1024, 2048, 65536, 65536, 32, 49152, 233472, 232448}};
  const std::uint64_t t0 = 1'700'000'000'000'000'000ULL;
  std::vector<TrackedStep> steps{{1, t0, t0 + 5'000'000, 42, 7}};
  std::vector<TrackedRange> ranges{
      {"my own range", t0 + 100, t0 + 4'000'000, 42, 7},
      {"aten::conv2d, seq = 5, op_id = 1, sizes = [[8, 3, 32, 32], [16, 3, 3, 3], [16], [], [], [], []]", t0 + 1000, t0 + 90'000, 42, 7},
      {"aten::convolution, seq = 5, op_id = 2, sizes = [[8, 3, 32, 32], [16, 3, 3, 3], [16], [], [], [], [], [], []]", t0 + 2000, t0 + 80'000,
       42, 7},
      {"aten::cudnn_convolution, op_id = 4, sizes = [[8, 3, 32, 32], [16, 3, 3, 3], [], [], [], [], [], [], []]", t0 + 3000, t0 + 70'000, 42,
       7},
      // The backward, on the autograd thread: its grad_output is the forward's output, 16 x 16 (stride 2, padding 1).
      {"ConvolutionBackward0, seq = 5, op_id = 10, sizes = [[8, 16, 16, 16]]", t0 + 1'000'000, t0 + 1'200'000, 42, 9},
      {"aten::convolution_backward, op_id = 11, sizes = [[8, 16, 16, 16], [8, 3, 32, 32], [16, 3, 3, 3], [], [], [], [], [], [], [], []]",
       t0 + 1'010'000, t0 + 1'190'000, 42, 9}};
  std::vector<TrackedCall> calls{{"cudaLaunchKernel", false, t0 + 10'000, t0 + 15'000, 42, 7, 1},
                                 {"cudaLaunchKernel", false, t0 + 1'020'000, t0 + 1'025'000, 42, 9, 2}};
  std::vector<TrackedGpu> gpu(2);
  for (int i = 0; i < 2; ++i) {
    gpu[i].name = i == 0 ? "sm90_xmma_fprop_implicit_gemm" : "sm90_xmma_dgrad_implicit_gemm";
    gpu[i].start_ns = calls[i].end_ns + 5000;
    gpu[i].end_ns = gpu[i].start_ns + 40'000;
    gpu[i].stream = 7;
    gpu[i].correlation = calls[i].correlation;
    gpu[i].grid[0] = gpu[i].block[0] = 128;
    gpu[i].grid[1] = gpu[i].grid[2] = gpu[i].block[1] = gpu[i].block[2] = 1;
  }
  std::ostringstream os;
  write_kineto(os, dev, calls, gpu, steps, std::string(cupti_tracker_name) + " (test)", ranges);
  const Trace t = kineto::read_trace(test::write_temp("tracked_nvtx.json", os.str()));
  REQUIRE(t.kernels.size() == 2);
  REQUIRE(t.kernels[0].op >= 0);
  REQUIRE(t.kernels[1].op >= 0);
  const Operation& fwd = t.ops[static_cast<std::size_t>(t.kernels[0].op)];
  const Operation& bwd = t.ops[static_cast<std::size_t>(t.kernels[1].op)];
  CHECK(fwd.name == "aten::cudnn_convolution");  // the innermost operator around the launch
  REQUIRE(fwd.inputs.size() == 9);
  CHECK(fwd.inputs[0].shape == std::vector<std::int64_t>{8, 3, 32, 32});
  CHECK(fwd.inputs[2].value == "[1, 1]");  // cudnn_convolution(self, weight, padding, stride, dilation, groups, ...)
  CHECK(fwd.inputs[3].value == "[2, 2]");
  CHECK(fwd.inputs[5].value == "1");
  CHECK(bwd.name == "aten::convolution_backward");
  REQUIRE(bwd.inputs.size() == 11);
  CHECK(bwd.inputs[4].value == "[2, 2]");  // (grad_output, input, weight, bias_sizes, stride, padding, dilation, transposed, ...)
  CHECK(bwd.inputs[7].value == "False");
  CHECK(bwd.backward);
  // Sequence numbers are kept (the backward links to its forward by them); the user's range is an annotation.
  CHECK(std::any_of(t.ops.begin(), t.ops.end(), [](const Operation& o) { return o.name == "aten::conv2d" && o.sequence == 5; }));
  CHECK(std::none_of(t.ops.begin(), t.ops.end(), [](const Operation& o) { return o.name == "my own range"; }));
  // A transposed convolution maps 4 x 4 to 8 x 8 through a 4 x 4 kernel with stride 2, padding 1.
  const auto g = habitat::cupti::detail::solve(4, 4, 8, true);
  REQUIRE(g);
  CHECK(g->stride == 2);
  CHECK(g->padding == 1);
  CHECK_FALSE(habitat::cupti::detail::solve(5, 3, 9, false));  // no stride and padding make 5 -> 9 through 3
  const auto patch = habitat::cupti::detail::solve(224, 16, 14, false);  // ViT's patch embedding: stride = kernel
  REQUIRE(patch);
  CHECK(patch->stride == 16);
  CHECK(patch->padding == 0);
}

namespace {
// Ranges on one thread: each of depth 0 opens a block of 1 ms after the last, and one of depth d lies inside it,
// d us in from either end.
std::vector<habitat::cupti::TrackedRange> ranges_of(const std::vector<std::pair<std::string, int>>& messages_and_depth, std::uint32_t thread) {
  std::vector<habitat::cupti::TrackedRange> out;
  std::uint64_t block = 0;
  for (const auto& [m, depth] : messages_and_depth) {
    if (depth == 0) block += 1'000'000;
    const auto in = static_cast<std::uint64_t>(depth) * 1000;
    out.push_back({m, block + in, block + 900'000 - in, 1, thread});
  }
  return out;
}
std::vector<std::optional<habitat::cupti::NvtxOp>> inferred(const std::vector<habitat::cupti::TrackedRange>& ranges) {
  std::vector<std::optional<habitat::cupti::NvtxOp>> ops;
  for (const auto& r : ranges) ops.push_back(habitat::cupti::parse_nvtx_op(r.message));
  habitat::cupti::infer_conv_geometry(ops, ranges);
  return ops;
}
}  // namespace

TEST_CASE("convolution geometry from the backward: shared sequence numbers, grouped transposed and 1-D convolutions") {
  using namespace habitat::cupti;
  SECTION("a frozen convolution that shares the next node's sequence number takes only its own backward") {
    // Two forward convolutions carry number 7 (the first creates no autograd node); only the second has a backward.
    auto r = ranges_of({{"aten::cudnn_convolution, seq = 7, sizes = [[4, 8, 32, 32], [8, 8, 3, 3], [], [], [], [], [], [], []]", 0},
                        {"aten::cudnn_convolution, seq = 7, sizes = [[4, 8, 32, 32], [16, 8, 3, 3], [], [], [], [], [], [], []]", 0}},
                       1);
    auto b = ranges_of({{"ConvolutionBackward0, seq = 7, sizes = [[4, 16, 16, 16]]", 0},
                        {"aten::convolution_backward, sizes = [[4, 16, 16, 16], [4, 8, 32, 32], [16, 8, 3, 3], [], [], [], [], [], [], [], []]", 1}},
                       2);
    r.insert(r.end(), b.begin(), b.end());
    const auto ops = inferred(r);
    CHECK_FALSE(ops[0]->inferred);  // no backward has its weight: unknown, not another layer's stride
    REQUIRE(ops[1]->inferred);
    CHECK(ops[1]->values[3] == "[2, 2]");
    CHECK(ops[1]->values[2] == "[1, 1]");
  }
  SECTION("a grouped transposed convolution takes its groups from the output channels") {
    // 8 channels in, 4 groups of 2 out each: weight [8, 2, 4, 4], output [2, 8, 8, 8].
    auto r = ranges_of({{"aten::conv_transpose2d, seq = 3, sizes = [[2, 8, 4, 4], [8, 2, 4, 4], [], [], [], [], [], []]", 0},
                        {"aten::cudnn_convolution_transpose, sizes = [[2, 8, 4, 4], [8, 2, 4, 4], [], [], [], [], [], [], [], []]", 1}},
                       1);
    auto b = ranges_of({{"ConvolutionBackward0, seq = 3, sizes = [[2, 8, 8, 8]]", 0},
                        {"aten::convolution_backward, sizes = [[2, 8, 8, 8], [2, 8, 4, 4], [8, 2, 4, 4], [], [], [], [], [], [], [], []]", 1}},
                       2);
    r.insert(r.end(), b.begin(), b.end());
    const auto ops = inferred(r);
    REQUIRE(ops[1]->inferred);
    CHECK(ops[1]->values[6] == "4");       // cudnn_convolution_transpose(self, weight, padding, output_padding, stride, dilation, groups)
    CHECK(ops[1]->values[4] == "[2, 2]");
    REQUIRE(ops[3]->inferred);
    CHECK(ops[3]->values[7] == "True");  // convolution_backward's transposed flag
    CHECK(ops[3]->values[9] == "4");
  }
  SECTION("a 1-D convolution reaches cuDNN as 2-D of height 1 and takes its 1-D backward's output") {
    auto r = ranges_of({{"aten::conv1d, seq = 5, sizes = [[4, 8, 100], [16, 8, 5], [], [], [], [], []]", 0},
                        {"aten::cudnn_convolution, sizes = [[4, 8, 1, 100], [16, 8, 1, 5], [], [], [], [], [], [], []]", 1}},
                       1);
    auto b = ranges_of({{"ConvolutionBackward0, seq = 5, sizes = [[4, 16, 50]]", 0},
                        {"aten::convolution_backward, sizes = [[4, 16, 50], [4, 8, 100], [16, 8, 5], [], [], [], [], [], [], [], []]", 1}},
                       2);
    r.insert(r.end(), b.begin(), b.end());
    const auto ops = inferred(r);
    REQUIRE(ops[1]->inferred);
    CHECK(ops[1]->values[3] == "[1, 2]");  // height 1 at stride 1, the length at stride 2 (padding 2)
    CHECK(ops[1]->values[2] == "[0, 2]");
    REQUIRE(ops[3]->inferred);
    CHECK(ops[3]->values[4] == "[2]");
  }
}

TEST_CASE("the recorded emit_nvtx traces' convolution geometry is what the geometry inference gives today") {
  // fixtures/track/nvtx: written by the tracker that recorded them; nvtx_tracker_check.py checks them against the
  // profiler's record of the same convolutions. Here the inference as it is now runs again on the step's operators.
  using namespace habitat::cupti;
  for (const char* w : {"resnet50_fp32_b32", "dcgan_fp32_b128", "mobilenetv2_fp32_b32"}) {
    const Trace t = kineto::read_trace(std::string(HABITAT_FIXTURES) + "/track/nvtx/" + w + ".nvtx.json.gz");
    std::vector<std::optional<NvtxOp>> ops;
    std::vector<TrackedRange> ranges;
    for (const auto& o : t.ops) {
      NvtxOp n;
      n.name = o.name;
      n.sequence = o.sequence;
      for (const auto& a : o.inputs) n.sizes.emplace_back(a.shape.begin(), a.shape.end());
      ops.push_back(std::move(n));
      const auto ns = [](double us) { return static_cast<std::uint64_t>(std::llround(us * 1000)); };
      ranges.push_back({"", ns(o.start_us), ns(o.start_us + o.duration_us), 0, static_cast<std::uint32_t>(o.thread)});
    }
    infer_conv_geometry(ops, ranges);
    int checked = 0;
    for (std::size_t i = 0; i < ops.size(); ++i) {
      if (!ops[i]->inferred) continue;
      ++checked;
      for (std::size_t j = 0; j < ops[i]->values.size(); ++j)
        if (!ops[i]->values[j].empty()) CHECK(ops[i]->values[j] == t.ops[i].inputs[j].value);
    }
    INFO(w);
    CHECK(checked > 20);
  }
}
