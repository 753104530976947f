// The live tracker: injected into any CUDA program (CUDA_INJECTION64_PATH=libhabitat_cupti_track.so), it
// records through CUPTI's activity API every kernel (name, grid, block, registers, shared memory, stream,
// start, end, correlation), copy and fill, and every runtime and driver call with its thread; each
// cudaProfilerStart .. cudaProfilerStop range is a step. NVTX push/pop ranges are recorded too (CUPTI receives
// them when NVTX_INJECTION64_PATH names libcupti; the tracker sets it to the libcupti it runs with unless the
// program's environment already names one): PyTorch's emit_nvtx(record_shapes=True) names each operator and its
// input shapes in them, which the writer turns into operators. When the program ends it writes a Kineto-format
// trace (track_writer.hpp) that `habitat predict` and habitat.predict read. No framework is needed: a LibTorch or
// plain CUDA program, or PyTorch without torch.profiler. Environment:
//   HABITAT_TRACK_OUT   file to write (default habitat_track.json)
//   HABITAT_TRACK_ONLY_STEPS  "1": keep only the work launched inside steps (long programs, small traces)
//   HABITAT_TRACK_COLLECT     "steps": collect only between cudaProfilerStart and cudaProfilerStop, so that the
//                             program runs untracked (at its own speed) outside its steps; synchronize before
//                             cudaProfilerStop, or the step's last kernels may go unrecorded
#include <cuda.h>
#include <cupti.h>
#include <cxxabi.h>
#include <dlfcn.h>
#include <unistd.h>

#include <algorithm>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "habitat/cupti/track_writer.hpp"
#include "habitat/trace/recorder.hpp"

