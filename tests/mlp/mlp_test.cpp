// Learned operation models: weight files, the Eigen backend against a network computed by hand,
// operation rows, the ratio method, and the hybrid predictor on a fixture trace.
#include <catch2/catch.hpp>

#include <limits>

#include <cmath>
#include <cstring>

#include "fixtures.hpp"
#include "habitat/habitat.hpp"
#include "habitat/kineto/reader.hpp"
#include "habitat/mlp/eigen_backend.hpp"
#include "habitat/mlp/hybrid.hpp"
#include "habitat/mlp/predict_rows.hpp"

using namespace habitat;

namespace {
const std::string models_dir = std::string(HABITAT_FIXTURES) + "/../models";

// 2 inputs -> 2 hidden (ReLU) -> 1, with standardization.
mlp::MlpWeights tiny() {
  mlp::MlpWeights w;
  w.features = {"a", "b"};
  w.mean = {1, 2};
  w.stdev = {2, 4};
  w.layers = {{2, 2, {1, -1, 0.5f, 2}, {0, -1}}, {2, 1, {3, -2}, {0.25f}}};
  return w;
}

std::string safetensors_bytes(const std::string& header, const std::string& data) {
  std::string h = header;
  while (h.size() % 8) h += ' ';
  std::string out(8, '\0');
  for (int i = 0; i < 8; ++i) out[static_cast<std::size_t>(i)] = static_cast<char>((h.size() >> (8 * i)) & 0xff);
  return out + h + data;
}
}  // namespace

TEST_CASE("Eigen backend computes the network exactly", "[mlp]") {
  const mlp::EigenBackend b(tiny());
  // Row 1: x = (3, 6) -> z = (1, 1); h = relu(1*1 - 1*1 + 0, 0.5*1 + 2*1 - 1) = (0, 1.5); out = 3*0 - 2*1.5 + 0.25
  // Row 2: x = (-1, 2) -> z = (-1, 0); h = relu(-1, -1.5) = (0, 0); out = 0.25
  const std::vector<float> rows{3, 6, -1, 2};
  const auto out = b.forward(rows, 2);
  REQUIRE(out.size() == 2);
  CHECK(out[0] == Approx(-2.75));
  CHECK(out[1] == Approx(0.25));
  CHECK_THROWS_AS(b.forward(rows, 3), habitat::error);
}

TEST_CASE("shipped weights load with their feature lists and chain", "[mlp]") {
  const auto set = mlp::ModelSet<mlp::EigenBackend>::load_dir(models_dir);
  REQUIRE(set.size() == ops::op_schemas.size());
  for (const auto& s : ops::op_schemas) {
    const auto* m = set.find(s.kind);
    REQUIRE(m != nullptr);
    // Every dimension of the op is an input (OpModel checks that each name is one habitat computes).
    CHECK(m->weights().features.size() >= static_cast<std::size_t>(s.ndims) + 2);
    CHECK(m->weights().features.size() <= mlp::feature_names(s.kind).size());
    // Collected ops were trained with habitat's own H100 data; softmax and elementwise on public data only.
    CHECK(m->weights().trained_on.find(s.collected ? "H100" : "T4") != std::string::npos);
  }
  // Predictions are positive, finite, and grow with the work.
  const auto& lin = *set.find(ops::OpKind::linear);
  const auto h100 = Catalog::builtin().at("H100 SXM");
  const std::vector<mlp::OpQuery> qs{{ops::OpKind::linear, ops::Pass::forward, ops::DataType::fp32, {1, 4096, 4096, 4096}},
                                     {ops::OpKind::linear, ops::Pass::forward, ops::DataType::fp32, {1, 8192, 8192, 8192}}};
  const auto ms = lin.predict_ms(qs, h100);
  CHECK(std::isfinite(ms[0]));
  CHECK(ms[0] > 0.5);  // 137 GFLOP at 67 TFLOPS is at least 2 ms; more than 0.5 ms in any case
  CHECK(ms[1] > 4 * ms[0]);
}

