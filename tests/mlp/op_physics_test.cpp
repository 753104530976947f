// The physics op model: NeuSight's timed-call protocol (overlap of the host's floor and the kernel), the
// L2-resident rate of small elementwise working sets, the convolution efficiency model, and its
// leave-one-GPU-out error on public data.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "habitat/device/catalog.hpp"
#include "habitat/mlp/op_physics.hpp"
#include "habitat/studies/op_study.hpp"

namespace fs = std::filesystem;
using habitat::Catalog;
using habitat::mlp::OpQuery;
using habitat::ops::OpKind;

namespace {
OpQuery elementwise(double b, double h, double operands, double code) { return {OpKind::elementwise, {}, {}, {b, h, operands, code}}; }
OpQuery conv(OpKind k, double b, double cin, double cout, double ks, double side, double stride, double pad) {
  return {k, {}, {}, {b, cin, cout, ks, side, stride, pad}};
}
// The hard lower bound of an op's kernels: FLOPs at the fastest datapath's peak, compulsory bytes at spec.
double roofline_bound_ms(const OpQuery& q, const habitat::Device& g) {
  const auto w = habitat::ops::op_work(q.op, q.dims, q.dtype, q.pass);
  // Winograd's or FFT's arithmetic where g's library may pick them (mlp::bound_flops), the op's own FLOPs elsewhere.
  return habitat::roofline_bound(habitat::mlp::bound_flops(q, g, w.flops), w.bytes, habitat::fastest_datapath(habitat::Precision::fp32, g), g)
             .bound_us() / 1e3;
}
std::vector<habitat::opstudy::Row> public_rows(const Catalog& cat) {
  return habitat::opstudy::load_rows(cat, fs::path(HABITAT_SHARED_DATA) / "neusight", fs::path(HABITAT_FIXTURES) / ".." / "data" / "opdata");
}
}  // namespace

TEST_CASE("timed call: the floor hides a short kernel, a long one adds to the lead", "[physics]") {
  const auto relu = habitat::mlp::call_floor(elementwise(1, 1, 1, 5));
  REQUIRE(relu);
  CHECK(relu->op == "relu");
  CHECK(habitat::mlp::timed_call_ms(relu, 0.001) == Approx(relu->ms));
  CHECK(habitat::mlp::timed_call_ms(relu, 1.0) == Approx(relu->lead * relu->ms + 1.0));
  CHECK(habitat::mlp::call_floor({OpKind::batch_norm, {}, {}, {}})->op == "ln");
  // Matrix math keeps the tile model's additive call.
  CHECK_FALSE(habitat::mlp::call_floor({OpKind::linear, {}, {}, {}}));
  CHECK(habitat::mlp::timed_call_ms(std::nullopt, 1.0) == Approx(1.0 + habitat::mlp::op_physics_shares.call_ms));
}

TEST_CASE("L2-resident elementwise working sets: faster than DRAM, never below their bound, on every catalog GPU", "[physics]") {
  const Catalog cat = Catalog::builtin();
  for (const auto& g : cat.devices()) {
    INFO(g.name);
    const double l2_elems = g.l2_mib * 1024 * 1024 / 12;  // add: three FP32 tensors
    const auto in_l2 = elementwise(1, 0.5 * l2_elems, 2, 1), beyond = elementwise(1, 4 * l2_elems, 2, 1);
    const double share = habitat::mlp::roofline_share(OpKind::elementwise);
    const double t_in = habitat::mlp::physics_kernel_ms(in_l2, g, share), t_out = habitat::mlp::physics_kernel_ms(beyond, g, share);
    CHECK(std::isfinite(t_in));
    CHECK(t_out > 8 * (t_in - habitat::mlp::op_physics_shares.kernel_floor_ms));  // 8x the bytes, and only the resident set sped up
    CHECK(t_in <= habitat::mlp::physics_kernel_ms(in_l2, g, share, habitat::mlp::no_l2_reuse) + 1e-12);   // no L2 rate: DRAM only
    // Layer norm of the same bytes finds them in L2 too, where its code caps it on Hopper: rows of 1,024 elements
    // at the SM's issue rate over their cost per element (its rows' share included).
    if (g.name == "H100 SXM" || g.name == "H200") {
      const OpQuery ln{OpKind::layer_norm, {}, {}, {std::floor(0.3 * l2_elems * 1.5 / 1024), 1024}};
      const double t = habitat::mlp::physics_kernel_ms(ln, g, habitat::mlp::roofline_share(OpKind::layer_norm));
      const double per_clk_sm = ln.dims[0] * 1024 / ((t - habitat::mlp::fixed_ms(ln)) * 1e3 * g.load_clock_mhz(habitat::Precision::fp32) * g.sms);
      const auto* c = habitat::mlp::find_issue_cost("ln");
      REQUIRE(c);
      CHECK(per_clk_sm == Approx(g.issue_threads_per_clk_per_sm() / (c->per_element + c->per_row / 1024)).epsilon(0.01));
    }
  }
}

TEST_CASE("L2 hit curve: all hits for a small set and none at the L2 size - time grows with the set and is continuous there", "[physics]") {
  using habitat::mlp::l2_hit_share;
  const double e = habitat::mlp::l2_reuse.hit_exponent;
  CHECK(l2_hit_share(0, 1e6, e) == 1);
  CHECK(l2_hit_share(1e6, 1e6, e) == 0);
  CHECK(l2_hit_share(2e6, 1e6, e) == 0);
  CHECK(l2_hit_share(1e6, 0, e) == 0);  // no L2 known
  CHECK(l2_hit_share(0.5e6, 1e6, e) > l2_hit_share(0.75e6, 1e6, e));
  const Catalog cat = Catalog::builtin();
  const double share = habitat::mlp::roofline_share(OpKind::elementwise);
  for (const auto& g : cat.devices()) {
    INFO(g.name);
    const double l2_elems = g.l2_mib * 1024 * 1024 / 12;
    double last = 0;
    for (double f = 0.05; f < 2; f += 0.05) {
      const double t = habitat::mlp::physics_kernel_ms(elementwise(1, f * l2_elems, 2, 1), g, share);
      REQUIRE(t >= last);
      last = t;
    }
    const double below = habitat::mlp::physics_kernel_ms(elementwise(1, 0.999999 * l2_elems, 2, 1), g, share);
    const double at = habitat::mlp::physics_kernel_ms(elementwise(1, l2_elems, 2, 1), g, share);
    CHECK(below == Approx(at).epsilon(1e-4));
  }
}

