#pragma once
// Streams a Kineto trace (.json or .json.gz) through a SAX parser and hands each element of its top-level
// "traceEvents" array to a sink as a RawEvent (the fields habitat reads, straight from the parser's
// events: no JSON object is built per event), each element of "deviceProperties" as a small JSON
// object, and the scalars of "distributedInfo" (rank, world size, backend) as a RawDistributed. Neither
// the text nor a document of the trace is ever held in memory as a whole.
#include <unistd.h>
#include <zlib.h>

#include <boost/json/basic_parser_impl.hpp>
#include <boost/json/value_stack.hpp>

#include <concepts>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <thread>
#include <cstring>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "habitat/error.hpp"
#include "habitat/kineto/raw_event.hpp"

namespace habitat::kineto {

template <class S>
concept EventSink = requires(S& s, const RawEvent& e, const boost::json::object& o, const RawDistributed& d, std::string_view r) {
  s.event(e);
  s.device_properties(o);
  s.distributed_info(d);
  s.recorder(r);  // the top-level "recorder" string, where a trace names what wrote it
};

namespace detail {

using boost::json::string_view;
using error_code = boost::system::error_code;

// Which event field a key names. Spellings Kineto used over the years share one field; `rank` orders them
// when a file has two (rank 0, the current spelling, wins).
enum class Field : unsigned char {
  none, ph, cat, name, ts, dur, tid, args,
  correlation, stream, grid, block, registers, shared_memory, bytes, collective, nelems, group_size, dtype, sequence, external_id,
  input_dims, input_strides, input_types, input_values
};

struct Key {
  Field field = Field::none;
  int rank = 0;
};

// Called for every key of every event, so dispatched on the length first.
inline Key event_key(std::string_view k) {
  switch (k.size()) {
    case 2: return is(k, "ph") ? Key{Field::ph} : is(k, "ts") ? Key{Field::ts} : Key{};
    case 3: return is(k, "cat") ? Key{Field::cat} : is(k, "dur") ? Key{Field::dur} : is(k, "tid") ? Key{Field::tid} : Key{};
    case 4: return is(k, "name") ? Key{Field::name} : is(k, "args") ? Key{Field::args} : Key{};
    default: return {};
  }
}

inline Key arg_key(std::string_view k) {
  switch (k.size()) {
    case 3: return is(k, "seq") ? Key{Field::sequence, 2} : Key{};
    case 4: return is(k, "grid") ? Key{Field::grid} : Key{};
    case 5: return is(k, "block") ? Key{Field::block} : is(k, "bytes") ? Key{Field::bytes} : is(k, "dtype") ? Key{Field::dtype} : Key{};
    case 6: return is(k, "stream") ? Key{Field::stream} : Key{};
    case 10:
      if (is(k, "Input Dims")) return {Field::input_dims, 0};
      if (is(k, "Input dims")) return {Field::input_dims, 1};
      if (is(k, "input_dims")) return {Field::input_dims, 2};
      if (is(k, "Input type")) return {Field::input_types, 0};
      if (is(k, "input_type")) return {Field::input_types, 2};
      return is(k, "Group size") ? Key{Field::group_size} : Key{};
    case 11:
      if (is(k, "correlation")) return {Field::correlation};
      if (is(k, "External id")) return {Field::external_id};
      return is(k, "Input types") ? Key{Field::input_types, 1} : Key{};
    case 13:
      if (is(k, "Input Strides")) return {Field::input_strides, 0};
      return is(k, "shared memory") ? Key{Field::shared_memory} : is(k, "In msg nelems") ? Key{Field::nelems} : Key{};
    case 15:
      if (is(k, "Sequence number")) return {Field::sequence, 0};
      if (is(k, "sequence number")) return {Field::sequence, 1};
      if (is(k, "Concrete Inputs")) return {Field::input_values, 0};
      if (is(k, "concrete inputs")) return {Field::input_values, 1};
      return is(k, "Collective name") ? Key{Field::collective} : Key{};
    case 20: return is(k, "registers per thread") ? Key{Field::registers} : Key{};
    default: return {};
  }
}

enum class Section { none, trace_events, device_properties, distributed_info };

// Depths count open containers: 1 the document's object, 2 a top-level array ("distributedInfo": an object), 3 an
// event, 4 its "args", 5 an array inside "args" ("grid", "Input Dims"), 6 an element of "Input Dims" or "Input Strides".
template <EventSink Sink>
class EventHandler {
 public:
  static constexpr std::size_t max_object_size = std::size_t(-1);
  static constexpr std::size_t max_array_size = std::size_t(-1);
  static constexpr std::size_t max_key_size = std::size_t(-1);
  static constexpr std::size_t max_string_size = std::size_t(-1);