TEST_CASE("malformed weight files are errors that name the file", "[mlp]") {
  const auto truncated = test::write_temp("truncated.safetensors", std::string("\x10\0\0\0\0\0\0\0{\"a\"", 12));
  CHECK_THROWS_WITH(mlp::load_weights(truncated), Catch::Contains("truncated.safetensors") && Catch::Contains("header"));
  const auto schema = test::write_temp("schema.safetensors", safetensors_bytes(R"({"__metadata__":{"schema":"other/9"}})", ""));
  CHECK_THROWS_WITH(mlp::load_weights(schema), Catch::Contains("schema") && Catch::Contains("other/9"));
  const auto offsets = test::write_temp(
      "offsets.safetensors",
      safetensors_bytes(R"({"input_mean":{"dtype":"F32","shape":[4],"data_offsets":[0,16]}})", std::string(8, '\0')));
  CHECK_THROWS_WITH(mlp::read_safetensors(offsets), Catch::Contains("input_mean") && Catch::Contains("data_offsets"));
  const auto f16 = test::write_temp("f16.safetensors", safetensors_bytes(R"({"w":{"dtype":"F16","shape":[1],"data_offsets":[0,2]}})", "ab"));
  CHECK_THROWS_WITH(mlp::read_safetensors(f16), Catch::Contains("F32"));
  // A shape whose element count wraps around 2^64 (so that it seems to fit 8 bytes) is refused.
  const auto wrap = test::write_temp(
      "wrap.safetensors",
      safetensors_bytes(R"({"w":{"dtype":"F32","shape":[4611686018427387906],"data_offsets":[0,8]}})", std::string(8, '\0')));
  CHECK_THROWS_WITH(mlp::read_safetensors(wrap), Catch::Contains("overflows"));
  // A NaN weight is refused, naming the tensor and the element; a denormal one is flushed to zero.
  const float nan_and_denormal[2] = {1e-40f, std::numeric_limits<float>::quiet_NaN()};
  const auto nan = test::write_temp("nan.safetensors", safetensors_bytes(R"({"w":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})",
                                                                         std::string(reinterpret_cast<const char*>(nan_and_denormal), 8)));
  CHECK_THROWS_WITH(mlp::read_safetensors(nan), Catch::Contains("w[1]") && Catch::Contains("not finite"));
  const float denormal[2] = {1e-40f, 0.5f};
  const auto den = test::write_temp("denormal.safetensors", safetensors_bytes(R"({"w":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})",
                                                                              std::string(reinterpret_cast<const char*>(denormal), 8)));
  const auto f = mlp::read_safetensors(den);
  CHECK(f.tensor("w").data[0] == 0.0f);
  CHECK(f.tensor("w").data[1] == 0.5f);
}

TEST_CASE("operation rows in NeuSight's layout, and bad rows name the line and column", "[mlp]") {
  const auto ok = test::write_temp("ops.csv",
                                   "OPName,Latency,Device,Kernel Name,B,M,N,K\n"
                                   "linear,0.5,Tesla T4,\"volta_sgemm, quoted\",1,128,256,512\n"
                                   "bmm,,NVIDIA H100 80GB HBM3,x,8,64,64,64\n"
                                   "scatter,0.1,Tesla T4,x,1,2,3,4\n");
  const auto csv = mlp::read_op_csv(ok);
  REQUIRE(csv.rows.size() == 3);
  CHECK(csv.rows[0].op == ops::OpKind::linear);
  CHECK(csv.rows[0].dims[3] == 512);
  CHECK(csv.rows[0].latency_ms == Approx(0.5));
  CHECK_FALSE(csv.rows[1].latency_ms);
  CHECK_FALSE(csv.rows[2].op);
  const auto bad = test::write_temp("bad_ops.csv", "OPName,Device,B,M,N,K\nlinear,T4,1,x,3,4\n");
  CHECK_THROWS_WITH(mlp::read_op_csv(bad), Catch::Contains("bad_ops.csv") && Catch::Contains("line 2") && Catch::Contains("column M"));
  const auto missing = test::write_temp("missing_ops.csv", "OPName,Device,B,M,N\nlinear,T4,1,2,3\n");
  CHECK_THROWS_WITH(mlp::read_op_csv(missing), Catch::Contains("no column 'K'"));
}

TEST_CASE("ratio method: same origin and destination returns the measurement, unknown GPUs are errors", "[mlp]") {
  const auto cat = Catalog::builtin();
  const auto set = mlp::ModelSet<mlp::EigenBackend>::load_dir(models_dir);
  const auto path = test::write_temp("ratio.csv", "OPName,Device,B,M,N,K,measured\nlinear,H100 SXM,1,512,1024,2048,0.123\n"
                                                  "scatter,H200,1,1,1,1,0.2\n");
  const auto csv = mlp::read_op_csv(path);
  const auto p = mlp::predict_rows(csv, set, cat, mlp::RatioSource{&cat.at("H100 SXM"), "measured"});
  CHECK(*p[0].ms == Approx(0.123));
  // GEMM rows go to the tile model, with the residual of each side's architecture where it has one.
  CHECK(p[0].method == "tile-ratio (destination: tile + sm_90 residual; origin: tile + sm_90 residual)");
  CHECK(*p[1].ms == Approx(0.2 * cat.at("H100 SXM").sustained_bandwidth_gbps() / cat.at("H200").sustained_bandwidth_gbps()));
  CHECK(p[1].method == "bandwidth-ratio");
  // A GEMM with an empty side has no latency to predict, and the row says why.
  const auto empty = test::write_temp("empty_gemm.csv", "OPName,Device,B,M,N,K\nlinear,T4,1,0,3,4\nbmm,L4,2,3,0,4\n");
  for (const auto& e : mlp::predict_rows(mlp::read_op_csv(empty), set, cat)) {
    CHECK(!e.ms);
    CHECK(e.method == "no prediction: an empty matrix (a dimension of 0)");
  }
  const auto unknown = test::write_temp("unknown_gpu.csv", "OPName,Device,B,M,N,K\nlinear,Quantum 9000,1,2,3,4\n");
  CHECK_THROWS_WITH(mlp::predict_rows(mlp::read_op_csv(unknown), set, cat), Catch::Contains("line 2") && Catch::Contains("Quantum 9000"));
}

