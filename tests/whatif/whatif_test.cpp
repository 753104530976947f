// The what-ifs: the per-tensor batch rule, the spec, autocast's classes, and accuracy on real steps
// (fixtures/whatif: FP32 batch sweeps and autocast pairs, H100 and H200) next to the baselines.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <Eigen/Dense>
#include <boost/json.hpp>

#include "builtin_data.hpp"
#include "fixtures.hpp"
#include "habitat/report/scatter.hpp"
#include "habitat/studies/whatif_study.hpp"
#include "habitat/kineto/reader.hpp"

using namespace habitat;

TEST_CASE("the batch dimension: equal to the batch first, then a multiple of it, never a parameter's shape") {
  const std::set<whatif::Shape> params{{512, 1024}, {64, 3, 7, 7}};
  CHECK(whatif::batch_dim({32, 64, 56, 56}, 32, params) == 0u);
  CHECK(whatif::batch_dim({512, 4, 512}, 4, params) == 1u);         // [S,B,H] after a transpose
  CHECK(whatif::batch_dim({2048, 32000}, 4, params) == 0u);         // [B*S,V] before the loss
  CHECK(whatif::batch_dim({40960}, 2048, params) == 0u);            // embedding-bag indices [B*bag]
  CHECK_FALSE(whatif::batch_dim({512, 1024}, 512, params));         // a parameter's shape
  CHECK_FALSE(whatif::batch_dim({64, 3, 7, 7}, 64, params));
  CHECK_FALSE(whatif::batch_dim({1000}, 32, params));                // not a multiple
  CHECK_FALSE(whatif::batch_dim({}, 32, params));
  CHECK(whatif::rescaled({512, 4, 512}, 4, 8, params) == whatif::Shape{512, 8, 512});
  CHECK(whatif::rescaled({2048, 32000}, 4, 2, params) == whatif::Shape{1024, 32000});
}

TEST_CASE("what-if arguments are parsed, and bad keys, values and repeats are errors naming them") {
  const auto s = whatif::parse_spec({"batch=64", "precision=bf16"});
  CHECK(*s.batch == 64);
  CHECK(*s.precision == Precision::bf16);
  CHECK(s.label() == "batch=64, precision=bf16");
  for (const char* bad : {"batch", "batch=", "=3", "batch=0", "batch=1.5", "batch=x", "precision=fp8", "lr=0.1"})
    CHECK_THROWS_AS(whatif::parse_spec({bad}), habitat::error);
  CHECK_THROWS_AS(whatif::parse_spec({"batch=2", "batch=4"}), habitat::error);
}

TEST_CASE("what-ifs refuse what they cannot start from") {
  const Trace f = kineto::read_trace(test::fixture("h100", "dcgan_fp32_b128", "whatif"));
  const Trace h = kineto::read_trace(test::fixture("h100", "dcgan_bf16_b128", "whatif"));
  const Device& d = test::catalog().at("H100 SXM");
  CHECK_THROWS_AS(whatif::apply(f, d, whatif::parse_spec({"batch=64"}), std::nullopt), habitat::error);  // no --batch
  CHECK_THROWS_AS(whatif::apply(h, d, whatif::parse_spec({"precision=bf16"}), 128), habitat::error);     // already BF16
  CHECK(whatif::runs_lower_precision(h));
  CHECK_FALSE(whatif::runs_lower_precision(f));
}