  explicit EventHandler(Sink& sink) : sink_(sink) {}

  bool saw_trace_events = false;
  bool top_is_object = false;

  bool on_document_begin(error_code&) { return true; }
  bool on_document_end(error_code&) { return true; }
  bool on_object_begin(error_code&) { return open(true); }
  bool on_object_end(std::size_t n, error_code&) { return close(n, true); }
  bool on_array_begin(error_code&) { return open(false); }
  bool on_array_end(std::size_t n, error_code&) { return close(n, false); }

  bool on_key_part(string_view s, std::size_t, error_code&) {
    if (props()) stack_.push_chars(s);
    else part_.append(s.data(), s.size());
    return true;
  }
  bool on_key(string_view s, std::size_t, error_code&) {
    if (props()) {
      stack_.push_key(s);
      return true;
    }
    const std::string_view k = whole(s);
    if (depth_ == 1) top_key_.assign(k);
    else if (events() && depth_ == 3) top_ = event_key(k);
    else if (in_args_ && depth_ == 4) arg_ = arg_key(k);
    else if (section_ == Section::distributed_info && depth_ == 2) dist_field_ = dist_key(k);
    part_.clear();
    return true;
  }
  bool on_string_part(string_view s, std::size_t, error_code&) {
    if (props()) stack_.push_chars(s);
    else if (events() || dist_slot() || recorder_slot()) part_.append(s.data(), s.size());
    return true;
  }
  bool on_string(string_view s, std::size_t, error_code&) {
    if (props()) {
      stack_.push_string(s);
    } else if (events()) {
      const std::string_view v = whole(s);
      if (Scalar* x = scalar_slot()) {
        x->kind = Scalar::Kind::string;
        x->text.assign(v);
        if (x == &shape_scalar_) push_dim();
      } else {
        string_element(v);
      }
      part_.clear();
    } else {
      top_value(Scalar::Kind::string, 0, whole(s));
      part_.clear();
    }
    return true;
  }
  bool on_number_part(string_view, error_code&) { return true; }
  bool on_int64(std::int64_t v, string_view, error_code&) {
    if (props()) stack_.push_int64(v);
    else number(static_cast<double>(v));
    return true;
  }
  bool on_uint64(std::uint64_t v, string_view, error_code&) {
    if (props()) stack_.push_uint64(v);
    else number(static_cast<double>(v));
    return true;
  }
  bool on_double(double v, string_view, error_code&) {
    if (props()) stack_.push_double(v);
    else number(v);
    return true;
  }
  bool on_bool(bool v, error_code&) {
    if (props()) stack_.push_bool(v);
    else other();
    return true;
  }
  bool on_null(error_code&) {
    if (props()) stack_.push_null();
    else other();
    return true;
  }
  bool on_comment_part(string_view, error_code&) { return true; }
  bool on_comment(string_view, error_code&) { return true; }

