// Injected into a CUDA program (CUDA_INJECTION64_PATH): measures the counters of counters.hpp for each
// selected kernel launch with the Range Profiler and writes a habitat.metrics/1 file when the program
// ends (or calls cudaProfilerStop). Configured by environment variables set by habitat-cupti-collect:
//   HABITAT_CUPTI_OUT      metric file to write (required)
//   HABITAT_CUPTI_SELECT   launch selection (JSON); without it every distinct launch is measured
//   HABITAT_CUPTI_SKIP     metric file whose kernels are already measured (the cache)
//   HABITAT_CUPTI_WAIT     "1": measure only between cudaProfilerStart and cudaProfilerStop
//   HABITAT_CUPTI_ALL      "1": measure every launch, not just the first of each configuration
//   HABITAT_CUPTI_WORKLOAD name recorded in the file
//   HABITAT_CUPTI_COUNTERS "extended": add the FP16/FP64 vector-unit counts (more replay passes)
#include <cuda.h>
#include <cuda_runtime_api.h>
#include <cupti.h>
#include <cxxabi.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_set>

#include "habitat/cupti/selection_file.hpp"
#include "habitat/metrics/counters.hpp"
#include "habitat/metrics/metric_file.hpp"
#include "range_profiler.hpp"

namespace {

using namespace habitat;

struct Launch {
  Dim3 grid, block;
  long smem_dynamic = 0;
  std::optional<long> smem_static;
};

// The parameter block of cudaLaunchKernel; CUDA 13's __cudaLaunchKernel (what <<<>>> compiles to) takes
// the same arguments with a cudaKernel_t in front, and CUPTI ships no struct for it.
struct RuntimeLaunchParams {
  const void* func;
  dim3 grid, block;
  void** args;
  size_t shared_mem;
  cudaStream_t stream;
};

std::optional<long> static_smem(CUfunction f) {
  int v = 0;
  if (f && cuFuncGetAttribute(&v, CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES, f) == CUDA_SUCCESS) return v;
  return std::nullopt;
}

// A failed runtime call would leave its error for the program's next cudaGetLastError() (PyTorch checks
// after every launch): call only with no error pending, and clear the one we cause.
std::optional<long> static_smem_of_stub(const void* stub) {
  if (cudaPeekAtLastError() != cudaSuccess) return std::nullopt;
  cudaFunction_t f = nullptr;
  if (cudaGetFuncBySymbol(&f, stub) != cudaSuccess) {
    (void)cudaGetLastError();
    return std::nullopt;
  }
  return static_smem(reinterpret_cast<CUfunction>(f));
}

std::optional<long> static_smem_of_kernel(const void* kernel) {
  CUfunction f = nullptr;
  if (cuKernelGetFunction(&f, reinterpret_cast<CUkernel>(const_cast<void*>(kernel))) != CUDA_SUCCESS) return std::nullopt;
  return static_smem(f);
}

std::optional<Launch> launch_of(CUpti_CallbackDomain domain, CUpti_CallbackId cbid, const void* params) {
  if (domain == CUPTI_CB_DOMAIN_DRIVER_API) switch (cbid) {
      case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel:
      case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel_ptsz: {
        const auto* p = static_cast<const cuLaunchKernel_params*>(params);
        return Launch{{p->gridDimX, p->gridDimY, p->gridDimZ}, {p->blockDimX, p->blockDimY, p->blockDimZ}, long(p->sharedMemBytes), static_smem(p->f)};
      }
      case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx:
      case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx_ptsz: {
        const auto* p = static_cast<const cuLaunchKernelEx_params*>(params);
        const auto* c = p->config;
        return Launch{{c->gridDimX, c->gridDimY, c->gridDimZ}, {c->blockDimX, c->blockDimY, c->blockDimZ}, long(c->sharedMemBytes), static_smem(p->f)};
      }
      default: return std::nullopt;
    }
  switch (cbid) {
    case CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000:
    case CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_ptsz_v7000:
    case CUPTI_RUNTIME_TRACE_CBID___cudaLaunchKernel_v13000:
    case CUPTI_RUNTIME_TRACE_CBID___cudaLaunchKernel_ptsz_v13000: {
      const auto* p = static_cast<const RuntimeLaunchParams*>(params);
      const bool handle = cbid == CUPTI_RUNTIME_TRACE_CBID___cudaLaunchKernel_v13000 || cbid == CUPTI_RUNTIME_TRACE_CBID___cudaLaunchKernel_ptsz_v13000;
      return Launch{{p->grid.x, p->grid.y, p->grid.z}, {p->block.x, p->block.y, p->block.z}, long(p->shared_mem),
                    handle ? static_smem_of_kernel(p->func) : static_smem_of_stub(p->func)};
    }
    case CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernelExC_v11060:
    case CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernelExC_ptsz_v11060: {
      const auto* p = static_cast<const cudaLaunchKernelExC_v11060_params*>(params);
      const auto* c = p->config;
      return Launch{{c->gridDim.x, c->gridDim.y, c->gridDim.z}, {c->blockDim.x, c->blockDim.y, c->blockDim.z}, long(c->dynamicSmemBytes),
                    static_smem_of_stub(p->func)};
    }
    default: return std::nullopt;
  }
}

std::string demangle(const char* mangled) {
  int status = 0;
  std::unique_ptr<char, void (*)(void*)> d(abi::__cxa_demangle(mangled, nullptr, nullptr, &status), std::free);
  return status == 0 && d ? std::string(d.get()) : std::string(mangled);
}

std::string env(const char* name) {
  const char* v = std::getenv(name);
  return v ? v : "";
}

struct Collector {
  std::recursive_mutex mu;  // launches from several threads (autograd) must not share a profiling range
  std::string out_path = env("HABITAT_CUPTI_OUT");
  std::optional<std::unordered_set<std::string>> select, select_any_smem;
  std::unordered_set<std::string> done;  // trace launch ids measured this run or cached
  bool all_launches = env("HABITAT_CUPTI_ALL") == "1";
  std::atomic<bool> armed{env("HABITAT_CUPTI_WAIT") != "1"};
  bool failed = false;
  std::unique_ptr<cupti::RangeProfiler> profiler;
  std::optional<MeasuredKernel> pending;
  MetricSet set;
  std::size_t seen = 0, measured = 0;
  std::chrono::steady_clock::time_point t0 = std::chrono::steady_clock::now();

