// The GEMM tile model: physically sensible on its own (monotone in work, never below the roofline, tiles
// that fit the problem), its ratio in traces, and where the default predictor uses it.
#include <catch2/catch.hpp>

#include "fixtures.hpp"
#include "habitat/habitat.hpp"
#include "habitat/kineto/reader.hpp"
#include "habitat/predict/gemm_per_op.hpp"
#include "habitat/predict/gemm_tile_predictor.hpp"

using namespace habitat;

TEST_CASE("tile model: more work takes longer, never below the roofline, on every catalog GPU", "[tile]") {
  const Catalog cat = Catalog::builtin();
  for (const auto& g : cat.devices()) {
    INFO(g.name);
    double last = 0;
    for (double k : {64.0, 256.0, 1024.0, 4096.0, 16384.0}) {
      const gemm::Shape s{1, 4096, 4096, k};
      const auto e = gemm::estimate(s, g, gemm::fitted);
      CHECK(std::isfinite(e.us));
      CHECK(e.us > last);
      // The model itself (before estimate's clamp) respects the roofline: eff <= 1 at a sustained clock
      // at most the peak one, bytes at a sustained bandwidth below the spec.
      const auto raw = gemm::estimate_at(s, g, gemm::fitted, g.load_clock_mhz(Precision::fp32));
      const double bound = roofline_bound(2 * 4096.0 * 4096 * k, 4 * (4096.0 * k * 2 + 4096.0 * 4096), Precision::fp32, g).bound_us();
      CHECK(raw.us >= bound);
      last = e.us;
    }
    // BF16 on tensor cores is faster than FP32 where the GPU has them.
    gemm::Shape f{1, 8192, 8192, 8192}, b = f;
    b.precision = Precision::bf16, b.elem_bytes = 2;
    if (g.tensor.bf16 > 0) CHECK(gemm::estimate(b, g, gemm::fitted).us < gemm::estimate(f, g, gemm::fitted).us);
  }
}

TEST_CASE("tile model: small problems pick small tiles, large ones large tiles", "[tile]") {
  const Catalog cat = Catalog::builtin();
  const auto& a100 = cat.at("A100 PCIe 40GB");
  const auto small = gemm::estimate({1, 32, 32, 4096}, a100, gemm::fitted);
  const auto large = gemm::estimate({1, 8192, 8192, 4096}, a100, gemm::fitted);
  CHECK(small.tile.tm * small.tile.tn < large.tile.tm * large.tile.tn);
  CHECK(large.waves > small.waves);
}

