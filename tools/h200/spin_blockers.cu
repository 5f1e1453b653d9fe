// How much does a cuBLAS GEMM slow when k SMs are taken from it (issue 41)? k CTAs, each
// holding a whole SM (200 KiB of shared memory) and spinning for 5 ms without touching
// memory, are queued first; then 20 back-to-back GEMMs (gpt3.op.tp32, palm.fc2.tp32,
// fp16, the layout torch.mm(A, W.t()) uses). A copy kernel beside a GEMM runs on 6-8
// SMs (sm_ports.csv) and the GEMM slows 1.13-1.29x (interference_2gpu.csv): is that the
// SMs it takes? Prints CSV.
// Second table: one GEMM at a time (synchronized between), each timed alone, so no next
// GEMM's launch overlaps its end: does a single kernel pay as much?
// SHAPES=all adds megagpt2.op.tp8 and tnlg.fc2.tp8 (the other two shapes of
// interference_2gpu.csv; spin_blockers_all.csv).
//   nvcc -O3 -arch=sm_90 -o spin_blockers spin_blockers.cu -lcublas && [SHAPES=all] ./spin_blockers

#include "h200_common.cuh"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

__global__ void spin(unsigned long long ns) {
  extern __shared__ char smem[];
  unsigned long long t0, t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
  do {
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  } while (t - t0 < ns);
  if (t == 0) smem[threadIdx.x] = 1;
}

int main() {
  cublasHandle_t h;
  if (cublasCreate(&h) != CUBLAS_STATUS_SUCCESS) return 1;
  cudaStream_t gs, ss;
  CK(cudaStreamCreateWithFlags(&gs, cudaStreamNonBlocking));
  CK(cudaStreamCreateWithFlags(&ss, cudaStreamNonBlocking));
  cublasSetStream(h, gs);
  const int smem = 200 * 1024;
  CK(cudaFuncSetAttribute(spin, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
  printf("gemm,blocked_sms,gemm_alone_us,gemm_beside_us,slowdown\n");
  std::vector<Shape> shapes = {Shape{"gpt3.op.tp32", 2048, 12288, 384}, Shape{"palm.fc2.tp32", 2048, 18432, 2304}};
  if (const char* all = std::getenv("SHAPES"); all != nullptr && std::string(all) == "all") {
    shapes.push_back(Shape{"megagpt2.op.tp8", 16384, 3072, 384});
    shapes.push_back(Shape{"tnlg.fc2.tp8", 8192, 4256, 2128});
  }
  for (const Shape& sh : shapes) {
    const TorchMmGemm gemm(h, sh);
    for (int i = 0; i < 50; ++i) gemm();
    CK(cudaDeviceSynchronize());
    cudaEvent_t e0, e1;
    CK(cudaEventCreate(&e0));
    CK(cudaEventCreate(&e1));
    for (int k : {0, 2, 6, 8, 12, 24}) {
      float alone, beside;
      CK(cudaEventRecord(e0, gs));
      for (int i = 0; i < 20; ++i) gemm();
      CK(cudaEventRecord(e1, gs));
      CK(cudaDeviceSynchronize());
      CK(cudaEventElapsedTime(&alone, e0, e1));
      if (k > 0) spin<<<k, 128, smem, ss>>>(5000000ull);
      CK(cudaEventRecord(e0, gs));
      for (int i = 0; i < 20; ++i) gemm();
      CK(cudaEventRecord(e1, gs));
      CK(cudaDeviceSynchronize());
      CK(cudaGetLastError());
      CK(cudaEventElapsedTime(&beside, e0, e1));
      printf("%s,%d,%.2f,%.2f,%.4f\n", sh.name, k, alone * 50, beside * 50, beside / alone);
      fflush(stdout);
    }
    // One GEMM at a time: the median of 15, alone and beside k spinning SMs.
    for (int k : {0, 2, 6, 24}) {
      auto single = [&](bool blocked) {
        std::vector<float> t;
        for (int i = 0; i < 15; ++i) {
          // The spinning CTAs are queued first, so they take their SMs before the GEMM.
          if (blocked && k > 0) spin<<<k, 128, smem, ss>>>(2000000ull);
          float ms = 0;
          CK(cudaEventRecord(e0, gs));
          gemm();
          CK(cudaEventRecord(e1, gs));
          CK(cudaEventSynchronize(e1));
          CK(cudaEventElapsedTime(&ms, e0, e1));
          t.push_back(ms * 1000);
          CK(cudaDeviceSynchronize());
        }
        std::sort(t.begin(), t.end());
        return t[t.size() / 2];
      };
      const float a = single(false), b = single(true);
      printf("%s,%d,%.2f,%.2f,%.4f,single\n", sh.name, k, a, b, b / a);
      fflush(stdout);
    }
  }
  return 0;
}
