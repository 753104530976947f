// habitat-host-profile: describes the host side of a machine (how fast its CPU gets a PyTorch operation
// through the dispatcher and, with a GPU, onto the GPU), for the host model of habitat's trace replay.
//
//   habitat-host-profile [--out FILE] [--name NAME] [--iters N] [--repeats R]
//
// Every measurement is a host-bound loop of N identical operations on 1-element tensors, timed with
// std::chrono::steady_clock and divided by N; it is repeated R times (after one untimed warm-up loop)
// and the median is reported, with every sample. CUDA loops synchronize before the loop and after it;
// the per-operation time is taken from the loop alone (the host's cost of issuing), and the time the
// final synchronize waited is kept beside it ("drain"): a large drain means the GPU, not the host, was
// the bottleneck and the number is not a host cost.
//
// Writes JSON (schema habitat.host-profile/1) with a plain ostream: no dependency beyond LibTorch.
#include <torch/torch.h>
#include <torch/version.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <ctime>
#include <fstream>
#include <functional>
#include <iomanip>
#include <iostream>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#if HABITAT_TORCH_CUDA
#include <cuda_runtime_api.h>
#endif

namespace {

using Clock = std::chrono::steady_clock;

struct Measurement {
  std::string key;          // JSON key of the median
  std::string what;         // the operation, in words
  int iters = 0;
  std::vector<double> us;   // per-operation host time of each repeat, microseconds
  std::vector<double> drain_us;  // CUDA only: time the closing synchronize waited, per repeat (whole loop)
  double median() const {
    std::vector<double> s = us;
    std::sort(s.begin(), s.end());
    size_t n = s.size();
    return n == 0 ? NAN : (n % 2 ? s[n / 2] : 0.5 * (s[n / 2 - 1] + s[n / 2]));
  }
};

double seconds(Clock::time_point a, Clock::time_point b) { return std::chrono::duration<double>(b - a).count(); }

// A host-bound loop: `body` is called `iters` times; `sync` (may be empty) runs before and after.
Measurement measure(const std::string& key, const std::string& what, int iters, int repeats,
                    const std::function<void()>& body, const std::function<void()>& sync) {
  Measurement m{key, what, iters, {}, {}};
  for (int r = -1; r < repeats; ++r) {  // r == -1: warm-up
    if (sync) sync();
    auto t0 = Clock::now();
    for (int i = 0; i < iters; ++i) body();
    auto t1 = Clock::now();
    if (sync) sync();
    auto t2 = Clock::now();
    if (r < 0) continue;
    m.us.push_back(seconds(t0, t1) * 1e6 / iters);
    if (sync) m.drain_us.push_back(seconds(t1, t2) * 1e6);
  }
  return m;
}

std::string cpu_model() {
  std::ifstream f("/proc/cpuinfo");
  std::string line;
  while (std::getline(f, line)) {
    if (line.rfind("model name", 0) == 0) {
      auto p = line.find(':');
      if (p != std::string::npos) {
        auto s = line.substr(p + 1);
        s.erase(0, s.find_first_not_of(" \t"));
        return s;
      }
    }
  }
  return "unknown";
}

std::string json_str(const std::string& s) {
  std::ostringstream o;
  o << '"';
  for (char c : s) {
    switch (c) {
      case '"': o << "\\\""; break;
      case '\\': o << "\\\\"; break;
      case '\n': o << "\\n"; break;
      case '\t': o << "\\t"; break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) o << "\\u" << std::hex << std::setw(4) << std::setfill('0') << int(c) << std::dec;
        else o << c;
    }
  }
  o << '"';
  return o.str();
}

std::string json_num(double v) {
  if (!std::isfinite(v)) return "null";
  std::ostringstream o;
  o << std::setprecision(6) << v;
  return o.str();
}

std::string json_list(const std::vector<double>& v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + json_num(v[i]);
  return s + "]";
}

std::string utc_now() {
  std::time_t t = std::time(nullptr);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&t));
  return buf;
}

#if HABITAT_TORCH_CUDA && HABITAT_HOST_BARE_LAUNCH
// An empty kernel from PTX, loaded through the runtime's library API (CUDA 12+), so that a plain
// cudaLaunchKernel can be timed without nvcc.
const char* kEmptyPtx = R"(
.version 7.0
.target sm_52
.address_size 64
.visible .entry habitat_empty()
{
  ret;
}
)";

