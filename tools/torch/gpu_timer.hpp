#pragma once
// Timing on the GPU with CUDA events on the current stream. Without a CUDA build of LibTorch the
// collector still compiles (for CPU-only CI) but refuses to time anything.
#include <torch/torch.h>

#include <stdexcept>
#include <string>

#if HABITAT_TORCH_CUDA
#include <ATen/cuda/CUDAContext.h>
#include <ATen/cuda/CUDAEvent.h>
#include <c10/cuda/CUDACachingAllocator.h>
#endif

namespace habitat::collect {

#if HABITAT_TORCH_CUDA
class GpuTimer {
 public:
  void start() { a_.record(); }
  // Milliseconds since start(), waiting for the GPU to get there.
  double stop() {
    b_.record();
    b_.synchronize();
    return a_.elapsed_time(b_);
  }
  static void synchronize() { torch::cuda::synchronize(); }
  static void release_cache() { c10::cuda::CUDACachingAllocator::emptyCache(); }
  static std::string device_name(int index) { return at::cuda::getDeviceProperties(index)->name; }
  static int sm_count(int index) { return at::cuda::getDeviceProperties(index)->multiProcessorCount; }

 private:
  at::cuda::CUDAEvent a_{cudaEventDefault}, b_{cudaEventDefault};
};
#else
class GpuTimer {
 public:
  GpuTimer() { throw std::runtime_error("this LibTorch has no CUDA support; habitat-collect needs a GPU build"); }
  void start() {}
  double stop() { return 0; }
  static void synchronize() {}
  static void release_cache() {}
  static std::string device_name(int) { return "none"; }
  static int sm_count(int) { return 0; }
};
#endif

}  // namespace habitat::collect