namespace {

using namespace habitat::cupti;

constexpr std::size_t buffer_bytes = 8u << 20;

struct State {
  std::mutex m;
  std::vector<TrackedCall> calls;
  std::vector<TrackedGpu> gpu;
  std::vector<TrackedStep> steps;
  std::vector<TrackedRange> ranges;
  std::unordered_map<std::uint32_t, TrackedRange> open_ranges;  // by CUPTI's marker id, until its end arrives
  std::uint64_t step_start = 0;
  long next_step = 1;
  bool in_step = false;
  bool only_steps = false;
  bool collect_in_steps = false;  // HABITAT_TRACK_COLLECT=steps
  bool written = false;
};

State& state() {
  static State* s = new State;  // never destroyed: the atexit writer may run after static destructors
  return *s;
}

void check(CUptiResult r, const char* what) {
  if (r == CUPTI_SUCCESS) return;
  const char* msg = nullptr;
  cuptiGetResultString(r, &msg);
  std::fprintf(stderr, "habitat track: %s failed: %s\n", what, msg ? msg : "?");
}

std::string demangle(const char* name) {
  if (!name) return "?";
  int status = 0;
  std::unique_ptr<char, void (*)(void*)> d(abi::__cxa_demangle(name, nullptr, nullptr, &status), std::free);
  return status == 0 && d ? std::string(d.get()) : std::string(name);
}

const char* copy_kind(std::uint8_t k) {
  switch (k) {
    case CUPTI_ACTIVITY_MEMCPY_KIND_HTOD: return "HtoD";
    case CUPTI_ACTIVITY_MEMCPY_KIND_DTOH: return "DtoH";
    case CUPTI_ACTIVITY_MEMCPY_KIND_DTOD: return "DtoD";
    case CUPTI_ACTIVITY_MEMCPY_KIND_HTOH: return "HtoH";
    case CUPTI_ACTIVITY_MEMCPY_KIND_PTOP: return "PtoP";
    default: return "Other";
  }
}

void CUPTIAPI buffer_requested(uint8_t** buffer, size_t* size, size_t* max_records) {
  *buffer = static_cast<uint8_t*>(std::aligned_alloc(8, buffer_bytes));
  *size = *buffer ? buffer_bytes : 0;
  *max_records = 0;
}

void CUPTIAPI buffer_completed(CUcontext, uint32_t, uint8_t* buffer, size_t, size_t valid) {
  State& s = state();
  CUpti_Activity* r = nullptr;
  std::lock_guard lock(s.m);
  while (cuptiActivityGetNextRecord(buffer, valid, &r) == CUPTI_SUCCESS) {
    switch (r->kind) {
      case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL:
      case CUPTI_ACTIVITY_KIND_KERNEL: {
        const auto* k = reinterpret_cast<const CUpti_ActivityKernel10*>(r);
        TrackedGpu g;
        g.kind = GpuKind::kernel;
        g.name = demangle(k->name);
        g.start_ns = k->start, g.end_ns = k->end;
        g.device = k->deviceId, g.stream = k->streamId, g.correlation = k->correlationId;
        g.grid[0] = k->gridX, g.grid[1] = k->gridY, g.grid[2] = k->gridZ;
        g.block[0] = k->blockX, g.block[1] = k->blockY, g.block[2] = k->blockZ;
        g.registers = k->registersPerThread;
        g.shared_mem = static_cast<long>(k->staticSharedMemory) + k->dynamicSharedMemory;
        s.gpu.push_back(std::move(g));
        break;
      }
      case CUPTI_ACTIVITY_KIND_MEMCPY: {
        const auto* c = reinterpret_cast<const CUpti_ActivityMemcpy6*>(r);
        TrackedGpu g;
        g.kind = GpuKind::memcpy;
        g.name = std::string("Memcpy ") + copy_kind(c->copyKind);
        g.start_ns = c->start, g.end_ns = c->end;
        g.device = c->deviceId, g.stream = c->streamId, g.correlation = c->correlationId;
        g.bytes = c->bytes;
        s.gpu.push_back(std::move(g));
        break;
      }
      case CUPTI_ACTIVITY_KIND_MEMSET: {
        const auto* c = reinterpret_cast<const CUpti_ActivityMemset4*>(r);
        TrackedGpu g;
        g.kind = GpuKind::memset;
        g.name = "Memset (Device)";
        g.start_ns = c->start, g.end_ns = c->end;
        g.device = c->deviceId, g.stream = c->streamId, g.correlation = c->correlationId;
        g.bytes = c->bytes;
        s.gpu.push_back(std::move(g));
        break;
      }
      case CUPTI_ACTIVITY_KIND_RUNTIME:
      case CUPTI_ACTIVITY_KIND_DRIVER: {
        const auto* a = reinterpret_cast<const CUpti_ActivityAPI*>(r);
        const bool driver = r->kind == CUPTI_ACTIVITY_KIND_DRIVER;
        const char* n = nullptr;
        cuptiGetCallbackName(driver ? CUPTI_CB_DOMAIN_DRIVER_API : CUPTI_CB_DOMAIN_RUNTIME_API, a->cbid, &n);
        s.calls.push_back({api_name(n ? n : "?"), driver, a->start, a->end, a->processId, a->threadId, a->correlationId});
        break;
      }
      case CUPTI_ACTIVITY_KIND_MARKER: {
        const auto* m = reinterpret_cast<const CUpti_ActivityMarker2*>(r);
        if (m->flags & CUPTI_ACTIVITY_FLAG_MARKER_START) {
          TrackedRange t;
          t.message = m->name ? m->name : "";
          t.start_ns = m->timestamp;
          if (m->objectKind == CUPTI_ACTIVITY_OBJECT_THREAD) t.process = m->objectId.pt.processId, t.thread = m->objectId.pt.threadId;
          s.open_ranges[m->id] = std::move(t);
        } else if (m->flags & CUPTI_ACTIVITY_FLAG_MARKER_END) {
          if (auto it = s.open_ranges.find(m->id); it != s.open_ranges.end()) {
            it->second.end_ns = m->timestamp;
            s.ranges.push_back(std::move(it->second));
            s.open_ranges.erase(it);
          }
        }
        break;
      }
      default: break;
    }
  }
  std::free(buffer);
}

// Turns the activity records on or off. Enabling a kind re-enables every API of it, so the queries are left out again.
void collect(bool on) {
  for (const auto k : {CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, CUPTI_ACTIVITY_KIND_MEMCPY, CUPTI_ACTIVITY_KIND_MEMSET, CUPTI_ACTIVITY_KIND_RUNTIME,
                       CUPTI_ACTIVITY_KIND_DRIVER, CUPTI_ACTIVITY_KIND_MARKER})
    check(on ? cuptiActivityEnable(k) : cuptiActivityDisable(k), on ? "cuptiActivityEnable" : "cuptiActivityDisable");
  if (!on) return;
  // Queries that do nothing on the GPU and come by the thousand (PyTorch asks for the device 9 times a kernel); the
  // profiler's traces leave them out too. Their time stays in the host's gaps between the calls that are recorded.
  for (const auto cbid : {CUPTI_RUNTIME_TRACE_CBID_cudaGetDevice_v3020, CUPTI_RUNTIME_TRACE_CBID_cudaGetLastError_v3020})
    check(cuptiActivityEnableRuntimeApi(cbid, 0), "cuptiActivityEnableRuntimeApi");
  for (const auto cbid : {CUPTI_DRIVER_TRACE_CBID_cuDevicePrimaryCtxGetState, CUPTI_DRIVER_TRACE_CBID_cuCtxGetCurrent,
                          CUPTI_DRIVER_TRACE_CBID_cuKernelGetName, CUPTI_DRIVER_TRACE_CBID_cuKernelGetFunction,
                          CUPTI_DRIVER_TRACE_CBID_cuFuncGetAttribute, CUPTI_DRIVER_TRACE_CBID_cuOccupancyMaxActiveBlocksPerMultiprocessorWithFlags})
    check(cuptiActivityEnableDriverApi(cbid, 0), "cuptiActivityEnableDriverApi");
}

// Steps: cudaProfilerStart's exit opens one, cudaProfilerStop's entry closes it.
void CUPTIAPI on_api(void*, CUpti_CallbackDomain domain, CUpti_CallbackId cbid, const void* data) {
  if (domain != CUPTI_CB_DOMAIN_RUNTIME_API) return;
  const auto* info = static_cast<const CUpti_CallbackData*>(data);
  const bool start = cbid == CUPTI_RUNTIME_TRACE_CBID_cudaProfilerStart_v4000 && info->callbackSite == CUPTI_API_EXIT;
  const bool stop = cbid == CUPTI_RUNTIME_TRACE_CBID_cudaProfilerStop_v4000 && info->callbackSite == CUPTI_API_ENTER;
  if (!start && !stop) return;
  uint64_t now = 0;
  cuptiGetTimestamp(&now);
  State& s = state();
  bool toggle = false;
  {
    std::lock_guard lock(s.m);
    if (start) {
      s.step_start = now;
      s.in_step = true;
      toggle = s.collect_in_steps;
    } else if (s.in_step) {
      s.steps.push_back({s.next_step++, s.step_start, now, static_cast<std::uint32_t>(getpid()), 0});
      s.in_step = false;
      toggle = s.collect_in_steps;
    }
  }
  if (!toggle) return;
  // Outside s.m (CUPTI may hand over a full buffer meanwhile), one toggle at a time, to the state the steps are in now.
  static std::mutex toggling;
  std::lock_guard t(toggling);
  bool on = false;
  {
    std::lock_guard lock(s.m);
    on = s.in_step;
  }
  collect(on);
}

std::vector<TrackedDevice> devices() {
  std::vector<TrackedDevice> out;
  int n = 0;
  if (cuDeviceGetCount(&n) != CUDA_SUCCESS) return out;
  for (int i = 0; i < n; ++i) {
    CUdevice d;
    if (cuDeviceGet(&d, i) != CUDA_SUCCESS) continue;
    TrackedDevice t;
    char name[256] = {};
    cuDeviceGetName(name, sizeof name, d);
    t.name = name;
    size_t mem = 0;
    cuDeviceTotalMem(&mem, d);
    t.total_mem = static_cast<long long>(mem);
    auto attr = [&](CUdevice_attribute a) {
      int v = 0;
      cuDeviceGetAttribute(&v, a, d);
      return v;
    };
    t.cc_major = attr(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR);
    t.cc_minor = attr(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR);
    t.sms = attr(CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT);
    t.max_threads_per_block = attr(CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK);
    t.max_threads_per_sm = attr(CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR);
    t.regs_per_block = attr(CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK);
    t.regs_per_sm = attr(CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_MULTIPROCESSOR);
    t.warp_size = attr(CU_DEVICE_ATTRIBUTE_WARP_SIZE);
    t.shared_per_block = attr(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK);
    t.shared_per_sm = attr(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR);
    t.shared_per_block_optin = attr(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN);
    out.push_back(t);
  }
  return out;
}

void write_trace() {
  State& s = state();
  check(cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED), "cuptiActivityFlushAll");
  std::lock_guard lock(s.m);
  if (s.written) return;
  s.written = true;
  if (s.only_steps && !s.steps.empty()) {
    // Keep the calls made inside steps, and the GPU work they launched.
    auto inside = [&](std::uint64_t t) {
      for (const auto& st : s.steps)
        if (t >= st.start_ns && t <= st.end_ns) return true;
      return false;
    };
    std::vector<TrackedCall> calls;
    std::vector<std::uint32_t> corr;
    for (auto& c : s.calls)
      if (inside(c.start_ns)) {
        corr.push_back(c.correlation);
        calls.push_back(std::move(c));
      }
    std::erase_if(s.ranges, [&](const TrackedRange& r) {
      for (const auto& st : s.steps)
        if (r.end_ns >= st.start_ns && r.start_ns <= st.end_ns) return false;
      return true;
    });
    std::sort(corr.begin(), corr.end());
    std::erase_if(s.gpu, [&](const TrackedGpu& g) { return !std::binary_search(corr.begin(), corr.end(), g.correlation); });
    s.calls = std::move(calls);
  }
  if (s.collect_in_steps) {
    // A kernel still running at cudaProfilerStop has its record dropped when collection stops: say so.
    std::vector<std::uint32_t> with_gpu;
    for (const auto& g : s.gpu) with_gpu.push_back(g.correlation);
    std::sort(with_gpu.begin(), with_gpu.end());
    std::size_t missing = 0;
    for (const auto& c : s.calls)
      if (c.name.find("Launch") != std::string::npos && c.name.find("HostFunc") == std::string::npos && !std::binary_search(with_gpu.begin(), with_gpu.end(), c.correlation)) ++missing;
    if (missing)
      std::fprintf(stderr, "habitat track: %zu launches inside steps have no GPU record: synchronize before cudaProfilerStop when HABITAT_TRACK_COLLECT=steps\n",
                   missing);
  }
  const char* out = std::getenv("HABITAT_TRACK_OUT");
  const std::string path = out && *out ? out : "habitat_track.json";
  std::ofstream f(path);
  if (!f) {
    std::fprintf(stderr, "habitat track: cannot write %s\n", path.c_str());
    return;
  }
  write_kineto(f, devices(), s.calls, s.gpu, s.steps, std::string(habitat::cupti_tracker_name) + " (libhabitat_cupti_track.so)", s.ranges);
  std::fprintf(stderr, "habitat track: %zu GPU operations, %zu API calls, %zu NVTX ranges, %zu steps -> %s\n", s.gpu.size(), s.calls.size(),
               s.ranges.size(), s.steps.size(), path.c_str());
}

}  // namespace