TEST_CASE("tile model: the library picks from its architecture's tiles (cuBLAS 12.1's kernel names)", "[tile]") {
  const Catalog cat = Catalog::builtin();
  const auto tile_of = [&](const char* gpu, gemm::Shape s) { return gemm::estimate(s, cat.at(gpu), gemm::fitted).tile; };
  // A batched product of 27 x 390 per batch (NeuSight's bmm row 1 on the A100: ampere_sgemm_128x128, grid 4 x 1 x 6).
  gemm::Shape bmm{6, 27, 390, 21, false};
  CHECK(tile_of("A100 PCIe 40GB", bmm).tm == 128);
  CHECK(tile_of("A100 PCIe 40GB", bmm).tn == 128);
  // Pascal: maxwell_sgemm_128x64, 128 output columns by 64 rows.
  CHECK(tile_of("P100", bmm).tm == 64);
  CHECK(tile_of("P100", bmm).tn == 128);
  // Volta and Hopper choose: a small tile for small outputs.
  CHECK(tile_of("V100 PCIe 32GB", bmm).tm * tile_of("V100 PCIe 32GB", bmm).tn < 128 * 128);
  CHECK(tile_of("H100 SXM", bmm).tm * tile_of("H100 SXM", bmm).tn < 128 * 128);
  // cuDNN's kernels (a convolution's Winograd GEMMs) are not held to cuBLAS's lists.
  gemm::Shape cudnn = bmm;
  cudnn.blas = false;
  CHECK(tile_of("A100 PCIe 40GB", cudnn).tm * tile_of("A100 PCIe 40GB", cudnn).tn < 128 * 128);
  // On tensor cores the A100 is not held to its SIMT kernel.
  gemm::Shape bf16 = bmm;
  bf16.precision = Precision::bf16, bf16.elem_bytes = 2;
  CHECK(tile_of("A100 PCIe 40GB", bf16).tm * tile_of("A100 PCIe 40GB", bf16).tn < 128 * 128);
  // Pascal's single nn GEMMs take its batched kernel too (untimed: an assumption); K still splits where SMs idle
  // (its x @ W^T runs splitKreduce on 727 public rows).
  gemm::Shape nn{1, 4096, 4096, 1024, true, false};
  CHECK(tile_of("P4", nn).tm == 64);
  CHECK(tile_of("P4", nn).tn == 128);
  gemm::Shape deep{1, 30, 72, 62196, true, true}, deep_batched = deep;
  deep_batched.shared_weight = false;
  CHECK(gemm::estimate(deep, cat.at("P100"), gemm::fitted).us < 0.5 * gemm::estimate(deep_batched, cat.at("P100"), gemm::fitted).us);
  // A batched x @ W^T (attention's q @ k^T; every public bmm row is nn) chooses, on both.
  gemm::Shape bmm_tn = bmm;
  bmm_tn.transposed_b = true;
  for (const char* gpu : {"A100 PCIe 40GB", "P100"}) CHECK(gemm::library_tiles(bmm_tn, cat.at(gpu)).size() == gemm::simt_legacy_tiles.size());
  // TF32 on the A100 runs on its tensor cores (any tile); on the V100, which has none for it, as FP32.
  gemm::Shape tf32 = bmm;
  tf32.precision = Precision::tf32;
  CHECK(tile_of("A100 PCIe 40GB", tf32).tm * tile_of("A100 PCIe 40GB", tf32).tn < 128 * 128);
  CHECK(gemm::library_tiles(tf32, cat.at("V100 PCIe 32GB")).size() == gemm::library_tiles(bmm, cat.at("V100 PCIe 32GB")).size());
  // AMD GPUs choose among all nine.
  for (const auto& g : cat.devices())
    if (!g.nvidia()) CHECK(gemm::library_tiles(bmm, g).size() == gemm::candidate_tiles.size());
  // No SIMT SGEMM before Hopper is larger than 128x128 (sm_86 and sm_89 assumed so); Hopper's CUTLASS kernels are.
  const gemm::Shape large{1, 16384, 16384, 4096};
  for (const char* gpu : {"A100 PCIe 40GB", "V100 PCIe 32GB", "T4", "P100", "L4"}) CHECK(tile_of(gpu, large).tm * tile_of(gpu, large).tn <= 128 * 128);
  CHECK(tile_of("H100 SXM", large).tm * tile_of("H100 SXM", large).tn > 128 * 128);
}

TEST_CASE("tile model: Pascal's x @ W^T kernels slow with a deep reduction, nothing else does", "[tile]") {
  const Catalog cat = Catalog::builtin();
  const auto us = [&](const char* gpu, double k, bool tn, const gemm::Params& p = gemm::fitted) {
    return gemm::estimate({1, 4096, 1024, k, true, tn}, cat.at(gpu), p).us;
  };
  gemm::Params off = gemm::fitted;
  off.legacy_long_k_loss = 0;
  REQUIRE(gemm::fitted.legacy_long_k_loss > 0);
  const double deep = 4 * gemm::fitted.legacy_long_k, shallow = gemm::fitted.legacy_long_k / 2;
  // On the P100 the deep tn GEMM is slower than without the term, and its time grows faster with K than the V100's.
  CHECK(us("P100", deep, true) > 1.2 * us("P100", deep, true, off));
  CHECK(us("P100", deep, true) / us("P100", shallow, true) > 1.2 * us("V100 PCIe 32GB", deep, true) / us("V100 PCIe 32GB", shallow, true));
  // Below K0, in the nn layout, and on later GPUs, the term changes nothing.
  CHECK(us("P100", shallow, true) == us("P100", shallow, true, off));
  CHECK(us("P4", deep, false) == us("P4", deep, false, off));
  for (const char* gpu : {"V100 PCIe 32GB", "T4", "A100 PCIe 40GB", "H100 SXM"}) CHECK(us(gpu, deep, true) == us(gpu, deep, true, off));
}

