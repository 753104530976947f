// habitat-collect: measures forward and backward times of the learned operations on this GPU at
// sampled configurations (same seed, same configurations on every GPU) and appends them to one CSV per
// operation in the output folder. Rerunning with the same folder resumes where it stopped.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "collect_args.hpp"
#include "gpu_timer.hpp"
#include "kernel_names.hpp"
#include "op_instance.hpp"
#include "sampling.hpp"

namespace fs = std::filesystem;
using namespace habitat;

namespace {

struct Stats {
  double lat_ms = 0, p25 = 0, p75 = 0, gpu_ms = 0;
  int reps = 0;
};

double quantile(std::vector<double> v, double q) {
  std::sort(v.begin(), v.end());
  const double pos = q * static_cast<double>(v.size() - 1);
  const auto lo = static_cast<std::size_t>(pos);
  const auto hi = std::min(lo + 1, v.size() - 1);
  return v[lo] + (v[hi] - v[lo]) * (pos - static_cast<double>(lo));
}

// Latency of one call started on an idle GPU (what per-op datasets report), and GPU time per call
// when calls run back to back (what a training step's kernels take).
template <class Call, class Prep>
Stats measure(Call&& call, Prep&& prep, int reps, int back_to_back) {
  collect::GpuTimer t;
  double first = 0;
  for (int w = 0; w < 2; ++w) {
    prep();
    collect::GpuTimer::synchronize();
    t.start();
    call();
    first = t.stop();
  }
  if (first > 20) reps = std::min(reps, 3), back_to_back = 1;  // big ops are stable; save time
  std::vector<double> lat;
  for (int r = 0; r < reps; ++r) {
    prep();
    collect::GpuTimer::synchronize();
    t.start();
    call();
    lat.push_back(t.stop());
  }
  std::vector<double> b2b;
  for (int r = 0; r < 3; ++r) {
    t.start();
    for (int i = 0; i < back_to_back; ++i) {
      prep();
      call();
    }
    b2b.push_back(t.stop() / back_to_back);
  }
  return {quantile(lat, 0.5), quantile(lat, 0.25), quantile(lat, 0.75), quantile(b2b, 0.5), reps};
}

struct KernelTable {
  fs::path file;
  std::map<std::string, int> ids;

  explicit KernelTable(fs::path f) : file(std::move(f)) {
    std::ifstream in(file);
    std::string line;
    while (std::getline(in, line)) {
      const auto tab = line.find('\t');
      if (tab != std::string::npos) ids.emplace(line.substr(tab + 1), std::stoi(line.substr(0, tab)));
    }
  }
  std::string encode(const std::vector<std::string>& names) {
    std::string out;
    for (const auto& n : names) {
      auto [it, added] = ids.emplace(n, static_cast<int>(ids.size()));
      if (added) std::ofstream(file, std::ios::app) << it->second << '\t' << n << '\n';
      out += (out.empty() ? "" : ";") + std::to_string(it->second);
    }
    return out;
  }
};

struct OpFile {
  std::ofstream out;
  std::set<std::string> done;  // "dtype/index" already measured or skipped
};

std::string key(ops::DataType t, int index) { return std::string(ops::dtype_name(t)) + "/" + std::to_string(index); }

OpFile open_op_file(const fs::path& path, ops::OpKind k, const std::string& header) {
  OpFile f;
  const bool exists = fs::exists(path);
  if (exists) {
    std::ifstream in(path);
    std::string line;
    while (std::getline(in, line)) {
      if (line.empty() || line[0] == '#' || line.starts_with("pass,")) continue;
      std::stringstream ss(line);
      std::string pass, dtype, index;
      std::getline(ss, pass, ',');
      std::getline(ss, dtype, ',');
      std::getline(ss, index, ',');
      f.done.insert(dtype + "/" + index);
    }
  }
  f.out.open(path, std::ios::app);
  if (!f.out) throw std::runtime_error(path.string() + ": cannot open for writing");
  if (!exists) {
    f.out << header << "\npass,dtype,index";
    const auto& s = ops::schema(k);
    for (int i = 0; i < s.ndims; ++i) f.out << ',' << s.dims[i];
    f.out << ",lat_ms,lat_p25_ms,lat_p75_ms,gpu_ms,reps,kernels\n";
  }
  return f;
}

void write_row(OpFile& f, ops::OpKind k, ops::Pass p, ops::DataType t, int index, const ops::Dims& d, const Stats* s,
               const std::string& kernels) {
  f.out << ops::pass_name(p) << ',' << ops::dtype_name(t) << ',' << index;
  for (int i = 0; i < ops::schema(k).ndims; ++i) f.out << ',' << static_cast<long long>(d[i]);
  if (s)
    f.out << ',' << s->lat_ms << ',' << s->p25 << ',' << s->p75 << ',' << s->gpu_ms << ',' << s->reps;
  else
    f.out << ",,,,,0";
  f.out << ",\"" << kernels << "\"\n";
  f.out.flush();
}

bool is_oom(const std::exception& e) {
  const std::string w = e.what();
  return w.find("out of memory") != std::string::npos || w.find("CUDNN_STATUS_ALLOC_FAILED") != std::string::npos;
}

}  // namespace