 private:
  [[nodiscard]] bool events() const { return section_ == Section::trace_events && depth_ >= 3; }
  [[nodiscard]] bool props() const { return section_ == Section::device_properties && depth_ >= 3; }
  // The field of "distributedInfo" a scalar at the current place fills, if any.
  [[nodiscard]] Scalar* dist_slot() const { return section_ == Section::distributed_info && depth_ == 2 ? dist_field_ : nullptr; }
  Scalar* dist_key(std::string_view k) {
    return is(k, "rank") ? &dist_.rank : is(k, "world_size") ? &dist_.world_size : is(k, "backend") ? &dist_.backend : nullptr;
  }
  [[nodiscard]] bool recorder_slot() const { return depth_ == 1 && is(top_key_, "recorder"); }
  // A scalar outside the events: a field of "distributedInfo", or "distributedInfo" itself written as a scalar,
  // or the trace's "recorder".
  void top_value(Scalar::Kind kind, double v = 0, std::string_view text = {}) {
    if (recorder_slot()) {
      if (kind == Scalar::Kind::string) sink_.recorder(text.substr(0, 200));
    } else if (Scalar* x = dist_slot()) {
      x->kind = kind;
      x->number = v;
      x->text.assign(text);
    } else if (depth_ == 1 && is(top_key_, "distributedInfo")) {
      dist_ = {};
      sink_.distributed_info(dist_);
    }
  }

  std::string_view whole(string_view s) {
    if (part_.empty()) return {s.data(), s.size()};
    part_.append(s.data(), s.size());
    return part_;
  }

  // The scalar a value at the current place fills, if it is one of the fields kept as a single scalar.
  Scalar* scalar_slot() {
    if (!event_object_) return nullptr;
    if (depth_ == 3) {
      switch (top_.field) {
        case Field::ph: return &ev_.ph;
        case Field::cat: return &ev_.cat;
        case Field::name: return &ev_.name;
        case Field::ts: return &ev_.ts;
        case Field::dur: return &ev_.dur;
        case Field::tid: return &ev_.tid;
        default: return nullptr;
      }
    }
    if (depth_ == 4 && in_args_) {
      switch (arg_.field) {
        case Field::correlation: return &ev_.correlation;
        case Field::stream: return &ev_.stream;
        case Field::registers: return &ev_.registers;
        case Field::shared_memory: return &ev_.shared_memory;
        case Field::bytes: return &ev_.bytes;
        case Field::collective: return &ev_.collective;
        case Field::nelems: return &ev_.nelems;
        case Field::group_size: return &ev_.group_size;
        case Field::dtype: return &ev_.dtype;
        case Field::external_id: return &ev_.external_id;
        case Field::sequence:
          if (arg_.rank > ev_.sequence_rank) return nullptr;
          ev_.sequence_rank = arg_.rank;
          return &ev_.sequence;
        default: return nullptr;
      }
    }
    if (depth_ == 5 && in_args_ && (arg_.field == Field::grid || arg_.field == Field::block)) {
      Dims& d = arg_.field == Field::grid ? ev_.grid : ev_.block;
      return d.n < 3 ? &d.v[d.n++] : (++d.n, nullptr);
    }
    if (depth_ == 6 && in_args_ && int_lists() && shape_open_) {
      shape_scalar_.clear();
      return &shape_scalar_;  // a dimension: the caller pushes it once it holds the value
    }
    return nullptr;
  }

  // A string that is an element of "Input type" or "Concrete Inputs", or a quoted dimension.
  void string_element(std::string_view v) {
    if (depth_ == 5 && in_args_) list_element(v);
  }

  void list_element(std::string_view v) {
    auto put = [&](std::vector<std::string>& list, std::size_t& n) {
      if (n < list.size()) list[n].assign(v);
      else list.emplace_back(v);
      ++n;
    };
    if (arg_.field == Field::input_types) put(ev_.types, ev_.n_types);
    else if (arg_.field == Field::input_values) put(ev_.values, ev_.n_values);
    else if (int_lists()) new_shape(false);  // a non-array element: an input without a shape
  }

