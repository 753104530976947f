#pragma once
// Large Kineto traces for the reader's speed and memory benchmarks, generated from a recorded fixture
// (never checked in: hundreds of MB).
//  - repeat_step: the fixture's profiled step copied `steps` times, each shifted in time and correlation,
//    written the way Kineto writes: every CPU-side event of every step first, then the GPU-side events.
//  - many_empty_steps: `steps` ProfilerStep annotations that launch nothing, then the fixture's step.
//  - one_long_step: the fixture's step copied `copies` times inside one ProfilerStep (a step of
//    copies x its kernels), for the cost of prediction per kernel as a step grows.
#include <zlib.h>

#include <boost/json.hpp>

#include <algorithm>
#include <cmath>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>

namespace habitat::bench {

namespace json = boost::json;

inline json::value load_gz_json(const std::string& path) {
  std::unique_ptr<gzFile_s, int (*)(gzFile)> in(gzopen(path.c_str(), "rb"), gzclose);
  if (!in) throw std::runtime_error("cannot open " + path);
  std::string text;
  char buf[1 << 16];
  for (int n; (n = gzread(in.get(), buf, sizeof buf)) > 0;) text.append(buf, static_cast<std::size_t>(n));
  return json::parse(text);
}

class GzWriter {
 public:
  explicit GzWriter(const std::string& path) : out_(gzopen(path.c_str(), "wb6"), gzclose) {
    if (!out_) throw std::runtime_error("cannot write " + path);
  }
  void put(std::string_view s) {
    if (!s.empty() && gzwrite(out_.get(), s.data(), static_cast<unsigned>(s.size())) <= 0) throw std::runtime_error("gzwrite failed");
  }

 private:
  std::unique_ptr<gzFile_s, int (*)(gzFile)> out_;
};

inline bool cpu_side(const json::object& e) {
  const auto* cat = e.if_contains("cat");
  if (!cat || !cat->is_string()) return true;
  const std::string_view c = cat->get_string();
  return c == "cpu_op" || c == "user_annotation" || c == "fwdbwd" || c == "python_function";
}

struct Span {
  double first_ts = INFINITY, last_end = -INFINITY;
  std::int64_t max_correlation = 0;
};

inline Span span_of(const json::array& events) {
  Span s;
  for (const auto& v : events) {
    const auto& e = v.get_object();
    if (const auto* ts = e.if_contains("ts"); ts && ts->is_number()) {
      const double t = ts->to_number<double>();
      const auto* d = e.if_contains("dur");
      s.first_ts = std::min(s.first_ts, t);
      s.last_end = std::max(s.last_end, t + (d && d->is_number() ? d->to_number<double>() : 0.0));
    }
    if (const auto* a = e.if_contains("args"); a && a->is_object())
      if (const auto* c = a->get_object().if_contains("correlation"); c && c->is_int64())
        s.max_correlation = std::max(s.max_correlation, c->get_int64());
  }
  return s;
}

// The event moved `shift_us` later, its correlation by `corr`, and a ProfilerStep renumbered to `step`.
inline json::object shifted(json::object e, double shift_us, std::int64_t corr, long step) {
  if (auto* ts = e.if_contains("ts"); ts && ts->is_number()) *ts = ts->to_number<double>() + shift_us;
  if (auto* n = e.if_contains("name"); n && n->is_string() && n->get_string().starts_with("ProfilerStep#"))
    *n = "ProfilerStep#" + std::to_string(step);
  if (auto* a = e.if_contains("args"); a && a->is_object())
    if (auto* c = a->get_object().if_contains("correlation"); c && c->is_int64()) *c = c->get_int64() + corr;
  return e;
}

inline void write_header(GzWriter& out, const json::object& doc) {
  out.put("{\"schemaVersion\": 1, \"deviceProperties\": ");
  out.put(doc.contains("deviceProperties") ? json::serialize(doc.at("deviceProperties")) : "[]");
  out.put(",\n\"traceEvents\": [\n");
}

inline bool is_step_annotation(const json::object& e) {
  const auto* n = e.if_contains("name");
  return n && n->is_string() && n->get_string().starts_with("ProfilerStep#");
}

inline void repeat_step(const std::string& fixture, const std::string& out_path, int steps, bool one_step = false) {
  const json::value doc = load_gz_json(fixture);
  const json::array& events = doc.at("traceEvents").get_array();
  const Span s = span_of(events);
  const double period = std::ceil(s.last_end - s.first_ts) + 1000;
  GzWriter out(out_path);
  write_header(out, doc.get_object());
  bool first = true;
  for (const bool cpu : {true, false})
    for (int i = 0; i < steps; ++i)
      for (const auto& v : events) {
        const json::object& e = v.get_object();
        if (cpu_side(e) != cpu || (i > 0 && !e.contains("ts"))) continue;
        json::object c = shifted(e, i * period, i * (s.max_correlation + 1), one_step ? 1 : i + 1);
        if (one_step && is_step_annotation(e)) {
          if (i > 0) continue;
          c["ts"] = s.first_ts;
          c["dur"] = steps * period;
        }
        out.put(first ? "" : ",\n");
        out.put(json::serialize(c));
        first = false;
      }
  out.put("\n]}\n");
}

inline void one_long_step(const std::string& fixture, const std::string& out_path, int copies) { repeat_step(fixture, out_path, copies, true); }

inline void many_empty_steps(const std::string& fixture, const std::string& out_path, int steps) {
  const json::value doc = load_gz_json(fixture);
  const json::array& events = doc.at("traceEvents").get_array();
  const Span s = span_of(events);
  GzWriter out(out_path);
  write_header(out, doc.get_object());
  // Empty steps of 10 µs each, ending before the recorded step begins; each holds one CPU op.
  for (int i = 0; i < steps; ++i) {
    const double ts = s.first_ts - 10.0 * (steps - i) - 100;
    out.put("{\"ph\":\"X\",\"cat\":\"user_annotation\",\"name\":\"ProfilerStep#" + std::to_string(i) + "\",\"pid\":1,\"tid\":1,\"ts\":" +
            std::to_string(ts) + ",\"dur\":9},\n");
    out.put("{\"ph\":\"X\",\"cat\":\"cpu_op\",\"name\":\"aten::empty\",\"pid\":1,\"tid\":1,\"ts\":" + std::to_string(ts + 1) +
            ",\"dur\":2,\"args\":{\"Input Dims\":[[]]}},\n");
  }
  bool first = true;
  for (const auto& v : events) {
    out.put(first ? "" : ",\n");
    out.put(json::serialize(shifted(v.get_object(), 0, 0, steps)));
    first = false;
  }
  out.put("\n]}\n");
}

}  // namespace habitat::bench