TEST_CASE("pow and division: their per-element code bounds them in L2 on Hopper, DRAM beyond it and on older GPUs", "[physics]") {
  const Catalog cat = Catalog::builtin();
  const double share = habitat::mlp::roofline_share(OpKind::elementwise);
  auto kernel = [&](const OpQuery& q, const habitat::Device& g) { return habitat::mlp::physics_kernel_ms(q, g, share); };
  const auto& h100 = *cat.find("H100 SXM");
  const double l2_elems = h100.l2_mib * 1024 * 1024 / 12;
  // 20 MB of three FP32 tensors sit in the H100's L2: add streams them at the L2's rate, pow and div are capped by
  // their code at SMs x clock x 128 / cost per element (measured: 1.6x and 1.3x add's time at 8-32 MB).
  const auto add = elementwise(1, 0.4 * l2_elems, 2, 1), pow = elementwise(1, 0.4 * l2_elems, 2, 4), div = elementwise(1, 0.4 * l2_elems, 2, 3);
  CHECK(kernel(pow, h100) > 1.3 * kernel(add, h100));
  CHECK(kernel(div, h100) > kernel(add, h100));
  const double per_clk_sm = 0.4 * l2_elems / ((kernel(pow, h100) - habitat::mlp::fixed_ms(pow)) * 1e3 *
                                               h100.load_clock_mhz(habitat::Precision::fp32) * h100.sms);
  CHECK(per_clk_sm == Approx(h100.issue_threads_per_clk_per_sm() / habitat::mlp::issue_cost(pow)).epsilon(0.01));
  // Pow's and division's fixed part (their long per-thread chain) is longer than the shortest kernel's; add's is that.
  CHECK(habitat::mlp::fixed_ms(pow) > 1.5 * habitat::mlp::fixed_ms(add));
  CHECK(habitat::mlp::fixed_ms(div) > 1.5 * habitat::mlp::fixed_ms(add));
  CHECK(habitat::mlp::fixed_ms(add) == habitat::mlp::op_physics_shares.kernel_floor_ms);
  // Operators their bytes bound have no issue cost.
  CHECK(habitat::mlp::issue_cost(add) == 0);
  CHECK(habitat::mlp::issue_cost(elementwise(1, 1e6, 1, 2)) == 0);  // mul by a scalar
  CHECK(habitat::mlp::issue_cost(OpQuery{OpKind::batch_norm, {}, {}, {1, 1e6}}) == 0);  // no batch-norm rows measured to fit one
  // Layer norm's cost per element grows as its rows get shorter (each row pays its reductions).
  CHECK(habitat::mlp::issue_cost(OpQuery{OpKind::layer_norm, {}, {}, {1, 256}}) > habitat::mlp::issue_cost(OpQuery{OpKind::layer_norm, {}, {}, {1, 4096}}));
  // A DRAM-sized pow on the A100, P100 and T4 is bound by its bytes, as their public timings show (0.87-0.99 of
  // their sustained bandwidth for add, pow and div alike): beyond its fixed part, add's time.
  for (const char* name : {"A100 PCIe 40GB", "P100", "T4", "P4"}) {
    const auto& g = *cat.find(name);
    INFO(name);
    const double n = 16 * g.l2_mib * 1024 * 1024 / 12;
    const auto big_pow = elementwise(1, n, 2, 4), big_add = elementwise(1, n, 2, 1);
    CHECK(kernel(big_pow, g) - habitat::mlp::fixed_ms(big_pow) == Approx(kernel(big_add, g) - habitat::mlp::fixed_ms(big_add)));
  }
  // Finite on every catalog GPU at every size; the issue cost only ever adds time, and beyond L2 the roofline
  // bound holds.
  for (const auto& g : cat.devices())
    for (double n : {1.0, 1e4, 1e6, 1e8, 1e10})
      for (double code : {3.0, 4.0}) {
        const auto q = elementwise(1, n, 2, code);
        const double t = kernel(q, g);
        INFO(g.name << " n " << n << " code " << code);
        REQUIRE(std::isfinite(t));
        REQUIRE(t >= habitat::mlp::physics_kernel_ms(q, g, share, habitat::mlp::l2_reuse,
                                                     habitat::mlp::conv_model.coefs, -1, 0));
        if (12 * n > g.l2_mib * 1024 * 1024) REQUIRE(t >= roofline_bound_ms(q, g) * (1 - 1e-12));
      }
}

TEST_CASE("softmax: its code holds it on Hopper (a warp's rows from L2, a block's rows at every size), of the older GPUs only on the P100", "[physics]") {
  const Catalog cat = Catalog::builtin();
  const double share = habitat::mlp::roofline_share(OpKind::softmax);
  auto kernel = [&](const OpQuery& q, const habitat::Device& g, double issue = -1) {
    return habitat::mlp::physics_kernel_ms(q, g, share, habitat::mlp::l2_reuse, habitat::mlp::conv_model.coefs, -1, issue);
  };
  auto elements_per_clk_sm = [](const OpQuery& q, const habitat::Device& g, double ms) {
    return q.dims[0] * q.dims[1] / ((ms - habitat::mlp::op_physics_shares.softmax_floor_ms) * 1e3 * g.load_clock_mhz(habitat::Precision::fp32) * g.sms);
  };
  const double warp_cost = habitat::mlp::issue_cost(OpQuery{OpKind::softmax, {}, {}, {1, 1024}});
  const double block_cost = habitat::mlp::issue_cost(OpQuery{OpKind::softmax, {}, {}, {1, 4096}});
  CHECK(habitat::mlp::issue_name(OpQuery{OpKind::softmax, {}, {}, {1, 2048}}) == "softmax");
  CHECK(habitat::mlp::issue_name(OpQuery{OpKind::softmax, {}, {}, {1, 2049}}) == "softmax_block");
  CHECK(block_cost > warp_cost);
  for (const char* name : {"H100 SXM", "H200"}) {
    const auto& g = *cat.find(name);
    INFO(name);
    // 24 MB of input and output in L2: warp rows run at the SM's issue rate over their cost, faster than DRAM.
    const OpQuery in_l2{OpKind::softmax, {}, {}, {3072, 1024}}, dram_block{OpKind::softmax, {}, {}, {65536, 4096}};
    CHECK(elements_per_clk_sm(in_l2, g, kernel(in_l2, g)) == Approx(g.issue_threads_per_clk_per_sm() / warp_cost).epsilon(0.01));
    CHECK(kernel(in_l2, g) < habitat::mlp::physics_kernel_ms(in_l2, g, share, habitat::mlp::no_l2_reuse));  // DRAM alone: slower
    // 2 GB of block rows: held to their cost, slower than warp rows of the same bytes from DRAM.
    const OpQuery dram_warp{OpKind::softmax, {}, {}, {262144, 1024}};
    CHECK(elements_per_clk_sm(dram_block, g, kernel(dram_block, g)) == Approx(g.issue_threads_per_clk_per_sm() / block_cost).epsilon(0.01));
    CHECK(kernel(dram_block, g) > kernel(dram_warp, g));
  }
  // On the public GPUs their DRAM binds first: the cost changes nothing at DRAM sizes, warp rows or block rows.
  auto at_dram = [](const habitat::Device& g, double h) { return OpQuery{OpKind::softmax, {}, {}, {16 * g.l2_mib * 1024 * 1024 / (8 * h), h}}; };
  for (const char* name : {"A100 PCIe 40GB", "V100 PCIe 32GB", "T4"}) {
    const auto& g = *cat.find(name);
    INFO(name);
    for (double h : {1024.0, 4096.0}) CHECK(kernel(at_dram(g, h), g) == Approx(kernel(at_dram(g, h), g, 0)));
  }
  // Except the P100: GP100's SM issues for two warp schedulers, not four, and its block rows are held to their code
  // (NeuSight's P100 softmax, its own host's floor: 15.6% -> 10.9% leaving it out).
  const auto& p100 = *cat.find("P100");
  CHECK(kernel(at_dram(p100, 1024), p100) == Approx(kernel(at_dram(p100, 1024), p100, 0)));
  CHECK(elements_per_clk_sm(at_dram(p100, 4096), p100, kernel(at_dram(p100, 4096), p100)) == Approx(64 / block_cost).epsilon(0.01));
  // Finite, positive and above the roofline bound beyond L2 on every catalog GPU.
  for (const auto& g : cat.devices())
    for (double rows : {1.0, 1e3, 1e5, 1e7})
      for (double h : {64.0, 2048.0, 8192.0}) {
        const OpQuery q{OpKind::softmax, {}, {}, {rows, h}};
        const double t = kernel(q, g);
        INFO(g.name << " rows " << rows << " h " << h);
        REQUIRE(std::isfinite(t));
        REQUIRE(t > 0);
        if (8 * rows * h > g.l2_mib * 1024 * 1024) REQUIRE(t >= roofline_bound_ms(q, g) * (1 - 1e-12));
      }
}