TEST_CASE("autocast classes: GEMMs and convolutions lower, norms and losses FP32, the optimizer untouched") {
  const Trace t = kineto::read_trace(test::fixture("h100", "encoder_fp32_b16", "whatif"));
  const Device& d = test::catalog().at("H100 SXM");
  const auto x = whatif::autocast(t, d, {Precision::bf16});
  int lower = 0, fp32 = 0, cast = 0;
  for (std::size_t i = 0; i < t.kernels.size(); ++i) {
    const int op = t.kernels[i].op;
    if (op < 0) continue;
    const auto c = whatif::autocast_class(t, op);
    lower += c == whatif::Autocast::lower;
    fp32 += c == whatif::Autocast::fp32;
    // An FP32-list kernel keeps its time, but the loss's first kernels forward and backward carry the cast of the
    // classifier's BF16 logits to FP32 and of their gradient back: one pass each, no shorter than a cast kernel.
    if (c == whatif::Autocast::fp32 && x.trace.kernels[i].duration_us != t.kernels[i].duration_us) {
      ++cast;
      CHECK(x.trace.kernels[i].duration_us - t.kernels[i].duration_us >= whatif::cast_kernel_min_us);
      const std::string label = operation_label(t, op);  // cross_entropy_loss, or its backward's first operation
      INFO(label);
      CHECK((label.find("cross_entropy") != std::string::npos || label.find("LogSoftmaxBackward") != std::string::npos ||
             label.find("NllLossBackward") != std::string::npos));
    }
    if (t.kernels[i].name.find("multi_tensor_apply") != std::string::npos) CHECK(x.trace.kernels[i].duration_us == t.kernels[i].duration_us);
  }
  CHECK(lower > 100);
  CHECK(fp32 > 10);
  CHECK(cast == 2);
  CHECK(std::count_if(x.notes.begin(), x.notes.end(), [](const std::string& n) { return n.find("1 activation cast to FP32") == 0; }) == 1);
  CHECK(x.trace.gpu_active_us() < 0.5 * t.gpu_active_us());  // FP32 SIMT GEMMs move to BF16 tensor cores
  // FP16 adds GradScaler's pass over the gradients.
  const auto h = whatif::autocast(t, d, {Precision::fp16});
  CHECK(h.trace.gpu_active_us() > x.trace.gpu_active_us());
}

// Kernels a change of precision treats otherwise (README, "Five kernels a change of precision treats otherwise").
TEST_CASE("autocast keeps cuDNN's layout transpositions, tells few-channel convolutions apart, and knows Hopper's TF32 nt") {
  // cuDNN's NCHW <-> NHWC transpositions keep their FP32 time; other memory-bound kernels of the step halve theirs.
  const Trace r = kineto::read_trace(test::fixture("h200", "resnet50_fp32_b32", "whatif"));
  const Device& h200 = test::catalog().at("H200");
  const auto x = whatif::autocast(r, h200, {Precision::fp16});
  int transposes = 0, halved = 0;
  for (std::size_t i = 0; i < r.kernels.size(); ++i) {
    const auto& k = r.kernels[i];
    if (habitat::detail::is_layout_transform(k.name)) {
      ++transposes;
      CHECK(x.trace.kernels[i].duration_us >= k.duration_us);  // its time, plus any cast folded into it
    } else if (k.name.find("vectorized_elementwise_kernel") != std::string::npos && k.duration_us > 20) {
      halved += x.trace.kernels[i].duration_us < 0.6 * k.duration_us;
    }
  }
  CHECK(transposes > 100);
  CHECK(halved > 20);
  // ATen's depthwise convolutions keep their FP32 time (MobileNetV2: 0.993x measured under BF16 on the H100).
  const Trace mb = kineto::read_trace(test::fixture("h100", "mobilenetv2_fp32_b64", "whatif"));
  const auto mx = whatif::autocast(mb, test::catalog().at("H100 SXM"), {Precision::bf16});
  int depthwise = 0;
  for (std::size_t i = 0; i < mb.kernels.size(); ++i)
    if (mb.kernels[i].name.find("conv_depthwise2d") != std::string::npos) {
      ++depthwise;
      CHECK(mx.trace.kernels[i].duration_us >= mb.kernels[i].duration_us);
    }
  CHECK(depthwise > 40);
  // cuDNN's generic grouped weight gradients (FP32 7x7 depthwise, channels-last) give way to its dedicated depthwise
  // kernel under autocast: 0.4x the forward convolution's FP32 kernels, far below their own time.
  const Trace cn = kineto::read_trace(test::fixture("h100", "convnext_tiny_fp32_b32", "whatif_heldout"));
  const auto cx = whatif::autocast(cn, test::catalog().at("H100 SXM"), {Precision::bf16});
  double generic = 0, generic_after = 0;
  for (std::size_t i = 0; i < cn.kernels.size(); ++i)
    if (whatif::generic_grouped_wgrad(cn.kernels[i].name)) generic += cn.kernels[i].duration_us, generic_after += cx.trace.kernels[i].duration_us;
  CHECK(generic > 10000);
  CHECK(generic_after < 0.1 * generic);
  CHECK_FALSE(whatif::generic_grouped_wgrad("sm90_xmma_wgrad_implicit_gemm_bf16bf16_bf16f32_f32_nhwckrsc_nhwc_tilesize128x128x64"));
  CHECK(habitat::detail::is_layout_transform("void cudnn::engines_precompiled::nhwcToNchwKernel<float, float, float, true, false, (cudnnKernelDataType_t)0>(x)"));
  CHECK_FALSE(habitat::detail::is_layout_transform("sm90_xmma_fprop_implicit_gemm_f32f32_tf32f32_f32_nhwckrsc_nhwc_tilesize128x128x32"));

  // DCGAN: the discriminator's first convolution (3 colours in) and the generator's last (3 out) have fewer channels
  // than tensor cores take; its 100-channel first transposed convolution does not. Few-channel ones never get TF32.
  const Trace g = kineto::read_trace(test::fixture("h100", "dcgan_fp32strict_b128", "tf32"));
  const auto work = kernel_work(g, tf32_settings(g));
  int few = 0, many = 0;
  for (std::size_t i = 0; i < g.kernels.size(); ++i) {
    if (work[i].family != MathFamily::convolution) continue;
    const bool f = habitat::detail::few_channels(g, g.kernels[i].op);
    few += f;
    many += !f;
    if (f) CHECK_FALSE(work[i].tf32_allowed);
  }
  CHECK(few >= 4);
  CHECK(many > few);

  // Hopper's TF32 GEMMs in the layout nt reach 0.63 of the others' rate (fixtures/clocks/gemm_layouts_h200.json);
  // not BF16, not the legacy mma.sync kernels (their own share), not an A100 (unmeasured).
  const std::string nt = "sm90_xmma_gemm_f32f32_tf32f32_f32_nt_n_tilesize256x128x32_warpgroupsize2x1x1_execute_segment_k_off_kernel__5x_cublas";
  const std::string tn = "sm90_xmma_gemm_f32f32_tf32f32_f32_tn_n_tilesize256x128x32_warpgroupsize2x1x1_execute_segment_k_off_kernel__5x_cublas";
  CHECK(layout_share(nt, h200, Precision::tf32) == Approx(0.63));
  CHECK(layout_share(tn, h200, Precision::tf32) == 1.0);
  CHECK(layout_share(nt, h200, Precision::bf16) == 1.0);
  CHECK(layout_share(nt, test::catalog().at("A100 SXM4 80GB"), Precision::tf32) == 1.0);
  CHECK(layout_share("void cutlass::Kernel2<cutlass_80_tensorop_s1688gemm_128x256_16x3_nt_align4>(x)", h200, Precision::tf32) == 1.0);
}

