#pragma once
// One trace event as the streaming parser leaves it: only the fields habitat reads, each kept as the
// JSON scalar it was, and the checks that turn them into numbers. Every number read from a trace goes
// through as_number / as_whole here: finite, in range, integral where an integer is meant.
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <algorithm>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "habitat/trace/trace.hpp"

namespace habitat::kineto {

// A JSON scalar as written: absent, a number, a string, or something else (bool, null, object, array).
struct Scalar {
  enum class Kind : unsigned char { absent, number, string, other };
  Kind kind = Kind::absent;
  double number = 0;
  std::string text;  // the string, when kind == string

  void clear() { kind = Kind::absent; }
  [[nodiscard]] bool present() const { return kind != Kind::absent; }
  [[nodiscard]] bool is_string() const { return kind == Kind::string; }
  [[nodiscard]] std::string_view str() const { return text; }
};

// k == lit with the literal's length known at compile time, so the compare is inlined: it runs for every
// key and category of every event.
template <std::size_t N>
[[nodiscard]] inline bool is(std::string_view k, const char (&lit)[N]) {
  return k.size() == N - 1 && std::memcmp(k.data(), lit, N - 1) == 0;
}

// A finite number (quoted or not); NaN, infinities and numbers beyond double's range are not numbers here.
inline std::optional<double> as_number(const Scalar& v) {
  double x = 0;
  if (v.kind == Scalar::Kind::number) {
    x = v.number;
  } else if (v.kind == Scalar::Kind::string) {  // some exporters quote numbers
    const char* b = v.text.data();
    const char* e = b + v.text.size();
    while (b != e && (*b == ' ' || *b == '\t')) ++b;
    if (b != e && *b == '+') ++b;
    if (std::from_chars(b, e, x).ec != std::errc{}) return std::nullopt;
  } else {
    return std::nullopt;
  }
  if (!std::isfinite(x)) return std::nullopt;
  return x;
}

// A whole number within [lo, hi], for fields that become integers; outside, the cast would be undefined,
// and a fraction (a block of 256.5 threads) is no count at all.
inline std::optional<std::int64_t> as_whole(const Scalar& v, double lo, double hi) {
  const auto x = as_number(v);
  if (!x || *x < lo || *x > hi || *x != std::floor(*x)) return std::nullopt;
  return static_cast<std::int64_t>(*x);
}

// pid/tid are numbers or strings; fold strings (and numbers beyond 2^62) into a stable number.
inline std::int64_t as_id(const Scalar& v) {
  if (auto n = as_whole(v, -0x1p62, 0x1p62)) return *n;
  if (v.is_string()) return static_cast<std::int64_t>(std::hash<std::string_view>{}(v.str()));
  if (auto x = as_number(v)) return static_cast<std::int64_t>(std::hash<double>{}(*x) >> 2);
  return 0;
}

// A launch dimension as written: "grid": [x, y, z].
struct Dims {
  bool present = false, is_array = false;
  std::size_t n = 0;  // elements seen; the first three are kept
  Scalar v[3];
  void clear() {
    present = is_array = false;
    n = 0;
  }
};

// Launch dimensions as whole numbers (0 read as 1); an element that is a number but not a whole one
// within int64 is an error (nothing). CUDA's limits are checked by the caller (detail/launch_limits.hpp).
inline std::optional<Dim3> as_dim3(const Dims& dims) {
  Dim3 d;
  if (!dims.present || !dims.is_array) return d;
  std::int64_t* out[] = {&d.x, &d.y, &d.z};
  for (std::size_t i = 0; i < 3 && i < dims.n; ++i) {
    const auto n = as_whole(dims.v[i], 0, 0x1p62);
    if (as_number(dims.v[i]) && !n) return std::nullopt;
    if (n) *out[i] = std::max<std::int64_t>(1, *n);
  }
  return d;
}

// The top-level "distributedInfo" as written: whether it was an object, and the scalars read from it (its nested
// "pg_config" and the like are skipped, so it stays a few bytes whatever the job's size). Checked by the reader.
struct RawDistributed {
  bool is_object = false;
  Scalar rank, world_size, backend;
};

// A list of integer lists read in place: the first n of `lists` are this event's (the rest are buffers kept from
// earlier events); is_array: the field was an array (anything else is ignored).
struct IntLists {
  std::size_t n = 0;
  bool is_array = false;
  std::vector<std::vector<std::int64_t>> lists;

  [[nodiscard]] const std::vector<std::int64_t>* at(std::size_t i) const { return is_array && i < n ? &lists[i] : nullptr; }
  [[nodiscard]] std::size_t size() const { return is_array ? n : 0; }
  void clear() { n = 0, is_array = false; }
};

// The fields of one event (top level and its "args") that the reader uses. Buffers are reused from one
// event to the next, so reading an event allocates nothing once the first few have been read.
struct RawEvent {
  bool is_object = false;
  Scalar ph, cat, name, ts, dur, tid;
  // args
  Scalar correlation, stream, registers, shared_memory, bytes, collective, nelems, group_size, dtype;
  Scalar sequence;
  Scalar external_id;  // "External id": the CPU operation an event belongs to (its launches and, in some exporters, its GPU events)
  int sequence_rank = 99;  // which spelling of the sequence number was seen ("Sequence number" first)
  Dims grid, block;
  // "Input Dims" (a shape per input), "Input Strides" (its strides, where recorded), "Input type" and "Concrete
  // Inputs" (a string per input).
  IntLists shapes, strides;
  std::size_t n_types = 0, n_values = 0;
  bool types_array = false, values_array = false;
  std::vector<std::string> types, values;

  void clear() {
    is_object = false;
    for (Scalar* s : {&ph, &cat, &name, &ts, &dur, &tid, &correlation, &stream, &registers, &shared_memory, &bytes, &collective, &nelems,
                      &group_size, &dtype, &sequence, &external_id})
      s->clear();
    sequence_rank = 99;
    grid.clear();
    block.clear();
    shapes.clear();
    strides.clear();
    n_types = n_values = 0;
    types_array = values_array = false;
  }
};

}  // namespace habitat::kineto