TEST_CASE("tile model: Hopper's split-K SGEMMs run on older kernels, no other GEMM does", "[tile]") {
  const Catalog cat = Catalog::builtin();
  const gemm::Params& off = gemm::residual_base;
  REQUIRE(gemm::fitted.split_share < 1);
  REQUIRE(off.split_share == 1);
  const auto us = [&](const char* gpu, const gemm::Shape& s, const gemm::Params& p = gemm::fitted) { return gemm::estimate(s, cat.at(gpu), p).us; };
  // x[231, 3405] @ W^T[3405, 269]: a few output tiles over a deep K, which cuBLAS 13 splits on the H100 (sgemm_largek).
  const gemm::Shape deep{1, 231, 269, 3405, true, true};
  for (const char* gpu : {"H100 SXM", "H200", "B200"}) {
    INFO(gpu);
    CHECK(us(gpu, deep) > 1.1 * us(gpu, deep, off));
    gemm::Shape bf16 = deep;  // on tensor cores: other kernels, unmeasured
    bf16.precision = Precision::bf16, bf16.elem_bytes = 2;
    CHECK(us(gpu, bf16) == us(gpu, bf16, off));
    gemm::Shape tf32 = deep;  // TF32 on Hopper's tensor cores: not the SGEMMs
    tf32.precision = Precision::tf32;
    CHECK(us(gpu, tf32) == us(gpu, tf32, off));
    const gemm::Shape large{1, 4096, 4096, 4096, true, true};  // fills the GPU unsplit
    CHECK(us(gpu, large) == us(gpu, large, off));
    // Thin GEMMs (a side under thin_gemm_side) go to cuBLAS's gemv-like kernels, whose splits the share is not of.
    const gemm::Shape thin{1, gemm::thin_gemm_side - 1, 269, 30000, true, true}, wider{1, gemm::thin_gemm_side, 269, 30000, true, true};
    CHECK(us(gpu, thin) == us(gpu, thin, off));
    CHECK(us(gpu, wider) > us(gpu, wider, off));
  }
  for (const char* gpu : {"A100 PCIe 40GB", "V100 PCIe 32GB", "T4", "P100"}) CHECK(us(gpu, deep) == us(gpu, deep, off));
}

TEST_CASE("per-operation GEMMs on Hopper: the split share moves the calibrated model, not the residual's answers", "[tile]") {
  const Catalog cat = Catalog::builtin();
  const gemm::Shape tn{1, 231, 269, 3405, true, true};  // nn.Linear's layout: in the sm_90 residual's shapes
  gemm::Shape nn = tn;                                  // the same GEMM as x @ W (GPT-2's Conv1D): outside them
  nn.transposed_b = false;
  for (const char* name : {"H100 SXM", "H200"}) {
    INFO(name);
    const Device& g = cat.at(name);
    const auto covered = gemm::per_op_time_us(tn, g, 0), outside = gemm::per_op_time_us(nn, g, 0);
    REQUIRE(covered.by == gemm::PerOpTime::By::residual);
    REQUIRE(outside.by == gemm::PerOpTime::By::outside_residual);
    CHECK(covered.us == gemm::per_op_time_us(tn, g, 0, gemm::residual_base).us);
    CHECK(outside.us > 1.1 * gemm::per_op_time_us(nn, g, 0, gemm::residual_base).us);  // split, at the share
    // Physics scaling's layout factor compares the two layouts on the residuals' base, the share off on both sides.
    CHECK(gemm::layout_preference(nn, g) ==
          Approx(std::sqrt(gemm::per_op_time_us(nn, g, 0, gemm::residual_base).us / gemm::per_op_time_us(tn, g, 0, gemm::residual_base).us)));
  }
}