TEST_CASE("softmax: a short batch of long warp rows lasts one row's latency, in SM clocks, on every catalog GPU", "[physics]") {
  const Catalog cat = Catalog::builtin();
  const double share = habitat::mlp::roofline_share(OpKind::softmax);
  const auto& lat = habitat::mlp::softmax_row_latency;
  for (const auto& g : cat.devices()) {
    INFO(g.name);
    const OpQuery few_long{OpKind::softmax, {}, {}, {8, 2048}}, block_rows{OpKind::softmax, {}, {}, {8, 4096}};
    const double clock_ms = 1 / (g.load_clock_mhz(habitat::Precision::fp32) * 1e3);
    CHECK(habitat::mlp::physics_kernel_ms(few_long, g, share) == Approx(lat.base_ms + 2048 * lat.clk_per_element * clock_ms));
    // Longer rows take a block each: no warp row's latency.
    CHECK(habitat::mlp::row_latency_ms(block_rows, g) == 0);
    // Layer norm runs a block per row: its rows have a latency of their own, longer for longer rows.
    const double ln_row = habitat::mlp::row_latency_ms(OpQuery{OpKind::layer_norm, {}, {}, {8, 2048}}, g);
    CHECK(ln_row == Approx(habitat::mlp::norm_row_latency.base_ms + 2048 * habitat::mlp::norm_row_latency.clk_per_element * clock_ms));
    CHECK(habitat::mlp::row_latency_ms(OpQuery{OpKind::layer_norm, {}, {}, {8, 4096}}, g) > ln_row);
    CHECK(habitat::mlp::row_latency_ms(OpQuery{OpKind::elementwise, {}, {}, {8, 2048, 2, 1}}, g) == 0);
    // Many rows: their bytes, not one row, set the time.
    const OpQuery many{OpKind::softmax, {}, {}, {1 << 20, 1024}};
    CHECK(habitat::mlp::physics_kernel_ms(many, g, share) > 10 * habitat::mlp::row_latency_ms(many, g));
  }
}

TEST_CASE("convolutions: finite, positive and never below the roofline bound on every catalog GPU, extreme shapes included", "[physics]") {
  const Catalog cat = Catalog::builtin();
  std::size_t checked = 0;
  for (const auto& g : cat.devices())
    for (auto k : {OpKind::conv2d, OpKind::conv_transpose2d})
      for (double b : {1.0, 64.0, 4096.0})
        for (double cin : {1.0, 3.0, 2048.0, 65536.0})
          for (double cout : {1.0, 64.0, 65536.0})
            for (double ks : {1.0, 3.0, 7.0})
              for (double side : {1.0, 5.0, 252.0, 2048.0})
                for (double stride : {1.0, 2.0}) {
                  const auto q = conv(k, b, cin, cout, ks, side, stride, ks > 1 ? 1 : 0);
                  const double t = habitat::mlp::physics_kernel_ms(q, g, habitat::mlp::roofline_share(k));
                  INFO(g.name << " " << habitat::ops::schema(k).name << " b " << b << " cin " << cin << " cout " << cout << " k " << ks
                              << " side " << side << " stride " << stride << ": " << t << " ms");
                  REQUIRE(std::isfinite(t));
                  REQUIRE(t > 0);
                  REQUIRE(t >= roofline_bound_ms(q, g) * (1 - 1e-12));
                  // And that bound never counts fewer FLOPs than any algorithm needs (the trace guard's floor).
                  REQUIRE(habitat::mlp::bound_flops(q, g, 1.0) >= habitat::ops::fast_conv_flops_share(ks * ks, stride == 1) - 1e-12);
                  const double e = habitat::mlp::conv_efficiency(q, g);
                  REQUIRE((std::isfinite(e) && e > 0));
                  ++checked;
                }
  CHECK(checked > 1000);
}