TEST_CASE("the memory estimate grows with the batch and says when a step does not fit") {
  const Trace t = kineto::read_trace(test::fixture("h100", "resnet50_fp32_b32", "whatif"));
  const Device& d = test::catalog().at("H100 SXM");
  const auto a = whatif::apply(t, d, whatif::parse_spec({"batch=64"}), 32);
  const auto b = whatif::apply(t, d, whatif::parse_spec({"batch=4096"}), 32);
  CHECK(a.memory.activation_bytes > 1.9 * whatif::estimate_memory(t, 32).activation_bytes);
  CHECK(a.memory.parameter_bytes == Approx(whatif::estimate_memory(t, 32).parameter_bytes));
  CHECK(a.memory.total_bytes() < whatif::usable_memory_share * d.memory_gib * 1073741824.0);
  CHECK(b.memory.total_bytes() > whatif::usable_memory_share * d.memory_gib * 1073741824.0);
}

TEST_CASE("what-if predictions are finite and no faster than the roofline bound on every catalog GPU") {
  const Trace t = kineto::read_trace(test::fixture("h100", "decoder_fp32_b4", "whatif"));
  const Device& origin = test::catalog().at("H100 SXM");
  for (const char* w : {"batch=16", "precision=bf16", "precision=fp16"}) {
    const auto applied = whatif::apply(t, origin, whatif::parse_spec({w}), 4);
    const Trace& tt = applied.step.trace;
    const auto work = kernel_work(tt);
    for (const auto& d : test::catalog().devices()) {
      const auto p = predict_trace(tt, work, origin, d, RooflineScaling{});
      INFO(w << " on " << d.name);
      REQUIRE(std::isfinite(p.gpu_active_us));
      CHECK(p.gpu_active_us > 0);
      for (std::size_t i = 0; i < p.kernels.size(); ++i) CHECK(std::isfinite(p.kernels[i].duration_us));
    }
  }
}

