// GPU check of the CUPTI collector on kernels whose work is known exactly:
//   saxpy over n floats: 2n FP32 FLOPs (one FFMA per element), 12n DRAM bytes (read x and y, write y);
//   cuBLAS BF16 and FP32 GEMMs of m x n x k: 2mnk FLOPs on the tensor cores / FP32 units.
// Runs itself under habitat-cupti-collect, then compares. Exit 77 (skipped) without a GPU.
#include <cublas_v2.h>
#include <cuda.h>
#include <cuda_runtime.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "habitat/metrics/metric_file.hpp"

namespace {

const char* kSaxpyPtx = R"(
.version 7.0
.target sm_70
.address_size 64
.visible .entry saxpy(.param .u64 px, .param .u64 py, .param .f32 pa, .param .u32 pn) {
  .reg .pred p; .reg .b32 r<6>; .reg .f32 f<4>; .reg .b64 rd<8>;
  ld.param.u64 rd1, [px]; ld.param.u64 rd2, [py]; ld.param.f32 f1, [pa]; ld.param.u32 r1, [pn];
  mov.u32 r2, %ctaid.x; mov.u32 r3, %ntid.x; mov.u32 r4, %tid.x;
  mad.lo.s32 r5, r2, r3, r4;
  setp.ge.u32 p, r5, r1;
  @p bra DONE;
  cvta.to.global.u64 rd3, rd1; cvta.to.global.u64 rd4, rd2;
  mul.wide.u32 rd5, r5, 4;
  add.s64 rd6, rd3, rd5; add.s64 rd7, rd4, rd5;
  ld.global.f32 f2, [rd6]; ld.global.f32 f3, [rd7];
  fma.rn.f32 f3, f1, f2, f3;
  st.global.f32 [rd7], f3;
DONE:
  ret;
}
)";

constexpr unsigned kN = 1u << 26;  // 256 MiB per vector: far beyond any L2
constexpr int kM = 4096, kNn = 4096, kK = 4096;

#define CU(x) do { if ((x) != CUDA_SUCCESS) { std::fprintf(stderr, "%s failed\n", #x); return 1; } } while (0)

int workload() {
  CU(cuInit(0));
  CUdevice dev;
  CU(cuDeviceGet(&dev, 0));
  CUcontext ctx;
  CU(cuDevicePrimaryCtxRetain(&ctx, dev));
  CU(cuCtxSetCurrent(ctx));
  CUmodule mod;
  CU(cuModuleLoadData(&mod, kSaxpyPtx));
  CUfunction f;
  CU(cuModuleGetFunction(&f, mod, "saxpy"));
  CUdeviceptr x, y;
  CU(cuMemAlloc(&x, kN * 4ull));
  CU(cuMemAlloc(&y, kN * 4ull));
  CU(cuMemsetD32(x, 0x3f800000, kN));
  CU(cuMemsetD32(y, 0, kN));
  float a = 2.0f;
  unsigned n = kN;
  void* args[] = {&x, &y, &a, &n};
  CU(cuLaunchKernel(f, kN / 256, 1, 1, 256, 1, 1, 0, nullptr, args, nullptr));
  CU(cuCtxSynchronize());

  cublasHandle_t h;
  if (cublasCreate(&h) != CUBLAS_STATUS_SUCCESS) return 1;
  void *A, *B, *C;
  cudaMalloc(&A, size_t(kM) * kK * 4);
  cudaMalloc(&B, size_t(kK) * kNn * 4);
  cudaMalloc(&C, size_t(kM) * kNn * 4);
  cudaMemset(A, 0, size_t(kM) * kK * 4);
  cudaMemset(B, 0, size_t(kK) * kNn * 4);
  const float one = 1, zero = 0;
  // BF16 inputs, FP32 accumulate: tensor cores.
  if (cublasGemmEx(h, CUBLAS_OP_N, CUBLAS_OP_N, kM, kNn, kK, &one, A, CUDA_R_16BF, kM, B, CUDA_R_16BF, kK, &zero, C, CUDA_R_16BF, kM,
                   CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT) != CUBLAS_STATUS_SUCCESS)
    return 1;
  cudaDeviceSynchronize();
  // Strict FP32 (no TF32): FFMA on the FP32 units.
  if (cublasGemmEx(h, CUBLAS_OP_N, CUBLAS_OP_N, kM, kNn, kK, &one, A, CUDA_R_32F, kM, B, CUDA_R_32F, kK, &zero, C, CUDA_R_32F, kM,
                   CUBLAS_COMPUTE_32F_PEDANTIC, CUBLAS_GEMM_DEFAULT) != CUBLAS_STATUS_SUCCESS)
    return 1;
  cudaDeviceSynchronize();
  cublasDestroy(h);
  return 0;
}

bool near(const char* what, double got, double want, double tol) {
  const double err = want > 0 ? std::abs(got - want) / want : std::abs(got);
  std::printf("%-34s measured %.6g  expected %.6g  error %.2f%%  %s\n", what, got, want, 100 * err, err <= tol ? "ok" : "FAIL");
  return err <= tol;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc > 1 && std::string(argv[1]) == "--workload") return workload();
  if (argc < 3) {
    std::fprintf(stderr, "usage: %s COLLECTOR OUTPUT.json\n", argv[0]);
    return 2;
  }
  int count = 0;
  if (cuInit(0) != CUDA_SUCCESS || cuDeviceGetCount(&count) != CUDA_SUCCESS || count == 0) {
    std::printf("SKIPPED: no CUDA GPU here (this test runs on the device machine)\n");
    return 77;
  }
  const std::string cmd = std::string(argv[1]) + " -o " + argv[2] + " --all-launches -- " + argv[0] + " --workload";
  if (std::system(cmd.c_str()) != 0) {
    std::fprintf(stderr, "collector run failed: %s\n", cmd.c_str());
    return 1;
  }
  const auto set = habitat::read_metric_file(argv[2]);
  bool ok = true, saw_saxpy = false, saw_bf16 = false, saw_fp32 = false;
  const double gemm = 2.0 * kM * kNn * kK;
  for (const auto& m : set.kernels()) {
    std::printf("kernel %s: dram %.4g B, flops", m.name.substr(0, 60).c_str(), m.dram_bytes());
    for (auto k : habitat::all_flop_kinds)
      if (m.flops[k] > 0) std::printf(" %s=%.6g", habitat::to_string(k), m.flops[k]);
    std::printf(", %.1f us\n", m.duration_ns / 1e3);
    if (m.name == "saxpy") {
      saw_saxpy = true;
      ok &= near("saxpy FP32 FLOPs", m.flops[habitat::FlopKind::fp32], 2.0 * kN, 0.0);
      ok &= near("saxpy DRAM bytes", m.dram_bytes(), 12.0 * kN, 0.05);
    } else if (m.flops[habitat::FlopKind::tensor_bf16] > 0) {
      saw_bf16 = true;
      ok &= near("BF16 GEMM tensor FLOPs", m.flops[habitat::FlopKind::tensor_bf16], gemm, 0.02);
    } else if (m.flops[habitat::FlopKind::fp32] > gemm / 2) {
      saw_fp32 = true;
      ok &= near("FP32 GEMM FLOPs", m.flops.total(), gemm, 0.02);
    }
  }
  if (!saw_saxpy || !saw_bf16 || !saw_fp32) {
    std::printf("FAIL: expected saxpy, a BF16 tensor-core GEMM and an FP32 GEMM among the measured kernels\n");
    ok = false;
  }
  return ok ? 0 : 1;
}