  void number(double v) {
    if (!events()) return top_value(Scalar::Kind::number, v);
    if (Scalar* x = scalar_slot()) {
      x->kind = Scalar::Kind::number;
      x->number = v;
      if (x == &shape_scalar_) push_dim();
    } else if (depth_ == 5 && in_args_) {
      list_element({});
    }
  }

  void other() {
    if (!events()) return top_value(Scalar::Kind::other);
    if (Scalar* x = scalar_slot()) x->kind = Scalar::Kind::other;
    else if (depth_ == 5 && in_args_) list_element({});
  }

  // The lists of integer lists ("Input Dims": a shape per input; "Input Strides": its strides) the current field
  // fills, with their count; nullptr for other fields.
  [[nodiscard]] IntLists* int_lists() {
    return arg_.field == Field::input_dims ? &ev_.shapes : arg_.field == Field::input_strides ? &ev_.strides : nullptr;
  }

  void push_dim() {
    IntLists& l = *int_lists();
    if (auto d = as_whole(shape_scalar_, 0, 0x1p62)) l.lists[l.n - 1].push_back(*d);
  }

  void new_shape(bool open) {
    IntLists& l = *int_lists();
    if (l.n < l.lists.size()) l.lists[l.n].clear();
    else l.lists.emplace_back();
    ++l.n;
    shape_open_ = open;
  }

  // A list field ("Input Dims", ...) starts: a spelling ranked below the one already read is skipped.
  void start_list(bool is_array) {
    auto start = [&](int& rank, bool& flag, std::size_t& n) {
      if (arg_.rank > rank) {
        arg_.field = Field::none;
        return;
      }
      rank = arg_.rank;
      flag = is_array;
      n = 0;
    };
    if (arg_.field == Field::input_dims) start(dims_rank_, ev_.shapes.is_array, ev_.shapes.n);
    else if (arg_.field == Field::input_strides) start(strides_rank_, ev_.strides.is_array, ev_.strides.n);
    else if (arg_.field == Field::input_types) start(types_rank_, ev_.types_array, ev_.n_types);
    else if (arg_.field == Field::input_values) start(values_rank_, ev_.values_array, ev_.n_values);
    if (!is_array && arg_.field != Field::none) arg_.field = Field::none;  // an object where a list belongs: ignored
  }

  bool open(bool object) {
    ++depth_;
    if (depth_ == 1) top_is_object = object;
    if (depth_ == 2) {
      section_ = Section::none;
      if (!object && is(top_key_, "traceEvents")) {
        section_ = Section::trace_events;
        saw_trace_events = true;
      } else if (!object && (is(top_key_, "deviceProperties") || is(top_key_, "computeProperties"))) {  // the latter: torch 1.8
        section_ = Section::device_properties;
      } else if (is(top_key_, "distributedInfo")) {
        section_ = Section::distributed_info;
        dist_ = {};
        dist_.is_object = object;
        dist_field_ = nullptr;
      }
      return true;
    }
    if (section_ == Section::distributed_info) {
      if (depth_ == 3 && dist_field_) dist_field_->kind = Scalar::Kind::other;  // a container where a scalar belongs
      return true;
    }
    if (props()) {
      if (depth_ == 3) stack_.reset();
      return true;
    }
    if (!events()) return true;
    if (depth_ == 3) {
      ev_.clear();
      event_object_ = object;
      ev_.is_object = object;
      top_ = {};
      in_args_ = false;
      dims_rank_ = strides_rank_ = types_rank_ = values_rank_ = 99;
      return true;
    }
    if (!event_object_) return true;
    if (depth_ == 4) {
      if (top_.field == Field::args) in_args_ = object;
      else if (Scalar* x = scalar_slot_at(3)) x->kind = Scalar::Kind::other;
      return true;
    }
    if (!in_args_) return true;
    if (depth_ == 5) {
      if (arg_.field == Field::grid || arg_.field == Field::block) {
        Dims& d = arg_.field == Field::grid ? ev_.grid : ev_.block;
        d.clear();
        d.present = true;
        d.is_array = !object;
      } else if (int_lists() || arg_.field == Field::input_types || arg_.field == Field::input_values) {
        start_list(!object);
      } else if (Scalar* x = scalar_slot_at(4)) {
        x->kind = Scalar::Kind::other;
      }
      return true;
    }
    if (depth_ == 6) {  // a container inside a list: an input's shape, or an element of another kind
      if (int_lists()) new_shape(!object);
      else if (arg_.field == Field::grid || arg_.field == Field::block) {
        --depth_;
        other();
        ++depth_;
      } else if (arg_.field == Field::input_types || arg_.field == Field::input_values) {
        list_element({});
      }
    }
    return true;
  }