namespace {
void print(const char* what, const report::WhatIfStudy& s) {
  std::printf("%s: %zu pairs, GPU active mean |error| %.1f%% (baseline %.1f%%), iteration %.1f%% (baseline %.1f%%; the simulator from the "
              "asked-about step's own trace %.1f%%)\n",
              what, s.rows.size(), 100 * s.mean_abs(&report::WhatIfRow::gpu_error), 100 * s.mean_abs(&report::WhatIfRow::baseline_gpu_error),
              100 * s.mean_abs(&report::WhatIfRow::error), 100 * s.mean_abs(&report::WhatIfRow::baseline_error),
              100 * s.mean_abs(&report::WhatIfRow::as_traced_error));
}
}  // namespace

// Bounds a little above what was measured when the rules were chosen (README, "What if"): they catch a
// regression, they do not certify the targets (5% and 8%), which the note says were not all met.
TEST_CASE("batch what-if on the same GPU: 8 models x 3 batches, H100 and H200, against the linear-in-batch baseline") {
  for (const char* gpu : {"h100", "h200"}) {
    const auto s = report::whatif_study(std::string(HABITAT_FIXTURES) + "/whatif/" + gpu, true, test::catalog(), test::hosts());
    print(gpu, s);
    REQUIRE(s.rows.size() == 48);
    CHECK(s.mean_abs(&report::WhatIfRow::gpu_error) < 0.07);
    CHECK(s.mean_abs(&report::WhatIfRow::gpu_error) < 0.2 * s.mean_abs(&report::WhatIfRow::baseline_gpu_error));
    // Iteration time: no more than 3 points above the simulator's error on the asked-about step's own trace
    // (the H100 host moved most between runs: 13.9% there, 4.8% on the H200), and far below the baseline.
    CHECK(s.mean_abs(&report::WhatIfRow::error) < s.mean_abs(&report::WhatIfRow::as_traced_error) + 0.03);
    CHECK(s.mean_abs(&report::WhatIfRow::error) < 0.2 * s.mean_abs(&report::WhatIfRow::baseline_error));
    if (std::string(gpu) == "h200") CHECK(s.mean_abs(&report::WhatIfRow::error) < 0.08);
    // Doubling or halving the batch: GPU time within 20% on every pair, within 10% on all but four (26 and
    // 24 of 28 when measured; DCGAN and the LSTM up from their smallest batch are the worst, +15% to +20%).
    int pairs = 0, within = 0;
    for (const auto& r : s.rows) {
      const auto a = report::parse_workload(r.from), b = report::parse_workload(r.to);
      if (a->batch * 2 == b->batch || b->batch * 2 == a->batch) {
        INFO(gpu << " " << r.from << " -> " << r.to);
        CHECK(std::abs(r.gpu_error()) < 0.20);
        ++pairs;
        within += std::abs(r.gpu_error()) < 0.10;
      }
    }
    CHECK(pairs == 28);
    CHECK(within >= pairs - 4);
  }
}

TEST_CASE("autocast's host time: the shipped constants are the least squares of the H200 measurement") {
  // fixtures/clocks/autocast_host_h200.json: per configuration the added time per step (BF16 less FP32, medians);
  // fitted on steps, layers and parameter casts per pass, both passes halved (whatif::PrecisionOptions).
  std::ifstream in(std::string(HABITAT_FIXTURES) + "/clocks/autocast_host_h200.json");
  REQUIRE(in);
  std::stringstream ss;
  ss << in.rdbuf();
  const auto rows = boost::json::parse(ss.str()).as_object().at("rows").as_array();
  REQUIRE(rows.size() == 12);
  Eigen::MatrixXd x(12, 3);
  Eigen::VectorXd y(12);
  for (Eigen::Index i = 0; i < 12; ++i) {
    const auto& r = rows[static_cast<std::size_t>(i)].as_object();
    x.row(i) << 1.0, r.at("depth").to_number<double>(), r.at("casts_per_pass").to_number<double>();
    y(i) = r.at("added_us").to_number<double>();
  }
  const Eigen::VectorXd c = x.colPivHouseholderQr().solve(y);
  const whatif::PrecisionOptions shipped;
  CHECK(shipped.step_host_us == Approx(c[0]).margin(10));
  CHECK(shipped.op_host_us == Approx(c[1] / 2).margin(1.5));
  CHECK(shipped.cast_host_us == Approx(c[2] / 2).margin(1.5));
}

