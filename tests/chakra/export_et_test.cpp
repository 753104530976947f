// `habitat export-et`: the Chakra ET files of a fixture's DDP step, read back by a reader of their own
// (the varint framing parsed here, each message decoded with the classes protoc generated from
// adapters/chakra/proto/et_def.proto), checked against habitat's prediction, and decoded by protoc itself
// against the schema where protoc is installed.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

#include "builtin_data.hpp"
#include "et_def.pb.h"
#include "export_et_cmd.hpp"
#include "fixtures.hpp"

using namespace habitat;
namespace fs = std::filesystem;

namespace {

// One ET file as its readers see it: a GlobalMetadata, then Nodes, each preceded by its size (varint).
struct EtFile {
  ChakraProtoMsg::GlobalMetadata metadata;
  std::vector<ChakraProtoMsg::Node> nodes;
  std::vector<std::string> raw;  // each message's bytes, the metadata first
};

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  REQUIRE(in);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

EtFile read_et(const std::string& path) {
  const std::string bytes = slurp(path);
  EtFile f;
  std::size_t at = 0;
  while (at < bytes.size()) {
    std::uint64_t size = 0;
    int shift = 0;
    for (;;) {
      REQUIRE(at < bytes.size());
      REQUIRE(shift < 35);  // Chakra's readers take a 32-bit size
      const auto b = static_cast<unsigned char>(bytes[at++]);
      size |= static_cast<std::uint64_t>(b & 0x7f) << shift;
      shift += 7;
      if (!(b & 0x80)) break;
    }
    REQUIRE(size > 0);  // a zero size ends the file for Chakra's Python reader
    REQUIRE(at + size <= bytes.size());
    f.raw.push_back(bytes.substr(at, size));
    at += size;
  }
  REQUIRE(!f.raw.empty());
  REQUIRE(f.metadata.ParseFromString(f.raw.front()));
  for (std::size_t i = 1; i < f.raw.size(); ++i) {
    ChakraProtoMsg::Node n;
    REQUIRE(n.ParseFromString(f.raw[i]));
    f.nodes.push_back(std::move(n));
  }
  return f;
}

const ChakraProtoMsg::AttributeProto* find_attr(const google::protobuf::RepeatedPtrField<ChakraProtoMsg::AttributeProto>& attrs,
                                                const std::string& name) {
  for (const auto& a : attrs)
    if (a.name() == name) return &a;
  return nullptr;
}

// The files as ASTRA-sim's workload layer runs them: a node starts once its data_deps have finished and its
// resource is free (one host node, one GPU compute node and one collective at a time), for duration_micros
// (collectives too: here at habitat's time, where ASTRA-sim simulates its network). Returns the makespan.
double replay_us(const EtFile& f) {
  const auto& nodes = f.nodes;
  const int n = static_cast<int>(nodes.size());
  std::map<std::uint64_t, int> index;
  for (int i = 0; i < n; ++i) index[nodes[i].id()] = i;
  auto resource = [&](int i) {
    if (nodes[i].type() == ChakraProtoMsg::COMM_COLL_NODE) return 2;
    return find_attr(nodes[i].attr(), "is_cpu_op")->bool_val() ? 0 : 1;
  };
  std::vector<int> waiting(n, 0);
  std::vector<std::vector<int>> children(n);
  std::vector<double> ready(n, 0);
  for (int i = 0; i < n; ++i)
    for (const auto d : nodes[i].data_deps()) ++waiting[i], children[index.at(d)].push_back(i);
  std::set<int> queue[3];
  bool busy[3] = {false, false, false};
  std::multimap<double, int> running;  // end time -> node
  for (int i = 0; i < n; ++i)
    if (!waiting[i]) queue[resource(i)].insert(i);
  double now = 0;
  int finished = 0;
  auto issue = [&] {
    for (int r = 0; r < 3; ++r)
      if (!busy[r] && !queue[r].empty()) {
        const int i = *queue[r].begin();
        queue[r].erase(queue[r].begin());
        busy[r] = true;
        running.emplace(std::max(now, ready[i]) + static_cast<double>(nodes[i].duration_micros()), i);
      }
  };
  issue();
  while (!running.empty()) {
    const auto [end, i] = *running.begin();
    running.erase(running.begin());
    now = end;
    busy[resource(i)] = false;
    ++finished;
    for (const int c : children[i]) {
      ready[c] = std::max(ready[c], end);
      if (--waiting[c] == 0) queue[resource(c)].insert(c);
    }
    issue();
  }
  REQUIRE(finished == n);  // no cycle, no dependency on a missing node
  return now;
}

std::string tmp_dir(const std::string& name) {
  const fs::path d = fs::path(HABITAT_TEST_TMP) / name;
  fs::remove_all(d);
  return d.string();
}

cli::ExportEtArgs resnet_args(const std::string& out, int world_size) {
  cli::ExportEtArgs a;
  a.trace_path = test::fixture("h100", "resnet50_fp32_b32");
  a.to = "H200";
  a.batch = 32;
  a.ddp.world_size = world_size;
  a.out_dir = out;
  return a;
}

cli::Common quiet() {
  cli::Common c;
  c.quiet = true;
  return c;
}

}  // namespace