std::optional<Measurement> bare_launch(int iters, int repeats, std::string& note) {
  cudaLibrary_t lib{};
  cudaKernel_t kernel{};
  if (cudaLibraryLoadData(&lib, kEmptyPtx, nullptr, nullptr, 0, nullptr, nullptr, 0) != cudaSuccess ||
      cudaLibraryGetKernel(&kernel, lib, "habitat_empty") != cudaSuccess) {
    note = std::string("could not load the empty kernel: ") + cudaGetErrorString(cudaGetLastError());
    return std::nullopt;
  }
  cudaStream_t stream = nullptr;  // the legacy default stream, as an un-streamed user program
  auto body = [&] { cudaLaunchKernel(reinterpret_cast<const void*>(kernel), dim3(1), dim3(1), nullptr, 0, stream); };
  auto sync = [] { cudaDeviceSynchronize(); };
  auto m = measure("cuda_launch_kernel_us", "cudaLaunchKernel of an empty 1x1 kernel (PTX loaded with cudaLibraryLoadData)",
                   iters, repeats, body, sync);
  cudaError_t e = cudaGetLastError();
  if (e != cudaSuccess) {
    note = std::string("launch failed: ") + cudaGetErrorString(e);
    return std::nullopt;
  }
  cudaLibraryUnload(lib);
  return m;
}
#endif

std::string torch_version() {
#ifdef TORCH_VERSION
  return TORCH_VERSION;
#else
  return std::to_string(TORCH_VERSION_MAJOR) + "." + std::to_string(TORCH_VERSION_MINOR) + "." +
         std::to_string(TORCH_VERSION_PATCH);
#endif
}

void usage() {
  std::cerr << "usage: habitat-host-profile [--out FILE] [--name NAME] [--iters N] [--cuda-iters N] [--repeats R]\n";
}

}  // namespace