TEST_CASE("fused Winograd: padded to its tiles, the pick for few output channels, and only where the library has it", "[physics]") {
  using habitat::mlp::conv_algorithm_us;
  using habitat::mlp::fused_winograd_efficiency;
  using habitat::mlp::fused_winograd_ideal_us;
  const Catalog cat = Catalog::builtin();
  const auto& v100 = *cat.find("V100 PCIe 32GB");
  const auto& h100 = *cat.find("H100 SXM");
  // Output channels padded to 32, output sides to 8: 33 channels cost what 64 do, a 17-pixel side what 24 does.
  CHECK(fused_winograd_ideal_us(conv(OpKind::conv2d, 32, 64, 33, 3, 56, 1, 1), v100) ==
        Approx(fused_winograd_ideal_us(conv(OpKind::conv2d, 32, 64, 64, 3, 56, 1, 1), v100)));
  CHECK(fused_winograd_ideal_us(conv(OpKind::conv2d, 32, 64, 64, 3, 17, 1, 1), v100) ==
        Approx(fused_winograd_ideal_us(conv(OpKind::conv2d, 32, 64, 64, 3, 24, 1, 1), v100)));
  // Few output channels on a large image: the fused kernel is the fastest algorithm on the V100 (cuDNN 8 ran 92% of
  // NeuSight's convolutions with at most 32 output channels so), and on the H100, whose cuDNN has no FP32 Winograd,
  // it is not among them.
  const auto narrow = conv(OpKind::conv2d, 32, 64, 32, 3, 112, 1, 1);
  CHECK(conv_algorithm_us(narrow, v100, fused_winograd_efficiency) == Approx(fused_winograd_ideal_us(narrow, v100) / fused_winograd_efficiency));
  CHECK(conv_algorithm_us(narrow, h100, fused_winograd_efficiency) > 1.5 * fused_winograd_ideal_us(narrow, h100) / fused_winograd_efficiency);
  // Many channels on a small image: a GEMM-based algorithm is faster.
  const auto wide = conv(OpKind::conv2d, 32, 512, 512, 3, 7, 1, 1);
  CHECK(conv_algorithm_us(wide, v100, fused_winograd_efficiency) < fused_winograd_ideal_us(wide, v100) / fused_winograd_efficiency);
  // cuDNN 9's implicit GEMM model covers the shapes its share was derived on (FP32 3x3 stride 1) on a library without
  // FP32 Winograd; a 1x1 convolution on Hopper and every convolution on the V100 keep the log-linear efficiency.
  using habitat::mlp::cudnn9_implicit;
  const auto pointwise = conv(OpKind::conv2d, 32, 256, 256, 1, 56, 1, 0);
  CHECK_FALSE(cudnn9_implicit(pointwise, h100));
  CHECK(cudnn9_implicit(narrow, h100));
  CHECK_FALSE(cudnn9_implicit(narrow, v100));
  // There the efficiency is the tile model's time on cuDNN 9's tiles at the library's share, and it picks its tiles as
  // cuDNN did for shapes like these in habitat's H100 sums (data/opdata/h100_neusight: 256x64 for all 67 rows of at
  // least 50,000 output pixels by 400-700 channels, 32x32 for 63 of the 69 of at most 100 pixels), one kernel, K unsplit.
  const double share = habitat::mlp::conv_model.coefs.cudnn9_implicit_share;
  CHECK(habitat::mlp::conv_efficiency(narrow, h100) ==
        Approx(share * habitat::mlp::sustained_compute_ms(narrow, h100) * 1e3 / habitat::mlp::cudnn9_implicit_us(narrow, h100)));
  auto tile_of = [&](const habitat::mlp::OpQuery& q) {
    const auto ig = habitat::mlp::implicit_gemm(q);
    habitat::gemm::Shape s{1, ig.m, ig.n, ig.k, true, false};
    s.blas = false, s.tiles = habitat::mlp::cudnn9_implicit_tiles, s.split_k = false;
    const auto e = habitat::gemm::estimate(s, h100, habitat::gemm::fitted);
    CHECK(e.us == Approx(habitat::mlp::cudnn9_implicit_us(q, h100)));
    return e.tile;
  };
  const auto big = tile_of(conv(OpKind::conv2d, 32, 256, 512, 3, 56, 1, 1)), small = tile_of(conv(OpKind::conv2d, 1, 64, 64, 3, 7, 1, 1));
  CHECK((big.tm == 256 && big.tn == 64));
  CHECK((small.tm == 32 && small.tn == 32));
  // A backward pass (data and weight gradients) takes twice the forward's time, as op_work doubles its FLOPs, and
  // its efficiency stays the forward's.
  auto narrow_backward = narrow;
  narrow_backward.pass = habitat::ops::Pass::backward;
  CHECK(habitat::mlp::cudnn9_implicit_us(narrow_backward, h100) == Approx(2 * habitat::mlp::cudnn9_implicit_us(narrow, h100)));
  CHECK(habitat::mlp::conv_efficiency(narrow_backward, h100) == Approx(habitat::mlp::conv_efficiency(narrow, h100)));
}