TEST_CASE("export-et writes one Chakra ET file per rank of a fixture's DDP step", "[chakra]") {
  const std::string out = tmp_dir("et_resnet50_ws2");
  std::ostringstream err;
  const cli::ExportEtResult r = cli::export_et(resnet_args(out, 2), quiet(), test::catalog(), err);
  REQUIRE(r.files.size() == 2);
  CHECK(r.files[0] == (fs::path(out) / "resnet50_fp32_b32.0.et").string());
  CHECK(r.files[1] == (fs::path(out) / "resnet50_fp32_b32.1.et").string());

  // What the files must hold, from the library directly: the one-GPU prediction, DDP's plan and step.
  const Trace t = kineto::read_trace(test::fixture("h100", "resnet50_fp32_b32"));
  const Device& dest = test::catalog().at("H200");
  const Device origin = resolve_origin(test::catalog(), t, std::nullopt);
  sim::DdpOptions opt;
  opt.world_size = 2;
  const comm::DdpPlan plan = comm::ddp_plan(t, opt.caps);
  const sim::HostModel hm = sim::host_model(test::hosts(), origin, dest);
  const sim::StepProgram program = sim::build_program(t, hm);
  const sim::DdpStep step = sim::ddp_step(t, program, plan, dest, sim::ddp_topology(dest, opt), sim::ddp_host_scale(test::hosts(), hm.runs_on), opt);
  std::vector<double> kernel_us;
  for (const auto& k : r.prediction.kernels) kernel_us.push_back(k.duration_us);
  REQUIRE(kernel_us.size() == t.kernels.size());
  const std::vector<double> ddp_us = sim::ddp_durations(kernel_us, step);
  double want_gpu_us = 0;
  int want_compute = 0, want_comm = 0;
  for (int k = 0; k < static_cast<int>(ddp_us.size()); ++k) {
    if (step.program.is_comm(k)) ++want_comm;
    else ++want_compute, want_gpu_us += ddp_us[k];
  }
  CHECK(want_comm == static_cast<int>(plan.buckets.size() + plan.buffers.size()));

  const EtFile f0 = read_et(r.files[0]), f1 = read_et(r.files[1]);
  CHECK(fs::file_size(r.files[0]) == r.bytes_per_file);
  // Ranks of a data-parallel step run the same nodes; only the metadata's rank differs.
  CHECK(std::equal(f0.raw.begin() + 1, f0.raw.end(), f1.raw.begin() + 1, f1.raw.end()));
  for (int rank = 0; rank < 2; ++rank) {
    const auto& m = (rank == 0 ? f0 : f1).metadata;
    CHECK(m.version() == "0.0.4");
    REQUIRE(find_attr(m.attr(), "schema"));
    CHECK(find_attr(m.attr(), "schema")->string_val() == "1.0.2-chakra.0.0.4");
    REQUIRE(find_attr(m.attr(), "rank"));
    CHECK(find_attr(m.attr(), "rank")->int64_val() == rank);
    CHECK(find_attr(m.attr(), "world_size")->int64_val() == 2);
    CHECK(find_attr(m.attr(), "gpu")->string_val() == "H200");
    CHECK(find_attr(m.attr(), "gradient_bytes")->int64_val() == static_cast<std::int64_t>(plan.gradient_bytes()));
    CHECK(find_attr(m.attr(), "habitat_step_us")->double_val() == Approx(r.prediction.iteration_us));
  }

  const auto& nodes = f0.nodes;
  REQUIRE(nodes.size() == r.graph.nodes.size());
  std::map<std::uint64_t, const ChakraProtoMsg::Node*> by_id;
  std::uint64_t gpu_micros = 0;
  int compute = 0, host = 0, comm_nodes = 0;
  std::vector<std::int64_t> allreduce_sizes;
  for (const auto& n : nodes) {
    INFO("node " << n.id() << " " << n.name());
    CHECK(by_id.emplace(n.id(), &n).second);  // ids unique
    for (const auto d : n.data_deps()) {
      CHECK(by_id.count(d) == 1);  // on a node written before it
      CHECK(d != n.id());
    }
    CHECK(n.ctrl_deps_size() == 0);
    CHECK(!n.name().empty());
    const auto* cpu = find_attr(n.attr(), "is_cpu_op");
    REQUIRE(cpu);
    REQUIRE(cpu->value_case() == ChakraProtoMsg::AttributeProto::kBoolVal);
    if (n.type() == ChakraProtoMsg::COMP_NODE) {
      if (cpu->bool_val()) {
        ++host;
      } else {
        ++compute;
        gpu_micros += n.duration_micros();
        REQUIRE(find_attr(n.attr(), "stream"));
      }
    } else {
      REQUIRE(n.type() == ChakraProtoMsg::COMM_COLL_NODE);
      CHECK_FALSE(cpu->bool_val());
      ++comm_nodes;
      const auto* type = find_attr(n.attr(), "comm_type");
      const auto* size = find_attr(n.attr(), "comm_size");
      REQUIRE(type);
      REQUIRE(size);
      REQUIRE(type->value_case() == ChakraProtoMsg::AttributeProto::kInt64Val);
      REQUIRE(size->value_case() == ChakraProtoMsg::AttributeProto::kInt64Val);
      CHECK(size->int64_val() > 0);
      if (type->int64_val() == ChakraProtoMsg::ALL_REDUCE) {
        allreduce_sizes.push_back(size->int64_val());
        // DDP starts a bucket's all-reduce after the hook that put its last gradient in.
        bool after_hook = false;
        for (const auto d : n.data_deps()) after_hook |= by_id.at(d)->name() == "DDP: gradient / N into bucket";
        CHECK(after_hook);
      } else {
        CHECK(type->int64_val() == ChakraProtoMsg::BROADCAST);
      }
    }
  }
  // Node counts: every kernel of the DDP step, its collectives, the host's launches.
  CHECK(compute == want_compute);
  CHECK(comm_nodes == want_comm);
  CHECK(host > 0);
  CHECK(host == r.graph.host_nodes);
  // Compute durations: the predicted GPU time, within the rounding to whole microseconds.
  CHECK(std::abs(static_cast<double>(gpu_micros) - want_gpu_us) <= 0.5 + 1e-6);
  CHECK(r.graph.gpu_us == Approx(want_gpu_us).epsilon(1e-12));
  // The all-reduces carry DDP's buckets: their sizes add up to the gradients.
  CHECK(allreduce_sizes.size() == plan.buckets.size());
  std::int64_t sum = 0;
  for (const auto s : allreduce_sizes) sum += s;
  CHECK(sum == static_cast<std::int64_t>(plan.gradient_bytes()));
  std::multiset<std::int64_t> got(allreduce_sizes.begin(), allreduce_sizes.end()), want;
  for (const auto& b : plan.buckets) want.insert(static_cast<std::int64_t>(b.bytes));
  CHECK(got == want);
  // The buckets go back into the gradients after their all-reduce, at the end of the backward pass.
  int back_after_allreduce = 0;
  for (const auto& n : nodes)
    if (n.name() == "DDP: bucket back into gradient")
      for (const auto d : n.data_deps()) back_after_allreduce += by_id.at(d)->type() == ChakraProtoMsg::COMM_COLL_NODE;
  CHECK(back_after_allreduce == static_cast<int>(plan.buckets.size()));

  // Run as ASTRA-sim's workload layer runs it (collectives at habitat's time), the step takes what habitat
  // predicts for one step from an idle GPU: the launch latencies and gaps, and compute slowed by overlapping
  // communication, are what the files leave out.
  REQUIRE(r.prediction.timeline);
  CHECK(replay_us(f0) == Approx(r.prediction.timeline->first_step_us).epsilon(0.05));

  // The schema itself: protoc decodes the metadata and every node (each framed node, given a field tag,
  // is one element of a repeated Node field) and finds no field it does not know.
  const char* protoc = HABITAT_PROTOC;
  if (std::string(protoc).empty() || !fs::exists(protoc)) {
    WARN("protoc not found: the files were not decoded against the schema by protoc");
    return;
  }
  const fs::path dir = fs::path(out) / "protoc";
  fs::create_directories(dir);
  std::ofstream(dir / "nodes.proto") << "syntax = \"proto3\";\nimport \"et_def.proto\";\npackage habitat_test;\n"
                                        "message Nodes { repeated ChakraProtoMsg.Node node = 1; }\n";
  std::ofstream(dir / "metadata.bin", std::ios::binary) << f0.raw.front();
  {
    std::ofstream nodes_bin(dir / "nodes.bin", std::ios::binary);
    std::string framed;
    for (std::size_t i = 1; i < f0.raw.size(); ++i) {
      framed.push_back('\x0a');  // field 1, length-delimited
      std::uint64_t v = f0.raw[i].size();
      while (v >= 0x80) framed.push_back(static_cast<char>((v & 0x7f) | 0x80)), v >>= 7;
      framed.push_back(static_cast<char>(v));
      framed += f0.raw[i];
    }
    nodes_bin << framed;
  }
  const std::string paths = " --proto_path=" + std::string(HABITAT_CHAKRA_PROTO_DIR) + " --proto_path=" + dir.string();
  const std::string meta_cmd = std::string(protoc) + paths + " --decode=ChakraProtoMsg.GlobalMetadata et_def.proto < " + (dir / "metadata.bin").string() +
                               " > " + (dir / "metadata.txt").string() + " 2>&1";
  const std::string nodes_cmd = std::string(protoc) + paths + " --decode=habitat_test.Nodes nodes.proto < " + (dir / "nodes.bin").string() + " > " +
                                (dir / "nodes.txt").string() + " 2>&1";
  INFO(meta_cmd);
  REQUIRE(std::system(meta_cmd.c_str()) == 0);
  const std::string meta_text = slurp((dir / "metadata.txt").string());
  CHECK(meta_text.find("version: \"0.0.4\"") != std::string::npos);
  CHECK(meta_text.find("string_val: \"1.0.2-chakra.0.0.4\"") != std::string::npos);
  INFO(nodes_cmd);
  REQUIRE(std::system(nodes_cmd.c_str()) == 0);
  const std::string text = slurp((dir / "nodes.txt").string());
  std::size_t decoded = 0, unknown = 0;
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    const auto first = line.find_first_not_of(' ');
    if (first == std::string::npos) continue;
    if (line.compare(first, 6, "node {") == 0) ++decoded;
    if (std::isdigit(static_cast<unsigned char>(line[first]))) ++unknown;  // protoc prints unknown fields by number
  }
  CHECK(decoded == nodes.size());
  CHECK(unknown == 0);
  CHECK(text.find("type: COMM_COLL_NODE") != std::string::npos);
  CHECK(text.find("type: COMP_NODE") != std::string::npos);
  CHECK(meta_text.find("\n1:") == std::string::npos);
}