TEST_CASE("precision what-if on the same GPU: FP32 traces against BF16/FP16 autocast, against the same-time baseline") {
  for (const char* gpu : {"h100", "h200"}) {
    const auto s = report::whatif_study(std::string(HABITAT_FIXTURES) + "/whatif/" + gpu, false, test::catalog(), test::hosts());
    print(gpu, s);
    REQUIRE(s.rows.size() == 9);
    // Measured 2.8% (H100) and 4.0% (H200), every pair within 10% (the widest the LSTM on the H200, +7.5%). Before
    // cuDNN's layout transpositions and depthwise convolutions kept their time, few-channel convolutions were told apart
    // and Hopper's TF32 `nt` GEMMs got their share: 4.3% and 6.4%, the LSTM on the H200 +11.1%, ResNet-50 FP16 -10.2%.
    CHECK(s.mean_abs(&report::WhatIfRow::gpu_error) < 0.05);
    for (const auto& r : s.rows) CHECK(std::abs(r.gpu_error()) < 0.10);
    CHECK(s.mean_abs(&report::WhatIfRow::gpu_error) < 0.2 * s.mean_abs(&report::WhatIfRow::baseline_gpu_error));
    int within = 0;
    for (const auto& r : s.rows) {
      INFO(r.from << " -> " << r.to << ": " << r.gpu_error());
      CHECK(std::abs(r.gpu_error()) < 0.11);
      within += std::abs(r.gpu_error()) < 0.10;
    }
    CHECK(within >= 8);
    // Iteration time, un-profiled: 10.8% (H200) and 16.7% (H100) with autocast's host time measured on its own
    // (below), fitted to none of these pairs; 14.7% and 21.0% with 20 us per cast alone, too fast on host-bound steps.
    CHECK(s.mean_abs(&report::WhatIfRow::error) < (std::string(gpu) == "h200" ? 0.115 : 0.175));
    CHECK(s.mean_abs(&report::WhatIfRow::error) < s.mean_abs(&report::WhatIfRow::baseline_error));
  }
}

TEST_CASE("precision what-if on models it was not tuned on (fixtures/whatif_heldout): ViT-B/16, EfficientNet-B0, GRU") {
  const auto s = report::whatif_study(std::string(HABITAT_FIXTURES) + "/whatif_heldout/h100", false, test::catalog(), test::hosts());
  print("h100 held out", s);
  REQUIRE(s.rows.size() == 5);
  double ours = 0, same_time = 0;
  for (const auto& r : s.rows) {
    INFO(r.from << " -> " << r.to << ": " << r.gpu_error());
    // Measured +1.9% (ViT BF16 and FP16), -7.9% (EfficientNet), +1.7% (GRU), +4.5% (ConvNeXt-Tiny: +106% while its
    // FP32 depthwise weight gradients, 16.5 ms of cuDNN's generic grouped kernels, kept their time; the rule that
    // replaces them was measured on a sweep of depthwise layers, not on ConvNeXt).
    CHECK(std::abs(r.gpu_error()) < 0.12);
    ours += std::abs(r.gpu_error());
    same_time += std::abs(r.baseline_gpu_ms / r.measured_gpu_ms - 1);  // EfficientNet's BF16 step is no faster: -1.9%
  }
  CHECK(ours < 0.1 * same_time);
  // Iteration time: 6.4% (8.9% with 20 us of host time per cast alone); the same-time baseline is the FP32 step.
  CHECK(s.mean_abs(&report::WhatIfRow::error) < 0.08);
  CHECK(s.mean_abs(&report::WhatIfRow::error) < s.mean_abs(&report::WhatIfRow::baseline_error));
}