  Collector() {
    if (auto s = env("HABITAT_CUPTI_SELECT"); !s.empty()) {
      select = cupti::read_selection(s);
      select_any_smem.emplace();
      for (const auto& id : *select) select_any_smem->insert(id.substr(0, id.rfind('|')));
    }
    if (auto s = env("HABITAT_CUPTI_SKIP"); !s.empty()) {
      const MetricSet cached = read_metric_file(s);
      for (const auto& m : cached.kernels())
        done.insert(cupti::trace_launch_id(m.key.name, m.key.grid, m.key.block, m.key.smem_static.value_or(0) + m.key.smem_dynamic));
    }
    set.provenance.tool = "habitat-cupti-collect";
    set.provenance.workload = env("HABITAT_CUPTI_WORKLOAD");
    int v = 0;
    cuDriverGetVersion(&v);
    set.provenance.cuda_version = std::to_string(v / 1000) + "." + std::to_string((v % 1000) / 10);
    uint32_t cv = 0;
    cuptiGetVersion(&cv);
    set.provenance.tool_version = "habitat 0.2 / CUPTI API " + std::to_string(cv);
    char buf[32];
    const std::time_t now = std::time(nullptr);
    std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&now));
    set.provenance.collected_at = buf;
  }

  void fail(const std::exception& e) {
    failed = true;
    pending.reset();
    std::fprintf(stderr, "habitat-cupti: %s; no further kernels are measured\n", e.what());
    if (FILE* f = std::fopen((out_path + ".error").c_str(), "w")) {
      std::fprintf(f, "%s\n", e.what());
      std::fclose(f);
    }
  }

  void ensure_profiler(CUcontext ctx) {
    if (profiler) {
      if (profiler->context() != ctx) throw make_error("habitat-cupti", "contexts", "the program uses a second CUDA context; one GPU per run");
      return;
    }
    CUdevice dev = 0;
    cuCtxGetDevice(&dev);
    const auto wanted = counters::metric_names(std::nullopt, env("HABITAT_CUPTI_COUNTERS") == "extended");
    profiler = std::make_unique<cupti::RangeProfiler>(ctx, int(dev), wanted);
    set.provenance.chip = profiler->chip();
    std::fprintf(stderr, "habitat-cupti: %s (%s): %zu counters, %zu replay passes per kernel\n", set.provenance.device.c_str(), profiler->chip().c_str(),
                 profiler->metrics().size(), profiler->passes());
  }

  void note_device() {
    if (!set.provenance.device.empty()) return;
    CUdevice dev = 0;
    char name[256] = {};
    if (cuCtxGetDevice(&dev) != CUDA_SUCCESS) dev = 0;  // e.g. at exit, with no context current: the first GPU
    if (cuDeviceGetName(name, sizeof name, dev) == CUDA_SUCCESS) set.provenance.device = name;
  }

  void on_launch_enter(const CUpti_CallbackData* d, const Launch& l) {
    if (!d->symbolName) return;  // the callback already checked that collection is on
    note_device();
    MeasuredKernel m;
    m.name = demangle(d->symbolName);
    m.key = {normalize_kernel_name(m.name), l.grid, l.block, l.smem_dynamic, l.smem_static};
    // Without the static part, shared memory cannot be compared with the trace's: match on the rest.
    const auto id = l.smem_static ? cupti::trace_launch_id(m.key.name, l.grid, l.block, *l.smem_static + l.smem_dynamic) : m.key.launch();
    ++seen;
    if (select && !(l.smem_static ? select->count(id) : select_any_smem->count(id))) return;
    if (!all_launches && done.count(id)) return;
    done.insert(id);
    ensure_profiler(d->context);
    profiler->begin();
    pending = std::move(m);
  }

  void on_launch_exit() {
    if (!pending) return;
    const auto values = profiler->end();
    for (std::size_t i = 0; i < values.size(); ++i)
      if (const auto* r = counters::find_rule(profiler->metrics()[i])) counters::apply(*pending, *r, values[i]);
    set.add(*pending);
    pending.reset();
    if (++measured % 100 == 0)
      std::fprintf(stderr, "habitat-cupti: %zu kernels measured (%.1f s)\n", measured,
                   std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }

  void write() {
    if (out_path.empty()) return;
    note_device();
    set.provenance.collection_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    try {
      write_metric_file(set, out_path);
      std::fprintf(stderr, "habitat-cupti: wrote %zu kernels (%zu launches seen) to %s\n", set.kernels().size(), seen, out_path.c_str());
    } catch (const std::exception& e) {
      std::fprintf(stderr, "habitat-cupti: %s\n", e.what());
    }
  }
};