TEST_CASE("export-et on one GPU, GPU only: one node per kernel in stream order, summing to the predicted GPU time", "[chakra]") {
  auto a = resnet_args(tmp_dir("et_resnet50_ws1"), 1);
  a.gpu_only = true;
  a.prefix = "one";
  std::ostringstream err;
  const cli::ExportEtResult r = cli::export_et(a, quiet(), test::catalog(), err);
  REQUIRE(r.files.size() == 1);
  CHECK(fs::path(r.files[0]).filename() == "one.0.et");
  const EtFile f = read_et(r.files[0]);
  REQUIRE(f.nodes.size() == r.prediction.kernels.size());
  std::uint64_t micros = 0;
  std::map<std::int64_t, std::uint64_t> stream_last;
  for (const auto& n : f.nodes) {
    CHECK(n.type() == ChakraProtoMsg::COMP_NODE);
    CHECK_FALSE(find_attr(n.attr(), "is_cpu_op")->bool_val());
    micros += n.duration_micros();
    // Each kernel follows the one before it on its stream.
    const std::int64_t stream = find_attr(n.attr(), "stream")->int64_val();
    if (auto it = stream_last.find(stream); it != stream_last.end()) {
      bool follows = false;
      for (const auto d : n.data_deps()) follows |= d == it->second;
      CHECK(follows);
    }
    stream_last[stream] = n.id();
  }
  CHECK(std::abs(static_cast<double>(micros) - r.prediction.gpu_active_us) <= 0.5 + 1e-6);
  CHECK(r.graph.comm_nodes == 0);
  CHECK(find_attr(f.metadata.attr(), "world_size")->int64_val() == 1);
  CHECK_FALSE(find_attr(f.metadata.attr(), "host_nodes")->bool_val());
}

