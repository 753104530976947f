#pragma once
// Streams a Kineto trace (.json or .json.gz) and hands each element of its top-level "traceEvents" and
// "deviceProperties" arrays to a callback as a small boost::json::value, one at a time: a trace of
// hundreds of MB is never held in memory as a whole, neither as text nor as a document.
#include <unistd.h>
#include <zlib.h>

#include <boost/json/basic_parser_impl.hpp>
#include <boost/json/value_stack.hpp>

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "habitat/error.hpp"

namespace habitat::kineto {

enum class Section { trace_events, device_properties };
using ElementSink = std::function<void(Section, const boost::json::value&)>;

namespace detail {

class ElementHandler {
 public:
  static constexpr std::size_t max_object_size = std::size_t(-1);
  static constexpr std::size_t max_array_size = std::size_t(-1);
  static constexpr std::size_t max_key_size = std::size_t(-1);
  static constexpr std::size_t max_string_size = std::size_t(-1);

  explicit ElementHandler(ElementSink sink) : sink_(std::move(sink)) {}

  bool saw_trace_events = false;
  bool top_is_object = false;

  bool on_document_begin(boost::system::error_code&) { return true; }
  bool on_document_end(boost::system::error_code&) { return true; }

  bool on_object_begin(boost::system::error_code&) { return open(true); }
  bool on_object_end(std::size_t n, boost::system::error_code&) { return close(n, true); }
  bool on_array_begin(boost::system::error_code&) { return open(false); }
  bool on_array_end(std::size_t n, boost::system::error_code&) { return close(n, false); }

  bool on_key_part(boost::json::string_view s, std::size_t, boost::system::error_code&) {
    if (capturing()) stack_.push_chars(s);
    else key_.append(s.data(), s.size());
    return true;
  }
  bool on_key(boost::json::string_view s, std::size_t, boost::system::error_code&) {
    if (capturing()) {
      stack_.push_key(s);
    } else {
      key_.append(s.data(), s.size());
      if (depth_ == 1) top_key_ = key_;
      key_.clear();
    }
    return true;
  }
  bool on_string_part(boost::json::string_view s, std::size_t, boost::system::error_code&) {
    if (capturing()) stack_.push_chars(s);
    return true;
  }
  bool on_string(boost::json::string_view s, std::size_t, boost::system::error_code&) {
    if (capturing()) stack_.push_string(s);
    return true;
  }
  bool on_number_part(boost::json::string_view, boost::system::error_code&) { return true; }
  bool on_int64(std::int64_t v, boost::json::string_view, boost::system::error_code&) {
    if (capturing()) stack_.push_int64(v);
    return true;
  }
  bool on_uint64(std::uint64_t v, boost::json::string_view, boost::system::error_code&) {
    if (capturing()) stack_.push_uint64(v);
    return true;
  }
  bool on_double(double v, boost::json::string_view, boost::system::error_code&) {
    if (capturing()) stack_.push_double(v);
    return true;
  }
  bool on_bool(bool v, boost::system::error_code&) {
    if (capturing()) stack_.push_bool(v);
    return true;
  }
  bool on_null(boost::system::error_code&) {
    if (capturing()) stack_.push_null();
    return true;
  }
  bool on_comment_part(boost::json::string_view, boost::system::error_code&) { return true; }
  bool on_comment(boost::json::string_view, boost::system::error_code&) { return true; }

 private:
  // depth_ counts open containers; elements of interest sit at depth 2 inside a wanted top-level array.
  [[nodiscard]] bool capturing() const { return section_.has_value() && depth_ >= 3; }

  bool open(bool object) {
    ++depth_;
    if (depth_ == 1) top_is_object = object;
    if (depth_ == 2 && !object) {
      section_.reset();
      if (top_key_ == "traceEvents") {
        section_ = Section::trace_events;
        saw_trace_events = true;
      } else if (top_key_ == "deviceProperties") {
        section_ = Section::device_properties;
      }
    }
    if (depth_ == 3 && section_) stack_.reset();
    return true;
  }

  bool close(std::size_t n, bool object) {
    if (capturing()) {
      if (object) stack_.push_object(n);
      else stack_.push_array(n);
      if (depth_ == 3) {
        const boost::json::value v = stack_.release();
        sink_(*section_, v);
      }
    }
    if (depth_ == 2) section_.reset();
    --depth_;
    return true;
  }

  ElementSink sink_;
  boost::json::value_stack stack_;
  int depth_ = 0;
  std::string key_, top_key_;
  std::optional<Section> section_;
};

}  // namespace detail

// Reads `path` (gzip or plain; zlib reads both) in 1 MiB chunks. Throws habitat::error naming the file and
// the byte offset on unreadable, truncated or invalid input.
// `progress`, if given, is called after each chunk with the compressed bytes read so far.
using Progress = std::function<void(std::size_t bytes_read)>;

// "-" reads standard input (gzip or plain), as the tools users know do.
inline void stream_elements(const std::string& path, const ElementSink& sink, const Progress& progress = {}) {
  std::unique_ptr<gzFile_s, int (*)(gzFile)> in(path == "-" ? gzdopen(dup(STDIN_FILENO), "rb") : gzopen(path.c_str(), "rb"), gzclose);
  if (!in) throw make_error(path, "", "cannot open trace file");
  boost::json::parse_options opts;
  opts.allow_trailing_commas = true;
  opts.allow_invalid_utf8 = true;
  opts.allow_comments = true;
  boost::json::basic_parser<detail::ElementHandler> parser(opts, sink);
  std::vector<char> buf(1 << 20);
  std::size_t offset = 0;
  bool any = false;
  for (;;) {
    const int n = gzread(in.get(), buf.data(), static_cast<unsigned>(buf.size()));
    if (n < 0) {
      int errnum = 0;
      const char* msg = gzerror(in.get(), &errnum);
      throw make_error(path, "byte " + std::to_string(offset), std::string("cannot decompress: ") + msg);
    }
    if (n == 0) break;
    any = true;
    boost::system::error_code ec;
    std::size_t pos = 0;
    while (pos < static_cast<std::size_t>(n)) {
      pos += parser.write_some(true, buf.data() + pos, static_cast<std::size_t>(n) - pos, ec);
      if (ec) throw make_error(path, "byte " + std::to_string(offset + pos), "invalid JSON: " + ec.message());
      if (parser.done()) break;
    }
    offset += static_cast<std::size_t>(n);
    if (const auto at = gzoffset(in.get()); progress && at >= 0) progress(static_cast<std::size_t>(at));
    if (parser.done()) break;
  }
  // gzread reports a cut-off gzip stream only through gzerror
  int errnum = 0;
  const char* msg = gzerror(in.get(), &errnum);
  if (errnum != Z_OK && errnum != Z_BUF_ERROR) throw make_error(path, "byte " + std::to_string(offset), std::string("cannot decompress: ") + msg);
  if (!any) throw make_error(path, "", "file is empty");
  if (!parser.done()) {
    boost::system::error_code ec;
    parser.write_some(false, nullptr, 0, ec);
    if (ec || !parser.done())
      throw make_error(path, "byte " + std::to_string(offset), "truncated JSON (the file ends before the document does)");
  }
  if (!parser.handler().top_is_object || !parser.handler().saw_trace_events)
    throw make_error(path, "top level", "not a Kineto trace: no 'traceEvents' array");
}

}  // namespace habitat::kineto
