// habitat-train: fits one operation's MLP on a habitat.table/1 file (from `habitat mlp dataset`), on the
// GPU when there is one. Holds out either random configurations or a whole GPU, reports the error on
// what it held out next to the simple baselines, and writes the weights as safetensors.
#include <torch/torch.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "habitat/mlp/table.hpp"
#include "safetensors_writer.hpp"

using namespace habitat;

namespace {

constexpr const char* usage =
    "usage: habitat-train --table OP.table [--out W.safetensors] [--report R.tsv] [--label TEXT]\n"
    "  [--features paper|full|physics] [--target direct|residual] [--layers 8] [--width 1024] [--epochs 80]\n"
    "  [--batch 512] [--lr 5e-4] [--weight-decay 1e-4] [--drop-epoch 40] [--holdout-gpu NAME]\n"
    "  [--test-fraction 0.2] [--seed 1] [--rows all|fwd-fp32] [--cpu]\n"
    "Defaults are the Habitat paper's recipe except --features full --target residual (habitat's).\n";

struct Args {
  std::string table, out, report, label = "run", features = "full", target = "residual", holdout, rows = "all";
  int layers = 8, width = 1024, epochs = 80, batch = 512, drop_epoch = -1, seed = 1;
  double lr = 5e-4, wd = 1e-4, test_fraction = 0.2;
  bool cpu = false;
};

Args parse(int argc, char** argv) {
  Args a;
  for (int i = 1; i < argc; ++i) {
    const std::string f = argv[i];
    auto v = [&]() -> std::string {
      if (i + 1 >= argc) throw std::runtime_error(f + ": missing value\n" + usage);
      return argv[++i];
    };
    auto num = [&] {
      const std::string s = v();
      char* e = nullptr;
      const double x = std::strtod(s.c_str(), &e);
      if (e == s.c_str() || *e) throw std::runtime_error(f + ": '" + s + "' is not a number");
      return x;
    };
    if (f == "--table") a.table = v();
    else if (f == "--out") a.out = v();
    else if (f == "--report") a.report = v();
    else if (f == "--label") a.label = v();
    else if (f == "--features") a.features = v();
    else if (f == "--target") a.target = v();
    else if (f == "--holdout-gpu") a.holdout = v();
    else if (f == "--rows") a.rows = v();
    else if (f == "--layers") a.layers = static_cast<int>(num());
    else if (f == "--width") a.width = static_cast<int>(num());
    else if (f == "--epochs") a.epochs = static_cast<int>(num());
    else if (f == "--batch") a.batch = static_cast<int>(num());
    else if (f == "--drop-epoch") a.drop_epoch = static_cast<int>(num());
    else if (f == "--seed") a.seed = static_cast<int>(num());
    else if (f == "--lr") a.lr = num();
    else if (f == "--weight-decay") a.wd = num();
    else if (f == "--test-fraction") a.test_fraction = num();
    else if (f == "--cpu") a.cpu = true;
    else if (f == "-h" || f == "--help") { std::cout << usage; std::exit(0); }
    else throw std::runtime_error("unknown argument '" + f + "'\n" + usage);
  }
  if (a.table.empty()) throw std::runtime_error(std::string("--table is required\n") + usage);
  if (a.features != "paper" && a.features != "full" && a.features != "physics")
    throw std::runtime_error("--features: paper, full or physics");
  if (a.target != "direct" && a.target != "residual") throw std::runtime_error("--target: direct or residual");
  if (a.rows != "all" && a.rows != "fwd-fp32") throw std::runtime_error("--rows: all or fwd-fp32");
  if (a.layers < 1 || a.width < 1 || a.epochs < 1 || a.batch < 1) throw std::runtime_error("layers, width, epochs and batch must be positive");
  if (a.drop_epoch < 0) a.drop_epoch = a.epochs / 2;
  return a;
}

// Floor added to the roofline before the residual target: launch and dispatch latency (~10 us) make
// tiny ops take far longer than their roofline.
constexpr double floor_ms = 0.01;

std::uint64_t mix(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

// paper: the op's dims, pass, precision and the paper's four GPU numbers; full: everything;
// physics: no raw GPU numbers at all, the GPU enters only through roofline times and waves (with a
// handful of training GPUs, raw specs let a network recognise a GPU instead of learning the physics).
bool feature_in_set(const std::string& n, const std::string& set) {
  if (set == "full") return n.starts_with("p:") || n.starts_with("x:");
  if (set == "paper") return n.starts_with("p:");
  const bool gpu_spec = n == "p:log_memory_gib" || n == "p:log_bandwidth" || n == "p:log_sms" || n == "p:log_peak_tflops" ||
                        n == "x:log_l2_mib" || n == "x:log_clock_mhz";
  return (n.starts_with("p:") || n.starts_with("x:")) && !gpu_spec;
}

struct Group {
  std::size_t n = 0, n_pair = 0;
  double mlp = 0, mlp_pair = 0, roof = 0, same = 0, flops = 0, bw = 0;
};

}  // namespace

int main(int argc, char** argv) try {
  const Args a = parse(argc, argv);
  const auto t = mlp::read_table(a.table);
  const auto col = [&](const std::string& n) {
    const int c = t.column(n);
    if (c < 0) throw std::runtime_error(a.table + ": no column '" + n + "'");
    return c;
  };
  const int c_gpu = col("m:gpu"), c_cfg = col("m:config"), c_pass = col("m:pass"), c_dtype = col("m:dtype"), c_lat = col("m:lat_ms"),
            c_roof = col("m:roofline_ms"), c_same = col("m:same_ms"), c_flops = col("m:flops_ratio_ms"), c_bw = col("m:bw_ratio_ms");
  std::vector<int> fcols;
  std::vector<std::string> fnames;
  for (std::size_t i = 0; i < t.columns.size(); ++i) {
    const auto& n = t.columns[i];
    if (feature_in_set(n, a.features)) fcols.push_back(static_cast<int>(i)), fnames.push_back(n);
  }
  int holdout = -1;
  if (!a.holdout.empty()) {
    for (std::size_t g = 0; g < t.gpus.size(); ++g)
      if (t.gpus[g] == a.holdout) holdout = static_cast<int>(g);
    if (holdout < 0) throw std::runtime_error("--holdout-gpu: '" + a.holdout + "' has no rows in " + a.table);
  }
  std::vector<std::size_t> train_rows, test_rows;
  std::set<std::string> trained_on;
  for (std::size_t r = 0; r < t.rows(); ++r) {
    if (a.rows == "fwd-fp32" && (t.at(r, c_pass) != 0 || t.at(r, c_dtype) != 0)) continue;
    const int g = static_cast<int>(t.at(r, c_gpu));
    const bool test = holdout >= 0 ? g == holdout
                                   : (mix(static_cast<std::uint64_t>(t.at(r, c_cfg)) * 31 + static_cast<std::uint64_t>(a.seed)) % 1000) <
                                         a.test_fraction * 1000;
    if (test) test_rows.push_back(r);
    else if (holdout < 0 || g != holdout) train_rows.push_back(r), trained_on.insert(t.gpus[static_cast<std::size_t>(g)]);
  }
  if (train_rows.empty()) throw std::runtime_error(a.table + ": no training rows");
  const torch::Device dev = (!a.cpu && torch::cuda::is_available()) ? torch::Device(torch::kCUDA) : torch::Device(torch::kCPU);
  const auto F = static_cast<std::int64_t>(fcols.size());
  auto gather = [&](const std::vector<std::size_t>& rows) {
    std::vector<float> x(rows.size() * fcols.size()), y(rows.size()), base(rows.size());
    for (std::size_t i = 0; i < rows.size(); ++i) {
      for (std::size_t j = 0; j < fcols.size(); ++j) x[i * fcols.size() + j] = t.at(rows[i], fcols[j]);
      y[i] = t.at(rows[i], c_lat);
      base[i] = a.target == "residual" ? static_cast<float>(t.at(rows[i], c_roof) + floor_ms) : 1.0f;
    }
    const auto n = static_cast<std::int64_t>(rows.size());
    return std::tuple{torch::from_blob(x.data(), {n, F}).clone().to(dev), torch::from_blob(y.data(), {n}).clone().to(dev),
                      torch::from_blob(base.data(), {n}).clone().to(dev)};
  };
  auto [xtr, ytr, btr] = gather(train_rows);
  auto mean = xtr.mean(0), stdev = xtr.std(0).clamp_min(1e-6);
  xtr = (xtr - mean) / stdev;

  torch::manual_seed(static_cast<std::uint64_t>(a.seed));
  torch::nn::Sequential net;
  std::int64_t in = F;
  for (int l = 0; l < a.layers; ++l) {
    net->push_back(torch::nn::Linear(in, a.width));
    net->push_back(torch::nn::ReLU());
    in = a.width;
  }
  net->push_back(torch::nn::Linear(in, 1));
  net->to(dev);
  // Output -> milliseconds: the paper's network predicts them directly; habitat's predicts the log of
  // the factor over the op's roofline time (plus a launch floor), which carries over to unseen GPUs.
  const bool residual = a.target == "residual";
  auto to_ms = [&](const torch::Tensor& out, const torch::Tensor& base) {
    return residual ? torch::exp(out.squeeze(1).clamp(-20, 20)) * base : out.squeeze(1);
  };
  torch::optim::Adam opt(net->parameters(), torch::optim::AdamOptions(a.lr).weight_decay(a.wd));
  const auto n = xtr.size(0);
  const auto t0 = std::chrono::steady_clock::now();
  std::fprintf(stderr, "habitat-train %s: %zu features, %lld training rows (%zu GPUs), %zu test rows, %s, %dx%d\n", a.label.c_str(),
               fcols.size(), static_cast<long long>(n), trained_on.size(), test_rows.size(), dev.is_cuda() ? "cuda" : "cpu", a.layers, a.width);
  for (int epoch = 0; epoch < a.epochs; ++epoch) {
    if (epoch == a.drop_epoch)
      for (auto& g : opt.param_groups()) static_cast<torch::optim::AdamOptions&>(g.options()).lr(a.lr * 0.1);
    net->train();
    auto perm = torch::randperm(n, torch::TensorOptions().device(dev).dtype(torch::kLong));
    auto total = torch::zeros({}, torch::TensorOptions().device(dev));
    for (std::int64_t s = 0; s < n; s += a.batch) {
      auto idx = perm.slice(0, s, std::min(n, s + a.batch));
      auto pred = to_ms(net->forward(xtr.index_select(0, idx)), btr.index_select(0, idx));
      auto y = ytr.index_select(0, idx);
      auto loss = ((pred - y).abs() / y).mean();  // MAPE, the paper's loss
      opt.zero_grad();
      loss.backward();
      opt.step();
      total += loss.detach() * static_cast<double>(idx.size(0));  // stays on the GPU: no sync per step
    }
    if (epoch % 10 == 9 || epoch == a.epochs - 1) {
      const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      std::fprintf(stderr, "  epoch %d/%d  train MAPE %.2f%%  %.0f s\n", epoch + 1, a.epochs, 100 * total.item<double>() / static_cast<double>(n), secs);
    }
  }

  // Held-out error per GPU, pass and precision, next to the baselines.
  std::map<std::tuple<int, int, int>, Group> groups;
  if (!test_rows.empty()) {
    net->eval();
    torch::NoGradGuard ng;
    auto [xte, yte, bte] = gather(test_rows);
    auto pred = to_ms(net->forward((xte - mean) / stdev), bte).to(torch::kCPU);
    for (std::size_t i = 0; i < test_rows.size(); ++i) {
      const auto r = test_rows[i];
      const double y = t.at(r, c_lat), p = pred[static_cast<std::int64_t>(i)].item<double>();
      auto& g = groups[{static_cast<int>(t.at(r, c_gpu)), static_cast<int>(t.at(r, c_pass)), static_cast<int>(t.at(r, c_dtype))}];
      const auto ape = [&](double v) { return std::abs(v - y) / y; };
      ++g.n;
      g.mlp += ape(p);
      g.roof += ape(t.at(r, c_roof));
      if (std::isfinite(t.at(r, c_same))) {
        ++g.n_pair;
        g.mlp_pair += ape(p);
        g.same += ape(t.at(r, c_same));
        g.flops += ape(t.at(r, c_flops));
        g.bw += ape(t.at(r, c_bw));
      }
    }
  }
  std::ostringstream rep;
  for (const auto& [k, g] : groups) {
    const auto [gpu, pass, dtype] = k;
    const auto pct = [](double s, std::size_t c) { return c ? 100 * s / static_cast<double>(c) : std::nan(""); };
    char line[512];
    std::snprintf(line, sizeof line, "%s\t%s\t%s\t%s\t%s\t%zu\t%.2f\t%.2f\t%zu\t%.2f\t%.2f\t%.2f\t%.2f\n", a.label.c_str(),
                  a.holdout.empty() ? "configs" : "gpu", t.gpus[static_cast<std::size_t>(gpu)].c_str(), pass ? "bwd" : "fwd",
                  dtype ? "bf16" : "fp32", g.n, pct(g.mlp, g.n), pct(g.roof, g.n), g.n_pair, pct(g.mlp_pair, g.n_pair),
                  pct(g.same, g.n_pair), pct(g.flops, g.n_pair), pct(g.bw, g.n_pair));
    rep << line;
  }
  std::cerr << "label\tholdout\tgpu\tpass\tdtype\tn\tmlp%\troofline%\tn_paired\tmlp_paired%\tsame%\tflops_ratio%\tbw_ratio%\n" << rep.str();
  if (!a.report.empty()) {
    const bool fresh = !std::ifstream(a.report).good();
    std::ofstream out(a.report, std::ios::app);
    if (fresh) out << "label\tholdout\tgpu\tpass\tdtype\tn\tmlp_mape\troofline_mape\tn_paired\tmlp_paired_mape\tsame_mape\tflops_ratio_mape\tbw_ratio_mape\n";
    out << rep.str();
  }
  if (!a.out.empty()) {
    std::vector<collect::NamedTensor> ts;
    auto add = [&](const std::string& name, torch::Tensor x) {
      x = x.to(torch::kCPU).contiguous().to(torch::kFloat32);
      std::vector<float> v(x.data_ptr<float>(), x.data_ptr<float>() + x.numel());
      ts.push_back({name, x.sizes().vec(), std::move(v)});
    };
    add("input_mean", mean);
    add("input_std", stdev);
    int layer = 0;
    for (auto& m : net->children())
      if (auto* lin = m->as<torch::nn::Linear>()) {
        add("layer" + std::to_string(layer) + ".weight", lin->weight.detach());
        add("layer" + std::to_string(layer) + ".bias", lin->bias.detach());
        ++layer;
      }
    std::string feats, gpus;
    for (const auto& f : fnames) feats += (feats.empty() ? "" : ",") + f;
    for (const auto& g : trained_on) gpus += (gpus.empty() ? "" : ",") + g;
    const auto slash = a.table.find_last_of('/');
    std::string op = a.table.substr(slash == std::string::npos ? 0 : slash + 1);
    op = op.substr(0, op.find('.'));
    collect::write_safetensors(a.out, ts,
                               {{"schema", "habitat.mlp/1"}, {"op", op}, {"features", feats}, {"target", residual ? "residual" : "direct"},
                                {"floor_ms", std::to_string(floor_ms)}, {"activation", "relu"}, {"layers", std::to_string(layer)},
                                {"trained_on", gpus}, {"rows", a.rows}, {"label", a.label},
                                {"recipe", "epochs=" + std::to_string(a.epochs) + " batch=" + std::to_string(a.batch) + " lr=" +
                                               std::to_string(a.lr) + " wd=" + std::to_string(a.wd) + " drop=" + std::to_string(a.drop_epoch) + " loss=mape"}});
    std::fprintf(stderr, "habitat-train: wrote %s\n", a.out.c_str());
  }
  return 0;
} catch (const std::exception& e) {
  std::cerr << "habitat-train: " << e.what() << '\n';
  return 1;
}