TEST_CASE("export-et --steps: the step back to back, as a training loop runs it", "[chakra]") {
  auto a = resnet_args(tmp_dir("et_resnet50_steps"), 2);
  std::ostringstream err;
  const cli::ExportEtResult one = cli::export_et(a, quiet(), test::catalog(), err);
  a.steps = 3;
  a.prefix = "three";
  const cli::ExportEtResult three = cli::export_et(a, quiet(), test::catalog(), err);
  const EtFile f = read_et(three.files[0]);
  CHECK(f.nodes.size() == 3 * one.graph.nodes.size());
  CHECK(find_attr(f.metadata.attr(), "steps")->int64_val() == 3);
  CHECK(three.graph.buckets == 3 * one.graph.buckets);
  CHECK(three.graph.allreduce_bytes == 3 * one.graph.allreduce_bytes);
  // Each step's first host node follows the previous step's last one: the host runs on into the next step.
  int host_roots = 0;
  for (const auto& n : f.nodes)
    if (find_attr(n.attr(), "is_cpu_op")->bool_val() && n.data_deps_size() == 0) ++host_roots;
  CHECK(host_roots == 1);
  // One step from an idle GPU, then steps back to back: habitat's timeline, within what the files leave out.
  const double want = three.prediction.timeline->first_step_us + 2 * three.prediction.iteration_us;
  CHECK(replay_us(f) == Approx(want).epsilon(0.05));
}