TEST_CASE("FFT convolution: cuDNN's shapes only, fewer FLOPs in the bound, and the shorter path on Hopper", "[physics]") {
  using habitat::mlp::fft_conv_side;
  // FP32, stride 1, the padded input within a 64 x 64 grid (cuDNN's fft2d_r2c_16x16 / 32x32 / 64x64).
  CHECK(fft_conv_side(conv(OpKind::conv2d, 8, 64, 64, 3, 5, 1, 1)) == 16);
  CHECK(fft_conv_side(conv(OpKind::conv2d, 8, 64, 64, 3, 14, 1, 1)) == 16);
  CHECK(fft_conv_side(conv(OpKind::conv2d, 8, 64, 64, 3, 15, 1, 1)) == 32);
  CHECK(fft_conv_side(conv(OpKind::conv2d, 8, 64, 64, 3, 62, 1, 1)) == 64);
  CHECK(fft_conv_side(conv(OpKind::conv2d, 8, 64, 64, 3, 63, 1, 1)) == 0);
  CHECK(fft_conv_side(conv(OpKind::conv2d, 8, 64, 64, 3, 14, 2, 1)) == 0);
  CHECK(fft_conv_side(conv(OpKind::conv_transpose2d, 8, 64, 64, 3, 14, 1, 1)) == 0);
  auto half = conv(OpKind::conv2d, 8, 64, 64, 3, 14, 1, 1);
  half.dtype = habitat::ops::DataType::bf16;
  CHECK(fft_conv_side(half) == 0);
  // 3x3 on 14 x 14 (a 16 x 16 grid, 16 x 9 frequencies): 4 x 144 multiply-adds where direct does 196 x 9.
  CHECK(habitat::mlp::fft_conv_flops_share(conv(OpKind::conv2d, 8, 64, 64, 3, 14, 1, 1)) == Approx(4.0 * 144 / (196 * 9)));
  CHECK(habitat::mlp::fft_conv_flops_share(conv(OpKind::conv2d, 8, 64, 64, 1, 14, 1, 0)) == 1);  // 1x1: never fewer
  const Catalog cat = Catalog::builtin();
  const auto& h100 = cat.at("H100 SXM");
  const auto& v100 = cat.at("V100 PCIe 32GB");
  using habitat::mlp::ConvPath;
  // NeuSight's configurations that cuDNN 9.19 ran as FFT on the H100 (data/opdata/h100_neusight: 0.299 and 0.997 ms
  // measured; the efficiency alone 0.55 and 1.32; the FFT path 0.288 and 1.101: a sanity check, in sample, as these
  // rows are among those fft_conv_efficiency was derived from), and two it ran as implicit GEMMs on a 5 x 5 input.
  for (const auto& [q, measured_ms] : {std::pair{conv(OpKind::conv2d, 55, 1658, 29, 3, 11, 1, 1), 0.299},
                                      std::pair{conv(OpKind::conv2d, 64, 652, 562, 3, 11, 1, 1), 0.997}}) {
    CHECK(habitat::mlp::conv_path(q, h100) == ConvPath::fft);
    CHECK(habitat::mlp::conv_work_ms(q, h100) == Approx(habitat::mlp::fft_conv_us(q, h100) / 1e3));
    CHECK(habitat::mlp::conv_work_ms(q, h100) < habitat::mlp::conv_work_ms(q, h100, habitat::mlp::conv_model.coefs, ConvPath::efficiency));
    CHECK(habitat::mlp::physics_kernel_ms(q, h100, 1.0) == Approx(measured_ms).epsilon(0.15));
  }
  CHECK(habitat::mlp::conv_path(conv(OpKind::conv2d, 38, 893, 326, 3, 5, 1, 1), h100) == ConvPath::efficiency);
  CHECK(habitat::mlp::conv_path(conv(OpKind::conv2d, 55, 1701, 569, 3, 5, 1, 1), h100) == ConvPath::efficiency);
  // A ratio is like for like: the origin on the path the destination takes (a V100's Winograd, not the H100's FFT).
  const auto q = conv(OpKind::conv2d, 64, 652, 562, 3, 11, 1, 1);
  REQUIRE(habitat::mlp::conv_path(q, v100) == ConvPath::efficiency);
  const double like_for_like = habitat::mlp::physics_op_ms(q, v100) / habitat::mlp::physics_op_ms(q, h100, ConvPath::efficiency);
  CHECK(habitat::mlp::physics_ratio(q, v100, h100) == Approx(like_for_like));
  CHECK(habitat::mlp::physics_ratio(q, v100, h100) < habitat::mlp::physics_op_ms(q, v100) / habitat::mlp::physics_op_ms(q, h100));
  // The FFT path forced where it does not apply is the efficiency's, not an infinite time.
  const auto strided = conv(OpKind::conv2d, 64, 652, 562, 3, 11, 2, 1);
  CHECK(habitat::mlp::conv_work_ms(strided, h100, habitat::mlp::conv_model.coefs, ConvPath::fft) ==
        Approx(habitat::mlp::conv_work_ms(strided, h100, habitat::mlp::conv_model.coefs, ConvPath::efficiency)));
  // A backward pass (data and weight gradients) takes twice the forward's FFT work, as op_work doubles its FLOPs.
  auto backward = q;
  backward.pass = habitat::ops::Pass::backward;
  CHECK(habitat::mlp::fft_conv_us(backward, h100) == Approx(2 * habitat::mlp::fft_conv_us(q, h100)));
  // cuDNN's grid never does fewer FLOPs than the trace guard's least FFT share allows, and no FFT where the filter is
  // not larger than the padding or the output would be empty (without padding, every input narrower than the filter).
  std::size_t empty = 0;
  for (double ks : {2.0, 3.0, 5.0, 7.0, 11.0})
    for (double pad : {0.0, std::floor(ks / 2)})
      for (double side = 1; side <= 64; ++side) {
        const auto c = conv(OpKind::conv2d, 8, 64, 64, ks, side, 1, pad);
        INFO("k " << ks << " pad " << pad << " side " << side);
        CHECK(habitat::mlp::fft_conv_flops_share(c) >= habitat::ops::fast_conv_flops_share(ks * ks, true));
        if (habitat::ops::conv_out_size(side, ks, 1, pad) < 1) {
          CHECK(habitat::mlp::fft_conv_side(c) == 0);
          ++empty;
        }
      }
  CHECK(empty == 1 + 2 + 4 + 6 + 10);  // without padding, inputs narrower than the filter: 1 for k 2, 1-2 for k 3, ...
  CHECK(habitat::mlp::fft_conv_side(conv(OpKind::conv2d, 8, 64, 64, 7, 5, 1, 0)) == 0);   // a 7x7 filter on 5 x 5
  CHECK(habitat::mlp::fft_conv_side(conv(OpKind::conv2d, 8, 64, 64, 3, 14, 1, 3)) == 0);  // padding 3 >= filter 3
}

TEST_CASE("convolutions: time grows with batch for a fixed shape, on every catalog GPU", "[physics]") {
  const Catalog cat = Catalog::builtin();
  // Compute-heavy, weight-heavy (traffic of the weights amortized over the batch) and activation-heavy shapes.
  const std::vector<OpQuery> shapes = {conv(OpKind::conv2d, 1, 256, 256, 3, 56, 1, 1), conv(OpKind::conv2d, 1, 2048, 2048, 3, 5, 1, 1),
                                       conv(OpKind::conv2d, 1, 3, 64, 3, 224, 1, 1), conv(OpKind::conv_transpose2d, 1, 512, 256, 4, 16, 2, 1)};
  for (const auto& g : cat.devices())
    for (auto q : shapes) {
      double last = 0;
      for (int b = 1; b <= 512; ++b) {
        q.dims[0] = b;
        const double t = habitat::mlp::physics_kernel_ms(q, g, 1.0);
        INFO(g.name << " cin " << q.dims[1] << " cout " << q.dims[2] << " side " << q.dims[4] << " batch " << b << ": " << t << " after "
                    << last);
        REQUIRE(t >= last);
        last = t;
      }
    }
}

TEST_CASE("timed convolutions: the floor line through the tenths' shortest calls", "[physics]") {
  // A third of the calls on a floor of 0.1 ms + 0.1 us per earlier row, the rest far above: the line comes back
  // (a tenth's 2nd percentile sits near its start, about 20 us below its middle: the floor rises along the tenth).
  std::vector<std::pair<double, double>> seq_ms;
  for (int i = 0; i < 5000; ++i) seq_ms.emplace_back(i, (i % 3 == 1 ? 0.1 : 1.0 + (i % 7)) + 1e-4 * i);
  const auto fitted = habitat::opstudy::conv_floor_line(seq_ms);
  REQUIRE(fitted);
  const auto line = *fitted;
  CHECK(line.ms == Approx(0.1).margin(0.006));
  CHECK(line.per_row_ms == Approx(1e-4).epsilon(0.02));
  CHECK(line.at(4000) == Approx(0.5).margin(0.006));
  // A timed convolution on its floor is the floor; above it, the kernel adds to the lead.
  habitat::opstudy::Row r;
  r.q = {OpKind::conv2d, habitat::ops::Pass::forward, habitat::ops::DataType::fp32, {1, 1, 1, 3, 8, 1, 1}};
  r.call_timed = true, r.seq = 1000;
  CHECK(habitat::opstudy::timed_ms(r, 0.01, line) == Approx(line.at(1000)));
  CHECK(habitat::opstudy::timed_ms(r, 2.0, line) == Approx(habitat::opstudy::conv_call_lead * line.at(1000) + 2.0));
  // Without a floor line the call is additive (NeuSight's matrix-math protocol: F.linear's fitted call, 45.0 us).
  CHECK(habitat::opstudy::timed_ms(r, 2.0, std::nullopt) == Approx(2.0 + habitat::gemm::fitted_call_us / 1e3));
  CHECK(habitat::gemm::fitted_call_us > 20);
  CHECK(habitat::gemm::fitted_call_us < 60);
  CHECK(habitat::gemm::fitted_bmm_call_us > 10);
  CHECK(habitat::gemm::fitted_bmm_call_us < habitat::gemm::fitted_call_us);  // bmm's host path is the shorter on every rig
  // A floor that would fall along the file is taken as flat; too few rows give no line at all.
  std::vector<std::pair<double, double>> falling;
  for (int i = 0; i < 1000; ++i) falling.emplace_back(i, 0.5 - 2e-4 * i + (i % 3 == 1 ? 0 : 1));
  const auto flat = habitat::opstudy::conv_floor_line(falling);
  REQUIRE(flat);
  CHECK(flat->per_row_ms == 0);
  CHECK(flat->at(5000) >= 0);
  CHECK_FALSE(habitat::opstudy::conv_floor_line({{0, 0.1}, {1, 0.1}}));
}