TEST_CASE("tile model in a trace: every GEMM kernel by its ratio, or only launches that do not fit", "[tile]") {
  const Catalog cat = Catalog::builtin();
  const Trace t = kineto::read_trace(test::fixture("h100", "encoder_fp32_b16"));
  const Device o = resolve_origin(cat, t, std::nullopt);
  const auto work = kernel_work(t);
  const auto& t4 = cat.at("T4");
  const auto every = predict_trace(t, work, o, t4, gemm::TilePredictor(RooflineScaling{}, t, gemm::TileUse::every_gemm));
  const auto unfit = predict_trace(t, work, o, t4, gemm::TilePredictor(RooflineScaling{}, t));
  const auto plain = predict_trace(t, work, o, t4, RooflineScaling{});
  CHECK(every.origin_us(Method::tile_model) > 0);
  CHECK(every.origin_us(Method::tile_model) > 0.3 * t.gpu_active_us());  // a transformer: mostly GEMMs
  // Without unfit launches the default is roofline scaling kernel for kernel, a GEMM's math kernels times its
  // layout preference on the T4 relative to the H100's: within 0.4-1.6x for each, a few percent over all.
  const auto shapes = gemm::op_shapes(t);
  std::size_t moved = 0;
  double with = 0, without = 0;
  for (std::size_t i = 0; i < t.kernels.size(); ++i) {
    if (plain.kernels[i].method == Method::roofline_operation) continue;
    const auto& k = t.kernels[i];
    const bool gemm = k.op >= 0 && shapes[static_cast<std::size_t>(k.op)] && detail::is_math_kernel(k.name);
    INFO(k.name);
    if (!gemm) CHECK(unfit.kernels[i].duration_us == plain.kernels[i].duration_us);
    else CHECK(unfit.kernels[i].duration_us / plain.kernels[i].duration_us == Approx(1).epsilon(0.6));
    moved += gemm && unfit.kernels[i].duration_us != plain.kernels[i].duration_us;
    if (gemm) with += unfit.kernels[i].duration_us, without += plain.kernels[i].duration_us;
  }
  CHECK(moved > 0);
  CHECK(with / without == Approx(1).epsilon(0.08));
  // Onto its own GPU the ratio and the layout preference are 1.
  const auto same = predict_trace(t, work, o, o, gemm::TilePredictor(RooflineScaling{}, t, gemm::TileUse::every_gemm));
  for (std::size_t i = 0; i < t.kernels.size(); ++i)
    if (same.kernels[i].method == Method::tile_model) CHECK(same.kernels[i].duration_us == Approx(t.kernels[i].duration_us));
  const auto same_default = predict_trace(t, work, o, o, gemm::TilePredictor(RooflineScaling{}, t));
  const auto same_plain = predict_trace(t, work, o, o, RooflineScaling{});
  for (std::size_t i = 0; i < t.kernels.size(); ++i) CHECK(same_default.kernels[i].duration_us == Approx(same_plain.kernels[i].duration_us));
}

TEST_CASE("a GEMM scaled by physics takes the destination's layout preference: Pascal's slow tn SGEMMs", "[tile]") {
  // On the P4 NeuSight's nn.Linear calls (x @ W^T, `tn`) run at a third to a half of the rate of the same shapes
  // as x @ W (`nn`); the H100 runs both alike. BERT's nn.Linear GEMMs come out slower than roofline scaling says,
  // GPT-2's Conv1D GEMMs (x @ W, read from the trace's strides) faster. On the A100 the two layouts move little.
  const Catalog cat = Catalog::builtin();
  const Device& h100 = cat.at("H100 SXM");
  auto gemm_ratio = [&](const char* trace, const char* gpu) {
    const Trace t = kineto::read_trace(std::string(HABITAT_FIXTURES) + "/neusight_e2e/h100/" + trace + ".json.gz");
    const auto work = kernel_work(t);
    const auto shapes = gemm::op_shapes(t);
    const auto with = predict_trace(t, work, h100, cat.at(gpu), gemm::TilePredictor(RooflineScaling{}, t));
    const auto plain = predict_trace(t, work, h100, cat.at(gpu), RooflineScaling{});
    double a = 0, b = 0;
    for (std::size_t i = 0; i < t.kernels.size(); ++i) {
      const auto& k = t.kernels[i];
      if (k.op < 0 || !shapes[static_cast<std::size_t>(k.op)] || !detail::is_math_kernel(k.name) || t.ops[static_cast<std::size_t>(k.op)].name != "aten::addmm") continue;
      a += with.kernels[i].duration_us, b += plain.kernels[i].duration_us;
    }
    REQUIRE(b > 0);
    return a / b;
  };
  CHECK(gemm_ratio("bert_large-inf-512-8", "P4") > 1.2);
  CHECK(gemm_ratio("gpt2_large-inf-1024-4", "P4") < 0.9);
  CHECK(gemm_ratio("bert_large-inf-512-8", "A100 PCIe 40GB") == Approx(1).epsilon(0.1));
  CHECK(gemm_ratio("gpt2_large-inf-1024-4", "A100 PCIe 40GB") == Approx(1).epsilon(0.1));
}