extern "C" __attribute__((visibility("default"))) int InitializeInjection() {
  State& s = state();
  const char* only = std::getenv("HABITAT_TRACK_ONLY_STEPS");
  s.only_steps = only && std::strcmp(only, "1") == 0;
  // NVTX hands its ranges to the library NVTX_INJECTION64_PATH names, read at the program's first NVTX call: name
  // the libcupti this tracker runs with (the same file, so the same loaded library), unless the user named one.
  if (const char* nv = std::getenv("NVTX_INJECTION64_PATH"); !nv || !*nv) {
    Dl_info info{};
    if (dladdr(reinterpret_cast<void*>(&cuptiActivityEnable), &info) && info.dli_fname) setenv("NVTX_INJECTION64_PATH", info.dli_fname, 1);
  }
  const char* when = std::getenv("HABITAT_TRACK_COLLECT");
  s.collect_in_steps = when && std::strcmp(when, "steps") == 0;
  check(cuptiActivityRegisterCallbacks(buffer_requested, buffer_completed), "cuptiActivityRegisterCallbacks");
  if (!s.collect_in_steps) collect(true);
  CUpti_SubscriberHandle sub = nullptr;
  check(cuptiSubscribe(&sub, on_api, nullptr), "cuptiSubscribe");
  check(cuptiEnableCallback(1, sub, CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaProfilerStart_v4000), "cuptiEnableCallback");
  check(cuptiEnableCallback(1, sub, CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaProfilerStop_v4000), "cuptiEnableCallback");
  std::atexit(write_trace);
  return 1;
}