TEST_CASE("NeuSight's convolutions: the timed call's floor grows along each file, on every public GPU", "[physics][data]") {
  if (!HABITAT_SHARED_PRESENT) {
    WARN("skipped: NeuSight's public timings live in ../shared beside the checkout");
    return;
  }
  const Catalog cat = Catalog::builtin();
  const auto floors = habitat::opstudy::call_floors(public_rows(cat));
  int public_gpus = 0;
  for (const auto& [key, line] : floors) {
    if (key.second != "conv") continue;
    ++public_gpus;
    INFO(key.first->name << ": " << line.ms * 1e3 << " us + " << line.per_row_ms * 1e6 << " us per 1000 rows");
    // 40-91 us at the first row, 46-160 us more per 1,000 rows (README): the host, not the GPU.
    CHECK((line.ms > 0.03 && line.ms < 0.12));
    CHECK((line.per_row_ms > 4e-5 && line.per_row_ms < 2e-4));
  }
  CHECK(public_gpus == 5);
}

TEST_CASE("convolutions: the shipped efficiency constants are what NeuSight's public timings give", "[physics][accuracy]") {
  if (!HABITAT_SHARED_PRESENT) {
    WARN("skipped: NeuSight's public timings live in ../shared beside the checkout");
    return;
  }
  const Catalog cat = Catalog::builtin();
  const auto rows = public_rows(cat);
  const auto floors = habitat::opstudy::call_floors(rows);
  const auto refit = habitat::opstudy::conv_coefs(rows, floors, nullptr);
  const auto& shipped = habitat::mlp::conv_model.coefs;
  for (std::size_t i = 0; i < habitat::mlp::conv_feature_count; ++i) {
    INFO("coefficient " << i << ": shipped " << shipped.winograd[i] << ", re-fit " << refit.winograd[i]);
    CHECK(shipped.winograd[i] == Approx(refit.winograd[i]).margin(0.002));
  }
  // The physical signs: efficiency rises with tile use, reduction depth, waves and the algorithm's own efficiency,
  // and with Winograd falls with the output channels. So they are, and the q and algorithm terms within their tie,
  // with each GPU left out too.
  for (const habitat::Device* left : {static_cast<const habitat::Device*>(nullptr), cat.find("V100 PCIe 32GB"), cat.find("P4"), cat.find("T4"),
                             cat.find("A100 PCIe 80GB"), cat.find("P100"), cat.find("H100 SXM"), cat.find("H200")}) {
    const auto sets = left ? habitat::opstudy::conv_coefs(rows, floors, left) : refit;
    const auto& c = sets.winograd;
    INFO((left ? left->name : "none") << " left out: " << c[1] << " " << c[2] << " " << c[3] << " " << c[4]);
    CHECK((c[1] > 0 && c[2] > 0 && c[3] > 0 && c[4] > 0));
    CHECK(c[1] + c[4] <= habitat::opstudy::conv_q_alg_max + 1e-9);
    CHECK(c[5] < 0);
  }
  // cuDNN 9's implicit GEMM share of the tile model's rate: what habitat's Hopper rows give, the same from either GPU
  // alone (a property of cuDNN's kernels on one architecture), and a share.
  CHECK(shipped.cudnn9_implicit_share == Approx(refit.cudnn9_implicit_share).margin(0.002));
  for (const char* gpu : {"H100 SXM", "H200"}) {
    const double without = habitat::opstudy::cudnn9_implicit_share(rows, cat.find(gpu));
    INFO("without the " << gpu << ": " << without);
    CHECK(without == Approx(shipped.cudnn9_implicit_share).margin(0.01));
    CHECK((without > 0 && without <= 1));
  }
  // The fused Winograd kernels' share of their ideal rate: what the public rows give, and from any four of the
  // five GPUs within a few points (a property of cuDNN's kernels, not of one GPU), and a share.
  CHECK(habitat::mlp::fused_winograd_efficiency == Approx(refit.fused_winograd).margin(0.002));
  for (const char* gpu : {"V100 PCIe 32GB", "P4", "T4", "A100 PCIe 80GB", "P100"}) {
    const double without = habitat::opstudy::fused_winograd_share(rows, floors, cat.find(gpu));
    INFO("without the " << gpu << ": " << without);
    CHECK(without == Approx(habitat::mlp::fused_winograd_efficiency).margin(0.04));
    CHECK((without > 0 && without <= 1));
  }
  // FFT convolution's share of its ideal rate: what habitat's Hopper rows that cuDNN ran as FFT give, from either alone
  // within a few points (a property of cuDNN's kernels, not of one GPU), and a share.
  CHECK(habitat::mlp::fft_conv_efficiency == Approx(habitat::opstudy::fft_efficiency(rows, nullptr)).margin(0.002));
  for (const char* gpu : {"H100 SXM", "H200"}) {
    const double without = habitat::opstudy::fft_efficiency(rows, cat.find(gpu));
    INFO("without the " << gpu << ": " << without);
    CHECK(without == Approx(habitat::mlp::fft_conv_efficiency).margin(0.02));
    CHECK((without > 0 && without <= 1));
  }
  std::size_t fft_rows = 0;
  for (const auto& r : rows) fft_rows += r.fft && !r.call_timed;
  CHECK(fft_rows > 1500);  // 769 on the H100, 870 on the H200
}