TEST_CASE("library efficiency applies to FP32 GEMMs of measured GPUs only", "[tile]") {
  const Catalog cat = Catalog::builtin();
  gemm::Shape s{1, 1024, 1024, 1024, true, true};
  CHECK(gemm::library_efficiency(cat.at("L4"), s) == 1.0);  // never measured
  CHECK(gemm::library_efficiency(cat.at("P4"), s) != 1.0);
  s.precision = Precision::bf16;
  CHECK(gemm::library_efficiency(cat.at("P4"), s) == 1.0);
}

TEST_CASE("per-operation GEMMs: one residual per architecture, FP32 on NVIDIA GPUs of a measured compute capability only", "[tile]") {
  const Catalog cat = Catalog::builtin();
  gemm::Shape s{1, 1024, 1024, 1024, true, true};
  s.timed_alone = true;
  const auto by = [&](const char* gpu) { return gemm::per_op_time_us(s, cat.at(gpu), gemm::timed_call_us(s)).label(); };
  const auto factor = [&](const char* gpu) {
    const auto& g = cat.at(gpu);
    return gemm::per_op_time_us(s, g, gemm::timed_call_us(s)).us / (gemm::estimate(s, g, gemm::fitted).us + gemm::timed_call_us(s));
  };
  CHECK(by("L4") == "tile");       // sm_89: no GPU of it measured
  CHECK(by("MI250X") == "tile");   // AMD, whatever number its gfx target has
  CHECK(by("P4") == "tile + sm_61 residual");
  CHECK(factor("P4") != Approx(1.0));
  // GPUs of one compute capability run the same library: a residual of kernel sums serves all of them, with their own
  // tile model; one of timed calls holds its rig too and serves the boards it was fitted on only.
  REQUIRE(gemm::arch_residual(cat.at("H100 SXM")) != nullptr);
  CHECK(gemm::arch_residual(cat.at("H100 PCIe")) == gemm::arch_residual(cat.at("H100 SXM")));
  CHECK(gemm::arch_residual(cat.at("GH200 96GB")) == gemm::arch_residual(cat.at("H200")));
  REQUIRE(gemm::arch_residual(cat.at("A100 PCIe 40GB")) != nullptr);
  CHECK(gemm::arch_residual(cat.at("A100 PCIe 40GB")) != gemm::arch_residual(cat.at("H100 SXM")));
  CHECK(gemm::arch_residual(cat.at("A100 SXM4 80GB")) == nullptr);
  CHECK(gemm::arch_residual(cat.at("P4000")) == nullptr);
  CHECK(gemm::arch_residual(cat.at("RTX 2080 Ti")) == nullptr);
  CHECK(by("P4000") == "tile");
  // A linear of batch B is one GEMM of B x M rows, as the fitted linear rows (all of batch 1) were.
  gemm::Shape batched = s, folded = s;
  batched.batch = 4, batched.m = 256, folded.m = 1024;
  CHECK(gemm::per_op_time_us(batched, cat.at("P4"), gemm::timed_call_us(s)).label() == "tile + sm_61 residual");
  CHECK(gemm::per_op_time_us(batched, cat.at("P4"), gemm::timed_call_us(s)).us == Approx(gemm::per_op_time_us(folded, cat.at("P4"), gemm::timed_call_us(s)).us));
  // Far beyond the shapes it was fitted on it steps aside and says so.
  gemm::Shape huge = s;
  huge.m = huge.n = huge.k = 1 << 16;
  CHECK(gemm::per_op_time_us(huge, cat.at("P4"), gemm::timed_call_us(s)).label() == "tile (outside the sm_61 residual's shapes)");
  s.precision = Precision::bf16;
  CHECK(by("P4") == "tile");
}