TEST_CASE("export-et of FSDP and tensor parallel: all-gathers, reduce-scatters and all-reduces with their messages", "[chakra]") {
  cli::ExportEtArgs a;
  a.trace_path = std::string(HABITAT_FIXTURES) + "/parallel/h200x2/gpt512_bf16_b8.n1.json.gz";
  a.to = "H200";
  a.ddp.world_size = 2;
  a.out_dir = tmp_dir("et_gpt512_fsdp");
  a.parallel = "fsdp";
  std::ostringstream err;
  const cli::ExportEtResult r = cli::export_et(a, quiet(), test::catalog(), err);
  REQUIRE(r.files.size() == 2);
  const EtFile f = read_et(r.files[0]);
  const comm::FsdpPlan plan = comm::fsdp_plan(kineto::read_trace(a.trace_path));
  // Per unit an all-gather before forward and one before backward; the root's once; a reduce-scatter each.
  CHECK(r.graph.all_gathers == 2 * 8 + 1);
  CHECK(r.graph.reduce_scatters == 8 + 1);
  CHECK(r.graph.reduce_scatter_bytes == Approx(plan.parameter_bytes()));
  CHECK(r.graph.all_gather_bytes == Approx(2 * plan.parameter_bytes() - plan.root.bytes));
  int gathers = 0, scatters = 0;
  for (const auto& n : f.nodes) {
    if (n.type() != ChakraProtoMsg::COMM_COLL_NODE) continue;
    const auto type = find_attr(n.attr(), "comm_type")->int64_val();
    gathers += type == ChakraProtoMsg::ALL_GATHER;
    scatters += type == ChakraProtoMsg::REDUCE_SCATTER;
    CHECK(find_attr(n.attr(), "comm_size")->int64_val() > 0);
  }
  CHECK(gathers == 17);
  CHECK(scatters == 9);
  CHECK(find_attr(f.metadata.attr(), "parallel")->string_val().starts_with("FSDP full shard"));
  CHECK(replay_us(f) == Approx(r.prediction.timeline->first_step_us).epsilon(0.1));

  a.parallel = "tp";
  a.out_dir = tmp_dir("et_gpt512_tp");
  const cli::ExportEtResult tp = cli::export_et(a, quiet(), test::catalog(), err);
  CHECK(tp.graph.buckets == 32);  // per block 2 all-reduces forward, 2 backward
  CHECK(tp.graph.allreduce_bytes == Approx(32 * 8.0 * 512 * 512 * 2));  // batch 8 x seq 512 x d 512, bf16
  CHECK(find_attr(read_et(tp.files[1]).metadata.attr(), "parallel")->string_val().starts_with("Tensor parallel"));
}