int main(int argc, char** argv) {
  std::string out, name = "host";
  int iters = 20000, cuda_iters = 1000, repeats = 15;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto next = [&]() -> std::string {
      if (i + 1 >= argc) { usage(); std::exit(2); }
      return argv[++i];
    };
    if (a == "--out") out = next();
    else if (a == "--name") name = next();
    else if (a == "--iters") iters = std::stoi(next());
    else if (a == "--cuda-iters") cuda_iters = std::stoi(next());
    else if (a == "--repeats") repeats = std::stoi(next());
    else if (a == "-h" || a == "--help") { usage(); return 0; }
    else { usage(); return 2; }
  }
  if (iters < 1 || cuda_iters < 1 || repeats < 1) { usage(); return 2; }

  torch::NoGradGuard no_grad;  // a training loop's forward records autograd; these ops are plain
  std::vector<Measurement> ms;

  // (a) dispatch of an op that launches nothing: a view of a CPU tensor.
  auto x = torch::ones({1});
  ms.push_back(measure("dispatch_us", "x.view({-1}) on a 1-element CPU float tensor (dispatch, no kernel)",
                       iters, repeats, [&] { auto v = x.view({-1}); }, {}));
  // (b) a small CPU op: out-of-place add of two 1-element CPU tensors (allocates its result).
  auto y = torch::ones({1});
  ms.push_back(measure("cpu_op_us", "at::add(x, y) of 1-element CPU float tensors (allocates its result)",
                       iters, repeats, [&] { auto z = torch::add(x, y); }, {}));

  bool cuda = torch::cuda::is_available();
  std::string gpu = "none", bare_note = "not built (CPU-only LibTorch or CUDA older than 12)";
  if (cuda) {
#if HABITAT_TORCH_CUDA
    cudaDeviceProp p{};
    if (cudaGetDeviceProperties(&p, 0) == cudaSuccess) gpu = p.name;
#endif
    auto dev = torch::Device(torch::kCUDA, 0);
    auto cx = torch::ones({1}, dev), cy = torch::ones({1}, dev);
    auto sync = [] { torch::cuda::synchronize(); };
    // (c) an op launching one CUDA kernel, host-bound: out-of-place (caching allocator included) and in place.
    ms.push_back(measure("cuda_launch_op_us", "at::add(x, y) of 1-element CUDA float tensors: one kernel, caching allocator",
                         cuda_iters, repeats, [&] { auto z = torch::add(cx, cy); }, sync));
    ms.push_back(measure("cuda_inplace_op_us", "x.add_(1) on a 1-element CUDA float tensor: one kernel, no allocation",
                         cuda_iters, repeats, [&] { cx.add_(1); }, sync));
    ms.push_back(measure("cuda_view_us", "x.view({-1}) on a 1-element CUDA float tensor (dispatch, no kernel)",
                         iters, repeats, [&] { auto v = cx.view({-1}); }, {}));
#if HABITAT_TORCH_CUDA && HABITAT_HOST_BARE_LAUNCH
    bare_note.clear();
    if (auto b = bare_launch(cuda_iters, repeats, bare_note)) ms.push_back(*b);
#endif
  }

  auto find = [&](const std::string& k) -> const Measurement* {
    for (auto& m : ms)
      if (m.key == k) return &m;
    return nullptr;
  };
  auto median_of = [&](const std::string& k) { auto m = find(k); return m ? json_num(m->median()) : std::string("null"); };

  std::ostringstream j;
  j << "{\n";
  j << "  \"schema\": \"habitat.host-profile/1\",\n";
  j << "  \"name\": " << json_str(name) << ",\n";
  j << "  \"cpu\": " << json_str(cpu_model()) << ",\n";
  j << "  \"cores\": " << std::thread::hardware_concurrency() << ",\n";
  j << "  \"recorded_utc\": " << json_str(utc_now()) << ",\n";
  j << "  \"torch\": " << json_str(torch_version()) << ",\n";
  j << "  \"gpu\": " << (cuda ? json_str(gpu) : std::string("null")) << ",\n";
  j << "  \"method\": " << json_str(
      "habitat-host-profile (LibTorch C++, no autograd recording): each value is the median over " + std::to_string(repeats) +
      " repeats of a host-bound loop of identical operations on 1-element tensors (" + std::to_string(iters) +
      " per loop for CPU work and views, " + std::to_string(cuda_iters) +
      " for CUDA launches), steady_clock around the loop divided by its length, after one untimed warm-up loop. "
      "CUDA loops synchronize before and after; the per-op time excludes the closing synchronize, whose wait is "
      "kept as drain_us (near zero when the host, not the GPU, is the bottleneck).") << ",\n";
  j << "  \"dispatch_us\": " << median_of("dispatch_us") << ",\n";
  j << "  \"cpu_op_us\": " << median_of("cpu_op_us") << ",\n";
  j << "  \"cuda_launch_op_us\": " << (cuda ? median_of("cuda_launch_op_us") : "null") << ",\n";
  j << "  \"cuda_inplace_op_us\": " << (cuda ? median_of("cuda_inplace_op_us") : "null") << ",\n";
  j << "  \"cuda_view_us\": " << (cuda ? median_of("cuda_view_us") : "null") << ",\n";
  j << "  \"cuda_launch_kernel_us\": " << median_of("cuda_launch_kernel_us") << ",\n";
  if (!bare_note.empty()) j << "  \"cuda_launch_kernel_note\": " << json_str(bare_note) << ",\n";
  j << "  \"samples\": {\n";
  for (size_t i = 0; i < ms.size(); ++i) {
    auto& m = ms[i];
    j << "    " << json_str(m.key) << ": {\"what\": " << json_str(m.what) << ", \"iters\": " << m.iters
      << ", \"median_us\": " << json_num(m.median()) << ", \"us\": " << json_list(m.us);
    if (!m.drain_us.empty()) j << ", \"drain_us\": " << json_list(m.drain_us);
    j << "}" << (i + 1 < ms.size() ? "," : "") << "\n";
  }
  j << "  }\n}\n";

  if (out.empty()) {
    std::cout << j.str();
  } else {
    std::ofstream f(out);
    if (!f) { std::cerr << "habitat-host-profile: cannot write " << out << "\n"; return 1; }
    f << j.str();
    std::cerr << "habitat-host-profile: wrote " << out << "\n";
  }
  for (auto& m : ms) std::cerr << "  " << m.key << " = " << m.median() << " us\n";
  return 0;
}