TEST_CASE("physics op model, one GPU left out: elementwise, layer norm and softmax on NeuSight's GPUs and habitat's", "[physics][accuracy]") {
  if (!HABITAT_SHARED_PRESENT) {
    WARN("skipped: NeuSight's public timings live in ../shared beside the checkout");
    return;
  }
  const Catalog cat = Catalog::builtin();
  const auto rows = public_rows(cat);
  REQUIRE(rows.size() > 100000);
  std::map<std::string, std::map<std::string, habitat::opstudy::ErrorRow>> by;
  for (const auto& e : habitat::opstudy::leave_one_gpu_out(rows, cat)) by[e.gpu][e.op] = e;
  // Bounds a little above what the model measures (the closing notes of issue 20 give the table); the
  // power-capped GDDR cards, whose hosts' floors are the shipped median's (26 us for add; left out, the mean of the
  // middle two of the other four, 29 us), within 8% on every elementwise operator (P4 1.9-5.3%, T4 2.2-7.0%), softmax 10.8% / 9.6%, layer norm 9.2% / 11.3%.
  for (const char* gpu : {"P4", "T4"})
    for (const char* op : {"add", "addu", "mul", "mulu", "div", "divu", "pow", "powu", "relu", "tanh", "gelu", "ln", "softmax"}) {
      const auto& e = by[gpu][op];
      INFO(gpu << " " << op << ": " << e.model << " (bandwidth ratio " << e.bandwidth << ")");
      CHECK(e.model < (std::string(op) == "softmax" ? 0.12 : std::string(op) == "ln" ? 0.12 : 0.08));
      CHECK(e.model < e.bandwidth);
    }
  // habitat's own kernel-timed H100 and H200 rows: the L2's rate and hit curve, the issue costs and pow's and
  // division's fixed part carry from the other (README: 8.5-20.1% before the hit curve, 3.5-13.8% after; the
  // shortest kernel's time, 1.25 us on the H100's machine and 1.0 on the H200's, does not).
  for (const char* op : {"add", "addu", "mul", "mulu", "div", "divu", "pow", "powu", "relu", "tanh", "gelu"}) {
    INFO(op << ": H100 " << by["H100 SXM"][op].model << ", H200 " << by["H200"][op].model);
    CHECK(by["H100 SXM"][op].model < 0.14);
    CHECK(by["H200"][op].model < 0.15);
  }
  // Layer norm's and softmax's fixed part (their reductions' latency): the shipped constants are what the study
  // derives from every GPU, and leaving a Hopper GPU out it carries from the other (README: H100 layer norm 26.0%
  // -> 19.4%, H200 32.5% -> 13.2%, while every kernel had the shortest add kernel's 1.1 us).
  CHECK(habitat::opstudy::fixed_ms(rows, habitat::ops::OpKind::layer_norm, nullptr) == Approx(habitat::mlp::op_physics_shares.norm_floor_ms).epsilon(0.01));
  CHECK(habitat::opstudy::fixed_ms(rows, habitat::ops::OpKind::softmax, nullptr) == Approx(habitat::mlp::op_physics_shares.softmax_floor_ms).epsilon(0.01));
  CHECK(habitat::mlp::op_physics_shares.norm_floor_ms > 2 * habitat::mlp::op_physics_shares.kernel_floor_ms);
  // Layer norm with its issue cost per element and per row, its working set in L2 and its rows' latency, each
  // derived from the other Hopper GPU (README: H100 16.4% -> 11.0%, H200 13.9% -> 10.5%).
  CHECK(by["H100 SXM"]["ln"].model < 0.12);
  CHECK(by["H200"]["ln"].model < 0.12);
  const auto ln_cost = *habitat::opstudy::fit_issue_cost(rows, "ln", nullptr);
  const auto* shipped_ln = habitat::mlp::find_issue_cost("ln");
  REQUIRE(shipped_ln);
  CHECK(ln_cost.per_row == Approx(shipped_ln->per_row).epsilon(0.01));
  CHECK(ln_cost.per_row > 0);
  const auto norm_row = habitat::opstudy::row_latency(rows, habitat::ops::OpKind::layer_norm, nullptr);
  CHECK(norm_row.base_ms == Approx(habitat::mlp::norm_row_latency.base_ms).epsilon(0.02));
  CHECK(norm_row.clk_per_element == Approx(habitat::mlp::norm_row_latency.clk_per_element).epsilon(0.02));
  // The shipped issue costs and fixed parts are what the study derives from both Hopper GPUs.
  for (const auto& c : habitat::mlp::issue_costs) {
    INFO(c.op);
    CHECK(habitat::opstudy::issue_cost(rows, std::string(c.op), nullptr) == Approx(c.per_element).epsilon(0.01));
    CHECK(habitat::opstudy::issue_fixed_ms(rows, std::string(c.op), nullptr) == Approx(c.fixed_ms).epsilon(0.01));
  }
  CHECK(habitat::opstudy::fixed_ms(rows, habitat::ops::OpKind::elementwise, nullptr) ==
        Approx(habitat::mlp::op_physics_shares.kernel_floor_ms).epsilon(0.05));
  const auto l2 = habitat::opstudy::l2_reuse(rows, nullptr);
  CHECK(l2.bytes_per_clk_per_sm == Approx(habitat::mlp::l2_reuse.bytes_per_clk_per_sm));
  CHECK(l2.hit_exponent == Approx(habitat::mlp::l2_reuse.hit_exponent));
  // A softmax row run by one warp: its latency, derived from the other Hopper GPU, carries (README: H100 softmax
  // 24.6% -> 20.5%, H200 22.4% -> 18.3%; with softmax's L2 rate and issue costs 10.1% and 12.4%); the shipped
  // constants are what the study derives from both.
  const auto row = habitat::opstudy::row_latency(rows, habitat::ops::OpKind::softmax, nullptr);
  CHECK(row.base_ms == Approx(habitat::mlp::softmax_row_latency.base_ms).epsilon(0.02));
  CHECK(row.clk_per_element == Approx(habitat::mlp::softmax_row_latency.clk_per_element).epsilon(0.02));
  CHECK(by["H100 SXM"]["softmax"].model < 0.12);
  CHECK(by["H200"]["softmax"].model < 0.14);
  // With its own host's floor, every public GPU's elementwise error is the GPU physics' alone: within 11%
  // (pow with a scalar 13%), where the median floor of the other hosts leaves the P100 at 27-35% (gelu 10%).
  for (const char* gpu : {"P4", "T4", "V100 PCIe 32GB", "A100 PCIe 40GB", "P100"})
    for (const char* op : {"add", "addu", "mul", "mulu", "div", "divu", "pow", "powu", "relu", "tanh", "gelu"}) {
      const auto& e = by[gpu][op];
      INFO(gpu << " " << op << ": " << e.model_own_floor);
      REQUIRE(std::isfinite(e.model_own_floor));
      CHECK(e.model_own_floor < (std::string(op) == "powu" ? 0.13 : 0.11));
    }
  // Convolutions: the efficiency model fitted without the GPU beats "same time" from the H100 everywhere, and
  // stays within bounds a little above what it measures (README, fixtures/op_study.md): with the other hosts'
  // median floor line V100 25.5%, P4 18.2%, T4 14.6%, A100 20.9%, P100 18.9%; with its own host's floor line
  // 17.6%, 17.4%, 14.9%, 15.9%, 14.0%; Hopper (kernel times; cuDNN 9's implicit GEMMs through the tile model on its
  // tiles and the FFT's share of its ideal rate, both from the other Hopper GPU, FFT where shorter) H100 13.1%, H200
  // 13.6% (14.6% and 15.2% with a log-linear set of their own, 18.8% and 19.4% with one set for both libraries). The
  // ratio from the H100 beats its FLOPS ratio on every public GPU and stays within bounds (34.2%, 24.7%, 22.7%, 27.9%,
  // 25.0%: worse than the direct model, as the two libraries' models share no form; 29.6%, 20.1%, 20.0%, 24.9%, 21.8%
  // when both were log-linear); to the H200 3.0%, worse than "same time" (2.0%: the two GPUs run the same kernels at
  // nearly the same speed, where the FFT's traffic term sees their different bandwidths).
  struct ConvBounds {
    double model, own, ratio;
  };
  for (const auto& [gpu, b] : std::map<std::string, ConvBounds>{{"V100 PCIe 32GB", {0.265, 0.185, 0.355}},
                                                                {"P4", {0.195, 0.19, 0.26}},
                                                                {"T4", {0.155, 0.16, 0.24}},
                                                                {"A100 PCIe 80GB", {0.22, 0.17, 0.29}},
                                                                {"P100", {0.2, 0.15, 0.26}},
                                                                {"H100 SXM", {0.14, 1, 1}},
                                                                {"H200", {0.145, 1, 1}}}) {
    const auto& e = by[gpu]["conv"];
    INFO(gpu << " conv: " << e.model << " (own host's floor " << e.model_own_floor << ", same time " << e.same << ", ratio from " << e.origin
              << " " << e.ratio << ", FLOPS ratio " << e.flops << ")");
    CHECK(e.model < b.model);
    if (gpu != "H200" && gpu != "H100 SXM") {
      CHECK(e.model < e.same);
      CHECK(e.model_own_floor < b.own);
      CHECK(e.ratio < b.ratio);
      CHECK(e.ratio < e.flops);
    }
    if (gpu == "H200") CHECK(e.ratio < 0.04);
  }
}