  // scalar_slot() as if the parser stood at `depth` (a container opens where a scalar was expected).
  Scalar* scalar_slot_at(int depth) {
    const int saved = depth_;
    depth_ = depth;
    Scalar* x = scalar_slot();
    depth_ = saved;
    return x;
  }

  bool close(std::size_t n, bool object) {
    if (props()) {
      if (object) stack_.push_object(n);
      else stack_.push_array(n);
      if (depth_ == 3) {
        const boost::json::value v = stack_.release();
        if (v.is_object()) sink_.device_properties(v.get_object());
      }
    } else if (events()) {
      if (depth_ == 6) shape_open_ = false;
      if (depth_ == 4 && event_object_) in_args_ = false;
      if (depth_ == 3 && event_object_) sink_.event(ev_);
    }
    if (depth_ == 2 && section_ == Section::distributed_info) sink_.distributed_info(dist_);
    if (depth_ == 2) section_ = Section::none;
    --depth_;
    return true;
  }

  Sink& sink_;
  boost::json::value_stack stack_;
  int depth_ = 0;
  Section section_ = Section::none;
  std::string part_, top_key_;
  Key top_, arg_;
  bool event_object_ = false, in_args_ = false, shape_open_ = false;
  int dims_rank_ = 99, strides_rank_ = 99, types_rank_ = 99, values_rank_ = 99;
  Scalar shape_scalar_;
  RawEvent ev_;
  RawDistributed dist_;
  Scalar* dist_field_ = nullptr;  // the field of dist_ the last key of "distributedInfo" names
};

}  // namespace detail

// Reads `path` (gzip or plain; zlib reads both; "-" is standard input) in 1 MiB chunks. Throws
// habitat::error naming the file and the byte offset on unreadable, truncated or invalid input.
// `progress`, if given, is called after each chunk with the compressed bytes read so far.
using Progress = std::function<void(std::size_t bytes_read)>;

namespace detail {

// Decompression runs on a thread of its own, a few chunks ahead of the parser: on two cores the read
// then costs about what the slower of the two costs, not their sum.
class InflateAhead {
 public:
  // Left uninitialized: zeroing four MiB would cost a small trace more than reading it.
  using Buffer = std::unique_ptr<char[]>;
  struct Chunk {
    Buffer data;
    std::size_t size = 0;           // bytes of `data` in use; 0 at the end of the file
    long long compressed_at = -1;   // the file's offset after this chunk
    std::string error;              // zlib's message when the file could not be read or decompressed
  };

  explicit InflateAhead(gzFile in) : in_(in), thread_([this] { run(); }) {}
  InflateAhead(const InflateAhead&) = delete;
  InflateAhead& operator=(const InflateAhead&) = delete;
  ~InflateAhead() {
    {
      std::lock_guard lock(m_);
      stop_ = true;
    }
    cv_.notify_all();
    thread_.join();
  }