TEST_CASE("hybrid predictor covers the GEMMs and convolutions of a trace and is the identity on the origin GPU", "[mlp]") {
  const auto cat = Catalog::builtin();
  const auto set = mlp::ModelSet<mlp::EigenBackend>::load_dir(models_dir);
  const Trace t = kineto::read_trace(test::fixture("h100", "resnet50_fp32_b32"));
  const Device& h100 = cat.at("H100 SXM");
  const Device& h200 = cat.at("H200");
  const mlp::HybridPredictor same(DefaultWaveScaling{}, set, t, h100, h100);
  CHECK(same.covered_ops() > 100);  // 53 convolutions forward and backward, batch norms, the final linear
  const auto work = kernel_work(t);
  const auto p = predict_trace(t, work, h100, h100, same);
  std::size_t mlp_kernels = 0;
  for (std::size_t i = 0; i < t.kernels.size(); ++i)
    if (p.kernels[i].method == Method::mlp_ratio) {
      ++mlp_kernels;
      CHECK(p.kernels[i].duration_us == Approx(t.kernels[i].duration_us));
    }
  CHECK(mlp_kernels > 100);
  const mlp::HybridPredictor other(DefaultWaveScaling{}, set, t, h100, h200);
  const auto q = predict_trace(t, work, h100, h200, other);
  CHECK(q.gpu_active_us < t.gpu_active_us());  // the H200 has more bandwidth and the same compute
  CHECK(q.gpu_active_us > 0.5 * t.gpu_active_us());
}

TEST_CASE("trace operations map to model configurations from their recorded shapes", "[mlp]") {
  // BERT-like encoder, batch 16, sequence 256, width 768, FFN 3072 (fixtures/record/record_kineto.py).
  const Trace t = kineto::read_trace(test::fixture("h100", "encoder_fp32_b16"));
  const auto qs = ops::op_queries(t);
  auto has = [&](ops::OpKind k, ops::Pass p, ops::Dims d) {
    for (const auto& q : qs)
      if (q && q->op == k && q->pass == p && q->dtype == ops::DataType::fp32 && q->dims == d) return true;
    return false;
  };
  CHECK(has(ops::OpKind::linear, ops::Pass::forward, {1, 4096, 3072, 768}));  // FFN up-projection
  CHECK(has(ops::OpKind::linear, ops::Pass::forward, {1, 4096, 768, 3072}));  // FFN down-projection
  CHECK(has(ops::OpKind::layer_norm, ops::Pass::forward, {4096, 768}));
  CHECK(has(ops::OpKind::layer_norm, ops::Pass::backward, {4096, 768}));
  // BF16 autocast traces map to the BF16 models.
  const Trace tb = kineto::read_trace(test::fixture("h100", "encoder_bf16_b32"));
  std::size_t bf16 = 0;
  for (const auto& q : ops::op_queries(tb)) bf16 += q && q->dtype == ops::DataType::bf16;
  CHECK(bf16 > 50);
}

TEST_CASE("op work and roofline scale with the dimensions and the GPU", "[mlp]") {
  const auto cat = Catalog::builtin();
  const mlp::OpQuery q{ops::OpKind::linear, ops::Pass::forward, ops::DataType::fp32, {1, 1024, 1024, 1024}};
  CHECK(ops::op_work(q.op, q.dims, q.dtype, q.pass).flops == Approx(2.0 * 1024 * 1024 * 1024));
  auto q2 = q;
  q2.pass = ops::Pass::backward;
  CHECK(ops::op_work(q2.op, q2.dims, q2.dtype, q2.pass).flops == Approx(2 * 2.0 * 1024 * 1024 * 1024));
  CHECK(mlp::roofline(q, cat.at("T4")).ms() > mlp::roofline(q, cat.at("H100 SXM")).ms());
  auto b = q;
  b.dtype = ops::DataType::bf16;
  CHECK(mlp::peak_tflops(b, cat.at("H100 SXM")) == Approx(989.4).epsilon(0.001));
  const mlp::OpQuery c{ops::OpKind::conv2d, ops::Pass::forward, ops::DataType::fp32, {8, 64, 64, 3, 56, 1, 1}};
  CHECK(mlp::peak_tflops(c, cat.at("A100 SXM4 40GB")) == Approx(cat.at("A100 SXM4 40GB").peak_tflops(habitat::Precision::tf32)));  // cuDNN uses TF32
  for (const auto& s : ops::op_schemas) {
    mlp::OpQuery any{s.kind, ops::Pass::forward, ops::DataType::fp32, {}};
    any.dims.fill(2);
    const auto v = mlp::feature_values(any, cat.at("L4"));
    CHECK(v.size() == mlp::feature_names(s.kind).size());
    for (double x : v) CHECK(std::isfinite(x));
  }
}
