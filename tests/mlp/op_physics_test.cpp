// The physics op model: NeuSight's timed-call protocol (overlap of the host's floor and the kernel), the
// L2-resident rate of small elementwise working sets, and its leave-one-GPU-out error on public data.
#include <catch2/catch.hpp>

#include <filesystem>
#include <map>

#include "habitat/device/catalog.hpp"
#include "habitat/mlp/op_physics.hpp"
#include "habitat/report/op_study.hpp"

namespace fs = std::filesystem;
using habitat::Catalog;
using habitat::mlp::OpQuery;
using habitat::ops::OpKind;

namespace {
OpQuery elementwise(double b, double h, double operands, double code) { return {OpKind::elementwise, {}, {}, {b, h, operands, code}}; }
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
    CHECK(t_in <= habitat::mlp::physics_kernel_ms(in_l2, g, share, 0) + 1e-12);   // no L2 rate: DRAM only
    // Layer norm of the same bytes is bound by its reductions: no L2 rate.
    const OpQuery ln{OpKind::layer_norm, {}, {}, {1, 0.5 * l2_elems * 1.5}};
    CHECK(habitat::mlp::physics_kernel_ms(ln, g, 0.66) == Approx(habitat::mlp::physics_kernel_ms(ln, g, 0.66, 0)));
  }
}

TEST_CASE("physics op model, one GPU left out: elementwise, layer norm and softmax on NeuSight's GPUs and habitat's", "[physics][accuracy]") {
  if (!HABITAT_SHARED_PRESENT) {
    WARN("skipped: NeuSight's public timings live in ../shared beside the checkout");
    return;
  }
  const Catalog cat = Catalog::builtin();
  const auto rows = habitat::opstudy::load_rows(cat, fs::path(HABITAT_SHARED_DATA) / "neusight", fs::path(HABITAT_FIXTURES) / ".." / "data" / "opdata");
  REQUIRE(rows.size() > 100000);
  std::map<std::string, std::map<std::string, habitat::opstudy::ErrorRow>> by;
  for (const auto& e : habitat::opstudy::leave_one_gpu_out(rows, cat)) by[e.gpu][e.op] = e;
  // Bounds a little above what the model measures (the closing notes of issue 20 give the table); the
  // power-capped GDDR cards, whose hosts match the median floor, must be within 10% on every operator.
  for (const char* gpu : {"P4", "T4"})
    for (const char* op : {"add", "addu", "mul", "mulu", "div", "divu", "pow", "powu", "relu", "tanh", "gelu", "ln", "softmax"}) {
      const auto& e = by[gpu][op];
      INFO(gpu << " " << op << ": " << e.model << " (bandwidth ratio " << e.bandwidth << ")");
      CHECK(e.model < (std::string(op) == "softmax" ? 0.15 : std::string(op) == "ln" ? 0.12 : 0.11));
      CHECK(e.model < e.bandwidth);
    }
  // habitat's own kernel-timed H100 rows: the L2 rate carries from the H200.
  for (const char* op : {"add", "addu", "mul", "mulu", "divu", "relu", "tanh"}) {
    INFO(op << ": " << by["H100 SXM"][op].model);
    CHECK(by["H100 SXM"][op].model < 0.14);
  }
}