  // The next chunk, in file order; the last one has size 0 or an error.
  Chunk next() {
    std::unique_lock lock(m_);
    cv_.wait(lock, [&] { return !ready_.empty(); });
    Chunk c = std::move(ready_.front());
    ready_.pop_front();
    return c;
  }
  // Hands a chunk's buffer back for reuse.
  void recycle(Chunk&& c) {
    {
      std::lock_guard lock(m_);
      spare_.push_back(std::move(c.data));
    }
    cv_.notify_all();
  }

 private:
  static constexpr std::size_t chunk_bytes = 1 << 20, chunks_ahead = 4;

  void run() {
    for (std::size_t i = 0; i < chunks_ahead; ++i) spare_.emplace_back(new char[chunk_bytes]);
    for (;;) {
      Chunk c;
      {
        std::unique_lock lock(m_);
        cv_.wait(lock, [&] { return stop_ || !spare_.empty(); });
        if (stop_) return;
        c.data = std::move(spare_.back());
        spare_.pop_back();
      }
      const int n = gzread(in_, c.data.get(), static_cast<unsigned>(chunk_bytes));
      int errnum = Z_OK;
      const char* msg = gzerror(in_, &errnum);
      // gzread reports a cut-off gzip stream (even one missing only its 8-byte trailer, the checksum of
      // everything before it) only through gzerror, once it has returned what it had.
      if (errnum == Z_BUF_ERROR && n <= 0) c.error = "the gzip stream ends early (the file is cut short or its trailer is missing)";
      else if (n < 0 || (n == 0 && errnum != Z_OK)) c.error = without_prefix(msg ? msg : "read error");
      c.size = n > 0 ? static_cast<std::size_t>(n) : 0;
      c.compressed_at = gzoffset(in_);
      const bool last = c.size == 0;
      {
        std::lock_guard lock(m_);
        ready_.push_back(std::move(c));
      }
      cv_.notify_all();
      if (last) return;
    }
  }

  // zlib's messages start with the file's name, which the error names already.
  static std::string without_prefix(std::string msg) {
    if (const auto at = msg.find(": "); at != std::string::npos) msg.erase(0, at + 2);
    return msg;
  }

  gzFile in_;
  std::mutex m_;
  std::condition_variable cv_;
  std::deque<Chunk> ready_;
  std::vector<Buffer> spare_;
  bool stop_ = false;
  std::thread thread_;  // last: starts once the members it uses exist
};

}  // namespace detail

template <EventSink Sink>
void stream_events(const std::string& path, Sink& sink, const Progress& progress = {}) {
  std::unique_ptr<gzFile_s, int (*)(gzFile)> in(path == "-" ? gzdopen(dup(STDIN_FILENO), "rb") : gzopen(path.c_str(), "rb"), gzclose);
  if (!in) throw make_error(path, "", "cannot open trace file");
  gzbuffer(in.get(), 1 << 17);
  boost::json::parse_options opts;
  opts.allow_trailing_commas = true;
  opts.allow_invalid_utf8 = true;
  opts.allow_comments = true;
  boost::json::basic_parser<detail::EventHandler<Sink>> parser(opts, sink);
  std::size_t offset = 0;
  bool any = false;
  {
    detail::InflateAhead chunks(in.get());
    for (;;) {
      detail::InflateAhead::Chunk c = chunks.next();
      if (!c.error.empty()) throw make_error(path, "byte " + std::to_string(offset), "cannot decompress: " + c.error);
      if (c.size == 0) break;
      any = true;
      boost::system::error_code ec;
      std::size_t pos = 0;
      while (pos < c.size && !parser.done()) {
        pos += parser.write_some(true, c.data.get() + pos, c.size - pos, ec);
        if (ec) throw make_error(path, "byte " + std::to_string(offset + pos), "invalid JSON: " + ec.message());
      }
      offset += c.size;
      if (progress && c.compressed_at >= 0) progress(static_cast<std::size_t>(c.compressed_at));
      chunks.recycle(std::move(c));
      // After the document, the file is still read to its end: a gzip stream is checked only there.
    }
  }
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