namespace {

// Every rank's file of a pipeline step replayed together as ASTRA-sim's workload layer would with an ideal
// network of habitat's send times: a node ends duration_micros after its data_deps (nodes of one rank are
// chained where they share a resource), a receive when its deps and the matching send (same source,
// destination, tag and size) have ended. Returns the makespan; every node must run.
double replay_ranks_us(const std::vector<EtFile>& files) {
  using Key = std::tuple<std::int32_t, std::int32_t, std::int32_t, std::int64_t>;
  auto key = [](const ChakraProtoMsg::Node& n) {
    return Key{find_attr(n.attr(), "comm_src")->int32_val(), find_attr(n.attr(), "comm_dst")->int32_val(),
               find_attr(n.attr(), "comm_tag")->int32_val(), find_attr(n.attr(), "comm_size")->int64_val()};
  };
  std::map<Key, double> sent;
  std::vector<std::map<std::uint64_t, double>> end(files.size());
  std::vector<std::size_t> next(files.size(), 0);
  double makespan = 0;
  for (bool progress = true; progress;) {
    progress = false;
    for (std::size_t f = 0; f < files.size(); ++f)
      while (next[f] < files[f].nodes.size()) {
        const auto& n = files[f].nodes[next[f]];
        double start = 0;
        for (const auto d : n.data_deps()) start = std::max(start, end[f].at(d));  // earlier in the file
        double finish = start + static_cast<double>(n.duration_micros());
        if (n.type() == ChakraProtoMsg::COMM_RECV_NODE) {
          const auto it = sent.find(key(n));
          if (it == sent.end()) break;  // its send has not run yet
          finish = std::max(start, it->second);
        }
        if (n.type() == ChakraProtoMsg::COMM_SEND_NODE) REQUIRE(sent.emplace(key(n), finish).second);
        end[f][n.id()] = finish;
        makespan = std::max(makespan, finish);
        ++next[f];
        progress = true;
      }
  }
  for (std::size_t f = 0; f < files.size(); ++f) REQUIRE(next[f] == files[f].nodes.size());  // no receive without its send
  return makespan;
}

}  // namespace