TEST_CASE("per-operation GEMMs: finite, bounded by the clamp, on every catalog GPU and far outside the fitted shapes", "[tile]") {
  const Catalog cat = Catalog::builtin();
  for (const auto& g : cat.devices())
    for (double m : {1.0, 7.0, 4096.0, 1e6})
      for (double k : {1.0, 300.0, 1e5})
        for (bool tn : {false, true}) {
          gemm::Shape s{tn ? 1.0 : 64.0, m, 512, k, tn, tn};
          s.timed_alone = true;
          // The residual scales the tile model it was fitted on (without the GPU's library efficiency or Hopper's split
          // share); outside it, the calibrated one answers.
          const double plain = gemm::estimate(s, g, gemm::residual_base).us + gemm::timed_call_us(s);
          const double calibrated = gemm::calibrated_time_us(s, g, gemm::timed_call_us(s));
          const double t = gemm::per_op_time_us(s, g, gemm::timed_call_us(s)).us;
          INFO(g.name << " m " << m << " k " << k);
          CHECK(std::isfinite(t));
          CHECK((t == Approx(calibrated) || (t >= plain * std::exp(-gemm::residual_log_clamp) * 0.999 &&
                                             t <= plain * std::exp(gemm::residual_log_clamp) * 1.001)));
        }
}

TEST_CASE("tile model: a single GEMM that leaves SMs idle splits its K but a batched one or one that fills the GPU does not", "[tile]") {
  const Catalog cat = Catalog::builtin();
  for (const char* name : {"A100 PCIe 40GB", "V100 PCIe 32GB", "H100 SXM", "T4"}) {
    const Device& g = cat.at(name);
    INFO(name);
    // One 128x128 output, K = 65536: one tile's loop on a few SMs unless K is cut into slices on more SMs.
    gemm::Shape linear{1, 128, 128, 65536}, batched = linear;
    batched.shared_weight = false;  // bmm: the same work, no split kernels
    const double split = gemm::estimate(linear, g, gemm::fitted).us, whole = gemm::estimate(batched, g, gemm::fitted).us;
    CHECK(split < 0.5 * whole);
    // Split or not, never below the roofline bound (the model's own time, before estimate's clamp).
    const auto w = linear.work();
    CHECK(gemm::estimate_at(linear, g, gemm::fitted, g.load_clock_mhz(Precision::fp32)).us >=
          roofline_bound(w.flops, w.bytes, Precision::fp32, g).bound_us());
    // A GEMM with more tiles than the GPU holds at once has no idle SMs to give slices to.
    gemm::Shape full{1, 8192, 8192, 4096}, full_batched = full;
    full_batched.shared_weight = false;
    full.blas = full_batched.blas = false;  // the same tiles for both (cuBLAS's lists differ for batched GEMMs on the A100)
    CHECK(gemm::estimate(full, g, gemm::fitted).us == Approx(gemm::estimate(full_batched, g, gemm::fitted).us));
  }
}

TEST_CASE("tile model: a deeper or wider GEMM never runs faster - split-K included - on every catalog GPU", "[tile][physics]") {
  // Shapes whose tiles leave SMs idle, so split-K is in play; K, M and N swept finely across where the number of
  // slices changes. More work must never take less time (a gate on the slices' depth once made K 1023 -> 1024 22%
  // faster), in FP32 and in BF16, timed alone or in a step.
  const Catalog cat = Catalog::builtin();
  for (const auto& g : cat.devices()) {
    INFO(g.name);
    for (const Precision p : {Precision::fp32, Precision::bf16}) {
      if (p == Precision::bf16 && !(g.tensor.bf16 > 0)) continue;
      for (const bool alone : {false, true}) {
        for (const double mn : {16.0, 64.0, 256.0}) {
          double last = 0;
          for (double k = 32; k <= 70000; k *= 1.05) {
            gemm::Shape s{1, mn, 4 * mn, std::floor(k), true, false, alone};
            s.precision = p, s.elem_bytes = p == Precision::bf16 ? 2 : 4;
            const double t = gemm::estimate(s, g, gemm::fitted).us;
            INFO("M " << mn << " K " << s.k << (alone ? " timed alone" : ""));
            REQUIRE(std::isfinite(t));
            REQUIRE(t >= last * (1 - 1e-9));
            last = t;
          }
        }
        double last = 0;
        for (double m = 1; m <= 20000; m *= 1.1) {
          gemm::Shape s{1, std::floor(m), 1024, 8192, true, false, alone};
          s.precision = p, s.elem_bytes = p == Precision::bf16 ? 2 : 4;
          const double t = gemm::estimate(s, g, gemm::fitted).us;
          INFO("M " << s.m << (alone ? " timed alone" : ""));
          REQUIRE(t >= last * (1 - 1e-9));
          last = t;
        }
      }
    }
  }
}