TEST_CASE("the accuracy scatter plot draws one point per finite pair and escapes its labels") {
  std::vector<report::ScatterPoint> pts{{10, 11, 0, "a<b"}, {20, 19, 1, "c&d"}, {5, std::nan(""), 0, "broken"}, {0, 3, 1, "zero"}};
  std::ostringstream os;
  report::write_scatter_svg(os, "t", pts, {"one", "two"}, "measured ms", "habitat ms");
  const std::string svg = os.str();
  std::size_t circles = 0;
  for (auto at = svg.find("<circle"); at != std::string::npos; at = svg.find("<circle", at + 1)) ++circles;
  CHECK(circles == 2);
  CHECK(svg.find("a&lt;b") != std::string::npos);
  CHECK(svg.find("c&amp;d") != std::string::npos);
  CHECK(svg.find("nan") == std::string::npos);
  CHECK(svg.find("xmlns=\"http://www.w3.org/2000/svg\"") != std::string::npos);
}

// The TF32 what-if (fixtures/tf32: the same FP32 steps on the H100 with TF32 off everywhere, at PyTorch's defaults
// and on everywhere): from either FP32 setting to TF32 everywhere. Measured when the datapath model was chosen:
// 5.6% mean, DCGAN from strict -34% the worst (cuDNN keeps its few-channel convolutions on FP32 lanes); 4.2% since
// they stay there in the model too (DCGAN from strict -17.7%) and Hopper's TF32 `nt` GEMMs have their share.
TEST_CASE("TF32 what-if on the H100: FP32 steps with TF32 off or at the defaults, against TF32 everywhere") {
  const auto s = report::whatif_study(std::string(HABITAT_FIXTURES) + "/tf32/h100", false, test::catalog(), test::hosts());
  print("h100 tf32", s);
  REQUIRE(s.rows.size() == 14);
  CHECK(s.mean_abs(&report::WhatIfRow::gpu_error) < 0.06);
  CHECK(s.mean_abs(&report::WhatIfRow::gpu_error) < 0.2 * s.mean_abs(&report::WhatIfRow::baseline_gpu_error));
  // 11 of 14 within 10%: DCGAN and VGG-16 from strict, and the LSTM from the defaults (+11%). The LSTM pair
  // differs most in kernels the what-if leaves alone: cuDNN's LSTM_elementWise_bp1 took 605 us in the FP32 step
  // and 387 us in the TF32 one (12 of 14 passed while that kernel was wrongly taken for math and moved to TF32).
  int within = 0;
  for (const auto& r : s.rows) within += std::abs(r.gpu_error()) < 0.10;
  CHECK(within >= 11);
}

// The datapath PyTorch picks per GPU (predict/datapath.hpp). A step recorded with TF32 off on the H100 records
// allow_tf32=False with its convolutions, and the GPU shows the kernels it ran: they stay on FP32 lanes on an
// A100. The same settings at their defaults on a GPU without TF32 (a V100 trace) move the convolutions to the
// A100's TF32 tensor cores, and the output says so.
TEST_CASE("FP32 convolutions move to TF32 only where the recording GPU could not show their datapath") {
  const Catalog& cat = test::catalog();
  const Trace strict = kineto::read_trace(std::string(HABITAT_FIXTURES) + "/tf32/h100/resnet50_fp32strict_b32.json.gz");
  const Tf32Settings s = tf32_settings(strict);
  CHECK(s.cudnn_recorded);
  CHECK_FALSE(s.cudnn);
  const auto work = kernel_work(strict);
  const Device& h100 = cat.at("H100 SXM");
  const Device& a100 = cat.at("A100 SXM4 80GB");
  const Device& v100 = cat.at("V100");
  int convs = 0;
  for (const auto& w : work)
    if (w.family == MathFamily::convolution && w.precision == Precision::fp32) {
      ++convs;
      CHECK_FALSE(w.tf32_allowed);
      CHECK(datapath(w, h100, a100) == Precision::fp32);
      CHECK(datapath(Precision::fp32, true, v100, a100) == Precision::tf32);   // the default, traced where TF32 cannot show
      CHECK(datapath(Precision::fp32, true, v100, cat.at("T4")) == Precision::fp32);  // no TF32 on Turing
      CHECK(datapath(Precision::fp32, true, h100, a100) == Precision::fp32);  // the H100 would have shown TF32
    }
  CHECK(convs > 50);
  CHECK(predict_trace(strict, work, h100, a100, RooflineScaling{}).datapath_note.empty());
}

