#pragma once
// Element sizes, stated once: the dtype names torch.profiler records for tensor arguments ("Input type"
// in a Kineto trace, c10's C++ type names) and their sizes in bytes. The learned models' DataType is a
// subset of these names, so its sizes come from the same table.
#include <array>
#include <optional>
#include <string_view>

namespace habitat::ops {

enum class DataType { fp32, bf16 };

struct ProfilerDtype {
  std::string_view name;  // as torch.profiler writes it
  double bytes;
};

// ATen's scalar type names (c10::ScalarType), as torch.profiler writes them on collectives, follow.
inline constexpr std::array<ProfilerDtype, 30> profiler_dtypes{{
    {"float", 4},
    {"double", 8},
    {"c10::Half", 2},
    {"c10::BFloat16", 2},
    {"c10::Float8_e4m3fn", 1},
    {"c10::Float8_e5m2", 1},
    {"c10::Float8_e4m3fnuz", 1},
    {"c10::Float8_e5m2fnuz", 1},
    {"c10::Float8_e8m0fnu", 1},
    {"long int", 8},
    {"long", 8},
    {"int", 4},
    {"short int", 2},
    {"short", 2},
    {"signed char", 1},
    {"unsigned char", 1},
    {"bool", 1},
    {"c10::complex<c10::Half>", 4},
    {"c10::complex<float>", 8},
    {"c10::complex<double>", 16},
    {"Float", 4},
    {"Double", 8},
    {"Half", 2},
    {"BFloat16", 2},
    {"Long", 8},
    {"Int", 4},
    {"Short", 2},
    {"Char", 1},
    {"Byte", 1},
    {"Bool", 1},
}};

// Bytes per element of a profiler dtype name; unknown names (including "" for non-tensors) count as 4.
[[nodiscard]] constexpr double dtype_bytes(std::string_view profiler_name) {
  for (const auto& d : profiler_dtypes)
    if (d.name == profiler_name) return d.bytes;
  if (profiler_name.find("Float8") != std::string_view::npos) return 1;  // float8 variants not listed above
  return 4;
}

// The profiler's name for a learned-model data type.
[[nodiscard]] constexpr std::string_view profiler_name(DataType t) { return t == DataType::fp32 ? "float" : "c10::BFloat16"; }

[[nodiscard]] constexpr double dtype_bytes(DataType t) { return dtype_bytes(profiler_name(t)); }

// The learned-model data type of a profiler dtype name, if the models have one.
[[nodiscard]] constexpr std::optional<DataType> data_type(std::string_view profiler_dtype) {
  for (DataType t : {DataType::fp32, DataType::bf16})
    if (profiler_name(t) == profiler_dtype) return t;
  return std::nullopt;  // half, double, integers: no model
}

}  // namespace habitat::ops