int main(int argc, char** argv) try {
  const auto args = collect::parse_args(argc, argv);
  if (!torch::cuda::is_available()) {
    std::cerr << "habitat-collect: no CUDA device visible to LibTorch\n";
    return 2;
  }
  fs::create_directories(args.out);
  const torch::Device dev(torch::kCUDA, args.device);
  const std::string gpu = collect::GpuTimer::device_name(args.device);
  std::ostringstream header;
  header << "# habitat.opdata/1 gpu=\"" << gpu << "\" sms=" << collect::GpuTimer::sm_count(args.device)
         << " torch=" << TORCH_VERSION << " seed=" << args.seed
         << " tf32_matmul=" << at::globalContext().allowTF32CuBLAS() << " tf32_cudnn=" << at::globalContext().allowTF32CuDNN()
         << " timing=cuda-events lat=single-call-from-idle gpu=back-to-back";
  std::cerr << "habitat-collect: " << gpu << ", writing " << args.out << '\n';

  collect::KernelNames names;
  if (!args.kernels)
    std::cerr << "habitat-collect: kernel names off (--no-kernels)\n";
  else if (!names.available())
    std::cerr << "habitat-collect: kernel names off (" << names.why_unavailable() << ")\n";
  KernelTable table(args.out / "kernels.tsv");

  struct Group {
    ops::OpKind op;
    std::vector<ops::Dims> configs;
  };
  std::vector<Group> groups;
  std::map<ops::OpKind, OpFile> files;
  for (auto op : args.ops) {
    collect::Sampler s(args.seed, op);
    Group g{op, {}};
    for (int i = 0; i < args.per_op; ++i) g.configs.push_back(s.next(op));
    groups.push_back(std::move(g));
    files.emplace(op, open_op_file(args.out / (std::string(ops::schema(op).name) + ".csv"), op, header.str()));
  }

  const auto t0 = std::chrono::steady_clock::now();
  auto elapsed = [&] { return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(); };
  const std::size_t total = groups.size() * args.dtypes.size() * static_cast<std::size_t>(args.per_op);
  std::size_t seen = 0, measured = 0, oom = 0, failed = 0;
  double last_report = 0;
  bool out_of_time = false;
  // Round robin over operations and precisions, so a time budget still yields a balanced dataset.
  for (int index = 0; index < args.per_op && !out_of_time; ++index) {
    for (const auto& g : groups) {
      for (auto dt : args.dtypes) {
        ++seen;
        auto& f = files.at(g.op);
        if (f.done.count(key(dt, index))) continue;
        if (args.budget_s > 0 && elapsed() > args.budget_s) {
          out_of_time = true;
          break;
        }
        const auto& d = g.configs[static_cast<std::size_t>(index)];
        try {
          auto inst = collect::make_instance(g.op, d, dt, dev);
          auto fwd = measure([&] { (void)inst.forward(); }, [] {}, args.reps, 5);
          std::string fk;
          if (names.available() && args.kernels) {
            names.begin();
            (void)inst.forward();
            collect::GpuTimer::synchronize();
            fk = table.encode(names.end());
          }
          auto out = inst.forward();
          auto grad = torch::randn_like(out);
          auto backward = [&] { torch::autograd::backward({out}, {grad}, /*retain_graph=*/true); };
          auto bwd = measure(backward, [&] { inst.reset_grads(); }, args.reps, 5);
          std::string bk;
          if (names.available() && args.kernels) {
            inst.reset_grads();
            names.begin();
            backward();
            collect::GpuTimer::synchronize();
            bk = table.encode(names.end());
          }
          write_row(f, g.op, ops::Pass::forward, dt, index, d, &fwd, fk);
          write_row(f, g.op, ops::Pass::backward, dt, index, d, &bwd, bk);
          ++measured;
        } catch (const std::exception& e) {
          const bool mem = is_oom(e);
          mem ? ++oom : ++failed;
          std::string why = mem ? "oom" : std::string("error: ") + e.what();
          why = why.substr(0, why.find('\n'));
          std::replace(why.begin(), why.end(), '"', '\'');
          write_row(f, g.op, ops::Pass::forward, dt, index, d, nullptr, why);
          collect::GpuTimer::synchronize();
          collect::GpuTimer::release_cache();
        }
        if (elapsed() - last_report > 5) {
          last_report = elapsed();
          const double rate = measured / std::max(1.0, elapsed());
          std::fprintf(stderr, "habitat-collect: %zu/%zu configurations (%.0f%%), %zu measured, %zu oom, %zu failed, %.1f/s\n",
                       seen, total, 100.0 * static_cast<double>(seen) / static_cast<double>(total), measured, oom, failed, rate);
        }
      }
      if (out_of_time) break;
    }
  }
  std::fprintf(stderr, "habitat-collect: %s after %.0f s: %zu measured, %zu oom, %zu failed%s\n",
               out_of_time ? "time budget reached" : "done", elapsed(), measured, oom, failed,
               out_of_time ? " (rerun with the same --out to resume)" : "");
  return 0;
} catch (const std::exception& e) {
  std::cerr << "habitat-collect: " << e.what() << '\n';
  return 1;
}