// A public V100 ResNet FP32 trace (HTA's test data, ../shared/data/wild), recorded without shapes, predicted on an
// A100 80GB: NVIDIA's published single-GPU ResNet-50 v1.5 training throughput (DeepLearningExamples,
// PyTorch/Classification/ConvNets/resnet50v1.5/README.md, 21.03 container) is 356 img/s on a V100 32GB in FP32 and
// 938 img/s on an A100 80GB in TF32: 2.63x. Before the datapath rule and the rules for unknown work habitat said
// 1.16x; 1.88x with the rules for unknown work, 2.23x since cuDNN's legacy engines count as math kernels (the share of a
// shape-less kernel taken as throughput, 0.5, is our fixtures' median; taking all
// of it gave 2.48x here but put the CUPTI tracker's shape-less H100 traces 20-90% from their shaped twins).
TEST_CASE("a V100 FP32 ResNet trace speeds up on an A100 by about what NVIDIA publishes for TF32") {
  const std::string path = std::string(HABITAT_SHARED_DATA) + "/wild/hta_v100sxm2_32gb_ns_resolution.pt.trace.json.gz";
  if (!std::filesystem::exists(path)) {
    WARN("skipped: " << path << " is missing (../shared beside the checkout)");
    return;
  }
  const Catalog& cat = test::catalog();
  const Trace t = kineto::read_trace(path);
  const Device origin = resolve_origin(cat, t, std::nullopt);
  const auto p = predict_trace(t, kernel_work(t), origin, cat.at("A100 SXM4 80GB"), RooflineScaling{});
  const double speedup = t.gpu_active_us() / p.gpu_active_us;
  std::printf("V100 -> A100 80GB, ResNet FP32 (no shapes): GPU time %.1f -> %.1f ms, %.2fx (published training throughput: 2.63x)\n",
              t.gpu_active_us() / 1e3, p.gpu_active_us / 1e3, speedup);
  CHECK(speedup > 1.7);  // measured 2.23: far above the 1.16 of the FP32 lanes, 15% short of the published figure
  CHECK(speedup < 2.63 * 1.2);
  CHECK(p.datapath_note.find("TF32") != std::string::npos);
}

// The other direction, measured on the same fixtures: an H100 trace at PyTorch's defaults (convolutions and
// RNNs on TF32) predicted on the H100 with its TF32 datapath removed, against the same step recorded with TF32
// off. Measured with the midpoint rule (roofline_scaling.hpp): -10%, +29% (VGG-16), -13%, -5%, 0%, 0%, -8%; mean 9%
// (moving all the unexplained time: +14% to +51%, mean 16%; none of it: -19% to -46%).
TEST_CASE("TF32 convolutions on a GPU without TF32: the H100 without its TF32 datapath against TF32 off") {
  Device no_tf32 = test::catalog().at("H100 SXM");
  no_tf32.name = "H100 without TF32";
  no_tf32.tensor.tf32 = 0;
  double sum = 0;
  int n = 0;
  for (const char* m : {"resnet50_%s_b32", "vgg16_%s_b32", "dcgan_%s_b128", "mobilenetv2_%s_b64", "encoder_%s_b16", "decoder_%s_b4", "lstm_%s_b64"}) {
    char a[64], b[64];
    std::snprintf(a, sizeof a, m, "fp32");
    std::snprintf(b, sizeof b, m, "fp32strict");
    const std::string dir = std::string(HABITAT_FIXTURES) + "/tf32/h100/";
    const Trace t = kineto::read_trace(dir + a + ".json.gz");
    const Trace strict = kineto::read_trace(dir + b + ".json.gz");
    const Device& h100 = test::catalog().at("H100 SXM");
    const auto p = predict_trace(t, kernel_work(t), h100, no_tf32, RooflineScaling{});
    const double err = p.gpu_active_us / strict.gpu_active_us() - 1;
    std::printf("%-22s TF32 -> FP32 lanes: predicted %.2f ms, measured %.2f ms, %+.1f%%\n", a, p.gpu_active_us / 1e3, strict.gpu_active_us() / 1e3, 100 * err);
    sum += std::abs(err);
    ++n;
    CHECK(std::abs(err) < 0.6);
  }
  CHECK(sum / n < 0.2);
}