TEST_CASE("physics op model in BF16: the H200's memory-bound operators from constants derived in FP32 without it", "[physics][accuracy][bf16]") {
  // data/opdata/h200_neusight_bf16: NeuSight's configurations of layer norm, softmax and the eleven elementwise
  // operators on BF16 tensors, CUPTI kernel times on an H200 (measure_neusight_ops.py --dtype bf16). Every
  // constant of the model was derived from FP32 rows, and here without the H200's own: a check that the physics
  // (bytes, L2 reuse, issue costs, rows' latency) carries to another precision. Baselines: the same
  // configuration's FP32 kernel time on the H200 (same time), and that times the ratio of the bytes moved.
  if (!HABITAT_SHARED_PRESENT) {
    WARN("skipped: the constants are derived from NeuSight's public timings in ../shared");
    return;
  }
  const Catalog cat = Catalog::builtin();
  const auto rows = public_rows(cat);
  const auto& h200 = cat.at("H200");
  const auto bf16 = habitat::opstudy::load_folder(fs::path(HABITAT_FIXTURES) / ".." / "data" / "opdata" / "h200_neusight_bf16", h200);
  REQUIRE(bf16.size() > 20000);
  std::map<std::string, habitat::opstudy::ErrorRow> left_out;
  for (const auto& e : habitat::opstudy::leave_one_gpu_out(rows, cat))
    if (e.gpu == "H200") left_out[e.op] = e;
  using Key = std::pair<std::string, habitat::ops::Dims>;
  std::map<Key, double> fp32_ms;
  for (const auto& r : rows)
    if (r.gpu == &h200) fp32_ms[{r.op, r.q.dims}] = r.measured_ms;
  const habitat::Device unseen = habitat::study::unseen(h200, habitat::opstudy::gpus_of(rows));
  struct Acc {
    int n = 0;
    double model = 0, signed_model = 0, same = 0, bytes = 0;
  };
  std::map<std::string, Acc> by;
  for (const auto& r : bf16) {
    REQUIRE(r.q.dtype == habitat::ops::DataType::bf16);
    const auto fp = fp32_ms.find({r.op, r.q.dims});
    if (fp == fp32_ms.end()) continue;
    auto q32 = r.q;
    q32.dtype = habitat::ops::DataType::fp32;
    const double byte_ratio = habitat::ops::op_work(r.q.op, r.q.dims, r.q.dtype, r.q.pass).bytes /
                              habitat::ops::op_work(q32.op, q32.dims, q32.dtype, q32.pass).bytes;
    const double model = left_out.at(r.op).kernel_ms(r.q, unseen);
    REQUIRE(std::isfinite(model));
    Acc& a = by[r.op];
    ++a.n;
    a.model += std::abs(model / r.measured_ms - 1);
    a.signed_model += model / r.measured_ms - 1;
    a.same += std::abs(fp->second / r.measured_ms - 1);
    a.bytes += std::abs(fp->second * byte_ratio / r.measured_ms - 1);
  }
  std::printf("\nH200, BF16 tensors, kernel time, MAPE: physics model (FP32 constants, H200 left out; its mean signed error) | FP32 time | FP32 time x byte ratio\n");
  double sum = 0, sum_same = 0, sum_bytes = 0;
  for (const auto& [op, a] : by) {
    std::printf("  %-8s n=%4d  %6.1f%% (%+6.1f%%) | %6.1f%% | %6.1f%%\n", op.c_str(), a.n, 100 * a.model / a.n, 100 * a.signed_model / a.n, 100 * a.same / a.n,
                100 * a.bytes / a.n);
    sum += a.model / a.n, sum_same += a.same / a.n, sum_bytes += a.bytes / a.n;
  }
  const double k = double(by.size());
  std::printf("  mean of %zu operators: %.1f%% | %.1f%% | %.1f%%\n", by.size(), 100 * sum / k, 100 * sum_same / k, 100 * sum_bytes / k);
  REQUIRE(by.size() == 13);
  CHECK(sum / k < sum_bytes / k);
  CHECK(sum / k < sum_same / k);
  // The byte-bound operators carry within 14% (measured 9.5-12.7%, mostly the H100 machine's longer shortest
  // kernel, +6% to +13% signed). Layer norm, relu and tanh do not (+34%, +29%, +13%): their issue costs were fitted per element in FP32, and part of them is per 16-byte vector, which holds 8
  // BF16 elements (ATen's vectorized_elementwise_kernel<8>) where it holds 4 FP32 ones (README: what is left).
  for (const char* op : {"add", "addu", "mul", "mulu", "divu"}) {
    INFO(op << ": " << by[op].model / by[op].n);
    CHECK(by[op].model / by[op].n < 0.14);
  }
}