TEST_CASE("export-et of pipeline parallel: a graph per stage whose sends and receives pair up and replay habitat's step", "[chakra][pp]") {
  cli::ExportEtArgs a;
  a.trace_path = std::string(HABITAT_FIXTURES) + "/parallel/h200x2/gpt512_bf16_b8.n1.json.gz";
  a.to = "H200";
  a.batch = 8;
  std::ostringstream err;
  for (const char* spec : {"pp=2,microbatches=4", "pp=4,schedule=gpipe"}) {
    INFO(spec);
    a.parallel = spec;
    double makespan[2] = {0, 0};
    cli::ExportEtResult r;
    for (const int steps : {3, 4}) {
      a.steps = steps;
      a.out_dir = tmp_dir(std::string("et_gpt512_pp_") + std::to_string(steps));
      r = cli::export_et(a, quiet(), test::catalog(), err);
      const int S = std::string(spec).starts_with("pp=2") ? 2 : 4, M = S == 2 ? 4 : 8;  // default micro-batches: twice the stages
      REQUIRE(r.files.size() == static_cast<std::size_t>(S));
      REQUIRE(r.stages.size() == static_cast<std::size_t>(S));
      std::vector<EtFile> files;
      for (int s = 0; s < S; ++s) {
        files.push_back(read_et(r.files[s]));
        const auto& st = r.stages[s];
        // Forward: every stage but the last sends each micro-batch's activation on; backward: every stage but
        // the first sends its gradient back. Receives mirror them.
        CHECK(st.sends == steps * M * ((s < S - 1) + (s > 0)));
        CHECK(st.recvs == st.sends);
        CHECK(find_attr(files.back().metadata.attr(), "rank")->int64_val() == s);
        CHECK(find_attr(files.back().metadata.attr(), "parallel")->string_val().starts_with("Pipeline parallel"));
        CHECK(find_attr(files.back().metadata.attr(), "microbatches")->int64_val() == M);
        int compute = 0;
        for (const auto& n : files.back().nodes) compute += n.type() == ChakraProtoMsg::COMP_NODE && !find_attr(n.attr(), "is_cpu_op")->bool_val();
        CHECK(compute == steps * (2 * M + 1));  // each micro-batch forward and backward, and the optimizer
      }
      makespan[steps - 3] = replay_ranks_us(files);
    }
    // A fourth step in the files adds habitat's back-to-back period (pp_step: the fourth step less the third;
    // whole microseconds, rounded per chain).
    CHECK(makespan[1] - makespan[0] == Approx(r.prediction.iteration_us).margin(8));
    CHECK(r.prediction.iteration_us > 0);
  }
}

TEST_CASE("export-et: bad input is an error naming the file and the problem", "[chakra]") {
  std::ostringstream err;
  const cli::Common c = quiet();
  SECTION("a DDP rank's trace with --world-size") {
    auto a = resnet_args(tmp_dir("et_bad_rank"), 2);
    a.trace_path = std::string(HABITAT_FIXTURES) + "/ddp/h200x2/resnet50_fp32_b32.ddp2_rank0.json.gz";
    CHECK_THROWS_WITH(cli::export_et(a, c, test::catalog(), err),
                      Catch::Contains("resnet50_fp32_b32.ddp2_rank0.json.gz: --world-size: the trace is already one rank of a DDP step"));
    CHECK_FALSE(fs::exists(a.out_dir));
  }
  SECTION("a DDP rank's trace on one GPU") {
    auto a = resnet_args(tmp_dir("et_bad_rank1"), 1);
    a.trace_path = std::string(HABITAT_FIXTURES) + "/ddp/h200x2/resnet50_fp32_b32.ddp2_rank0.json.gz";
    CHECK_THROWS_WITH(cli::export_et(a, c, test::catalog(), err), Catch::Contains("one rank of a multi-GPU step (NCCL kernels)"));
  }
  SECTION("every GPU at once") {
    auto a = resnet_args(tmp_dir("et_bad_all"), 2);
    a.to = "all";
    CHECK_THROWS_WITH(cli::export_et(a, c, test::catalog(), err), Catch::Contains("export-et writes the step of one GPU"));
  }
  SECTION("a prefix that is a path") {
    auto a = resnet_args(tmp_dir("et_bad_prefix"), 2);
    a.prefix = "x/y";
    CHECK_THROWS_WITH(cli::export_et(a, c, test::catalog(), err), Catch::Contains("x/y: --prefix: must be a file name"));
  }
  SECTION("an output folder that cannot be made") {
    const std::string file = test::write_temp("et_not_a_folder", "x");
    auto a = resnet_args(file + "/sub", 2);
    CHECK_THROWS_WITH(cli::export_et(a, c, test::catalog(), err), Catch::Contains("--out: cannot create the folder"));
  }
  SECTION("a truncated trace") {
    const std::string bytes = slurp(test::fixture("h100", "resnet50_fp32_b32"));
    auto a = resnet_args(tmp_dir("et_bad_truncated"), 2);
    a.trace_path = test::write_temp("et_truncated.json.gz", bytes.substr(0, bytes.size() / 2));
    CHECK_THROWS_AS(cli::export_et(a, c, test::catalog(), err), habitat::error);
  }
}
