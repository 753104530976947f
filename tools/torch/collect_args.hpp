#pragma once
// Command line of habitat-collect (hand-parsed: the GPU machines have LibTorch but not CLI11).
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <stdexcept>
#include <string>
#include <vector>

#include "habitat/detail/csv.hpp"
#include "habitat/ops/op_schema.hpp"

namespace habitat::collect {

struct Args {
  std::filesystem::path out;
  int per_op = 400;
  std::uint64_t seed = 1;
  int reps = 7;
  int device = 0;
  double budget_s = 0;
  bool kernels = true;
  std::vector<ops::OpKind> ops;
  std::vector<ops::DataType> dtypes{ops::DataType::fp32, ops::DataType::bf16};
};

inline constexpr const char* collect_usage =
    "usage: habitat-collect --out DIR [--per-op N] [--seed S] [--ops a,b,...] [--dtypes fp32,bf16]\n"
    "                       [--reps R] [--time-budget SECONDS] [--device I] [--no-kernels]\n"
    "Measures forward and backward latency of linear, bmm, conv2d, conv_transpose2d, batch_norm,\n"
    "layer_norm, lstm and sdpa at N sampled configurations each (same seed, same configurations on\n"
    "every GPU) and appends rows to DIR/<op>.csv; rerun with the same DIR to resume.\n";

inline Args parse_args(int argc, char** argv) {
  Args a;
  auto value = [&](int& i) -> std::string {
    if (i + 1 >= argc) throw std::runtime_error(std::string(argv[i]) + ": missing value\n" + collect_usage);
    return argv[++i];
  };
  auto number = [&](int& i) {
    const std::string flag = argv[i], v = value(i);
    char* end = nullptr;
    const double x = std::strtod(v.c_str(), &end);
    if (end == v.c_str() || *end != '\0' || x < 0) throw std::runtime_error(flag + ": '" + v + "' is not a non-negative number");
    return x;
  };
  for (int i = 1; i < argc; ++i) {
    const std::string f = argv[i];
    if (f == "--out") a.out = value(i);
    else if (f == "--per-op") a.per_op = static_cast<int>(number(i));
    else if (f == "--seed") a.seed = static_cast<std::uint64_t>(number(i));
    else if (f == "--reps") a.reps = std::max(1, static_cast<int>(number(i)));
    else if (f == "--device") a.device = static_cast<int>(number(i));
    else if (f == "--time-budget") a.budget_s = number(i);
    else if (f == "--no-kernels") a.kernels = false;
    else if (f == "--ops") {
      for (const auto& n : habitat::detail::split(value(i), ',')) {
        auto k = ops::op_from_name(n);
        if (!k || !ops::schema(*k).collected) throw std::runtime_error("--ops: '" + n + "' is not an operation habitat-collect measures");
        a.ops.push_back(*k);
      }
    } else if (f == "--dtypes") {
      a.dtypes.clear();
      for (const auto& n : habitat::detail::split(value(i), ',')) {
        if (n == "fp32") a.dtypes.push_back(ops::DataType::fp32);
        else if (n == "bf16") a.dtypes.push_back(ops::DataType::bf16);
        else throw std::runtime_error("--dtypes: unknown type '" + n + "' (fp32, bf16)");
      }
    } else if (f == "-h" || f == "--help") {
      std::cout << collect_usage;
      std::exit(0);
    } else {
      throw std::runtime_error("unknown argument '" + f + "'\n" + collect_usage);
    }
  }
  if (a.out.empty()) throw std::runtime_error(std::string("--out is required\n") + collect_usage);
  if (a.ops.empty())
    for (const auto& s : ops::op_schemas)
      if (s.collected) a.ops.push_back(s.kind);
  if (a.dtypes.empty()) throw std::runtime_error("--dtypes: empty list");
  return a;
}

}  // namespace habitat::collect