Collector* collector = nullptr;

bool is_cbid(CUpti_CallbackDomain domain, CUpti_CallbackId cbid, CUpti_driver_api_trace_cbid driver, CUpti_runtime_api_trace_cbid runtime) {
  return cbid == (domain == CUPTI_CB_DOMAIN_DRIVER_API ? CUpti_CallbackId(driver) : CUpti_CallbackId(runtime));
}

thread_local bool in_runtime_launch = false;  // a runtime launch may reach the driver's launch callbacks too
thread_local bool holding = false;            // this thread entered a launch with the collector's lock

void CUPTIAPI on_callback(void*, CUpti_CallbackDomain domain, CUpti_CallbackId cbid, const void* info) {
  if (!collector) return;
  const auto* d = static_cast<const CUpti_CallbackData*>(info);
  Collector& c = *collector;
  const bool enter = d->callbackSite == CUPTI_API_ENTER;
  try {
    if (is_cbid(domain, cbid, CUPTI_DRIVER_TRACE_CBID_cuProfilerStart, CUPTI_RUNTIME_TRACE_CBID_cudaProfilerStart_v4000)) {
      if (!enter) c.armed = true;
      return;
    }
    if (is_cbid(domain, cbid, CUPTI_DRIVER_TRACE_CBID_cuProfilerStop, CUPTI_RUNTIME_TRACE_CBID_cudaProfilerStop_v4000)) {
      if (enter) {
        std::lock_guard lock(c.mu);
        c.armed = false;
        c.write();
      }
      return;
    }
    const bool runtime = domain == CUPTI_CB_DOMAIN_RUNTIME_API;
    if (!runtime && in_runtime_launch) return;
    if (!enter) {
      if (!holding) return;
      in_runtime_launch = holding = false;
      try {
        c.on_launch_exit();
      } catch (const std::exception& e) {
        c.fail(e);
      }
      c.mu.unlock();
      return;
    }
    if (!c.armed.load() || c.failed) return;  // not collecting: stay out of the program's way
    const auto l = launch_of(domain, cbid, d->functionParams);
    if (!l) return;
    c.mu.lock();  // released at this launch's exit, on the same thread
    holding = true;
    in_runtime_launch = runtime;
    c.on_launch_enter(d, *l);
  } catch (const std::exception& e) {
    c.fail(e);
  }
}

}  // namespace

extern "C" __attribute__((visibility("default"))) int InitializeInjection() {
  if (collector) return 1;
  try {
    collector = new Collector();  // leaked on purpose: it must outlive CUDA's own teardown
  } catch (const std::exception& e) {
    std::fprintf(stderr, "habitat-cupti: %s\n", e.what());
    return 0;
  }
  CUpti_SubscriberHandle sub;
  if (cuptiSubscribe(&sub, on_callback, nullptr) != CUPTI_SUCCESS) {
    std::fprintf(stderr, "habitat-cupti: cuptiSubscribe failed (is another CUPTI tool attached?)\n");
    return 0;
  }
  for (auto cbid : {CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel_ptsz,
                    CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx_ptsz,
                    CUPTI_DRIVER_TRACE_CBID_cuProfilerStart, CUPTI_DRIVER_TRACE_CBID_cuProfilerStop})
    cuptiEnableCallback(1, sub, CUPTI_CB_DOMAIN_DRIVER_API, cbid);
  for (auto cbid : {CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_ptsz_v7000,
                    CUPTI_RUNTIME_TRACE_CBID___cudaLaunchKernel_v13000, CUPTI_RUNTIME_TRACE_CBID___cudaLaunchKernel_ptsz_v13000,
                    CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernelExC_v11060, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernelExC_ptsz_v11060,
                    CUPTI_RUNTIME_TRACE_CBID_cudaProfilerStart_v4000, CUPTI_RUNTIME_TRACE_CBID_cudaProfilerStop_v4000})
    cuptiEnableCallback(1, sub, CUPTI_CB_DOMAIN_RUNTIME_API, cbid);
  std::atexit([] {
    if (collector) {
      std::lock_guard lock(collector->mu);
      collector->write();
    }
  });
  return 1;
}
