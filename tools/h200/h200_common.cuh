// Shared by the issue-41 microbenchmarks in tools/h200/: error checking, the GPU clock
// and SM id, and the GEMM they run beside (cuBLAS, fp16, the layout torch.mm(A, W.t())
// uses, as ../shared/calibration/h200/interfere.py does).
#pragma once
#include <cublas_v2.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdio>
#include <cstdlib>

#define CK(x)                                                                                    \
  do {                                                                                           \
    cudaError_t e_ = (x);                                                                        \
    if (e_ != cudaSuccess) {                                                                     \
      fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_));        \
      exit(1);                                                                                   \
    }                                                                                            \
  } while (0)

// Nanoseconds of the GPU's global timer (the same clock on every SM).
__device__ __forceinline__ unsigned long long gtime() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}
__device__ __forceinline__ unsigned smid() {
  unsigned s;
  asm volatile("mov.u32 %0, %%smid;" : "=r"(s));
  return s;
}

// A Table 2 GEMM shape (interference_2gpu.csv's four).
struct Shape {
  const char* name;
  int M, N, K;
};

// C[M x N] = A[M x K] * W[N x K]^T on `handle`'s stream: column-major C^T (N x M) =
// W (op T of K x N) * A^T (K x M). The operands are zeros (timing only).
struct TorchMmGemm {
  TorchMmGemm(cublasHandle_t handle, const Shape& shape) : h(handle), sh(shape) {
    CK(cudaMalloc(&A, size_t(sh.M) * sh.K * 2));
    CK(cudaMalloc(&W, size_t(sh.N) * sh.K * 2));
    CK(cudaMalloc(&C, size_t(sh.M) * sh.N * 2));
    CK(cudaMemset(A, 0, size_t(sh.M) * sh.K * 2));
    CK(cudaMemset(W, 0, size_t(sh.N) * sh.K * 2));
  }
  ~TorchMmGemm() {
    cudaFree(A);
    cudaFree(W);
    cudaFree(C);
  }
  TorchMmGemm(const TorchMmGemm&) = delete;
  TorchMmGemm& operator=(const TorchMmGemm&) = delete;
  void operator()() const {
    const float alpha = 1.f, beta = 0.f;
    const cublasStatus_t st = cublasGemmEx(h, CUBLAS_OP_T, CUBLAS_OP_N, sh.N, sh.M, sh.K, &alpha, W, CUDA_R_16F, sh.K,
                                           A, CUDA_R_16F, sh.K, &beta, C, CUDA_R_16F, sh.N, CUBLAS_COMPUTE_32F,
                                           CUBLAS_GEMM_DEFAULT);
    if (st != CUBLAS_STATUS_SUCCESS) {
      fprintf(stderr, "cublasGemmEx failed: %d\n", int(st));
      exit(1);
    }
  }
  cublasHandle_t h;
  Shape sh;
  __half *A = nullptr, *W = nullptr, *C = nullptr;
};
